//! Coding in runs of rows. `encode_observed` equals `encode` and observes every row once, in order.
//! `decode_bf16_runs` against the reference: the runs together are the reference's weights, on
//! every BF16 mode, edge and random shapes and several run sizes (so that the reused buffer is
//! refilled many times), and every corruption of the test kit gets the reference's error.

use nwc_fast::{decode_bf16_runs, RunError};
use nwc_reference::{ElemType, Elements, EncodedMatrix, Limits, Mode, Shape, Weights};
use nwc_testkit::corrupt;
use nwc_testkit::gen::{Dist, Generator};

/// The runs of `m` with `run_bytes`, concatenated, after checking each is whole row blocks.
fn runs(m: &EncodedMatrix, run_bytes: usize) -> Result<Vec<u16>, RunError<()>> {
    let block = m.mode.layout.block_rows() as usize * m.shape.cols as usize;
    let mut all = Vec::new();
    decode_bf16_runs(m, &Limits::default(), run_bytes, |w: &[u16]| {
        assert!(!w.is_empty() && (w.len() % block == 0 || all.len() + w.len() == m.shape.weights() as usize));
        all.extend_from_slice(w);
        Ok(())
    })?;
    Ok(all)
}

fn bf16_modes() -> impl Iterator<Item = Mode> {
    Mode::ALL.into_iter().filter(|m| m.elem == ElemType::Bf16)
}

#[test]
fn runs_together_are_the_reference_weights() {
    let mut gen = Generator::new(0x5EED);
    for mode in bf16_modes() {
        for i in 0..28 {
            let shape = if i == 27 { Shape::new(301, 2100) } else { gen.shape(i, 1200) };
            let w = gen.bf16(Dist::BF16[i % Dist::BF16.len()], shape);
            let m = nwc_fast::encode(mode, shape, Weights::Bf16(&w)).unwrap().matrix;
            for run_bytes in [0, 5000, 64 << 10, 1 << 30] {
                assert_eq!(runs(&m, run_bytes).unwrap(), w, "{mode} {shape} runs of {run_bytes} bytes");
            }
        }
    }
}

#[test]
fn every_corruption_gets_the_reference_error() {
    let mut gen = Generator::new(98);
    let mut checked = 0;
    for mode in bf16_modes() {
        for shape in [Shape::new(13, 40), Shape::new(40, 530)] {
            let w = gen.bf16(Dist::HeavyTail, shape);
            let enc = nwc_reference::encode(mode, shape, Weights::Bf16(&w)).unwrap();
            for c in corrupt::all(&enc) {
                if matches!(c.fields, corrupt::Corrupted::ModeCode { .. }) {
                    continue; // a mode code is metadata; nothing to decode
                }
                let m = c.fields.matrix();
                let expected = nwc_reference::decode(m);
                match (runs(m, 0), expected) {
                    (Ok(got), Ok(d)) => assert_eq!(Elements::Bf16(got), d.elements, "{mode} {shape} {} {}", c.rule, c.variant),
                    (Err(RunError::Decode(got)), Err(e)) => assert_eq!(got, e, "{mode} {shape} {} {}", c.rule, c.variant),
                    (Err(RunError::NotBf16), _) if m.mode.elem != ElemType::Bf16 => {}
                    (got, expected) => panic!("{mode} {shape} {} {}: {got:?} against {expected:?}", c.rule, c.variant),
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 50, "only {checked} corruptions");
}

#[test]
fn fp8_matrices_and_sink_errors() {
    let mut gen = Generator::new(3);
    let shape = Shape::new(64, 96);
    let fp8 = Mode::ALL.into_iter().find(|m| m.elem == ElemType::Fp8E4m3).unwrap();
    let m = nwc_fast::encode(fp8, shape, Weights::Fp8(&gen.fp8(Dist::Fp8Quantized, shape))).unwrap().matrix;
    assert!(matches!(decode_bf16_runs(&m, &Limits::default(), 0, |_| Ok::<(), ()>(())), Err(RunError::NotBf16)));

    let bf16 = bf16_modes().next().unwrap();
    let m = nwc_fast::encode(bf16, shape, Weights::Bf16(&gen.bf16(Dist::BF16[0], shape))).unwrap().matrix;
    let mut calls = 0;
    let r = decode_bf16_runs(&m, &Limits::default(), 0, |_| {
        calls += 1;
        Err("disk full")
    });
    assert!(matches!(r, Err(RunError::Sink("disk full"))) && calls == 1, "the first sink error stops decoding");
}

#[test]
fn encode_observed_equals_encode_and_observes_every_row_in_order() {
    let mut gen = Generator::new(0x0B5);
    for mode in Mode::ALL {
        for i in 0..12 {
            let shape = if i == 11 { Shape::new(301, 2100) } else { gen.shape(i, 700) };
            let (w16, w8);
            let weights = if mode.elem == ElemType::Bf16 {
                w16 = gen.bf16(Dist::BF16[i % Dist::BF16.len()], shape);
                Weights::Bf16(&w16)
            } else {
                w8 = gen.fp8(Dist::Fp8Quantized, shape);
                Weights::Fp8(&w8)
            };
            let expected = nwc_fast::encode(mode, shape, weights).unwrap();
            for run_rows in [0, 1, 16, 100, u64::MAX] {
                let mut seen = Vec::new();
                let got = nwc_fast::encode_observed(mode, shape, weights, run_rows, |r0, r1| seen.push((r0, r1))).unwrap();
                assert_eq!(got, expected, "{mode} {shape} runs of {run_rows} rows");
                let mut next = 0;
                for &(r0, r1) in &seen {
                    assert!(r0 == next && r1 > r0, "{mode} {shape} runs of {run_rows} rows: {seen:?}");
                    next = r1;
                }
                assert_eq!(next, shape.rows, "{mode} {shape} runs of {run_rows} rows: {seen:?}");
            }
        }
    }
}
