//! The matrices of the canonical vectors: shape edge cases x value distributions for each mode,
//! plus the worked examples of the spec, and the clauses each one exercises.

use super::expect::MatvecInput;
use nwc_reference::element::fp8_split;
use nwc_reference::{quantize_fp8, ElemType, Encoding, Geometry, Layout, Mode, Shape};
use nwc_testkit::gen::{Dist, Generator};
use rand::Rng;

#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    Bf16(Vec<u16>),
    Fp8(Vec<u8>),
}

impl Input {
    pub fn le_bytes(&self) -> Vec<u8> {
        match self {
            Input::Bf16(w) => nwc_testkit::gen::le_bytes(w),
            Input::Fp8(b) => b.clone(),
        }
    }
}

/// One canonical vector to be.
pub struct Case {
    /// Distribution and shape, e.g. `heavytail-9x513`; unique within a mode.
    pub name: String,
    pub mode: Mode,
    pub shape: Shape,
    pub input: Input,
    pub scale: Option<Vec<f32>>,
    /// FP8 quantized from BF16 by spec 11.2: the source.
    pub quantized_from: Option<Vec<u16>>,
    pub about: String,
    pub extra_clauses: Vec<&'static str>,
    /// Matvecs beyond the standard four (the spec's worked examples), with the BF16 results the
    /// spec states, checked when the corpus is generated.
    pub example_matvecs: Vec<(MatvecInput, Vec<u16>)>,
    /// The rank table the spec states for an example.
    pub example_exp_of_rank: Option<Vec<u8>>,
}

impl Case {
    fn new(mode: Mode, name: &str, shape: Shape, input: Input, about: &str) -> Case {
        Case {
            name: format!("{name}-{}x{}", shape.rows, shape.cols),
            mode,
            shape,
            input,
            scale: None,
            quantized_from: None,
            about: about.to_owned(),
            extra_clauses: Vec::new(),
            example_matvecs: Vec::new(),
            example_exp_of_rank: None,
        }
    }
}

/// NaN with payloads, infinities, subnormals and signed zeros (spec 4.3).
const BF16_SPECIALS: [u16; 16] =
    [0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0xFFC1, 0x7F81, 0x0001, 0x8001, 0x007F, 0x807F, 0x0080, 0x3F80, 0xBF80, 0x7F7F, 0xFF7F];

fn dist_name(d: Dist) -> String {
    d.name().replace('^', "p")
}

/// Shape edge cases (spec 3.4 - 3.6, 7.1, 8.1) and the distributions that meet them.
const BF16_PLAN: [(u64, u64, Option<Dist>); 16] = [
    (1, 1, Some(Dist::Gaussian { log2_sigma: -6 })),
    (1, 7, Some(Dist::RandomBits)),
    (3, 15, None), // specials
    (13, 40, Some(Dist::Gaussian { log2_sigma: -12 })),
    (8, 512, Some(Dist::Ties)),
    (9, 513, Some(Dist::HeavyTail)),
    (16, 512, Some(Dist::Gaussian { log2_sigma: 0 })),
    (17, 100, Some(Dist::RowScaled { binades: 12 })),
    (24, 33, Some(Dist::AllEqual)),
    (2, 1100, Some(Dist::RandomBits)),
    (31, 600, Some(Dist::RowScaled { binades: 12 })),
    (3, 4097, Some(Dist::Gaussian { log2_sigma: 7 })),
    (40, 64, Some(Dist::Ties)),
    (67, 24, Some(Dist::Gaussian { log2_sigma: -6 })),
    (9, 520, Some(Dist::RowScaled { binades: 20 })),
    (33, 1, Some(Dist::RandomBits)),
];

/// (rows, cols, distribution, scales): `Some(true)` quantized from BF16, `Some(false)` explicit
/// scales, `None` unscaled.
const FP8_PLAN: [(u64, u64, Dist, Option<bool>); 14] = [
    (1, 1, Dist::Fp8Subnormal, None),
    (3, 15, Dist::Fp8Subnormal, None),
    (13, 40, Dist::Fp8Quantized, Some(true)),
    (9, 513, Dist::Fp8RandomBytes, None),
    (16, 512, Dist::Fp8Quantized, Some(true)),
    (17, 100, Dist::Fp8Quantized, Some(true)),
    (24, 33, Dist::AllEqual, None),
    (2, 1100, Dist::Fp8RandomBytes, Some(false)),
    (31, 600, Dist::Fp8Subnormal, Some(false)),
    (3, 4097, Dist::Fp8Quantized, Some(true)),
    (40, 64, Dist::Fp8RandomBytes, None),
    (67, 24, Dist::Fp8Quantized, None),
    (9, 520, Dist::Fp8RandomBytes, Some(false)),
    (33, 1, Dist::Fp8Subnormal, Some(false)),
];

fn explicit_scales(gen: &mut Generator, rows: u64) -> Vec<f32> {
    (0..rows).map(|_| gen.rng().gen_range(0.001f32..4.0)).collect()
}

fn bf16_case(gen: &mut Generator, mode: Mode, rows: u64, cols: u64, dist: Option<Dist>) -> Case {
    let shape = Shape::new(rows, cols);
    match dist {
        Some(d) => Case::new(mode, &dist_name(d), shape, Input::Bf16(gen.bf16(d, shape)), &dist_name(d)),
        None => {
            let mut w = gen.bf16(Dist::Gaussian { log2_sigma: -6 }, shape);
            for (i, x) in w.iter_mut().enumerate().filter(|(i, _)| i % 2 == 0) {
                *x = BF16_SPECIALS[(i / 2) % BF16_SPECIALS.len()];
            }
            let mut c = Case::new(mode, "specials", shape, Input::Bf16(w), "NaN payloads, infinities, subnormals and signed zeros");
            c.extra_clauses.push("4.3");
            c
        }
    }
}

fn fp8_case(gen: &mut Generator, mode: Mode, rows: u64, cols: u64, dist: Dist, scales: Option<bool>) -> Case {
    let shape = Shape::new(rows, cols);
    let mut c = match (dist, scales) {
        (Dist::Fp8Quantized, Some(true)) => {
            let source = gen.bf16(Dist::Fp8Quantized, shape);
            let (bytes, scale) = quantize_fp8(&source, shape).expect("finite source");
            let mut c = Case::new(mode, "quantized", shape, Input::Fp8(bytes), "quantized from BF16 with per-row scales");
            c.scale = Some(scale);
            c.quantized_from = Some(source);
            c.extra_clauses.extend(["11.2", "11.3"]);
            c
        }
        _ => Case::new(mode, &dist_name(dist), shape, Input::Fp8(gen.fp8(dist, shape)), &dist_name(dist)),
    };
    if scales == Some(false) {
        c.scale = Some(explicit_scales(gen, rows));
        c.name.push_str("-scaled");
        c.about.push_str(", explicit scales");
    }
    c
}

/// The spec's worked examples in this mode (5.5, 7.7, 8.8, 10.7, 15.4.8).
fn examples(mode: Mode) -> Vec<Case> {
    let bf16_1x3 = vec![0x3F80u16, 0x4000, 0xBF00];
    let mut out = Vec::new();
    let l0 = mode.layout == Layout::Rows8;
    match mode.elem {
        ElemType::Bf16 => {
            let mut c = Case::new(mode, "example", Shape::new(1, 3), Input::Bf16(bf16_1x3), "the 1x3 matrix [1.0, 2.0, -0.5]");
            c.extra_clauses.extend(["3.7", "5.5", "12.6", "15.4.8", if l0 { "7.7" } else { "8.8" }]);
            c.example_exp_of_rank = Some([63, 64, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15].to_vec());
            let x = vec![2f32.powi(24), 0.5, 2f32.powi(25)];
            c.example_matvecs.push((MatvecInput { batch: 1, x: x.clone(), bias: None }, vec![0x0000]));
            c.example_matvecs.push((MatvecInput { batch: 1, x, bias: Some(vec![0.25]) }, vec![0x3E80]));
            out.push(c);
            // 5.5 / 10.7: counts {60: 5, 10: 3, 20: 3, 5: 3, 70: 1}, symbol s is the high byte.
            let mut words = Vec::new();
            for (symbol, count) in [(60u16, 5), (10, 3), (20, 3), (5, 3), (70, 1)] {
                words.extend((0..count).map(|i| (symbol << 8) | (17 * i + symbol) & 0xFF));
            }
            let mut c = Case::new(mode, "example-ties", Shape::new(1, 15), Input::Bf16(words), "the tie example of spec 5.5");
            c.extra_clauses.extend(["5.5", "10.7"]);
            c.example_exp_of_rank = Some([60, 10, 20, 5, 70, 0, 6, 7, 8, 9, 1, 11, 12, 13, 14, 15].to_vec());
            out.push(c);
        }
        ElemType::Fp8E4m3 => {
            let mut c = Case::new(
                mode,
                "example",
                Shape::new(1, 3),
                Input::Fp8(vec![0x38, 0x40, 0xB0]),
                "the 1x3 matrix [1.0, 2.0, -0.5], scale 0.25",
            );
            c.scale = Some(vec![0.25]);
            c.name.push_str("-scaled");
            c.extra_clauses.extend(["5.5", "15.4.8", "11.4", "11.5", if l0 { "7.7" } else { "8.8" }]);
            c.example_exp_of_rank = Some([63, 64, 62, 60, 61, 65, 66, 67, 59, 0, 0, 0, 0, 0, 0, 0].to_vec());
            let x = vec![3.0f32, 0.75, 8.0];
            c.example_matvecs.push((MatvecInput { batch: 1, x, bias: Some(vec![1.0]) }, vec![0x3F90]));
            out.push(c);
            // 5.5: symbol counts {3: 2, 4: 3, 9: 1}.
            let bytes = vec![0x30, 0x40, 0xB8, 0x40, 0x00, 0x48];
            let mut c = Case::new(mode, "example-ties", Shape::new(1, 6), Input::Fp8(bytes), "the FP8 ranking example of spec 5.5");
            c.extra_clauses.extend(["5.5", "10.7"]);
            c.example_exp_of_rank = Some([64, 63, 0, 60, 61, 65, 66, 67, 59, 62, 0, 0, 0, 0, 0, 0].to_vec());
            out.push(c);
        }
    }
    out
}

/// The canonical cases of the committed corpus in `mode`.
pub fn small(seed: u64, mode: Mode) -> Vec<Case> {
    let mut gen = Generator::new(seed ^ u64::from(mode.code()) << 32);
    let mut out = examples(mode);
    match mode.elem {
        ElemType::Bf16 => out.extend(BF16_PLAN.iter().map(|&(m, k, d)| bf16_case(&mut gen, mode, m, k, d))),
        ElemType::Fp8E4m3 => out.extend(FP8_PLAN.iter().map(|&(m, k, d, s)| fp8_case(&mut gen, mode, m, k, d, s))),
    }
    out
}

/// A bigger sweep for `--tier large`: random shapes up to 3000 per side with every distribution.
pub fn large(seed: u64, mode: Mode) -> Vec<Case> {
    let mut gen = Generator::new(seed ^ 0x1A26E ^ u64::from(mode.code()) << 32);
    let mut out = small(seed, mode);
    for i in 0..48 {
        let shape = gen.shape(i + 16, 3000); // past the fixed edge shapes, which `small` has
        let case = match mode.elem {
            ElemType::Bf16 => bf16_case(&mut gen, mode, shape.rows, shape.cols, Some(Dist::BF16[i % Dist::BF16.len()])),
            ElemType::Fp8E4m3 => {
                let d = Dist::FP8[i % Dist::FP8.len()];
                let scales = if d == Dist::Fp8Quantized { Some(true) } else { [None, Some(false)][i % 2] };
                fp8_case(&mut gen, mode, shape.rows, shape.cols, d, scales)
            }
        };
        out.push(Case { name: format!("{}-r{i}", case.name), ..case });
    }
    out
}

/// Clauses every canonical or valid vector of `mode` exercises, plus those its features show.
pub fn clauses(case: &Case, enc: &Encoding) -> Vec<&'static str> {
    let g = Geometry::new(case.mode, case.shape).expect("encoded");
    let mut c: Vec<&'static str> = vec![
        "1", "1.1", "1.2", "1.3", "1.3.1", "1.3.2", "1.3.3", "1.4", "1.5", "2", "2.1", "2.2", "2.4", "3", "3.1", "3.2", "3.4", "3.5",
        "3.6", "4", "5", "5.1", "5.2", "5.3", "5.4", "6", "6.1", "6.4", "6.5", "6.6", "9", "9.1", "9.2", "9.3", "9.4", "9.5", "9.7", "10",
        "10.1", "10.2", "10.3", "10.4", "10.5", "10.6", "12", "12.1", "12.2", "12.3", "12.4", "13.21", "13.23", "14", "14.1", "14.2",
        "14.5", "14.6", "15", "15.1", "15.2", "15.3", "15.4", "15.4.1", "15.4.2", "15.4.3", "15.4.4", "15.4.5", "15.4.6", "15.4.7",
        "15.4.9",
    ];
    let fillers = match case.mode.layout {
        Layout::Rows8 => g.padded_rows != case.shape.rows || g.kp != case.shape.cols,
        Layout::Fragment16 => g.padded_rows != case.shape.rows || g.k32 != case.shape.cols,
    };
    match case.mode.layout {
        Layout::Rows8 => {
            c.extend(["7", "7.1", "7.2", "7.3"]);
            c.push(if case.mode.elem == ElemType::Bf16 { "7.5" } else { "7.6" });
            if fillers {
                c.push("7.4");
            }
        }
        Layout::Fragment16 => {
            c.extend(["8", "8.1", "8.2", "8.3", "8.7", "9.6"]);
            c.push(if case.mode.elem == ElemType::Bf16 { "8.5" } else { "8.6" });
            if fillers {
                c.push("8.4");
            }
        }
    }
    if fillers {
        c.push("6.3");
    }
    match &case.input {
        Input::Bf16(_) => c.extend(["4.1", "4.2"]),
        Input::Fp8(bytes) => {
            c.extend(["4.4", "4.5", "4.7", "4.8", "4.9"]);
            // Subnormals and signed zeros take the special symbols 8 and 9 (spec 4.5).
            if bytes.iter().any(|&b| fp8_split(b).symbol >= 8) {
                c.push("4.5");
            }
        }
    }
    if case.scale.is_some() {
        c.extend(["11", "11.1", "11.4", "11.5"]);
    }
    if enc.escapes > 0 {
        c.push("6.2");
        if fillers {
            c.push("6.7"); // escapes, ranks and fillers in one lane, as the example shows
        }
    }
    let gap = (1..enc.matrix.bases.len()).any(|b| {
        let end: u64 =
            u64::from(enc.matrix.bases[b - 1]) + 4 * enc.matrix.hdr[32 * (b - 1)..32 * b].iter().map(|&h| u64::from(h)).sum::<u64>();
        u64::from(enc.matrix.bases[b]) != end
    });
    if gap {
        c.push("9.8");
    }
    if (case.mode, case.shape) == (Mode::BF16_L0, Shape::new(13, 40))
        || (case.mode, case.shape) == (Mode::BF16_L1, Shape::new(3, 4097))
        || (case.mode, case.shape) == (Mode::FP8_L1, Shape::new(1, 1))
    {
        c.push("3.7");
    }
    if case.mode == Mode::BF16_L1 && case.shape == Shape::new(3, 4097) {
        c.push("8.8");
    }
    c.extend(case.extra_clauses.iter().copied());
    c
}
