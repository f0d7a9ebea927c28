//! Judging execution-layout vectors (spec 20). Canonical vectors: the reference encoder reproduces
//! every field (the layout has no unspecified bytes) and the fields are canonical (spec 20.11);
//! valid vectors: valid, not canonical; both decode to the input, transcode from every format-10
//! vector named in `transcoded_from` to exactly their fields (and refuse the FP8 ones named in
//! `transcode_refused_from`), and give the expected dequant,
//! gather and matvec outputs on the backend. Invalid and malformed vectors: the reference rejects
//! them with exactly `expected_error` (spec 20.10 fixes which rule comes first).

use super::backend::{check_exec_outputs, ExecBackend};
use crate::backend::MatvecClass;
use crate::corpus::{Corpus, Entry};
use crate::manifest::{Kind, Representation, Vector};
use crate::report::{Report, Verdict};
use crate::run::{fail, input, judge_all_with_exec, stored_fields};
use nwc_reference::exec::{check_canonical, decode_exec, encode_exec, ExecDecodeError, ExecMatrix};
use nwc_reference::Shape;

/// Runs the execution-layout vectors of the corpus on `backend`; format-10 vectors are SKIPPED.
pub fn run_exec_backend(corpus: &Corpus, backend: &dyn ExecBackend, class: MatvecClass) -> Report {
    let results = judge_all_with_exec(
        corpus,
        |_, _| (Verdict::Skipped, None),
        |_, v| match judge_exec(corpus, v, backend, class) {
            Ok(()) => (Verdict::Pass, None),
            Err(detail) => fail(detail),
        },
    );
    Report::new(&format!("{} exec", backend.name()), Vec::new(), corpus, results)
}

/// Judges one execution-layout vector (see the module documentation).
pub fn judge_exec(corpus: &Corpus, v: &Vector, backend: &dyn ExecBackend, class: MatvecClass) -> Result<(), String> {
    let raw = stored_fields(corpus, v)?;
    let parsed = super::parse(v.rows, v.cols, &raw).map_err(ExecDecodeError::from);
    match v.kind {
        Kind::Invalid | Kind::Malformed => {
            let rule = v.expected_error.as_deref().ok_or("no expected_error in the manifest")?;
            match parsed.and_then(|m| decode_exec(&m)) {
                Err(ExecDecodeError::Format(e)) if e.rule() == rule => Ok(()),
                Err(ExecDecodeError::Format(e)) => {
                    Err(format!("rejected with {} (expected {rule}, first in the order of spec 20.10): {e}", e.rule()))
                }
                Err(e) => Err(format!("rejected for a resource limit, not rule {rule}: {e}")),
                Ok(_) => Err(format!("accepted, expected rule {rule}")),
            }
        }
        Kind::Canonical | Kind::Valid => {
            let m = parsed.map_err(|e| format!("the fields are rejected: {e}"))?;
            let words: Vec<u16> = input(corpus, v)?.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
            let d = decode_exec(&m).map_err(|e| format!("the fields are rejected: {e}"))?;
            if let Some(i) = (0..words.len().max(d.words.len())).find(|&i| words.get(i) != d.words.get(i)) {
                return Err(format!("decodes to a different matrix: weight {i}: expected {:?}, got {:?}", words.get(i), d.words.get(i)));
            }
            let non_canonical = check_canonical(&m).map_err(|e| e.to_string())?;
            match (v.kind, non_canonical) {
                (Kind::Canonical, Some(n)) => {
                    return Err(format!("not canonical: row {} has base {}, the canonical base is {}", n.row, n.base, n.canonical))
                }
                (Kind::Canonical, None) => {
                    let ours = encode_exec(Shape::new(v.rows, v.cols), &words).map_err(|e| e.to_string())?;
                    if let Some(d) = first_exec_difference(&m, &ours) {
                        return Err(format!("the reference encoder differs: {d}"));
                    }
                }
                (_, None) => return Err("a valid (non-canonical) vector whose fields are canonical".into()),
                _ => {}
            }
            for id in &v.transcoded_from {
                let source = format10_source(corpus, id)?;
                let got = backend.transcode(&source).map_err(|e| format!("transcoding {id}: {e}"))?;
                let canonical = encode_exec(Shape::new(v.rows, v.cols), &words).map_err(|e| e.to_string())?;
                if let Some(d) = first_exec_difference(&canonical, &got) {
                    return Err(format!("{} transcodes {id} differently: {d}", backend.name()));
                }
            }
            for id in &v.transcode_refused_from {
                let source = format10_source(corpus, id)?;
                if backend.transcode(&source).is_ok() {
                    return Err(format!("{} transcodes {id}, an FP8 matrix (spec 20.12.3: refused)", backend.name()));
                }
            }
            check_exec_outputs(backend, corpus, v, &m, class).map(|_| ())
        }
    }
}

/// The format-10 encoding of vector `id`, validated by the reference.
fn format10_source(corpus: &Corpus, id: &str) -> Result<nwc_reference::EncodedMatrix, String> {
    let v = corpus
        .entries
        .iter()
        .find_map(|e| match e {
            Entry::Usable(v) if v.id == id && v.representation == Representation::Format10 => Some(v),
            _ => None,
        })
        .ok_or_else(|| format!("transcoded_from names {id}, which is not a usable format-10 vector of the corpus"))?;
    let raw = stored_fields(corpus, v)?;
    let (m, _) = crate::run::decode_raw(v.mode_code, v.rows, v.cols, &raw).map_err(|e| format!("{id} is rejected: {e}"))?;
    Ok(m)
}

/// The first field (spec 20.3 order) and byte offset where two execution layouts differ.
pub fn first_exec_difference(expected: &ExecMatrix, got: &ExecMatrix) -> Option<String> {
    if expected.shape != got.shape {
        return Some(format!("shape {}, expected {}", got.shape, expected.shape));
    }
    for ((field, want), (_, have)) in expected.to_le_fields().into_iter().zip(got.to_le_fields()) {
        if let Some(i) = (0..want.len().max(have.len())).find(|&i| want.get(i) != have.get(i)) {
            let show = |b: Option<&u8>| b.map_or("end of field".to_owned(), |b| format!("{b:#04x}"));
            return Some(format!("{field} byte {i}: expected {}, got {}", show(want.get(i)), show(have.get(i))));
        }
    }
    None
}
