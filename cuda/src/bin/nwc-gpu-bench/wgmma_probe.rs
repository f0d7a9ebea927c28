//! `--exec-wgmma-probe [--exec-shapes MxK,...]`: the ceiling of a warpgroup-MMA (wgmma) kernel on
//! the execution layout's batches (kernels/bench/exec_wgmma_probe.cu: the layout's bytes per
//! weight loaded straight into registers and used as A fragments without decode, the activations
//! of a column range staged once per CTA in shared memory as the B operand), beside cuBLAS GEMM
//! and the production bounded matvec at N = 16, 32 and 64, synthetic BF16. The probe computes
//! nothing usable: timed, never compared. Its source needs sm_90a, so it is compiled here on its
//! own; other devices skip it.

use super::timing::{gaussian_bf16, rotation, time_us, DenseGemm};
use super::Res;
use cudarc::cublas::CudaBlas;
use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};
use nwc_cuda::exec::{ExecMatvecKernel, GpuExecMatrix};
use nwc_cuda::Gpu;
use nwc_reference::Shape;
use std::sync::Arc;

/// Batch sizes timed: 8 x the probe's n-tiles (2, 4, 8).
const BATCHES: [u64; 3] = [16, 32, 64];
/// Warpgroups per CTA of the two probe kernels.
const WARPGROUPS: [u64; 2] = [2, 4];

/// The probe's launch for `m` rows, `kp` columns (a multiple of 128) and `n` columns of
/// activations: ranges S of R columns, the fewest waves x steps per warp (a step: 128 columns),
/// where R x N BF16 activations fit shared memory; on a tie the fewest ranges.
fn plan(f: &CudaFunction, m: u64, kp: u64, n: u64, wg: u64, sms: u64, optin: u64) -> Res<Option<(u64, u64)>> {
    let items = kp / 128;
    let panels = m.div_ceil(64 * wg);
    let mut best: Option<(u64, u64, u64)> = None;
    for s in 1..=items {
        let r = items.div_ceil(s) * 128;
        let s = items.div_ceil(r / 128); // the ranges R actually makes
        let smem = r * n * 2;
        if smem > optin {
            continue;
        }
        let per_sm = u64::from(f.occupancy_max_active_blocks_per_multiprocessor((128 * wg) as u32, smem as usize, None)?);
        if per_sm == 0 {
            continue;
        }
        let cost = (panels * s).div_ceil(sms * per_sm) * (r / 128);
        if best.is_none_or(|(c, bs, _)| cost < c || (cost == c && s < bs)) {
            best = Some((cost, s, r));
        }
    }
    Ok(best.map(|(_, s, r)| (s, r)))
}

struct Probe {
    functions: Vec<(u64, u64, u64, CudaFunction)>, // (n-tiles, warpgroups, schedule, kernel)
    sum: CudaFunction,
    _module: Arc<cudarc::driver::CudaModule>,
}

fn load(gpu: &Arc<Gpu>) -> Res<Probe> {
    let ptx = cudarc::nvrtc::compile_ptx_with_opts(nwc_cuda::kernels::WGMMA_PROBE_SOURCE, nwc_cuda::kernels::options("sm_90a"))
        .map_err(|e| format!("compiling the wgmma probe: {e:?}"))?;
    let module = gpu.ctx.load_module(ptx)?;
    let optin = gpu.smem_optin;
    let mut functions = Vec::new();
    for nt in [2u64, 4, 8] {
        for pipe in [0u64, 1] {
            for wg in WARPGROUPS {
                // one of nwc_cuda::kernels::WGMMA_PROBE_KERNELS
                let f = module.load_function(&format!("bench_exec_wgmma_probe_n{nt}_wg{wg}_p{pipe}"))?;
                f.set_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, optin as i32)?;
                functions.push((nt, wg, pipe, f));
            }
        }
    }
    let sum = module.load_function("bench_exec_wgmma_probe_sum")?;
    Ok(Probe { functions, sum, _module: module })
}

/// The probe's weight bytes: an sm plane and a code plane of `m` rows of `kp` columns (zeros: the
/// probe does not decode).
struct Planes {
    sm: CudaSlice<u8>,
    codes: CudaSlice<u8>,
}

pub fn run(gpu: &Arc<Gpu>, blas: &CudaBlas, shapes: &[(&str, u64, u64)]) -> Res<()> {
    if gpu.arch != "sm_90" {
        println!("exec wgmma probe: skipped (needs sm_90a; this device is {})", gpu.arch);
        return Ok(());
    }
    let probe = load(gpu)?;
    let s = &gpu.stream;
    let sms = u64::from(gpu.sm_count);
    let optin = u64::from(gpu.smem_optin);
    println!("exec wgmma probe (no decode, not a matvec) beside cuBLAS GEMM and the production bounded matvec (us; cuBLAS time / ours)");
    // (N, bounded, the probe's fastest, the pipelined schedule's faster CTA size), cuBLAS time /
    // ours, per shape
    let mut ratios: Vec<(u64, f64, f64, f64)> = Vec::new();
    for &(name, m, k) in shapes {
        let kp = k.div_ceil(128) * 128;
        let words = gaussian_bf16((m * k) as usize, 11);
        let dense = DenseGemm::new(gpu, &words, m, k)?;
        let e0 = GpuExecMatrix::from_bf16(gpu, Shape::new(m, k), &words)?;
        drop(words);
        let mut mats = rotation(e0.stored_bytes(), e0, |m| m.try_clone())?;
        for e in mats.iter_mut() {
            e.set_matvec_kernel(ExecMatvecKernel::Bounded);
        }
        let copies = mats.len();
        let first = Planes { sm: s.alloc_zeros((m * kp) as usize)?, codes: s.alloc_zeros((m * kp / 2) as usize)? };
        let planes = rotation(m * kp * 3 / 2, first, |_| -> Res<Planes> {
            Ok(Planes { sm: s.alloc_zeros((m * kp) as usize)?, codes: s.alloc_zeros((m * kp / 2) as usize)? })
        })?;
        for n in BATCHES {
            let xs = gaussian_bf16((k * n) as usize, 100 + n);
            let cublas_us = dense.time_us(gpu, blas, &xs, n as usize)?;
            let mut y: CudaSlice<u16> = s.alloc_zeros((m * n) as usize)?;
            let xd = mats[0].activations_bf16(&xs, n as usize)?;
            let bounded_us = time_us(gpu, &mut |i| Ok(mats[i % copies].matvec_into_bf16(&xd, None, &mut y)?))?;
            let mut xp = vec![0u16; (kp * n) as usize];
            for (dst, src) in xp.chunks_exact_mut(kp as usize).zip(xs.chunks_exact(k as usize)) {
                dst[..k as usize].copy_from_slice(src);
            }
            let xpd = s.clone_htod(&xp)?;
            let mut cells = vec![format!("bounded {bounded_us:8.2} ({:.3}x)", cublas_us / bounded_us)];
            let (mut best, mut best_pipe) = (f64::INFINITY, f64::INFINITY);
            for (_, wg, pipe, f) in probe.functions.iter().filter(|(nt, _, _, _)| nt * 8 == n) {
                let Some((splits, r)) = plan(f, m, kp, n, *wg, sms, optin)? else {
                    cells.push(format!("wg{wg}/p{pipe} -"));
                    continue;
                };
                let mut part: CudaSlice<f32> = s.alloc_zeros((splits * n * m) as usize)?;
                let (m32, kp32, r32, n32, s32) = (m as u32, kp as u32, r as u32, n as u32, splits as u32);
                let cfg = LaunchConfig {
                    grid_dim: (m.div_ceil(64 * wg) as u32, splits as u32, 1),
                    block_dim: ((128 * wg) as u32, 1, 1),
                    shared_mem_bytes: (r * n * 2) as u32,
                };
                let sum_cfg = LaunchConfig { grid_dim: ((m * n).div_ceil(256) as u32, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
                let t = time_us(gpu, &mut |i| {
                    let p = &planes[i % planes.len()];
                    let mut b = s.launch_builder(f);
                    b.arg(&p.sm).arg(&p.codes).arg(&xpd).arg(&m32).arg(&kp32).arg(&r32).arg(&mut part);
                    // SAFETY: the argument list of WGP_KERNEL (exec_wgmma_probe.cu); the planes hold
                    // M rows of Kp and Kp / 2 bytes, xpd N columns of Kp BF16 words, part S x N x M
                    // floats; R x N x 2 bytes of shared memory (within the opt-in, set at load).
                    unsafe { b.launch(cfg) }?;
                    let mut b = s.launch_builder(&probe.sum);
                    b.arg(&part).arg(&m32).arg(&n32).arg(&s32).arg(&mut y);
                    // SAFETY: part holds S x N x M floats, y N x M BF16 words.
                    unsafe { b.launch(sum_cfg) }?;
                    Ok(())
                })?;
                best = best.min(t);
                cells.push(format!("wg{wg}/p{pipe} S={splits} R={r} {t:8.2} ({:.3}x)", cublas_us / t));
                if *pipe == 1 {
                    best_pipe = best_pipe.min(t);
                }
            }
            println!("{name:<17} {m:>6}x{k:<5} N={n:<2} cuBLAS {cublas_us:8.2} | {}", cells.join(" | "));
            ratios.push((n, cublas_us / bounded_us, cublas_us / best, cublas_us / best_pipe));
        }
    }
    let geo = |v: Vec<f64>| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp();
    for n in BATCHES {
        let sel: Vec<&(u64, f64, f64, f64)> = ratios.iter().filter(|r| r.0 == n).collect();
        if !sel.is_empty() {
            let (b, p, q) =
                (geo(sel.iter().map(|r| r.1).collect()), geo(sel.iter().map(|r| r.2).collect()), geo(sel.iter().map(|r| r.3).collect()));
            println!(
                "exec wgmma probe, N = {n}, geomean over {} shapes: bounded {b:.3}x; probe, fastest per shape {p:.3}x, pipelined (p1) {q:.3}x of cuBLAS",
                sel.len()
            );
        }
    }
    Ok(())
}
