//! The reference decoder: checks every validity rule of spec 13 and decodes the weights
//! (spec 15.1). Nothing is returned unless the whole matrix is valid.

use crate::code::{LaneReader, Read, ReadFailure};
use crate::element::{fp8_join, Fp8Parts, FP8_SYMBOL_BYTE};
use crate::error::{DecodeError, Field, FormatError};
use crate::geometry::{hard, Geometry, Limits, LANES, LUT_ENTRIES, RAW_SLACK, TAIL_SLACK};
use crate::lut::{recover_exp_of_rank, shared_lut, widen};
use crate::matrix::{DecodedMatrix, Elements, EncodedMatrix};
use crate::mode::ElemType;
use crate::tiling::{read_raw, LanePositions, RawSlot};

fn align8(x: u64) -> u64 {
    x.div_ceil(8) * 8
}

/// Checks every validity rule (spec 13) under the default [`Limits`].
pub fn validate(m: &EncodedMatrix) -> Result<(), DecodeError> {
    decode(m).map(|_| ())
}

/// Validates and decodes under the default [`Limits`].
pub fn decode(m: &EncodedMatrix) -> Result<DecodedMatrix, DecodeError> {
    decode_with_limits(m, &Limits::default())
}

/// Validates and decodes. Cheap structural rules come first, so a hostile header is rejected
/// before any allocation sized by the shape (spec 3.3). The checks run in the total order of
/// spec 16.2, so the rule reported for an encoding that breaks several is the one the spec names.
/// Rule 13.3.1 (field-missing) is for the readers of files: an `EncodedMatrix` has every required
/// field.
pub fn decode_with_limits(m: &EncodedMatrix, limits: &Limits) -> Result<DecodedMatrix, DecodeError> {
    let g = Geometry::new(m.mode, m.shape)?; // 13.2
    limits.check_shape(m.shape)?;
    let out_bytes = m.shape.weights() * m.mode.elem.input_bytes() as u64;
    limits.check_alloc("decoded weights", out_bytes)?;
    check_field_sizes(m, &g)?; // spec 16.2 step 2: 13.3
    check_offsets(m, &g)?; // step 3: 13.8, 13.5, 13.6/13.7 per block, 13.2 (data length), 13.4
    let exp_of_rank = check_table(m)?; // step 4: 13.9, 13.10
    if let Some(scale) = &m.scale {
        check_scales(scale)?; // step 4: 13.19; no scale field is an unscaled FP8 encoding (spec 11.6)
    }
    let elements = decode_lanes(m, &g, &exp_of_rank)?; // step 5: 13.11 - 13.18, 13.20 in lane order
    Ok(DecodedMatrix { mode: m.mode, shape: m.shape, exp_of_rank, elements, scale: m.scale.clone() })
}

/// The cheap rules only (13.2 - 13.10, 13.19: shape, limits, field sizes, offsets, table, scales),
/// without reading any lane stream. Returns the recovered exp_of_rank. For other decoders (the
/// fast one in `nwc-fast`) that check the per-lane rules themselves: after this passes, every lane
/// stream lies inside `data` at the offsets `bases`/`hdr` give.
pub fn check_structure(m: &EncodedMatrix, limits: &Limits) -> Result<[u8; 15], DecodeError> {
    let g = Geometry::new(m.mode, m.shape)?;
    limits.check_shape(m.shape)?;
    limits.check_alloc("decoded weights", m.shape.weights() * m.mode.elem.input_bytes() as u64)?;
    check_field_sizes(m, &g)?;
    check_offsets(m, &g)?;
    let exp_of_rank = check_table(m)?;
    if let Some(scale) = &m.scale {
        check_scales(scale)?;
    }
    Ok(exp_of_rank)
}

fn size_error(field: Field, got: usize, expected: String) -> FormatError {
    FormatError::FieldSize { field, got: got as u64, expected }
}

/// Rule 13.3 field-size (spec 12.1).
fn check_field_sizes(m: &EncodedMatrix, g: &Geometry) -> Result<(), FormatError> {
    let nb = g.blocks;
    if m.bases.len() as u64 != nb {
        return Err(size_error(Field::Bases, m.bases.len() * 4, format!("{} (u32 x {nb} blocks)", 4 * nb)));
    }
    if m.hdr.len() as u64 != 32 * nb {
        return Err(size_error(Field::Hdr, m.hdr.len(), format!("{} (32 x {nb} blocks)", 32 * nb)));
    }
    if m.lut.len() != LUT_ENTRIES {
        return Err(size_error(Field::Lut, m.lut.len() * 4, format!("{}", 4 * LUT_ENTRIES)));
    }
    let low = m.low.len() as u64;
    if low != g.n_low && low != g.n_low + RAW_SLACK {
        return Err(size_error(Field::Low, m.low.len(), format!("{} or {}", g.n_low, g.n_low + RAW_SLACK)));
    }
    match (&m.scale, m.mode.elem) {
        (Some(s), ElemType::Fp8E4m3) if s.len() as u64 != m.shape.rows => {
            Err(size_error(Field::Scale, s.len() * 4, format!("{} (f32 x {} rows)", 4 * m.shape.rows, m.shape.rows)))
        }
        (Some(s), ElemType::Bf16) => Err(size_error(Field::Scale, s.len() * 4, "0 (BF16 matrices have no scales)".into())),
        // FP8 without a scale field is an unscaled encoding (spec 11.6), not an error.
        _ => Ok(()),
    }
}

/// Rules 13.4 - 13.8 (spec 6.6, 9.1 - 9.4) and the data-length part of 13.2, in the total order of
/// spec 16.2 step 3: every header byte (13.8), bases[0] (13.5), then block by block 13.6 before
/// 13.7, then the data length (13.2) and 13.4. Keeps no per-lane state: an allocation sized by
/// `hdr` would be up to 128 times the decoded output (spec 3.3).
fn check_offsets(m: &EncodedMatrix, g: &Geometry) -> Result<(), FormatError> {
    let max = g.max_lane_words();
    for (i, &words) in m.hdr.iter().enumerate() {
        if words == 0 || words > max {
            let (block, lane) = ((i / LANES) as u64, i % LANES);
            return Err(FormatError::LaneLengthRange { block, lane, offset: i as u64, got: words, max });
        }
    }
    if m.bases[0] != 0 {
        return Err(FormatError::OffsetFirstNonZero { got: m.bases[0] });
    }
    let mut end = 0u64;
    for (block, &base) in m.bases.iter().enumerate() {
        let block = block as u64;
        if base % 8 != 0 {
            return Err(FormatError::OffsetMisaligned { block, got: base });
        }
        let expected = align8(end);
        if u64::from(base) != expected {
            return Err(FormatError::OffsetMismatch { block, got: base, expected });
        }
        let lanes = &m.hdr[block as usize * LANES..(block as usize + 1) * LANES];
        end = u64::from(base) + lanes.iter().map(|&w| 4 * u64::from(w)).sum::<u64>();
    }
    let needed = align8(end) + TAIL_SLACK;
    // Spec 3.2, rule 13.2: the last block may start below 2^32 and still end past it.
    if needed > hard::MAX_DATA_LEN {
        return Err(FormatError::DataLength { needed });
    }
    if (m.data.len() as u64) < needed {
        return Err(FormatError::DataTooShort { got: m.data.len() as u64, needed });
    }
    Ok(())
}

/// Rules 13.9 rank-table and 13.10 lut-mismatch (spec 10.6).
fn check_table(m: &EncodedMatrix) -> Result<[u8; 15], FormatError> {
    let ranks = recover_exp_of_rank(&m.lut);
    match m.mode.elem {
        ElemType::Bf16 => {
            for r in 0..15 {
                if ranks[..r].contains(&ranks[r]) {
                    return Err(FormatError::RankTable { rank: r, value: ranks[r], reason: "BF16 ranks 0..14 must be distinct" });
                }
            }
        }
        ElemType::Fp8E4m3 => {
            for r in 0..10 {
                if !FP8_SYMBOL_BYTE.contains(&ranks[r]) || ranks[..r].contains(&ranks[r]) {
                    let reason = "FP8 ranks 0..9 must be the ten symbol bytes, each once";
                    return Err(FormatError::RankTable { rank: r, value: ranks[r], reason });
                }
            }
            if let Some(r) = (10..15).find(|&r| ranks[r] != 0) {
                return Err(FormatError::RankTable { rank: r, value: ranks[r], reason: "FP8 ranks 10..14 must be 0" });
            }
        }
    }
    let expected = shared_lut(m.mode.elem, &widen(&ranks));
    // Compared as whole slices first (the usual case, equal); the first differing entry is
    // looked for only when they differ.
    if m.lut[..] != expected[..] {
        let entry = (0..LUT_ENTRIES).find(|&i| m.lut[i] != expected[i]).expect("the tables differ somewhere");
        return Err(FormatError::LutMismatch { entry, got: m.lut[entry], expected: expected[entry] });
    }
    Ok(ranks)
}

/// Rule 13.19 scale-value (spec 11.4).
fn check_scales(scale: &[f32]) -> Result<(), FormatError> {
    match scale.iter().position(|s| !(s.is_finite() && *s > 0.0)) {
        Some(row) => Err(FormatError::ScaleValue { row: row as u64, value: format!("{}", scale[row]) }),
        None => Ok(()),
    }
}

/// Rules 13.11 - 13.18 and 13.20: reads every lane stream (spec 6 - 8) and rebuilds the weights.
fn decode_lanes(m: &EncodedMatrix, g: &Geometry, exp_of_rank: &[u8; 15]) -> Result<Elements, FormatError> {
    let n = m.shape.weights() as usize;
    let mut elements = match m.mode.elem {
        ElemType::Bf16 => Elements::Bf16(vec![0u16; n]),
        ElemType::Fp8E4m3 => Elements::Fp8(vec![0u8; n]),
    };
    let (rank_limit, has_escape) = (m.mode.elem.rank_limit(), m.mode.elem == ElemType::Bf16);
    // One lane's stream as words, reused from lane to lane.
    let mut words: Vec<u32> = Vec::with_capacity(usize::from(g.max_lane_words()));
    for block in 0..g.blocks {
        // check_offsets established that the lanes of a block follow each other from bases[block].
        let mut next_start = u64::from(m.bases[block as usize]);
        for lane in 0..LANES {
            let i = block as usize * LANES + lane;
            let start = next_start;
            next_start += 4 * u64::from(m.hdr[i]);
            words.clear();
            words.extend(
                m.data[start as usize..start as usize + 4 * usize::from(m.hdr[i])]
                    .chunks_exact(4)
                    .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            );
            let mut reader = LaneReader::new(&words);
            let positions = LanePositions::new(g, block, lane);
            let codes = positions.len();
            for (code, pos) in positions.enumerate() {
                let offset = start + 4 * (reader.position() as u64 / 32);
                let read = reader.read(rank_limit, has_escape).map_err(|failure| match failure {
                    ReadFailure::Truncated => FormatError::LaneTruncated { block, lane, code, codes, offset },
                    ReadFailure::TooManyZeros { zeros } if has_escape => FormatError::Bf16Escape { block, lane, code, zeros, offset },
                    ReadFailure::TooManyZeros { zeros } => FormatError::Fp8Rank { block, lane, code, zeros, offset },
                })?;
                if !pos.real {
                    // Spec 6.3, rule 13.14: fillers are exactly `10`; rule 13.18: their raw slot is 0.
                    if read != (Read::Rank { rank: 0, sign: 0 }) {
                        return Err(FormatError::FillerCode { block, lane, code, row: pos.row, col: pos.col });
                    }
                    if let Some(slot) = pos.raw {
                        check_pad_slot(&m.low, slot)?;
                    }
                    continue;
                }
                let slot = pos.raw.expect("real weights always have a raw slot (spec 7.5, 7.6, 8.5, 8.6)");
                let raw = read_raw(&m.low, slot);
                let index = (pos.row * m.shape.cols + pos.col) as usize;
                match (&mut elements, read) {
                    (Elements::Bf16(out), Read::Rank { rank, sign }) => {
                        let hi = (sign << 7) | exp_of_rank[rank as usize];
                        out[index] = u16::from_be_bytes([hi, raw]);
                    }
                    (Elements::Bf16(out), Read::Escape { hi }) => out[index] = u16::from_be_bytes([hi, raw]),
                    (Elements::Fp8(out), Read::Rank { rank, sign }) => {
                        out[index] = fp8_weight(exp_of_rank[rank as usize], sign, raw, pos.row, pos.col, slot)?;
                    }
                    (Elements::Fp8(_), Read::Escape { .. }) => unreachable!("FP8 streams are read without escapes"),
                }
            }
            // Rules 13.12 and 13.13: the header counts exactly the words the codes use, and the
            // bits after the last code are zero.
            let used_words = reader.position().div_ceil(32) as u64;
            if used_words < u64::from(m.hdr[i]) {
                return Err(FormatError::LaneOverlong { block, lane, words: m.hdr[i], used: used_words });
            }
            if reader.rest().any() {
                let offset = start + 4 * (reader.position() as u64 / 32);
                return Err(FormatError::StreamPadding { block, lane, offset });
            }
        }
    }
    Ok(elements)
}

fn slot_offset(slot: RawSlot) -> u64 {
    match slot {
        RawSlot::Byte(i) => i as u64,
        RawSlot::Nibble { byte, .. } => byte as u64,
    }
}

/// Rule 13.18: pad slots of the raw plane hold zero.
fn check_pad_slot(low: &[u8], slot: RawSlot) -> Result<(), FormatError> {
    if read_raw(low, slot) != 0 {
        let what = if matches!(slot, RawSlot::Byte(_)) { "byte" } else { "nibble" };
        return Err(FormatError::RawPadding { offset: slot_offset(slot), what });
    }
    Ok(())
}

/// Spec 4.7, 4.8, rules 13.16 fp8-nibble and 13.17 fp8-nan: one fp8 weight from its symbol byte,
/// sign and nibble.
fn fp8_weight(symbol_byte: u8, sign: u8, nibble: u8, row: u64, col: u64, slot: RawSlot) -> Result<u8, FormatError> {
    let symbol = FP8_SYMBOL_BYTE.iter().position(|&b| b == symbol_byte).expect("rank-table checked") as u8;
    let offset = slot_offset(slot);
    match fp8_join(Fp8Parts { sign, symbol, nibble }) {
        Some(byte) => Ok(byte),
        None if symbol == 7 && nibble == 15 => Err(FormatError::Fp8Nan { row, col, offset }),
        None => Err(FormatError::Fp8Nibble { row, col, symbol_byte, nibble, offset }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::Shape;
    use crate::mode::Mode;

    /// Rule 13.2, data-length part: every block offset fits in a u32 but the last block ends past
    /// 2^32 - 1. Calls `check_offsets` directly: through `decode` the matching `low` field alone
    /// would take 1.4 GB. (Found by review for issue 5; the decoder used to accept such a matrix
    /// if `data` was long enough.)
    #[test]
    fn data_length_past_u32_is_shape_range() {
        let blocks = 174_763u64; // 174763 blocks of 32 lanes x 192 words end at 4_294_975_488
        let shape = Shape::new(16, 512 * blocks);
        let g = Geometry::new(Mode::BF16_L1, shape).unwrap();
        assert_eq!(g.blocks, blocks);
        let block_bytes = 32 * 4 * 192u64;
        let m = EncodedMatrix {
            mode: Mode::BF16_L1,
            shape,
            data: Vec::new(),
            bases: (0..blocks).map(|b| u32::try_from(b * block_bytes).unwrap()).collect(),
            hdr: vec![192; 32 * blocks as usize],
            lut: Vec::new(),
            low: Vec::new(),
            scale: None,
        };
        let err = check_offsets(&m, &g).unwrap_err();
        assert_eq!(err, FormatError::DataLength { needed: blocks * block_bytes + TAIL_SLACK });
        assert_eq!(err.rule(), "shape-range");
        // One block fewer fits, and then the empty `data` is what is wrong.
        let shorter = EncodedMatrix {
            shape: Shape::new(16, 512 * (blocks - 1)),
            bases: m.bases[..blocks as usize - 1].to_vec(),
            hdr: m.hdr[..32 * (blocks as usize - 1)].to_vec(),
            ..m
        };
        let g = Geometry::new(Mode::BF16_L1, shorter.shape).unwrap();
        assert_eq!(check_offsets(&shorter, &g).unwrap_err().rule(), "data-too-short");
    }
}
