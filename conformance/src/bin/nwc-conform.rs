//! `nwc-conform`: checks the reference, or any encoder/decoder command, against the NWC
//! golden-vector corpus. Exit status: 0 everything passed, 1 something failed, 2 the run could
//! not start (bad arguments, unreadable manifest, unwritable report).

use clap::{Args, Parser, Subcommand};
use nwc_conformance::backend::ReferenceBackend;
use nwc_conformance::corpus::Corpus;
use nwc_conformance::report::Report;
use nwc_conformance::run::{self, Scales, Tool};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser)]
#[command(name = "nwc-conform", version, about = "Check an NWC (format 10) encoder or decoder against the golden-vector corpus")]
struct Cli {
    /// The corpus directory (holding manifest.json).
    #[arg(long, global = true, default_value = "vectors")]
    vectors: PathBuf,
    /// Also write the report as JSON to this file.
    #[arg(long, global = true)]
    json: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run every vector through the reference codec (encode, decode, validate, dequant, gather, matvec).
    Reference,
    /// Judge an encoder: runs `CMD ARGS... --elem bf16|fp8 --layout 0|1 --rows M --cols K INPUT OUTDIR`.
    Encoder(ToolArgs),
    /// Judge a decoder: runs `CMD ARGS... DIR OUT.raw`.
    Decoder(ToolArgs),
    /// Run the corpus on the GPU (crate nwc-cuda): hands over to `nwc-conform-gpu`, found through
    /// NWC_CONFORM_GPU, next to this program, or on PATH. Extra arguments (e.g. `--sweep 1000`) are
    /// passed on. Prints `skipped: no CUDA device` and exits 0 where there is no device.
    Gpu {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        extra: Vec<String>,
    },
}

#[derive(Args)]
struct ToolArgs {
    /// Seconds one invocation may take before it is killed and judged FAIL.
    #[arg(long, default_value_t = 60.0)]
    timeout: f64,
    /// Keep per-vector inputs and outputs in this directory (default: a temporary one, removed).
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// Encoder: do not pass `--scales FILE` for vectors with FP8 scales (for encoders that do not
    /// take it); `scale` is then judged only where the encoder writes one.
    #[arg(long)]
    without_scales: bool,
    /// The command under test and its leading arguments (after `--`).
    #[arg(last = true, required = true, num_args = 1..)]
    command: Vec<String>,
}

impl ToolArgs {
    fn tool(&self, scratch: &Option<tempfile::TempDir>) -> Result<Tool, String> {
        if !(self.timeout.is_finite() && self.timeout > 0.0) {
            return Err(format!("--timeout must be a positive number of seconds, got {}", self.timeout));
        }
        let (work_dir, keep_work) = match (&self.work_dir, scratch) {
            (Some(dir), _) => (dir.clone(), true),
            (None, Some(t)) => (t.path().to_owned(), false),
            (None, None) => unreachable!("a scratch directory exists whenever --work-dir is absent"),
        };
        Ok(Tool {
            program: self.command[0].clone(),
            args: self.command[1..].to_vec(),
            timeout: Duration::from_secs_f64(self.timeout),
            work_dir,
            keep_work,
            scales: if self.without_scales { Scales::Withheld } else { Scales::Passed },
        })
    }
}

/// Where the GPU runner lives: $NWC_CONFORM_GPU, beside this executable, or PATH.
fn gpu_runner() -> PathBuf {
    if let Some(p) = std::env::var_os("NWC_CONFORM_GPU") {
        return PathBuf::from(p);
    }
    let sibling = std::env::current_exe().ok().and_then(|exe| Some(exe.parent()?.join("nwc-conform-gpu")));
    match sibling {
        Some(p) if p.exists() => p,
        _ => PathBuf::from("nwc-conform-gpu"),
    }
}

/// `nwc-conform gpu`: the GPU path has its own runner (it links CUDA); its output and exit status
/// are passed through unchanged, so its `N passed, N failed` line is this command's last line.
fn run_gpu(cli: &Cli, extra: &[String]) -> ExitCode {
    if cli.json.is_some() {
        eprintln!("nwc-conform: --json is not supported with `gpu` (the GPU runner prints a text report)");
        return ExitCode::from(2);
    }
    let runner = gpu_runner();
    match std::process::Command::new(&runner).arg("--vectors").arg(&cli.vectors).args(extra).status() {
        Ok(status) => match status.code() {
            Some(0) => ExitCode::SUCCESS,
            Some(c) => ExitCode::from(u8::try_from(c).unwrap_or(1)),
            None => ExitCode::FAILURE,
        },
        Err(e) => {
            eprintln!("nwc-conform: cannot run {} ({e}); build it with `cargo build --release -p nwc-cuda --bin nwc-conform-gpu` or set NWC_CONFORM_GPU", runner.display());
            ExitCode::from(2)
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::Gpu { extra } = &cli.command {
        return run_gpu(&cli, extra);
    }
    match execute(&cli) {
        Ok(report) => {
            print!("{}", report.to_text());
            if let Some(path) = &cli.json {
                if let Err(e) = std::fs::write(path, report.to_json()) {
                    eprintln!("nwc-conform: cannot write {}: {e}", path.display());
                    return ExitCode::from(2);
                }
            }
            if report.all_passed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("nwc-conform: {e}");
            ExitCode::from(2)
        }
    }
}

fn execute(cli: &Cli) -> Result<Report, String> {
    let corpus = Corpus::load(&cli.vectors).map_err(|e| e.to_string())?;
    let tool_args = match &cli.command {
        Command::Reference => return Ok(run::reference::run(&corpus, &ReferenceBackend)),
        Command::Encoder(t) | Command::Decoder(t) => t,
        Command::Gpu { .. } => unreachable!("handled in main before the corpus is loaded"),
    };
    let scratch = match tool_args.work_dir {
        Some(_) => None,
        None => Some(tempfile::Builder::new().prefix("nwc-conform-").tempdir().map_err(|e| format!("temporary directory: {e}"))?),
    };
    let tool = tool_args.tool(&scratch)?;
    std::fs::create_dir_all(&tool.work_dir).map_err(|e| format!("{}: {e}", tool.work_dir.display()))?;
    Ok(match &cli.command {
        Command::Encoder(_) => run::encoder::run(&corpus, &tool),
        _ => run::decoder::run(&corpus, &tool),
    })
}
