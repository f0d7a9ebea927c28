//! Small valid matrices described by fuzz bytes: a mode, a shape and weights, either drawn by the
//! testkit's generators (realistic distributions, escapes, ties) or taken from the bytes themselves.

use crate::input::Input;
use nwc_reference::element::fp8_is_nan;
use nwc_reference::{Encoding, Mode, Shape, Weights};
use nwc_testkit::gen::{Dist, Generator};

/// Most rows and columns of a generated matrix: big enough for two row blocks in both layouts
/// (8 and 16 rows), the last one ragged, and two column blocks (512 columns), the last one ragged;
/// small enough for thousands of executions per second. The cost of an execution grows with the
/// weights (the reference coder reads and writes bit by bit), so the large cases stay below
/// 24 x 600 weights.
pub const MAX_ROWS: u64 = 24;
pub const MAX_COLS: u64 = 600;

/// The weights of a matrix, row-major.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plain {
    Bf16(Vec<u16>),
    Fp8(Vec<u8>),
}

impl Plain {
    pub fn as_weights(&self) -> Weights<'_> {
        match self {
            Plain::Bf16(w) => Weights::Bf16(w),
            Plain::Fp8(b) => Weights::Fp8(b),
        }
    }
}

/// A mode, a shape and weights.
#[derive(Clone, Debug)]
pub struct Spec {
    pub mode: Mode,
    pub shape: Shape,
    pub weights: Plain,
}

/// Reads a mode and a shape: 1 + 1 + 2 bytes. The top two bits of the row byte and of the column
/// word, both set, choose the full range; otherwise the dimension stays small (rows <= 10,
/// cols <= 80), so most executions are fast (a quarter of random bytes make a dimension large,
/// a sixteenth both) and the large cases still come up often.
pub fn read_mode_and_shape(input: &mut Input) -> (Mode, Shape) {
    let mode = Mode::ALL[input.below(4)];
    let (r, c) = (input.u8(), input.u16());
    let rows = 1 + u64::from(r & 0x3F) % if r & 0xC0 == 0xC0 { MAX_ROWS } else { 10 };
    let cols = 1 + u64::from(c & 0x3FFF) % if c & 0xC000 == 0xC000 { MAX_COLS } else { 80 };
    (mode, Shape::new(rows, cols))
}

/// Reads a matrix description. Byte `source` picks where the weights come from:
/// a testkit distribution seeded by the next 8 bytes, or the input bytes themselves (through a
/// small alphabet, so the ranking has ties and few symbols, or verbatim). fp8 NaN bytes are kept:
/// callers that need a valid matrix use [`encode_spec`], which maps them away.
pub fn read_spec(input: &mut Input) -> Spec {
    let (mode, shape) = read_mode_and_shape(input);
    let n = shape.weights() as usize;
    let bf16 = mode.elem == nwc_reference::ElemType::Bf16;
    let source = input.u8();
    let weights = match source % 4 {
        0 | 1 => {
            let seed = input.u64();
            let mut gen = Generator::new(seed);
            if bf16 {
                Plain::Bf16(gen.bf16(
                    Dist::BF16[usize::from(source / 4) % Dist::BF16.len()],
                    shape,
                ))
            } else {
                Plain::Fp8(gen.fp8(Dist::FP8[usize::from(source / 4) % Dist::FP8.len()], shape))
            }
        }
        2 => {
            let size = 1 + input.below(24);
            let alphabet = input.bytes(2 * size);
            let picks = cycle(&input.rest(), n);
            if bf16 {
                let words: Vec<u16> = alphabet
                    .chunks_exact(2)
                    .map(|c| u16::from_le_bytes([c[0], c[1]]))
                    .collect();
                Plain::Bf16(
                    picks
                        .iter()
                        .map(|&p| words[usize::from(p) % words.len()])
                        .collect(),
                )
            } else {
                Plain::Fp8(
                    picks
                        .iter()
                        .map(|&p| alphabet[usize::from(p) % alphabet.len()])
                        .collect(),
                )
            }
        }
        _ => {
            if bf16 {
                let bytes = cycle(&input.rest(), 2 * n);
                Plain::Bf16(
                    bytes
                        .chunks_exact(2)
                        .map(|c| u16::from_le_bytes([c[0], c[1]]))
                        .collect(),
                )
            } else {
                Plain::Fp8(cycle(&input.rest(), n))
            }
        }
    };
    Spec {
        mode,
        shape,
        weights,
    }
}

/// `n` bytes repeating `bytes` (zeros if it is empty).
pub fn cycle(bytes: &[u8], n: usize) -> Vec<u8> {
    if bytes.is_empty() {
        return vec![0; n];
    }
    bytes.iter().copied().cycle().take(n).collect()
}

/// Encodes a spec, first turning fp8 NaN bytes into the largest finite value of the same sign,
/// so the result is always a valid matrix.
///
/// This makes the valid matrices that the decoder targets then corrupt or compare, so it uses
/// nwc-fast's encoder: byte-identical with the reference (fast/tests, and the `roundtrip` target
/// fuzzes the reference encoder itself) and several times cheaper per weight, where the
/// reference encoder was half the cost of a `decode_mutated` execution.
pub fn encode_spec(spec: &Spec) -> Encoding {
    let weights = match &spec.weights {
        Plain::Fp8(b) => Plain::Fp8(
            b.iter()
                .map(|&x| if fp8_is_nan(x) { x - 1 } else { x })
                .collect(),
        ),
        other => other.clone(),
    };
    nwc_fast::encode(spec.mode, spec.shape, weights.as_weights())
        .expect("a small matrix without NaN always encodes")
}

/// Per-row fp8 scales from fuzz bytes: positive, finite, spread over many binades.
pub fn read_scales(input: &mut Input, rows: u64) -> Vec<f32> {
    (0..rows)
        .map(|_| f32::from_bits(0x3000_0000 + (input.u32() & 0x0FFF_FFFF)))
        .collect()
}
