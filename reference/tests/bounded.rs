//! Properties of spec 19 (`nwc_reference::bounded`): the BF16 check accepts the RNE rounding of
//! every f32 within the bound (spec 19.4, 19.6), the f32 check is exactly `|y - y_c| <= B`, and
//! the canonical result itself lies within B of the exact real result (the half of spec 19.5's
//! proof that concerns the canonical order), for random BF16 matrices and activations.

use nwc_reference::bounded::{bound, check_bf16, check_f32};
use nwc_reference::{decode, encode, Mode, Shape, Weights};
use proptest::prelude::*;

fn bf16_rne(v: f32) -> u16 {
    half::bf16::from_f32(v).to_bits()
}

fn widen(w: u16) -> f32 {
    f32::from_bits(u32::from(w) << 16)
}

/// A finite f32 from raw bits (exponent field below 255).
fn finite(bits: u32) -> f32 {
    f32::from_bits(bits & 0xFF7F_FFFF)
}

proptest! {
    #[test]
    fn bf16_check_accepts_the_rounding_of_every_value_within_the_bound(
        yc_bits in any::<u32>(), rel in 0u32..40, t in -1.0f64..1.0,
    ) {
        let y_c = finite(yc_bits);
        let b = f64::from(y_c).abs() * 2f64.powi(-(rel as i32)) + 1e-40;
        let y = (f64::from(y_c) + t * b) as f32;
        prop_assume!(y.is_finite() && (f64::from(y) - f64::from(y_c)).abs() <= b);
        prop_assert!(check_f32(y, y_c, b));
        prop_assert!(check_bf16(bf16_rne(y), y_c, b), "y {y:e} y_c {y_c:e} b {b:e} word {:#06x}", bf16_rne(y));
    }

    #[test]
    fn f32_check_is_the_distance(yc_bits in any::<u32>(), y_bits in any::<u32>(), b in 0.0f64..1e30) {
        let (y_c, y) = (finite(yc_bits), finite(y_bits));
        prop_assert_eq!(check_f32(y, y_c, b), (f64::from(y) - f64::from(y_c)).abs() <= b);
    }

    #[test]
    fn the_canonical_result_is_within_the_bound_of_the_exact_one(
        rows in 1u64..20, cols in 1u64..700, seed in any::<u64>(), layout1 in any::<bool>(),
    ) {
        let mut s = seed | 1;
        let mut next = move || { s ^= s << 13; s ^= s >> 7; s ^= s << 17; s };
        // BF16 weights and activations with random signs over several binades (cancellation).
        let mut word = |scale: i32| {
            let r = next();
            let v = (((r >> 11) as f64 / (1u64 << 53) as f64) - 0.5) * 2f64.powi(scale + (r % 13) as i32 - 6);
            half::bf16::from_f64(v).to_bits()
        };
        let shape = Shape::new(rows, cols);
        let w: Vec<u16> = (0..rows * cols).map(|_| word(-4)).collect();
        let x: Vec<f32> = (0..cols).map(|_| widen(word(2))).collect();
        let bias: Vec<f32> = (0..rows).map(|_| widen(word(0))).collect();
        let mode = if layout1 { Mode::BF16_L1 } else { Mode::BF16_L0 };
        let dec = decode(&encode(mode, shape, Weights::Bf16(&w)).unwrap().matrix).unwrap();
        let y = dec.matvec(&x, 1, Some(&bias)).unwrap();
        for r in 0..rows as usize {
            let wr: Vec<f32> = w[r * cols as usize..][..cols as usize].iter().map(|&v| widen(v)).collect();
            // Products of two BF16 values are exact in f64; the f64 sum errs by at most
            // (K + 1) 2^-53 (sum |p| + |bias|), added to the tolerance (about 2^-30 of B).
            let terms: Vec<f64> = wr.iter().zip(&x).map(|(&a, &b)| f64::from(a) * f64::from(b)).collect();
            let exact = terms.iter().sum::<f64>() + f64::from(bias[r]);
            let abs_sum = terms.iter().map(|t| t.abs()).sum::<f64>() + f64::from(bias[r]).abs();
            let slack = (cols as f64 + 1.0) * f64::EPSILON * abs_sum;
            let b = bound(&wr, &x, None, Some(bias[r])).expect("in the domain");
            prop_assert!((f64::from(y[r]) - exact).abs() <= b + slack, "row {r}: canonical {:e}, exact {exact:e}, B {b:e}", y[r]);
        }
    }
}
