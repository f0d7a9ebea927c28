//! Execution-layout rows of the bench (spec 20): the same weights as the format-10 row, transcoded
//! on the GPU from the format-10 matrix (timed: format-10 dequant + GPU encode), then the exact
//! matvec kernels (every output checked against the reference's BF16 matvec), dequant (checked
//! against the weights), VRAM bytes per weight; batches 2..64 against cuBLAS GEMM with the exact
//! batched kernel (checked against one launch per column) and the tensor-core kernels (spec 19:
//! checked against the bound where the host reference is affordable).

use super::{gemm_config, gaussian_bf16, time_us, Res, L2_BYTES};
use cudarc::cublas::{CudaBlas, Gemm};
use cudarc::driver::CudaSlice;
use nwc_cuda::exec::{ExecMatvecKernel, GpuExecMatrix};
use nwc_cuda::{Gpu, GpuMatrix};
use nwc_reference::bounded as level2;
use nwc_reference::{encode, Mode, Shape, Weights};
use std::sync::Arc;

/// Exact execution-layout matvec kernels timed side by side (production first).
pub const MATVECS: [(&str, ExecMatvecKernel); 2] = [("exact", ExecMatvecKernel::Exact), ("rows v1", ExecMatvecKernel::Rows)];
/// Dequant kernels timed side by side (production first).
pub const DEQUANTS: [(&str, nwc_cuda::exec::ExecDequantKernel); 2] =
    [("stream", nwc_cuda::exec::ExecDequantKernel::Stream), ("rows v1", nwc_cuda::exec::ExecDequantKernel::Rows)];

pub struct ExecRow {
    /// Matvec microseconds per entry of MATVECS (NaN when an output differed from the reference).
    pub us: Vec<f64>,
    /// Dequant microseconds per entry of DEQUANTS (NaN when not exact).
    pub dequant_us: Vec<f64>,
    /// Transcode (format-10 dequant + encode) and encode-only wall microseconds (medians of 5).
    pub transcode_us: f64,
    pub encode_us: f64,
    pub stored: u64,
    pub escapes: u64,
}

fn wall_us(gpu: &Arc<Gpu>, f: &mut dyn FnMut() -> Res<()>) -> Res<f64> {
    f()?;
    gpu.stream.synchronize()?;
    let mut t = Vec::new();
    for _ in 0..5 {
        let t0 = std::time::Instant::now();
        f()?;
        gpu.stream.synchronize()?;
        t.push(t0.elapsed().as_secs_f64() * 1e6);
    }
    t.sort_by(f64::total_cmp);
    Ok(t[2])
}

/// The execution-layout measurements of one BF16 row (`gm`: its format-10 layout 0 matrix,
/// `expected`: the reference's BF16 matvec of `x`).
pub fn measure(gpu: &Arc<Gpu>, gm: &GpuMatrix, words: &[u16], x: &[u16], expected: &[u16]) -> Res<ExecRow> {
    let s = &gpu.stream;
    let (m, k) = (gm.shape.rows, gm.shape.cols);
    let transcode_us = wall_us(gpu, &mut || {
        GpuExecMatrix::transcode(gm)?;
        Ok(())
    })?;
    let wdev = s.clone_htod(words)?;
    let encode_us = wall_us(gpu, &mut || {
        GpuExecMatrix::encode_device(gpu, gm.shape, &wdev, k)?;
        Ok(())
    })?;
    drop(wdev);
    let e0 = GpuExecMatrix::transcode(gm)?;
    let stored = e0.stored_bytes();
    let escapes = e0.escapes();
    let copies = (3 * L2_BYTES / stored + 1).clamp(1, 8) as usize;
    let mut mats = vec![e0];
    for _ in 1..copies {
        mats.push(mats[0].try_clone()?);
    }
    let xf: Vec<f32> = x.iter().map(|&w| f32::from_bits(u32::from(w) << 16)).collect();
    let xd = mats[0].activations_f32(&xf, 1)?;
    let mut y16: CudaSlice<u16> = s.alloc_zeros(m as usize)?;
    let mut us = Vec::new();
    for &(label, kernel) in &MATVECS {
        for e in mats.iter_mut() {
            e.set_matvec_kernel(kernel);
        }
        s.memset_zeros(&mut y16)?;
        let t = time_us(gpu, &mut |i| Ok(mats[i % copies].matvec_into_bf16(&xd, None, &mut y16)?))?;
        let got = s.clone_dtoh(&y16)?;
        let bad = got.iter().zip(expected).filter(|(a, b)| a != b).count();
        if bad > 0 {
            println!("MISMATCH exec {label} matvec {m}x{k}: {bad} rows differ from the reference");
        }
        us.push(if bad == 0 { t } else { f64::NAN });
    }
    let k16 = mats[0].row_stride();
    let mut deq: CudaSlice<u16> = s.alloc_zeros(m as usize * k16)?;
    let mut dequant_us = Vec::new();
    for &(label, kernel) in &DEQUANTS {
        for e in mats.iter_mut() {
            e.set_dequant_kernel(kernel);
        }
        s.memset_zeros(&mut deq)?;
        let t = time_us(gpu, &mut |i| Ok(mats[i % copies].dequant_into(&mut deq)?))?;
        let out = s.clone_dtoh(&deq)?;
        let exact = (0..m as usize).all(|r| out[r * k16..][..k as usize] == words[r * k as usize..][..k as usize])
            && (0..m as usize).all(|r| out[r * k16 + k as usize..(r + 1) * k16].iter().all(|&w| w == 0));
        if !exact {
            println!("MISMATCH exec {label} dequant {m}x{k}: differs from the weights");
        }
        dequant_us.push(if exact { t } else { f64::NAN });
    }
    Ok(ExecRow { us, dequant_us, transcode_us, encode_us, stored, escapes })
}

/// Batches 2..64 on one shape (synthetic BF16): cuBLAS GEMM against the exact batched kernel and
/// the two tensor-core kernels on the execution layout.
pub fn batch(gpu: &Arc<Gpu>, blas: &CudaBlas, m: u64, k: u64, check_limit: u64) -> Res<Vec<(usize, f64, f64, f64, f64)>> {
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
    let dense = (3 * L2_BYTES / (m * k * 2) + 1).clamp(1, 8) as usize;
    let w_dev: Vec<CudaSlice<half::bf16>> =
        (0..dense).map(|_| s.clone_htod(&words.iter().map(|&w| half::bf16::from_bits(w)).collect::<Vec<_>>())).collect::<Result<_, _>>()?;
    let mut out = Vec::new();
    println!("execution layout, batched, {m}x{k} synthetic BF16 (BF16 outputs):");
    println!("{:>4} | {:>9} | {:>9} {:>6} | {:>9} {:>6} | {:>9} {:>6} | check", "N", "cuBLAS us", "exact us", "/cB", "tensor us", "/cB", "step us", "/cB");
    for n in [2usize, 3, 4, 8, 16, 32, 64] {
        let xs: Vec<u16> = gaussian_bf16(k as usize * n, 100 + n as u64);
        let x_dev: CudaSlice<half::bf16> = s.clone_htod(&xs.iter().map(|&w| half::bf16::from_bits(w)).collect::<Vec<_>>())?;
        let mut y_dev: CudaSlice<half::bf16> = s.alloc_zeros(m as usize * n)?;
        let cfg = gemm_config(m, n as u64, k);
        let cublas_us = time_us(gpu, &mut |i| {
            // SAFETY: A holds M*K elements (lda = K), B holds K*N (ldb = K), C holds M*N, as cfg says.
            unsafe { blas.gemm(cfg, &w_dev[i % dense], &x_dev, &mut y_dev) }?;
            Ok(())
        })?;
        let xw: Vec<f32> = xs.iter().map(|&w| f32::from_bits(u32::from(w) << 16)).collect();
        let mut y: CudaSlice<u16> = s.alloc_zeros(m as usize * n)?;
        let mut tag = String::new();
        // exact: batched against one launch per column
        let exact_us = if n <= 8 {
            for e in mats.iter_mut() {
                e.set_matvec_kernel(ExecMatvecKernel::Exact);
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
        let mut tensor = |kernel: ExecMatvecKernel, mats: &mut Vec<GpuExecMatrix>, tag: &mut String| -> Res<f64> {
            for e in mats.iter_mut() {
                e.set_matvec_kernel(kernel);
            }
            let xd = mats[0].activations_bf16(&xs, n)?;
            s.memset_zeros(&mut y)?;
            let t = time_us(gpu, &mut |i| Ok(mats[i % copies].matvec_into_bf16(&xd, None, &mut y)?))?;
            if m * k * n as u64 <= check_limit {
                let got: Vec<u32> = s.clone_dtoh(&y)?.into_iter().map(u32::from).collect();
                if let Err(why) = level2::check_outputs(&level2::expected(&dec, &xw, n, None)?, &got, true) {
                    *tag += &format!(" MISMATCH({}: {why})", kernel.name());
                    return Ok(f64::NAN);
                }
            } else if !tag.contains("unchecked") {
                *tag += " (bound unchecked: host reference too large)";
            }
            Ok(t)
        };
        let tensor_us = tensor(ExecMatvecKernel::Bounded, &mut mats, &mut tag)?;
        let step_us = tensor(ExecMatvecKernel::BoundedStep, &mut mats, &mut tag)?;
        println!(
            "{n:>4} | {cublas_us:9.2} | {exact_us:9.2} {:5.2}x | {tensor_us:9.2} {:5.2}x | {step_us:9.2} {:5.2}x |{tag}",
            cublas_us / exact_us,
            cublas_us / tensor_us,
            cublas_us / step_us
        );
        out.push((n, cublas_us, exact_us, tensor_us, step_us));
    }
    Ok(out)
}
