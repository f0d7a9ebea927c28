//! `--exec-batch`: batches 1..64 of the execution layout against cuBLAS GEMM on one shape at a
//! time (synthetic BF16): the exact batched kernels (checked against one launch per column) and the
//! tensor-core kernels (spec 19: checked against the bound where the host reference is
//! affordable), the bench's kernels of [`TENSOR`] or the bounded strip kernel at forced warps per
//! CTA ([`forced_warps`]).

use super::timing::{gaussian_bf16, rotation, time_us, DenseGemm};
use super::Res;
use cudarc::cublas::CudaBlas;
use cudarc::driver::CudaSlice;
use nwc_cuda::exec::{DependentLaunch, ExecMatvecKernel, GpuExecMatrix, StripCols};
use nwc_cuda::{Gpu, GpuMatrix};
use nwc_reference::bounded as level2;
use nwc_reference::{encode, Mode, Shape, Weights};
use std::sync::Arc;

/// Batches 1..64 (`BATCHES`, in order) on one shape (synthetic BF16): cuBLAS GEMM against the exact
/// kernel (batched from N = 2, the production default at N = 1) and the tensor-core kernels of a
/// list of [`TensorRun`]s ([`TENSOR`], or [`forced_warps`]) on the execution layout.
pub struct BatchRow {
    pub cublas_us: f64,
    pub exact_us: f64,
    /// Microseconds of each run of the list (NaN where it does not apply).
    pub tensor_us: Vec<f64>,
}

/// The exact kernels that `--exec-batch --exec-kernels` times beside the tensor-core ones: the
/// CTA strip kernel on two and on four columns per decode (session 36), at 1..8 columns, checked
/// bit for bit against one production launch per column.
const EXACT_BATCHED: [(ExecMatvecKernel, StripCols); 2] =
    [(ExecMatvecKernel::VarStripC2, StripCols::Two), (ExecMatvecKernel::VarStripC4, StripCols::Four)];

/// The batch sizes of `--exec-batch`.
const BATCHES: [usize; 8] = [1, 2, 3, 4, 8, 16, 32, 64];

/// A tensor-core kernel of `--exec-batch`: its label, the kernel, whether it runs at a batch size.
type TensorKernel = (&'static str, ExecMatvecKernel, fn(usize) -> bool);

/// One timed column of `--exec-batch`: a kernel of [`TENSOR`] and, for the bounded strip kernel
/// (up to 32 columns), the warps per CTA forced on its plan (`--exec-tc-warps`).
pub struct TensorRun {
    pub label: String,
    pub kernel: ExecMatvecKernel,
    pub runs: fn(usize) -> bool,
    pub warps: Option<u64>,
    pub launch: DependentLaunch,
}

/// The kernels of [`TENSOR`], unforced, and after the production choice the same with serial
/// launches (`bounded-serial`: no programmatic dependent launch).
/// With `--exec-wgmma`, the warpgroup-MMA kernel (session 20, sm_90a) too, from 2 columns.
pub fn tensor_runs() -> Vec<TensorRun> {
    let run = |label: &str, kernel, runs, launch| TensorRun { label: label.to_owned(), kernel, runs, warps: None, launch };
    let mut v: Vec<TensorRun> = TENSOR.iter().map(|&(label, kernel, runs)| run(label, kernel, runs, DependentLaunch::default())).collect();
    v.insert(1, run("bounded-serial", ExecMatvecKernel::Bounded, |_| true, DependentLaunch::Serial));
    if super::WGMMA.load(std::sync::atomic::Ordering::Relaxed) {
        v.insert(2, run("wgmma (bench)", ExecMatvecKernel::BoundedWgmma, |n| n >= 2, DependentLaunch::default()));
    }
    v
}

/// One timed column of `kernel`, at the batch sizes `runs`, warps as its plan says unless `warps`.
fn column(label: String, kernel: ExecMatvecKernel, runs: fn(usize) -> bool, warps: Option<u64>) -> TensorRun {
    TensorRun { label, kernel, runs, warps, launch: DependentLaunch::default() }
}

/// `--exec-batch --exec-kernels`: the production choice, then each tensor-core kernel of `list`
/// (at the batch sizes of its [`TENSOR`] entry, else all), or an exact kernel that batches on the
/// strip kernel ([`EXACT_BATCHED`], at 1..8 columns); any other exact kernel is refused.
pub fn named(list: &[ExecMatvecKernel]) -> Res<Vec<TensorRun>> {
    let mut v = vec![column("bounded".to_owned(), ExecMatvecKernel::Bounded, |_| true, None)];
    for &kernel in list {
        let batched = EXACT_BATCHED.iter().any(|e| e.0 == kernel);
        if kernel.is_exact() && !batched {
            return Err(format!("--exec-batch --exec-kernels: {} is an exact kernel, not a tensor-core one", kernel.name()).into());
        }
        let runs = match TENSOR.iter().find(|t| t.1 == kernel) {
            Some(t) => t.2,
            None if batched => |n| n <= 8,
            None => |_| true,
        };
        v.push(column(kernel.name().to_owned(), kernel, runs, None));
    }
    Ok(v)
}

/// `--exec-tc-warps`: the production choice, then the bounded strip kernel (1..32 columns) with
/// each of `list`'s warps per CTA forced, its splits as the plan's.
pub fn forced_warps(list: &[u64]) -> Vec<TensorRun> {
    let mut v = vec![column("bounded".to_owned(), ExecMatvecKernel::Bounded, |_| true, None)];
    v.extend(list.iter().map(|&w| column(format!("strip-w{w}"), ExecMatvecKernel::Bounded, |n| n <= 32, Some(w))));
    v
}

/// The tensor-core kernels of `--exec-batch`: label, kernel, the batch sizes it runs. The production
/// choice (`bounded`: the strip kernel to 32 columns, the panel kernel at 64), the strip kernel
/// held to the least splits (production until session 32), the stream kernel
/// (the choice to 16 columns before session 13), the strip kernel with every split launch in
/// clusters (session 28) and with none (production until session 28), the strip kernel held to
/// one split and, at 16
/// columns, its variant that loads activations per chunk, the step kernel (the choice at 32 before
/// session 13) to 32 columns, the tile kernel, the panel kernel held to 1 and to 2 row groups per
/// warp (the production choice takes one of them by its plan), the stream kernel's ceiling probes
/// (no decode; decode without mma) and the strip kernel's (no decode; timed, never checked).
const TENSOR: [TensorKernel; 15] = [
    ("bounded", ExecMatvecKernel::Bounded, |_| true),
    ("least-splits (bench)", ExecMatvecKernel::VarTcStripLeastSplits, |n| n <= 32),
    ("release-end (bench)", ExecMatvecKernel::VarTcStripReleaseEnd, |n| n <= 32),
    ("strip-cluster (bench)", ExecMatvecKernel::VarTcStripCluster, |n| n <= 32),
    ("sum-kernel (bench)", ExecMatvecKernel::VarTcStripSumKernel, |n| n <= 32),
    ("stream", ExecMatvecKernel::BoundedStream, |n| n <= 16),
    ("strip-nosplit (bench)", ExecMatvecKernel::VarTcStripNoSplit, |n| n <= 32),
    ("strip-xchunk (bench)", ExecMatvecKernel::VarTcStripXChunk, |n| n > 8 && n <= 16),
    ("step (bench)", ExecMatvecKernel::BoundedStep, |_| true),
    ("tile (bench)", ExecMatvecKernel::BoundedTile, |_| true),
    ("panel-rg1 (bench)", ExecMatvecKernel::BoundedPanelRg1, |n| n > 32),
    ("panel-rg2 (bench)", ExecMatvecKernel::BoundedPanelRg2, |n| n > 32),
    ("probe: no decode", ExecMatvecKernel::ProbeBoundedRaw, |n| n <= 8),
    ("probe: no mma", ExecMatvecKernel::ProbeBoundedNoMma, |n| n <= 8),
    ("probe: strip, no decode", ExecMatvecKernel::ProbeBoundedStripRaw, |n| n <= 16),
];

pub fn batch(gpu: &Arc<Gpu>, blas: &CudaBlas, m: u64, k: u64, check_limit: u64, tensor: &[TensorRun]) -> Res<Vec<BatchRow>> {
    let s = &gpu.stream;
    let words = gaussian_bf16((m * k) as usize, 11);
    let shape = Shape::new(m, k);
    let enc = encode(Mode::BF16_L0, shape, Weights::Bf16(&words))?.matrix;
    let (gm, dec) = GpuMatrix::upload_and_decode(gpu, &enc)?;
    let e0 = GpuExecMatrix::transcode(&gm)?;
    drop(gm);
    let mut mats = rotation(e0.stored_bytes(), e0, |m| m.try_clone())?;
    let copies = mats.len();
    let dense = DenseGemm::new(gpu, &words, m, k)?;
    let mut out = Vec::new();
    println!("execution layout, batched, {m}x{k} synthetic BF16 (BF16 outputs; us and cuBLAS time / ours):");
    let mut head = format!("{:>4} | {:>9} | {:>17} |", "N", "cuBLAS us", "exact");
    for r in tensor {
        head += &format!(" {:>17} |", r.label);
    }
    println!("{head} check");
    for n in BATCHES {
        let xs: Vec<u16> = gaussian_bf16(k as usize * n, 100 + n as u64);
        let cublas_us = dense.time_us(gpu, blas, &xs, n)?;
        let xw: Vec<f32> = xs.iter().map(|&w| f32::from_bits(u32::from(w) << 16)).collect();
        let mut y: CudaSlice<u16> = s.alloc_zeros(m as usize * n)?;
        let mut tag = String::new();
        // exact: batched against one launch per column
        let exact_us = if n <= 8 {
            for e in mats.iter_mut() {
                e.set_matvec_kernel(if n == 1 { ExecMatvecKernel::Exact } else { ExecMatvecKernel::Stream });
            }
            let xd = mats[0].activations_f32(&xw, n)?;
            let t = time_us(gpu, &mut |i| Ok(mats[i % copies].matvec_into_bf16(&xd, None, &mut y)?))?;
            let got = s.clone_dtoh(&y)?;
            let mut per: Vec<u16> = Vec::new();
            for c in 0..n {
                per.extend(mats[0].matvec_bf16(&xw[c * k as usize..(c + 1) * k as usize], 1, None)?);
            }
            if got != per {
                tag += " MISMATCH(exact batched vs per column)";
            }
            t
        } else {
            f64::NAN
        };
        // the host reference (spec 19.6), once per batch size for every tensor-core kernel (the
        // probes are not checked)
        let expected = if m * k * n as u64 <= check_limit { Some(level2::expected(&dec, &xw, n, None)?) } else { None };
        let mut tensor_us = vec![f64::NAN; tensor.len()];
        for (slot, run) in tensor_us.iter_mut().zip(tensor) {
            let kernel = run.kernel;
            if !(run.runs)(n) {
                continue;
            }
            for e in mats.iter_mut() {
                e.set_matvec_kernel(kernel);
                e.force_tc_strip_warps(run.warps)?;
                e.set_dependent_launch(run.launch);
            }
            let xd = mats[0].activations_bf16(&xs, n)?;
            s.memset_zeros(&mut y)?;
            let t = time_us(gpu, &mut |i| Ok(mats[i % copies].matvec_into_bf16(&xd, None, &mut y)?))?;
            *slot = t;
            if kernel.is_probe() {
                continue; // a ceiling probe: timed, never checked
            }
            if kernel.is_exact() {
                // bit for bit against production's exact matvec, one launch per column
                mats[0].set_matvec_kernel(ExecMatvecKernel::Exact);
                let mut per: Vec<u16> = Vec::new();
                for c in 0..n {
                    per.extend(mats[0].matvec_bf16(&xw[c * k as usize..(c + 1) * k as usize], 1, None)?);
                }
                if s.clone_dtoh(&y)? != per {
                    tag += &format!(" MISMATCH({} against one exact launch per column)", kernel.name());
                    *slot = f64::NAN;
                }
                continue;
            }
            if let Some(expected) = &expected {
                let got: Vec<u32> = s.clone_dtoh(&y)?.into_iter().map(u32::from).collect();
                if let Err(why) = level2::check_outputs(expected, &got, true) {
                    tag += &format!(" MISMATCH({}: {why})", kernel.name());
                    *slot = f64::NAN;
                }
            } else if !tag.contains("unchecked") {
                tag += " (bound unchecked: host reference too large)";
            }
        }
        let cell = |us: f64| if us.is_finite() { format!("{us:9.2} {:6.3}x", cublas_us / us) } else { format!("{:>17}", "-") };
        let mut line = format!("{n:>4} | {cublas_us:9.2} | {} |", cell(exact_us));
        for &us in &tensor_us {
            line += &format!(" {} |", cell(us));
        }
        println!("{line}{tag}");
        out.push(BatchRow { cublas_us, exact_us, tensor_us });
    }
    // the bounded strip kernel's plans: production's (its CTAs per resident slot: how evenly it
    // spreads, and where it releases the next kernel), and where it splits, the cluster variant's
    mats[0].force_tc_strip_warps(None)?;
    for n in [1u32, 8, 16, 32] {
        let info = |k| mats[0].tc_strip_plan_info(n, k);
        let (p, c) = (info(ExecMatvecKernel::Bounded)?, info(ExecMatvecKernel::VarTcStripCluster)?);
        let show = |i: nwc_cuda::exec::TcStripPlanInfo| {
            let sum = match (i.splits, i.cluster) {
                (1, _) => "one split",
                (_, true) => "in clusters",
                _ => "summing kernel",
            };
            let release = if i.release_start { "released at the start" } else { "released after the items" };
            format!(
                "W {} S {} grid {} resident {} ({:.2} rounds, {sum}, {release})",
                i.warps,
                i.splits,
                i.grid,
                i.resident,
                f64::from(i.grid) / i.resident as f64
            )
        };
        let mut line = format!("  strip plan N = {n}: production {}", show(p));
        if p.splits > 1 {
            line += &format!(" | cluster {}", show(c));
        }
        let l = info(ExecMatvecKernel::VarTcStripLeastSplits)?;
        if (l.warps, l.splits, l.cluster) != (p.warps, p.splits, p.cluster) {
            line += &format!(" | least splits {}", show(l));
        }
        println!("{line}");
    }
    // the plans of the exact kernels on several columns named (VarStripC4 runs both)
    let named = |k| tensor.iter().any(|r| r.kernel == k);
    for (kernel, cols) in EXACT_BATCHED {
        if !(named(kernel) || named(ExecMatvecKernel::VarStripC4)) {
            continue;
        }
        let line = match mats[0].strip_cols_plan_info(cols)? {
            Some(c) => {
                let release = if c.release_start { "released at the start" } else { "released after the units" };
                let rounds = f64::from(c.grid) / c.resident as f64;
                format!(
                    "W {} RS {} S {} grid {} resident {} ({rounds:.2} rounds, {release})",
                    c.warps, c.rows, c.slices, c.grid, c.resident
                )
            }
            None => "none (its tile partials do not fit)".to_owned(),
        };
        println!("  strip plan on {} columns: {line}", cols.columns());
    }
    Ok(out)
}

/// Geomeans over the shapes of `--exec-batch`, per batch size: each kernel against cuBLAS GEMM.
pub fn batch_summary(rows: &[Vec<BatchRow>], tensor: &[TensorRun]) {
    println!("\nexecution layout, batched: geomean over {} shapes of cuBLAS time / ours (min-max)", rows.len());
    let mut head = format!("{:>4} | {:>22} |", "N", "exact");
    for r in tensor {
        head += &format!(" {:>22} |", r.label);
    }
    println!("{head}");
    for (i, n) in BATCHES.iter().enumerate() {
        let col = |f: &dyn Fn(&BatchRow) -> f64| {
            let r: Vec<f64> = rows.iter().filter_map(|s| s.get(i)).map(|b| b.cublas_us / f(b)).filter(|v| v.is_finite()).collect();
            if r.is_empty() {
                return "-".to_owned();
            }
            let g = (r.iter().map(|v| v.ln()).sum::<f64>() / r.len() as f64).exp();
            let (lo, hi) = r.iter().fold((f64::INFINITY, 0.0f64), |(a, b), &v| (a.min(v), b.max(v)));
            format!("{g:.3}x ({lo:.2}-{hi:.2})")
        };
        let mut line = format!("{n:>4} | {:>22} |", col(&|b| b.exact_us));
        for j in 0..tensor.len() {
            line += &format!(" {:>22} |", col(&|b| b.tensor_us[j]));
        }
        println!("{line}");
    }
}
