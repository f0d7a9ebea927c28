//! `--exec-variants`: the one-column exact matvec kernels (the strip default, lean, rows) and the
//! ceiling probes (kernels/bench/exec_matvec_variants.cu) beside cuBLAS, batch 1, on
//! the 8 bench shapes or those of `--exec-shapes` (synthetic and, with `--real`, real weights;
//! a shape grid is how the strip kernels' plan was calibrated, exec/strip.rs), quickly enough for a short
//! device call: weights generated on all cores, encoded on the GPU (`GpuExecMatrix::from_bf16`,
//! byte-identical to the reference encoder), no format-10 encode, dequant or transcode (those
//! are `--exec`). Every output is compared with the production kernel's (`Exact`), which the
//! sweep and `--exec` check against the reference.

use super::exec_check::STRIP_VARIANTS;
use super::timing::{cublas_matvec_us, gaussian_bf16, rotation, tile, time_us};
use super::Res;
use cudarc::cublas::CudaBlas;
use cudarc::driver::CudaSlice;
use nwc_cuda::exec::{DependentLaunch, ExecMatvecKernel, ForcedStrip, GpuExecMatrix, TileFlagRule};
use nwc_cuda::Gpu;
use nwc_reference::Shape;
use std::sync::Arc;

/// Timed after cuBLAS, in this order: the production default (the strip kernel at one column, the
/// reference), the strip kernel's variants (`exec_check::STRIP_VARIANTS`), then these. `stream` is
/// the lean kernel, `rows` the short-CTA kernel. The `probe-` kernels are ceiling probes (not
/// exact): timed, never compared.
const OTHERS: [ExecMatvecKernel; 8] = [
    ExecMatvecKernel::Stream,
    ExecMatvecKernel::Rows,
    ExecMatvecKernel::ProbeStripNoDecode,
    ExecMatvecKernel::ProbeNoDecode,
    ExecMatvecKernel::ProbeLoads,
    ExecMatvecKernel::ProbeStream4x1,
    ExecMatvecKernel::ProbeStream2x2,
    ExecMatvecKernel::ProbeStream1x4,
];

/// One timed kernel: a kernel choice, the launch shape forced on the CTA strip kernel (warps per
/// CTA, rows per unit; `--exec-strip-plans`), how its launches follow the one before, whether the
/// rule of the tile flags (production: [`TileFlagRule::SharedByte`]; others by `--exec-tile-flags`), and
/// its label.
pub struct Entry {
    kernel: ExecMatvecKernel,
    plan: Option<ForcedStrip>,
    launch: DependentLaunch,
    flags: TileFlagRule,
    label: String,
}

/// Which kernels `--exec-variants` times.
pub enum Entries<'a> {
    /// The production default, the strip variants and `OTHERS`.
    All,
    /// The production default, W1 forced, the CTA kernel at each forced (W, RS) and the strip
    /// kernels' no-decode probe (`--exec-strip-plans`).
    Plans(&'a [ForcedStrip]),
    /// The production default with programmatic dependent launch and without, with the next
    /// kernel released at every launch's start or end, the production plan without its CTAs per
    /// SM capped (`VarStripUncapped`, session 25) with either launch, and production again, last
    /// (`--exec-pdl`).
    Launches,
    /// The production default (and serial), then the same with the tile flags of sessions 23-25
    /// (an escape byte only for a tile with one code-15 weight) and of before session 23 (every
    /// flagged tile takes the escape prefix and a load of esc; `--exec-tile-flags`).
    TileFlags,
    /// The production default (and serial), the kernels named, production again, last
    /// (`--exec-kernels`).
    Named(&'a [ExecMatvecKernel]),
}

/// The kernels timed, production first, then production with serial launches.
pub fn entries(which: Entries) -> Vec<Entry> {
    let plain = |k: ExecMatvecKernel| Entry {
        kernel: k,
        plan: None,
        launch: DependentLaunch::default(),
        flags: TileFlagRule::SharedByte,
        label: k.name().to_string(),
    };
    let serial = Entry { launch: DependentLaunch::Serial, label: "exact-serial".into(), ..plain(ExecMatvecKernel::Exact) };
    let mut v = vec![plain(ExecMatvecKernel::Exact), serial];
    match which {
        Entries::All => v.extend(STRIP_VARIANTS.into_iter().chain(OTHERS).map(plain)),
        Entries::Plans(list) => {
            v.push(plain(ExecMatvecKernel::VarStripW1));
            v.extend(list.iter().map(|&f| Entry {
                plan: Some(f),
                label: match f.slices {
                    Some(s) => format!("cta-w{}-rs{}-s{s}", f.warps, f.rows),
                    None => format!("cta-w{}-rs{}", f.warps, f.rows),
                },
                ..plain(ExecMatvecKernel::VarStripCta)
            }));
            v.push(plain(ExecMatvecKernel::ProbeStripNoDecode));
        }
        Entries::Launches => {
            v.extend(
                [ExecMatvecKernel::VarStripReleaseStart, ExecMatvecKernel::VarStripReleaseEnd, ExecMatvecKernel::VarStripUncapped]
                    .map(plain),
            );
            v.push(Entry {
                launch: DependentLaunch::Serial,
                label: "var-strip-uncapped-serial".into(),
                ..plain(ExecMatvecKernel::VarStripUncapped)
            });
            // production again, last: the drift over a row (session 25: a variant whose plan on
            // lm_head was production's read 30% slow in a row's 7th and 8th entries, alone too,
            // while production in the 10th did not)
            v.push(Entry { label: "exact-again".into(), ..plain(ExecMatvecKernel::Exact) });
        }
        Entries::Named(list) => {
            v.extend(list.iter().copied().map(plain));
            v.push(Entry { label: "exact-again".into(), ..plain(ExecMatvecKernel::Exact) });
        }
        Entries::TileFlags => {
            for (flags, label) in [(TileFlagRule::LoneByte, "exact-lone-byte"), (TileFlagRule::Plain, "exact-flags-1")] {
                v.push(Entry { flags, label: label.into(), ..plain(ExecMatvecKernel::Exact) });
            }
        }
    }
    v
}

/// N(0, 0.02) BF16 words from `gaussian_bf16` streams of 4 M words each, generated in parallel.
fn gaussian_par(n: usize, seed: u64) -> Vec<u16> {
    const CHUNK: usize = 1 << 22;
    let chunks = n.div_ceil(CHUNK);
    let threads = std::thread::available_parallelism().map_or(4, |t| t.get()).min(chunks.max(1));
    let parts: Vec<Vec<Vec<u16>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    (t..chunks).step_by(threads).map(|c| gaussian_bf16(CHUNK.min(n - c * CHUNK), seed * 1_000_003 + c as u64)).collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("generator thread panicked")).collect()
    });
    let mut out = Vec::with_capacity(n);
    for c in 0..chunks {
        out.extend_from_slice(&parts[c % threads][c / threads]);
    }
    out
}

struct Row {
    label: String,
    m: u64,
    k: u64,
    cublas_us: f64,
    /// Per entry of `kernels()` (NaN when the output differed from Exact's).
    us: Vec<f64>,
}

fn measure(gpu: &Arc<Gpu>, blas: &CudaBlas, kernels: &[Entry], label: String, m: u64, k: u64, words: &[u16]) -> Res<Row> {
    let s = &gpu.stream;
    let x: Vec<u16> =
        gaussian_bf16(k as usize, 7).iter().map(|&w| half::bf16::from_f32(half::bf16::from_bits(w).to_f32() * 50.0).to_bits()).collect();
    let cublas_us = cublas_matvec_us(gpu, blas, words, &x, m, k)?;
    let e0 = GpuExecMatrix::from_bf16(gpu, Shape::new(m, k), words)?;
    let mut mats = rotation(e0.stored_bytes(), e0, |m| m.try_clone())?;
    let copies = mats.len();
    let xf: Vec<f32> = x.iter().map(|&w| f32::from_bits(u32::from(w) << 16)).collect();
    let xd = mats[0].activations_f32(&xf, 1)?;
    let mut y16: CudaSlice<u16> = s.alloc_zeros(m as usize)?;
    let mut us = Vec::new();
    let mut expected: Option<Vec<u16>> = None;
    let mut names = Vec::new();
    for entry in kernels {
        let kernel = entry.kernel;
        for e in mats.iter_mut() {
            e.set_matvec_kernel(kernel);
            e.force_strip_plan(entry.plan)?;
            e.set_dependent_launch(entry.launch);
            e.set_tile_flag_rule(entry.flags)?;
        }
        let (name, threads) = mats[0].one_column_kernel()?;
        let strip = match mats[0].one_column_strip_rows()? {
            Some((rs, slices)) => format!("/rs{rs}s{slices}"),
            None => String::new(),
        };
        names.push(format!("{name}/{}w{strip}/{:.2}r", threads / 32, mats[0].one_column_rounds()?));
        s.memset_zeros(&mut y16)?;
        let t = time_us(gpu, &mut |i| Ok(mats[i % copies].matvec_into_bf16(&xd, None, &mut y16)?))?;
        let got = s.clone_dtoh(&y16)?;
        let want = expected.get_or_insert_with(|| got.clone());
        let bad = if kernel.is_probe() { 0 } else { got.iter().zip(want.iter()).filter(|(a, b)| a != b).count() };
        if bad > 0 {
            println!("MISMATCH {} {m}x{k}: {bad} rows differ from exact", kernel.name());
        }
        us.push(if bad == 0 { t } else { f64::NAN });
    }
    let per: Vec<String> =
        kernels.iter().zip(&us).zip(&names).map(|((kn, t), n)| format!("{} {t:7.2} ({:.3}x, {n})", kn.label, cublas_us / t)).collect();
    println!("{label:<48} cuBLAS {cublas_us:8.2} us | {}", per.join(" | "));
    Ok(Row { label, m, k, cublas_us, us })
}

fn geo(v: &[f64]) -> f64 {
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
}

/// Per source: each kernel's geomean against cuBLAS and its minimum over the shapes of at least
/// 4096x4096.
fn summary(kernels: &[Entry], rows: &[Row]) {
    for kind in ["synthetic", "real"] {
        let sel: Vec<&Row> = rows.iter().filter(|r| r.label.starts_with(kind)).collect();
        if sel.is_empty() {
            continue;
        }
        println!("\nexec variants, {kind}, geomean of cuBLAS time / ours over {} shapes:", sel.len());
        for (i, kn) in kernels.iter().enumerate() {
            let ratio: Vec<f64> = sel.iter().map(|r| r.cublas_us / r.us[i]).collect();
            let min_large = sel.iter().zip(&ratio).filter(|(r, _)| r.m * r.k >= 4096 * 4096).map(|(_, &v)| v).fold(f64::INFINITY, f64::min);
            println!("  {:<22} {:.3}x (min >= 4096x4096 {:.3}x)", kn.label, geo(&ratio), min_large);
        }
    }
}

/// `--exec-variants`: jobs (label, M, K) with `pool` = real weights to tile (None: synthetic), the
/// kernels of [`entries`].
pub fn run(gpu: &Arc<Gpu>, blas: &CudaBlas, kernels: &[Entry], shapes: &[(&str, u64, u64)], real: Option<&[u16]>) -> Res<()> {
    let t0 = std::time::Instant::now();
    let mut rows = Vec::new();
    for (i, &(name, m, k)) in shapes.iter().enumerate() {
        let n = (m * k) as usize;
        let words = gaussian_par(n, i as u64 + 1);
        rows.push(measure(gpu, blas, kernels, format!("{:<10} {name:<17} {m:>6}x{k:<5} bf16", "synthetic"), m, k, &words)?);
        drop(words);
        if let Some(pool) = real {
            let words = tile(pool, n);
            rows.push(measure(gpu, blas, kernels, format!("{:<10} {name:<17} {m:>6}x{k:<5} bf16", "real"), m, k, &words)?);
        }
    }
    summary(kernels, &rows);
    println!("exec variants: {:.1} s", t0.elapsed().as_secs_f64());
    Ok(())
}
