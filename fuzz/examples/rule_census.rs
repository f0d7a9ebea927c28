//! Which validity rules (spec 13) the fuzz corpora reach: replays every input of the
//! `decode_arbitrary` and `decode_mutated` corpora and counts the outcome of decoding it.
//! Run from fuzz/: `cargo run --release --example rule_census -- corpus-run corpus`.

use nwc_fuzz::{fuzz_limits, mutate, record};
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

fn main() {
    let roots: Vec<String> = std::env::args().skip(1).collect();
    for target in ["decode_arbitrary", "decode_mutated"] {
        let mut counts: BTreeMap<String, u64> = BTreeMap::new();
        let mut inputs = 0;
        for root in &roots {
            let Ok(dir) = std::fs::read_dir(Path::new(root).join(target)) else {
                continue;
            };
            for entry in dir.flatten() {
                let data = std::fs::read(entry.path()).expect("read corpus file");
                inputs += 1;
                let name = if target == "decode_arbitrary" {
                    let rec = record::read(&data);
                    outcome(rec.matrix.as_ref(), rec.mode_code)
                } else {
                    outcome(Some(&mutate::mutated_case(&data).1), 0)
                };
                *counts.entry(name).or_default() += 1;
            }
        }
        let reached = FormatError::RULES
            .iter()
            .filter(|(r, _)| counts.contains_key(*r))
            .count();
        println!(
            "{target}: {inputs} inputs, {reached} of {} rules reached",
            FormatError::RULES.len()
        );
        for (rule, clause) in FormatError::RULES {
            println!(
                "  {clause:>5} {rule:<22} {}",
                counts.get(rule).copied().unwrap_or(0)
            );
        }
        for other in ["limit", "accepted"] {
            println!(
                "  {:>5} {other:<22} {}",
                "",
                counts.get(other).copied().unwrap_or(0)
            );
        }
    }
}
