//! Real tools through the protocol: the project's `nwc encode` / `nwc decode` and the 0.10.1
//! library's encoder (scripts/peer-encoder.sh) must pass the mini corpus.
//!
//! `nwc` lives in another crate, so Cargo gives no CARGO_BIN_EXE for it: set NWC_BIN, or build it
//! first (`cargo build -p nwc-cli`, same profile) so it sits next to this test's directory.

mod common;

use nwc_conformance::report::Report;
use nwc_conformance::run::{self, Scales, Tool};
use std::path::PathBuf;
use std::time::Duration;

fn nwc_binary() -> PathBuf {
    if let Ok(path) = std::env::var("NWC_BIN") {
        return PathBuf::from(path);
    }
    // target/<profile>/deps/this-test -> target/<profile>/nwc
    let exe = std::env::current_exe().unwrap();
    let path = exe.parent().and_then(|deps| deps.parent()).unwrap().join("nwc");
    assert!(path.is_file(), "{} not found: run `cargo build -p nwc-cli` first or set NWC_BIN", path.display());
    path
}

fn tool(program: PathBuf, args: &[&str], work: &std::path::Path) -> Tool {
    Tool {
        program: program.display().to_string(),
        args: args.iter().map(|s| s.to_string()).collect(),
        timeout: Duration::from_secs(120),
        work_dir: work.to_owned(),
        keep_work: false,
        scales: Scales::Passed,
    }
}

fn assert_all(report: &Report, verdict: &str, count: u64) {
    assert!(report.all_passed(), "{}", report.to_text());
    assert_eq!(report.summary.by_verdict.get(verdict), Some(&count), "{}", report.to_text());
}

#[test]
fn nwc_encode_is_canonical() {
    let (tmp, corpus) = common::mini_corpus();
    // FP8 vectors with scales are encoded with `--scales FILE`, and `scale.bin` is judged.
    let tool = tool(nwc_binary(), &["encode"], tmp.path());
    let report = run::encoder::run(&corpus, &tool);
    assert_all(&report, "canonical", 5);
}

#[test]
fn nwc_decode_passes_and_rejects() {
    let (tmp, corpus) = common::mini_corpus();
    let report = run::decoder::run(&corpus, &tool(nwc_binary(), &["decode"], tmp.path()));
    assert_all(&report, "pass", 9);
}

/// `nwc transcode` through the transcoder protocol (the whole committed corpus runs in
/// scripts/test-all.sh): BF16 vectors give the reference's canonical execution layout, FP8 and
/// invalid ones are refused.
#[test]
fn nwc_transcode_is_canonical() {
    let (tmp, corpus) = common::mini_corpus();
    let report = run::transcoder::run(&corpus, &tool(nwc_binary(), &["transcode"], tmp.path()));
    assert!(report.all_passed(), "{}", report.to_text());
    assert!(report.summary.by_verdict.get("canonical").copied().unwrap_or(0) >= 1, "{}", report.to_text());
    assert!(report.summary.by_verdict.get("pass").copied().unwrap_or(0) >= 1, "{}", report.to_text());
}

/// `nwc decode` on execution layouts through the exec-decoder protocol: the committed corpus's
/// execution-layout vectors decode, and every invalid or malformed one is refused naming its
/// first broken rule (spec 20.10).
#[test]
fn nwc_decode_judges_execution_layouts() {
    use nwc_conformance::corpus::{Corpus, Entry};
    use nwc_conformance::manifest::Representation;
    let tmp = tempfile::tempdir().unwrap();
    let mut corpus = Corpus::load(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../vectors")).unwrap();
    corpus.entries.retain(|e| matches!(e, Entry::Usable(v) if v.representation == Representation::Exec));
    let report = run::exec_decoder::run(&corpus, &tool(nwc_binary(), &["decode"], tmp.path()));
    assert!(report.all_passed(), "{}", report.to_text());
    assert!(report.summary.passed >= 60 && report.summary.skipped == 0, "{}", report.to_text());
}

#[test]
fn peer_encoder_is_canonical() {
    let (tmp, corpus) = common::mini_corpus();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/peer-encoder.sh");
    let report = run::encoder::run(&corpus, &tool(script, &[], tmp.path()));
    assert_all(&report, "canonical", 5);
}
