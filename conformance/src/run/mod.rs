//! The runners (`reference`, `encoder`, `decoder`, `transcoder`, `exec-decoder`) and what they share: reading a vector's
//! files and turning each judgement into a [`VectorResult`].

pub mod decoder;
pub mod encoder;
pub mod exec_decoder;
pub mod reference;
pub mod transcoder;

use crate::corpus::{Corpus, Entry};
use crate::fields::{RawFields, EXP_OF_RANK};
use crate::manifest::{Kind, Representation, Vector};
use crate::report::{VectorResult, Verdict};
use std::path::PathBuf;
use std::time::Duration;

/// A judgement: the verdict and an optional explanation.
pub type Judgement = (Verdict, Option<String>);

pub fn fail(detail: impl Into<String>) -> Judgement {
    (Verdict::Fail, Some(detail.into()))
}

/// Whether an encoder under test is given a vector's FP8 scales (`--scales FILE`, protocol in
/// conformance/README.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Scales {
    /// A vector with a `scale` field is encoded with `--scales FILE`, and the output's `scale.bin`
    /// is judged like every specified byte (spec 11.4, 14.1).
    #[default]
    Passed,
    /// For encoders that do not take `--scales` (`nwc-conform encoder --without-scales`): no
    /// scales are passed and `scale` is judged only where the encoder writes one.
    Withheld,
}

/// The command under test and how to run it.
#[derive(Clone, Debug)]
pub struct Tool {
    pub program: String,
    pub args: Vec<String>,
    pub timeout: Duration,
    /// Where per-vector inputs and outputs go; kept afterwards only if `keep_work`.
    pub work_dir: PathBuf,
    pub keep_work: bool,
    /// Encoder runs: whether FP8 scales are passed.
    pub scales: Scales,
}

impl Tool {
    pub fn command_line(&self) -> Vec<String> {
        std::iter::once(self.program.clone()).chain(self.args.iter().cloned()).collect()
    }

    /// A fresh, empty directory for one vector.
    fn vector_dir(&self, index: usize, id: &str) -> Result<PathBuf, String> {
        let safe: String = id.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
        let dir = self.work_dir.join(format!("{index:04}-{safe}"));
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(|e| format!("clearing {}: {e}", dir.display()))?;
        }
        std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        Ok(dir)
    }

    fn done_with(&self, dir: &std::path::Path) {
        if !self.keep_work {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// The vector's stored fields (checked against their SHA-256), without the rank table.
pub fn stored_fields(corpus: &Corpus, v: &Vector) -> Result<RawFields, String> {
    v.fields.iter().filter(|(name, _)| name.as_str() != EXP_OF_RANK).map(|(name, path)| Ok((name.clone(), corpus.read(v, path)?))).collect()
}

/// The vector's input matrix bytes; every caller needs one.
pub fn input(corpus: &Corpus, v: &Vector) -> Result<Vec<u8>, String> {
    let path = v.input.as_ref().ok_or_else(|| format!("{:?} vector without an input", v.kind))?;
    corpus.read(v, path)
}

/// What a decoder must do with a vector: write the input (canonical, valid) or refuse it
/// (invalid, malformed: None, after checking that the manifest names the broken rule).
pub fn expected_decode(corpus: &Corpus, v: &Vector) -> Result<Option<Vec<u8>>, String> {
    match v.kind {
        Kind::Canonical | Kind::Valid => Ok(Some(input(corpus, v)?)),
        Kind::Invalid | Kind::Malformed => {
            v.expected_error.as_deref().ok_or("no expected_error in the manifest")?;
            Ok(None)
        }
    }
}

/// Judges a decoder's run: the input written bit for bit where one is expected, else
/// `rejection(written)`.
pub fn judge_decode(
    v: &Vector,
    expected: Option<Vec<u8>>,
    outcome: &crate::process::Outcome,
    written: Option<Vec<u8>>,
    rejection: impl FnOnce(Option<Vec<u8>>) -> Judgement,
) -> Judgement {
    match (expected, written) {
        (Some(input), Some(got)) if outcome.success() => match first_byte_difference(&input, &got) {
            None => (Verdict::Pass, None),
            Some(d) => fail(format!("OUT.raw differs from the input: {d}")),
        },
        (Some(_), None) if outcome.success() => fail("exited 0 but wrote no OUT.raw"),
        (Some(_), _) => fail(format!("the decoder {} on a {:?} vector", outcome.describe(), v.kind)),
        (None, written) => rejection(written),
    }
}

/// Offset of the first byte where a decoded matrix differs from the input, if any.
pub fn first_byte_difference(expected: &[u8], got: &[u8]) -> Option<String> {
    if let Some(i) = expected.iter().zip(got).position(|(a, b)| a != b) {
        return Some(format!("byte {i}: expected {:#04x}, got {:#04x}", expected[i], got[i]));
    }
    (expected.len() != got.len()).then(|| format!("{} bytes, expected {}", got.len(), expected.len()))
}

/// Judges every entry; an unreadable entry is a failure. Execution-layout vectors (spec 20) are
/// SKIPPED: the format-10 runners and protocols have no execution layout.
pub fn judge_all(corpus: &Corpus, judge: impl FnMut(usize, &Vector) -> Judgement) -> Vec<VectorResult> {
    let skip = |_: usize, _: &Vector| (Verdict::Skipped, None);
    judge_all_with_exec(corpus, judge, skip)
}

/// [`judge_all`] with a second judge for the execution-layout vectors (`crate::exec`).
pub fn judge_all_with_exec(
    corpus: &Corpus,
    mut judge: impl FnMut(usize, &Vector) -> Judgement,
    mut judge_exec: impl FnMut(usize, &Vector) -> Judgement,
) -> Vec<VectorResult> {
    corpus
        .entries
        .iter()
        .enumerate()
        .map(|(i, entry)| match entry {
            Entry::Usable(v) => {
                let (verdict, detail) = match v.representation {
                    Representation::Format10 => judge(i, v),
                    Representation::Exec => judge_exec(i, v),
                };
                VectorResult { id: v.id.clone(), kind: Some(v.kind), verdict, detail }
            }
            Entry::Unusable { id, reason } => {
                VectorResult { id: id.clone(), kind: None, verdict: Verdict::Fail, detail: Some(reason.clone()) }
            }
        })
        .collect()
}

/// Parses and fully validates raw fields with the reference decoder (spec 13, 15.1).
pub fn decode_raw(
    mode_code: u32,
    rows: u64,
    cols: u64,
    raw: &RawFields,
) -> Result<(nwc_reference::EncodedMatrix, nwc_reference::DecodedMatrix), nwc_reference::DecodeError> {
    let m = crate::fields::parse(mode_code, rows, cols, raw)?;
    let decoded = nwc_reference::decode(&m)?;
    Ok((m, decoded))
}
