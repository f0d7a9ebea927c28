//! The runner against the reference and against deliberately broken encoders and decoders
//! (`nwc-broken`): every fault must be reported as FAIL, every correct tool as passing.

mod common;

use nwc_conformance::backend::ReferenceBackend;
use nwc_conformance::corpus::Corpus;
use nwc_conformance::report::{Report, Verdict};
use nwc_conformance::run::{self, Scales, Tool};
use std::time::Duration;

fn broken(mode: &str, work: &std::path::Path, timeout_s: f64) -> Tool {
    Tool {
        program: env!("CARGO_BIN_EXE_nwc-broken").into(),
        args: vec![mode.into()],
        timeout: Duration::from_secs_f64(timeout_s),
        work_dir: work.to_owned(),
        keep_work: false,
        scales: Scales::Passed,
    }
}

fn verdict_of<'a>(report: &'a Report, id: &str) -> (Verdict, &'a str) {
    let v = report.vectors.iter().find(|v| v.id == id).unwrap_or_else(|| panic!("no result for {id}"));
    (v.verdict, v.detail.as_deref().unwrap_or(""))
}

fn encoder(mode: &str) -> Report {
    let (tmp, corpus) = common::mini_corpus();
    run::encoder::run(&corpus, &broken(mode, tmp.path(), 30.0))
}

fn decoder(mode: &str) -> Report {
    let (tmp, corpus) = common::mini_corpus();
    run::decoder::run(&corpus, &broken(mode, tmp.path(), 30.0))
}

#[test]
fn reference_passes_the_mini_corpus() {
    let (_tmp, corpus) = common::mini_corpus();
    let report = run::reference::run(&corpus, &ReferenceBackend);
    assert!(report.all_passed(), "{}", report.to_text());
    assert_eq!(report.summary.passed, 9);
}

#[test]
fn reference_run_catches_a_wrong_expected_output() {
    let (tmp, _) = common::mini_corpus();
    // Flip one bit of an expected matvec result and fix up its hash: now the vector lies.
    let mut manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("manifest.json")).unwrap()).unwrap();
    let v = &mut manifest["vectors"][0];
    let rel = v["matvecs"][0]["output_f32"].as_str().unwrap().to_owned();
    let mut bytes = std::fs::read(tmp.path().join(&rel)).unwrap();
    bytes[5] ^= 1;
    std::fs::write(tmp.path().join(&rel), &bytes).unwrap();
    v["sha256"][&rel] = nwc_conformance::corpus::sha256_hex(&bytes).into();
    std::fs::write(tmp.path().join("manifest.json"), manifest.to_string()).unwrap();
    let report = run::reference::run(&Corpus::load(tmp.path()).unwrap(), &ReferenceBackend);
    let (verdict, detail) = verdict_of(&report, "canonical-bf16-l0-13x40");
    assert_eq!(verdict, Verdict::Fail);
    assert!(detail.contains("matvec 0 f32 output[1]"), "{detail}");
    assert_eq!(report.summary.failed, 1);
}

#[test]
fn tampered_files_and_unreadable_entries_fail() {
    let (tmp, _) = common::mini_corpus();
    let mut manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("manifest.json")).unwrap()).unwrap();
    manifest["vectors"][1]["kind"] = "mystery".into();
    std::fs::write(tmp.path().join("manifest.json"), manifest.to_string()).unwrap();
    let rel = manifest["vectors"][2]["fields"]["hdr"].as_str().unwrap().to_owned();
    let mut hdr = std::fs::read(tmp.path().join(&rel)).unwrap();
    hdr[0] ^= 1;
    std::fs::write(tmp.path().join(&rel), &hdr).unwrap();
    std::fs::remove_file(tmp.path().join(manifest["vectors"][3]["input"].as_str().unwrap())).unwrap();
    let corpus = Corpus::load(tmp.path()).unwrap();
    for report in [
        run::reference::run(&corpus, &ReferenceBackend),
        run::encoder::run(&corpus, &broken("encode-ok", tmp.path(), 30.0)),
        run::decoder::run(&corpus, &broken("decode-ok", tmp.path(), 30.0)),
    ] {
        let (verdict, detail) = verdict_of(&report, "canonical-fp8-l0-9x24");
        assert_eq!(verdict, Verdict::Fail, "{}", report.subcommand);
        assert!(detail.contains("unknown variant `mystery`"), "{detail}");
        let (verdict, detail) = verdict_of(&report, "canonical-bf16-l1-3x33");
        assert_eq!(verdict, Verdict::Fail);
        assert!(detail.contains("sha256"), "{detail}");
        let (verdict, detail) = verdict_of(&report, "canonical-fp8-l1-5x70");
        assert_eq!(verdict, Verdict::Fail);
        assert!(detail.contains("input.bin"), "{detail}");
        assert!(!report.all_passed());
    }
}

#[test]
fn reference_encoder_is_canonical_and_unspecified_bytes_are_ignored() {
    for mode in ["encode-ok", "encode-noisy-slack"] {
        let report = encoder(mode);
        assert!(report.all_passed(), "{}", report.to_text());
        assert_eq!(report.summary.by_verdict.get("canonical"), Some(&5), "{mode}");
        assert_eq!(report.summary.skipped, 4);
    }
}

#[test]
fn consistent_other_ranking_is_valid_not_canonical() {
    let report = encoder("encode-reranked");
    assert!(report.all_passed(), "{}", report.to_text());
    assert_eq!(report.summary.by_verdict.get("valid"), Some(&5), "{}", report.to_text());
    let (_, detail) = verdict_of(&report, "canonical-bf16-l1-3x33");
    assert!(detail.starts_with("not canonical: first difference data offset 0"), "{detail}");
}

#[test]
fn given_scales_are_judged() {
    // The mini corpus's FP8 vectors carry scales (quantized from BF16): `--scales` passes them.
    for (mode, expected) in [("encode-no-scales", "wrote no scale.bin"), ("encode-wrong-scale", "scale.bin is not the scales given")] {
        let report = encoder(mode);
        for id in ["canonical-fp8-l0-9x24", "canonical-fp8-l1-5x70"] {
            let (verdict, detail) = verdict_of(&report, id);
            assert_eq!(verdict, Verdict::Fail, "{mode} {id}");
            assert!(detail.contains(expected), "{mode} {id}: {detail}");
        }
        assert_eq!(verdict_of(&report, "canonical-bf16-l0-13x40").0, Verdict::Canonical, "{mode}");
    }
}

#[test]
fn flipped_data_bit_fails_with_the_first_difference() {
    let report = encoder("encode-flip-bit");
    assert_eq!(report.summary.passed, 0, "{}", report.to_text());
    let (verdict, detail) = verdict_of(&report, "canonical-bf16-l0-13x40");
    assert_eq!(verdict, Verdict::Fail);
    assert!(detail.starts_with("first difference data offset 0: expected 0x"), "{detail}");
}

#[test]
fn nonzero_raw_padding_fails() {
    let report = encoder("encode-raw-padding");
    let (verdict, detail) = verdict_of(&report, "canonical-bf16-l0-13x40");
    assert_eq!(verdict, Verdict::Fail);
    assert!(detail.contains("first difference low offset") && detail.contains("raw-padding (spec 13.18)"), "{detail}");
    assert_eq!(report.summary.passed, 0, "{}", report.to_text());
}

#[test]
fn wrong_rank_table_fails() {
    let report = encoder("encode-wrong-ranks");
    let (verdict, detail) = verdict_of(&report, "canonical-fp8-l1-5x70");
    assert_eq!(verdict, Verdict::Fail);
    assert!(detail.contains("first difference exp_of_rank offset 0") && detail.contains("disagrees"), "{detail}");
    assert_eq!(report.summary.passed, 0, "{}", report.to_text());
}

#[test]
fn silent_and_hanging_encoders_fail() {
    let report = encoder("encode-silent");
    assert_eq!(verdict_of(&report, "valid-bf16-l0-noisy-slack").1, "the encoder exited 0 but wrote no field files");
    assert_eq!(report.summary.failed, 5);
    let (tmp, corpus) = common::mini_corpus();
    let report = run::encoder::run(&corpus, &broken("encode-hang", tmp.path(), 0.3));
    assert_eq!(report.summary.failed, 5);
    assert!(verdict_of(&report, "canonical-fp8-l0-9x24").1.contains("timed out after 0.3 s"));
}

#[test]
fn reference_decoder_passes_every_vector() {
    let report = decoder("decode-ok");
    assert!(report.all_passed(), "{}", report.to_text());
    assert_eq!(report.summary.passed, 9);
}

#[test]
fn decoder_without_validation_fails_on_invalid_vectors() {
    let report = decoder("decode-no-validation");
    assert_eq!(report.summary.failed, 4, "{}", report.to_text());
    let (verdict, detail) = verdict_of(&report, "invalid-raw-padding");
    assert_eq!(verdict, Verdict::Fail);
    assert_eq!(detail, "accepted a vector that breaks rule raw-padding (exited 0)");
}

#[test]
fn decoder_leaving_partial_output_fails() {
    let report = decoder("decode-partial");
    assert_eq!(report.summary.failed, 4, "{}", report.to_text());
    let (_, detail) = verdict_of(&report, "malformed-mode-code");
    assert_eq!(detail, "rejected (rule mode-code) but left OUT.raw behind (7 bytes)");
}
