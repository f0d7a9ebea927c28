//! The fast decoder. It checks every validity rule of spec 13: the cheap structural rules through
//! `nwc_reference::check_structure`, the per-lane rules itself while decoding. When a lane breaks
//! any rule, it asks the reference decoder for the exact error (rule, block, lane, offset), so both
//! decoders always report the same thing.

#[cfg(not(all(feature = "simd", target_arch = "x86_64")))]
use self::decode_row_block as decode_row_block_best;
use crate::bits::{entry_count, Broken, Cursor, LaneBuf, MultiTable, MULTI, STEPS_PER_REFILL};
use crate::kind::{read_raw, Bf16, Fp8, Kind};
#[cfg(all(feature = "simd", target_arch = "x86_64"))]
use crate::simd::decode_row_block_best;
use nwc_reference::element::{fp8_join, Fp8Parts, FP8_SYMBOL_BYTE};
use nwc_reference::geometry::LANES;
use nwc_reference::{check_structure, DecodeError, DecodedMatrix, Elements, EncodedMatrix, Geometry, Layout, Limits};
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
    let tables = Tables::new(exp_of_rank, m.mode.elem);
    let rows_per_task = m.mode.layout.block_rows() as usize * m.shape.cols as usize;
    let n = m.shape.weights() as usize;
    match m.mode.elem {
        nwc_reference::ElemType::Bf16 => {
            let mut out = vec![0u16; n];
            let ok = out
                .par_chunks_mut(rows_per_task)
                .enumerate()
                .all(|(rb, rows)| decode_row_block_best::<Bf16>((m, &g, &tables, rb, rows)).is_ok());
            ok.then_some(Elements::Bf16(out))
        }
        nwc_reference::ElemType::Fp8E4m3 => {
            let mut out = vec![0u8; n];
            let ok = out
                .par_chunks_mut(rows_per_task)
                .enumerate()
                .all(|(rb, rows)| decode_row_block_best::<Fp8>((m, &g, &tables, rb, rows)).is_ok());
            ok.then_some(Elements::Fp8(out))
        }
    }
}

/// Decoding tables built once per matrix from the recovered exp_of_rank (spec 10.6).
pub(crate) struct Tables {
    /// Byte of a rank code: (rank << 1 | sign) -> sign << 7 | exp_of_rank[rank], ranks 0..14
    /// (the byte the lookup table holds for it, spec 10.2).
    byte: [u8; 32],
    /// FP8: the fp8 magnitude for (symbol byte << 4 | nibble), or 0xFFFF where spec 4.7/4.8 forbid
    /// the pair (rules 13.16 fp8-nibble, 13.17 fp8-nan).
    pub(crate) fp8: Vec<u16>,
    /// Several codes per look-up (spec 6.1).
    multi: MultiTable,
}

impl Tables {
    pub(crate) fn new(exp_of_rank: &[u8; 15], elem: nwc_reference::ElemType) -> Tables {
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
        // Spec 6.1, 6.2: BF16 codes ranks 0..14 (15 zeros start an escape), FP8 ranks 0..9.
        let max_rank = if elem == nwc_reference::ElemType::Bf16 { 14 } else { 9 };
        Tables { multi: MultiTable::new(&byte, max_rank), byte, fp8 }
    }

    /// Spec 6.3: a filler is rank 0 with sign 0 (never an escape).
    #[inline(always)]
    fn is_filler(&self, codes: &LaneCodes, n: usize) -> bool {
        codes.bytes[n] == self.byte[0] && codes.escaped[n / 64] & (1 << (n % 64)) == 0
    }
}

/// Most codes in a lane: 16 super-chunks of 16 in layout 1 (spec 8.2), 128 in layout 0.
const MAX_CODES: usize = 256;

/// The codes of one lane, decoded: the byte each stands for (sign << 7 | symbol byte, or the
/// escape's high byte) and which were escapes. A table step stores 4 bytes at once, so the last
/// code may be followed by one byte of junk.
struct LaneCodes {
    bytes: [u8; MAX_CODES + 4],
    escaped: [u64; 4],
}

/// One code decoded from its leading zeros (spec 6.1, 6.2), stored at `n`.
#[inline(always)]
fn read_single(c: &mut Cursor, lane: &LaneBuf, t: &Tables, escape: bool, codes: &mut LaneCodes, n: usize) -> Result<(), Broken> {
    let (rank, x) = c.read(lane, escape)?;
    if rank < 15 {
        codes.bytes[n] = t.byte[(2 * rank + x) as usize];
    } else {
        codes.bytes[n] = x as u8;
        codes.escaped[n / 64] |= 1 << (n % 64);
    }
    Ok(())
}

/// [`read_single`] out of line: long codes are rare, and keeping them out of the step keeps the
/// lockstep loop small enough to be unrolled. The cursor goes in and out by value, so that its
/// address is never taken and the loop keeps every cursor in registers.
#[cold]
#[inline(never)]
fn read_long(mut c: Cursor, lane: &LaneBuf, t: &Tables, escape: bool, codes: &mut LaneCodes, n: usize) -> (Cursor, Result<(), Broken>) {
    let r = read_single(&mut c, lane, t, escape, codes, n);
    (c, r)
}

/// One step of a lane: up to [`MULTI`] codes through the multi-code table, or one code from its
/// leading zeros when the window holds no complete code (a long code, an escape, a broken code).
/// Returns how many codes were decoded; `n + MULTI <= MAX_CODES` (checked by the caller's loop).
/// The cursor must have been refilled at most [`STEPS_PER_REFILL`] steps ago.
#[inline(always)]
fn step(c: &mut Cursor, lane: &LaneBuf, t: &Tables, escape: bool, codes: &mut LaneCodes, n: usize) -> Result<usize, Broken> {
    let e = c.step(&t.multi);
    let at = n % MAX_CODES; // n < MAX_CODES already; lets the compiler drop the bounds check
    codes.bytes[at..at + 4].copy_from_slice(&e.to_le_bytes());
    match entry_count(e) {
        0 => {
            let (after, r) = read_long(*c, lane, t, escape, codes, n);
            *c = after;
            r.map(|()| 1)
        }
        k => Ok(k),
    }
}

/// Decodes `count` codes of `N` lanes in lockstep: their bit streams are independent, so the
/// chains of table look-ups overlap in the processor. A step decodes at most [`MULTI`] codes, so
/// `(count - most advanced lane) / MULTI` steps can run with no per-step check; they run in rounds
/// of one refill and [`STEPS_PER_REFILL`] steps.
#[inline(always)]
fn read_lanes<const N: usize>(
    lanes: &[LaneBuf; N],
    cursors: &mut [Cursor; N],
    codes: &mut [LaneCodes; N],
    t: &Tables,
    count: usize,
    escape: bool,
) -> Result<(), Broken> {
    let mut cur = *cursors; // a local copy stays in registers
    let mut n = [0usize; N];
    for c in codes.iter_mut() {
        c.escaped = [0; 4];
    }
    let count = count.min(MAX_CODES);
    loop {
        let rounds = (count - n.iter().copied().max().unwrap_or(count)) / (MULTI * STEPS_PER_REFILL);
        if rounds == 0 {
            break;
        }
        for _ in 0..rounds {
            for i in 0..N {
                cur[i].refill(&lanes[i]);
            }
            for _ in 0..STEPS_PER_REFILL {
                for i in 0..N {
                    n[i] += step(&mut cur[i], &lanes[i], t, escape, &mut codes[i], n[i])?;
                }
            }
        }
    }
    for i in 0..N {
        while n[i] + MULTI <= count {
            cur[i].refill(&lanes[i]);
            n[i] += step(&mut cur[i], &lanes[i], t, escape, &mut codes[i], n[i])?;
        }
        while n[i] < count {
            read_single(&mut cur[i], &lanes[i], t, escape, &mut codes[i], n[i])?;
            n[i] += 1;
        }
    }
    *cursors = cur;
    Ok(())
}

/// The arguments of [`decode_row_block`]: matrix, geometry, tables, row block, its rows of the output.
pub(crate) type RowBlockArgs<'a, K> = (&'a EncodedMatrix, &'a Geometry, &'a Tables, usize, &'a mut [<K as Kind>::W]);

/// Decodes row block `rb` into `out` (its rows of the output).
#[inline(always)] // also into the `simd` feature's build for newer processors
pub(crate) fn decode_row_block<K: Kind>((m, g, t, rb, out): RowBlockArgs<'_, K>) -> Result<(), Broken> {
    let cb_count = g.col_blocks as usize;
    const GROUP: usize = 4; // lanes decoded in lockstep
    let mut codes: [LaneCodes; GROUP] = core::array::from_fn(|_| LaneCodes { bytes: [0; MAX_CODES + 4], escaped: [0; 4] });
    let mut lanes: [LaneBuf; GROUP] = core::array::from_fn(|_| LaneBuf::new());
    let mut scratch = Scratch { raw: [0; MAX_CODES], joined: [0; MAX_CODES] };
    for cb in 0..cb_count {
        let block = rb * cb_count + cb;
        let count = g.codes_per_lane(block as u64);
        let mut start = m.bases[block] as usize;
        for group in 0..LANES / GROUP {
            // check_structure proved every lane lies inside `data`.
            let mut cursors = [Cursor::default(); GROUP];
            for i in 0..GROUP {
                let words = 4 * usize::from(m.hdr[block * LANES + GROUP * group + i]);
                cursors[i] = lanes[i].start(&m.data[start..start + words]);
                start += words;
            }
            read_lanes(&lanes, &mut cursors, &mut codes, t, count, K::ESCAPE)?;
            for i in 0..GROUP {
                cursors[i].finish(&lanes[i])?; // rules 13.11 - 13.13
                let lane = GROUP * group + i;
                match g.mode.layout {
                    Layout::Rows8 => place_l0::<K>(m, g, t, &codes[i], rb, cb, lane, out, &mut scratch)?,
                    Layout::Fragment16 => place_l1::<K>(m, g, t, &codes[i], rb, cb, lane, out, &mut scratch)?,
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
fn place_l0<K: Kind>(
    m: &EncodedMatrix,
    g: &Geometry,
    t: &Tables,
    codes: &LaneCodes,
    rb: usize,
    cb: usize,
    lane: usize,
    out: &mut [K::W],
    scratch: &mut Scratch,
) -> Result<(), Broken> {
    let (rows, k, k16) = (g.shape.rows as usize, g.shape.cols as usize, g.k16 as usize);
    let col0 = 512 * cb + 16 * lane;
    let real_cols = k.saturating_sub(col0).min(16);
    if 8 * rb + 8 <= rows && real_cols == 16 {
        // The common case: all 8 x 16 positions are weights.
        let bytes: &[u8; 128] = codes.bytes[..128].try_into().expect("128 codes");
        return K::place_lane_l0(t, bytes, &m.low, k16, 8 * rb, col0, out, k, scratch);
    }
    for i in 0..8 {
        let row = 8 * rb + i;
        let row_real = row < rows;
        let n0 = 16 * i;
        if row_real && real_cols == 16 {
            let raw = K::raw16(&m.low, Some(row), k16, col0, 0);
            let bytes: &[u8; 16] = codes.bytes[n0..n0 + 16].try_into().expect("16 codes");
            out[i * k + col0..i * k + col0 + 16].copy_from_slice(&K::weights16(t, bytes, &raw)?);
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

/// Buffers for placing a whole lane, made once per row block (not zeroed for every lane).
pub(crate) struct Scratch {
    /// The lane's raw bytes, in stream order.
    pub(crate) raw: [u8; MAX_CODES],
    /// The lane's weights, in stream order.
    pub(crate) joined: [u16; MAX_CODES],
}

/// Where a layout-1 lane whose positions are all weights goes (spec 8.2, 8.3, 8.5).
pub(crate) struct L1Lane {
    /// Raw slot of its first super-chunk; the next ones are 32 slots apart.
    pub(crate) slot0: usize,
    /// Super-chunks in the lane (16 codes each).
    pub(crate) chunks: usize,
    /// Columns of the matrix.
    pub(crate) k: usize,
    /// Upper row of the lane in the row block (the lower one is 8 further down).
    pub(crate) r8: usize,
    /// Column of its first super-chunk; the next ones are 32 columns apart.
    pub(crate) col0: usize,
}

/// Spec 8.3: a layout-1 lane holds, per super-chunk, 16 weights in A-fragment order; raw plane by
/// row group, super-chunk and lane (spec 8.5, 8.6). Every position has a raw slot.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn place_l1<K: Kind>(
    m: &EncodedMatrix,
    g: &Geometry,
    t: &Tables,
    codes: &LaneCodes,
    rg: usize,
    cb: usize,
    lane: usize,
    out: &mut [K::W],
    scratch: &mut Scratch,
) -> Result<(), Broken> {
    let (rows, k) = (g.shape.rows as usize, g.shape.cols as usize);
    let (r8, q) = (lane >> 2, lane & 3);
    let first = 16 * cb;
    let chunks = g.chunks_in_block(cb as u64) as usize;
    if 16 * rg + r8 + 8 < rows && 32 * (first + chunks - 1) + 8 * q + 8 <= k {
        // The common case: every position of every super-chunk is a weight.
        let lane = L1Lane { slot0: (rg * g.super_chunks as usize + first) * 32 + lane, chunks, k, r8, col0: 32 * first + 8 * q };
        let bytes: &[u8; 256] = codes.bytes[..256].try_into().expect("256 codes");
        return K::place_lane_l1(t, bytes, &m.low, &lane, out, scratch);
    }
    for s in first..first + chunks {
        let c0 = 32 * s + 8 * q;
        let lane_start = (rg * g.super_chunks as usize + s) * 32 + lane;
        let n0 = 16 * (s - first);
        for tt in 0..16 {
            let j = 2 * (tt >> 2) + (tt & 1);
            let row_in_block = r8 + 8 * ((tt >> 1) & 1);
            let col = c0 + j;
            let raw = read_raw(&m.low, K::raw_l1(lane_start, tt));
            if 16 * rg + row_in_block < rows && col < k {
                out[row_in_block * k + col] = K::weight(t, codes.bytes[n0 + tt], raw)?;
            } else if !t.is_filler(codes, n0 + tt) || raw != 0 {
                return Err(Broken);
            }
        }
    }
    Ok(())
}
