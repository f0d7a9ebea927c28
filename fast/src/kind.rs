//! The element types the decoder joins (spec 4): where a position's raw part lies in the raw plane
//! (layout 0 rows, layout 1 lane chunks; BF16 bytes, FP8 nibbles), how a coded byte and a raw
//! part make a weight, and how a whole lane segment is placed into the output. `decode` runs the
//! lanes; `Kind` is what it is generic over.

use crate::bits::Broken;
use crate::decode::{L1Lane, Scratch, Tables};

/// Where a position's raw part is.
#[derive(Clone, Copy)]
pub(crate) enum Raw {
    /// BF16 byte at this index of `low`.
    Byte(usize),
    /// FP8 nibble `t` of the 16-nibble group starting at this index of `low` (spec 7.6).
    Nibble(usize, usize),
}

#[inline(always)]
pub(crate) fn read_raw(low: &[u8], raw: Raw) -> u8 {
    match raw {
        Raw::Byte(i) => low[i],
        Raw::Nibble(group, t) => {
            let b = low[group + (t & 3) + 4 * (t >> 3)];
            if t & 4 != 0 {
                b >> 4
            } else {
                b & 0xF
            }
        }
    }
}

/// The element type being decoded.
pub(crate) trait Kind {
    type W: Copy + Send;
    const ESCAPE: bool;
    /// Raw slot of column `j` (0..15) of a layout-0 lane segment starting at `col0` of `row`.
    fn raw_l0(row: usize, k16: usize, col0: usize, j: usize) -> Raw;
    /// Raw slot of position `t` of a layout-1 lane chunk whose slot index is `lane_start`.
    fn raw_l1(lane_start: usize, t: usize) -> Raw;
    /// Spec 15.1: the weight from its code byte and raw part.
    fn weight(t: &Tables, byte: u8, raw: u8) -> Result<Self::W, Broken>;
    /// [`Kind::weight`] for 16 positions at once, in stream order (no early exit: a bad pair is
    /// remembered and reported after the loop).
    fn weights16(t: &Tables, bytes: &[u8; 16], raw: &[u8; 16]) -> Result<[Self::W; 16], Broken>;

    /// Layout 0: a whole lane whose 8 x 16 positions are all weights, rows `row0..row0 + 8` of
    /// the matrix (rows 0..8 of `out`, which has `k` columns), columns `col0..col0 + 16`.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn place_lane_l0(
        t: &Tables,
        bytes: &[u8; 128],
        low: &[u8],
        k16: usize,
        row0: usize,
        col0: usize,
        out: &mut [Self::W],
        k: usize,
        _: &mut Scratch,
    ) -> Result<(), Broken> {
        for i in 0..8 {
            let raw = Self::raw16(low, Some(row0 + i), k16, col0, 0);
            let codes = bytes[16 * i..16 * i + 16].try_into().expect("16 codes");
            out[i * k + col0..i * k + col0 + 16].copy_from_slice(&Self::weights16(t, codes, &raw)?);
        }
        Ok(())
    }

    /// Layout 1: a whole lane whose positions are all weights.
    #[inline(always)]
    fn place_lane_l1(t: &Tables, bytes: &[u8; 256], low: &[u8], lane: &L1Lane, out: &mut [Self::W], _: &mut Scratch) -> Result<(), Broken> {
        let (k, r8) = (lane.k, lane.r8);
        let (above, below) = out.split_at_mut((r8 + 8) * k);
        for c in 0..lane.chunks {
            let col = lane.col0 + 32 * c;
            let raw = Self::raw16(low, None, 0, 0, lane.slot0 + 32 * c);
            let codes = bytes[16 * c..16 * c + 16].try_into().expect("16 codes");
            let w = Self::weights16(t, codes, &raw)?;
            // Spec 8.3: positions 0, 1, 4, 5, 8, 9, 12, 13 are the upper row, the others the lower.
            for j in 0..8 {
                let at = 4 * (j >> 1) + (j & 1);
                above[r8 * k + col + j] = w[at];
                below[col + j] = w[at + 2];
            }
        }
        Ok(())
    }

    /// Raw parts per byte of the raw plane: 1 (BF16 bytes) or 2 (FP8 nibbles, spec 7.6 / 8.6).
    const RAW_PER_BYTE: usize;
    /// The 16 raw parts held by 16 / RAW_PER_BYTE bytes of the raw plane, in stream order.
    fn unpack16(bytes: &[u8]) -> [u8; 16];

    /// The 16 raw parts of a whole lane segment, in stream order: layout 0 (`Some(row)`: columns
    /// col0.. of that row) or layout 1 (`None`: the lane chunk at slot `lane_start`).
    #[inline(always)]
    fn raw16(low: &[u8], l0_row: Option<usize>, k16: usize, col0: usize, lane_start: usize) -> [u8; 16] {
        let n = 16 / Self::RAW_PER_BYTE;
        // k16 and col0 are multiples of 16, so the division is exact.
        let start = match l0_row {
            Some(row) => (row * k16 + col0) / Self::RAW_PER_BYTE,
            None => lane_start * n,
        };
        Self::unpack16(&low[start..start + n])
    }
}

/// Spec 7.6 / 8.6: the 16 nibbles of a group of 8 bytes, in stream order.
#[inline(always)]
fn nibbles16(g: &[u8]) -> [u8; 16] {
    let mut out = [0u8; 16];
    for (t, o) in out.iter_mut().enumerate() {
        let b = g[(t & 3) + 4 * (t >> 3)];
        *o = if t & 4 != 0 { b >> 4 } else { b & 0xF };
    }
    out
}

pub(crate) struct Bf16;
pub(crate) struct Fp8;

impl Kind for Bf16 {
    type W = u16;
    const ESCAPE: bool = true;
    #[inline(always)]
    fn raw_l0(row: usize, k16: usize, col0: usize, j: usize) -> Raw {
        Raw::Byte(row * k16 + col0 + j)
    }
    #[inline(always)]
    fn raw_l1(lane_start: usize, t: usize) -> Raw {
        Raw::Byte(lane_start * 16 + t)
    }
    #[inline(always)]
    fn weight(_: &Tables, byte: u8, raw: u8) -> Result<u16, Broken> {
        Ok(u16::from(byte) << 8 | u16::from(raw))
    }
    #[inline(always)]
    fn weights16(_: &Tables, bytes: &[u8; 16], raw: &[u8; 16]) -> Result<[u16; 16], Broken> {
        let mut w = [0u16; 16];
        for j in 0..16 {
            w[j] = u16::from(bytes[j]) << 8 | u16::from(raw[j]);
        }
        Ok(w)
    }
    /// The raw bytes of the 8 rows are gathered first, so that the join runs over 128 positions
    /// at once: a loop the compiler turns into byte-interleaving vector instructions, which it does
    /// not for 16 positions.
    #[inline(always)]
    fn place_lane_l0(
        _: &Tables,
        bytes: &[u8; 128],
        low: &[u8],
        k16: usize,
        row0: usize,
        col0: usize,
        out: &mut [u16],
        k: usize,
        scratch: &mut Scratch,
    ) -> Result<(), Broken> {
        let raw: &mut [u8; 128] = (&mut scratch.raw[..128]).try_into().expect("128");
        for (i, r) in raw.chunks_exact_mut(16).enumerate() {
            let start = (row0 + i) * k16 + col0;
            r.copy_from_slice(&low[start..start + 16]);
        }
        let w: &mut [u16; 128] = (&mut scratch.joined[..128]).try_into().expect("128");
        for ((d, &b), &r) in w.iter_mut().zip(bytes).zip(raw.iter()) {
            *d = u16::from(b) << 8 | u16::from(r);
        }
        for (i, row) in w.chunks_exact(16).enumerate() {
            out[i * k + col0..i * k + col0 + 16].copy_from_slice(row);
        }
        Ok(())
    }
    /// As for layout 0: gather the raw bytes of every super-chunk, join all 256 positions in one
    /// vectorizable loop, then move each pair of columns to its row (spec 8.3: pairs 0, 2, 4, 6
    /// of a super-chunk go to the upper row, 1, 3, 5, 7 to the lower one).
    #[inline(always)]
    fn place_lane_l1(
        _: &Tables,
        bytes: &[u8; 256],
        low: &[u8],
        lane: &L1Lane,
        out: &mut [u16],
        scratch: &mut Scratch,
    ) -> Result<(), Broken> {
        let raw = &mut scratch.raw;
        for (c, r) in raw.chunks_exact_mut(16).take(lane.chunks).enumerate() {
            let start = (lane.slot0 + 32 * c) * 16;
            r.copy_from_slice(&low[start..start + 16]);
        }
        let w = &mut scratch.joined;
        for ((d, &b), &r) in w.iter_mut().zip(bytes).zip(raw.iter()) {
            *d = u16::from(b) << 8 | u16::from(r);
        }
        let (k, r8) = (lane.k, lane.r8);
        let (above, below) = out.split_at_mut((r8 + 8) * k);
        for (c, chunk) in w.chunks_exact(16).take(lane.chunks).enumerate() {
            let col = lane.col0 + 32 * c;
            let upper = &mut above[r8 * k + col..r8 * k + col + 8];
            let lower = &mut below[col..col + 8];
            for p in 0..4 {
                upper[2 * p..2 * p + 2].copy_from_slice(&chunk[4 * p..4 * p + 2]);
                lower[2 * p..2 * p + 2].copy_from_slice(&chunk[4 * p + 2..4 * p + 4]);
            }
        }
        Ok(())
    }
    const RAW_PER_BYTE: usize = 1;
    #[inline(always)]
    fn unpack16(bytes: &[u8]) -> [u8; 16] {
        bytes.try_into().expect("16 bytes")
    }
}

impl Kind for Fp8 {
    type W = u8;
    const ESCAPE: bool = false;
    #[inline(always)]
    fn raw_l0(row: usize, k16: usize, col0: usize, j: usize) -> Raw {
        Raw::Nibble(row * k16 / 2 + col0 / 2, j)
    }
    #[inline(always)]
    fn raw_l1(lane_start: usize, t: usize) -> Raw {
        Raw::Nibble(lane_start * 8, t)
    }
    #[inline(always)]
    fn weight(t: &Tables, byte: u8, raw: u8) -> Result<u8, Broken> {
        let mag = t.fp8[usize::from(byte & 0x7F) * 16 + usize::from(raw)];
        if mag > 0xFF {
            return Err(Broken); // rules 13.16, 13.17
        }
        Ok(mag as u8 | (byte & 0x80))
    }
    #[inline(always)]
    fn weights16(t: &Tables, bytes: &[u8; 16], raw: &[u8; 16]) -> Result<[u8; 16], Broken> {
        let (mut w, mut bad) = ([0u8; 16], 0u16);
        for j in 0..16 {
            let mag = t.fp8[usize::from(bytes[j] & 0x7F) * 16 + usize::from(raw[j] & 0xF)];
            bad |= mag;
            w[j] = mag as u8 | (bytes[j] & 0x80);
        }
        if bad > 0xFF {
            return Err(Broken); // rules 13.16, 13.17
        }
        Ok(w)
    }
    const RAW_PER_BYTE: usize = 2;
    #[inline(always)]
    fn unpack16(bytes: &[u8]) -> [u8; 16] {
        nibbles16(bytes)
    }
}
