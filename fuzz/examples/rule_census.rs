//! Which validity rules the fuzz corpora reach: replays every input of the `decode_arbitrary` and
//! `decode_mutated` corpora (spec 13) and of `exec_mutated` (spec 20.9) and counts the outcome of
//! decoding it.
//! Run from fuzz/: `cargo run --release --example rule_census -- corpus-run corpus`.

use nwc_fuzz::{exec_mutate, fuzz_limits, mutate, record};
use nwc_reference::exec::{ExecDecodeError, ExecFormatError};
use nwc_reference::{decode_with_limits, DecodeError, FormatError, Mode};
use std::collections::BTreeMap;
use std::path::Path;

fn outcome(m: Option<&nwc_reference::EncodedMatrix>, mode_code: u32) -> String {
    match m {
        None => Mode::from_code(mode_code)
            .err()
            .map_or("?".into(), |e| e.rule().to_string()),
        Some(m) => match decode_with_limits(m, &fuzz_limits()) {
            Ok(_) => "accepted".into(),
            Err(DecodeError::Format(e)) => e.rule().into(),
            Err(DecodeError::Limit(_)) => "limit".into(),
            Err(e) => format!("{e}"),
        },
    }
}

/// The outcome of reading one `exec_mutated` input: the rule it breaks, "limit" or "accepted".
fn exec_outcome(data: &[u8]) -> String {
    let case = exec_mutate::exec_case(data);
    let (shape, f) = (case.damaged_shape, &case.damaged);
    match exec_mutate::read(shape, f) {
        Ok(_) => "accepted".into(),
        Err(ExecDecodeError::Format(e)) => e.rule().into(),
        Err(ExecDecodeError::Limit(_)) => "limit".into(),
        Err(e) => format!("{e}"),
    }
}

/// Every input file of `target` under the corpus roots.
fn inputs(roots: &[String], target: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for root in roots {
        let Ok(dir) = std::fs::read_dir(Path::new(root).join(target)) else {
            continue;
        };
        for entry in dir.flatten() {
            out.push(std::fs::read(entry.path()).expect("read corpus file"));
        }
    }
    out
}

/// Prints how many inputs ended in each rule of `rules` (name, clause), in a limit, or accepted.
fn report(target: &str, outcomes: &[String], rules: &[(&str, &str)]) {
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    for o in outcomes {
        *counts.entry(o).or_default() += 1;
    }
    let reached = rules.iter().filter(|(r, _)| counts.contains_key(r)).count();
    println!(
        "{target}: {} inputs, {reached} of {} rules reached",
        outcomes.len(),
        rules.len()
    );
    let names = rules
        .iter()
        .copied()
        .chain([("limit", ""), ("accepted", "")]);
    for (name, clause) in names {
        let n = counts.get(name).copied().unwrap_or(0);
        println!("  {clause:>7} {name:<22} {n}");
    }
}

fn main() {
    let roots: Vec<String> = std::env::args().skip(1).collect();
    let arbitrary: Vec<String> = inputs(&roots, "decode_arbitrary")
        .iter()
        .map(|data| {
            let rec = record::read(data);
            outcome(rec.matrix.as_ref(), rec.mode_code)
        })
        .collect();
    report("decode_arbitrary", &arbitrary, &FormatError::RULES);
    let mutated: Vec<String> = inputs(&roots, "decode_mutated")
        .iter()
        .map(|data| outcome(Some(&mutate::mutated_case(data).1), 0))
        .collect();
    report("decode_mutated", &mutated, &FormatError::RULES);
    let exec: Vec<String> = inputs(&roots, "exec_mutated")
        .iter()
        .map(|data| exec_outcome(data))
        .collect();
    report("exec_mutated", &exec, &ExecFormatError::RULES);
}
