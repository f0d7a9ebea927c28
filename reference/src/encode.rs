//! The reference encoder: spec 4 to 9 applied in order. Its output is canonical by definition
//! (spec 14).

use crate::code::{Code, LaneWriter};
use crate::element::{bf16_hi, bf16_lo, bf16_symbol, fp8_is_nan, fp8_split};
use crate::error::EncodeError;
use crate::geometry::{hard, Geometry, Shape, LANES, TAIL_SLACK};
use crate::lut::build_lut;
use crate::matrix::{EncodedMatrix, Encoding};
use crate::mode::{ElemType, Mode};
use crate::ranking::{Ranking, CODED_RANKS};
use crate::tiling::{write_raw, LanePositions};

/// The weights to encode, row-major M x K.
#[derive(Clone, Copy, Debug)]
pub enum Weights<'a> {
    Bf16(&'a [u16]),
    Fp8(&'a [u8]),
}

impl Weights<'_> {
    fn elem(&self) -> ElemType {
        match self {
            Weights::Bf16(_) => ElemType::Bf16,
            Weights::Fp8(_) => ElemType::Fp8E4m3,
        }
    }

    fn len(&self) -> usize {
        match self {
            Weights::Bf16(w) => w.len(),
            Weights::Fp8(b) => b.len(),
        }
    }
}

fn align8(x: usize) -> usize {
    x.div_ceil(8) * 8
}

/// Encodes little-endian input bytes (2 per BF16 weight, 1 per fp8 weight) in `mode`.
pub fn encode_le_bytes(mode: Mode, shape: Shape, input: &[u8]) -> Result<Encoding, EncodeError> {
    let expected = shape.rows.saturating_mul(shape.cols).saturating_mul(mode.elem.input_bytes() as u64);
    if input.len() as u64 != expected {
        return Err(EncodeError::InputLength {
            got: input.len() as u64,
            expected,
            rows: shape.rows,
            cols: shape.cols,
            elem: mode.elem.name(),
        });
    }
    match mode.elem {
        ElemType::Bf16 => {
            let words: Vec<u16> = input.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
            encode(mode, shape, Weights::Bf16(&words))
        }
        ElemType::Fp8E4m3 => encode(mode, shape, Weights::Fp8(input)),
    }
}

/// Encodes a matrix. The element type of `weights` must match `mode.elem` (checked).
pub fn encode(mode: Mode, shape: Shape, weights: Weights<'_>) -> Result<Encoding, EncodeError> {
    let geometry = Geometry::new(mode, shape).map_err(|_| EncodeError::Shape { rows: shape.rows, cols: shape.cols })?;
    let n = shape.weights();
    if weights.elem() != mode.elem || weights.len() as u64 != n {
        return Err(EncodeError::InputLength {
            got: weights.len() as u64 * weights.elem().input_bytes() as u64,
            expected: n * mode.elem.input_bytes() as u64,
            rows: shape.rows,
            cols: shape.cols,
            elem: mode.elem.name(),
        });
    }
    // Spec 4.6: format 10 has no code for fp8 NaN; refuse before producing anything.
    if let Weights::Fp8(bytes) = weights {
        if let Some(index) = bytes.iter().position(|&b| fp8_is_nan(b)) {
            return Err(EncodeError::Fp8Nan { index: index as u64, byte: bytes[index] });
        }
    }
    // Spec 5.1: the ranking counts real weights only.
    let ranking = match weights {
        Weights::Bf16(words) => Ranking::bf16(words),
        Weights::Fp8(bytes) => Ranking::fp8(bytes),
    };

    let mut data = Vec::new();
    let mut bases = Vec::with_capacity(geometry.blocks as usize);
    let mut hdr = Vec::with_capacity(geometry.blocks as usize * LANES);
    let mut low = vec![0u8; geometry.n_low as usize]; // spec 7.5, 7.6, 8.5, 8.6: pad slots stay zero
    let mut escapes = 0u64;
    for block in 0..geometry.blocks {
        // Spec 9.3: each block starts at the next multiple of 8; the gap bytes (unspecified,
        // spec 9.7) are written as 0.
        data.resize(align8(data.len()), 0);
        bases.push(data.len() as u64);
        for lane in 0..LANES {
            let mut writer = LaneWriter::default();
            for pos in LanePositions::new(&geometry, block, lane) {
                if !pos.real {
                    writer.push(Code::FILLER); // spec 6.3
                    continue;
                }
                let index = (pos.row * shape.cols + pos.col) as usize;
                let (code, raw) = match weights {
                    Weights::Bf16(words) => {
                        let w = words[index];
                        let rank = ranking.rank_of_symbol[bf16_symbol(w) as usize];
                        let code = if usize::from(rank) < CODED_RANKS {
                            Code::rank(rank, bf16_hi(w) >> 7) // spec 6.1
                        } else {
                            escapes += 1;
                            Code::escape(bf16_hi(w)) // spec 6.2
                        };
                        (code, bf16_lo(w))
                    }
                    Weights::Fp8(bytes) => {
                        let parts = fp8_split(bytes[index]);
                        (Code::rank(ranking.rank_of_symbol[parts.symbol as usize], parts.sign), parts.nibble)
                    }
                };
                writer.push(code);
                let slot = pos.raw.expect("real weights always have a raw slot (spec 7.5, 7.6, 8.5, 8.6)");
                write_raw(&mut low, slot, raw);
            }
            // Spec 6.5 / 9.1: the header byte is the stream length in words (at most 192, spec 6.6).
            let words = writer.into_words();
            hdr.push(words.len() as u8);
            data.extend(words.iter().flat_map(|w| w.to_le_bytes()));
        }
    }
    let stream_end = data.len() as u64;
    // Spec 9.4, 9.5: the data field ends 64 bytes (read-ahead slack) after the 8-aligned stream end.
    let data_len = align8(data.len()) as u64 + TAIL_SLACK;
    if data_len > hard::MAX_DATA_LEN {
        return Err(EncodeError::StreamTooLarge { bytes: data_len });
    }
    data.resize(data_len as usize, 0);
    let lut = build_lut(mode.elem, &ranking.exp_of_rank);
    let matrix = EncodedMatrix { mode, shape, data, bases: bases.into_iter().map(|b| b as u32).collect(), hdr, lut, low, scale: None };
    Ok(Encoding { matrix, exp_of_rank: ranking.exp_of_rank, stream_end, escapes })
}
