//! The directory form of one encoded matrix: one raw little-endian file per stored field (spec 12)
//! plus `summary.json`, with the names and meanings scripts/peer_encode.py (the 0.10.1 encoder run from Python) uses, so
//! directories written by either tool can be read by `nwc decode` and `nwc info`.
//!
//! Reading is careful about hostile input: the shape in summary.json is checked against the
//! format's limits and this process's [`Limits`] before any file is read, and every file's size is
//! compared with what the shape implies before it is loaded.

use crate::error::{field_file, CliError};
use nwc_reference::geometry::{LANES, LUT_ENTRIES, RAW_SLACK};
use nwc_reference::{EncodedMatrix, Field, FormatError, Geometry, Limits, Mode, Shape};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

pub const DATA: &str = "data.bin";
pub const BASES: &str = "bases.bin";
pub const HDR: &str = "hdr.bin";
pub const LUT: &str = "lut.bin";
pub const LOW: &str = "low.bin";
pub const SCALE: &str = "scale.bin";
pub const EXP_OF_RANK: &str = "exp_of_rank.bin";
pub const SUMMARY: &str = "summary.json";
/// Every file a directory may hold, in the order they are listed.
pub const ALL_FILES: [&str; 8] = [DATA, BASES, HDR, LUT, LOW, SCALE, EXP_OF_RANK, SUMMARY];

/// What `nwc decode` and `nwc info` need from summary.json.
#[derive(Clone, Debug)]
pub struct SummaryIn {
    pub mode: Mode,
    pub shape: Shape,
    pub geometry: Geometry,
    /// The whole document, for optional keys (sha256, escapes).
    pub json: Value,
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

fn u64_key(json: &Value, key: &str, path: &Path) -> Result<u64, CliError> {
    match json.get(key) {
        None => Err(CliError::invalid(path, format!("summary: key `{key}` is missing"))),
        Some(v) => v.as_u64().ok_or_else(|| CliError::invalid(path, format!("summary: `{key}` is {v}, expected a non-negative integer"))),
    }
}

/// Reads summary.json and checks shape and mode: rule 13.1 mode-code, 13.2 shape-range, then
/// this process's limits (nothing has been allocated by the declared sizes yet).
pub fn read_summary(dir: &Path, limits: &Limits) -> Result<SummaryIn, CliError> {
    let path = dir.join(SUMMARY);
    let text = fs::read(&path).map_err(|e| CliError::read(&path, e))?;
    let json: Value = serde_json::from_slice(&text).map_err(|e| CliError::invalid(&path, format!("summary: not valid JSON: {e}")))?;
    if !json.is_object() {
        return Err(CliError::invalid(&path, "summary: expected a JSON object"));
    }
    let rows = u64_key(&json, "M", &path)?;
    let cols = u64_key(&json, "K", &path)?;
    let code = u64_key(&json, "elem", &path)?;
    let code = u32::try_from(code).unwrap_or(u32::MAX); // anything that large is no mode code either
    let mode = Mode::from_code(code).map_err(|e| CliError::invalid(&path, e.to_string()))?;
    // `type` and `layout` repeat the mode code; if present they must agree with it.
    if let Some(t) = json.get("type") {
        let expected = type_name(mode);
        if t.as_str() != Some(expected) {
            return Err(CliError::invalid(&path, format!("summary: `type` is {t}, but mode code {code} means \"{expected}\"")));
        }
    }
    if let Some(l) = json.get("layout") {
        if l.as_u64() != Some(u64::from(mode.layout.number())) {
            let n = mode.layout.number();
            return Err(CliError::invalid(&path, format!("summary: `layout` is {l}, but mode code {code} means layout {n}")));
        }
    }
    let shape = Shape::new(rows, cols);
    let geometry = Geometry::new(mode, shape).map_err(|e| CliError::invalid(&path, e.to_string()))?;
    limits.check_shape(shape).map_err(|e| CliError::invalid(&path, e.to_string()))?;
    Ok(SummaryIn { mode, shape, geometry, json })
}

/// The element type as summary.json's `type` key spells it.
pub fn type_name(mode: Mode) -> &'static str {
    match mode.elem {
        nwc_reference::ElemType::Bf16 => "bf16",
        nwc_reference::ElemType::Fp8E4m3 => "fp8_e4m3",
    }
}

/// The byte size of a file, or None if it does not exist.
pub fn file_len(path: &Path) -> Result<Option<u64>, CliError> {
    match fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(Some(m.len())),
        Ok(_) => Err(CliError::invalid(path, "not a regular file")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(CliError::read(path, e)),
    }
}

/// The sizes a field may have, as the spec's rule 13.3 field-size states them (None: any size,
/// checked by other rules).
pub fn allowed_sizes(field: Field, g: &Geometry) -> Option<Vec<u64>> {
    let nb = g.blocks;
    match field {
        Field::Data => None,
        Field::Bases => Some(vec![4 * nb]),
        Field::Hdr => Some(vec![LANES as u64 * nb]),
        Field::Lut => Some(vec![4 * LUT_ENTRIES as u64]),
        Field::Low => Some(vec![g.n_low, g.n_low + RAW_SLACK]),
        Field::Scale => Some(match g.mode.elem {
            nwc_reference::ElemType::Fp8E4m3 => vec![4 * g.shape.rows],
            nwc_reference::ElemType::Bf16 => vec![0],
        }),
    }
}

/// Reads one field file after checking its size: rule 13.3 field-size for fixed-size fields,
/// the allocation limit for `data` (whose size the streams decide).
fn read_field(dir: &Path, field: Field, g: &Geometry, limits: &Limits) -> Result<Vec<u8>, CliError> {
    let path = dir.join(field_file(field));
    let len = file_len(&path)?.ok_or_else(|| missing(&path, field))?;
    match allowed_sizes(field, g) {
        Some(sizes) if !sizes.contains(&len) => {
            let expected = sizes.iter().map(u64::to_string).collect::<Vec<_>>().join(" or ");
            return Err(CliError::invalid(&path, FormatError::FieldSize { field, got: len, expected }.to_string()));
        }
        _ => limits.check_alloc(field_file(field), len).map_err(|e| CliError::invalid(&path, e.to_string()))?,
    }
    let bytes = fs::read(&path).map_err(|e| CliError::read(&path, e))?;
    if bytes.len() as u64 != len {
        return Err(CliError::invalid(&path, format!("changed size while being read ({len} then {} bytes)", bytes.len())));
    }
    Ok(bytes)
}

fn u32s(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// Rule 13.3.1 field-missing: the file of a required field is absent (an empty file is present).
fn missing(path: &Path, field: Field) -> CliError {
    CliError::invalid(path, FormatError::FieldMissing { field }.to_string())
}

/// Loads the stored fields of the matrix in `dir` (`scale.bin` only if present), in the order of
/// spec 16.2 step 2: the presence of every required field first (rule 13.3.1), then the sizes
/// (13.3) of `bases`, `hdr`, `lut`, `low` and `scale`; `data`, whose length the streams decide
/// (13.4), last.
pub fn load_matrix(dir: &Path, s: &SummaryIn, limits: &Limits) -> Result<EncodedMatrix, CliError> {
    let g = &s.geometry;
    for field in Field::REQUIRED {
        let path = dir.join(field_file(field));
        if file_len(&path)?.is_none() {
            return Err(missing(&path, field));
        }
    }
    let bases = u32s(&read_field(dir, Field::Bases, g, limits)?);
    let hdr = read_field(dir, Field::Hdr, g, limits)?;
    let lut = u32s(&read_field(dir, Field::Lut, g, limits)?);
    let low = read_field(dir, Field::Low, g, limits)?;
    let scale = match file_len(&dir.join(SCALE))? {
        None => None,
        Some(_) => {
            let bytes = read_field(dir, Field::Scale, g, limits)?;
            Some(u32s(&bytes).into_iter().map(f32::from_bits).collect())
        }
    };
    let data = read_field(dir, Field::Data, g, limits)?;
    Ok(EncodedMatrix { mode: s.mode, shape: s.shape, bases, hdr, lut, low, data, scale })
}

/// The canonical path of an existing file, or of a file about to be created in an existing folder.
pub fn resolved(path: &Path) -> Option<PathBuf> {
    if let Ok(p) = fs::canonicalize(path) {
        return Some(p);
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    Some(fs::canonicalize(parent).ok()?.join(path.file_name()?))
}

/// Writes `bytes` to `path` through a temporary file in the same folder and a rename, so `path`
/// either keeps its old content or gets the complete new one, never a partial file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path.file_name().ok_or_else(|| CliError::usage(format!("{} names no file", path.display())))?;
    let tmp = dir.join(format!(".{}.nwc-partial-{}", name.to_string_lossy(), std::process::id()));
    let result = (|| {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = fs::remove_file(&tmp);
        CliError::write(path, e)
    })
}
