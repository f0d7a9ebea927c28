//! Deterministic test matrices: random shapes with the edge cases the format has (K < 16, K not a
//! multiple of 16 or 32, exactly 512/513/4096 columns, M = 1, M not a multiple of 8 or 16) and the
//! value distributions that stress its parts (escapes, ties, NaN/Inf/subnormal BF16, fp8 subnormals).

use nwc_reference::element::fp8_is_nan;
use nwc_reference::{quantize_fp8, Shape};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

/// How the values of a test matrix are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dist {
    /// N(0, sigma) rounded to BF16, sigma = 2^log2_sigma.
    Gaussian { log2_sigma: i32 },
    /// Gaussian rows, each with its own scale spread over `binades` binades.
    RowScaled { binades: u32 },
    /// Every weight the same word.
    AllEqual,
    /// Exponents spread over a wide range: many escapes.
    HeavyTail,
    /// A few exponents used equally often: ties in the ranking.
    Ties,
    /// Uniformly random 16-bit patterns (NaN, Inf, subnormals, -0 included).
    RandomBits,
    /// fp8: quantized from a Gaussian with per-row scales (spec 11.1, 11.2).
    Fp8Quantized,
    /// fp8: uniformly random non-NaN bytes.
    Fp8RandomBytes,
    /// fp8: mostly zeros, -0 and subnormals.
    Fp8Subnormal,
}

impl Dist {
    pub const BF16: [Dist; 9] = [
        Dist::Gaussian { log2_sigma: -6 },
        Dist::Gaussian { log2_sigma: -12 },
        Dist::Gaussian { log2_sigma: 0 },
        Dist::Gaussian { log2_sigma: 7 },
        Dist::RowScaled { binades: 12 },
        Dist::AllEqual,
        Dist::HeavyTail,
        Dist::Ties,
        Dist::RandomBits,
    ];
    pub const FP8: [Dist; 4] = [Dist::Fp8Quantized, Dist::Fp8RandomBytes, Dist::Fp8Subnormal, Dist::AllEqual];

    pub fn name(self) -> String {
        match self {
            Dist::Gaussian { log2_sigma } => format!("gauss2^{log2_sigma}"),
            Dist::RowScaled { binades } => format!("rowscaled{binades}"),
            Dist::AllEqual => "allequal".into(),
            Dist::HeavyTail => "heavytail".into(),
            Dist::Ties => "ties".into(),
            Dist::RandomBits => "randombits".into(),
            Dist::Fp8Quantized => "fp8quant".into(),
            Dist::Fp8RandomBytes => "fp8random".into(),
            Dist::Fp8Subnormal => "fp8subnormal".into(),
        }
    }
}

/// A seeded generator of shapes and matrices.
pub struct Generator {
    rng: ChaCha8Rng,
}

/// Shapes every sweep includes before the random ones.
pub const EDGE_SHAPES: [(u64, u64); 16] = [
    (1, 1),
    (1, 7),
    (3, 15),
    (13, 40),
    (8, 512),
    (9, 513),
    (16, 512),
    (17, 4096),
    (1, 4096),
    (67, 24),
    (24, 33),
    (5, 1000),
    (31, 100),
    (2, 2049),
    (40, 64),
    (3, 4097),
];

impl Generator {
    pub fn new(seed: u64) -> Generator {
        Generator { rng: ChaCha8Rng::seed_from_u64(seed) }
    }

    pub fn rng(&mut self) -> &mut ChaCha8Rng {
        &mut self.rng
    }

    /// A dimension from 1 to `max`, log-uniform, so small and ragged sizes are frequent.
    pub fn dim(&mut self, max: u64) -> u64 {
        let e = self.rng.gen_range(0.0..(max as f64).ln());
        (e.exp() as u64).clamp(1, max)
    }

    /// The `i`-th shape of a sweep: the edge shapes first, then random ones up to `max` per side.
    pub fn shape(&mut self, i: usize, max: u64) -> Shape {
        if let Some(&(m, k)) = EDGE_SHAPES.get(i) {
            return Shape::new(m, k);
        }
        Shape::new(self.dim(max), self.dim(max))
    }

    fn gaussian_word(&mut self, sigma: f32) -> u16 {
        let v: f32 = Normal::new(0.0f32, sigma).expect("positive sigma").sample(&mut self.rng);
        half::bf16::from_f32(v).to_bits()
    }

    /// A BF16 matrix (also the source of [`Dist::Fp8Quantized`]).
    pub fn bf16(&mut self, dist: Dist, shape: Shape) -> Vec<u16> {
        let (m, k) = (shape.rows as usize, shape.cols as usize);
        let n = m * k;
        match dist {
            Dist::Gaussian { log2_sigma } => (0..n).map(|_| self.gaussian_word(2f32.powi(log2_sigma))).collect(),
            Dist::RowScaled { .. } | Dist::Fp8Quantized => {
                let binades = binades_of(dist);
                let mut out = Vec::with_capacity(n);
                for _ in 0..m {
                    let sigma = 2f32.powi(self.rng.gen_range(-(binades as i32)..=0) - 4);
                    out.extend((0..k).map(|_| self.gaussian_word(sigma)));
                }
                out
            }
            Dist::AllEqual => vec![self.rng.gen::<u16>(); n],
            Dist::HeavyTail => (0..n)
                .map(|_| {
                    let exponent = self.rng.gen_range(20u16..110); // far more than 15 exponents
                    let sign = u16::from(self.rng.gen::<bool>()) << 15;
                    sign | (exponent << 7) | self.rng.gen_range(0..128u16)
                })
                .collect(),
            Dist::Ties => {
                let count = self.rng.gen_range(2..24usize);
                let exps: Vec<u16> = (0..count).map(|_| self.rng.gen_range(0..128u16)).collect();
                (0..n).map(|i| (exps[i % count] << 7) | (self.rng.gen::<u16>() & 0x807F)).collect()
            }
            _ => (0..n).map(|_| self.rng.gen::<u16>()).collect(),
        }
    }

    /// An fp8 e4m3fn matrix (never NaN).
    pub fn fp8(&mut self, dist: Dist, shape: Shape) -> Vec<u8> {
        let n = shape.weights() as usize;
        match dist {
            Dist::Fp8Quantized => {
                let words = self.bf16(Dist::Fp8Quantized, shape);
                quantize_fp8(&words, shape).expect("finite gaussian input").0
            }
            Dist::Fp8Subnormal => (0..n)
                .map(|_| {
                    let sign = if self.rng.gen::<bool>() { 0x80 } else { 0 };
                    let magnitude = if self.rng.gen_range(0..4) == 0 { self.rng.gen_range(0..0x7Fu8) } else { self.rng.gen_range(0..8u8) };
                    sign | magnitude
                })
                .collect(),
            Dist::AllEqual => {
                let b = self.non_nan_byte();
                vec![b; n]
            }
            _ => (0..n).map(|_| self.non_nan_byte()).collect(),
        }
    }

    fn non_nan_byte(&mut self) -> u8 {
        loop {
            let b = self.rng.gen::<u8>();
            if !fp8_is_nan(b) {
                return b;
            }
        }
    }
}

fn binades_of(dist: Dist) -> u32 {
    match dist {
        Dist::RowScaled { binades } => binades,
        Dist::Fp8Quantized => 8,
        _ => 0,
    }
}

/// Little-endian bytes of BF16 words.
pub fn le_bytes(words: &[u16]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}
