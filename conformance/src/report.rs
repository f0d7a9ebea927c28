//! The outcome of a run: one verdict per vector, printed as text or written as JSON. The report
//! holds no timings or host details, so the same corpus and tool always give the same report.

use crate::manifest::Kind;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the JSON report layout; bump it when a field changes meaning.
pub const REPORT_VERSION: u32 = 1;

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Encoders: byte-identical with the canonical encoding in every specified byte (spec 14.1).
    Canonical,
    /// Encoders: not canonical, but valid and decoding to the input (spec 14.3).
    Valid,
    /// Decoders and the reference: every check held.
    Pass,
    /// A check failed, the tool misbehaved, or the vector could not be judged.
    Fail,
    /// Not applicable to this subcommand (e.g. invalid vectors for encoders).
    Skipped,
}

impl Verdict {
    pub fn passed(self) -> bool {
        matches!(self, Verdict::Canonical | Verdict::Valid | Verdict::Pass)
    }

    pub fn label(self) -> &'static str {
        match self {
            Verdict::Canonical => "CANONICAL",
            Verdict::Valid => "VALID",
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::Skipped => "SKIPPED",
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct VectorResult {
    pub id: String,
    /// None when the manifest entry could not be read.
    pub kind: Option<Kind>,
    pub verdict: Verdict,
    /// Why it failed, or what was noticed on the way (e.g. how a VALID encoding differs).
    pub detail: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    pub passed: u64,
    pub failed: u64,
    pub skipped: u64,
    /// Count per verdict name ("canonical", "valid", "pass", "fail", "skipped"); zero counts omitted.
    pub by_verdict: BTreeMap<String, u64>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Report {
    pub report_version: u32,
    /// "reference", "encoder", "decoder" (or a backend's name, e.g. "gpu").
    pub subcommand: String,
    /// The command under test (encoder/decoder), empty otherwise.
    pub command: Vec<String>,
    /// The corpus directory as given on the command line.
    pub corpus: String,
    pub format_version: u32,
    pub corpus_version: u32,
    pub summary: Summary,
    pub vectors: Vec<VectorResult>,
}

impl Report {
    pub fn new(subcommand: &str, command: Vec<String>, corpus: &crate::corpus::Corpus, vectors: Vec<VectorResult>) -> Report {
        let mut summary = Summary::default();
        for v in &vectors {
            match v.verdict {
                Verdict::Skipped => summary.skipped += 1,
                x if x.passed() => summary.passed += 1,
                _ => summary.failed += 1,
            }
            let name = serde_json::to_value(v.verdict).expect("verdicts serialize").as_str().unwrap_or("?").to_owned();
            *summary.by_verdict.entry(name).or_default() += 1;
        }
        Report {
            report_version: REPORT_VERSION,
            subcommand: subcommand.to_owned(),
            command,
            corpus: corpus.dir.display().to_string(),
            format_version: corpus.format_version,
            corpus_version: corpus.corpus_version,
            summary,
            vectors,
        }
    }

    /// Everything judged passed, and at least one vector was judged.
    pub fn all_passed(&self) -> bool {
        self.summary.failed == 0 && self.summary.passed > 0
    }

    /// The human-readable report: one line per vector (details indented under it), the counts per
    /// verdict, and last the line `N passed, N failed`.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let what = if self.command.is_empty() { String::new() } else { format!(" -- {}", self.command.join(" ")) };
        out += &format!("nwc-conform {}{what}: {} vectors from {}\n", self.subcommand, self.vectors.len(), self.corpus);
        for v in &self.vectors {
            out += &format!("{:<10} {}\n", v.verdict.label(), v.id);
            if let Some(detail) = &v.detail {
                for line in detail.lines() {
                    out += &format!("           {line}\n");
                }
            }
        }
        let counts: Vec<String> = self.summary.by_verdict.iter().map(|(k, n)| format!("{k} {n}")).collect();
        out += &format!("verdicts: {}\n", counts.join(", "));
        out += &format!("{} passed, {} failed\n", self.summary.passed, self.summary.failed);
        out
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("the report is plain data") + "\n"
    }
}
