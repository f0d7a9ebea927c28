//! `nwc decode`: a directory of stored fields in, the bit-exact weight matrix out: a format-10
//! matrix (spec 15.1) or an execution layout (spec 20.13).

use crate::error::CliError;
use crate::store::{self, resolved, write_atomic};
use nwc_cli::exec_store::{exec_file, is_exec_dir, load_and_decode_exec};
use nwc_cli::load_and_decode;
use nwc_reference::exec::ExecField;
use nwc_reference::Limits;
use std::path::Path;

/// Refuses an output path that is one of the files in `dir` (including through links).
fn check_not_an_input(dir: &Path, out: &Path) -> Result<(), CliError> {
    let target = resolved(out);
    let exec_files = ExecField::ALL.map(exec_file);
    for name in store::ALL_FILES.iter().copied().chain(exec_files.iter().map(String::as_str)) {
        if target.is_some() && resolved(&dir.join(name)) == target {
            return Err(CliError::usage(format!("refusing to overwrite the input {name} with the output {}", out.display())));
        }
    }
    Ok(())
}

pub fn run(dir: &Path, out: &Path) -> Result<(), CliError> {
    check_not_an_input(dir, out)?;
    crate::error::check_parent(out)?;
    if is_exec_dir(dir) {
        // Every rule of spec 20.9 in the order of 20.10 before anything is written.
        let (_, decoded) = load_and_decode_exec(dir, &Limits::default())?;
        let bytes: Vec<u8> = decoded.words.iter().flat_map(|w| w.to_le_bytes()).collect();
        write_atomic(out, &bytes)?;
        println!("exec bf16 {}: {} bytes -> {}", decoded.shape, bytes.len(), out.display());
        return Ok(());
    }
    let decoded = load_and_decode(dir, &Limits::default())?;
    let bytes = decoded.to_le_bytes();
    // The output appears only once complete; on any error above nothing was written.
    write_atomic(out, &bytes)?;
    println!("{} {}: {} bytes -> {}", decoded.mode, decoded.shape, bytes.len(), out.display());
    Ok(())
}
