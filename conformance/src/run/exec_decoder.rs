//! `nwc-conform exec-decoder -- CMD ARGS...`: judges a command that validates and decodes an
//! execution layout (spec 20.9, 20.10, 20.13), as the decoder runner judges format-10 decoders
//! (protocol in conformance/README.md). Each execution-layout vector is laid out as a directory
//! (its `exec_*.bin` files and a summary.json with `representation`, `M`, `K`) and the command
//! runs as `CMD ARGS... DIR OUT.raw`:
//!
//! - canonical and valid vectors: exit 0 and OUT.raw = the input matrix (M·K BF16 words, LE);
//! - invalid and malformed vectors: a non-zero exit (not a signal), no OUT.raw, and the rule
//!   named: the first rule name of spec 20.9 that its stderr mentions must be the vector's
//!   `expected_error` (spec 20.10: the order is total and a decoder MUST report the first broken
//!   rule);
//! - format-10 vectors: SKIPPED.

use super::{expected_decode, fail, judge_all_with_exec, judge_decode, stored_fields, Judgement, Tool};
use crate::corpus::Corpus;
use crate::exec::field_key;
use crate::fields::{RawFields, SUMMARY};
use crate::manifest::Vector;
use crate::process::{self, Outcome};
use crate::report::{Report, Verdict};
use nwc_reference::exec::{ExecField, ExecFormatError};
use std::path::Path;

pub fn run(corpus: &Corpus, tool: &Tool) -> Report {
    let skip = |_: usize, _: &Vector| (Verdict::Skipped, None);
    let results = judge_all_with_exec(corpus, skip, |i, v| judge(corpus, tool, i, v).unwrap_or_else(fail));
    Report::new("exec-decoder", tool.command_line(), corpus, results)
}

/// Writes the directory a decoder reads: the vector's field files (a malformed vector may lack
/// some) and summary.json with the shape as the manifest gives it (possibly out of range).
fn write_exec_dir(dir: &Path, rows: u64, cols: u64, raw: &RawFields) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for field in ExecField::ALL {
        let key = field_key(field);
        if let Some(bytes) = raw.get(&key) {
            std::fs::write(dir.join(format!("{key}.bin")), bytes)?;
        }
    }
    let summary = serde_json::json!({ "representation": "exec", "M": rows, "K": cols });
    std::fs::write(dir.join(SUMMARY), serde_json::to_string_pretty(&summary).expect("plain JSON") + "\n")
}

/// The rules of spec 20.9 that `text` names, in the order they appear (a name counts only as a
/// whole word: not inside a longer name).
pub fn rules_named(text: &str) -> Vec<&'static str> {
    let is_name_char = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    let mut found: Vec<(usize, &'static str)> = Vec::new();
    for (rule, _) in ExecFormatError::RULES {
        for (at, _) in text.match_indices(rule) {
            let before = text[..at].chars().next_back();
            let after = text[at + rule.len()..].chars().next();
            if !before.is_some_and(is_name_char) && !after.is_some_and(is_name_char) {
                found.push((at, rule));
            }
        }
    }
    found.sort();
    found.into_iter().map(|(_, rule)| rule).collect()
}

fn judge(corpus: &Corpus, tool: &Tool, index: usize, v: &Vector) -> Result<Judgement, String> {
    let raw = stored_fields(corpus, v)?;
    let expected = expected_decode(corpus, v)?;
    let dir = tool.vector_dir(index, &v.id)?;
    let (exec_dir, out) = (dir.join("exec"), dir.join("out.raw"));
    write_exec_dir(&exec_dir, v.rows, v.cols, &raw).map_err(|e| format!("writing {}: {e}", exec_dir.display()))?;
    let mut args = tool.args.clone();
    args.extend([exec_dir.display().to_string(), out.display().to_string()]);
    let outcome = process::run(&tool.program, &args, &dir, tool.timeout);
    let written = std::fs::read(&out).ok();
    let stderr = String::from_utf8_lossy(&std::fs::read(dir.join("stderr.log")).unwrap_or_default()).into_owned();
    tool.done_with(&dir);

    Ok(judge_decode(v, expected, &outcome, written, |written| rejection(v, &outcome, written, &stderr)))
}

/// An invalid or malformed vector: refused cleanly, naming the first broken rule.
fn rejection(v: &Vector, outcome: &Outcome, written: Option<Vec<u8>>, stderr: &str) -> Judgement {
    let rule = v.expected_error.as_deref().unwrap_or("?");
    match outcome {
        Outcome::Exited { status, .. } if status.success() => fail(format!("accepted a layout that breaks rule {rule} (exited 0)")),
        Outcome::Exited { status, .. } if status.code().is_none() => {
            fail(format!("crashed instead of rejecting (rule {rule}): {}", outcome.describe()))
        }
        Outcome::Exited { .. } => match (written, rules_named(stderr).first()) {
            (Some(bytes), _) => fail(format!("rejected (rule {rule}) but left OUT.raw behind ({} bytes)", bytes.len())),
            (None, Some(&named)) if named == rule => (Verdict::Pass, None),
            (None, Some(named)) => fail(format!("rejected, but named rule {named} where the first broken rule is {rule} (spec 20.10)")),
            (None, None) => fail(format!("rejected without naming the broken rule {rule} (spec 20.10: a rejection MUST name it)")),
        },
        _ => fail(format!("the decoder {} (expected a rejection, rule {rule})", outcome.describe())),
    }
}

#[cfg(test)]
mod tests {
    use super::rules_named;

    #[test]
    fn rule_names_are_whole_words_in_order() {
        assert_eq!(rules_named("error: exec-esc-count (spec 20.9.9) after exec-base-range"), ["exec-esc-count", "exec-base-range"]);
        assert!(rules_named("exec-esc-counter, xexec-base-range, exec-base-range2").is_empty());
        assert_eq!(rules_named("exec-esc-start-first"), ["exec-esc-start-first"]);
        assert!(rules_named("no rule here").is_empty());
    }
}
