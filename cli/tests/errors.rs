//! Every way the input can be wrong ends with exit status 3 and an error line naming the broken
//! rule and the file; usage errors end with 2; a failed decode leaves no output behind.

mod common;

use common::*;
use nwc_reference::Shape;
use nwc_testkit::gen::Dist;
use std::fs;
use std::path::{Path, PathBuf};

/// A valid BF16 layout-0 directory with two row blocks (so offsets of block 1 depend on block 0).
fn valid_dir(tmp: &Path, name: &str) -> PathBuf {
    let shape = Shape::new(16, 40);
    let raw = write(tmp, &format!("{name}.raw"), &bf16_input(11, Dist::Gaussian { log2_sigma: -6 }, shape));
    let dir = tmp.join(name);
    encode_ok("bf16", 0, shape, &raw, &dir, &[]);
    dir
}

fn edit(path: &Path, f: impl FnOnce(&mut Vec<u8>)) {
    let mut bytes = fs::read(path).unwrap();
    f(&mut bytes);
    fs::write(path, bytes).unwrap();
}

/// Decodes `dir` expecting exit 3 naming `rule` and `file`; the output must not appear.
fn decode_fails(dir: &Path, rule: &str, file: &str) {
    let out = dir.with_extension("out");
    let r = nwc(&[&"decode", &dir, &out]);
    assert_invalid(&r, rule, Some(file));
    assert!(!out.exists(), "a failed decode left {}", out.display());
    let info = nwc(&[&"info", &dir]);
    assert_eq!(info.code, 3, "info of an invalid directory: {}", info.stdout);
    assert!(info.stdout.contains(&format!("status        invalid: {rule}")), "{}", info.stdout);
}

#[test]
fn truncated_data_bin() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = valid_dir(tmp.path(), "d");
    edit(&dir.join("data.bin"), |b| {
        b.pop();
    });
    decode_fails(&dir, "data-too-short (spec 13.4)", "data.bin");
}

#[test]
fn wrong_bases_bin_size() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = valid_dir(tmp.path(), "d");
    edit(&dir.join("bases.bin"), |b| b.extend([0, 0, 0, 0]));
    decode_fails(&dir, "field-size (spec 13.3)", "bases.bin");
}

#[test]
fn wrong_low_bin_size() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = valid_dir(tmp.path(), "d");
    edit(&dir.join("low.bin"), |b| b.truncate(b.len() - 1));
    decode_fails(&dir, "field-size (spec 13.3)", "low.bin");
}

#[test]
fn corrupted_hdr_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = valid_dir(tmp.path(), "d");
    // A lane length of 0 words is out of range.
    edit(&dir.join("hdr.bin"), |b| b[3] = 0);
    decode_fails(&dir, "lane-length-range (spec 13.8)", "hdr.bin");
    // One more word in a lane of block 0 moves where block 1 must start.
    let dir = valid_dir(tmp.path(), "e");
    edit(&dir.join("hdr.bin"), |b| b[5] += 1);
    decode_fails(&dir, "offset-mismatch (spec 13.7)", "bases.bin");
}

#[test]
fn non_matching_lut() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = valid_dir(tmp.path(), "d");
    // The last entry's upper bits: the table no longer equals the one its ranks build.
    edit(&dir.join("lut.bin"), |b| {
        let n = b.len();
        b[n - 1] ^= 0x40;
    });
    decode_fails(&dir, "lut-mismatch (spec 13.10)", "lut.bin");
}

#[test]
fn corrupted_data_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = valid_dir(tmp.path(), "d");
    edit(&dir.join("data.bin"), |b| b[0] ^= 0xFF);
    let out = tmp.path().join("x.raw");
    let r = nwc(&[&"decode", &dir, &out]);
    assert_invalid(&r, "(spec 13.", None);
    assert!(!out.exists());
}

#[test]
fn bad_fp8_scale() {
    let tmp = tempfile::tempdir().unwrap();
    let shape = Shape::new(8, 32);
    let raw = write(tmp.path(), "in.bf16", &bf16_input(2, Dist::Gaussian { log2_sigma: 0 }, shape));
    let dir = tmp.path().join("q");
    encode_ok("fp8", 1, shape, &raw, &dir, &["--quantize-from-bf16"]);
    edit(&dir.join("scale.bin"), |b| b[4..8].copy_from_slice(&f32::NAN.to_bits().to_le_bytes()));
    decode_fails(&dir, "scale-value (spec 13.19)", "scale.bin");
    edit(&dir.join("scale.bin"), |b| b.truncate(4));
    decode_fails(&dir, "field-size (spec 13.3)", "scale.bin");
}

#[test]
fn nan_in_fp8_input() {
    let tmp = tempfile::tempdir().unwrap();
    let mut input = fp8_input(1, Dist::Fp8RandomBytes, Shape::new(4, 20));
    input[37] = 0x7F;
    let raw = write(tmp.path(), "nan.fp8", &input);
    let out = tmp.path().join("o");
    let r = nwc(&[&"encode", &"--elem", &"fp8", &"--rows", &"4", &"--cols", &"20", &raw, &out]);
    assert_invalid(&r, "fp8 NaN (spec 4.", Some("nan.fp8"));
    assert!(!out.join("summary.json").exists());
    // NaN in BF16 input to the quantizer is refused the same way (spec 11.2).
    let mut words = bf16_input(1, Dist::Gaussian { log2_sigma: 0 }, Shape::new(4, 20));
    words[10..12].copy_from_slice(&0x7FC0u16.to_le_bytes());
    let raw = write(tmp.path(), "nan.bf16", &words);
    let r = nwc(&[&"encode", &"--elem", &"fp8", &"--quantize-from-bf16", &"--rows", &"4", &"--cols", &"20", &raw, &out]);
    assert_invalid(&r, "quantize (spec 11.", Some("nan.bf16"));
}

#[test]
fn wrong_input_length() {
    let tmp = tempfile::tempdir().unwrap();
    let raw = write(tmp.path(), "short.raw", &[0u8; 79]);
    let out = tmp.path().join("o");
    let r = nwc(&[&"encode", &"--elem", &"bf16", &"--rows", &"4", &"--cols", &"10", &raw, &out]);
    assert_invalid(&r, "input: 79 bytes, a 4x10 bf16 matrix has 80", Some("short.raw"));
    let r = nwc(&[&"encode", &"--elem", &"fp8", &"--rows", &"4", &"--cols", &"10", &raw, &out]);
    assert_invalid(&r, "has 40", Some("short.raw"));
    let missing = tmp.path().join("missing.raw");
    let r = nwc(&[&"encode", &"--elem", &"fp8", &"--rows", &"4", &"--cols", &"10", &missing, &out]);
    assert_invalid(&r, "no such file or directory", Some("missing.raw"));
}

#[test]
fn missing_or_garbage_summary_json() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = valid_dir(tmp.path(), "d");
    let summary = dir.join("summary.json");
    let good = fs::read(&summary).unwrap();
    fs::remove_file(&summary).unwrap();
    decode_fails_before_reading(&dir, "cannot read");
    fs::write(&summary, b"\x00\xffnot json {").unwrap();
    decode_fails_before_reading(&dir, "not valid JSON");
    fs::write(&summary, b"[1, 2]").unwrap();
    decode_fails_before_reading(&dir, "expected a JSON object");
    let mut json: serde_json::Value = serde_json::from_slice(&good).unwrap();
    json["M"] = serde_json::json!(-3);
    fs::write(&summary, json.to_string()).unwrap();
    decode_fails_before_reading(&dir, "`M` is -3");
    json["M"] = serde_json::json!(16);
    json["elem"] = serde_json::json!(5);
    fs::write(&summary, json.to_string()).unwrap();
    decode_fails_before_reading(&dir, "mode-code (spec 13.1)");
    json["elem"] = serde_json::json!(1);
    fs::write(&summary, json.to_string()).unwrap();
    decode_fails_before_reading(&dir, "`type` is \"bf16\", but mode code 1");
    json.as_object_mut().unwrap().remove("K");
    fs::write(&summary, json.to_string()).unwrap();
    decode_fails_before_reading(&dir, "key `K` is missing");
}

/// Decode and info both fail with exit 3 naming summary.json; nothing is written.
fn decode_fails_before_reading(dir: &Path, what: &str) {
    let out = dir.with_extension("out");
    for r in [nwc(&[&"decode", &dir, &out]), nwc(&[&"info", &dir])] {
        assert_invalid(&r, what, Some("summary.json"));
        assert_eq!(r.stdout, "", "nothing is reported before summary.json is read");
    }
    assert!(!out.exists());
}

#[test]
fn shape_over_the_limits() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = valid_dir(tmp.path(), "d");
    let summary = dir.join("summary.json");
    let mut json: serde_json::Value = serde_json::from_slice(&fs::read(&summary).unwrap()).unwrap();
    // Over the format's hard limit (spec 3.2): a format error.
    json["M"] = serde_json::json!((1u64 << 31) + 1);
    fs::write(&summary, json.to_string()).unwrap();
    decode_fails_before_reading(&dir, "shape-range (spec 13.2)");
    json["M"] = serde_json::json!(0);
    fs::write(&summary, json.to_string()).unwrap();
    decode_fails_before_reading(&dir, "shape-range (spec 13.2)");
    // Inside the format, over this decoder's weight limit (2^34): refused before any file is read.
    json["M"] = serde_json::json!(1u64 << 30);
    json["K"] = serde_json::json!(1u64 << 10);
    fs::write(&summary, json.to_string()).unwrap();
    decode_fails_before_reading(&dir, "limit: 1099511627776 weights exceed");
    // The encoder refuses such shapes before reading its input.
    let raw = write(tmp.path(), "x.raw", &[0u8; 8]);
    let r = nwc(&[&"encode", &"--elem", &"bf16", &"--rows", &"0", &"--cols", &"4", &raw, &tmp.path().join("o")]);
    assert_invalid(&r, "shape-range (spec 13.2)", None);
    let r = nwc(&[&"encode", &"--elem", &"fp8", &"--rows", &"4294967296", &"--cols", &"4", &raw, &tmp.path().join("o")]);
    assert_invalid(&r, "shape-range (spec 13.2)", None);
}

#[test]
fn usage_errors_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let raw = write(tmp.path(), "x.raw", &[0u8; 8]);
    let o = tmp.path().join("o");
    let cases: Vec<Vec<&dyn AsRef<std::ffi::OsStr>>> = vec![
        vec![],
        vec![&"frobnicate"],
        vec![&"decode", &o],
        vec![&"encode", &"--elem", &"int8", &"--rows", &"2", &"--cols", &"2", &raw, &o],
        vec![&"encode", &"--elem", &"bf16", &"--layout", &"2", &"--rows", &"2", &"--cols", &"2", &raw, &o],
        vec![&"encode", &"--elem", &"bf16", &"--rows", &"-2", &"--cols", &"2", &raw, &o],
        vec![&"encode", &"--elem", &"bf16", &"--cols", &"2", &raw, &o],
        vec![&"encode", &"--elem", &"bf16", &"--quantize-from-bf16", &"--rows", &"2", &"--cols", &"2", &raw, &o],
        vec![&"demo", &"--reps", &"0"],
    ];
    for args in cases {
        let r = nwc(&args);
        assert_eq!(r.code, 2, "args {:?}: {}", args.iter().map(|a| a.as_ref().to_owned()).collect::<Vec<_>>(), r.stderr);
        assert!(!r.stderr.contains("panicked"));
    }
    assert!(!o.exists());
}

#[test]
fn failed_decode_leaves_existing_output_alone_and_no_temporary_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = valid_dir(tmp.path(), "d");
    let out_dir = tmp.path().join("outs");
    fs::create_dir(&out_dir).unwrap();
    let out = out_dir.join("out.raw");
    fs::write(&out, b"previous content").unwrap();
    edit(&dir.join("hdr.bin"), |b| b[0] = 200);
    let r = nwc(&[&"decode", &dir, &out]);
    assert_invalid(&r, "lane-length-range", Some("hdr.bin"));
    assert_eq!(fs::read(&out).unwrap(), b"previous content");
    let names: Vec<_> = fs::read_dir(&out_dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, vec![std::ffi::OsString::from("out.raw")]);
}

#[test]
fn decode_never_overwrites_an_input() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = valid_dir(tmp.path(), "d");
    let data = fs::read(dir.join("data.bin")).unwrap();
    let r = nwc(&[&"decode", &dir, &dir.join("data.bin")]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("refusing to overwrite the input data.bin"), "{}", r.stderr);
    assert_eq!(fs::read(dir.join("data.bin")).unwrap(), data);
    // Also through another spelling of the same path.
    let r = nwc(&[&"decode", &dir, &dir.join("../d/summary.json")]);
    assert_eq!(r.code, 2, "{}", r.stderr);
}

/// Rule 13.3.1 (field-missing): a required field's file is absent. Presence is checked for every
/// required field before any size (spec 16.2 step 2), so an absent `low.bin` is named even when
/// `bases.bin` also has the wrong size; an empty file is present and breaks 13.3 instead.
#[test]
fn missing_field_files() {
    let tmp = tempfile::tempdir().unwrap();
    for file in ["data.bin", "bases.bin", "hdr.bin", "lut.bin", "low.bin"] {
        let dir = valid_dir(tmp.path(), &format!("m-{}", file.trim_end_matches(".bin")));
        fs::remove_file(dir.join(file)).unwrap();
        decode_fails(&dir, "field-missing (spec 13.3.1)", file);
    }
    let dir = valid_dir(tmp.path(), "two");
    fs::remove_file(dir.join("low.bin")).unwrap();
    edit(&dir.join("bases.bin"), |b| b.truncate(4));
    decode_fails(&dir, "field-missing (spec 13.3.1)", "low.bin");
    let dir = valid_dir(tmp.path(), "empty");
    fs::write(dir.join("hdr.bin"), b"").unwrap();
    decode_fails(&dir, "field-size (spec 13.3)", "hdr.bin");
}
