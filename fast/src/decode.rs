//! The fast decoder. It checks every validity rule of spec 13: the cheap structural rules through
//! `nwc_reference::check_structure`, the per-lane rules itself while decoding. When a lane breaks
//! any rule, it asks the reference decoder for the exact error (rule, block, lane, offset), so both
//! decoders always report the same thing.

use crate::bits::{BitReader, Broken};
use nwc_reference::element::{fp8_join, Fp8Parts, FP8_SYMBOL_BYTE};
use nwc_reference::geometry::LANES;
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
    let g = Geometry::new(m.mode, m.shape).expect("checked by check_structure");
    let tables = Tables::new(&exp_of_rank);
    let k = m.shape.cols as usize;
    let rows_per_task = m.mode.layout.block_rows() as usize * k;
    let n = m.shape.weights() as usize;
    let result = match m.mode.elem {
        nwc_reference::ElemType::Bf16 => {
            let mut out = vec![0u16; n];
            let ok = out
                .par_chunks_mut(rows_per_task)
                .enumerate()
                .all(|(rb, rows)| decode_row_block(m, &g, &tables, rb, &mut Out::Bf16(rows)).is_ok());
            ok.then_some(Elements::Bf16(out))
        }
        nwc_reference::ElemType::Fp8E4m3 => {
            let mut out = vec![0u8; n];
            let ok = out
                .par_chunks_mut(rows_per_task)
                .enumerate()
                .all(|(rb, rows)| decode_row_block(m, &g, &tables, rb, &mut Out::Fp8(rows)).is_ok());
            ok.then_some(Elements::Fp8(out))
        }
    };
    match result {
        Some(elements) => Ok(DecodedMatrix { mode: m.mode, shape: m.shape, exp_of_rank, elements, scale: m.scale.clone() }),
        None => {
            // Some lane broke a rule: the reference names it (rule, block, lane, offset).
            // Should the reference accept it, its output is the right answer; debug builds (the
            // differential tests) stop so that the disagreement gets fixed.
            let reference = nwc_reference::decode_with_limits(m, limits);
            debug_assert!(reference.is_err(), "nwc-fast rejected a matrix the reference accepts");
            reference
        }
    }
}

/// Decoding tables built once per matrix from the recovered exp_of_rank (spec 10.6).
struct Tables {
    /// BF16: high byte for (rank << 1 | sign), ranks 0..14.
    hi: [u8; 32],
    /// FP8: the fp8 magnitude for (rank << 4 | nibble), or 0xFFFF where spec 4.7/4.8 forbid the
    /// pair (rules 13.16 fp8-nibble, 13.17 fp8-nan).
    fp8: [u16; 160],
}

impl Tables {
    fn new(exp_of_rank: &[u8; 15]) -> Tables {
        let mut hi = [0u8; 32];
        for r in 0..15 {
            hi[2 * r] = exp_of_rank[r];
            hi[2 * r + 1] = 0x80 | exp_of_rank[r];
        }
        let mut fp8 = [0xFFFFu16; 160];
        for r in 0..10 {
            // check_structure guarantees ranks 0..9 are the ten symbol bytes (rule 13.9).
            if let Some(symbol) = FP8_SYMBOL_BYTE.iter().position(|&b| b == exp_of_rank[r]) {
                for nibble in 0..16u8 {
                    if let Some(byte) = fp8_join(Fp8Parts { sign: 0, symbol: symbol as u8, nibble }) {
                        fp8[r * 16 + nibble as usize] = u16::from(byte);
                    }
                }
            }
        }
        Tables { hi, fp8 }
    }
}

/// The output rows of one row block.
enum Out<'a> {
    Bf16(&'a mut [u16]),
    Fp8(&'a mut [u8]),
}

/// Where a position's raw part is, and where its weight goes.
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

/// Decodes one real weight from the stream and its raw part into `out[index]`.
#[inline(always)]
fn real(r: &mut BitReader, t: &Tables, low: &[u8], raw: Raw, out: &mut Out, index: usize) -> Result<(), Broken> {
    match out {
        Out::Bf16(o) => {
            let (rank, x) = r.read(true)?;
            let hi = if rank < 15 { t.hi[(rank * 2 + x) as usize] } else { x as u8 };
            o[index] = u16::from(hi) << 8 | u16::from(read_raw(low, raw));
        }
        Out::Fp8(o) => {
            let (rank, sign) = r.read(false)?;
            let mag = t.fp8[(rank * 16) as usize + usize::from(read_raw(low, raw))];
            if mag > 0xFF {
                return Err(Broken);
            }
            o[index] = (mag as u8) | (sign << 7) as u8;
        }
    }
    Ok(())
}

/// Rules 13.14 filler-code and 13.18 raw-padding for one filler position.
#[inline(always)]
fn filler(r: &mut BitReader, low: &[u8], raw: Option<Raw>, escape: bool) -> Result<(), Broken> {
    if r.read(escape)? != (0, 0) {
        return Err(Broken);
    }
    match raw {
        Some(raw) if read_raw(low, raw) != 0 => Err(Broken),
        _ => Ok(()),
    }
}

fn decode_row_block(m: &EncodedMatrix, g: &Geometry, t: &Tables, rb: usize, out: &mut Out) -> Result<(), Broken> {
    let escape = matches!(out, Out::Bf16(_));
    let cb_count = g.col_blocks as usize;
    for cb in 0..cb_count {
        let block = rb * cb_count + cb;
        let mut start = m.bases[block] as usize;
        for lane in 0..LANES {
            let words = 4 * usize::from(m.hdr[block * LANES + lane]);
            // check_structure proved every lane lies inside `data`.
            let mut r = BitReader::new(&m.data[start..start + words]);
            start += words;
            match g.mode.layout {
                Layout::Rows8 => lane_l0(m, g, t, &mut r, rb, cb, lane, out, escape)?,
                Layout::Fragment16 => lane_l1(m, g, t, &mut r, rb, cb, lane, out, escape)?,
            }
            r.finish()?;
        }
    }
    Ok(())
}

/// Spec 7.3: layout-0 lane: 8 rows x 16 columns; raw plane row-major (spec 7.5, 7.6).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn lane_l0(m: &EncodedMatrix, g: &Geometry, t: &Tables, r: &mut BitReader, rb: usize, cb: usize, lane: usize, out: &mut Out, escape: bool) -> Result<(), Broken> {
    let (rows, k, k16) = (g.shape.rows as usize, g.shape.cols as usize, g.k16 as usize);
    let col0 = 512 * cb + 16 * lane;
    let real_cols = k.saturating_sub(col0).min(16);
    for i in 0..8 {
        let row = 8 * rb + i;
        let row_real = row < rows;
        for j in 0..16 {
            let col = col0 + j;
            let raw = |col: usize| if escape { Raw::Byte(row * k16 + col) } else { Raw::Nibble(row * k16 / 2 + col0 / 2, col - col0) };
            if row_real && j < real_cols {
                real(r, t, &m.low, raw(col), out, i * k + col)?;
            } else {
                // Pad columns K..K16 of real rows have a raw slot; other fillers have none.
                let slot = (row_real && col < k16).then(|| raw(col));
                filler(r, &m.low, slot, escape)?;
            }
        }
    }
    Ok(())
}

/// Spec 8.3: layout-1 lane: per super-chunk 16 weights in A-fragment order; raw plane by row
/// group, super-chunk and lane (spec 8.5, 8.6). Every position has a raw slot.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn lane_l1(m: &EncodedMatrix, g: &Geometry, t: &Tables, r: &mut BitReader, rg: usize, cb: usize, lane: usize, out: &mut Out, escape: bool) -> Result<(), Broken> {
    let (rows, k) = (g.shape.rows as usize, g.shape.cols as usize);
    let (r8, q) = (lane >> 2, lane & 3);
    let first = 16 * cb;
    for s in first..first + g.chunks_in_block(cb as u64) as usize {
        let c0 = 32 * s + 8 * q;
        let lane_start = (rg * g.super_chunks as usize + s) * 32 + lane;
        for tt in 0..16 {
            let j = 2 * (tt >> 2) + (tt & 1);
            let h = (tt >> 1) & 1;
            let row_in_block = r8 + 8 * h;
            let row = 16 * rg + row_in_block;
            let col = c0 + j;
            let raw = if escape { Raw::Byte(lane_start * 16 + tt) } else { Raw::Nibble(lane_start * 8, tt) };
            if row < rows && col < k {
                real(r, t, &m.low, raw, out, row_in_block * k + col)?;
            } else {
                filler(r, &m.low, Some(raw), escape)?;
            }
        }
    }
    Ok(())
}
