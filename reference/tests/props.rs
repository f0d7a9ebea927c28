//! Property tests of the reference codec: round trip, determinism, validity of its own output,
//! robustness against single-byte corruption, and the semantics of spec 15 (dequant, gather,
//! matvec) checked against expectations computed here from the input, not from the codec.
//!
//! Shapes go up to 100 x 1100 so that several column blocks (512 columns), layout-1 super-chunks
//! (32 columns) and ragged edges occur. Each case draws its weights from a seed, so a failure
//! report (shape, mode, seed, kind) reproduces it exactly.

use nwc_reference::{
    decode, encode, validate, DecodeError, DecodedMatrix, ElemType, Elements, EncodedMatrix, Layout, Mode, Shape, Weights,
};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

const MAX_ROWS: u64 = 100;
const MAX_COLS: u64 = 1100;

/// The weights of one test matrix, row-major.
#[derive(Clone, Debug, PartialEq)]
enum Input {
    Bf16(Vec<u16>),
    Fp8(Vec<u8>),
}

impl Input {
    fn weights(&self) -> Weights<'_> {
        match self {
            Input::Bf16(w) => Weights::Bf16(w),
            Input::Fp8(b) => Weights::Fp8(b),
        }
    }

    fn as_elements(&self) -> Elements {
        match self {
            Input::Bf16(w) => Elements::Bf16(w.clone()),
            Input::Fp8(b) => Elements::Fp8(b.clone()),
        }
    }

    /// The weight at index i as f32, computed here without the codec (spec 15.4.2).
    fn value(&self, i: usize) -> f32 {
        match self {
            Input::Bf16(w) => f32::from_bits(u32::from(w[i]) << 16),
            Input::Fp8(b) => fp8_value(b[i]),
        }
    }
}

/// e4m3fn byte to f32, straight from the definition: exponent bias 7, subnormals 2^-6 * m/8.
fn fp8_value(byte: u8) -> f32 {
    let sign = if byte & 0x80 != 0 { -1.0f32 } else { 1.0 };
    let e = i32::from((byte >> 3) & 0xF);
    let m = f32::from(byte & 7);
    let magnitude = if e == 0 { m * 2f32.powi(-9) } else { (8.0 + m) * 2f32.powi(e - 10) };
    sign * magnitude
}

/// How a test matrix's values are drawn.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// Uniform bit patterns (BF16: NaN, Inf, subnormals, -0, mostly escapes; FP8: any non-NaN byte).
    AnyBits,
    /// A small palette of exponents with skewed frequencies (ranks, ties), plus a few arbitrary words.
    Palette,
    /// Gaussian values, like trained weights.
    Gaussian,
}

fn kind_strategy() -> impl Strategy<Value = Kind> {
    prop_oneof![Just(Kind::AnyBits), Just(Kind::Palette), Just(Kind::Gaussian)]
}

fn mode_strategy() -> impl Strategy<Value = Mode> {
    (0..4usize).prop_map(|i| Mode::ALL[i])
}

fn shape_strategy() -> impl Strategy<Value = Shape> {
    (1..=MAX_ROWS, 1..=MAX_COLS).prop_map(|(m, k)| Shape::new(m, k))
}

/// Draws the weights. With `finite`, BF16 Inf/NaN patterns are moved to the largest exponent
/// below them, so that sums stay comparable value by value.
fn make_input(mode: Mode, shape: Shape, seed: u64, kind: Kind, finite: bool) -> Input {
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

fn encoded(mode: Mode, shape: Shape, input: &Input) -> EncodedMatrix {
    encode(mode, shape, input.weights()).expect("valid input encodes").matrix
}

/// Activations with magnitudes spread over many binades, so that a wrong summation order
/// changes the rounded result.
fn activations(rng: &mut ChaCha8Rng, n: usize) -> Vec<f32> {
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
fn same_f32(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn assert_same_f32s(got: &[f32], want: &[f32], what: &str) -> Result<(), TestCaseError> {
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
fn bf16_rne(v: f32) -> u16 {
    if v.is_nan() {
        return 0x7FC0;
    }
    let bits = v.to_bits();
    let rounding = 0x7FFF + ((bits >> 16) & 1);
    ((bits + rounding) >> 16) as u16
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// decode(encode(x)) == x, the encoder is deterministic, its output is valid.
    #[test]
    fn round_trip_and_determinism(shape in shape_strategy(), mode in mode_strategy(), seed: u64, kind in kind_strategy()) {
        let input = make_input(mode, shape, seed, kind, false);
        let first = encode(mode, shape, input.weights()).unwrap();
        let second = encode(mode, shape, input.weights()).unwrap();
        prop_assert_eq!(&first, &second);
        prop_assert!(validate(&first.matrix).is_ok(), "{:?}", validate(&first.matrix));
        let decoded = decode(&first.matrix).unwrap();
        prop_assert_eq!(decoded.elements, input.as_elements());
        prop_assert_eq!(&decoded.exp_of_rank[..], &first.exp_of_rank[..15]);
    }
}

/// The byte ranges of `data` a decoder must ignore (spec 9.7): alignment gaps between blocks and
/// everything from the stream end on.
fn unspecified_data_bytes(m: &EncodedMatrix) -> Vec<std::ops::Range<usize>> {
    let mut ranges = Vec::new();
    let mut end = 0usize;
    for (b, &base) in m.bases.iter().enumerate() {
        if base as usize > end {
            ranges.push(end..base as usize);
        }
        end = base as usize + 4 * m.hdr[32 * b..32 * (b + 1)].iter().map(|&w| usize::from(w)).sum::<usize>();
    }
    ranges.push(end..m.data.len());
    ranges
}

/// Which stored field a corruption hits.
#[derive(Clone, Copy, Debug)]
enum Target {
    Bases,
    Hdr,
    Lut,
    Data,
    Low,
}

fn flip(m: &mut EncodedMatrix, target: Target, position: usize, xor: u8) -> usize {
    fn flip_u32s(v: &mut [u32], position: usize, xor: u8) -> usize {
        let at = position % (4 * v.len());
        v[at / 4] ^= u32::from(xor) << (8 * (at % 4));
        at
    }
    fn flip_bytes(v: &mut [u8], position: usize, xor: u8) -> usize {
        let at = position % v.len();
        v[at] ^= xor;
        at
    }
    match target {
        Target::Bases => flip_u32s(&mut m.bases, position, xor),
        Target::Hdr => flip_bytes(&mut m.hdr, position, xor),
        Target::Lut => flip_u32s(&mut m.lut, position, xor),
        Target::Data => flip_bytes(&mut m.data, position, xor),
        Target::Low => flip_bytes(&mut m.low, position, xor),
    }
}

/// What a corrupted matrix may do: be rejected with a format error (never a limit error or a
/// panic), or decode. If it decodes to the original, the flipped byte must be one the spec leaves
/// unspecified (spec 9.7); if it decodes to something else, that byte was specified, and the new
/// matrix must itself survive a canonical round trip.
fn check_corruption(
    original: &EncodedMatrix,
    input: &Input,
    target: Target,
    at: usize,
    corrupt: &EncodedMatrix,
) -> Result<(), TestCaseError> {
    let in_unspecified = match target {
        Target::Data => unspecified_data_bytes(original).iter().any(|r| r.contains(&at)),
        Target::Low => at as u64 >= nwc_reference::Geometry::new(original.mode, original.shape).unwrap().n_low,
        _ => false,
    };
    let result = decode(corrupt);
    if matches!(target, Target::Bases | Target::Hdr) {
        // Spec 9.3 and rules 13.11/13.12 determine every offset and header byte.
        prop_assert!(
            matches!(result, Err(DecodeError::Format(_))),
            "{:?} byte {} flipped, decoder says {:?}",
            target,
            at,
            result.as_ref().map(|_| ())
        );
    }
    match result {
        Err(DecodeError::Format(_)) => {
            prop_assert!(!in_unspecified, "a flip at unspecified {:?} byte {} was rejected", target, at);
        }
        Err(other) => prop_assert!(false, "{:?} flip at {}: not a format error: {}", target, at, other),
        Ok(decoded) => {
            let original_elements = input.as_elements();
            // A table flip in a rank no weight uses changes nothing decoded (spec 14.4: another
            // rank order is valid); any other specified byte must change the weights.
            if decoded.elements == original_elements {
                prop_assert!(
                    in_unspecified || matches!(target, Target::Lut),
                    "{:?} byte {} changed but the decoder ignored it",
                    target,
                    at
                );
            } else {
                prop_assert!(!in_unspecified, "unspecified {:?} byte {} changed the weights", target, at);
                // The decoded matrix is a matrix like any other: it re-encodes and decodes back.
                let bytes = decoded.to_le_bytes();
                let again = nwc_reference::encode_le_bytes(original.mode, original.shape, &bytes).unwrap();
                prop_assert_eq!(decode(&again.matrix).unwrap().elements, decoded.elements.clone());
                // A flip in the raw plane cannot change the ranking (spec 5.1 counts the coded part
                // only), so re-encoding must give back the corrupted fields exactly.
                if matches!(target, Target::Low) {
                    let mut without_slack = corrupt.clone();
                    without_slack.low.truncate(again.matrix.low.len());
                    prop_assert_eq!(&again.matrix, &without_slack);
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// One byte of bases, hdr or lut xored with a random non-zero value.
    #[test]
    fn corrupted_tables(shape in shape_strategy(), mode in mode_strategy(), seed: u64, kind in kind_strategy(),
                        target in prop_oneof![Just(Target::Bases), Just(Target::Hdr), Just(Target::Lut)],
                        position: usize, xor in 1..=255u8) {
        let input = make_input(mode, shape, seed, kind, false);
        let original = encoded(mode, shape, &input);
        let mut corrupt = original.clone();
        let at = flip(&mut corrupt, target, position, xor);
        check_corruption(&original, &input, target, at, &corrupt)?;
    }

    /// One byte of data or low (low optionally with its 512-byte slack) xored with a random
    /// non-zero value; then one byte inside the unspecified bytes, which must not matter.
    #[test]
    fn corrupted_streams(shape in shape_strategy(), mode in mode_strategy(), seed: u64, kind in kind_strategy(),
                         target in prop_oneof![Just(Target::Data), Just(Target::Low)], with_slack: bool,
                         position: usize, xor in 1..=255u8) {
        let input = make_input(mode, shape, seed, kind, false);
        let mut original = encoded(mode, shape, &input);
        if with_slack {
            original.low.extend_from_slice(&[0u8; 512]); // spec 9.6
        }
        let mut corrupt = original.clone();
        let at = flip(&mut corrupt, target, position, xor);
        check_corruption(&original, &input, target, at, &corrupt)?;

        let gaps = unspecified_data_bytes(&original);
        let spare: Vec<usize> = gaps.iter().flat_map(|r| r.clone()).collect();
        let at = spare[position % spare.len()]; // never empty: the 64-byte tail slack
        let mut corrupt = original.clone();
        corrupt.data[at] ^= xor;
        check_corruption(&original, &input, Target::Data, at, &corrupt)?;
    }
}

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
