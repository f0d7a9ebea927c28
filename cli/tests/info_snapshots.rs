//! `nwc info` prints a stable report (no paths, no timings): snapshots of small matrices, one per
//! element type, one in layout 1, and one invalid directory.

mod common;

use common::*;
use nwc_reference::Shape;
use nwc_testkit::gen::Dist;

fn info_of(elem: &str, layout: u8, shape: Shape, input: Vec<u8>, extra: &[&str], corrupt: Option<(&str, usize)>) -> (i32, String) {
    let tmp = tempfile::tempdir().unwrap();
    let raw = write(tmp.path(), "in.raw", &input);
    let dir = tmp.path().join("enc");
    encode_ok(elem, layout, shape, &raw, &dir, extra);
    if let Some((file, offset)) = corrupt {
        let path = dir.join(file);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[offset] ^= 0x01;
        std::fs::write(&path, bytes).unwrap();
    }
    let r = nwc(&[&"info", &dir]);
    (r.code, r.stdout)
}

#[test]
fn info_bf16_layout0() {
    let shape = Shape::new(24, 40);
    let (code, out) = info_of("bf16", 0, shape, bf16_input(21, Dist::Gaussian { log2_sigma: -6 }, shape), &[], None);
    assert_eq!(code, 0);
    insta::assert_snapshot!(out);
}

#[test]
fn info_fp8_layout0_quantized() {
    let shape = Shape::new(13, 40);
    let input = bf16_input(22, Dist::RowScaled { binades: 4 }, shape);
    let (code, out) = info_of("fp8", 0, shape, input, &["--quantize-from-bf16"], None);
    assert_eq!(code, 0);
    insta::assert_snapshot!(out);
}

#[test]
fn info_bf16_layout1_with_escapes() {
    let shape = Shape::new(20, 70);
    let (code, out) = info_of("bf16", 1, shape, bf16_input(23, Dist::HeavyTail, shape), &[], None);
    assert_eq!(code, 0);
    insta::assert_snapshot!(out);
}

#[test]
fn info_fp8_layout1_invalid() {
    let shape = Shape::new(16, 64);
    let input = fp8_input(24, Dist::Fp8RandomBytes, shape);
    // The first lane's length in words, off by one.
    let (code, out) = info_of("fp8", 1, shape, input, &[], Some(("hdr.bin", 0)));
    assert_eq!(code, 3);
    insta::assert_snapshot!(out);
}
