//! Property tests of the execution layout (spec 20): round trips, transcoding from every
//! format-10 encoding of a matrix, the matvec equal to format-10 layout 0 bit for bit, and the
//! validator's strictness (a set of fields is accepted exactly when it is the encoding of the
//! matrix it decodes to under its own bases, spec 20.11) and total check order (spec 20.10).

use nwc_reference::exec::{
    canonical_base, check_canonical, decode_exec, encode_exec, encode_exec_with_bases, exponent, parse_le_fields, transcode,
    ExecDecodeError, ExecEncodeError, ExecFormatError, ExecMatrix, MAX_BASE,
};
use nwc_reference::{decode, encode, Mode, Shape, Weights};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A test matrix: mostly a narrow band of exponents (like trained weights), with exact zeros,
/// subnormals, specials and far outliers mixed in at a rate that `kind` picks.
fn matrix(shape: Shape, seed: u64, kind: u8) -> Vec<u16> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let centre: u16 = rng.gen_range(100..140);
    (0..shape.weights())
        .map(|_| match (kind, rng.gen_range(0..100)) {
            (0, _) => rng.gen(), // any bits
            (_, 0..=9) => 0,     // zeros (padding in real checkpoints)
            (_, 10..=11) => rng.gen_range(0..0x80u16) | (rng.gen::<u16>() & 0x8000),
            (2, 12..=30) => rng.gen(), // many escapes
            (_, 12) => [0x7F80, 0xFF80, 0x7FC1, 0x8000][rng.gen_range(0..4)],
            _ => {
                let e = centre + rng.gen_range(0..12) - rng.gen_range(0..6);
                (rng.gen::<u16>() & 0x807F) | (e << 7)
            }
        })
        .collect()
}

fn shape_strategy() -> impl Strategy<Value = Shape> {
    (1u64..20, prop_oneof![1u64..40, 500u64..530, 1000u64..1100]).prop_map(|(m, k)| Shape::new(m, k))
}

fn le_fields(m: &ExecMatrix) -> Vec<Vec<u8>> {
    m.to_le_fields().into_iter().map(|(_, b)| b).collect()
}

fn reparse(shape: Shape, f: &[Vec<u8>]) -> Result<ExecMatrix, ExecFormatError> {
    parse_le_fields(shape, &f[0], &f[1], &f[2], &f[3], &f[4])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Spec 20.12.1, 20.13: decode(encode(W)) = W, the encoding is canonical, and the fields
    /// survive the trip through little-endian bytes.
    #[test]
    fn round_trip(shape in shape_strategy(), seed in any::<u64>(), kind in 0u8..3) {
        let w = matrix(shape, seed, kind);
        let m = encode_exec(shape, &w).unwrap();
        prop_assert_eq!(&decode_exec(&m).unwrap().words, &w);
        prop_assert_eq!(check_canonical(&m).unwrap(), None);
        prop_assert_eq!(&reparse(shape, &le_fields(&m)).unwrap(), &m);
        // Spec 20.8: no other base has a fuller window, and no smaller one as full.
        let k = shape.cols as usize;
        for (row, &b) in w.chunks_exact(k).zip(&m.base) {
            let count = |b: u8| row.iter().filter(|&&x| (b..=b + 13).contains(&exponent(x))).count();
            prop_assert!((1..=MAX_BASE).all(|o| count(o) < count(b) || (count(o) == count(b) && o >= b)));
        }
    }

    /// Spec 20.12.2: every format-10 encoding of a matrix (both BF16 layouts, canonical or with
    /// extra ranks) transcodes to the canonical execution layout; the matvec, dequant and gather
    /// equal those of format-10 layout 0 bit for bit (spec 20.14, 20.15).
    #[test]
    fn transcode_and_semantics_match_format10(shape in shape_strategy(), seed in any::<u64>(), kind in 0u8..3) {
        let w = matrix(shape, seed, kind);
        let exec = encode_exec(shape, &w).unwrap();
        for mode in [Mode::BF16_L0, Mode::BF16_L1] {
            let f10 = encode(mode, shape, Weights::Bf16(&w)).unwrap();
            prop_assert_eq!(&transcode(&f10.matrix).unwrap(), &exec);
        }
        let f10 = decode(&encode(Mode::BF16_L0, shape, Weights::Bf16(&w)).unwrap().matrix).unwrap();
        let d = decode_exec(&exec).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 1);
        let batch = rng.gen_range(1..4);
        let x: Vec<f32> = (0..batch * shape.cols as usize)
            .map(|_| rng.gen_range(-1.0f32..1.0) * 2f32.powi(rng.gen_range(-20..20)))
            .collect();
        let bias: Vec<f32> = (0..shape.rows).map(|_| rng.gen_range(-1.0f32..1.0)).collect();
        for b in [None, Some(&bias[..])] {
            // Spec 15.4.6: bits equal, or both NaN (payloads depend on the host's float unit).
            let bits = |v: &f32| if v.is_nan() { 0x7FC0_0000 } else { v.to_bits() };
            let ours: Vec<u32> = d.matvec(&x, batch, b).unwrap().iter().map(bits).collect();
            let theirs: Vec<u32> = f10.matvec(&x, batch, b).unwrap().iter().map(bits).collect();
            prop_assert_eq!(ours, theirs);
            let word = |w: u16| if w & 0x7FFF > 0x7F80 { 0x7FC0 } else { w };
            let ours: Vec<u16> = d.matvec_bf16(&x, batch, b).unwrap().into_iter().map(word).collect();
            let theirs: Vec<u16> = f10.matvec_bf16(&x, batch, b).unwrap().into_iter().map(word).collect();
            prop_assert_eq!(ours, theirs);
        }
        // Columns < K agree with format 10; pads are +0.0 here (spec 20.14).
        let (k, k16) = (shape.cols as usize, d.row_stride() as usize);
        for (ours, theirs) in d.dequant().chunks_exact(k16).zip(f10.dequant().chunks_exact(k16)) {
            prop_assert_eq!(&ours[..k], &theirs[..k]);
            prop_assert!(ours[k..].iter().all(|&p| p == 0));
        }
        let rows = [shape.rows - 1, 0, shape.rows / 2];
        prop_assert_eq!(d.gather(&rows).unwrap().len(), 3 * k16);
    }

    /// Spec 20.11: any bases in 1..=242 give a valid encoding of the same matrix, non-canonical
    /// where a base differs from the canonical one.
    #[test]
    fn other_bases_are_valid(shape in shape_strategy(), seed in any::<u64>(), kind in 0u8..3) {
        let w = matrix(shape, seed, kind);
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 2);
        let bases: Vec<u8> = (0..shape.rows).map(|_| rng.gen_range(1..=MAX_BASE)).collect();
        let m = encode_exec_with_bases(shape, &w, &bases).unwrap();
        prop_assert_eq!(&decode_exec(&m).unwrap().words, &w);
        let k = shape.cols as usize;
        let first = w.chunks_exact(k).zip(&bases).position(|(r, &b)| canonical_base(r) != b);
        prop_assert_eq!(check_canonical(&m).unwrap().map(|n| n.row as usize), first);
    }

    /// Strictness (spec 20.9, 20.11): after any single-byte change (or a byte added or removed)
    /// the fields are either rejected with a named rule, or they are exactly the encoding of the
    /// matrix they decode to under their own bases: a decoder has one interpretation.
    #[test]
    fn corruption_is_rejected_or_reencodes_exactly(
        shape in shape_strategy(), seed in any::<u64>(), kind in 0u8..3, field in 0usize..5, pick in any::<u64>(),
        op in 0u8..4, byte in any::<u8>(),
    ) {
        let w = matrix(shape, seed, kind);
        let mut f = le_fields(&encode_exec(shape, &w).unwrap());
        let n = f[field].len();
        match (op, n) {
            (0, _) => f[field].push(byte),
            (1, n) if n > 0 => { f[field].remove((pick % n as u64) as usize); }
            (_, n) if n > 0 => f[field][(pick % n as u64) as usize] ^= byte | 1,
            _ => f[field].push(byte),
        }
        let result = reparse(shape, &f).map_err(ExecDecodeError::from).and_then(|m| decode_exec(&m).map(|d| (m, d)));
        match result {
            Err(ExecDecodeError::Format(e)) => {
                prop_assert!(ExecFormatError::RULES.iter().any(|(r, c)| *r == e.rule() && *c == e.clause()));
                prop_assert!(e.to_string().starts_with(e.rule()));
            }
            Err(other) => prop_assert!(false, "not a format error: {other}"),
            Ok((m, d)) => prop_assert_eq!(&encode_exec_with_bases(shape, &d.words, &m.base).unwrap(), &m),
        }
    }
}

/// Spec 20.10: with two rules broken, the earlier one in the total order is reported.
#[test]
fn first_rule_in_the_total_order_wins() {
    let shape = Shape::new(3, 20);
    let w = matrix(shape, 7, 2);
    let good = encode_exec(shape, &w).unwrap();
    let mut m = good.clone();
    m.sm[2 * 32 + 21] = 1; // row 2, pad column 21 (K16 = 32): exec-sm-padding
    m.base[1] = 0; // exec-base-range, checked earlier
    assert_eq!(decode_exec(&m).unwrap_err(), ExecDecodeError::Format(ExecFormatError::BaseRange { row: 1, got: 0 }));
    m.base[1] = good.base[1];
    assert_eq!(decode_exec(&m).unwrap_err().to_string().split(' ').next(), Some("exec-sm-padding"));
    // A wrong last esc_start entry and an escape in the window: exec-esc-length first.
    let mut m = good.clone();
    let t = m.esc_start.len() - 1;
    m.esc_start[t] += 1;
    assert!(!m.esc.is_empty());
    m.esc[0] = 0; // exec-escape-in-window, checked last
    match decode_exec(&m).unwrap_err() {
        ExecDecodeError::Format(e) => assert_eq!(e.rule(), "exec-esc-length"),
        other => panic!("{other}"),
    }
}

/// Spec 20.12.3: FP8 cannot be transcoded; an invalid format-10 source is refused with its rule.
#[test]
fn transcode_refusals_are_named() {
    let shape = Shape::new(2, 3);
    let f8 = encode(Mode::FP8_L0, shape, Weights::Fp8(&[0x38, 0x40, 0xB0, 0, 1, 2])).unwrap();
    assert_eq!(transcode(&f8.matrix), Err(ExecEncodeError::Fp8));
    let mut bf = encode(Mode::BF16_L0, shape, Weights::Bf16(&[0x3F80; 6])).unwrap().matrix;
    bf.bases[0] = 8;
    match transcode(&bf) {
        Err(ExecEncodeError::Source(e)) => {
            assert!(e.to_string().starts_with("offset-first-nonzero"))
        }
        other => panic!("{other:?}"),
    }
}

/// Spec 20.17: the worked example.
#[test]
fn worked_example() {
    // Row 0: 1.0, 2.0, -0.5, +0.0, 2^-100 (exponent 27: an escape); row 1: five zeros.
    let w = [0x3F80, 0x4000, 0xBF00, 0x0000, 0x0D80, 0, 0, 0, 0, 0];
    let m = encode_exec(Shape::new(2, 5), &w).unwrap();
    assert_eq!(m.base, [115, 1]);
    assert_eq!(&m.sm[..5], &[0x00, 0x00, 0x80, 0x00, 0x00]);
    assert_eq!(m.sm.len(), 32);
    assert_eq!(&m.codes[..3], &[0xED, 0x0C, 0x0F]);
    assert_eq!(m.codes.len(), 16);
    assert_eq!(m.esc_start, [0, 1, 1]);
    assert_eq!(m.esc, [27]);
    let d = decode_exec(&m).unwrap();
    assert_eq!(d.words, w);
    let x = [2f32.powi(24), 0.5, 2f32.powi(25), 3.0, 2f32.powi(100)];
    assert_eq!(d.matvec_bf16(&x, 1, None).unwrap(), [0x3F80, 0x0000]);
    let stored: usize = m.to_le_fields().iter().map(|(_, b)| b.len()).sum();
    assert_eq!((stored, m.stored_bytes()), (63, 63));
}

/// Spec 20.10: reports name the rule, clause, field and byte offset.
#[test]
fn reports_locate_the_violation() {
    use nwc_reference::exec::ExecField;
    let w = [0x3F80, 0x4000, 0xBF00, 0x0000, 0x0D80, 0, 0, 0, 0, 0];
    let good = encode_exec(Shape::new(2, 5), &w).unwrap();
    let first = |m: &ExecMatrix| match decode_exec(m).unwrap_err() {
        ExecDecodeError::Format(e) => (e.rule(), e.clause(), e.field(), e.offset()),
        other => panic!("{other}"),
    };
    let mut m = good.clone();
    m.codes[8 + 3] = 0x10; // row 1, column 7 (a pad): high nibble of byte 8 + 3
    assert_eq!(first(&m), ("exec-code-padding", "20.9.5", Some(ExecField::Codes), Some(11)));
    let mut m = good.clone();
    m.esc[0] = 120; // inside 115..=128
    assert_eq!(first(&m), ("exec-escape-in-window", "20.9.10", Some(ExecField::Esc), Some(0)));
    let mut m = good.clone();
    m.esc_start[1] = 0; // tile 0 now counts no escape: entry 1 is wrong
    assert_eq!(first(&m), ("exec-esc-count", "20.9.9", Some(ExecField::EscStart), Some(4)));
    let mut m = good;
    m.sm.pop();
    assert_eq!(first(&m), ("exec-field-size", "20.9.2", Some(ExecField::Sm), Some(31)));
}
