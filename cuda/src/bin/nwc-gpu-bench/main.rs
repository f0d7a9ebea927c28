//! Batch-1 matvec on the GPU: cuBLAS BF16 against our fused decode+matvec kernels (the production
//! exact kernel and the superseded "codewise" and "staged" ones, docs/gpu.md), same shapes, one
//! run, plus dequant throughput and, for FP8, a plain uncompressed fp8 weight-only matvec as the
//! baseline the fused FP8 path has to beat. The same weights encoded in layout 1 run the bounded
//! matvec (tensor cores, spec 19: every output checked against the bound B) and its exact dequant.
//! Needs the `bench` feature (the superseded kernels and probes are compiled only there). The
//! format-10 rows are in `format10.rs` (`--profile`: `profile.rs`), the execution layout's in `exec*.rs`.
//! Usage: nwc-gpu-bench [--real model.safetensors] [--quick] [--production] [--batch] [--ceiling]
//! (`--profile`: each kernel twice for Nsight Compute, on NWC_PROFILE_SHAPE=MxK or 6144x4096;
//! `--exec-profile` takes the same variable for one shape instead of its three)
//! (`--production`: only the production kernels, no fp8 baseline; `--quick`: shapes up to 60M weights)
//! (`--batch`: only the batched comparison, batch 1..16 against cuBLAS GEMM; `--ceiling`: only
//! where the exact matvec's time goes, `ceiling.rs`; `--exec-profile`, `--exec-sweep N[:W]`: the
//! execution layout's kernels for Nsight Compute, and against the reference on random shapes,
//! `exec_check.rs` (its dependent chains `exec_chain.rs`); `--exec-variants [--real FILE]
//! [--exec-shapes MxK,...]`: the one-column kernels,
//! their bench variants and ceiling probes beside cuBLAS on the 8 bench shapes or the shapes listed,
//! after the sweep when both are given, `exec_variants.rs`; with `--exec-strip-plans W:RS[:S],...`,
//! the strip kernel's CTAs forced to each launch shape instead of the variants, with `--exec-pdl` only
//! the production default with programmatic dependent launch, with serial launches, and with the
//! next kernel released at every launch's start or end (each launch's rounds printed), session
//! 24's plan (no even spread of short launches) with either launch and production again, last;
//! with `--exec-tile-flags` the production default (and serial) and the same with the tile flags of
//! sessions 23-25 (an escape byte for a tile with one escape only) and of before session 23 (no
//! escape bytes); with `--exec-kernels NAME,...` the production default (and serial), the kernels
//! named (`ExecMatvecKernel::name`) and production again, last; `--exec-batch
//! [--quick | --exec-shapes MxK,...] [--exec-tc-warps W,...]`: the batched kernels, N = 1..64,
//! beside cuBLAS GEMM; with `--exec-tc-warps`, the production choice and the bounded strip kernel
//! with each W warps per CTA forced; with `--exec-kernels NAME,...`, the production choice and the
//! tensor-core kernels named (or `var-strip-c2` / `var-strip-c4`, the exact CTA strip kernel on
//! two / four columns per decode, at 1..8 columns, with their plans); `--exec-host
//! [--exec-shapes MxK,...]`: the host's cost of an eager one-column launch, with and without the plan search each launch paid before session 20,
//! `exec_host.rs`; `--exec-wgmma`: `--exec-sweep` and `--exec-batch` also run the warpgroup-MMA
//! kernel; `--exec-wgmma-probe [--exec-shapes MxK,...]`: the ceiling of a warpgroup-MMA
//! kernel at N = 16, 32, 64 beside cuBLAS GEMM and the production bounded matvec, `wgmma_probe.rs`)
//! Times are medians over repeated CUDA-graph replays of 20 launches each, timed with events made
//! with CU_EVENT_DEFAULT, rotating among copies of the weights that together exceed 3x the L2.

use cudarc::cublas::CudaBlas;
use nwc_cuda::exec::ForcedStrip;
use nwc_cuda::Gpu;
use std::sync::atomic::{AtomicBool, Ordering};

/// `--exec-wgmma`: the sweep and `--exec-batch` also run the warpgroup-MMA kernel
/// (`ExecMatvecKernel::BoundedWgmma`, sm_90a; session 20), kept out of them otherwise so that a
/// record call's checks and numbers do not depend on it.
static WGMMA: AtomicBool = AtomicBool::new(false);

mod batch;
mod ceiling;
mod exec;
mod exec_batch;
mod exec_chain;
mod exec_check;
mod exec_host;
mod exec_variants;
mod format10;
mod profile;
mod timing;
mod wgmma_probe;

use timing::real_pool;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

const SHAPES: [(&str, u64, u64); 8] = [
    ("qwen3-8b qkv", 6144, 4096),
    ("qwen3-8b o", 4096, 4096),
    ("qwen3-8b gate_up", 24576, 4096),
    ("qwen3-8b down", 4096, 12288),
    ("qwen3-4b gate_up", 19456, 2560),
    ("qwen3-4b down", 2560, 9728),
    ("odd 1000x3000", 1000, 3000),
    ("qwen3 lm_head", 151936, 4096),
];
const L2_BYTES: u64 = 60 << 20;
const LAUNCHES_PER_GRAPH: usize = 20;

/// `--profile`'s shape: NWC_PROFILE_SHAPE=MxK, 6144x4096 when unset.
fn profile_shape() -> Res<(u64, u64)> {
    let Ok(v) = std::env::var("NWC_PROFILE_SHAPE") else { return Ok((6144, 4096)) };
    let (m, k) = v.split_once('x').ok_or_else(|| format!("NWC_PROFILE_SHAPE={v}: expected MxK"))?;
    Ok((m.parse()?, k.parse()?))
}

/// `--exec-strip-plans`'s list `W:RS[:S],...` (warps per CTA, rows per unit, row slices per CTA;
/// without S the kernel's default), each checked by `nwc_cuda::exec::check_strip_plan`.
fn parse_plans(list: &str) -> Res<Vec<ForcedStrip>> {
    list.split(',')
        .map(|v| {
            let bad = || format!("--exec-strip-plans {v}: expected W:RS or W:RS:S");
            let num = |t: &str| t.parse::<u64>().map_err(|_| bad());
            let parts: Vec<&str> = v.split(':').collect();
            let plan = match parts[..] {
                [w, rs] => ForcedStrip { warps: num(w)?, rows: num(rs)?, slices: None },
                [w, rs, s] => ForcedStrip { warps: num(w)?, rows: num(rs)?, slices: Some(num(s)?) },
                _ => return Err(bad().into()),
            };
            nwc_cuda::exec::check_strip_plan(plan).map_err(|e| format!("--exec-strip-plans {v}: {e}"))?;
            Ok(plan)
        })
        .collect()
}

/// `--exec-tc-warps`'s list `W,W,...`, each checked by `check_tc_strip_warps`.
fn parse_warps(list: &str) -> Res<Vec<u64>> {
    list.split(',')
        .map(|v| {
            let w = v.parse::<u64>().map_err(|_| format!("--exec-tc-warps {v}: expected a number of warps"))?;
            nwc_cuda::exec::check_tc_strip_warps(w).map_err(|e| format!("--exec-tc-warps {v}: {e}"))?;
            Ok(w)
        })
        .collect()
}

/// `--exec-shapes`'s list `MxK,MxK,...`, each labelled `grid MxK`.
fn parse_shapes(list: &str) -> Res<Vec<(String, u64, u64)>> {
    list.split(',')
        .map(|v| {
            let bad = || format!("--exec-shapes {v}: expected MxK, both at least 1");
            let (m, k) = v.split_once('x').ok_or_else(bad)?;
            match (m.parse::<u64>(), k.parse::<u64>()) {
                (Ok(m), Ok(k)) if m > 0 && k > 0 => Ok((format!("grid {m}x{k}"), m, k)),
                _ => Err(bad().into()),
            }
        })
        .collect()
}

/// The kernel lists of `--exec-variants` chosen by a flag (`exec_variants::Entries`).
#[derive(Clone, PartialEq, Eq)]
enum List {
    Launches,
    TileFlags,
    Named(Vec<nwc_cuda::exec::ExecMatvecKernel>),
}

/// `--exec-kernels`'s list of kernel names (`ExecMatvecKernel::name`); an unknown name is an error.
fn parse_kernels(list: &str) -> Res<Vec<nwc_cuda::exec::ExecMatvecKernel>> {
    list.split(',').map(|v| v.parse::<nwc_cuda::exec::ExecMatvecKernel>().map_err(|e| format!("--exec-kernels {v}: {e}").into())).collect()
}

fn main() -> Res<()> {
    let mut real: Option<String> = None;
    let mut quick = false;
    let mut profile = false;
    let mut batch_only = false;
    let mut ceiling_only = false;
    let mut exec_batch = false;
    let mut exec_profile = false;
    let mut exec_sweep: Option<(usize, u64)> = None;
    let mut exec_variants = false;
    // the kernel list of `--exec-variants` other than the default, with the flag that chose it
    let mut list: Option<(String, List)> = None;
    let mut exec_shapes: Option<Vec<(String, u64, u64)>> = None;
    let mut strip_plans: Option<Vec<ForcedStrip>> = None;
    let mut tc_warps: Option<Vec<u64>> = None;
    let mut exec_only = false;
    let mut exec_host = false;
    let mut wgmma_probe = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--real" => real = args.next(),
            "--quick" => quick = true,
            "--production" => format10::PRODUCTION_ONLY.store(true, Ordering::Relaxed),
            "--exec" => {
                exec_only = true;
                format10::PRODUCTION_ONLY.store(true, Ordering::Relaxed);
            }
            "--exec-batch" => exec_batch = true,
            "--exec-profile" => exec_profile = true,
            "--exec-host" => exec_host = true,
            "--exec-wgmma-probe" => wgmma_probe = true,
            "--exec-wgmma" => WGMMA.store(true, Ordering::Relaxed),
            "--exec-variants" => exec_variants = true,
            "--exec-pdl" | "--exec-tile-flags" | "--exec-kernels" => {
                let chosen = match a.as_str() {
                    "--exec-pdl" => List::Launches,
                    "--exec-tile-flags" => List::TileFlags,
                    _ => List::Named(parse_kernels(&args.next().ok_or("--exec-kernels needs NAME,NAME,...")?)?),
                };
                if let Some((first, _)) = &list {
                    return Err(format!("{first} and {a} choose different kernel lists: give one").into());
                }
                list = Some((a.clone(), chosen));
            }
            "--exec-shapes" => exec_shapes = Some(parse_shapes(&args.next().ok_or("--exec-shapes needs MxK,MxK,...")?)?),
            "--exec-tc-warps" => tc_warps = Some(parse_warps(&args.next().ok_or("--exec-tc-warps needs W,W,...")?)?),
            "--exec-strip-plans" => strip_plans = Some(parse_plans(&args.next().ok_or("--exec-strip-plans needs W:RS[:S],...")?)?),
            "--exec-sweep" => {
                let a = args.next().ok_or("--exec-sweep needs a count")?;
                let (n, w) = a.split_once(':').unwrap_or((&a, "8000000"));
                exec_sweep = Some((n.parse()?, w.parse()?));
            }
            "--profile" => profile = true,
            "--batch" => batch_only = true,
            "--ceiling" => ceiling_only = true,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    // options that only qualify another: an error rather than silently unused
    if tc_warps.is_some() && !exec_batch {
        return Err("--exec-tc-warps needs --exec-batch".into());
    }
    if let (Some((flag, _)), true) = (&list, strip_plans.is_some()) {
        return Err(format!("--exec-strip-plans and {flag} choose different kernel lists: give one").into());
    }
    if exec_variants && exec_batch {
        return Err("--exec-variants and --exec-batch are two runs: give one".into());
    }
    let named_batch = exec_batch && matches!(&list, Some((_, List::Named(_))));
    if named_batch && tc_warps.is_some() {
        return Err("--exec-kernels and --exec-tc-warps choose different --exec-batch columns: give one".into());
    }
    if let (Some((flag, _)), false) = (&list, exec_variants || named_batch) {
        let with = if flag == "--exec-kernels" { "--exec-variants or --exec-batch" } else { "--exec-variants" };
        return Err(format!("{flag} needs {with}").into());
    }
    if strip_plans.is_some() && !exec_variants {
        return Err("--exec-strip-plans needs --exec-variants".into());
    }
    // `--exec-batch`'s columns, checked before any device is opened
    let tensor = match (&tc_warps, &list) {
        (Some(list), _) => exec_batch::forced_warps(list),
        (None, Some((_, List::Named(kernels)))) if exec_batch => exec_batch::named(kernels)?,
        (None, _) => exec_batch::tensor_runs(),
    };
    if let Err(why) = Gpu::probe() {
        eprintln!("{why}");
        println!("{}", nwc_cuda::SKIP_NO_DEVICE);
        return Ok(());
    }
    let gpu = Gpu::get(0)?;
    let blas = CudaBlas::new(gpu.stream.clone())?;
    if exec_profile {
        if std::env::var_os("NWC_PROFILE_SHAPE").is_some() {
            return exec_check::profile(&gpu, &[profile_shape()?]);
        }
        return exec_check::profile(&gpu, &[(6144, 4096), (24576, 4096), (1000, 3000)]);
    }
    if let Some((n, w)) = exec_sweep {
        exec_check::sweep(&gpu, n, w)?;
        if !exec_variants {
            return Ok(());
        }
    }
    let listed = || -> Vec<(&str, u64, u64)> {
        match &exec_shapes {
            Some(list) => list.iter().map(|(n, m, k)| (n.as_str(), *m, *k)).collect(),
            None => SHAPES.to_vec(),
        }
    };
    if exec_host {
        return exec_host::run(&gpu, &listed());
    }
    if wgmma_probe {
        // the bench shapes of `--exec-batch --quick` unless listed
        let shapes: Vec<(&str, u64, u64)> = match &exec_shapes {
            Some(_) => listed(),
            None => SHAPES.iter().copied().filter(|&(_, m, k)| m * k <= 60_000_000).collect(),
        };
        return wgmma_probe::run(&gpu, &blas, &shapes);
    }
    if exec_variants {
        // one process for the sweep and the timing: one NVRTC compile
        let pool = real.as_deref().map(real_pool).transpose()?;
        let which = match (&strip_plans, list.as_ref().map(|(_, l)| l)) {
            (Some(plans), _) => exec_variants::Entries::Plans(plans),
            (None, Some(List::Launches)) => exec_variants::Entries::Launches,
            (None, Some(List::TileFlags)) => exec_variants::Entries::TileFlags,
            (None, Some(List::Named(kernels))) => exec_variants::Entries::Named(kernels),
            (None, None) => exec_variants::Entries::All,
        };
        return exec_variants::run(&gpu, &blas, &exec_variants::entries(which), &listed(), pool.as_deref());
    }
    if profile {
        let (m, k) = profile_shape()?;
        return profile::format10(&gpu, m, k);
    }
    println!("device: {} ({}, {} SMs)", gpu.name, gpu.arch, gpu.sm_count);
    if ceiling_only {
        return ceiling::bench_ceiling(&gpu, &blas);
    }
    if exec_batch {
        // the bench shapes (`--quick`: up to 60 M weights), or those of --exec-shapes
        let shapes: Vec<(u64, u64)> = match &exec_shapes {
            Some(list) => list.iter().map(|&(_, m, k)| (m, k)).collect(),
            None => SHAPES.iter().filter(|&&(_, m, k)| !quick || m * k <= 60_000_000).map(|&(_, m, k)| (m, k)).collect(),
        };
        let mut rows = Vec::new();
        for (m, k) in shapes {
            rows.push(exec_batch::batch(&gpu, &blas, m, k, 1 << 28, &tensor)?);
        }
        exec_batch::batch_summary(&rows, &tensor);
        return Ok(());
    }
    if batch_only {
        for (m, k) in [(6144, 4096), (4096, 4096)] {
            batch::bench_batch(&gpu, &blas, m, k)?;
        }
        return Ok(());
    }
    format10::run(&gpu, &blas, real.as_deref(), quick, exec_only)
}
