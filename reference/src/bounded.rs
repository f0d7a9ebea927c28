//! Spec 19: the bounded (tensor-core) matvec class. [`bound`] computes B of spec 19.3 for one
//! output, [`check_f32`] and [`check_bf16`] decide spec 19.4, and [`expected`] with
//! [`check_outputs`] do it for a whole matvec as spec 19.6 describes (the canonical result comes
//! from this crate's spec 15 matvec). The conformance corpus stores B per output (the `bound`
//! file of a matvec case), and the GPU runs check their tensor-core kernels with these functions.

/// Spec 19.3: g(j, u) = j·u / (1 − j·u).
fn g(j: f64, u: f64) -> f64 {
    j * u / (1.0 - j * u)
}

const U_IMPL: f64 = 1.0 / (1u64 << 22) as f64; // 2^-22
const U_CANON: f64 = 1.0 / (1u64 << 24) as f64; // 2^-24
const TWO_M123: f64 = 9.403_954_806_578_3e-38; // 2^-123
/// 2^128 (1 − 2^-25): f32 values at or above this round to infinity (spec 19.2).
const F32_OVERFLOW: f64 = 3.4028235677973366e38;

/// Spec 19.3/19.2: the bound B for one output from its K weights (f32, FP8 unscaled), its K
/// activations, the row's FP8 scale (None for BF16) and its bias (None: 0). None when the output
/// lies outside the domain of 19.2 (K > 2^21 − 1, a non-finite input, or possible overflow).
/// Evaluated in f64 and enlarged by (K + 16)·2^-52, more than the f64 rounding of the sums.
pub fn bound(weights: &[f32], x: &[f32], scale: Option<f32>, bias: Option<f32>) -> Option<f64> {
    assert_eq!(weights.len(), x.len(), "one activation per weight");
    let k = weights.len() as f64;
    if (k + 1.0) * U_IMPL > 0.5 {
        return None;
    }
    let s = f64::from(scale.unwrap_or(1.0));
    let b = f64::from(bias.unwrap_or(0.0));
    if !s.is_finite() || !b.is_finite() || weights.iter().chain(x).any(|v| !v.is_finite()) {
        return None;
    }
    // |w·x| is exact in f64 (at most 8 + 24 significant bits); the sum rounds at most K times.
    let sum_abs: f64 = weights.iter().zip(x).map(|(&w, &v)| (f64::from(w) * f64::from(v)).abs()).sum();
    let a = s.abs() * sum_abs + b.abs();
    let a_wide = s.abs().max(1.0) * sum_abs + b.abs();
    if (1.0 + g(k + 1.0, U_IMPL)) * a_wide >= F32_OVERFLOW {
        return None;
    }
    let eps = g(k + 1.0, U_IMPL) + g(k + 1.0, U_CANON);
    let eta = (k + 1.0) * TWO_M123 * s.abs().max(1.0);
    Some((eps * a + eta) * (1.0 + (k + 16.0) * f64::EPSILON))
}

/// Spec 19.4, f32 output: |y − y_c| ≤ B.
pub fn check_f32(y: f32, y_c: f32, b: f64) -> bool {
    y.is_finite() && y_c.is_finite() && (f64::from(y) - f64::from(y_c)).abs() <= b
}

/// BF16 words in order of value: -0 and +0 map to 0, negatives below.
fn ordered(word: u16) -> i32 {
    let mag = i32::from(word & 0x7FFF);
    if word & 0x8000 != 0 {
        -mag
    } else {
        mag
    }
}

fn unordered(o: i32) -> u16 {
    if o < 0 {
        0x8000 | (-o) as u16
    } else {
        o as u16
    }
}

fn bf16_value(word: u16) -> f64 {
    f64::from(f32::from_bits(u32::from(word) << 16))
}

/// Spec 19.4/19.6, BF16 output: `word` is the RNE rounding of some real within B of y_c, i.e. the
/// interval of reals that round to `word` (bounded by the midpoints to its neighbours; closed
/// when its last mantissa bit is 0, since ties go to even) meets [y_c − B, y_c + B]. An infinite
/// word is the rounding of every real from 2^128 − 2^119 on (the midpoint past the largest finite
/// BF16; the tie goes to the even infinity), so it passes when y_c + B reaches that far (f32
/// results close to the f32 maximum may round to an infinite BF16, canonical ones too). NaN
/// words and a non-finite y_c never pass (the domain excludes them).
pub fn check_bf16(word: u16, y_c: f32, b: f64) -> bool {
    let v = bf16_value(word);
    if v.is_nan() || !y_c.is_finite() {
        return false;
    }
    if v.is_infinite() {
        let threshold = 2f64.powi(128) - 2f64.powi(119);
        return if v > 0.0 { f64::from(y_c) + b >= threshold } else { f64::from(y_c) - b <= -threshold };
    }
    let o = ordered(word);
    // Past the largest finite BF16 the neighbour is ±2^128 (where rounding overflows).
    let neighbour = |o: i32, sign: f64| {
        let n = bf16_value(unordered(o));
        if n.is_finite() {
            n
        } else {
            sign * 2f64.powi(128)
        }
    };
    let lower = (neighbour(o - 1, -1.0) + v) / 2.0;
    let upper = (neighbour(o + 1, 1.0) + v) / 2.0;
    let closed = word & 1 == 0;
    let (lo_ok, hi_ok) = if closed {
        (lower <= f64::from(y_c) + b, upper >= f64::from(y_c) - b)
    } else {
        (lower < f64::from(y_c) + b, upper > f64::from(y_c) - b)
    };
    lo_ok && hi_ok
}

/// What [`check_matvec`] saw: outputs checked against B, outputs outside the domain of spec 19.2
/// (not checked), and checked outputs whose bits differ from the canonical ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Checked {
    pub within: u64,
    pub outside_domain: u64,
    pub differ: u64,
}

/// The canonical output (spec 15.4, from the reference) and its bound B (spec 19.3) for every
/// output of a matvec of `dec` (scale and weights from the decoded matrix) on `batch` columns of K
/// activations `x` (BF16 values widened to f32), batch x M entries in output order; None where the
/// output lies outside the domain of spec 19.2.
pub fn expected(dec: &crate::DecodedMatrix, x: &[f32], batch: usize, bias: Option<&[f32]>) -> Result<Vec<(f32, Option<f64>)>, String> {
    let (m, k) = (dec.shape.rows as usize, dec.shape.cols as usize);
    if x.len() != batch * k {
        return Err(format!("{} activations for {batch} x {k}", x.len()));
    }
    let y_c = dec.matvec(x, batch, bias).map_err(|e| e.to_string())?;
    let mut out: Vec<(f32, Option<f64>)> = y_c.iter().map(|&y| (y, None)).collect();
    let mut w = vec![0f32; k];
    for row in 0..m {
        for (col, v) in w.iter_mut().enumerate() {
            *v = f32::from_bits(u32::from(dec.bf16_word(row as u64, col as u64)) << 16);
        }
        let s = dec.scale.as_ref().map(|v| v[row]);
        let b = bias.map(|v| v[row]);
        for n in 0..batch {
            out[n * m + row].1 = bound(&w, &x[n * k..][..k], s, b);
        }
    }
    Ok(out)
}

/// Spec 19.4/19.6 on outputs `got` (f32 bits when `bf16_out` is false, else BF16 words) against
/// [`expected`]'s list. Err names the first output that breaks spec 19.4, with its bound.
pub fn check_outputs(expected: &[(f32, Option<f64>)], got: &[u32], bf16_out: bool) -> Result<Checked, String> {
    if got.len() != expected.len() {
        return Err(format!("{} outputs, expected {}", got.len(), expected.len()));
    }
    let mut seen = Checked::default();
    for (i, (&(yc, b), &g)) in expected.iter().zip(got).enumerate() {
        let Some(bound) = b else {
            seen.outside_domain += 1;
            continue;
        };
        let ok = if bf16_out { check_bf16(g as u16, yc, bound) } else { check_f32(f32::from_bits(g), yc, bound) };
        if !ok {
            let shown = if bf16_out { f32::from_bits(g << 16) } else { f32::from_bits(g) };
            return Err(format!("output {i}: got {shown:e}, canonical {yc:e}, bound {bound:e} (spec 19.4)"));
        }
        seen.within += 1;
        let canonical_bits = if bf16_out { u32::from(half::bf16::from_f32(yc).to_bits()) } else { yc.to_bits() };
        seen.differ += u64::from(g != canonical_bits);
    }
    Ok(seen)
}

/// [`expected`] then [`check_outputs`]: spec 19.6 for a whole matvec (output i = column i / M,
/// row i % M).
pub fn check_matvec(
    dec: &crate::DecodedMatrix,
    x: &[f32],
    batch: usize,
    bias: Option<&[f32]>,
    got: &[u32],
    bf16_out: bool,
) -> Result<Checked, String> {
    check_outputs(&expected(dec, x, batch, bias)?, got, bf16_out)
}
