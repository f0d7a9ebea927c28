//! Spec 7 and 8: which weight each code of a lane stands for, and where its raw part lives.

use crate::geometry::Geometry;
use crate::mode::{ElemType, Layout};

/// Where the raw part of one position lives in the raw plane (spec 7.5, 7.6, 8.5, 8.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RawSlot {
    /// BF16: one byte.
    Byte(usize),
    /// FP8: one nibble of a byte.
    Nibble { byte: usize, high: bool },
}

/// One code of a lane stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position {
    pub row: u64,
    pub col: u64,
    /// Inside the M x K matrix; otherwise the code is a filler (spec 6.3, 7.4, 8.4).
    pub real: bool,
    /// The raw-plane slot of this position, if the plane has one for it.
    pub raw: Option<RawSlot>,
}

/// Spec 7.6: where nibble `t` (0..15) of a group of 16 goes inside that group's 8 bytes:
/// byte (t & 3) + 4 * (t >> 3), the high nibble when bit 2 of t is set.
#[inline]
pub fn nibble_slot(group_start: usize, t: usize) -> RawSlot {
    RawSlot::Nibble { byte: group_start + (t & 3) + 4 * (t >> 3), high: t & 4 != 0 }
}

/// Spec 7.3 / 8.3: the positions of the codes of lane `lane` in block `block`, in stream order
/// (an iterator: a decoder or encoder walks them once, code by code).
pub struct LanePositions<'g> {
    g: &'g Geometry,
    /// Row block and column block of the block.
    rb: u64,
    cb: u64,
    lane: usize,
    next: usize,
    codes: usize,
}

impl<'g> LanePositions<'g> {
    pub fn new(g: &'g Geometry, block: u64, lane: usize) -> LanePositions<'g> {
        let (rb, cb) = (block / g.col_blocks, block % g.col_blocks);
        LanePositions { g, rb, cb, lane, next: 0, codes: g.codes_per_lane(block) }
    }

    /// The position of code number `code` of the lane.
    #[inline]
    fn at(&self, code: usize) -> Position {
        let (g, rb, cb, lane, i) = (self.g, self.rb, self.cb, self.lane as u64, code as u64);
        match g.mode.layout {
            Layout::Rows8 => {
                // Spec 7.2, 7.3: lane L holds columns 512cb + 16L .. +15 of the block's 8 rows, row by row.
                let row = 8 * rb + (i >> 4);
                let col = 512 * cb + 16 * lane + (i & 15);
                Position { row, col, real: row < g.shape.rows && col < g.shape.cols, raw: raw_slot_l0(g, row, col) }
            }
            Layout::Fragment16 => {
                // Spec 8.2, 8.3: lane L = 4 r8 + q holds, per super-chunk s, columns 32s + 8q .. +7 of
                // rows r8 and r8 + 8, in mma.m16n8k16 A-fragment order: 16 codes t per super-chunk.
                let (r8, q) = (lane >> 2, lane & 3);
                let (s, t) = (16 * cb + i / 16, i % 16);
                let j = 2 * (t >> 2) + (t & 1);
                let h = (t >> 1) & 1;
                let row = 16 * rb + r8 + 8 * h;
                let col = 32 * s + 8 * q + j;
                // Spec 8.5 / 8.6: raw parts grouped by row block, super-chunk and lane.
                let lane_start = ((rb * g.super_chunks + s) * 32 + lane) as usize;
                let raw = match g.mode.elem {
                    ElemType::Bf16 => RawSlot::Byte(lane_start * 16 + t as usize),
                    ElemType::Fp8E4m3 => nibble_slot(lane_start * 8, t as usize),
                };
                Position { row, col, real: row < g.shape.rows && col < g.shape.cols, raw: Some(raw) }
            }
        }
    }
}

impl Iterator for LanePositions<'_> {
    type Item = Position;

    #[inline]
    fn next(&mut self) -> Option<Position> {
        if self.next == self.codes {
            return None;
        }
        let p = self.at(self.next);
        self.next += 1;
        Some(p)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.codes - self.next, Some(self.codes - self.next))
    }
}

impl ExactSizeIterator for LanePositions<'_> {}

/// Spec 7.3 / 8.3: the positions of the codes of lane `lane` in block `block`, in stream order.
pub fn lane_positions(g: &Geometry, block: u64, lane: usize) -> Vec<Position> {
    LanePositions::new(g, block, lane).collect()
}

/// Spec 7.5 / 7.6: layout 0 keeps the raw plane row-major with row stride K16 (bytes) or K16/2
/// (nibble pairs); rows past M and columns past K16 have no slot.
#[inline]
fn raw_slot_l0(g: &Geometry, row: u64, col: u64) -> Option<RawSlot> {
    if row >= g.shape.rows || col >= g.k16 {
        return None;
    }
    Some(match g.mode.elem {
        ElemType::Bf16 => RawSlot::Byte((row * g.k16 + col) as usize),
        ElemType::Fp8E4m3 => nibble_slot((row * g.k16 / 2 + 8 * (col / 16)) as usize, (col % 16) as usize),
    })
}

/// Reads the raw part at `slot`.
#[inline]
pub fn read_raw(low: &[u8], slot: RawSlot) -> u8 {
    match slot {
        RawSlot::Byte(i) => low[i],
        RawSlot::Nibble { byte, high } => {
            if high {
                low[byte] >> 4
            } else {
                low[byte] & 0xF
            }
        }
    }
}

/// Writes the raw part at `slot` (the slot starts out zero).
pub fn write_raw(low: &mut [u8], slot: RawSlot, value: u8) {
    match slot {
        RawSlot::Byte(i) => low[i] = value,
        RawSlot::Nibble { byte, high } => low[byte] |= if high { value << 4 } else { value & 0xF },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::Shape;
    use crate::mode::Mode;

    #[test]
    fn every_raw_slot_is_used_exactly_once() {
        for mode in Mode::ALL {
            for (m, k) in [(1, 1), (13, 40), (17, 530), (3, 1100)] {
                let g = Geometry::new(mode, Shape::new(m, k)).unwrap();
                let mut seen = vec![0u8; g.n_low as usize];
                for b in 0..g.blocks {
                    for lane in 0..32 {
                        for p in lane_positions(&g, b, lane) {
                            match p.raw {
                                Some(RawSlot::Byte(i)) => seen[i] += 1,
                                Some(RawSlot::Nibble { byte, high }) => seen[byte] += if high { 16 } else { 1 },
                                None => {}
                            }
                        }
                    }
                }
                let full = if mode.elem == ElemType::Bf16 { 1 } else { 17 };
                assert!(seen.iter().all(|&c| c == full), "{mode} {m}x{k}");
            }
        }
    }
}
