//! The fast decoder. It checks every validity rule of spec 13: the cheap structural rules through
//! `nwc_reference::check_structure`, the per-lane rules itself while decoding. When a lane breaks
//! any rule, it asks the reference decoder for the exact error (rule, block, lane, offset), so both
//! decoders always report the same thing.

use crate::bits::{BitReader, Broken};
use nwc_reference::element::{fp8_join, Fp8Parts, FP8_SYMBOL_BYTE};
use nwc_reference::geometry::{LANES, LUT_ENTRIES};
use nwc_reference::lut::PARTIAL;
use nwc_reference::{
    check_structure, DecodeError, DecodedMatrix, Elements, EncodedMatrix, Geometry, Layout, Limits,
};
use rayon::prelude::*;

/// Validates and decodes under the default [`Limits`]; equals `nwc_reference::decode`.
pub fn decode(m: &EncodedMatrix) -> Result<DecodedMatrix, DecodeError> {
    decode_with_limits(m, &Limits::default())
}

/// Validates and decodes; equals `nwc_reference::decode_with_limits`, errors included.
pub fn decode_with_limits(m: &EncodedMatrix, limits: &Limits) -> Result<DecodedMatrix, DecodeError> {
    let exp_of_rank = check_structure(m, limits)?;
    match decode_lanes(m, &exp_of_rank) {
        Some(elements) => Ok(DecodedMatrix { mode: m.mode, shape: m.shape, exp_of_rank, elements, scale: m.scale.clone() }),
        None => {
            // Some lane broke a rule: the reference names it (rule, block, lane, offset). Should
            // the reference accept it, its output is the right answer; debug builds stop so that
            // the disagreement gets fixed.
            let reference = nwc_reference::decode_with_limits(m, limits);
            debug_assert!(reference.is_err(), "nwc-fast rejected a matrix the reference accepts");
            reference
        }
    }
}

/// For the differential tests: whether the fast lane decoder alone accepts `m` (after the
/// structural checks), without falling back to the reference.
#[doc(hidden)]
pub fn fast_path_accepts(m: &EncodedMatrix) -> bool {
    check_structure(m, &Limits::unlimited()).is_ok_and(|e| decode_lanes(m, &e).is_some())
}

/// Rules 13.11 - 13.18, 13.20 and the weights, row block by row block in parallel; `None` if any
/// lane breaks a rule. The structural rules must have been checked.
fn decode_lanes(m: &EncodedMatrix, exp_of_rank: &[u8; 15]) -> Option<Elements> {
    let g = Geometry::new(m.mode, m.shape).expect("checked by check_structure");
    let tables = Tables::new(exp_of_rank);
    let rows_per_task = m.mode.layout.block_rows() as usize * m.shape.cols as usize;
    let n = m.shape.weights() as usize;
    match m.mode.elem {
        nwc_reference::ElemType::Bf16 => {
            let mut out = vec![0u16; n];
            let ok = out
                .par_chunks_mut(rows_per_task)
                .enumerate()
                .all(|(rb, rows)| decode_row_block::<Bf16>(m, &g, &tables, rb, rows).is_ok());
            ok.then_some(Elements::Bf16(out))
        }
        nwc_reference::ElemType::Fp8E4m3 => {
            let mut out = vec![0u8; n];
            let ok = out
                .par_chunks_mut(rows_per_task)
                .enumerate()
                .all(|(rb, rows)| decode_row_block::<Fp8>(m, &g, &tables, rb, rows).is_ok());
            ok.then_some(Elements::Fp8(out))
        }
    }
}

/// Decoding tables built once per matrix from the recovered exp_of_rank (spec 10.6).
struct Tables {
    /// Byte of a rank code: (rank << 1 | sign) -> sign << 7 | exp_of_rank[rank], ranks 0..14
    /// (the byte the lookup table holds for it, spec 10.2).
    byte: [u8; 32],
    /// FP8: the fp8 magnitude for (symbol byte << 4 | nibble), or 0xFFFF where spec 4.7/4.8 forbid
    /// the pair (rules 13.16 fp8-nibble, 13.17 fp8-nan).
    fp8: Vec<u16>,
}

impl Tables {
    fn new(exp_of_rank: &[u8; 15]) -> Tables {
        let mut byte = [0u8; 32];
        for r in 0..15 {
            byte[2 * r] = exp_of_rank[r];
            byte[2 * r + 1] = 0x80 | exp_of_rank[r];
        }
        let mut fp8 = vec![0xFFFFu16; 128 * 16];
        for (symbol, &sb) in FP8_SYMBOL_BYTE.iter().enumerate() {
            for nibble in 0..16u8 {
                if let Some(b) = fp8_join(Fp8Parts { sign: 0, symbol: symbol as u8, nibble }) {
                    fp8[usize::from(sb) * 16 + usize::from(nibble)] = u16::from(b);
                }
            }
        }
        Tables { byte, fp8 }
    }

    /// Spec 6.3: a filler is rank 0 with sign 0 (never an escape).
    #[inline(always)]
    fn is_filler(&self, codes: &LaneCodes, n: usize) -> bool {
        codes.bytes[n] == self.byte[0] && codes.escaped[n / 64] & (1 << (n % 64)) == 0
    }
}

/// The codes of one lane, decoded: the byte each stands for (sign << 7 | symbol byte, or the
/// escape's high byte) and which were escapes.
struct LaneCodes {
    bytes: [u8; 256],
    escaped: [u64; 4],
}

/// One code decoded from its leading zeros (spec 6.1, 6.2), stored at `n`.
#[inline(always)]
fn read_single(r: &mut BitReader, t: &Tables, escape: bool, codes: &mut LaneCodes, n: usize) -> Result<(), Broken> {
    let (rank, x) = r.read(escape)?;
    if rank < 15 {
        codes.bytes[n] = t.byte[(2 * rank + x) as usize];
    } else {
        codes.bytes[n] = x as u8;
        codes.escaped[n / 64] |= 1 << (n % 64);
    }
    Ok(())
}

/// One step of a lane: two codes through the lookup table when both are complete inside its 12-bit
/// window (spec 10.3), else one from its leading zeros. Returns how many codes were decoded.
#[inline(always)]
fn step(r: &mut BitReader, lut: &[u32; LUT_ENTRIES], t: &Tables, escape: bool, codes: &mut LaneCodes, n: usize) -> Result<usize, Broken> {
    let e = lut[r.peek12()];
    if e & PARTIAL == 0 {
        r.skip(e & 0xFF); // both lengths together
        codes.bytes[n] = (e >> 8) as u8;
        codes.bytes[n + 1] = (e >> 16) as u8;
        Ok(2)
    } else {
        read_single(r, t, escape, codes, n)?;
        Ok(1)
    }
}

/// Decodes `count` codes of `N` lanes in lockstep: their bit streams are independent, so the
/// chains of table look-ups overlap in the processor.
#[inline(always)]
fn read_lanes<const N: usize>(
    readers: &mut [BitReader; N],
    codes: &mut [LaneCodes; N],
    lut: &[u32; LUT_ENTRIES],
    t: &Tables,
    count: usize,
    escape: bool,
) -> Result<(), Broken> {
    let mut n = [0usize; N];
    for c in codes.iter_mut() {
        c.escaped = [0; 4];
    }
    while n.iter().all(|&k| k + 2 <= count) {
        for i in 0..N {
            n[i] += step(&mut readers[i], lut, t, escape, &mut codes[i], n[i])?;
        }
    }
    for i in 0..N {
        while n[i] + 2 <= count {
            n[i] += step(&mut readers[i], lut, t, escape, &mut codes[i], n[i])?;
        }
        if n[i] < count {
            read_single(&mut readers[i], t, escape, &mut codes[i], n[i])?;
        }
    }
    Ok(())
}

/// Where a position's raw part is.
#[derive(Clone, Copy)]
enum Raw {
    /// BF16 byte at this index of `low`.
    Byte(usize),
    /// FP8 nibble `t` of the 16-nibble group starting at this index of `low` (spec 7.6).
    Nibble(usize, usize),
}

#[inline(always)]
fn read_raw(low: &[u8], raw: Raw) -> u8 {
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
trait Kind {
    type W: Copy + Send;
    const ESCAPE: bool;
    /// Raw slot of column `j` (0..15) of a layout-0 lane segment starting at `col0` of `row`.
    fn raw_l0(row: usize, k16: usize, col0: usize, j: usize) -> Raw;
    /// Raw slot of position `t` of a layout-1 lane chunk whose slot index is `lane_start`.
    fn raw_l1(lane_start: usize, t: usize) -> Raw;
    /// Spec 15.1: the weight from its code byte and raw part.
    fn weight(t: &Tables, byte: u8, raw: u8) -> Result<Self::W, Broken>;

    /// The 16 raw parts of a whole lane segment, in stream order: layout 0 (`Some(row)`: columns
    /// col0.. of that row) or layout 1 (`None`: the lane chunk at slot `lane_start`).
    fn raw16(low: &[u8], l0_row: Option<usize>, k16: usize, col0: usize, lane_start: usize) -> [u8; 16];
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

struct Bf16;
struct Fp8;

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
    fn raw16(low: &[u8], l0_row: Option<usize>, k16: usize, col0: usize, lane_start: usize) -> [u8; 16] {
        let start = match l0_row {
            Some(row) => row * k16 + col0,
            None => lane_start * 16,
        };
        low[start..start + 16].try_into().expect("16 bytes")
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
    fn raw16(low: &[u8], l0_row: Option<usize>, k16: usize, col0: usize, lane_start: usize) -> [u8; 16] {
        let start = match l0_row {
            Some(row) => row * k16 / 2 + col0 / 2,
            None => lane_start * 8,
        };
        nibbles16(&low[start..start + 8])
    }
}

fn decode_row_block<K: Kind>(m: &EncodedMatrix, g: &Geometry, t: &Tables, rb: usize, out: &mut [K::W]) -> Result<(), Broken> {
    let lut: &[u32; LUT_ENTRIES] = m.lut.as_slice().try_into().map_err(|_| Broken)?;
    let cb_count = g.col_blocks as usize;
    const GROUP: usize = 4; // lanes decoded in lockstep
    let mut codes: [LaneCodes; GROUP] = core::array::from_fn(|_| LaneCodes { bytes: [0; 256], escaped: [0; 4] });
    let mut readers: [BitReader; GROUP] = core::array::from_fn(|_| BitReader::new());
    for cb in 0..cb_count {
        let block = rb * cb_count + cb;
        let count = g.codes_per_lane(block as u64);
        let mut start = m.bases[block] as usize;
        for group in 0..LANES / GROUP {
            // check_structure proved every lane lies inside `data`.
            for (i, r) in readers.iter_mut().enumerate() {
                let words = 4 * usize::from(m.hdr[block * LANES + GROUP * group + i]);
                r.start(&m.data[start..start + words]);
                start += words;
            }
            read_lanes(&mut readers, &mut codes, lut, t, count, K::ESCAPE)?;
            for i in 0..GROUP {
                readers[i].finish()?; // rules 13.11 - 13.13
                let lane = GROUP * group + i;
                match g.mode.layout {
                    Layout::Rows8 => place_l0::<K>(m, g, t, &codes[i], rb, cb, lane, out)?,
                    Layout::Fragment16 => place_l1::<K>(m, g, t, &codes[i], rb, cb, lane, out)?,
                }
            }
        }
    }
    Ok(())
}

/// Spec 7.3: a layout-0 lane holds 8 rows x 16 columns; raw plane row-major (spec 7.5, 7.6).
/// Fillers must be `10` (13.14) and their raw slots, where they have one, zero (13.18).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn place_l0<K: Kind>(m: &EncodedMatrix, g: &Geometry, t: &Tables, codes: &LaneCodes, rb: usize, cb: usize, lane: usize, out: &mut [K::W]) -> Result<(), Broken> {
    let (rows, k, k16) = (g.shape.rows as usize, g.shape.cols as usize, g.k16 as usize);
    let col0 = 512 * cb + 16 * lane;
    let real_cols = k.saturating_sub(col0).min(16);
    for i in 0..8 {
        let row = 8 * rb + i;
        let row_real = row < rows;
        let n0 = 16 * i;
        if row_real && real_cols == 16 {
            let raw = K::raw16(&m.low, Some(row), k16, col0, 0);
            let bytes: &[u8; 16] = codes.bytes[n0..n0 + 16].try_into().expect("16 codes");
            let dst = &mut out[i * k + col0..i * k + col0 + 16];
            for j in 0..16 {
                dst[j] = K::weight(t, bytes[j], raw[j])?;
            }
            continue;
        }
        for j in 0..16 {
            let col = col0 + j;
            if row_real && j < real_cols {
                out[i * k + col] = K::weight(t, codes.bytes[n0 + j], read_raw(&m.low, K::raw_l0(row, k16, col0, j)))?;
            } else {
                let pad_slot = row_real && col < k16;
                if !t.is_filler(codes, n0 + j) || (pad_slot && read_raw(&m.low, K::raw_l0(row, k16, col0, j)) != 0) {
                    return Err(Broken);
                }
            }
        }
    }
    Ok(())
}

/// Spec 8.3: a layout-1 lane holds, per super-chunk, 16 weights in A-fragment order; raw plane by
/// row group, super-chunk and lane (spec 8.5, 8.6). Every position has a raw slot.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn place_l1<K: Kind>(m: &EncodedMatrix, g: &Geometry, t: &Tables, codes: &LaneCodes, rg: usize, cb: usize, lane: usize, out: &mut [K::W]) -> Result<(), Broken> {
    let (rows, k) = (g.shape.rows as usize, g.shape.cols as usize);
    let (r8, q) = (lane >> 2, lane & 3);
    let first = 16 * cb;
    for s in first..first + g.chunks_in_block(cb as u64) as usize {
        let c0 = 32 * s + 8 * q;
        let lane_start = (rg * g.super_chunks as usize + s) * 32 + lane;
        let n0 = 16 * (s - first);
        let all_real = 16 * rg + r8 + 8 < rows && c0 + 8 <= k;
        if all_real {
            // Spec 8.3: t = 0, 1, 4, 5, 8, 9, 12, 13 are row r8, columns c0..c0+7; the others row r8 + 8.
            let raw = K::raw16(&m.low, None, 0, 0, lane_start);
            let bytes: &[u8; 16] = codes.bytes[n0..n0 + 16].try_into().expect("16 codes");
            for h in 0..2 {
                let dst = &mut out[(r8 + 8 * h) * k + c0..(r8 + 8 * h) * k + c0 + 8];
                for (j, d) in dst.iter_mut().enumerate() {
                    let tt = 4 * (j >> 1) + (j & 1) + 2 * h;
                    *d = K::weight(t, bytes[tt], raw[tt])?;
                }
            }
            continue;
        }
        for tt in 0..16 {
            let j = 2 * (tt >> 2) + (tt & 1);
            let row_in_block = r8 + 8 * ((tt >> 1) & 1);
            let col = c0 + j;
            let raw = read_raw(&m.low, K::raw_l1(lane_start, tt));
            if all_real || (16 * rg + row_in_block < rows && col < k) {
                out[row_in_block * k + col] = K::weight(t, codes.bytes[n0 + tt], raw)?;
            } else if !t.is_filler(codes, n0 + tt) || raw != 0 {
                return Err(Broken);
            }
        }
    }
    Ok(())
}
