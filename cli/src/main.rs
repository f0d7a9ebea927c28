//! `nwc`: NWC format 10 weight matrices (encode, decode, info, demo), their execution layout
//! (transcode, spec 20) and whole model checkpoints (compress, decompress, verify, inspect, slice).
//!
//! Exit status: 0 ok, 1 the output could not be written, 2 usage error, 3 invalid input (bad
//! sizes, truncated or missing files, shapes over the limits, NaN in fp8 input, any validity rule
//! of spec 13 or 20.9), 4 `verify` found a mismatch. Errors go to stderr and name the broken rule and the
//! file.

mod alloc;
mod cmd_check;
mod cmd_decode;
mod cmd_demo;
mod cmd_doctor;
mod cmd_encode;
mod cmd_info;
mod cmd_info_exec;
mod cmd_slice;
mod cmd_transcode;
mod model_cmds;

// The directory reader and the error type live in the library target (src/lib.rs), shared with
// the fuzz target `cli_readers`; these imports keep `crate::error` and `crate::store` paths working.
use nwc_cli::{error, store};

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use nwc_reference::{ElemType, Layout, Mode, Shape};
use std::path::PathBuf;
use std::process::ExitCode;

#[global_allocator]
static ALLOC: alloc::ReuseAlloc = alloc::ReuseAlloc::new();

/// `nwc --version`: the crate, the format it reads and writes, and the spec revision it follows
/// (spec/README.md). A unit test keeps the format number equal to the codec's.
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (NWC format 10, spec revision 3)");

#[derive(Parser)]
#[command(
    name = "nwc",
    version = VERSION,
    about = "NWC format 10 (Neural Weight Compression), lossless BF16/fp8 weights: compress, decompress, verify, inspect and slice model checkpoints; encode, decode, info and demo for single matrices; transcode to the GPU execution layout; doctor checks the GPU path"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Encode a raw little-endian BF16 or fp8 e4m3 matrix into a directory of stored fields.
    Encode(EncodeCli),
    /// Build the execution layout (spec 20) of a BF16 matrix, from a format-10 matrix directory or raw BF16, into a directory of exec_*.bin fields; FP8 is refused (spec 20.12.3).
    Transcode(TranscodeCli),
    /// Validate the matrix in DIR (every rule of spec 13, or of spec 20.9 for an execution layout) and write its weights, bit-exact, to OUT.
    Decode {
        /// Directory written by `nwc encode` or peer_encode.py (format 10), or by `nwc transcode` (an execution layout: summary.json says "representation": "exec").
        dir: PathBuf,
        /// Output file: raw little-endian BF16 (2 bytes per weight) or fp8 bytes (1 per weight); M x K weights, row-major.
        out: PathBuf,
    },
    /// Show shape, mode, field sizes, ratio, exp_of_rank, escapes, stream end and validity of DIR (of an execution layout: shape, field sizes, ratio, escapes, canonical bases and validity).
    Info {
        /// Directory written by `nwc encode` or peer_encode.py, or by `nwc transcode`.
        dir: PathBuf,
        /// Print one JSON object (keys in the README) instead of the text.
        #[arg(long)]
        json: bool,
    },
    /// Encode and decode the bundled real weight matrix in all four modes; print sizes and speed.
    Demo {
        /// Timed runs per step; the fastest is reported.
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
        reps: u32,
    },
    /// Check whether the GPU path works here: CUDA driver, GPU and compute capability, NVRTC compiling the kernels, a tiny GPU conformance run; and the CPU codec. Exit 0 only when the GPU path is usable.
    Doctor,
    #[command(flatten)]
    Model(model_cmds::ModelCommand),
}

#[derive(Clone, Copy, ValueEnum)]
enum ElemArg {
    Bf16,
    Fp8,
}

#[derive(Args)]
struct EncodeCli {
    /// Element type of the stored matrix.
    #[arg(long, value_enum)]
    elem: ElemArg,
    /// Layout: 0 (8-row blocks, spec 7) or 1 (16-row mma fragment blocks, spec 8).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=1))]
    layout: u8,
    /// Rows M of the row-major matrix.
    #[arg(long)]
    rows: u64,
    /// Columns K of the row-major matrix.
    #[arg(long)]
    cols: u64,
    /// fp8 only: the input is BF16; quantize it with per-row scales (spec 11.2) and write scale.bin.
    #[arg(long)]
    quantize_from_bf16: bool,
    /// fp8 only: the row scales of the fp8 input, stored as given in scale.bin (spec 11.4): M
    /// values, f32 little-endian (4*M bytes), each finite and above 0 (rule 13.19). Without it an
    /// fp8 input is stored unscaled, with no scale.bin (spec 11.6).
    #[arg(long, value_name = "FILE", conflicts_with = "quantize_from_bf16")]
    scales: Option<PathBuf>,
    /// Raw input: 2*M*K bytes of little-endian BF16, or M*K fp8 e4m3 bytes.
    input: PathBuf,
    /// Output directory: new (its parent must exist) or empty; a non-empty one is refused.
    outdir: PathBuf,
}

#[derive(Args)]
struct TranscodeCli {
    /// Rows M of a raw BF16 input (not with a directory, whose summary.json gives the shape).
    #[arg(long, requires = "cols")]
    rows: Option<u64>,
    /// Columns K of a raw BF16 input.
    #[arg(long, requires = "rows")]
    cols: Option<u64>,
    /// A format-10 matrix directory (as `nwc encode` writes it), validated by every rule of spec 13 first; or, with --rows and --cols, a raw BF16 file (2*M*K bytes, little-endian, row-major).
    input: PathBuf,
    /// Output directory: new (its parent must exist) or empty. Gets exec_sm.bin, exec_codes.bin, exec_base.bin, exec_esc_start.bin (u32 LE), exec_esc.bin (spec 20.3, the corpus's file layout) and summary.json.
    outdir: PathBuf,
}

impl EncodeCli {
    fn into_args(self) -> cmd_encode::EncodeArgs {
        let elem = match self.elem {
            ElemArg::Bf16 => ElemType::Bf16,
            ElemArg::Fp8 => ElemType::Fp8E4m3,
        };
        let layout = if self.layout == 0 { Layout::Rows8 } else { Layout::Fragment16 };
        if self.quantize_from_bf16 && elem != ElemType::Fp8E4m3 {
            Cli::command().error(clap::error::ErrorKind::ArgumentConflict, "--quantize-from-bf16 needs --elem fp8").exit();
            // exit status 2, like every other usage error
        }
        if self.scales.is_some() && elem != ElemType::Fp8E4m3 {
            Cli::command().error(clap::error::ErrorKind::ArgumentConflict, "--scales needs --elem fp8").exit();
        }
        cmd_encode::EncodeArgs {
            mode: Mode { elem, layout },
            shape: Shape::new(self.rows, self.cols),
            quantize_from_bf16: self.quantize_from_bf16,
            scales: self.scales,
            input: self.input,
            outdir: self.outdir,
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse(); // usage errors exit here with status 2
    let result = match cli.command {
        Command::Encode(e) => cmd_encode::run(&e.into_args()),
        Command::Transcode(t) => {
            let shape = t.rows.zip(t.cols).map(|(rows, cols)| Shape::new(rows, cols));
            cmd_transcode::run(&cmd_transcode::TranscodeArgs { input: t.input, shape, outdir: t.outdir })
        }
        Command::Decode { dir, out } => cmd_decode::run(&dir, &out),
        Command::Info { dir, json } => cmd_info::run(&dir, json),
        Command::Demo { reps } => cmd_demo::run(reps as usize),
        Command::Doctor => cmd_doctor::run(),
        Command::Model(m) => model_cmds::run(m),
    };
    match result {
        Ok(()) => ExitCode::from(error::EXIT_OK),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit)
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn version_names_the_format_of_the_codec() {
        assert!(super::VERSION.contains(&format!("NWC format {},", nwc_reference::FORMAT_VERSION)));
    }
}
