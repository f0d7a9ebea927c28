//! `nwc-conform transcoder -- CMD ARGS...`: judges a command that builds the execution layout
//! (spec 20.12) as the encoder runner judges encoders (protocol in conformance/README.md):
//!
//! - format-10 canonical and valid BF16 vectors: `CMD ARGS... DIR OUTDIR` must write exactly the
//!   canonical execution layout of the matrix (spec 20.12.2): the fields of the execution-layout
//!   vector that lists it in `transcoded_from`, or else the reference's transcode → CANONICAL;
//! - format-10 FP8 vectors: the command must refuse them (spec 20.12.3) → PASS;
//! - format-10 invalid and malformed vectors: the command must refuse them and write no field
//!   file (spec 20.12.2: no output from an encoding that breaks a rule of chapter 13) → PASS;
//! - execution-layout canonical vectors with an input: `CMD ARGS... --rows M --cols K INPUT
//!   OUTDIR` (raw BF16, spec 20.12.1) must write exactly the vector's fields → CANONICAL;
//! - other execution-layout vectors (valid, invalid, malformed: for decoders): SKIPPED.

use super::{fail, input, judge_all_with_exec, stored_fields, Judgement, Tool};
use crate::corpus::{Corpus, Entry};
use crate::exec::{field_key, parse, read_exec_dir};
use crate::fields::{write_dir, RawFields};
use crate::manifest::{Kind, Vector};
use crate::process::{self, Outcome};
use crate::report::{Report, Verdict};
use nwc_reference::exec::{transcode, ExecMatrix};
use nwc_reference::{ElemType, Mode};
use std::collections::HashMap;

pub fn run(corpus: &Corpus, tool: &Tool) -> Report {
    // Format-10 vector id -> the execution-layout vector that says what it transcodes to.
    let mut target: HashMap<&str, &Vector> = HashMap::new();
    for entry in &corpus.entries {
        if let Entry::Usable(v) = entry {
            for id in &v.transcoded_from {
                target.insert(id.as_str(), v);
            }
        }
    }
    let results = judge_all_with_exec(
        corpus,
        |i, v| judge_format10(corpus, tool, i, v, target.get(v.id.as_str()).copied()).unwrap_or_else(fail),
        |i, v| match v.kind {
            Kind::Canonical if v.input.is_some() => judge_bf16(corpus, tool, i, v).unwrap_or_else(fail),
            _ => (Verdict::Skipped, None),
        },
    );
    Report::new("transcoder", tool.command_line(), corpus, results)
}

/// Compares what the command wrote with the expected layout, byte for byte (the execution layout
/// has no unspecified bytes, spec 20.3).
fn compare(expected: &ExecMatrix, outcome: &Outcome, got: Result<RawFields, String>) -> Judgement {
    if !outcome.success() {
        return fail(format!("the transcoder {}", outcome.describe()));
    }
    let got = match got {
        Ok(g) => g,
        Err(e) => return fail(e),
    };
    for (field, want) in expected.to_le_fields() {
        let key = field_key(field);
        let Some(have) = got.get(&key) else {
            return fail(format!("exited 0 but wrote no {key}.bin"));
        };
        if let Some(i) = (0..want.len().max(have.len())).find(|&i| want.get(i) != have.get(i)) {
            let show = |b: Option<&u8>| b.map_or("end of field".to_owned(), |b| format!("{b:#04x}"));
            return fail(format!("{key}.bin byte {i}: expected {}, got {}", show(want.get(i)), show(have.get(i))));
        }
    }
    (Verdict::Canonical, None)
}

/// The command must refuse: exit non-zero (not by a signal) and write no field file.
fn refusal(what: &str, outcome: &Outcome, got: Result<RawFields, String>) -> Judgement {
    match outcome {
        Outcome::Exited { status, .. } if status.success() => fail(format!("accepted {what} (exited 0)")),
        Outcome::Exited { status, .. } if status.code().is_none() => {
            fail(format!("crashed instead of refusing {what}: {}", outcome.describe()))
        }
        Outcome::Exited { .. } => match got {
            Ok(raw) if raw.is_empty() => (Verdict::Pass, None),
            Ok(raw) => {
                fail(format!("refused {what} but left {} behind", raw.keys().map(|k| format!("{k}.bin")).collect::<Vec<_>>().join(", ")))
            }
            Err(e) => fail(e),
        },
        _ => fail(format!("the transcoder {} (expected it to refuse {what})", outcome.describe())),
    }
}

fn judge_format10(corpus: &Corpus, tool: &Tool, index: usize, v: &Vector, target: Option<&Vector>) -> Result<Judgement, String> {
    let raw = stored_fields(corpus, v)?;
    let dir = tool.vector_dir(index, &v.id)?;
    let (enc_dir, out_dir) = (dir.join("encoding"), dir.join("out"));
    write_dir(&enc_dir, v.mode_code, &v.elem, v.layout, v.rows, v.cols, &raw).map_err(|e| format!("writing {}: {e}", enc_dir.display()))?;
    std::fs::create_dir_all(&out_dir).map_err(|e| format!("creating {}: {e}", out_dir.display()))?;
    let mut args = tool.args.clone();
    args.extend([enc_dir.display().to_string(), out_dir.display().to_string()]);
    let outcome = process::run(&tool.program, &args, &dir, tool.timeout);
    let got = read_exec_dir(&out_dir);
    tool.done_with(&dir);

    Ok(match v.kind {
        Kind::Invalid | Kind::Malformed => {
            let rule = v.expected_error.as_deref().ok_or("no expected_error in the manifest")?;
            refusal(&format!("an encoding that breaks rule {rule} (spec 20.12.2)"), &outcome, got)
        }
        Kind::Canonical | Kind::Valid => {
            let mode = Mode::from_code(v.mode_code).map_err(|e| format!("{:?} vector with {e}", v.kind))?;
            if mode.elem == ElemType::Fp8E4m3 {
                return Ok(refusal("an FP8 encoding (spec 20.12.3)", &outcome, got));
            }
            let expected = match target {
                Some(t) => parse(t.rows, t.cols, &stored_fields(corpus, t)?).map_err(|e| format!("{}: {e}", t.id))?,
                None => {
                    let m = crate::fields::parse(v.mode_code, v.rows, v.cols, &raw).map_err(|e| e.to_string())?;
                    transcode(&m).map_err(|e| format!("reference transcode: {e}"))?
                }
            };
            compare(&expected, &outcome, got)
        }
    })
}

fn judge_bf16(corpus: &Corpus, tool: &Tool, index: usize, v: &Vector) -> Result<Judgement, String> {
    let expected = parse(v.rows, v.cols, &stored_fields(corpus, v)?).map_err(|e| e.to_string())?;
    let dir = tool.vector_dir(index, &v.id)?;
    let (input_path, out_dir) = (dir.join("input.bf16"), dir.join("out"));
    std::fs::write(&input_path, input(corpus, v)?).map_err(|e| format!("writing {}: {e}", input_path.display()))?;
    std::fs::create_dir_all(&out_dir).map_err(|e| format!("creating {}: {e}", out_dir.display()))?;
    let mut args = tool.args.clone();
    args.extend(["--rows".into(), v.rows.to_string(), "--cols".into(), v.cols.to_string()]);
    args.extend([input_path.display().to_string(), out_dir.display().to_string()]);
    let outcome = process::run(&tool.program, &args, &dir, tool.timeout);
    let got = read_exec_dir(&out_dir);
    tool.done_with(&dir);
    Ok(compare(&expected, &outcome, got))
}
