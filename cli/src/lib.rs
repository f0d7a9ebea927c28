//! The library side of the `nwc` command: the directory form of one encoded matrix (`store`) and
//! of one execution layout (`exec_store`), and the CLI's error type (`error`). The binary uses it, and so does the fuzz target `cli_readers`,
//! which feeds [`load_and_decode`] hostile directories.

pub mod error;
pub mod exec_store;
pub mod store;

use error::{decode_error, CliError};
use nwc_reference::{decode_with_limits, DecodedMatrix, Limits};
use std::path::Path;

/// Reads, validates (every rule of spec 13) and decodes the matrix stored in `dir`: the shape in
/// summary.json is checked against `limits` and every file's size against the shape before any
/// file is read (spec 16.2, 16.3).
pub fn load_and_decode(dir: &Path, limits: &Limits) -> Result<DecodedMatrix, CliError> {
    let summary = store::read_summary(dir, limits)?;
    let matrix = store::load_matrix(dir, &summary, limits)?;
    decode_with_limits(&matrix, limits).map_err(|e| decode_error(dir, e))
}
