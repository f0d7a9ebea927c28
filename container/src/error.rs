//! Errors of reading and writing checkpoints. Every variant names the file and, where there is
//! one, the tensor; matrix errors carry the spec rule from the decoder.

use std::path::PathBuf;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ContainerError {
    /// The caller asked for something impossible (exit code 2 in the CLI).
    #[error("usage: {0}")]
    Usage(String),
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    /// An output could not be written (exit code 1 in the CLI): not the input's fault.
    #[error("cannot write {path}: {msg}")]
    Write { path: PathBuf, msg: String },
    /// Spec 17.10: a file shorter than its own header says.
    #[error("{file}: truncated: {got} of {expected} bytes")]
    Truncated { file: PathBuf, got: u64, expected: u64 },
    #[error("{file}: not a readable safetensors file: {msg}")]
    Safetensors { file: PathBuf, msg: String },
    #[error("{file}: {msg}")]
    Config { file: PathBuf, msg: String },
    #[error("{file}: tensor `{tensor}`: {msg}")]
    Tensor { file: PathBuf, tensor: String, msg: String },
    #[error("{file}: matrix `nwc/{id}` ({names}): {source}")]
    Matrix { file: PathBuf, id: u64, names: String, source: nwc_reference::DecodeError },
    #[error("{file}: unsupported: {msg}")]
    Unsupported { file: PathBuf, msg: String },
    #[error("tensor `{tensor}`: cannot compress: {msg}")]
    Encode { tensor: String, msg: String },
}

impl ContainerError {
    pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> ContainerError {
        let path = path.into();
        move |source| ContainerError::Io { path, source }
    }

    pub fn write(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> ContainerError {
        let path = path.into();
        move |e| ContainerError::Write { path, msg: e.to_string() }
    }

    /// True when the caller, not an input file, is at fault.
    pub fn is_usage(&self) -> bool {
        matches!(self, ContainerError::Usage(_))
    }
}

pub type Result<T> = std::result::Result<T, ContainerError>;
