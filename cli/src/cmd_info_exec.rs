//! `nwc info` on an execution layout (spec 20; a directory `nwc transcode` writes): shape, the
//! size of every field, the ratio to BF16, the escape count, whether every row's base is the
//! canonical one (spec 20.8, 20.11), the recorded SHA-256 and validity. Stable output, as for
//! format 10.

use crate::cmd_info::{field_sizes, finish, sha256_line};
use crate::error::CliError;
use nwc_cli::exec_store::{exec_file, load_and_decode_exec};
use nwc_reference::exec::{non_canonical, ExecField, ExecGeometry};
use nwc_reference::Limits;
use serde_json::Value;
use std::fmt::Write;
use std::path::Path;

/// The summary.json of an execution layout, read loosely: the shape is judged by
/// [`load_and_decode_exec`]; here it is only shown.
fn summary(dir: &Path) -> Value {
    std::fs::read(dir.join(crate::store::SUMMARY)).ok().and_then(|t| serde_json::from_slice(&t).ok()).unwrap_or(Value::Null)
}

pub fn run(dir: &Path, json: bool) -> Result<(), CliError> {
    let limits = Limits::default();
    let s = summary(dir);
    let (rows, cols) = (s.get("M").and_then(Value::as_u64), s.get("K").and_then(Value::as_u64));
    let mut j = serde_json::json!({ "representation": "exec", "rows": rows, "cols": cols });
    let mut out = String::new();
    let w = &mut out;
    let _ = writeln!(w, "representation  execution layout (spec 20)");
    let geometry = rows.zip(cols).and_then(|(m, k)| ExecGeometry::new(nwc_reference::Shape::new(m, k)).ok());
    match &geometry {
        Some(g) => {
            j["k16"] = g.k16.into();
            j["tiles"] = g.tiles.into();
            let (m, k) = (g.shape.rows, g.shape.cols);
            let _ = writeln!(w, "shape           {m} x {k} (K16 {}; {} tiles, {} per row)", g.k16, g.tiles, g.col_tiles);
        }
        None => {
            let show = |v: Option<u64>| v.map_or("?".to_owned(), |v| v.to_string());
            let _ = writeln!(w, "shape           {} x {} (outside the format's limits or not given)", show(rows), show(cols));
        }
    }
    let names = ExecField::ALL.map(exec_file);
    let mut fields = serde_json::Map::new();
    let total = field_sizes(dir, &names, 20, w, &mut fields)?;
    j["fields"] = fields.into();
    j["total_bytes"] = total.into();
    if let Some(g) = &geometry {
        let n = g.shape.weights();
        j["ratio_vs_bf16"] = (total as f64 / (2 * n) as f64).into();
        let _ = writeln!(w, "vs BF16             {:>10.4} (of {} bytes)", total as f64 / (2 * n) as f64, 2 * n);
    }
    let result = load_and_decode_exec(dir, &limits);
    if let Ok((m, d)) = &result {
        let escapes = m.esc.len() as u64;
        j["escapes"] = escapes.into();
        let _ = writeln!(w, "escapes             {escapes} ({:.4}% of the weights)", 100.0 * escapes as f64 / m.shape.weights() as f64);
        let other = non_canonical(m, d);
        j["canonical"] = other.is_none().into();
        let _ = match other {
            None => writeln!(w, "bases               canonical (spec 20.8)"),
            Some(n) => writeln!(
                w,
                "bases               not canonical: row {} has base {}, canonical {} (valid, spec 20.11)",
                n.row, n.base, n.canonical
            ),
        };
    }
    let sha = sha256_line(dir, &s, &names)?;
    let _ = writeln!(w, "sha256              {sha}");
    j["sha256"] = sha.into();
    finish(j, out, "status              ", result.as_ref().err(), json);
    result.map(|_| ())
}
