//! Model-level subcommands (checkpoints, spec 17; slicing, spec 18): compress, decompress,
//! verify, inspect, slice. They work on whole models through `nwc-container` and the multi-core
//! `nwc-fast` codec.
//!
//! Exit status: 0 ok, 1 an output could not be written, 2 usage (including an output path that
//! exists: inputs and existing files are never overwritten), 3 invalid input (corrupt, truncated
//! or unsupported file; the message names the file, the tensor and the broken rule), 4 `verify`
//! found a mismatch.

use crate::error::{CliError, EXIT_INVALID, EXIT_IO, EXIT_USAGE};
use clap::{Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use nwc_container::{CompressOptions, ContainerError, Policy};
use nwc_reference::{ElemType, Layout};
use std::path::PathBuf;

/// println! that does not panic when stdout is closed early (e.g. piped into `head`).
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// Exit status of `verify` when the checkpoint does not match its digests or the original.
pub const EXIT_MISMATCH: u8 = 4;

#[derive(Clone, Copy, ValueEnum)]
pub enum ModelElem {
    /// Lossless: BF16 matrices stay bit-exact.
    Bf16,
    /// Lossy: quantize matrices to fp8 e4m3 with per-row scales (spec 11).
    Fp8,
}

#[derive(Subcommand)]
pub enum ModelCommand {
    /// Compress a model (a .safetensors file, or a folder with shards and an index) into an NWC checkpoint folder.
    Compress {
        /// The original model: one .safetensors file, or a folder of safetensors files (with
        /// model.safetensors.index.json when sharded) and other files, which are copied.
        input: PathBuf,
        /// New checkpoint folder (must not exist; its parent must).
        output: PathBuf,
        #[arg(long, value_enum, default_value = "bf16")]
        elem: ModelElem,
        /// 0: 8-row blocks (spec 7); 1: 16-row mma fragment blocks (spec 8).
        #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=1))]
        layout: u8,
        /// Worker threads (default: all cores).
        #[arg(long)]
        threads: Option<usize>,
        /// Compress only tensors whose name matches (glob: * and ?); repeatable.
        #[arg(long)]
        include: Vec<String>,
        /// Never compress tensors whose name matches; repeatable.
        #[arg(long)]
        exclude: Vec<String>,
        /// Also compress 2-D F32/F16 matrices after rounding them to BF16 (lossy).
        #[arg(long)]
        cast_bf16: bool,
        /// Split the checkpoint into shards of about this many MB (default: one file).
        #[arg(long)]
        shard_size_mb: Option<u64>,
    },
    /// Rebuild the original model files from a checkpoint, byte for byte (spec 17.12).
    Decompress {
        /// Checkpoint folder (written by `nwc compress` or the 0.10.1 library).
        input: PathBuf,
        /// New folder for the model files (must not exist; its parent must).
        output: PathBuf,
        /// Worker threads (default: all cores).
        #[arg(long)]
        threads: Option<usize>,
    },
    /// Validate every matrix (spec 13) and every digest; with --against, compare with the original tensor for tensor and file for file (SHA-256).
    Verify {
        /// Checkpoint folder.
        input: PathBuf,
        /// The original model (file or folder) to compare with.
        #[arg(long)]
        against: Option<PathBuf>,
        /// Worker threads (default: all cores).
        #[arg(long)]
        threads: Option<usize>,
        /// Print one JSON object (keys in the README) instead of the text.
        #[arg(long)]
        json: bool,
    },
    /// Per-matrix table: shape, mode, size ratio, exponent entropy, escapes; totals.
    Inspect {
        /// Checkpoint folder.
        input: PathBuf,
        /// Print one JSON object (keys in the README) instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Cut rows [R0, R1) of matrix ID of a checkpoint into a single-matrix folder (as `nwc encode` writes), without re-encoding (spec 18). R0 and R1 must be multiples of 8 (layout 0) or 16 (layout 1); R1 may also be the row count.
    Slice {
        /// Checkpoint folder.
        input: PathBuf,
        /// Matrix id (see `nwc inspect`).
        #[arg(long)]
        matrix: u64,
        /// Row range R0:R1: multiples of 8 (layout 0) or 16 (layout 1); R1 may be the row count.
        #[arg(long)]
        rows: String,
        /// New folder for the slice (must not exist; its parent must).
        output: PathBuf,
    },
}

pub(crate) fn container_error(e: ContainerError) -> CliError {
    let exit = match &e {
        ContainerError::Usage(_) => EXIT_USAGE,
        ContainerError::Write { .. } => EXIT_IO,
        _ => EXIT_INVALID,
    };
    let message = match &e {
        ContainerError::Io { path, source } if source.kind() == std::io::ErrorKind::NotFound => {
            format!("{}: no such file or directory", path.display())
        }
        _ => e.to_string(),
    };
    CliError { exit, message, file: None }
}

/// The closing line of compress and decompress: what was counted and how fast, end to end.
fn throughput(bytes: u64, t: std::time::Instant) -> String {
    let s = t.elapsed().as_secs_f64();
    let rate = bytes as f64 / s.max(1e-9) / 1e9;
    format!("{bytes} model bytes in {s:.2} s, {rate:.2} GB/s end to end (read, hash, code, write)")
}

fn threads(n: Option<usize>) -> Result<(), CliError> {
    if let Some(n) = n {
        if n == 0 {
            return Err(CliError::usage("--threads must be at least 1"));
        }
        rayon::ThreadPoolBuilder::new().num_threads(n).build_global().map_err(|e| CliError::usage(e.to_string()))?;
    }
    Ok(())
}

/// A byte counter with throughput on stderr; indicatif hides it when stderr is not a terminal.
pub(crate) fn bar(what: &str) -> ProgressBar {
    let b = ProgressBar::new_spinner();
    b.set_style(ProgressStyle::with_template("{spinner} {msg} {binary_bytes} ({binary_bytes_per_sec}) {elapsed}").expect("template"));
    b.set_message(what.to_string());
    b.enable_steady_tick(std::time::Duration::from_millis(200));
    b
}

pub fn run(cmd: ModelCommand) -> Result<(), CliError> {
    match cmd {
        ModelCommand::Compress { input, output, elem, layout, threads: t, include, exclude, cast_bf16, shard_size_mb } => {
            threads(t)?;
            let opts = CompressOptions {
                policy: Policy { include, exclude, cast_bf16 },
                elem: match elem {
                    ModelElem::Bf16 => ElemType::Bf16,
                    ModelElem::Fp8 => ElemType::Fp8E4m3,
                },
                layout: if layout == 0 { Layout::Rows8 } else { Layout::Fragment16 },
                shard_bytes: shard_size_mb.map(|mb| mb.max(1) * 1_000_000),
                base_model: None,
            };
            let b = bar("compressing");
            let t = std::time::Instant::now();
            let s = nwc_container::compress(&input, &output, &opts, &|n| b.inc(n)).map_err(container_error)?;
            b.finish_and_clear();
            outln!(
                "{}: {} matrices from {} tensors ({} copied unchanged); {} -> {} bytes ({:.4}); {}",
                output.display(),
                s.matrices,
                s.tensors_compressed,
                s.tensors_copied,
                s.bytes_in,
                s.bytes_out,
                s.bytes_out as f64 / s.bytes_in.max(1) as f64,
                throughput(s.bytes_in, t)
            );
            Ok(())
        }
        ModelCommand::Decompress { input, output, threads: t } => {
            threads(t)?;
            let b = bar("decompressing");
            let t = std::time::Instant::now();
            let bytes = std::sync::atomic::AtomicU64::new(0);
            let progress = |n| {
                b.inc(n);
                bytes.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
            };
            nwc_container::decompress(&input, &output, &progress).map_err(container_error)?;
            b.finish_and_clear();
            let done = throughput(bytes.into_inner(), t);
            outln!("{}: written; {done}", output.display());
            Ok(())
        }
        ModelCommand::Verify { input, against, threads: t, json } => {
            threads(t)?;
            crate::cmd_check::verify(&input, against.as_deref(), json)
        }
        ModelCommand::Inspect { input, json } => crate::cmd_check::inspect(&input, json),
        ModelCommand::Slice { input, matrix, rows, output } => crate::cmd_slice::run(&input, matrix, &rows, &output),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nwc_container::model::{write_safetensors, Tensor};
    use std::path::Path;

    fn exit(r: Result<(), CliError>) -> u8 {
        r.map(|()| 0).unwrap_or_else(|e| e.exit)
    }

    fn compress(input: &Path, output: &Path) -> ModelCommand {
        ModelCommand::Compress {
            input: input.into(),
            output: output.into(),
            elem: ModelElem::Bf16,
            layout: 0,
            threads: None,
            include: vec![],
            exclude: vec![],
            cast_bf16: false,
            shard_size_mb: None,
        }
    }

    /// The documented exit codes: 0 ok, 2 usage, 3 invalid input, 4 verify mismatch.
    #[test]
    fn exit_codes() {
        let tmp = tempfile::tempdir().unwrap();
        let model = tmp.path().join("model.safetensors");
        let words: Vec<u8> = (0..40 * 70u32).flat_map(|i| (0x3C00u16 + (i % 300) as u16).to_le_bytes()).collect();
        let norm: Vec<u8> = (0..70u32).flat_map(|i| (i as f32).to_le_bytes()).collect();
        let tensors = [
            Tensor { name: "layer.weight".into(), dtype: safetensors::Dtype::BF16, shape: vec![40, 70], data: words },
            Tensor { name: "norm.weight".into(), dtype: safetensors::Dtype::F32, shape: vec![70], data: norm },
        ];
        write_safetensors(&model, &tensors.iter().collect::<Vec<_>>(), None).unwrap();
        let ck = tmp.path().join("ck");
        assert_eq!(exit(run(compress(&model, &ck))), 0);
        assert_eq!(exit(run(compress(&model, &ck))), EXIT_USAGE, "output exists");
        assert_eq!(exit(run(compress(&tmp.path().join("missing"), &tmp.path().join("x")))), EXIT_INVALID);
        let verify = |against: Option<PathBuf>| ModelCommand::Verify { input: ck.clone(), against, threads: None, json: false };
        assert_eq!(exit(run(verify(Some(model.clone())))), 0);
        let inspect = ModelCommand::Inspect { input: ck.clone(), json: true };
        assert_eq!(exit(run(inspect)), 0);
        let slice =
            |rows: &str, out: &str| ModelCommand::Slice { input: ck.clone(), matrix: 0, rows: rows.into(), output: tmp.path().join(out) };
        assert_eq!(exit(run(slice("8:40", "s1"))), 0);
        assert!(tmp.path().join("s1/summary.json").is_file());
        assert_eq!(exit(run(slice("3:40", "s2"))), EXIT_USAGE, "unaligned rows");
        assert_eq!(exit(run(slice("8", "s3"))), EXIT_USAGE, "not R0:R1");

        // A copied tensor changed in place: digest mismatch, exit 4.
        let file = ck.join("model.safetensors");
        let mut bytes = std::fs::read(&file).unwrap();
        let (header, meta) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
        let at = 8 + header + meta.tensors()["norm.weight"].data_offsets.0 + 5;
        bytes[at] ^= 0x40;
        std::fs::write(&file, &bytes).unwrap();
        assert_eq!(exit(run(verify(None))), EXIT_MISMATCH);
        // Truncated: invalid input, exit 3.
        std::fs::write(&file, &bytes[..bytes.len() / 2]).unwrap();
        assert_eq!(exit(run(verify(None))), EXIT_INVALID);
        assert_eq!(exit(run(ModelCommand::Decompress { input: ck.clone(), output: tmp.path().join("out"), threads: None })), EXIT_INVALID);
        assert!(!tmp.path().join("out").exists());
    }
}
