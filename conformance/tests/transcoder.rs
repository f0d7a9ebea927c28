//! `nwc-conform transcoder`: the protocol for execution-layout transcoders (spec 20.12), run on a
//! slice of the committed corpus: the reference transcoder (control) passes; a transcoder that
//! flips a bit, one that answers an invalid encoding with output, and one that accepts FP8 are
//! caught. (`nwc transcode` itself: tests/third_party.rs.)

use nwc_conformance::corpus::{Corpus, Entry};
use nwc_conformance::manifest::{Kind, Representation};
use nwc_conformance::report::Report;
use nwc_conformance::run::{self, Scales, Tool};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The committed corpus, cut to every execution-layout canonical vector, the format-10 vectors
/// they name (transcoded and refused), and the first few invalid and malformed format-10 ones.
fn corpus_slice() -> Corpus {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../vectors");
    let mut corpus = Corpus::load(&dir).expect("the committed corpus loads");
    let mut keep: std::collections::HashSet<String> = Default::default();
    let (mut invalid, mut malformed) = (0, 0);
    for e in &corpus.entries {
        let Entry::Usable(v) = e else { continue };
        match (v.representation, v.kind) {
            (Representation::Exec, Kind::Canonical) => {
                keep.insert(v.id.clone());
                keep.extend(v.transcoded_from.iter().cloned());
                keep.extend(v.transcode_refused_from.iter().cloned());
            }
            (Representation::Format10, Kind::Invalid) if invalid < 6 => {
                invalid += 1;
                keep.insert(v.id.clone());
            }
            (Representation::Format10, Kind::Malformed) if malformed < 6 => {
                malformed += 1;
                keep.insert(v.id.clone());
            }
            _ => {}
        }
    }
    corpus.entries.retain(|e| keep.contains(e.id()));
    corpus
}

fn tool(program: &str, args: &[&str], work: &Path) -> Tool {
    Tool {
        program: program.into(),
        args: args.iter().map(|s| s.to_string()).collect(),
        timeout: Duration::from_secs(120),
        work_dir: work.to_owned(),
        keep_work: false,
        scales: Scales::Passed,
    }
}

fn broken(mode: &str) -> Report {
    let tmp = tempfile::tempdir().unwrap();
    run::transcoder::run(&corpus_slice(), &tool(env!("CARGO_BIN_EXE_nwc-broken"), &[mode], tmp.path()))
}

fn count(report: &Report, verdict: &str) -> u64 {
    report.summary.by_verdict.get(verdict).copied().unwrap_or(0)
}

#[test]
fn the_reference_transcoder_passes() {
    let r = broken("transcode-ok");
    assert!(r.all_passed(), "{}", r.to_text());
    assert!(count(&r, "canonical") >= 10 && count(&r, "pass") >= 12, "{}", r.to_text());
}

#[test]
fn faulty_transcoders_are_caught() {
    for (mode, why) in [
        ("transcode-flip-bit", "exec_sm.bin byte 0"),
        ("transcode-no-validation", "accepted an encoding that breaks rule"),
        ("transcode-fp8", "accepted an FP8 encoding (spec 20.12.3)"),
    ] {
        let r = broken(mode);
        assert!(!r.all_passed(), "{mode}: {}", r.to_text());
        assert!(r.vectors.iter().any(|v| v.detail.as_deref().is_some_and(|d| d.contains(why))), "{mode}: {}", r.to_text());
    }
}
