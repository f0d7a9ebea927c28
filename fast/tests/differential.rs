//! nwc-fast against the reference (the oracle): identical encodings, identical decodes, identical
//! errors, on every mode, the edge shapes, random shapes and every corruption of the test kit.

use nwc_fast::slice::slice_rows;
use nwc_reference::{Elements, Encoding, Mode, Shape, Weights};
use nwc_testkit::corrupt;
use nwc_testkit::gen::{Dist, Generator};
use proptest::prelude::*;

fn input(gen: &mut Generator, mode: Mode, dist: Dist, shape: Shape) -> (Vec<u16>, Vec<u8>) {
    match mode.elem {
        nwc_reference::ElemType::Bf16 => (gen.bf16(dist, shape), Vec::new()),
        nwc_reference::ElemType::Fp8E4m3 => (Vec::new(), gen.fp8(dist, shape)),
    }
}

fn weights<'a>(mode: Mode, w: &'a (Vec<u16>, Vec<u8>)) -> Weights<'a> {
    match mode.elem {
        nwc_reference::ElemType::Bf16 => Weights::Bf16(&w.0),
        nwc_reference::ElemType::Fp8E4m3 => Weights::Fp8(&w.1),
    }
}

/// Encodes with both, checks byte identity and decode identity; returns the encoding.
fn check_same(mode: Mode, shape: Shape, w: &(Vec<u16>, Vec<u8>), what: &str) -> Encoding {
    let reference = nwc_reference::encode(mode, shape, weights(mode, w)).unwrap();
    let fast = nwc_fast::encode(mode, shape, weights(mode, w)).unwrap();
    assert_eq!(fast, reference, "encode differs: {what}");
    assert!(nwc_fast::fast_path_accepts(&fast.matrix), "fast path refuses a valid matrix: {what}");
    let dec = nwc_fast::decode(&fast.matrix).unwrap();
    let expected = match mode.elem {
        nwc_reference::ElemType::Bf16 => Elements::Bf16(w.0.clone()),
        nwc_reference::ElemType::Fp8E4m3 => Elements::Fp8(w.1.clone()),
    };
    assert_eq!(dec.elements, expected, "decode differs: {what}");
    assert_eq!(dec, nwc_reference::decode(&fast.matrix).unwrap(), "decoded matrix differs: {what}");
    reference
}

#[test]
fn edge_and_random_shapes_every_mode_and_distribution() {
    let mut gen = Generator::new(0xFA57);
    for mode in Mode::ALL {
        let dists: &[Dist] = if mode.elem == nwc_reference::ElemType::Bf16 { &Dist::BF16 } else { &Dist::FP8 };
        for i in 0..28 {
            let shape = gen.shape(i, 1200);
            let dist = dists[i % dists.len()];
            let w = input(&mut gen, mode, dist, shape);
            check_same(mode, shape, &w, &format!("{mode} {shape} {}", dist.name()));
        }
    }
}

#[test]
fn large_matrix_many_row_blocks_in_parallel() {
    let mut gen = Generator::new(7);
    for mode in Mode::ALL {
        let shape = Shape::new(301, 2100);
        let dist = if mode.elem == nwc_reference::ElemType::Bf16 { Dist::RowScaled { binades: 12 } } else { Dist::Fp8Quantized };
        let w = input(&mut gen, mode, dist, shape);
        check_same(mode, shape, &w, &format!("{mode} {shape}"));
    }
}

#[test]
fn every_corruption_gets_the_reference_error() {
    let mut gen = Generator::new(99);
    let mut checked = 0;
    for mode in Mode::ALL {
        for shape in [Shape::new(13, 40), Shape::new(24, 530)] {
            let dist = if mode.elem == nwc_reference::ElemType::Bf16 { Dist::HeavyTail } else { Dist::Fp8Subnormal };
            let w = input(&mut gen, mode, dist, shape);
            let enc = check_same(mode, shape, &w, "corruption source");
            for c in corrupt::all(&enc) {
                let m = c.fields.matrix();
                if matches!(c.fields, corrupt::Corrupted::ModeCode { .. }) {
                    continue; // a mode code is metadata; nothing to decode
                }
                let expected = nwc_reference::decode(m).map(|d| d.elements);
                let got = nwc_fast::decode(m).map(|d| d.elements);
                assert_eq!(got, expected, "{mode} {shape} {} {}", c.rule, c.variant);
                assert_eq!(nwc_fast::fast_path_accepts(m), expected.is_ok(), "fast path: {mode} {shape} {} {}", c.rule, c.variant);
                checked += 1;
            }
        }
    }
    assert!(checked > 100, "only {checked} corruptions");
}

#[test]
fn slices_decode_to_their_rows_and_validate() {
    let mut gen = Generator::new(5);
    for mode in Mode::ALL {
        let shape = Shape::new(53, 1100);
        let dist = if mode.elem == nwc_reference::ElemType::Bf16 { Dist::HeavyTail } else { Dist::Fp8Quantized };
        let w = input(&mut gen, mode, dist, shape);
        let mut enc = nwc_fast::encode(mode, shape, weights(mode, &w)).unwrap();
        if mode.elem == nwc_reference::ElemType::Fp8E4m3 {
            enc.matrix.scale = Some((0..53).map(|r| 1.0 + r as f32).collect());
        }
        let full = nwc_reference::decode(&enc.matrix).unwrap();
        let h = mode.layout.block_rows();
        let mut ranges = vec![(0, 53), (0, h), (h, 53), (2 * h, 3 * h)];
        ranges.retain(|&(a, b)| a < b && b <= 53);
        for (r0, r1) in ranges {
            let s = slice_rows(&enc.matrix, r0, r1).unwrap();
            let dec = nwc_reference::decode(&s).unwrap_or_else(|e| panic!("{mode} [{r0},{r1}): {e}"));
            let bytes = mode.elem.input_bytes();
            let all = full.to_le_bytes();
            assert_eq!(dec.to_le_bytes(), all[(r0 * 1100) as usize * bytes..(r1 * 1100) as usize * bytes], "{mode} [{r0},{r1})");
            assert_eq!(dec.scale, full.scale.as_ref().map(|s| s[r0 as usize..r1 as usize].to_vec()));
        }
        for (r0, r1) in [(1, h), (0, h + 1), (h, h), (0, 54)] {
            assert!(slice_rows(&enc.matrix, r0, r1).is_err(), "{mode} [{r0},{r1}) must be refused");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn proptest_bf16_and_fp8_identical(rows in 1u64..40, cols in 1u64..1100, mode_i in 0usize..4, seed in any::<u64>(), dist_i in 0usize..9) {
        let mode = Mode::ALL[mode_i];
        let mut gen = Generator::new(seed);
        let shape = Shape::new(rows, cols);
        let dist = if mode.elem == nwc_reference::ElemType::Bf16 { Dist::BF16[dist_i] } else { Dist::FP8[dist_i % 4] };
        let w = input(&mut gen, mode, dist, shape);
        check_same(mode, shape, &w, "proptest");
    }
}

#[test]
fn input_errors_match() {
    let shape = Shape::new(2, 3);
    let nan = [0u8, 0, 0x7F, 0, 0, 0];
    assert_eq!(nwc_fast::encode(Mode::FP8_L0, shape, Weights::Fp8(&nan)), nwc_reference::encode(Mode::FP8_L0, shape, Weights::Fp8(&nan)));
    let short = [0u16; 5];
    assert_eq!(
        nwc_fast::encode(Mode::BF16_L1, shape, Weights::Bf16(&short)),
        nwc_reference::encode(Mode::BF16_L1, shape, Weights::Bf16(&short))
    );
    assert_eq!(
        nwc_fast::encode(Mode::BF16_L0, Shape::new(0, 3), Weights::Bf16(&[])),
        nwc_reference::encode(Mode::BF16_L0, Shape::new(0, 3), Weights::Bf16(&[]))
    );
}
