//! `nwc-gpu-bench --batch`: batches 1..16 against cuBLAS GEMM.

use super::timing::{gaussian_bf16, rotation, time_us, DenseGemm};
use super::Res;
use cudarc::cublas::CudaBlas;
use cudarc::driver::CudaSlice;
use nwc_cuda::{Gpu, GpuMatrix, MatvecKernel};
use nwc_reference::bounded as level2;
use nwc_reference::{encode, Mode, Shape, Weights};
use std::sync::Arc;

/// Batch 1..16 on one shape (synthetic BF16): cuBLAS GEMM with N columns against the exact matvec with
/// the batched kernels (each weight decoded once per group of 4 columns) and with one launch per
/// column. The batched output must equal the per-column one bit for bit (per-column = the batch-1
/// kernel, exact by the conformance run), or the row says MISMATCH. Last column: the same weights
/// in layout 1 on tensor cores (bounded matvec, all N columns per decode, bounded class: every output
/// checked against spec 19.4).
pub fn bench_batch(gpu: &Arc<Gpu>, blas: &CudaBlas, m: u64, k: u64) -> Res<()> {
    let s = &gpu.stream;
    let words = gaussian_bf16((m * k) as usize, 11);
    let enc = encode(Mode::BF16_L0, Shape::new(m, k), Weights::Bf16(&words))?.matrix;
    let (g0, _) = GpuMatrix::upload_and_decode(gpu, &enc)?;
    let mut mats = rotation(g0.stored_bytes, g0, |m| m.try_clone())?;
    let copies = mats.len();
    let enc1 = encode(Mode::BF16_L1, Shape::new(m, k), Weights::Bf16(&words))?.matrix;
    let (mut g1, dec1) = GpuMatrix::upload_and_decode(gpu, &enc1)?;
    g1.set_matvec_kernel(MatvecKernel::Bounded)?;
    let mats1 = rotation(g1.stored_bytes, g1, |m| m.try_clone())?;
    let copies1 = mats1.len();
    let dense = DenseGemm::new(gpu, &words, m, k)?;
    println!("batched matvec, {m}x{k} synthetic BF16 (BF16 activations and outputs):");
    println!(
        "{:>5} | {:>9} | {:>9} {:>6} | {:>9} {:>6} | {:>7} | {:>9} {:>6}",
        "N", "cuBLAS us", "fused us", "/cB", "percol us", "/cB", "fused/percol", "L1mma us", "/cB"
    );
    for n in [1usize, 2, 3, 4, 8, 9, 16] {
        let xs: Vec<u16> = gaussian_bf16(k as usize * n, 100 + n as u64);
        let cublas_us = dense.time_us(gpu, blas, &xs, n)?;
        let xd = mats[0].activations_bf16(&xs, n)?;
        let mut y: CudaSlice<u16> = s.alloc_zeros(m as usize * n)?;
        let run = |fused: bool, mats: &mut Vec<GpuMatrix>, y: &mut CudaSlice<u16>| -> Res<(f64, Vec<u16>)> {
            for g in mats.iter_mut() {
                g.set_matvec_kernel(if fused { MatvecKernel::Exact } else { MatvecKernel::ExactPerColumn })?;
            }
            s.memset_zeros(y)?;
            let us = time_us(gpu, &mut |i| Ok(mats[i % copies].matvec_into_bf16(&xd, None, y)?))?;
            Ok((us, s.clone_dtoh(y)?))
        };
        let (fused_us, out_fused) = run(true, &mut mats, &mut y)?;
        let (percol_us, out_percol) = run(false, &mut mats, &mut y)?;
        let mut tag = if out_fused == out_percol { String::new() } else { "  MISMATCH: batched output differs from per-column".into() };
        let xd1 = mats1[0].activations_bf16(&xs, n)?;
        s.memset_zeros(&mut y)?;
        let mma_us = time_us(gpu, &mut |i| Ok(mats1[i % copies1].matvec_into_bf16(&xd1, None, &mut y)?))?;
        let got: Vec<u32> = s.clone_dtoh(&y)?.into_iter().map(u32::from).collect();
        let xw: Vec<f32> = xs.iter().map(|&w| f32::from_bits(u32::from(w) << 16)).collect();
        let mma_us = match level2::check_outputs(&level2::expected(&dec1, &xw, n, None)?, &got, true) {
            Ok(_) => mma_us,
            Err(why) => {
                tag += &format!("  MISMATCH: layout 1 bounded matvec: {why}");
                f64::NAN
            }
        };
        println!(
            "{n:>5} | {cublas_us:9.2} | {fused_us:9.2} {:5.2}x | {percol_us:9.2} {:5.2}x | {:6.2}x | {mma_us:9.2} {:5.2}x{tag}",
            cublas_us / fused_us,
            cublas_us / percol_us,
            percol_us / fused_us,
            cublas_us / mma_us
        );
    }
    Ok(())
}
