//! `nwc verify` and `nwc inspect`: their reports as text or, with `--json`, as one JSON object
//! whose keys are stable (documented in the README; new keys may be added, none renamed).

use crate::error::CliError;
use crate::model_cmds::{bar, container_error, EXIT_MISMATCH};
use serde_json::json;
use std::io::Write;
use std::path::Path;

/// println! that does not panic when stdout is closed early (e.g. piped into `head`).
fn out(text: &str) {
    let _ = writeln!(std::io::stdout(), "{text}");
}

pub fn verify(input: &Path, against: Option<&Path>, as_json: bool) -> Result<(), CliError> {
    let b = bar("verifying");
    let r = nwc_container::verify(input, against, &|n| b.inc(n)).map_err(container_error)?;
    b.finish_and_clear();
    if as_json {
        let files: Vec<_> = r
            .files
            .iter()
            .map(|f| {
                json!({
                    "name": f.name,
                    "original_sha256": f.original_sha256,
                    "decompressed_sha256": f.decompressed_sha256,
                    "identical": f.identical(),
                    "lossy": f.lossy,
                })
            })
            .collect();
        let j = json!({
            "verified": r.mismatches.is_empty(),
            "matrices": r.matrices,
            "tensors": r.tensors,
            "compared": r.compared,
            "files": files,
            "mismatches": r.mismatches,
        });
        out(&serde_json::to_string_pretty(&j).expect("json"));
    } else {
        for m in &r.mismatches {
            out(&format!("MISMATCH {m}"));
        }
        for f in &r.files {
            let state = match (f.identical(), f.lossy) {
                (true, _) => "identical to the original (SHA-256)",
                (false, true) => "differs from the original (lossy tensors)",
                (false, false) => "DIFFERS from the original",
            };
            out(&format!("file {}: {state}: {}", f.name, f.decompressed_sha256));
        }
        let files = r.files.iter().filter(|f| f.identical()).count();
        out(&format!(
            "{} matrices valid; {} tensors checked; {} compared with the original; {} of {} files identical; {} mismatches",
            r.matrices,
            r.tensors,
            r.compared,
            files,
            r.files.len(),
            r.mismatches.len()
        ));
    }
    if r.mismatches.is_empty() {
        Ok(())
    } else {
        Err(CliError { exit: EXIT_MISMATCH, message: format!("{} mismatches", r.mismatches.len()), file: Some(input.to_path_buf()) })
    }
}

pub fn inspect(input: &Path, as_json: bool) -> Result<(), CliError> {
    let ins = nwc_container::inspect(input).map_err(container_error)?;
    let bytes: u64 = ins.matrices.iter().map(|m| m.bytes).sum();
    let bf16: u64 = ins.matrices.iter().map(|m| 2 * m.shape.rows * m.shape.cols).sum();
    let escapes: u64 = ins.matrices.iter().map(|m| m.escapes).sum();
    let ratio = bytes as f64 / bf16.max(1) as f64;
    if as_json {
        let matrices: Vec<_> = ins
            .matrices
            .iter()
            .map(|m| {
                json!({
                    "id": m.id,
                    "rows": m.shape.rows,
                    "cols": m.shape.cols,
                    "mode": m.mode.to_string(),
                    "bytes": m.bytes,
                    "ratio": m.ratio,
                    "entropy_bits": m.entropy_bits,
                    "escapes": m.escapes,
                    "tensors": m.names.split(", ").collect::<Vec<_>>(),
                })
            })
            .collect();
        let j = json!({
            "library_version": ins.library_version,
            "matrices": matrices,
            "total": {
                "matrices": ins.matrices.len(),
                "bytes": bytes,
                "bf16_bytes": bf16,
                "ratio": ratio,
                "escapes": escapes,
                "copied_tensors": ins.copied_tensors,
                "copied_bytes": ins.copied_bytes,
            },
        });
        out(&serde_json::to_string_pretty(&j).expect("json"));
        return Ok(());
    }
    out(&format!("{:>4}  {:<14} {:<13} {:>12} {:>7} {:>8} {:>8}  tensors", "id", "shape", "mode", "bytes", "ratio", "H(bits)", "escapes"));
    for m in &ins.matrices {
        out(&format!(
            "{:>4}  {:<14} {:<13} {:>12} {:>7.4} {:>8.3} {:>8}  {}",
            m.id,
            m.shape.to_string(),
            m.mode.to_string(),
            m.bytes,
            m.ratio,
            m.entropy_bits,
            m.escapes,
            m.names
        ));
    }
    out(&format!(
        "total: {} matrices, {bytes} bytes for {bf16} BF16 bytes (ratio {ratio:.4}), {escapes} escapes; {} tensors copied unchanged ({} bytes); library_version {}",
        ins.matrices.len(),
        ins.copied_tensors,
        ins.copied_bytes,
        ins.library_version
    ));
    Ok(())
}
