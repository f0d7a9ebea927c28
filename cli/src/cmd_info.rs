//! `nwc info`: what a directory holds, and whether it is valid. The output is stable (no paths,
//! no timings) so that it can be compared across runs and snapshot-tested.

use crate::error::{decode_error, CliError};
use crate::store::{self, file_len, load_matrix, read_summary};
use nwc_reference::element::bf16_symbol;
use nwc_reference::geometry::LANES;
use nwc_reference::{decode_with_limits, DecodedMatrix, ElemType, Elements, EncodedMatrix, Limits};
use sha2::{Digest, Sha256};
use std::fmt::Write;
use std::path::Path;

/// The stored fields, in the order they are listed (spec 12).
const FIELD_FILES: [&str; 6] = [store::DATA, store::BASES, store::HDR, store::LUT, store::LOW, store::SCALE];

/// Spec 9.4: where the last block's lane streams end.
fn stream_end(m: &EncodedMatrix) -> u64 {
    let last = m.bases.len() - 1; // Geometry guarantees at least one block
    let words: u64 = m.hdr[last * LANES..(last + 1) * LANES].iter().map(|&w| u64::from(w)).sum();
    u64::from(m.bases[last]) + 4 * words
}

/// Spec 6.2: BF16 weights whose exponent has no rank among 0..14 are escaped.
fn escapes(d: &DecodedMatrix) -> u64 {
    match &d.elements {
        Elements::Bf16(words) => words.iter().filter(|&&w| !d.exp_of_rank.contains(&bf16_symbol(w))).count() as u64,
        Elements::Fp8(_) => 0,
    }
}

/// Compares the files `names` with the digests summary.json records (peer_encode.py, `nwc encode`
/// and `nwc transcode` write them). Hashing streams the files, so their size does not matter.
pub fn sha256_line<S: AsRef<str>>(dir: &Path, json: &serde_json::Value, names: &[S]) -> Result<String, CliError> {
    let Some(recorded) = json.get("sha256").and_then(|v| v.as_object()) else {
        return Ok("not recorded in summary.json".into());
    };
    let (mut checked, mut differ) = (0, Vec::new());
    for name in names.iter().map(AsRef::as_ref) {
        let Some(want) = recorded.get(name) else {
            continue;
        };
        let path = dir.join(name);
        checked += 1;
        let digest = match std::fs::File::open(&path) {
            Ok(mut f) => {
                let mut hasher = Sha256::new();
                std::io::copy(&mut f, &mut hasher).map_err(|e| CliError::read(&path, e))?;
                hasher.finalize().iter().map(|b| format!("{b:02x}")).collect::<String>()
            }
            Err(_) => String::new(), // missing: differs
        };
        if want.as_str() != Some(digest.as_str()) {
            differ.push(name);
        }
    }
    Ok(if differ.is_empty() {
        format!("all {checked} recorded files match summary.json")
    } else {
        format!("differs from summary.json for {}", differ.join(", "))
    })
}

/// One line per file of `names` (its size, or `absent`; names padded to `width`), each recorded
/// in `fields` (bytes or null), then the total line; returns the total.
pub fn field_sizes<S: AsRef<str>>(
    dir: &Path,
    names: &[S],
    width: usize,
    w: &mut String,
    fields: &mut serde_json::Map<String, serde_json::Value>,
) -> Result<u64, CliError> {
    let mut total = 0u64;
    for name in names.iter().map(AsRef::as_ref) {
        let len = file_len(&dir.join(name))?;
        total += len.unwrap_or(0);
        fields.insert(name.into(), len.into());
        let _ = match len {
            Some(l) => writeln!(w, "{name:<width$}{l:>10} bytes"),
            None => writeln!(w, "{name:<width$}{:>10}", "absent"),
        };
    }
    let _ = writeln!(w, "{:<width$}{total:>10} bytes", "total");
    Ok(total)
}

/// `json`: one JSON object instead of the text (keys documented in the README, stable).
pub fn run(dir: &Path, json: bool) -> Result<(), CliError> {
    if nwc_cli::exec_store::is_exec_dir(dir) {
        return crate::cmd_info_exec::run(dir, json);
    }
    let limits = Limits::default();
    let s = read_summary(dir, &limits)?;
    let (g, n) = (&s.geometry, s.shape.weights());
    let mut j = serde_json::json!({
        "format": nwc_reference::FORMAT_VERSION,
        "mode": s.mode.to_string(),
        "mode_code": s.mode.code(),
        "rows": s.shape.rows,
        "cols": s.shape.cols,
        "k16": g.k16,
        "n_low": g.n_low,
        "blocks": g.blocks,
    });
    let mut fields = serde_json::Map::new();
    let mut out = String::new();
    let w = &mut out;
    let _ = writeln!(w, "format        NWC {}", nwc_reference::FORMAT_VERSION);
    let _ = writeln!(w, "mode          {} (mode code {})", s.mode, s.mode.code());
    let _ = writeln!(w, "shape         {} x {} (K16 {}, n_low {}, blocks {})", s.shape.rows, s.shape.cols, g.k16, g.n_low, g.blocks);
    let total = field_sizes(dir, &FIELD_FILES, 14, w, &mut fields)?;
    j["fields"] = fields.into();
    j["total_bytes"] = total.into();
    j["ratio_vs_bf16"] = (total as f64 / (2 * n) as f64).into();
    let _ = writeln!(w, "vs BF16       {:>10.4} (of {} bytes)", total as f64 / (2 * n) as f64, 2 * n);
    if s.mode.elem == ElemType::Fp8E4m3 {
        let _ = writeln!(w, "vs fp8 input  {:>10.4} (of {} bytes)", total as f64 / n as f64, n);
    }

    let result = load_matrix(dir, &s, &limits).and_then(|m| {
        let end = stream_end(&m);
        decode_with_limits(&m, &limits).map(|d| (end, d)).map_err(|e| decode_error(dir, e))
    });
    if let Ok((end, d)) = &result {
        j["exp_of_rank"] = d.exp_of_rank.to_vec().into();
        j["escapes"] = escapes(d).into();
        j["stream_end"] = (*end).into();
        let ranks: Vec<String> = d.exp_of_rank.iter().map(u8::to_string).collect();
        let _ = writeln!(w, "exp_of_rank   {} (ranks 0..14, from lut.bin)", ranks.join(" "));
        let _ = writeln!(w, "escapes       {}", escapes(d));
        let _ = writeln!(w, "stream end    {end} (data.bin needs at least {})", end.div_ceil(8) * 8 + 64);
    }
    let sha = sha256_line(dir, &s.json, &store::ALL_FILES)?;
    let _ = writeln!(w, "sha256        {sha}");
    j["sha256"] = sha.into();
    finish(j, out, "status        ", result.as_ref().err(), json);
    result.map(|_| ())
}

/// The end of `nwc info`, format 10 or execution layout: `valid` and `error` (the JSON keys) and
/// the status line after `label`, then the JSON object or the text.
pub fn finish(mut j: serde_json::Value, mut out: String, label: &str, err: Option<&CliError>, json: bool) {
    match err {
        None => {
            j["valid"] = true.into();
            j["error"] = serde_json::Value::Null;
            let _ = writeln!(out, "{label}valid");
        }
        Some(e) => {
            let file = e.file.as_deref().and_then(Path::file_name).map(|f| f.to_string_lossy().into_owned());
            j["valid"] = false.into();
            j["error"] = serde_json::json!({ "message": e.message, "file": file });
            let _ = writeln!(out, "{label}invalid: {} (in {})", e.message, file.unwrap_or_else(|| "?".into()));
        }
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&j).expect("json"));
    } else {
        print!("{out}");
    }
}
