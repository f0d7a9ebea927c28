//! `nwc decode`: a directory of stored fields in, the bit-exact weight matrix out (spec 15.1).

use crate::error::CliError;
use crate::store::{self, resolved, write_atomic};
use nwc_cli::load_and_decode;
use nwc_reference::Limits;
use std::path::Path;

/// Refuses an output path that is one of the files in `dir` (including through links).
fn check_not_an_input(dir: &Path, out: &Path) -> Result<(), CliError> {
    let target = resolved(out);
    for name in store::ALL_FILES {
        if target.is_some() && resolved(&dir.join(name)) == target {
            return Err(CliError::usage(format!("refusing to overwrite the input {name} with the output {}", out.display())));
        }
    }
    Ok(())
}

pub fn run(dir: &Path, out: &Path) -> Result<(), CliError> {
    check_not_an_input(dir, out)?;
    crate::error::check_parent(out)?;
    let decoded = load_and_decode(dir, &Limits::default())?;
    let bytes = decoded.to_le_bytes();
    // The output appears only once complete; on any error above nothing was written.
    write_atomic(out, &bytes)?;
    println!("{} {}: {} bytes -> {}", decoded.mode, decoded.shape, bytes.len(), out.display());
    Ok(())
}
