//! Corruptions of rules 13.11 - 13.20: lane streams, FP8 values, the raw plane, scales (spec 4.8,
//! 6, 7.5 - 8.6, 11).

use super::lanes::{assemble, code_bits, find_position, geometry, lane_codes, lane_words, replace_code, set_raw};
use super::{corruption, Corruption};
use nwc_reference::code::Code;
use nwc_reference::element::FP8_SYMBOL_BYTE;
use nwc_reference::geometry::LANES;
use nwc_reference::lut::recover_exp_of_rank;
use nwc_reference::tiling::lane_positions;
use nwc_reference::{ElemType, EncodedMatrix, Layout};

// ---------------------------------------------------------------------------------------------
// Rules 13.11 - 13.15, 13.20: lane streams (spec 6)
// ---------------------------------------------------------------------------------------------

/// 13.11: the last word of the first lane with at least 2 words removed, `hdr` and all later
/// offsets fixed up. Cutting whole words leaves a prefix of a code (at most R zeros), so the
/// stream ends inside a code rather than showing too many zeros.
pub fn lane_truncated(m: &EncodedMatrix) -> Vec<Corruption> {
    let mut lanes = lane_words(m);
    let Some(i) = lanes.iter().position(|w| w.len() >= 2) else { return Vec::new() };
    lanes[i].pop();
    let what = format!("last word of block {} lane {} removed, hdr and later offsets adjusted", i / LANES, i % LANES);
    vec![corruption("lane-truncated", "drop-last-word", what, assemble(m, &lanes))]
}

/// 13.12: a zero word appended to the first lane below the mode's maximum, `hdr` bumped, later
/// blocks shifted.
pub fn lane_overlong(m: &EncodedMatrix) -> Vec<Corruption> {
    let max = usize::from(geometry(m).max_lane_words());
    let mut lanes = lane_words(m);
    let Some(i) = lanes.iter().position(|w| w.len() < max) else { return Vec::new() };
    lanes[i].push(0);
    let what = format!("a zero word appended to block {} lane {}, hdr and later offsets adjusted", i / LANES, i % LANES);
    vec![corruption("lane-overlong", "extra-zero-word", what, assemble(m, &lanes))]
}

/// 13.13: the very last bit of the first lane whose last word has bits after its last code.
pub fn stream_padding(m: &EncodedMatrix) -> Vec<Corruption> {
    let mut lanes = lane_words(m);
    let found = lanes.iter().enumerate().find(|(i, w)| {
        let bits = code_bits(&lane_codes(m, w, (i / LANES) as u64, i % LANES));
        bits % 32 != 0
    });
    let Some((i, _)) = found else { return Vec::new() };
    *lanes[i].last_mut().expect("lanes have a word") |= 1;
    let what = format!("last bit of block {} lane {} set (after its last code)", i / LANES, i % LANES);
    vec![corruption("stream-padding", "last-bit", what, assemble(m, &lanes))]
}

/// 13.14: the first filler coded `11` (sign set), `010` (rank 1) and, for BF16, as an escape of
/// the rank-0 symbol (fillers are never escaped, spec 14.4).
pub fn filler_code(m: &EncodedMatrix) -> Vec<Corruption> {
    let Some((block, lane, i, pos)) = find_position(m, |p| !p.real) else { return Vec::new() };
    let at = format!("filler of block {block} lane {lane} (row {}, column {})", pos.row, pos.col);
    let mut out = vec![
        corruption("filler-code", "sign1", format!("{at} coded `11`"), replace_code(m, block, lane, i, Code::rank(0, 1))),
        corruption("filler-code", "rank1", format!("{at} coded `010`"), replace_code(m, block, lane, i, Code::rank(1, 0))),
    ];
    if m.mode.elem == ElemType::Bf16 {
        let hi = recover_exp_of_rank(&m.lut)[0];
        let c = replace_code(m, block, lane, i, Code::escape(hi));
        out.push(corruption("filler-code", "escaped", format!("{at} coded as an escape of byte {hi:#04x}"), c));
    }
    out
}

/// 13.15: FP8: the first code of block 0 lane 0 replaced by 10 zeros, a one and a sign bit.
pub fn fp8_rank(m: &EncodedMatrix) -> Vec<Corruption> {
    if m.mode.elem != ElemType::Fp8E4m3 {
        return Vec::new();
    }
    let c = replace_code(m, 0, 0, 0, Code { value: 0b10, len: 12 });
    vec![corruption("fp8-rank", "rank10", "block 0 lane 0 code 0 is `0000000000 1 0` (rank 10)", c)]
}

/// 13.20: BF16: a code of 16 zeros, a one and 8 bits (an escape with one zero too many), at the
/// first code of block 0 lane 0 and at the last code of the last lane.
pub fn bf16_escape(m: &EncodedMatrix) -> Vec<Corruption> {
    if m.mode.elem != ElemType::Bf16 {
        return Vec::new();
    }
    let g = geometry(m);
    let bad = Code { value: (1 << 8) | 0x3F, len: 25 };
    let last_block = g.blocks - 1;
    let last_code = g.codes_per_lane(last_block) - 1;
    vec![
        corruption("bf16-escape", "first-code", "block 0 lane 0 code 0 has 16 leading zeros", replace_code(m, 0, 0, 0, bad)),
        corruption(
            "bf16-escape",
            "last-code",
            format!("block {last_block} lane 31 code {last_code} has 16 leading zeros"),
            replace_code(m, last_block, LANES - 1, last_code, bad),
        ),
    ]
}

// ---------------------------------------------------------------------------------------------
// Rules 13.16 - 13.19: FP8 values, raw plane, scales (spec 4.8, 7.5 - 8.6, 11)
// ---------------------------------------------------------------------------------------------

/// Recodes the weight at (0, 0) (block 0, lane 0, code 0 in both layouts) to the FP8 symbol with
/// byte `symbol_byte`, with `sign`, and sets its nibble.
fn set_fp8_weight(m: &EncodedMatrix, symbol_byte: u8, sign: u8, nibble: u8) -> EncodedMatrix {
    let ranks = recover_exp_of_rank(&m.lut);
    let rank = ranks[..10].iter().position(|&b| b == symbol_byte).expect("a valid FP8 table ranks every symbol");
    let mut c = replace_code(m, 0, 0, 0, Code::rank(rank as u8, sign));
    let pos = lane_positions(&geometry(m), 0, 0)[0];
    debug_assert!(pos.real && pos.row == 0 && pos.col == 0);
    set_raw(&mut c.low, pos.raw.expect("a real weight has a raw slot"), nibble);
    c
}

/// 13.16: the weight at (0, 0) made symbol 9 (zero) with nibble 1, symbol 8 with nibble 4, and
/// symbol 0 with the odd nibble 3 (spec 4.8).
pub fn fp8_nibble(m: &EncodedMatrix) -> Vec<Corruption> {
    if m.mode.elem != ElemType::Fp8E4m3 {
        return Vec::new();
    }
    [("zero-nibble1", FP8_SYMBOL_BYTE[9], 1u8), ("sub-nibble4", FP8_SYMBOL_BYTE[8], 4), ("sym0-nibble3", FP8_SYMBOL_BYTE[0], 3)]
        .into_iter()
        .map(|(variant, byte, nibble)| {
            let what = format!("weight (0, 0) coded as symbol byte {byte} with nibble {nibble}");
            corruption("fp8-nibble", variant, what, set_fp8_weight(m, byte, 0, nibble))
        })
        .collect()
}

/// 13.17: the weight at (0, 0) made symbol 7 with nibble 15, i.e. 0x7F and 0xFF.
pub fn fp8_nan(m: &EncodedMatrix) -> Vec<Corruption> {
    if m.mode.elem != ElemType::Fp8E4m3 {
        return Vec::new();
    }
    [("pos", 0u8), ("neg", 1)]
        .into_iter()
        .map(|(variant, sign)| {
            let what = format!("weight (0, 0) coded as symbol 7, sign {sign}, nibble 15 (NaN)");
            corruption("fp8-nan", variant, what, set_fp8_weight(m, FP8_SYMBOL_BYTE[7], sign, 15))
        })
        .collect()
}

/// 13.18: the raw slot of the first pad position (a filler that has one) set non-zero; the
/// 512-byte slack is not a pad and is left alone.
pub fn raw_padding(m: &EncodedMatrix) -> Vec<Corruption> {
    let Some((block, lane, _, pos)) = find_position(m, |p| !p.real && p.raw.is_some()) else { return Vec::new() };
    let slot = pos.raw.expect("picked for its slot");
    let mut c = m.clone();
    set_raw(&mut c.low, slot, 0x5);
    let what = format!("raw slot {slot:?} of the pad at row {}, column {} (block {block} lane {lane}) set to 5", pos.row, pos.col);
    let layout = if m.mode.layout == Layout::Rows8 { "l0" } else { "l1" };
    vec![corruption("raw-padding", format!("pad-{layout}"), what, c)]
}

/// 13.19: one scale (the last row's) NaN, infinite, zero or negative. FP8 encodings without a
/// scale field get all-ones scales first (a valid choice, spec 11.4).
pub fn scale_value(m: &EncodedMatrix) -> Vec<Corruption> {
    if m.mode.elem != ElemType::Fp8E4m3 {
        return Vec::new();
    }
    let base = m.scale.clone().unwrap_or_else(|| vec![1.0; m.shape.rows as usize]);
    [("nan", f32::NAN), ("inf", f32::INFINITY), ("neg-inf", f32::NEG_INFINITY), ("zero", 0.0), ("neg-zero", -0.0), ("negative", -0.5)]
        .into_iter()
        .map(|(variant, value)| {
            let mut scale = base.clone();
            *scale.last_mut().expect("M >= 1") = value;
            let what = format!("scale of the last row set to {value}");
            corruption("scale-value", variant, what, EncodedMatrix { scale: Some(scale), ..m.clone() })
        })
        .collect()
}
