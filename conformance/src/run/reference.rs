//! `nwc-conform reference`: the reference codec against every vector. Canonical vectors: the
//! reference encoder reproduces their specified bytes (spec 14.1) and rank table, and their
//! fields decode to the input; valid vectors decode to the input; both give the expected
//! dequant, gather and matvec outputs. Invalid and malformed vectors are rejected with exactly
//! the expected rule (spec 13).

use super::{decode_raw, fail, first_byte_difference, input, judge_all, stored_fields};
use crate::backend::{check_outputs, check_outputs_class, Backend, MatvecClass};
use crate::compare::first_difference;
use crate::corpus::Corpus;
use crate::fields::{to_raw, EXP_OF_RANK};
use crate::manifest::{Kind, Vector};
use crate::report::{Report, Verdict};
use nwc_reference::{encode_le_bytes, quantize_fp8, DecodeError, Geometry, Mode, Shape};

pub fn run(corpus: &Corpus, backend: &dyn Backend) -> Report {
    let results = judge_all(corpus, |_, v| match judge(corpus, v, backend) {
        Ok(()) => (Verdict::Pass, None),
        Err(detail) => fail(detail),
    });
    Report::new("reference", Vec::new(), corpus, results)
}

/// Checks of spec 15 on a valid encoding, run on any backend (the `gpu` subcommand reuses it).
pub fn run_backend(corpus: &Corpus, backend: &dyn Backend) -> Report {
    run_backend_class(corpus, backend, MatvecClass::Exact)
}

/// [`run_backend`] for a backend of the given matvec class (spec 19 for `Bounded`).
pub fn run_backend_class(corpus: &Corpus, backend: &dyn Backend, class: MatvecClass) -> Report {
    let results = judge_all(corpus, |_, v| {
        if !matches!(v.kind, Kind::Canonical | Kind::Valid) {
            return (Verdict::Skipped, None);
        }
        let checked = stored_fields(corpus, v).and_then(|raw| {
            let (m, _) = decode_raw(v.mode_code, v.rows, v.cols, &raw).map_err(|e| format!("reference rejects it: {e}"))?;
            check_outputs_class(backend, corpus, v, &m, class)
        });
        match checked {
            Ok(_) => (Verdict::Pass, None),
            Err(detail) => fail(detail),
        }
    });
    Report::new(backend.name(), Vec::new(), corpus, results)
}

fn judge(corpus: &Corpus, v: &Vector, backend: &dyn Backend) -> Result<(), String> {
    let raw = stored_fields(corpus, v)?;
    match v.kind {
        Kind::Canonical | Kind::Valid => {
            let input = input(corpus, v)?;
            if v.kind == Kind::Canonical {
                check_reencode(corpus, v, &raw, &input)?;
            }
            if let Some(source) = &v.quantized_from {
                check_quantization(corpus, v, &raw, &input, source)?;
            }
            let (m, decoded) = decode_raw(v.mode_code, v.rows, v.cols, &raw).map_err(|e| format!("decode rejects the fields: {e}"))?;
            if let Some(diff) = first_byte_difference(&input, &decoded.to_le_bytes()) {
                return Err(format!("decodes to a different matrix: {diff}"));
            }
            check_outputs(backend, corpus, v, &m).map(|_| ())
        }
        Kind::Invalid | Kind::Malformed => {
            let rule = v.expected_error.as_deref().ok_or("no expected_error in the manifest")?;
            // Spec 13.21: where one corruption necessarily breaks several rules, any of them is right.
            let allowed = |r: &str| r == rule || v.also_broken.iter().any(|a| a == r);
            match decode_raw(v.mode_code, v.rows, v.cols, &raw) {
                Err(DecodeError::Format(e)) if allowed(e.rule()) => Ok(()),
                Err(DecodeError::Format(e)) => Err(format!("rejected with {} (expected {rule}): {e}", e.rule())),
                Err(e) => Err(format!("rejected for a resource limit, not rule {rule}: {e}")),
                Ok(_) => Err(format!("accepted, expected rule {rule}")),
            }
        }
    }
}

/// The reference encoder must reproduce a canonical vector (spec 14.2, 14.5).
fn check_reencode(corpus: &Corpus, v: &Vector, golden: &crate::fields::RawFields, input: &[u8]) -> Result<(), String> {
    let mode = Mode::from_code(v.mode_code).map_err(|e| format!("canonical vector with {e}"))?;
    let shape = Shape::new(v.rows, v.cols);
    let g = Geometry::new(mode, shape).map_err(|e| format!("canonical vector with {e}"))?;
    let enc = encode_le_bytes(mode, shape, input).map_err(|e| format!("the reference cannot encode the input: {e}"))?;
    let ours = to_raw(&enc.matrix);
    if let Some(diff) = first_difference(&g, golden, &ours, &["data", "bases", "hdr", "lut", "low"])? {
        return Err(format!("reference encoding differs: {diff}"));
    }
    let rank_path = v.fields.get(EXP_OF_RANK).ok_or("canonical vector without exp_of_rank")?;
    let ranks = corpus.read(v, rank_path)?;
    if ranks != enc.exp_of_rank {
        return Err(format!("exp_of_rank: expected {ranks:?}, the reference ranks {:?}", enc.exp_of_rank));
    }
    match v.stream_end {
        Some(end) if end == enc.stream_end => Ok(()),
        Some(end) => Err(format!("stream_end: the manifest says {end}, the reference ends at {}", enc.stream_end)),
        None => Err("canonical vector without stream_end".into()),
    }
}

/// Spec 11.2: quantizing the BF16 source gives exactly the vector's fp8 input and scales.
fn check_quantization(corpus: &Corpus, v: &Vector, golden: &crate::fields::RawFields, input: &[u8], source: &str) -> Result<(), String> {
    let words: Vec<u16> = corpus.read(v, source)?.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
    let (fp8, scales) = quantize_fp8(&words, Shape::new(v.rows, v.cols)).map_err(|e| format!("quantize_fp8: {e}"))?;
    if let Some(d) = first_byte_difference(input, &fp8) {
        return Err(format!("quantizing quantized_from differs from the input: {d}"));
    }
    let ours: Vec<u8> = scales.iter().flat_map(|s| s.to_le_bytes()).collect();
    match golden.get("scale") {
        Some(stored) if *stored == ours => Ok(()),
        Some(stored) => Err(format!("scale: {}", first_byte_difference(stored, &ours).unwrap_or_default())),
        None => Err("quantized vector without a scale field".into()),
    }
}
