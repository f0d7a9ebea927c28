//! The CLI's one error type. Every error says what is wrong (for a broken validity rule: the rule
//! name and spec clause, as the reference's errors print them) and which file it is about, and it
//! carries the exit status the command ends with.

use nwc_reference::{DecodeError, Field, FormatError};
use std::path::{Path, PathBuf};

/// Exit status of a successful command.
pub const EXIT_OK: u8 = 0;
/// Exit status of a failure outside the input's control (e.g. the output cannot be written).
pub const EXIT_IO: u8 = 1;
/// Exit status of a command-line usage error (clap uses the same number).
pub const EXIT_USAGE: u8 = 2;
/// Exit status of invalid input: bad sizes, truncated or missing files, shapes over the limits,
/// NaN in fp8 input, any broken validity rule.
pub const EXIT_INVALID: u8 = 3;

#[derive(Debug, thiserror::Error)]
#[error("{message}{}", file.as_ref().map(|f| format!(" (file: {})", f.display())).unwrap_or_default())]
pub struct CliError {
    pub exit: u8,
    pub message: String,
    pub file: Option<PathBuf>,
}

impl CliError {
    /// The input is unusable.
    pub fn invalid(file: impl AsRef<Path>, message: impl Into<String>) -> CliError {
        CliError { exit: EXIT_INVALID, message: message.into(), file: Some(file.as_ref().to_path_buf()) }
    }

    /// The arguments describe an input the format or this process's limits refuse (exit 3).
    pub fn rejected(message: impl Into<String>) -> CliError {
        CliError { exit: EXIT_INVALID, message: message.into(), file: None }
    }

    /// An input file cannot be read (missing, unreadable): the input is unusable.
    pub fn read(file: impl AsRef<Path>, err: std::io::Error) -> CliError {
        if err.kind() == std::io::ErrorKind::NotFound {
            return CliError::invalid(file, "cannot read: no such file or directory");
        }
        CliError::invalid(file, format!("cannot read: {err}"))
    }

    /// An output cannot be written: not the input's fault.
    pub fn write(file: impl AsRef<Path>, err: std::io::Error) -> CliError {
        CliError { exit: EXIT_IO, message: format!("cannot write: {err}"), file: Some(file.as_ref().to_path_buf()) }
    }

    /// The arguments make no sense together (exit 2, like clap's own usage errors).
    pub fn usage(message: impl Into<String>) -> CliError {
        CliError { exit: EXIT_USAGE, message: message.into(), file: None }
    }
}

/// The stored file a field lives in (spec 12; names as written by `nwc encode` and peer_encode.py).
pub fn field_file(field: Field) -> &'static str {
    match field {
        Field::Data => crate::store::DATA,
        Field::Bases => crate::store::BASES,
        Field::Hdr => crate::store::HDR,
        Field::Lut => crate::store::LUT,
        Field::Low => crate::store::LOW,
        Field::Scale => crate::store::SCALE,
    }
}

/// The file in which a broken validity rule (spec 13) was found.
pub fn rule_file(err: &FormatError) -> &'static str {
    use crate::store::*;
    match err {
        FormatError::FieldSize { field, .. } => field_file(*field),
        // The streams `hdr` declares would not fit a data field below 2^32 bytes (spec 3.2).
        FormatError::DataLength { .. } => HDR,
        _ => match err.rule() {
            "mode-code" | "shape-range" => SUMMARY,
            "offset-first-nonzero" | "offset-misaligned" | "offset-mismatch" => BASES,
            "lane-length-range" => HDR,
            "rank-table" | "lut-mismatch" => LUT,
            "fp8-nibble" | "fp8-nan" | "raw-padding" => LOW,
            "scale-value" => SCALE,
            // data-too-short, lane-truncated, lane-overlong, stream-padding, filler-code,
            // fp8-rank, bf16-escape: all found while reading the lane streams in data.
            _ => DATA,
        },
    }
}

/// A decode failure of the matrix stored in `dir`, located in the file the rule points at.
pub fn decode_error(dir: &Path, err: DecodeError) -> CliError {
    match err {
        DecodeError::Format(f) => CliError::invalid(dir.join(rule_file(&f)), f.to_string()),
        DecodeError::Limit(l) => CliError::invalid(dir.join(crate::store::SUMMARY), l.to_string()),
        // DecodeError may grow variants; whatever they are, the stored matrix was refused.
        other => CliError::invalid(dir, other.to_string()),
    }
}

/// No command creates a missing parent folder: an output whose parent does not exist is a usage
/// error, named before any work is done.
pub fn check_parent(output: &Path) -> Result<(), CliError> {
    let parent = output.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if parent.is_dir() {
        Ok(())
    } else {
        Err(CliError::usage(format!("{}: the parent folder {} does not exist", output.display(), parent.display())))
    }
}
