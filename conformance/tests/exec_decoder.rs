//! `nwc-conform exec-decoder`: the protocol for execution-layout decoders (spec 20.9, 20.10,
//! 20.13), run on the committed corpus's execution-layout vectors: the reference's decoder
//! (control) passes; a decoder that answers an invalid layout with output, one that leaves a
//! partial output, one that names no rule and one that names a rule other than the first broken
//! one are caught. (`nwc decode` itself: tests/third_party.rs.)

use nwc_conformance::corpus::{Corpus, Entry};
use nwc_conformance::manifest::Representation;
use nwc_conformance::report::Report;
use nwc_conformance::run::{self, Scales, Tool};
use std::path::PathBuf;
use std::time::Duration;

/// The committed corpus's execution-layout vectors (the runner skips the others anyway).
fn exec_corpus() -> Corpus {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../vectors");
    let mut corpus = Corpus::load(&dir).expect("the committed corpus loads");
    corpus.entries.retain(|e| matches!(e, Entry::Usable(v) if v.representation == Representation::Exec));
    corpus
}

fn broken(mode: &str) -> Report {
    let tmp = tempfile::tempdir().unwrap();
    let tool = Tool {
        program: env!("CARGO_BIN_EXE_nwc-broken").into(),
        args: vec![mode.into()],
        timeout: Duration::from_secs(120),
        work_dir: tmp.path().to_owned(),
        keep_work: false,
        scales: Scales::Passed,
    };
    run::exec_decoder::run(&exec_corpus(), &tool)
}

#[test]
fn the_reference_decoder_passes() {
    let r = broken("exec-decode-ok");
    assert!(r.all_passed(), "{}", r.to_text());
    // Every kind is judged: canonical and valid decode, invalid and malformed are refused.
    assert!(r.summary.passed >= 60 && r.summary.skipped == 0, "{}", r.to_text());
}

#[test]
fn faulty_decoders_are_caught() {
    for (mode, why) in [
        ("exec-decode-no-validation", "accepted a layout that breaks rule"),
        ("exec-decode-partial", "but left OUT.raw behind"),
        ("exec-decode-unnamed", "without naming the broken rule"),
        ("exec-decode-wrong-rule", "where the first broken rule is"),
    ] {
        let r = broken(mode);
        assert!(!r.all_passed(), "{mode}: {}", r.to_text());
        let failed = r.vectors.iter().filter(|v| v.detail.as_deref().is_some_and(|d| d.contains(why))).count();
        // Each fault shows on every invalid and malformed vector (23 in the corpus), and only there.
        assert!(failed >= 20 && r.summary.failed as usize == failed, "{mode}: {failed} {}", r.to_text());
    }
}
