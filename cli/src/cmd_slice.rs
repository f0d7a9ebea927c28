//! `nwc slice`: rows [R0, R1) of one matrix of a checkpoint as a standalone single-matrix folder
//! (the form `nwc encode` writes), without re-encoding (spec 18).

use crate::error::{CliError, EXIT_IO};
use crate::model_cmds::container_error;
use std::path::Path;

/// println! that does not panic when stdout is closed early (e.g. piped into `head`).
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

pub fn run(input: &Path, id: u64, rows: &str, output: &Path) -> Result<(), CliError> {
    let (r0, r1) = rows
        .split_once(':')
        .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)))
        .ok_or_else(|| CliError::usage(format!("--rows {rows}: expected R0:R1")))?;
    if output.exists() {
        return Err(CliError::usage(format!("{} exists; refusing to overwrite it", output.display())));
    }
    crate::error::check_parent(output)?;
    let ck = nwc_container::checkpoint::Checkpoint::open(input).map_err(container_error)?;
    let entry = ck
        .entries()
        .map_err(container_error)?
        .iter()
        .find(|e| e.id == id)
        .ok_or_else(|| CliError::usage(format!("no matrix {id} in {}", input.display())))?;
    let m = ck.matrix(entry).map_err(container_error)?;
    let s = nwc_container::slice_rows(&m, r0, r1).map_err(|e| match e {
        nwc_container::SliceError::Range { .. } => CliError::usage(e.to_string()),
        other => CliError::invalid(input, other.to_string()),
    })?;
    nwc_reference::validate(&s).map_err(|e| CliError::invalid(input, format!("matrix {id}: {e}")))?;
    std::fs::create_dir(output).map_err(|e| CliError {
        exit: EXIT_IO,
        message: format!("cannot create: {e}"),
        file: Some(output.to_path_buf()),
    })?;
    let u32s = |v: &[u32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    use crate::store::*;
    write_atomic(&output.join(DATA), &s.data)?;
    write_atomic(&output.join(BASES), &u32s(&s.bases))?;
    write_atomic(&output.join(HDR), &s.hdr)?;
    write_atomic(&output.join(LUT), &u32s(&s.lut))?;
    write_atomic(&output.join(LOW), &s.low)?;
    if let Some(scale) = &s.scale {
        write_atomic(&output.join(SCALE), &scale.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>())?;
    }
    let summary = serde_json::json!({
        "format_version": nwc_reference::FORMAT_VERSION,
        "encoder": format!("nwc slice rows {r0}:{r1} of matrix {id} (valid, not canonical: spec 18)"),
        "M": s.shape.rows,
        "K": s.shape.cols,
        "elem": s.mode.code(),
        "type": type_name(s.mode),
        "layout": s.mode.layout.number(),
    });
    write_atomic(&output.join(SUMMARY), &serde_json::to_vec_pretty(&summary).expect("json"))?;
    outln!("{}: rows {r0}..{r1} of matrix {id} ({} x {}), valid", output.display(), s.shape.rows, s.shape.cols);
    Ok(())
}
