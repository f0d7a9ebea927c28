//! Vectors added with spec revision 2 (spec/errata.md): encodings that break two rules at once,
//! each named by the rule the total order of checks of spec 16.2 reports first, and encodings with
//! a required field absent (rule 13.3.1, field-missing). Kept apart from the single-rule
//! corruptions of `nwc_testkit::corrupt`, which work on an `EncodedMatrix` (that always has every
//! field).

use super::cases::Case;
use super::{kind_of, mode_tag, set_clauses, variants, Writer};
use crate::fields::{parse, to_raw, RawFields};
use crate::manifest::{Kind, Vector};
use nwc_reference::geometry::LANES;
use nwc_reference::{decode, DecodeError, EncodedMatrix, Encoding, Field, FormatError};
use nwc_testkit::corrupt;
use std::io;

/// One vector of this module: raw fields (a field may be absent), the rule spec 16.2 reports and
/// the other rules the fields break.
struct Multi {
    variant: String,
    what: String,
    raw: RawFields,
    rule: &'static str,
    also: Vec<&'static str>,
}

fn multi(variant: &str, what: String, m: &EncodedMatrix, rule: &'static str, also: Vec<&'static str>) -> Multi {
    Multi { variant: variant.to_owned(), what, raw: to_raw(m), rule, also }
}

/// The aligned end of the streams of `hdr` (spec 9.4) for block offsets chained through align8.
fn data_length(m: &EncodedMatrix) -> usize {
    let mut end = 0usize;
    for block in m.hdr.chunks(LANES) {
        end = end.div_ceil(8) * 8 + block.iter().map(|&w| 4 * usize::from(w)).sum::<usize>();
    }
    end.div_ceil(8) * 8 + 64
}

/// Two rules at once, for the order of spec 16.2 steps 3 and 4.
fn two_rules(m: &EncodedMatrix) -> Vec<Multi> {
    let mut out = Vec::new();
    let max = nwc_reference::Geometry::new(m.mode, m.shape).expect("a valid shape").max_lane_words();
    // Step 3: a header byte of block 0 raised by 2 (8 bytes, so the aligned end moves whatever the
    // old end was): bases[1] no longer matches (13.7) and `data` is 8 bytes short (13.4).
    if let Some(lane) = (0..LANES).find(|&l| m.hdr[l] + 2 <= max) {
        let mut c = m.clone();
        c.hdr[lane] += 2;
        assert!(c.data.len() < data_length(&c), "the raised header must also make data too short");
        let what = format!("hdr[{lane}] (block 0) raised by 2 words: bases[1] mismatches and data is too short");
        out.push(multi("hdr-raised-block0", what, &c, "offset-mismatch", vec!["data-too-short", "lane-overlong"]));
    }
    // Step 3: a mismatch at block 1 comes before a misalignment at block 2 (block order first).
    if m.bases.len() >= 3 {
        let mut c = m.clone();
        c.bases[1] += 8;
        c.bases[2] += 4;
        let what = "bases[1] moved by 8 (aligned, mismatched) and bases[2] by 4 (misaligned)".to_owned();
        out.push(multi("mismatch1-misaligned2", what, &c, "offset-mismatch", vec!["offset-misaligned"]));
    }
    // Step 3: every header byte is checked before bases[0], even one of the last block.
    let mut c = m.clone();
    *c.hdr.last_mut().expect("hdr has 32 bytes per block") = 0;
    c.bases[0] = 8;
    let what = "the last header byte set to 0 and bases[0] set to 8".to_owned();
    out.push(multi("hdr-last-zero-bases0", what, &c, "lane-length-range", vec!["offset-first-nonzero", "offset-mismatch"]));
    // Step 3 before step 4: bases[0] = 8 and a lut entry flipped.
    let mut c = m.clone();
    c.bases[0] = 8;
    c.lut[4095] ^= 1 << 31;
    let what = "bases[0] set to 8 and lut[4095] xor 0x80000000".to_owned();
    out.push(multi("bases0-lut", what, &c, "offset-first-nonzero", vec!["offset-mismatch", "lut-mismatch"]));
    // Step 2 before step 3: bases[0] = 8 and `low` one byte short.
    let mut c = m.clone();
    c.bases[0] = 8;
    c.low.pop();
    let what = "bases[0] set to 8 and low one byte short".to_owned();
    out.push(multi("bases0-low-short", what, &c, "field-size", vec!["offset-first-nonzero"]));
    // Step 4 in order: the lut before the scales; and step 4 before the lane streams (step 5).
    let padded = corrupt::stream_padding(m).into_iter().next().map(|c| c.fields.matrix().clone());
    if let Some(mut c) = padded {
        c.lut[4095] ^= 1 << 31;
        let mut also = vec!["stream-padding"];
        if let Some(scale) = c.scale.as_mut() {
            scale[0] = -1.0;
            also.push("scale-value");
        }
        let what = format!("lut[4095] xor 0x80000000, a stream padding bit set{}", if also.len() > 1 { ", scale[0] = -1" } else { "" });
        out.push(multi("lut-stream-padding", what, &c, "lut-mismatch", also));
    }
    out
}

/// Rule 13.3.1: each required field absent in turn, and an absent field beside a wrong size.
fn missing_fields(m: &EncodedMatrix) -> Vec<Multi> {
    let mut out: Vec<Multi> = Field::REQUIRED
        .into_iter()
        .map(|field| {
            let mut raw = to_raw(m);
            raw.remove(field.name());
            let what = format!("the required field `{field}` is absent (no {field}.bin)");
            Multi { variant: format!("no-{field}"), what, raw, rule: "field-missing", also: Vec::new() }
        })
        .collect();
    let mut raw = to_raw(m);
    raw.remove("low");
    raw.get_mut("bases").expect("bases present").truncate(4);
    let what = "`low` absent and `bases` 4 bytes long: presence is checked before sizes".to_owned();
    out.push(Multi { variant: "no-low-bases-short".into(), what, raw, rule: "field-missing", also: vec!["field-size"] });
    out
}

/// The vectors of this module for one base encoding.
pub fn vectors(w: &mut Writer, case: &Case, enc: &Encoding) -> io::Result<Vec<Vector>> {
    let m = &enc.matrix;
    let mut out = Vec::new();
    for c in two_rules(m).into_iter().chain(missing_fields(m)) {
        let kind = kind_of(c.rule);
        let kind_name = if kind == Kind::Malformed { "malformed" } else { "invalid" };
        let id = format!("{kind_name}-{}-{}-{}-{}", mode_tag(case.mode), case.name, c.rule, c.variant);
        // The generator's own check: the reference names exactly the rule spec 16.2 reports.
        let reported = parse(m.mode.code(), m.shape.rows, m.shape.cols, &c.raw).map_err(DecodeError::from).and_then(|p| decode(&p));
        match reported {
            Err(DecodeError::Format(e)) if e.rule() == c.rule => {}
            other => panic!("{id}: the reference reports {:?}", other.map(|_| ())),
        }
        let clause_of = |rule: &str| FormatError::RULES.iter().find(|(r, _)| *r == rule).expect("known rule").1;
        let about = format!("{}: {} breaks {} (spec {}) first by spec 16.2: {}", case.mode, case.shape, c.rule, clause_of(c.rule), c.what);
        let mut v = super::new_vector(id, kind, m.mode.code(), m.shape.rows, m.shape.cols, about);
        let mut clauses = vec!["13", clause_of(c.rule), "13.21", "13.22", "1.3.2", "16", "16.1", "16.2", "16.6", "12.1"];
        clauses.extend(c.also.iter().map(|r| clause_of(r)));
        clauses.extend(variants::rule_clauses(c.rule, m));
        set_clauses(&mut v, clauses);
        v.expected_error = Some(c.rule.to_owned());
        v.also_broken = c.also.iter().map(|r| (*r).to_owned()).collect();
        for (name, bytes) in &c.raw {
            let path = w.put(&mut v, name, bytes)?;
            v.fields.insert(name.clone(), path);
        }
        out.push(v);
    }
    Ok(out)
}
