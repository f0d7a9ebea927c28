//! Spec 19 (bounded matvec class) without a device: results computed in other orders than the
//! canonical one (reversed, pairwise, grouped with aligned truncation like a matrix unit) must lie
//! within the bound B of the reference's canonical result, some of them must differ from it (so
//! the test can see a reordering), and a result just past B must fail. It exercises spec 19.1
//! (what the bounded class allows), spec 19.3 (the bound B, computed by `bound`) and spec 19.4
//! (the requirement, decided by `check_f32`/`check_bf16`), checking outputs as spec 19.6 prescribes.

use nwc_reference::bounded::{bound, check_bf16, check_f32};
use nwc_reference::{decode, encode, quantize_fp8, Mode, Shape, Weights};

/// Deterministic xorshift in [0, 1).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    /// A BF16 word with a random sign, mantissa and an exponent spread over `spread` binades.
    fn bf16(&mut self, scale: f64, spread: f64) -> u16 {
        let v = (self.next() - 0.5) * scale * 2f64.powf((self.next() - 0.5) * spread);
        half::bf16::from_f64(v).to_bits()
    }
}

fn widen(w: u16) -> f32 {
    f32::from_bits(u32::from(w) << 16)
}

/// f64 value truncated (toward zero) to f32.
fn trunc_f32(r: f64) -> f32 {
    let f = r as f32;
    if f64::from(f).abs() > r.abs() {
        f32::from_bits(f.to_bits() - 1)
    } else {
        f
    }
}

/// The accumulation orders a bounded implementation might use, all ending like spec 15.4.6.
#[derive(Clone, Copy, Debug)]
enum Order {
    Reversed,
    Pairwise,
    /// Groups of 16 products added to the accumulator in one step after aligning every operand
    /// to the largest exponent and truncating it to 24 bits, result truncated (spec 19.5 (b)).
    Mma16,
}

fn sum_in(order: Order, p: &[f32]) -> f32 {
    match order {
        Order::Reversed => p.iter().rev().fold(0.0f32, |a, &v| a + v),
        Order::Pairwise => {
            let mut v = p.to_vec();
            while v.len() > 1 {
                v = v.chunks(2).map(|c| if c.len() == 2 { c[0] + c[1] } else { c[0] }).collect();
            }
            v.first().copied().unwrap_or(0.0)
        }
        Order::Mma16 => {
            let mut acc = 0.0f32;
            for group in p.chunks(16) {
                let ops: Vec<f64> = std::iter::once(f64::from(acc)).chain(group.iter().map(|&v| f64::from(v))).collect();
                // Binary exponent from the bits (the values are normal f64 numbers).
                let e_max = ops.iter().filter(|v| **v != 0.0).map(|v| ((v.to_bits() >> 52) & 0x7FF) as i32 - 1023).max();
                acc = match e_max {
                    None => 0.0,
                    Some(e) => {
                        let q = 2f64.powi(e - 23);
                        trunc_f32(ops.iter().map(|v| (v / q).trunc() * q).sum())
                    }
                };
            }
            acc
        }
    }
}

struct Case {
    k: usize,
    fp8: bool,
}

/// Runs every order on one random matrix and returns (outputs checked, outputs differing from
/// the canonical f32 result); panics on a bound violation.
fn run(case: &Case, seed: u64) -> (usize, usize) {
    let (m, k) = (16usize, case.k);
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let words: Vec<u16> = (0..m * k).map(|_| rng.bf16(0.05, 6.0)).collect();
    let shape = Shape::new(m as u64, k as u64);
    let enc = if case.fp8 {
        let (q, scales) = quantize_fp8(&words, shape).unwrap();
        let mut e = encode(Mode::FP8_L0, shape, Weights::Fp8(&q)).unwrap().matrix;
        e.scale = Some(scales);
        e
    } else {
        encode(Mode::BF16_L0, shape, Weights::Bf16(&words)).unwrap().matrix
    };
    let dec = decode(&enc).unwrap();
    let k16 = dec.row_stride() as usize;
    let deq = dec.dequant();
    // BF16 activations (spec 19.2), with a wide exponent range so that sums cancel.
    let x: Vec<f32> = (0..k).map(|_| widen(rng.bf16(4.0, 12.0))).collect();
    let bias: Vec<f32> = (0..m).map(|_| widen(rng.bf16(0.5, 4.0))).collect();
    let y_c = dec.matvec(&x, 1, Some(&bias)).unwrap();
    let y_c16 = dec.matvec_bf16(&x, 1, Some(&bias)).unwrap();
    let (mut checked, mut differ) = (0, 0);
    for row in 0..m {
        let w: Vec<f32> = deq[row * k16..][..k].iter().map(|&v| widen(v)).collect();
        let s = enc.scale.as_ref().map(|v| v[row]);
        let b = bound(&w, &x, s, Some(bias[row])).expect("inside the domain of spec 19.2");
        // Products are exact in f32 (at most 16 significant bits).
        let p: Vec<f32> = w.iter().zip(&x).map(|(&a, &c)| a * c).collect();
        for order in [Order::Reversed, Order::Pairwise, Order::Mma16] {
            let mut t = sum_in(order, &p);
            if let Some(s) = s {
                t *= s;
            }
            let y = t + bias[row];
            assert!(check_f32(y, y_c[row], b), "{order:?} K={k} fp8={} row {row}: |{y} - {}| > {b:e}", case.fp8, y_c[row]);
            let y16 = half::bf16::from_f32(y).to_bits();
            assert!(check_bf16(y16, y_c[row], b), "{order:?} K={k} row {row}: BF16 {y16:#06x} outside the bound");
            checked += 1;
            differ += usize::from(y.to_bits() != y_c[row].to_bits());
        }
        // The canonical result itself passes, and one just past the bound fails.
        assert!(check_f32(y_c[row], y_c[row], b) && check_bf16(y_c16[row], y_c[row], b));
        let far = (f64::from(y_c[row]) + 1.5 * b + f64::from(y_c[row]).abs() * 2f64.powi(-22)) as f32;
        assert!(!check_f32(far, y_c[row], b), "a result past B passed (K={k}, row {row})");
        let far_word = half::bf16::from_f32(y_c[row] + (4.0 * b as f32).max(y_c[row].abs() * 0.02)).to_bits();
        assert!(!check_bf16(far_word, y_c[row], b), "a BF16 word past B passed (K={k}, row {row})");
    }
    (checked, differ)
}

#[test]
fn other_orders_stay_within_the_spec_19_bound() {
    let (mut checked, mut differ) = (0, 0);
    for (i, case) in [
        Case { k: 1, fp8: false },
        Case { k: 37, fp8: false },
        Case { k: 600, fp8: false },
        Case { k: 4096, fp8: false },
        Case { k: 3000, fp8: true },
        Case { k: 4096, fp8: true },
    ]
    .iter()
    .enumerate()
    {
        for seed in 0..4 {
            let (c, d) = run(case, 100 * i as u64 + seed);
            checked += c;
            differ += d;
        }
    }
    println!("{checked} outputs checked, {differ} differ from the canonical result");
    assert!(differ > checked / 10, "too few reordered results differ ({differ} of {checked}): the test would not notice a broken bound");
}

#[test]
fn outputs_outside_the_domain_get_no_bound() {
    let big = vec![0.0f32; 1 << 21];
    assert!(bound(&big, &big, None, None).is_none(), "K = 2^21 is outside spec 19.2");
    assert!(bound(&big[1..], &big[1..], None, None).is_some(), "K = 2^21 - 1 is inside spec 19.2");
    assert!(bound(&[1.0], &[f32::INFINITY], None, None).is_none());
    assert!(bound(&[1.0], &[1.0], Some(f32::NAN), None).is_none());
    assert!(bound(&[3.0e38], &[2.0], None, None).is_none(), "possible overflow");
    let b = bound(&[1.0, 2.0], &[0.5, 0.25], None, Some(1.0)).unwrap();
    assert!(b > 0.0 && b < 1e-5);
    assert!(!check_bf16(0x7F80, 1.0, 1.0) && !check_bf16(0x7FC0, 1.0, 1.0), "infinite and NaN words never pass");
}

/// Spec 19.6 over a whole matvec (`expected` + `check_outputs`, what the GPU conformance run and
/// the bench use): the canonical outputs pass with no difference counted, a result computed in
/// the emulated matrix-unit order passes, and one output pushed past its bound is named.
#[test]
fn whole_matvec_check_accepts_reorderings_and_names_a_violation() {
    use nwc_reference::bounded::{check_outputs, expected};
    let (m, k, batch) = (5usize, 300usize, 3usize);
    let mut rng = Rng(77);
    let words: Vec<u16> = (0..m * k).map(|_| rng.bf16(0.05, 6.0)).collect();
    let enc = encode(Mode::BF16_L1, Shape::new(m as u64, k as u64), Weights::Bf16(&words)).unwrap().matrix;
    let dec = decode(&enc).unwrap();
    let x: Vec<f32> = (0..batch * k).map(|_| widen(rng.bf16(4.0, 12.0))).collect();
    let exp = expected(&dec, &x, batch, None).unwrap();
    let canonical: Vec<u32> = exp.iter().map(|&(y, _)| y.to_bits()).collect();
    let seen = check_outputs(&exp, &canonical, false).unwrap();
    assert_eq!((seen.within, seen.outside_domain, seen.differ), ((m * batch) as u64, 0, 0));
    // The matrix-unit order, column by column (output index = column * M + row).
    let mut mma = Vec::new();
    for n in 0..batch {
        for row in 0..m {
            let p: Vec<f32> = (0..k).map(|c| widen(words[row * k + c]) * x[n * k + c]).collect();
            mma.push(sum_in(Order::Mma16, &p).to_bits());
        }
    }
    let seen = check_outputs(&exp, &mma, false).unwrap();
    assert_eq!(seen.within, (m * batch) as u64);
    let words16: Vec<u32> = mma.iter().map(|&b| u32::from(half::bf16::from_f32(f32::from_bits(b)).to_bits())).collect();
    check_outputs(&exp, &words16, true).unwrap();
    let mut bad = canonical.clone();
    let (y, b) = (exp[7].0, exp[7].1.unwrap());
    bad[7] = ((f64::from(y) + 2.0 * b + f64::from(y).abs() * 1e-6) as f32).to_bits();
    let err = check_outputs(&exp, &bad, false).unwrap_err();
    assert!(err.starts_with("output 7:") && err.contains("spec 19.4"), "{err}");
}

/// Spec 19.6 near the top of the range: a result whose BF16 rounding overflows. The RNE rounding
/// of every real from 2^128 - 2^119 on is +inf, so +inf passes when y_c + B reaches that far (the
/// GPU sweep met this: canonical 3.3971407e38 rounds to +inf in BF16 too), and fails otherwise.
#[test]
fn an_infinite_bf16_word_passes_only_where_rounding_overflows() {
    let (y_c, b) = (3.397_140_7e38_f32, 1.7e33);
    assert!(check_bf16(0x7F80, y_c, b));
    assert!(!check_bf16(0x7F7F, y_c, b), "the largest finite BF16 is further than B from y_c");
    assert!(!check_bf16(0x7F80, 3.0e38, b));
    assert!(check_bf16(0xFF80, -y_c, b) && !check_bf16(0xFF80, y_c, b));
    assert!(!check_bf16(0x7FC0, y_c, b), "NaN never passes");
}
