//! `nwc-conform decoder -- CMD ARGS...`: lays each vector out as an encoding directory and runs
//! `CMD ARGS... DIR OUT.raw` (protocol in conformance/README.md). Canonical and valid vectors must
//! exit 0 and write exactly the input bytes; invalid and malformed ones must exit non-zero and
//! leave no OUT.raw behind (a decoder MUST NOT output anything from a file that breaks spec 13).

use super::{expected_decode, fail, judge_all, judge_decode, stored_fields, Judgement, Tool};
use crate::corpus::Corpus;
use crate::fields::write_dir;
use crate::manifest::Vector;
use crate::process::{self, Outcome};
use crate::report::{Report, Verdict};

pub fn run(corpus: &Corpus, tool: &Tool) -> Report {
    let results = judge_all(corpus, |i, v| judge(corpus, tool, i, v).unwrap_or_else(fail));
    Report::new("decoder", tool.command_line(), corpus, results)
}

fn judge(corpus: &Corpus, tool: &Tool, index: usize, v: &Vector) -> Result<Judgement, String> {
    let raw = stored_fields(corpus, v)?;
    let expected = expected_decode(corpus, v)?;
    let dir = tool.vector_dir(index, &v.id)?;
    let (enc_dir, out) = (dir.join("encoding"), dir.join("out.raw"));
    write_dir(&enc_dir, v.mode_code, &v.elem, v.layout, v.rows, v.cols, &raw).map_err(|e| format!("writing {}: {e}", enc_dir.display()))?;
    let mut args = tool.args.clone();
    args.extend([enc_dir.display().to_string(), out.display().to_string()]);
    let outcome = process::run(&tool.program, &args, &dir, tool.timeout);
    let written = std::fs::read(&out).ok();
    tool.done_with(&dir);

    Ok(judge_decode(v, expected, &outcome, written, |written| rejection(v, &outcome, written)))
}

/// An invalid or malformed vector: the decoder must refuse it cleanly.
fn rejection(v: &Vector, outcome: &Outcome, written: Option<Vec<u8>>) -> Judgement {
    let rule = v.expected_error.as_deref().unwrap_or("?");
    match outcome {
        Outcome::Exited { status, .. } if status.success() => fail(format!("accepted a vector that breaks rule {rule} (exited 0)")),
        Outcome::Exited { status, .. } if status.code().is_none() => {
            fail(format!("crashed instead of rejecting (rule {rule}): {}", outcome.describe()))
        }
        Outcome::Exited { .. } => match written {
            Some(bytes) => fail(format!("rejected (rule {rule}) but left OUT.raw behind ({} bytes)", bytes.len())),
            None => (Verdict::Pass, None),
        },
        _ => fail(format!("the decoder {} (expected a rejection, rule {rule})", outcome.describe())),
    }
}
