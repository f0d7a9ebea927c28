//! `--exec-batch-variants`: the bench-only variants of the stream tensor-core kernel
//! (kernels/bench/exec_tensor_variants.cu) beside cuBLAS GEMM and the production bounded kernel,
//! in one run, on the `--exec-batch` shapes at the batch sizes the stream kernel serves (2..16
//! columns per decode). Every variant output is checked twice: bit for bit against the production
//! bounded kernel's (the variants keep its mma sequence and the warp order of the row-group sums,
//! so any difference is a defect) and against spec 19's bound where the host reference is
//! affordable. A failed check prints a `!!! MISMATCH` line, drops the time from the geomeans and
//! makes the command exit with an error after the summary.
//!
//! Promotion rule (docs/gpu.md, "session 6, late"): a variant replaces the production stream
//! kernel only if, in one run, its geomean against cuBLAS beats the production bounded kernel's
//! by >= 3% at every N it serves (2, 4, 8, 16), it loses > 3% on no single (shape, N), and every
//! output is bit-identical to production's and within the bound.

use super::timing::{gaussian_bf16, time_us, DenseGemm};
use super::{Res, L2_BYTES};
use cudarc::cublas::CudaBlas;
use cudarc::driver::CudaSlice;
use nwc_cuda::exec::{ExecMatvecKernel, GpuExecMatrix};
use nwc_cuda::{Gpu, GpuMatrix};
use nwc_reference::bounded as level2;
use nwc_reference::{encode, Mode, Shape, Weights};
use std::sync::Arc;

/// The batch sizes of `--exec-batch-variants` (the stream kernel's range: 8 and 16 columns per decode).
pub const VARIANT_BATCHES: [usize; 4] = [2, 4, 8, 16];
/// Production first; the rest are the bench variants.
pub const VARIANTS: [ExecMatvecKernel; 4] =
    [ExecMatvecKernel::Bounded, ExecMatvecKernel::BoundedXpf, ExecMatvecKernel::BoundedRed, ExecMatvecKernel::BoundedXpfRed];

/// Per batch size: cuBLAS microseconds and each kernel's (NaN when a check failed).
pub struct VariantRow {
    pub cublas_us: f64,
    pub us: [f64; VARIANTS.len()],
}

/// The shapes and batch sizes of `--exec-batch-variants-check`: one launch per kernel, no timing,
/// small enough for compute-sanitizer (racecheck, synccheck): ragged M and K; 1000x3000 gives
/// each CTA one row group (6 warps), 34000x520 two or three (2 warps, 8 CTAs per SM: the
/// split-barrier reduction's barrier 2 and its rotating reducer are exercised), 40x500 one warp.
pub const CHECK_SHAPES: [(u64, u64); 3] = [(1000, 3000), (34000, 520), (40, 500)];
pub const CHECK_BATCHES: [usize; 2] = [2, 16];

/// One shape: returns its rows (in `batches` order) and the number of failed checks. `blas`
/// None: one launch per kernel and no timing (the check mode; times are reported as 0).
pub fn variants(
    gpu: &Arc<Gpu>,
    blas: Option<&CudaBlas>,
    m: u64,
    k: u64,
    batches: &[usize],
    check_limit: u64,
) -> Res<(Vec<VariantRow>, usize)> {
    let s = &gpu.stream;
    let words = gaussian_bf16((m * k) as usize, 11);
    let shape = Shape::new(m, k);
    let enc = encode(Mode::BF16_L0, shape, Weights::Bf16(&words))?.matrix;
    let (gm, dec) = GpuMatrix::upload_and_decode(gpu, &enc)?;
    let e0 = GpuExecMatrix::transcode(&gm)?;
    drop(gm);
    let copies = (3 * L2_BYTES / e0.stored_bytes() + 1).clamp(1, 8) as usize;
    let mut mats = vec![e0];
    for _ in 1..copies {
        mats.push(mats[0].try_clone()?);
    }
    let dense = match blas {
        Some(_) => Some(DenseGemm::new(gpu, &words, m, k)?),
        None => None,
    };
    let (mut out, mut failed) = (Vec::new(), 0usize);
    if blas.is_some() {
        println!("execution layout, bounded variants, {m}x{k} synthetic BF16 (BF16 outputs):");
        print!("{:>4} | {:>9}", "N", "cuBLAS us");
        for v in VARIANTS {
            print!(" | {:>15} us {:>6}", v.name(), "/cB");
        }
        println!(" | check");
    }
    for &n in batches {
        let xs: Vec<u16> = gaussian_bf16(k as usize * n, 100 + n as u64);
        let cublas_us = match (&dense, blas) {
            (Some(d), Some(b)) => d.time_us(gpu, b, &xs, n)?,
            _ => 0.0,
        };
        let xw: Vec<f32> = xs.iter().map(|&w| f32::from_bits(u32::from(w) << 16)).collect();
        let expected = if m * k * n as u64 <= check_limit { Some(level2::expected(&dec, &xw, n, None)?) } else { None };
        let mut y: CudaSlice<u16> = s.alloc_zeros(m as usize * n)?;
        let mut tag = String::new();
        let mut production: Option<Vec<u16>> = None;
        let mut us = [f64::NAN; VARIANTS.len()];
        for (i, &kernel) in VARIANTS.iter().enumerate() {
            for e in mats.iter_mut() {
                e.set_matvec_kernel(kernel);
            }
            let xd = mats[0].activations_bf16(&xs, n)?;
            s.memset_zeros(&mut y)?;
            let t = if blas.is_some() {
                time_us(gpu, &mut |c| Ok(mats[c % copies].matvec_into_bf16(&xd, None, &mut y)?))?
            } else {
                mats[0].matvec_into_bf16(&xd, None, &mut y)?;
                0.0
            };
            let got = s.clone_dtoh(&y)?;
            let mut ok = true;
            if let Some(expected) = &expected {
                let got32: Vec<u32> = got.iter().copied().map(u32::from).collect();
                if let Err(why) = level2::check_outputs(expected, &got32, true) {
                    println!("!!! MISMATCH {m}x{k} N={n} {}: outside the spec 19 bound: {why}", kernel.name());
                    ok = false;
                }
            }
            match &production {
                None => production = Some(got),
                Some(p) if *p != got => {
                    let first = p.iter().zip(&got).position(|(a, b)| a != b).unwrap_or(0);
                    println!(
                        "!!! MISMATCH {m}x{k} N={n} {}: differs from the production bounded kernel (first at output {first}: {:#06x} vs {:#06x})",
                        kernel.name(),
                        got[first],
                        p[first]
                    );
                    ok = false;
                }
                Some(_) => {}
            }
            if ok {
                us[i] = t;
            } else {
                failed += 1;
                tag += " MISMATCH";
            }
        }
        if expected.is_none() {
            tag += " (bound unchecked: host reference too large; bits vs production checked)";
        }
        if blas.is_none() {
            println!("{m}x{k} N={n}: {} kernels checked{tag}", VARIANTS.len());
        } else {
            print!("{n:>4} | {cublas_us:9.2}");
            for t in us {
                print!(" | {t:18.2} {:5.3}x", cublas_us / t);
            }
            println!(" |{tag}");
        }
        out.push(VariantRow { cublas_us, us });
    }
    Ok((out, failed))
}

/// One geomean line per (kernel, N) against cuBLAS GEMM, then the variants against production.
pub fn summary(rows: &[Vec<VariantRow>], failed: usize) -> Res<()> {
    let geo = |r: &[f64]| (r.iter().map(|v| v.ln()).sum::<f64>() / r.len() as f64).exp();
    println!("\nexecution layout, bounded variants: geomean over {} shapes of cuBLAS time / ours (min-max)", rows.len());
    for (i, kernel) in VARIANTS.iter().enumerate() {
        for (j, n) in VARIANT_BATCHES.iter().enumerate() {
            let r: Vec<f64> = rows.iter().filter_map(|s| s.get(j)).map(|b| b.cublas_us / b.us[i]).filter(|v| v.is_finite()).collect();
            let vs: Vec<f64> = rows.iter().filter_map(|s| s.get(j)).map(|b| b.us[0] / b.us[i]).filter(|v| v.is_finite()).collect();
            if r.is_empty() {
                println!("variant {:<16} N={n:<3} -", kernel.name());
                continue;
            }
            let (lo, hi) = r.iter().fold((f64::INFINITY, 0.0f64), |(a, b), &v| (a.min(v), b.max(v)));
            let worst = vs.iter().copied().fold(f64::INFINITY, f64::min);
            println!(
                "variant {:<16} N={n:<3} {:.3}x vs cuBLAS ({lo:.2}-{hi:.2}) over {} shapes; vs production {:.3}x (worst shape {worst:.3}x)",
                kernel.name(),
                geo(&r),
                r.len(),
                geo(&vs)
            );
        }
    }
    if failed > 0 {
        println!("!!! {failed} variant check(s) FAILED (see the MISMATCH lines above)");
        return Err(format!("{failed} variant check(s) failed").into());
    }
    println!("every variant output bit-identical to the production bounded kernel's (and within the spec 19 bound where checked)");
    Ok(())
}
