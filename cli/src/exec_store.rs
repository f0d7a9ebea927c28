//! The directory form of one execution layout (spec 20), as `nwc transcode` writes it and the
//! corpus stores it: one raw little-endian file per field of spec 20.3 (`exec_sm.bin`,
//! `exec_codes.bin`, `exec_base.bin`, `exec_esc_start.bin`, `exec_esc.bin`) and `summary.json`,
//! whose keys `M` and `K` give the shape. `nwc decode` and `nwc info` read it.
//!
//! Reading follows spec 20.10: the shape from the metadata alone (rule 20.9.1), this process's
//! limits, then each field's size from the file system before any file is read (20.9.2, in the
//! order `sm`, `codes`, `base`, `esc_start`); the contents are judged by the reference
//! (`decode_exec_with_limits`), which checks rules 20.9.3 - 20.9.10 in their order. A missing
//! field file has length 0 (spec 20.9.2).

use crate::error::CliError;
use crate::store::{file_len, SUMMARY};
use nwc_reference::exec::{decode_exec_with_limits, ExecDecodeError, ExecDecoded, ExecField, ExecFormatError, ExecGeometry, ExecMatrix};
use nwc_reference::{Limits, Shape};
use serde_json::Value;
use std::fs;
use std::path::Path;

/// The file that holds a field: `exec_` + its spec name + `.bin`, as in the corpus.
pub fn exec_file(field: ExecField) -> String {
    format!("exec_{}.bin", field.name())
}

/// Whether `dir` holds an execution layout rather than a format-10 matrix: its summary.json says
/// `"representation": "exec"`; or, where summary.json is missing or not a JSON object, the
/// directory has an `exec_sm.bin` (so the error names the execution layout's files).
pub fn is_exec_dir(dir: &Path) -> bool {
    let summary = fs::read(dir.join(SUMMARY)).ok().and_then(|text| serde_json::from_slice::<Value>(&text).ok()).filter(Value::is_object);
    match summary {
        Some(json) => json.get("representation").and_then(Value::as_str) == Some("exec"),
        None => dir.join(exec_file(ExecField::Sm)).is_file(),
    }
}

/// The shape in summary.json (keys `M` and `K`); `representation`, where present, must be `exec`.
fn read_shape(dir: &Path) -> Result<Shape, CliError> {
    let path = dir.join(SUMMARY);
    let text = fs::read(&path).map_err(|e| CliError::read(&path, e))?;
    let json: Value = serde_json::from_slice(&text).map_err(|e| CliError::invalid(&path, format!("summary: not valid JSON: {e}")))?;
    if let Some(r) = json.get("representation") {
        if r.as_str() != Some("exec") {
            return Err(CliError::invalid(&path, format!("summary: `representation` is {r}, expected \"exec\"")));
        }
    }
    // Spec 20.9.1: metadata that does not give M and K as non-negative integers breaks the rule.
    let rule = ExecFormatError::RULES[0];
    let key = |k: &str| match json.get(k) {
        None => Err(CliError::invalid(&path, format!("{} (spec {}): summary: key `{k}` is missing", rule.0, rule.1))),
        Some(v) => v.as_u64().ok_or_else(|| {
            CliError::invalid(&path, format!("{} (spec {}): summary: `{k}` is {v}, expected a non-negative integer", rule.0, rule.1))
        }),
    };
    Ok(Shape::new(key("M")?, key("K")?))
}

/// A broken rule of spec 20.9, located: the rule and clause (in the message), the file of the
/// field concerned and the byte offset in it (spec 20.10's SHOULD).
pub fn exec_error(dir: &Path, err: ExecDecodeError) -> CliError {
    match err {
        ExecDecodeError::Format(f) => {
            let file = f.field().map_or(SUMMARY.to_owned(), exec_file);
            let at = match (f.field(), f.offset()) {
                // For a field size the "offset" is the length found; the message says it.
                (Some(_), Some(offset)) if !matches!(f, ExecFormatError::FieldSize { .. }) => format!(", at byte {offset}"),
                _ => String::new(),
            };
            CliError::invalid(dir.join(file), format!("{f}{at}"))
        }
        ExecDecodeError::Limit(l) => CliError::invalid(dir.join(SUMMARY), l.to_string()),
        other => CliError::invalid(dir, other.to_string()),
    }
}

/// Reads one field file whose size the checks before allowed; a missing file is empty.
fn read_field(dir: &Path, field: ExecField, len: u64) -> Result<Vec<u8>, CliError> {
    let path = dir.join(exec_file(field));
    if len == 0 {
        return Ok(Vec::new());
    }
    let bytes = fs::read(&path).map_err(|e| CliError::read(&path, e))?;
    if bytes.len() as u64 != len {
        return Err(CliError::invalid(&path, format!("changed size while being read ({len} then {} bytes)", bytes.len())));
    }
    Ok(bytes)
}

/// Loads the execution layout in `dir` (spec 20.10 steps 1 and 2 here; the contents unjudged).
pub fn load_exec(dir: &Path, limits: &Limits) -> Result<ExecMatrix, CliError> {
    let shape = read_shape(dir)?;
    let g = ExecGeometry::new(shape).map_err(|e| exec_error(dir, e.into()))?; // 20.9.1
                                                                              // 20.10 step 1: the resource limits right after the shape, before any field is looked at.
    limits.check_shape(shape).map_err(|e| exec_error(dir, e.into()))?;
    limits.check_alloc("decoded weights", 2 * shape.weights()).map_err(|e| exec_error(dir, e.into()))?;
    let mut lengths = [0u64; 5];
    for (i, field) in ExecField::ALL.into_iter().enumerate() {
        let path = dir.join(exec_file(field));
        let got = file_len(&path)?.unwrap_or(0);
        match g.field_bytes(field) {
            // 20.9.2, the fields in the order of spec 20.3.
            Some(expected) if got != expected => return Err(exec_error(dir, ExecFormatError::FieldSize { field, got, expected }.into())),
            Some(_) => {}
            // `esc`: its length is rule 20.9.8's, judged with the contents; here only the limit.
            None => limits.check_alloc("esc", got).map_err(|e| CliError::invalid(&path, e.to_string()))?,
        }
        lengths[i] = got;
    }
    let [sm, codes, base, esc_start, esc] = lengths;
    let esc_start = read_field(dir, ExecField::EscStart, esc_start)?;
    Ok(ExecMatrix {
        shape,
        sm: read_field(dir, ExecField::Sm, sm)?,
        codes: read_field(dir, ExecField::Codes, codes)?,
        base: read_field(dir, ExecField::Base, base)?,
        esc_start: esc_start.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
        esc: read_field(dir, ExecField::Esc, esc)?,
    })
}

/// Reads, validates (every rule of spec 20.9 in the order of 20.10) and decodes (spec 20.13) the
/// execution layout in `dir`.
pub fn load_and_decode_exec(dir: &Path, limits: &Limits) -> Result<(ExecMatrix, ExecDecoded), CliError> {
    let m = load_exec(dir, limits)?;
    let decoded = decode_exec_with_limits(&m, limits).map_err(|e| exec_error(dir, e))?;
    Ok((m, decoded))
}
