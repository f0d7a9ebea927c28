//! `nwc-conform`: checks the reference, the GPU, or any encoder/decoder command, against the NWC
//! golden-vector corpus. Exit status: 0 everything passed, 1 something failed, 2 the run could
//! not start (bad arguments, unreadable manifest, unwritable report).

use clap::{Args, Parser, Subcommand};
use nwc_conformance::backend::{MatvecClass, ReferenceBackend};
use nwc_conformance::corpus::Corpus;
use nwc_conformance::gpu::exec::{run_exec_sweep, GpuExecBackend};
use nwc_conformance::gpu::sweep::{run_sweep, Tally};
use nwc_conformance::gpu::GpuBackend;
use nwc_conformance::report::Report;
use nwc_conformance::run::{self, Scales, Tool};
use nwc_cuda::exec::ExecMatvecKernel;
use nwc_cuda::{Gpu, MatvecKernel, SKIP_NO_DEVICE};
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
    /// Run every vector through the reference codec (encode, decode, validate, dequant, gather, matvec),
    /// execution-layout vectors (spec 20) included: encode, transcode, validate, decode and the outputs.
    Reference,
    /// Judge an encoder: runs `CMD ARGS... --elem bf16|fp8 --layout 0|1 --rows M --cols K INPUT OUTDIR`.
    Encoder(ToolArgs),
    /// Judge a format-10 decoder: runs `CMD ARGS... DIR OUT.raw`.
    Decoder(ToolArgs),
    /// Judge an execution-layout decoder (spec 20.9, 20.10, 20.13): runs `CMD ARGS... DIR OUT.raw`
    /// on every execution-layout vector; a rejection must name the first broken rule.
    ExecDecoder(ToolArgs),
    /// Judge an execution-layout transcoder (spec 20.12): runs `CMD ARGS... DIR OUTDIR` (format-10
    /// source) and `CMD ARGS... --rows M --cols K INPUT OUTDIR` (raw BF16 source).
    Transcoder(ToolArgs),
    /// Run the corpus on the GPU (crate nwc-cuda, in this process): every canonical and valid
    /// vector with the exact matvec, again with the bounded matvec (spec 19) where the layout has
    /// one, then `--sweep N` random matrices against the reference. Exits 1 when there is no CUDA
    /// device, unless `--allow-no-device` (then it prints `skipped: no CUDA device` and exits 0).
    Gpu(GpuArgs),
}

#[derive(Args)]
struct GpuArgs {
    /// Random matrices to compare with the reference after the corpus.
    #[arg(long, default_value_t = 0)]
    sweep: usize,
    /// Seed of the random sweep.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Largest side of a sweep matrix.
    #[arg(long, default_value_t = 700)]
    max_dim: u64,
    /// Only the sweep (e.g. under compute-sanitizer).
    #[arg(long)]
    skip_corpus: bool,
    /// Without a device, report the run as skipped (exit 0) instead of failed.
    #[arg(long)]
    allow_no_device: bool,
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

/// `nwc-conform gpu`: the corpus through [`GpuBackend`] (exact, then bounded), then the sweep.
/// Per-vector lines as for every engine, and last the line `N passed, N failed` over all of it.
fn run_gpu(cli: &Cli, args: &GpuArgs) -> ExitCode {
    if cli.json.is_some() {
        eprintln!("nwc-conform: --json is not supported with `gpu` (it runs two corpus passes and a sweep)");
        return ExitCode::from(2);
    }
    if let Err(why) = Gpu::probe() {
        if args.allow_no_device {
            println!("{SKIP_NO_DEVICE} ({why})");
            return ExitCode::SUCCESS;
        }
        eprintln!("nwc-conform: asked to test a GPU, but there is none: {why} (--allow-no-device to skip)");
        return ExitCode::FAILURE;
    }
    let gpu = match Gpu::get(0) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("nwc-conform: {e}");
            return ExitCode::from(2);
        }
    };
    println!("device: {} ({}, {} SMs)", gpu.name, gpu.arch, gpu.sm_count);
    let (mut passed, mut failed) = (0u64, 0u64);
    if !args.skip_corpus {
        let corpus = match Corpus::load(&cli.vectors) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("nwc-conform: {e}");
                return ExitCode::from(2);
            }
        };
        for kernel in [MatvecKernel::Exact, MatvecKernel::Bounded] {
            let class = if kernel == MatvecKernel::Bounded { MatvecClass::Bounded } else { MatvecClass::Exact };
            let report = run::reference::run_backend_class(&corpus, &GpuBackend::new(gpu.clone(), kernel), class);
            print!("{}", report.to_text());
            passed += report.summary.passed;
            failed += report.summary.failed;
        }
        // The execution layout (spec 20): its vectors, exact then bounded (spec 19).
        for kernel in [ExecMatvecKernel::Exact, ExecMatvecKernel::Bounded] {
            let class = if kernel.is_exact() { MatvecClass::Exact } else { MatvecClass::Bounded };
            let report = nwc_conformance::exec::run_exec_backend(&corpus, &GpuExecBackend::new(gpu.clone(), kernel), class);
            print!("{}", report.to_text());
            passed += report.summary.passed;
            failed += report.summary.failed;
        }
    }
    if args.sweep > 0 {
        // Format 10 first, then the execution layout (half as many: each runs every kernel).
        let exec_n = args.sweep.div_ceil(2);
        let sweeps: [(String, &dyn Fn() -> Tally); 2] = [
            (format!("sweep of {} random matrices", args.sweep), &|| run_sweep(&gpu, args.seed, args.sweep, args.max_dim)),
            (format!("execution-layout sweep of {exec_n} random BF16 matrices"), &|| run_exec_sweep(&gpu, args.seed, exec_n, args.max_dim)),
        ];
        for (what, sweep) in sweeps {
            let t0 = std::time::Instant::now();
            let t = sweep();
            for f in &t.failures {
                println!("FAIL       {f}");
            }
            println!("{what} (seed {}, max dim {}) took {:.1} s: {}", args.seed, args.max_dim, t0.elapsed().as_secs_f64(), t.line());
            passed += t.passed;
            failed += t.failed;
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed > 0 || passed == 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::Gpu(args) = &cli.command {
        return run_gpu(&cli, args);
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
        Command::Encoder(t) | Command::Decoder(t) | Command::ExecDecoder(t) | Command::Transcoder(t) => t,
        Command::Gpu(_) => unreachable!("handled in main before the corpus is loaded"),
    };
    let scratch = match tool_args.work_dir {
        Some(_) => None,
        None => Some(tempfile::Builder::new().prefix("nwc-conform-").tempdir().map_err(|e| format!("temporary directory: {e}"))?),
    };
    let tool = tool_args.tool(&scratch)?;
    std::fs::create_dir_all(&tool.work_dir).map_err(|e| format!("{}: {e}", tool.work_dir.display()))?;
    Ok(match &cli.command {
        Command::Encoder(_) => run::encoder::run(&corpus, &tool),
        Command::Transcoder(_) => run::transcoder::run(&corpus, &tool),
        Command::ExecDecoder(_) => run::exec_decoder::run(&corpus, &tool),
        _ => run::decoder::run(&corpus, &tool),
    })
}
