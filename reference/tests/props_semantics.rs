//! Property tests of the semantics of spec 15 in the reference codec (dequant, gather, matvec),
//! checked against expectations computed here from the input, not from the codec. Shapes and
//! inputs as in `props.rs` (`props_input`).

use nwc_reference::{decode, DecodedMatrix, ElemType, Layout, Mode, Shape};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

mod props_input;
use props_input::*;

/// Picks up to `count` distinct indices below `n`, always including the first and the last.
fn some_indices(rng: &mut ChaCha8Rng, n: u64, count: usize) -> Vec<u64> {
    let mut v = vec![0, n - 1];
    v.extend((0..count).map(|_| rng.gen_range(0..n)));
    v.sort_unstable();
    v.dedup();
    v
}

fn decoded_with_scales(mode: Mode, shape: Shape, input: &Input, rng: &mut ChaCha8Rng) -> DecodedMatrix {
    let mut d = decode(&encoded(mode, shape, input)).unwrap();
    if mode.elem == ElemType::Fp8E4m3 {
        // Positive finite scales over a wide range (rule 13.19), some of them inexact products.
        d.scale = Some((0..shape.rows).map(|_| rng.gen_range(0.5f32..2.0) * 2f32.powi(rng.gen_range(-30..=10))).collect());
    }
    d
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Spec 15.3: gather returns the requested rows of dequant, in order, repeats included.
    #[test]
    fn gather_matches_dequant(shape in shape_strategy(), mode in mode_strategy(), seed: u64, kind in kind_strategy()) {
        let input = make_input(mode, shape, seed, kind, false);
        let d = decode(&encoded(mode, shape, &input)).unwrap();
        let stride = d.row_stride() as usize;
        let full = d.dequant();
        prop_assert_eq!(full.len(), shape.rows as usize * stride);
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x6A7);
        let rows: Vec<u64> = (0..rng.gen_range(0..12)).map(|_| rng.gen_range(0..shape.rows)).collect();
        let got = d.gather(&rows).unwrap();
        prop_assert_eq!(got.len(), rows.len() * stride);
        for (i, &r) in rows.iter().enumerate() {
            let r = r as usize;
            prop_assert_eq!(&got[i * stride..(i + 1) * stride], &full[r * stride..(r + 1) * stride]);
        }
        prop_assert!(d.gather(&[shape.rows]).is_err());
    }

    /// Spec 15.4: with the activation e_k every lane partial except one is +0, so output m is
    /// column k of the matrix: fl(0 + w) (only -0 turns into +0), times the FP8 scale, plus
    /// the bias as a separate add.
    #[test]
    fn one_hot_matvec_picks_a_column(shape in shape_strategy(), mode in mode_strategy(), seed: u64, kind in kind_strategy(), with_bias: bool) {
        let input = make_input(mode, shape, seed, kind, true);
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x1407);
        let d = decoded_with_scales(mode, shape, &input, &mut rng);
        let (m, k) = (shape.rows as usize, shape.cols as usize);
        let columns = some_indices(&mut rng, shape.cols, 6);
        let mut x = vec![0.0f32; columns.len() * k];
        for (n, &c) in columns.iter().enumerate() {
            x[n * k + c as usize] = 1.0;
        }
        let bias: Option<Vec<f32>> = with_bias.then(|| activations(&mut rng, m));
        let got = d.matvec(&x, columns.len(), bias.as_deref()).unwrap();
        let mut want = Vec::with_capacity(columns.len() * m);
        for &c in &columns {
            for row in 0..m {
                let mut t = 0.0f32 + input.value(row * k + c as usize);
                if let Some(s) = &d.scale {
                    t *= s[row];
                }
                if let Some(b) = &bias {
                    t += b[row];
                }
                want.push(t);
            }
        }
        assert_same_f32s(&got, &want, "one-hot")?;
    }

    /// Spec 15.4.7: a batch is its columns computed one at a time; spec 15.4.6: the BF16 output is
    /// the f32 output rounded to nearest even.
    #[test]
    fn batch_and_bf16_output(shape in shape_strategy(), mode in mode_strategy(), seed: u64, kind in kind_strategy(), batch in 1..4usize, with_bias: bool) {
        let input = make_input(mode, shape, seed, kind, false);
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xBA7C);
        let d = decoded_with_scales(mode, shape, &input, &mut rng);
        let (m, k) = (shape.rows as usize, shape.cols as usize);
        let x = activations(&mut rng, batch * k);
        let bias: Option<Vec<f32>> = with_bias.then(|| activations(&mut rng, m));
        let all = d.matvec(&x, batch, bias.as_deref()).unwrap();
        let one_by_one: Vec<f32> = x.chunks(k).flat_map(|xs| d.matvec(xs, 1, bias.as_deref()).unwrap()).collect();
        assert_same_f32s(&all, &one_by_one, "batch")?;
        let rounded = d.matvec_bf16(&x, batch, bias.as_deref()).unwrap();
        prop_assert_eq!(rounded.len(), all.len());
        for (i, (&r, &f)) in rounded.iter().zip(&all).enumerate() {
            let want = bf16_rne(f);
            let both_nan = f.is_nan() && (r & 0x7F80) == 0x7F80 && (r & 0x7F) != 0;
            prop_assert!(r == want || both_nan, "output {}: bf16 {:#06x}, RNE of {:e} is {:#06x}", i, r, f, want);
        }
    }

    /// The reference matvec against a from-scratch reading of spec 15.4, bit for bit.
    #[test]
    fn matvec_matches_naive_spec_15_4(shape in shape_strategy(), mode in mode_strategy(), seed: u64, kind in kind_strategy(), with_bias: bool, finite: bool) {
        let input = make_input(mode, shape, seed, kind, finite);
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x154);
        let d = decoded_with_scales(mode, shape, &input, &mut rng);
        let x = activations(&mut rng, shape.cols as usize);
        let bias: Option<Vec<f32>> = with_bias.then(|| activations(&mut rng, shape.rows as usize));
        let got = d.matvec(&x, 1, bias.as_deref()).unwrap();
        let want = naive_matvec(mode, shape, &input, &x, d.scale.as_deref(), bias.as_deref());
        assert_same_f32s(&got, &want, "naive 15.4")?;
    }
}

/// Spec 15.4.2-15.4.6 for one activation vector, written from the text with plain loops over
/// rows, column blocks and lanes; it shares no code with the reference's own order.
fn naive_matvec(mode: Mode, shape: Shape, input: &Input, x: &[f32], scale: Option<&[f32]>, bias: Option<&[f32]>) -> Vec<f32> {
    let (m_rows, k_cols) = (shape.rows as usize, shape.cols as usize);
    let column_blocks = k_cols.div_ceil(512);
    let super_chunks = k_cols.div_ceil(32);
    let w = |m: usize, k: usize| input.value(m * k_cols + k);
    let mut y = Vec::with_capacity(m_rows);
    for m in 0..m_rows {
        let mut s = 0.0f32; // 15.4.5: S starts at +0
        for cb in 0..column_blocks {
            let block_partial = match mode.layout {
                Layout::Rows8 => {
                    // 15.4.3 layout 0: lane L holds columns 512cb + 16L + j, j = 0..15.
                    let mut v = [0.0f32; 32];
                    for (lane, partial) in v.iter_mut().enumerate() {
                        let mut a = 0.0f32;
                        for j in 0..16 {
                            let k = 512 * cb + 16 * lane + j;
                            if k < k_cols {
                                a = w(m, k).mul_add(x[k], a);
                            }
                        }
                        *partial = a;
                    }
                    // 15.4.4: steps 16, 8, 4, 2, 1.
                    for step in [16, 8, 4, 2, 1] {
                        for i in 0..step {
                            v[i] += v[i + step];
                        }
                    }
                    v[0]
                }
                Layout::Fragment16 => {
                    // 15.4.3 layout 1: lane 4 r8 + q of the row's r8 holds columns 32s + 8q + j of
                    // the block's super-chunks s ascending, j = 0..7.
                    let mut v = [0.0f32; 4];
                    let last_chunk = (16 * cb + 16).min(super_chunks);
                    for (q, partial) in v.iter_mut().enumerate() {
                        let mut a = 0.0f32;
                        for chunk in 16 * cb..last_chunk {
                            for j in 0..8 {
                                let k = 32 * chunk + 8 * q + j;
                                if k < k_cols {
                                    a = w(m, k).mul_add(x[k], a);
                                }
                            }
                        }
                        *partial = a;
                    }
                    // 15.4.4: steps 2, 1.
                    for step in [2, 1] {
                        for i in 0..step {
                            v[i] += v[i + step];
                        }
                    }
                    v[0]
                }
            };
            s += block_partial;
        }
        // 15.4.6: one multiply by the scale, then one separate add of the bias.
        let mut t = s;
        if let Some(sc) = scale {
            t *= sc[m];
        }
        if let Some(b) = bias {
            t += b[m];
        }
        y.push(t);
    }
    y
}

/// The naive matvec must itself be able to tell orders apart: on the example of spec 15.4.8 it
/// gives 0, not the real-number result 1.
#[test]
fn naive_matvec_reproduces_the_spec_example() {
    let w = [1.0f32, 2.0, -0.5].map(|v| half::bf16::from_f32(v).to_bits());
    let input = Input::Bf16(w.to_vec());
    let x = [2f32.powi(24), 0.5, 2f32.powi(25)];
    for mode in [Mode::BF16_L0, Mode::BF16_L1] {
        assert_eq!(naive_matvec(mode, Shape::new(1, 3), &input, &x, None, None), vec![0.0]);
        assert_eq!(naive_matvec(mode, Shape::new(1, 3), &input, &x, None, Some(&[0.25])), vec![0.25]);
        let d = decode(&encoded(mode, Shape::new(1, 3), &input)).unwrap();
        assert_eq!(d.matvec(&x, 1, None).unwrap(), vec![0.0]);
    }
    let fp8 = Input::Fp8(vec![0x38, 0x40, 0xB0]);
    let y = naive_matvec(Mode::FP8_L0, Shape::new(1, 3), &fp8, &[3.0, 0.75, 8.0], Some(&[0.25]), Some(&[1.0]));
    assert_eq!(bf16_rne(y[0]), 0x3F90);
}

/// The test's own RNE agrees with the usual conversion on awkward values (so the BF16-output
/// property compares against a correct rounding).
#[test]
fn bf16_rne_rounds_ties_to_even() {
    for bits in [0x3F80_8000u32, 0x3F81_8000, 0x3F80_7FFF, 0x7F7F_FFFF, 0xFF7F_8000, 0x0000_8000, 0x8001_8000, 0x7F80_0000] {
        let v = f32::from_bits(bits);
        assert_eq!(bf16_rne(v), half::bf16::from_f32(v).to_bits(), "{bits:#010x}");
    }
}
