//! `nwc decode`: a directory of stored fields in, the bit-exact weight matrix out (spec 15.1).

use crate::error::{decode_error, CliError};
use crate::store::{self, load_matrix, read_summary, resolved, write_atomic};
use nwc_reference::{decode_with_limits, DecodedMatrix, Limits};
use std::path::Path;

/// Reads, validates (every rule of spec 13) and decodes the matrix stored in `dir`.
pub fn load_and_decode(dir: &Path, limits: &Limits) -> Result<DecodedMatrix, CliError> {
    let summary = read_summary(dir, limits)?;
    let matrix = load_matrix(dir, &summary, limits)?;
    decode_with_limits(&matrix, limits).map_err(|e| decode_error(dir, e))
}

/// Refuses an output path that is one of the files in `dir` (including through links).
fn check_not_an_input(dir: &Path, out: &Path) -> Result<(), CliError> {
    let target = resolved(out);
    for name in store::ALL_FILES {
        if target.is_some() && resolved(&dir.join(name)) == target {
            return Err(CliError::usage(format!(
                "refusing to overwrite the input {name} with the output {}",
                out.display()
            )));
        }
    }
    Ok(())
}

pub fn run(dir: &Path, out: &Path) -> Result<(), CliError> {
    check_not_an_input(dir, out)?;
    let decoded = load_and_decode(dir, &Limits::default())?;
    let bytes = decoded.to_le_bytes();
    // The output appears only once complete; on any error above nothing was written.
    write_atomic(out, &bytes)?;
    println!(
        "{} {}: {} bytes -> {}",
        decoded.mode,
        decoded.shape,
        bytes.len(),
        out.display()
    );
    Ok(())
}
