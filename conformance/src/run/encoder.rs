//! `nwc-conform encoder -- CMD ARGS...`: runs a third-party encoder on every canonical and valid
//! vector's input and judges its output (protocol in conformance/README.md):
//! CANONICAL: every specified byte (spec 14.1) and the rank table equal the canonical encoding;
//! VALID: not canonical, but it passes every rule of spec 13 and decodes to the input (14.3);
//! FAIL otherwise, with the first difference and the validation error.

use super::{decode_raw, fail, first_byte_difference, input, judge_all, stored_fields, Judgement, Scales, Tool};
use crate::compare::{first_difference, Difference};
use crate::corpus::Corpus;
use crate::fields::{check_summary, read_dir, to_raw, RawFields, EXP_OF_RANK, STORED_FIELDS};
use crate::manifest::{Kind, Vector};
use crate::process;
use crate::report::{Report, Verdict};
use nwc_reference::{encode_le_bytes, Geometry, Mode, Shape};

pub fn run(corpus: &Corpus, tool: &Tool) -> Report {
    let results = judge_all(corpus, |i, v| match v.kind {
        Kind::Invalid | Kind::Malformed => (Verdict::Skipped, None),
        Kind::Canonical | Kind::Valid => judge(corpus, tool, i, v).unwrap_or_else(fail),
    });
    Report::new("encoder", tool.command_line(), corpus, results)
}

/// The canonical encoding to compare with: the vector's own fields for canonical vectors, the
/// reference encoder's output for valid ones (their stored fields are deliberately not canonical).
/// With `stored_scales`, a valid vector's expected `scale` is the one it carries (the encoder is
/// given it); without, the reference's own (an encoder that takes no scales: python/src/conform.rs).
pub fn canonical(corpus: &Corpus, v: &Vector, input: &[u8], stored_scales: bool) -> Result<RawFields, String> {
    if v.kind == Kind::Canonical {
        let mut raw = stored_fields(corpus, v)?;
        let path = v.fields.get(EXP_OF_RANK).ok_or("canonical vector without exp_of_rank")?;
        raw.insert(EXP_OF_RANK.into(), corpus.read(v, path)?);
        return Ok(raw);
    }
    let mode = Mode::from_code(v.mode_code).map_err(|e| e.to_string())?;
    let enc = encode_le_bytes(mode, Shape::new(v.rows, v.cols), input).map_err(|e| format!("reference encoder: {e}"))?;
    let mut raw = to_raw(&enc.matrix);
    raw.insert(EXP_OF_RANK.into(), enc.exp_of_rank.to_vec());
    // The scales are part of the matrix the vector carries (spec 11.4, 14.3), not of its coding.
    if stored_scales {
        if let Some(scale) = stored_fields(corpus, v)?.remove("scale") {
            raw.insert("scale".into(), scale);
        }
    }
    Ok(raw)
}

fn judge(corpus: &Corpus, tool: &Tool, index: usize, v: &Vector) -> Result<Judgement, String> {
    let input = input(corpus, v)?;
    let mode = Mode::from_code(v.mode_code).map_err(|e| format!("{:?} vector with {e}", v.kind))?;
    let g = Geometry::new(mode, Shape::new(v.rows, v.cols)).map_err(|e| format!("{:?} vector with {e}", v.kind))?;
    let expected = canonical(corpus, v, &input, true)?;

    let dir = tool.vector_dir(index, &v.id)?;
    let (input_path, out_dir) = (dir.join("input.bin"), dir.join("out"));
    std::fs::write(&input_path, &input).map_err(|e| format!("writing {}: {e}", input_path.display()))?;
    std::fs::create_dir_all(&out_dir).map_err(|e| format!("creating {}: {e}", out_dir.display()))?;
    let mut args = tool.args.clone();
    args.extend([
        "--elem".into(),
        mode.elem.name().into(),
        "--layout".into(),
        mode.layout.number().to_string(),
        "--rows".into(),
        v.rows.to_string(),
        "--cols".into(),
        v.cols.to_string(),
    ]);
    // Spec 11.4: FP8 bytes that come with scales are encoded with them, so `scale` is judged.
    let scales = match (tool.scales, expected.get("scale")) {
        (Scales::Passed, Some(scale)) => {
            let path = dir.join("scales.bin");
            std::fs::write(&path, scale).map_err(|e| format!("writing {}: {e}", path.display()))?;
            args.extend(["--scales".into(), path.display().to_string()]);
            true
        }
        _ => false,
    };
    args.extend([input_path.display().to_string(), out_dir.display().to_string()]);
    let outcome = process::run(&tool.program, &args, &dir, tool.timeout);
    let got = read_dir(&out_dir);
    let summary = check_summary(&out_dir, v.mode_code, v.rows, v.cols);
    tool.done_with(&dir);

    if !outcome.success() {
        return Ok(fail(format!("the encoder {}", outcome.describe())));
    }
    let got = got?;
    if !STORED_FIELDS.iter().any(|f| got.contains_key(*f)) {
        return Ok(fail("the encoder exited 0 but wrote no field files"));
    }
    summary?;
    if scales && !got.contains_key("scale") {
        return Ok(fail("given --scales, the encoder wrote no scale.bin (spec 11.4: the scales are stored as given)"));
    }
    Ok(verdict(&g, v, &expected, &got, &input))
}

/// Compares and validates one encoder output (the fields a command wrote, or a Python callable
/// returned: python/src/conform.rs judges those with this too).
pub fn verdict(g: &Geometry, v: &Vector, expected: &RawFields, got: &RawFields, input: &[u8]) -> Judgement {
    if got.contains_key("scale") && !expected.contains_key("scale") {
        return fail("wrote scale.bin, but this input has no scales");
    }
    // Spec 14.3, 14.4: a valid encoding carries the matrix's scales exactly; no other choice.
    if let (Some(want), Some(have)) = (expected.get("scale"), got.get("scale")) {
        if want != have {
            let diff = first_byte_difference(want, have).unwrap_or_default();
            return fail(format!("scale.bin is not the scales given (spec 11.4, 14.4): {diff}"));
        }
    }
    let mut compared = vec!["data", "bases", "hdr", "lut", "low"];
    if got.contains_key("scale") {
        compared.push("scale");
    }
    compared.push(EXP_OF_RANK);
    let diff: Option<Difference> = match first_difference(g, expected, got, &compared) {
        Ok(d) => d,
        Err(e) => return fail(format!("cannot judge: {e}")),
    };
    let decoded = match decode_raw(v.mode_code, v.rows, v.cols, got) {
        Ok((_, decoded)) => first_byte_difference(input, &decoded.to_le_bytes())
            .map(|d| format!("decodes to a different matrix: {d}"))
            .or_else(|| got.get(EXP_OF_RANK).and_then(|ranks| rank_table_problem(ranks, &decoded))),
        Err(e) => Some(format!("validation: {e}")),
    };
    match (diff, decoded) {
        (None, None) => (Verdict::Canonical, None),
        (Some(d), None) => (Verdict::Valid, Some(format!("not canonical: first difference {d}"))),
        (d, Some(problem)) => {
            let first = d.map(|d| format!("first difference {d}\n")).unwrap_or_default();
            fail(format!("{first}{problem}"))
        }
    }
}

/// A written exp_of_rank.bin must be the ranking the encoding itself uses: ranks 0..14 as its
/// lookup table gives them back (spec 10.6), rank 15 a symbol not among them (BF16, spec 5.3) or 0 (FP8).
fn rank_table_problem(ranks: &[u8], decoded: &nwc_reference::DecodedMatrix) -> Option<String> {
    if ranks.len() != 16 {
        return Some(format!("exp_of_rank.bin has {} bytes, expected 16", ranks.len()));
    }
    if ranks[..15] != decoded.exp_of_rank {
        return Some(format!(
            "exp_of_rank.bin {:?} disagrees with the ranks {:?} its own lut gives (spec 10.6)",
            &ranks[..15],
            decoded.exp_of_rank
        ));
    }
    let last_ok = match decoded.mode.elem {
        nwc_reference::ElemType::Bf16 => !ranks[..15].contains(&ranks[15]),
        nwc_reference::ElemType::Fp8E4m3 => ranks[15] == 0,
    };
    (!last_ok).then(|| format!("exp_of_rank.bin: rank 15 is {}, which cannot follow ranks 0..14 (spec 5.3)", ranks[15]))
}
