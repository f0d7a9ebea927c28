//! `nwc encode --elem fp8 --scales FILE` (spec 11.4): the given row scales are stored as given, in
//! both layouts; a file of the wrong size or with a value rule 13.19 refuses is a named error
//! (snapshot), and so is `--scales` with BF16 or with `--quantize-from-bf16` (usage, exit 2).

mod common;

use common::*;
use nwc_reference::Shape;
use nwc_testkit::gen::Dist;
use std::fs;
use std::path::Path;

fn f32_le(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn encode_fp8(shape: Shape, input: &Path, out: &Path, extra: &[&dyn AsRef<std::ffi::OsStr>]) -> Run {
    let (m, k) = (shape.rows.to_string(), shape.cols.to_string());
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"encode", &"--elem", &"fp8", &"--rows", &m, &"--cols", &k];
    args.extend_from_slice(extra);
    args.push(&input);
    args.push(&out);
    nwc(&args)
}

#[test]
fn given_scales_are_stored_as_given_and_decode() {
    let tmp = tempfile::tempdir().unwrap();
    let shape = Shape::new(17, 40);
    let fp8 = fp8_input(3, Dist::Fp8Quantized, shape);
    let raw = write(tmp.path(), "in.fp8", &fp8);
    // Scales from elsewhere: any finite positive f32, subnormal and the largest finite included.
    let mut scales: Vec<f32> = (0..17).map(|i| 0.001 * (i + 1) as f32).collect();
    scales[3] = f32::from_bits(1);
    scales[5] = f32::MAX;
    let scales_bytes = f32_le(&scales);
    let sfile = write(tmp.path(), "scales.bin", &scales_bytes);
    for layout in ["0", "1"] {
        let dir = tmp.path().join(format!("s{layout}"));
        let r = encode_fp8(shape, &raw, &dir, &[&"--layout", &layout, &"--scales", &sfile]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert_eq!(fs::read(dir.join("scale.bin")).unwrap(), scales_bytes, "spec 11.4: stored as given");
        // The same fields as the reference encoder's, with the scales beside them.
        let plain = tmp.path().join(format!("p{layout}"));
        assert_eq!(encode_fp8(shape, &raw, &plain, &[&"--layout", &layout]).code, 0);
        assert!(!plain.join("scale.bin").exists(), "spec 11.6: no scales given, none invented");
        for f in ["data.bin", "bases.bin", "hdr.bin", "lut.bin", "low.bin", "exp_of_rank.bin"] {
            assert_eq!(fs::read(dir.join(f)).unwrap(), fs::read(plain.join(f)).unwrap(), "{f}");
        }
        let summary: serde_json::Value = serde_json::from_slice(&fs::read(dir.join("summary.json")).unwrap()).unwrap();
        assert_eq!(summary["quantized_from_bf16"], false);
        assert!(summary["sha256"]["scale.bin"].is_string());
        let out = tmp.path().join(format!("s{layout}.fp8"));
        let r = nwc(&[&"decode", &dir, &out]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert_eq!(fs::read(&out).unwrap(), fp8);
        let r = nwc(&[&"info", &dir]);
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
}

#[test]
fn wrong_scales_are_named_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let shape = Shape::new(4, 16);
    let raw = write(d, "in.fp8", &fp8_input(5, Dist::Fp8Quantized, shape));
    let bf16 = write(d, "in.bf16", &bf16_input(5, Dist::Gaussian { log2_sigma: -6 }, shape));
    let good = write(d, "good.bin", &f32_le(&[1.0, 2.0, 0.5, 0.25]));
    let mut lines = Vec::new();
    let mut show = |what: &str, r: Run| {
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
        let text = r.stderr.trim().replace(&d.display().to_string(), "[TMP]");
        // clap's usage errors end with a hint block; the first line is the message.
        lines.push(format!("{what}: exit {}: {}", r.code, text.lines().next().unwrap_or_default()));
    };
    let short = write(d, "short.bin", &f32_le(&[1.0, 2.0, 3.0]));
    show("3 scales for 4 rows", encode_fp8(shape, &raw, &d.join("o1"), &[&"--scales", &short]));
    let ragged = write(d, "ragged.bin", &[0u8; 18]);
    show("18 bytes", encode_fp8(shape, &raw, &d.join("o2"), &[&"--scales", &ragged]));
    let nan = write(d, "nan.bin", &f32_le(&[1.0, f32::NAN, 1.0, 1.0]));
    show("NaN scale", encode_fp8(shape, &raw, &d.join("o3"), &[&"--scales", &nan]));
    let zero = write(d, "zero.bin", &f32_le(&[1.0, 1.0, 1.0, 0.0]));
    show("zero scale", encode_fp8(shape, &raw, &d.join("o4"), &[&"--scales", &zero]));
    let neg = write(d, "neg.bin", &f32_le(&[-1.0, 1.0, 1.0, 1.0]));
    show("negative scale", encode_fp8(shape, &raw, &d.join("o5"), &[&"--scales", &neg]));
    let inf = write(d, "inf.bin", &f32_le(&[1.0, 1.0, f32::INFINITY, 1.0]));
    show("infinite scale", encode_fp8(shape, &raw, &d.join("o6"), &[&"--scales", &inf]));
    show("missing scales file", encode_fp8(shape, &raw, &d.join("o7"), &[&"--scales", &d.join("nope.bin")]));
    show("with --quantize-from-bf16", encode_fp8(shape, &bf16, &d.join("o8"), &[&"--quantize-from-bf16", &"--scales", &good]));
    show(
        "with --elem bf16",
        nwc(&[&"encode", &"--elem", &"bf16", &"--rows", &"4", &"--cols", &"16", &"--scales", &good, &bf16, &d.join("o9")]),
    );
    for i in 1..=9 {
        assert!(!d.join(format!("o{i}")).exists(), "o{i}: a refused encode writes nothing");
    }
    insta::assert_snapshot!("encode_scales_errors", lines.join("\n"));
}
