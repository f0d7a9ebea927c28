//! Stored fields as raw bytes, the file names of the command-line protocol, and turning raw
//! bytes into the reference's [`EncodedMatrix`] with the same named errors a decoder reports.

use nwc_reference::{ElemType, EncodedMatrix, Field, FormatError, Geometry, Mode, Shape};
use std::collections::BTreeMap;
use std::path::Path;

/// The stored fields of spec 12.1, in the order the protocol lists them. File `NAME.bin` holds
/// field NAME (little-endian, raw).
pub const STORED_FIELDS: [&str; 6] = ["data", "bases", "hdr", "lut", "low", "scale"];
/// The encoder's 16-byte rank table (spec 5.3); not a stored field.
pub const EXP_OF_RANK: &str = "exp_of_rank";
/// Metadata file of an encoding directory: `M`, `K`, `elem` (mode code), `type`, `layout`.
pub const SUMMARY: &str = "summary.json";

/// Field name -> bytes. Absent fields are simply missing from the map.
pub type RawFields = BTreeMap<String, Vec<u8>>;

pub fn file_name(field: &str) -> String {
    format!("{field}.bin")
}

fn field_of(name: &str) -> Field {
    match name {
        "bases" => Field::Bases,
        "lut" => Field::Lut,
        _ => Field::Scale,
    }
}

/// Splits a u32/f32 field into words; a length that is not a multiple of 4 is rule 13.3.
fn words(raw: &RawFields, name: &str, expected: impl Fn() -> String) -> Result<Vec<u32>, FormatError> {
    let bytes = raw.get(name).map(Vec::as_slice).unwrap_or_default();
    if bytes.len() % 4 != 0 {
        return Err(FormatError::FieldSize { field: field_of(name), got: bytes.len() as u64, expected: expected() });
    }
    Ok(bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

/// Builds the reference's view of an encoding from its metadata and raw fields. Rules 13.1
/// (mode-code), 13.2 (shape-range), 13.3.1 (field-missing: a required field's file is absent; an
/// absent `scale` is an unscaled FP8 encoding, spec 11.6) and the byte-level part of 13.3
/// (field-size) are checked here, in the order of spec 16.2 steps 1 and 2.
pub fn parse(mode_code: u32, rows: u64, cols: u64, raw: &RawFields) -> Result<EncodedMatrix, FormatError> {
    let mode = Mode::from_code(mode_code)?; // rule 13.1
    let shape = Shape::new(rows, cols);
    let g = Geometry::new(mode, shape)?; // rule 13.2
    if let Some(field) = Field::REQUIRED.into_iter().find(|f| !raw.contains_key(f.name())) {
        return Err(FormatError::FieldMissing { field }); // rule 13.3.1
    }
    let bytes = |name: &str| raw.get(name).cloned().unwrap_or_default();
    let bases = words(raw, "bases", || format!("{} (u32 x {} blocks)", 4 * g.blocks, g.blocks))?;
    let lut = words(raw, "lut", || "16384 (u32 x 4096)".to_owned())?;
    let scale = match raw.get("scale") {
        None => None,
        Some(_) => {
            let expected = || match mode.elem {
                ElemType::Fp8E4m3 => format!("{} (f32 x {} rows)", 4 * rows, rows),
                ElemType::Bf16 => "0 (BF16 matrices have no scales)".to_owned(),
            };
            Some(words(raw, "scale", expected)?.into_iter().map(f32::from_bits).collect())
        }
    };
    Ok(EncodedMatrix { mode, shape, data: bytes("data"), bases, hdr: bytes("hdr"), lut, low: bytes("low"), scale })
}

/// The stored fields of an encoding as raw little-endian bytes.
pub fn to_raw(m: &EncodedMatrix) -> RawFields {
    let le32 = |w: &[u32]| w.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let mut raw = RawFields::new();
    raw.insert("data".into(), m.data.clone());
    raw.insert("bases".into(), le32(&m.bases));
    raw.insert("hdr".into(), m.hdr.clone());
    raw.insert("lut".into(), le32(&m.lut));
    raw.insert("low".into(), m.low.clone());
    if let Some(s) = &m.scale {
        raw.insert("scale".into(), s.iter().flat_map(|x| x.to_le_bytes()).collect());
    }
    raw
}

/// Reads `NAME.bin` for every stored field and the rank table that exist in `dir`.
pub fn read_dir(dir: &Path) -> Result<RawFields, String> {
    let mut raw = RawFields::new();
    for name in STORED_FIELDS.iter().chain([&EXP_OF_RANK]) {
        let path = dir.join(file_name(name));
        match std::fs::read(&path) {
            Ok(bytes) => {
                raw.insert((*name).to_owned(), bytes);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("{}: {e}", path.display())),
        }
    }
    Ok(raw)
}

/// The `type` string of summary.json (as the 0.10.1 cross-check tool writes it).
pub fn type_name(elem: &str) -> &'static str {
    if elem == "fp8" {
        "fp8_e4m3"
    } else {
        "bf16"
    }
}

/// Writes an encoding directory: `NAME.bin` for each given field and summary.json.
pub fn write_dir(dir: &Path, mode_code: u32, elem: &str, layout: u32, rows: u64, cols: u64, raw: &RawFields) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (name, bytes) in raw {
        std::fs::write(dir.join(file_name(name)), bytes)?;
    }
    let summary = serde_json::json!({
        "M": rows, "K": cols, "elem": mode_code, "type": type_name(elem), "layout": layout,
    });
    std::fs::write(dir.join(SUMMARY), serde_json::to_string_pretty(&summary).expect("plain JSON") + "\n")
}

/// What an encoder's summary.json claims, where present: Err names the first key that disagrees
/// with the expected mode code and shape.
pub fn check_summary(dir: &Path, mode_code: u32, rows: u64, cols: u64) -> Result<(), String> {
    let path = dir.join(SUMMARY);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("{SUMMARY}: {e}")),
    };
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{SUMMARY}: not JSON: {e}"))?;
    for (key, want) in [("M", rows), ("K", cols), ("elem", u64::from(mode_code))] {
        if let Some(got) = v.get(key) {
            if got.as_u64() != Some(want) {
                return Err(format!("{SUMMARY}: `{key}` is {got}, expected {want}"));
            }
        }
    }
    Ok(())
}
