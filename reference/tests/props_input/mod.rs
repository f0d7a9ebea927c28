//! Inputs of the property tests (`props.rs`, `props_semantics.rs`): test matrices drawn from a
//! seed (shape, mode, kind of values), activations, and comparisons written from the definitions.
//! Each test binary uses part of it.
#![allow(dead_code)]

use nwc_reference::{encode, ElemType, Elements, EncodedMatrix, Mode, Shape, Weights};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

pub const MAX_ROWS: u64 = 100;
pub const MAX_COLS: u64 = 1100;

/// The weights of one test matrix, row-major.
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    Bf16(Vec<u16>),
    Fp8(Vec<u8>),
}

impl Input {
    pub fn weights(&self) -> Weights<'_> {
        match self {
            Input::Bf16(w) => Weights::Bf16(w),
            Input::Fp8(b) => Weights::Fp8(b),
        }
    }

    pub fn as_elements(&self) -> Elements {
        match self {
            Input::Bf16(w) => Elements::Bf16(w.clone()),
            Input::Fp8(b) => Elements::Fp8(b.clone()),
        }
    }

    /// The weight at index i as f32, computed here without the codec (spec 15.4.2).
    pub fn value(&self, i: usize) -> f32 {
        match self {
            Input::Bf16(w) => f32::from_bits(u32::from(w[i]) << 16),
            Input::Fp8(b) => fp8_value(b[i]),
        }
    }
}

/// e4m3fn byte to f32, straight from the definition: exponent bias 7, subnormals 2^-6 * m/8.
pub fn fp8_value(byte: u8) -> f32 {
    let sign = if byte & 0x80 != 0 { -1.0f32 } else { 1.0 };
    let e = i32::from((byte >> 3) & 0xF);
    let m = f32::from(byte & 7);
    let magnitude = if e == 0 { m * 2f32.powi(-9) } else { (8.0 + m) * 2f32.powi(e - 10) };
    sign * magnitude
}

/// How a test matrix's values are drawn.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// Uniform bit patterns (BF16: NaN, Inf, subnormals, -0, mostly escapes; FP8: any non-NaN byte).
    AnyBits,
    /// A small palette of exponents with skewed frequencies (ranks, ties), plus a few arbitrary words.
    Palette,
    /// Gaussian values, like trained weights.
    Gaussian,
}

pub fn kind_strategy() -> impl Strategy<Value = Kind> {
    prop_oneof![Just(Kind::AnyBits), Just(Kind::Palette), Just(Kind::Gaussian)]
}

pub fn mode_strategy() -> impl Strategy<Value = Mode> {
    (0..4usize).prop_map(|i| Mode::ALL[i])
}

pub fn shape_strategy() -> impl Strategy<Value = Shape> {
    (1..=MAX_ROWS, 1..=MAX_COLS).prop_map(|(m, k)| Shape::new(m, k))
}

/// Draws the weights. With `finite`, BF16 Inf/NaN patterns are moved to the largest exponent
/// below them, so that sums stay comparable value by value.
pub fn make_input(mode: Mode, shape: Shape, seed: u64, kind: Kind, finite: bool) -> Input {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let n = shape.weights() as usize;
    match mode.elem {
        ElemType::Bf16 => {
            let mut words: Vec<u16> = match kind {
                Kind::AnyBits => (0..n).map(|_| rng.gen()).collect(),
                Kind::Palette => {
                    let palette: Vec<u16> = (0..rng.gen_range(1..=30)).map(|_| rng.gen_range(0..128u16)).collect();
                    (0..n)
                        .map(|_| {
                            if rng.gen_ratio(1, 64) {
                                return rng.gen();
                            }
                            // Squaring skews the choice towards the first palette entries.
                            let pick = (rng.gen::<f64>().powi(2) * palette.len() as f64) as usize;
                            (palette[pick] << 8) | (rng.gen::<u16>() & 0x80FF)
                        })
                        .collect()
                }
                Kind::Gaussian => {
                    let sigma = 2f32.powi(rng.gen_range(-12..=4));
                    let normal = Normal::new(0.0f32, sigma).unwrap();
                    (0..n).map(|_| half::bf16::from_f32(normal.sample(&mut rng)).to_bits()).collect()
                }
            };
            if finite {
                for w in &mut words {
                    if *w & 0x7F80 == 0x7F80 {
                        *w &= !0x0080;
                    }
                }
            }
            Input::Bf16(words)
        }
        ElemType::Fp8E4m3 => {
            let mut bytes: Vec<u8> = match kind {
                Kind::AnyBits => (0..n).map(|_| rng.gen()).collect(),
                Kind::Palette => {
                    let palette: Vec<u8> = (0..rng.gen_range(1..=6)).map(|_| rng.gen()).collect();
                    (0..n).map(|_| if rng.gen_ratio(1, 16) { rng.gen() } else { palette[rng.gen_range(0..palette.len())] }).collect()
                }
                Kind::Gaussian => {
                    let normal = Normal::new(0.0f32, 2f32.powi(rng.gen_range(-8..=6))).unwrap();
                    (0..n).map(|_| nwc_reference::quantize::f32_to_fp8_rne(normal.sample(&mut rng).clamp(-448.0, 448.0))).collect()
                }
            };
            for b in &mut bytes {
                if *b & 0x7F == 0x7F {
                    *b ^= 1; // NaN cannot be encoded (spec 4.6); 0x7E is +-448
                }
            }
            Input::Fp8(bytes)
        }
    }
}

pub fn encoded(mode: Mode, shape: Shape, input: &Input) -> EncodedMatrix {
    encode(mode, shape, input.weights()).expect("valid input encodes").matrix
}

/// Activations with magnitudes spread over many binades, so that a wrong summation order
/// changes the rounded result.
pub fn activations(rng: &mut ChaCha8Rng, n: usize) -> Vec<f32> {
    (0..n)
        .map(|_| {
            if rng.gen_ratio(1, 16) {
                return 0.0;
            }
            let v: f32 = rng.gen_range(-1.0..1.0);
            v * 2f32.powi(rng.gen_range(-20..=20))
        })
        .collect()
}

/// Bitwise equality, with every NaN equal to every NaN (spec 15.4.6).
pub fn same_f32(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

pub fn assert_same_f32s(got: &[f32], want: &[f32], what: &str) -> Result<(), TestCaseError> {
    prop_assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        prop_assert!(
            same_f32(*g, *w),
            "{}: output {} is {:e} ({:#010x}), expected {:e} ({:#010x})",
            what,
            i,
            g,
            g.to_bits(),
            w,
            w.to_bits()
        );
    }
    Ok(())
}

/// f32 to BF16, round to nearest, ties to even, written here from the definition.
pub fn bf16_rne(v: f32) -> u16 {
    if v.is_nan() {
        return 0x7FC0;
    }
    let bits = v.to_bits();
    let rounding = 0x7FFF + ((bits >> 16) & 1);
    ((bits + rounding) >> 16) as u16
}
