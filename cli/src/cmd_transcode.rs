//! `nwc transcode`: the execution layout (spec 20) of a BF16 matrix, from a format-10 matrix
//! directory (`nwc encode`'s) or from raw BF16, written in the corpus's file layout for
//! execution-layout vectors: one raw little-endian file per field of spec 20.3, named
//! `exec_<field>.bin`, plus an informative `summary.json`.

use crate::cmd_encode::{check_outdir, read_input};
use crate::error::{decode_error, CliError};
use crate::store::{self, sha256_hex, write_atomic};
use nwc_cli::exec_store::exec_file;
use nwc_reference::exec::{encode_exec, ExecEncodeError, ExecGeometry, ExecMatrix};
use nwc_reference::{ElemType, Elements, Limits, Shape};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

pub struct TranscodeArgs {
    /// A format-10 matrix directory, or a raw BF16 file when `shape` is given.
    pub input: PathBuf,
    /// The shape of a raw BF16 input (`--rows`, `--cols`); None for a directory.
    pub shape: Option<Shape>,
    pub outdir: PathBuf,
}

/// summary.json of an execution-layout directory. Informative: readers take the shape from it
/// and the fields from the `exec_*.bin` files.
#[derive(Serialize)]
struct ExecSummaryOut {
    representation: &'static str,
    encoder: String,
    /// Where the matrix came from: `format 10, mode code N` or `bf16`.
    source: String,
    #[serde(rename = "M")]
    rows: u64,
    #[serde(rename = "K")]
    cols: u64,
    #[serde(rename = "K16")]
    k16: u64,
    tiles: u64,
    /// E, the number of escaped weights (spec 20.2).
    escapes: u64,
    /// Every field's bytes (spec 20.18).
    bytes_total: u64,
    ratio_vs_bf16: f64,
    sha256: BTreeMap<String, String>,
}

/// A refusal of spec 20.12.3 (or a broken rule of the format-10 source, 20.12.2) as a CLI error.
fn transcode_error(input: &Path, e: ExecEncodeError) -> CliError {
    match e {
        ExecEncodeError::Source(d) => decode_error(input, d),
        other => CliError::invalid(input, other.to_string()),
    }
}

/// Spec 20.12.2: transcode(encoding) = encode_exec(decode(encoding)). The encoding is validated
/// by every rule of chapter 13 (nwc-fast names the first, as the reference does) before anything
/// is built; an FP8 one is refused (20.12.3) before its fields are read.
fn from_format10(dir: &Path, limits: &Limits) -> Result<(ExecMatrix, String), CliError> {
    let summary = store::read_summary(dir, limits)?;
    if summary.mode.elem == ElemType::Fp8E4m3 {
        return Err(transcode_error(&dir.join(store::SUMMARY), ExecEncodeError::Fp8));
    }
    let matrix = store::load_matrix(dir, &summary, limits)?;
    let decoded = nwc_fast::decode_with_limits(&matrix, limits).map_err(|e| decode_error(dir, e))?;
    let Elements::Bf16(words) = &decoded.elements else {
        return Err(transcode_error(dir, ExecEncodeError::Fp8));
    };
    let exec = encode_exec(decoded.shape, words).map_err(|e| transcode_error(dir, e))?;
    Ok((exec, format!("format 10, mode code {}", summary.mode.code())))
}

/// Spec 20.12.1: the canonical transcode of raw BF16 words.
fn from_bf16(path: &Path, shape: Shape, limits: &Limits) -> Result<ExecMatrix, CliError> {
    // Spec 20.2's limits refuse the arguments (not a stored layout: no rule of 20.9 applies).
    let refused = |e: &dyn std::fmt::Display| CliError::rejected(format!("{e} (--rows/--cols)"));
    ExecGeometry::new(shape).map_err(|_| refused(&ExecEncodeError::Shape { rows: shape.rows, cols: shape.cols }))?;
    limits.check_shape(shape).map_err(|e| refused(&e))?;
    let bytes = read_input(path, shape, "bf16", 2)?;
    let words: Vec<u16> = bytes.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
    drop(bytes);
    encode_exec(shape, &words).map_err(|e| transcode_error(path, e))
}

pub fn run(args: &TranscodeArgs) -> Result<(), CliError> {
    check_outdir(&args.outdir)?;
    let limits = Limits::default();
    let is_dir = args.input.is_dir();
    let (exec, source) = match (is_dir, args.shape) {
        (true, None) => from_format10(&args.input, &limits)?,
        (false, Some(shape)) => (from_bf16(&args.input, shape, &limits)?, "bf16".to_string()),
        (true, Some(_)) => {
            return Err(CliError::usage(format!(
                "{} is a matrix directory, whose summary.json gives the shape: --rows/--cols are for a raw BF16 file",
                args.input.display()
            )))
        }
        (false, None) if !args.input.exists() => return Err(CliError::invalid(&args.input, "input: no such file or directory")),
        (false, None) => {
            return Err(CliError::usage(format!(
                "{} is a file: a raw BF16 input needs --rows and --cols (a format-10 input is a directory)",
                args.input.display()
            )))
        }
    };
    let g = ExecGeometry::new(exec.shape).expect("the shape was checked");
    let files: Vec<(String, Vec<u8>)> = exec.to_le_fields().into_iter().map(|(f, bytes)| (exec_file(f), bytes)).collect();
    let bytes_total = exec.stored_bytes();
    let summary = ExecSummaryOut {
        representation: "exec",
        encoder: format!("nwc-reference {}", env!("CARGO_PKG_VERSION")),
        source,
        rows: exec.shape.rows,
        cols: exec.shape.cols,
        k16: g.k16,
        tiles: g.tiles,
        escapes: exec.esc.len() as u64,
        bytes_total,
        ratio_vs_bf16: bytes_total as f64 / (2 * exec.shape.weights()) as f64,
        sha256: files.iter().map(|(name, b)| (name.clone(), sha256_hex(b))).collect(),
    };
    let json = serde_json::to_vec_pretty(&summary).expect("the summary serialises");
    if !args.outdir.exists() {
        fs::create_dir(&args.outdir).map_err(|e| CliError::write(&args.outdir, e))?;
    }
    for (name, bytes) in &files {
        write_atomic(&args.outdir.join(name), bytes)?;
    }
    write_atomic(&args.outdir.join(store::SUMMARY), &json)?;
    println!(
        "exec {}: {} bytes stored ({:.4} of BF16), {} escapes -> {}",
        exec.shape,
        bytes_total,
        summary.ratio_vs_bf16,
        summary.escapes,
        args.outdir.display()
    );
    Ok(())
}
