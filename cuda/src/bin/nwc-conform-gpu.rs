//! Runs the golden corpus (and optionally a random sweep) on the GPU against the reference.
//! Usage: nwc-conform-gpu [--vectors DIR] [--sweep N] [--seed S] [--max-dim D]
//! Ends with the line `N passed, N failed`; exit status 1 when anything failed, 2 on usage or
//! setup errors; prints `skipped: no CUDA device` (status 0) when there is no device.

use nwc_cuda::conform::{run_corpus, run_sweep, Tally};
use nwc_cuda::{Gpu, SKIP_NO_DEVICE};
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut vectors: Option<PathBuf> = None;
    let (mut sweep, mut seed, mut max_dim) = (0usize, 1u64, 700u64);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_default();
        match a.as_str() {
            "--vectors" => vectors = Some(PathBuf::from(value())),
            "--sweep" => sweep = value().parse().unwrap_or(0),
            "--seed" => seed = value().parse().unwrap_or(1),
            "--max-dim" => max_dim = value().parse().unwrap_or(700),
            other => {
                eprintln!("unknown argument {other}\nusage: nwc-conform-gpu [--vectors DIR] [--sweep N] [--seed S] [--max-dim D]");
                return ExitCode::from(2);
            }
        }
    }
    if vectors.is_none() && sweep == 0 {
        vectors = Some(PathBuf::from("vectors"));
    }
    if let Err(why) = Gpu::probe() {
        eprintln!("{why}");
        println!("{SKIP_NO_DEVICE}");
        return ExitCode::SUCCESS;
    }
    let gpu = match Gpu::get(0) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    println!("device: {} ({}, {} SMs)", gpu.name, gpu.arch, gpu.sm_count);
    let mut total = Tally::default();
    let mut add = |name: &str, t: Tally| {
        for f in &t.failures {
            println!("FAIL {f}");
        }
        println!("{name}: {}", t.line());
        total.passed += t.passed;
        total.failed += t.failed;
    };
    if let Some(dir) = vectors {
        match run_corpus(&gpu, &dir) {
            Ok(t) => add("corpus", t),
            Err(e) => {
                eprintln!("corpus: {e}");
                return ExitCode::from(2);
            }
        }
    }
    if sweep > 0 {
        let t0 = std::time::Instant::now();
        let t = run_sweep(&gpu, seed, sweep, max_dim);
        println!("sweep of {sweep} random matrices (seed {seed}, max dim {max_dim}) took {:.1} s", t0.elapsed().as_secs_f64());
        add("sweep", t);
    }
    println!("{}", total.line());
    if total.failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
