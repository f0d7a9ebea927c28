//! Issue 2: invalid inputs of every validity rule of spec 13 are rejected with their named errors.
//!
//! For each rule, in every mode where it can be broken, the stored fields from
//! `nwc_testkit::corrupt` must make the reference decoder report exactly that rule (or, where the
//! format forces a second rule, one of the two), with the clause number in the message.

use nwc_reference::{encode, DecodeError, Encoding, FormatError, Mode, Shape, Weights};
use nwc_testkit::corrupt::{self, Corruption};
use nwc_testkit::gen::{Dist, Generator};
use std::collections::BTreeSet;

/// Shapes chosen so that every rule has something to break: several blocks with odd-sized lanes
/// (gaps), fillers in rows and columns, pad columns, a short last layout-1 column block.
const SHAPES: [(u64, u64); 3] = [(13, 600), (1, 1), (20, 1100)];

fn encodings(mode: Mode) -> Vec<(String, Encoding)> {
    let mut gen = Generator::new(0xC0FFEE);
    SHAPES
        .iter()
        .map(|&(rows, cols)| {
            let shape = Shape::new(rows, cols);
            let enc = match mode.elem {
                nwc_reference::ElemType::Bf16 => {
                    // Heavy tails give escapes, so streams have codes of every length.
                    let w = gen.bf16(Dist::HeavyTail, shape);
                    encode(mode, shape, Weights::Bf16(&w))
                }
                nwc_reference::ElemType::Fp8E4m3 => {
                    let b = gen.fp8(Dist::Fp8RandomBytes, shape);
                    let mut e = encode(mode, shape, Weights::Fp8(&b)).expect("valid input");
                    e.matrix.scale = Some((0..rows).map(|r| 0.5 + r as f32).collect());
                    Ok(e)
                }
            }
            .expect("valid input");
            (format!("{mode} {shape}"), enc)
        })
        .collect()
}

fn rule_of(c: &Corruption) -> Result<FormatError, String> {
    match c.fields.check() {
        Ok(()) => Err("accepted".into()),
        Err(DecodeError::Format(e)) => Ok(e),
        Err(e) => Err(format!("not a format error: {e}")),
    }
}

/// Rules that cannot occur in a mode (FP8 value rules in BF16 and the BF16 escape rule in FP8).
fn applies(rule: &str, mode: Mode) -> bool {
    let fp8 = mode.elem == nwc_reference::ElemType::Fp8E4m3;
    match rule {
        "fp8-rank" | "fp8-nibble" | "fp8-nan" | "scale-value" => fp8,
        "bf16-escape" => !fp8,
        // An `EncodedMatrix` always has its required fields: readers of files report 13.3.1, and
        // the conformance corpus covers it (vectors `malformed-*-field-missing-*`).
        "field-missing" => false,
        _ => true,
    }
}

#[test]
fn canonical_inputs_are_valid() {
    for mode in Mode::ALL {
        for (name, enc) in encodings(mode) {
            nwc_reference::validate(&enc.matrix).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
}

#[test]
fn every_rule_is_rejected_with_its_name_in_every_mode_it_applies_to() {
    let clause_of = |rule: &str| FormatError::RULES.iter().find(|(r, _)| *r == rule).expect("known rule").1;
    let mut failures = Vec::new();
    for mode in Mode::ALL {
        let mut covered = BTreeSet::new();
        for (name, enc) in encodings(mode) {
            for c in corrupt::all(&enc) {
                let e = match rule_of(&c) {
                    Ok(e) => e,
                    Err(why) => {
                        failures.push(format!("{name} {} {}: {why}", c.rule, c.variant));
                        continue;
                    }
                };
                let allowed = std::iter::once(c.rule).chain(c.also_broken.iter().copied()).collect::<Vec<_>>();
                if e.rule() != c.rule {
                    failures.push(format!("{name} {} {}: reported {} ({e})", c.rule, c.variant, e.rule()));
                    continue;
                }
                assert!(allowed.contains(&e.rule()));
                let clause = format!("(spec {})", clause_of(c.rule));
                if !e.to_string().contains(&clause) || e.clause() != clause_of(c.rule) {
                    failures.push(format!("{name} {}: message lacks {clause}: {e}", c.rule));
                }
                covered.insert(c.rule);
            }
        }
        for (rule, _) in FormatError::RULES {
            if applies(rule, mode) && !covered.contains(rule) {
                failures.push(format!("{mode}: no corruption breaks {rule}"));
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn corruptions_change_the_fields() {
    // A corruption that leaves the fields as they were would test nothing.
    for mode in Mode::ALL {
        for (name, enc) in encodings(mode) {
            for c in corrupt::all(&enc) {
                let same_code = c.fields.mode_code() == enc.matrix.mode.code();
                assert!(!(same_code && *c.fields.matrix() == enc.matrix), "{name} {} {} changes nothing", c.rule, c.variant);
            }
        }
    }
}

#[test]
fn recoding_under_another_ranking_keeps_the_matrix() {
    // The surgery tools themselves: a re-ranked, partly escaped encoding decodes to the same
    // weights (spec 14.4) and is not the canonical one.
    for mode in Mode::ALL {
        for (name, enc) in encodings(mode) {
            let before = nwc_reference::decode(&enc.matrix).expect("valid");
            let mut ranks = enc.exp_of_rank;
            match mode.elem {
                nwc_reference::ElemType::Bf16 => ranks[..15].reverse(),
                nwc_reference::ElemType::Fp8E4m3 => ranks[..10].reverse(),
            }
            let recoded = corrupt::recode(&enc.matrix, &ranks, &|i| i % 5 == 0);
            let after = nwc_reference::decode(&recoded).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(after.elements, before.elements, "{name}");
            assert_ne!(recoded.lut, enc.matrix.lut, "{name}");
        }
    }
}
