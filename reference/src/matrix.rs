//! Spec 12: the stored fields of one encoded matrix, and the decoded matrix.

use crate::geometry::Shape;
use crate::mode::Mode;

/// The stored fields of one encoded matrix (spec 12), plus its metadata (mode and shape).
/// `exp_of_rank` is not stored: decoders read it back from `lut` (spec 10.6).
#[derive(Clone, Debug, PartialEq)]
pub struct EncodedMatrix {
    pub mode: Mode,
    pub shape: Shape,
    /// Lane streams of all blocks, at least align8(end) + 64 bytes (spec 9.4).
    pub data: Vec<u8>,
    /// Byte offset of each block in `data` (spec 9.3).
    pub bases: Vec<u32>,
    /// Words of each lane stream, 32 per block (spec 9.1).
    pub hdr: Vec<u8>,
    /// The 4096-entry decoder table (spec 10).
    pub lut: Vec<u32>,
    /// The raw plane: n_low bytes, optionally followed by the 512-byte slack (spec 3.6, 9.6).
    pub low: Vec<u8>,
    /// FP8 only: per-row scales (spec 11). None is an unscaled FP8 encoding (spec 11.6): matvec
    /// skips the multiply, the same as every scale being 1.0.
    pub scale: Option<Vec<f32>>,
}

/// What the encoder knows beyond the stored fields.
#[derive(Clone, Debug, PartialEq)]
pub struct Encoding {
    pub matrix: EncodedMatrix,
    /// Spec 5.3: the 16-entry rank table (`exp_of_rank.bin`; rank 15 is never stored).
    pub exp_of_rank: [u8; 16],
    /// Spec 9.4: end of the last block's streams in `data` (the stream end).
    pub stream_end: u64,
    /// Spec 6.2: number of escaped weights (always 0 for FP8).
    pub escapes: u64,
}

/// The weights of a decoded matrix, row-major M x K, exactly as they were encoded (spec 15.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Elements {
    /// BF16 words.
    Bf16(Vec<u16>),
    /// fp8 e4m3fn bytes.
    Fp8(Vec<u8>),
}

/// A matrix that passed every validity rule, with its weights decoded.
#[derive(Clone, Debug, PartialEq)]
pub struct DecodedMatrix {
    pub mode: Mode,
    pub shape: Shape,
    /// Spec 10.6: ranks 0..14 as recovered from the table.
    pub exp_of_rank: [u8; 15],
    pub elements: Elements,
    pub scale: Option<Vec<f32>>,
}

impl DecodedMatrix {
    /// The weights as little-endian bytes (BF16: 2 bytes each; FP8: 1 byte each).
    pub fn to_le_bytes(&self) -> Vec<u8> {
        match &self.elements {
            Elements::Bf16(words) => words.iter().flat_map(|w| w.to_le_bytes()).collect(),
            Elements::Fp8(bytes) => bytes.clone(),
        }
    }
}
