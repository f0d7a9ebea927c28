//! The report format, text and JSON, pinned on the mini corpus: one run with a correct reference
//! pass, one with a broken encoder (failures, skips, details) and one with a broken decoder.

mod common;

use std::process::Command;

/// Runs nwc-conform and returns (exit code, stdout, JSON report) with host paths replaced.
fn conform(args: &[&str]) -> (i32, String, String) {
    let tmp = tempfile::tempdir().unwrap();
    let corpus = tmp.path().join("corpus");
    std::fs::create_dir(&corpus).unwrap();
    common::write_mini_corpus(&corpus);
    let json = tmp.path().join("report.json");
    let out =
        Command::new(env!("CARGO_BIN_EXE_nwc-conform")).arg("--vectors").arg(&corpus).arg("--json").arg(&json).args(args).output().unwrap();
    let clean = |s: String| s.replace(&corpus.display().to_string(), "<corpus>").replace(env!("CARGO_BIN_EXE_nwc-broken"), "<nwc-broken>");
    let stdout = clean(String::from_utf8(out.stdout).unwrap());
    (out.status.code().unwrap(), stdout, clean(std::fs::read_to_string(json).unwrap()))
}

#[test]
fn reference_report() {
    let (code, text, json) = conform(&["reference"]);
    assert_eq!(code, 0, "{text}");
    insta::assert_snapshot!("reference_text", text);
    insta::assert_snapshot!("reference_json", json);
}

#[test]
fn broken_encoder_report() {
    let (code, text, json) = conform(&["encoder", "--", env!("CARGO_BIN_EXE_nwc-broken"), "encode-raw-padding"]);
    assert_eq!(code, 1, "{text}");
    assert!(text.ends_with("0 passed, 5 failed\n"), "{text}");
    insta::assert_snapshot!("encoder_raw_padding_text", text);
    insta::assert_snapshot!("encoder_raw_padding_json", json);
}

#[test]
fn broken_decoder_report() {
    let (code, text, json) = conform(&["decoder", "--", env!("CARGO_BIN_EXE_nwc-broken"), "decode-no-validation"]);
    assert_eq!(code, 1, "{text}");
    assert!(text.ends_with("5 passed, 4 failed\n"), "{text}");
    insta::assert_snapshot!("decoder_no_validation_text", text);
    insta::assert_snapshot!("decoder_no_validation_json", json);
}

#[test]
fn unreadable_corpus_is_a_usage_error() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_nwc-conform")).arg("--vectors").arg(tmp.path()).arg("reference").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("manifest.json"));
}
