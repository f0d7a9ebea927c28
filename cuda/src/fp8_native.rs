//! A speed baseline for the benchmark, not part of the format: an uncompressed fp8 e4m3
//! weight-only matvec (1 byte per weight, row stride K16, one f32 scale per row), the kernel
//! `bench_fp8_native_matvec` in kernels/bench/fp8_native.cu (feature `bench`). It shows what the fused FP8 path has to beat.

use crate::gpu::Gpu;
use crate::kernels::THREADS;
use crate::GpuError;
use cudarc::driver::{CudaSlice, DevicePtr, LaunchConfig, PushKernelArg};
use nwc_reference::ParamError;
use std::sync::Arc;

pub struct Fp8Native {
    gpu: Arc<Gpu>,
    rows: u64,
    k16: u64,
    w: CudaSlice<u8>,
    scale: CudaSlice<f32>,
}

impl Fp8Native {
    /// `fp8` holds rows x cols bytes (row-major), `scale` one value per row.
    pub fn upload(gpu: &Arc<Gpu>, fp8: &[u8], scale: &[f32], rows: u64, cols: u64) -> Result<Fp8Native, GpuError> {
        let k16 = cols.div_ceil(16) * 16;
        if fp8.len() as u64 != rows * cols || scale.len() as u64 != rows {
            return Err(ParamError::Length { what: "fp8 weights", got: fp8.len() as u64, expected: rows * cols }.into());
        }
        let mut padded = vec![0u8; (rows * k16) as usize];
        for (dst, src) in padded.chunks_exact_mut(k16 as usize).zip(fp8.chunks_exact(cols as usize)) {
            dst[..cols as usize].copy_from_slice(src);
        }
        let s = &gpu.stream;
        Ok(Fp8Native { gpu: gpu.clone(), rows, k16, w: s.clone_htod(&padded)?, scale: s.clone_htod(scale)? })
    }

    pub fn try_clone(&self) -> Result<Fp8Native, GpuError> {
        let s = &self.gpu.stream;
        Ok(Fp8Native {
            gpu: self.gpu.clone(),
            rows: self.rows,
            k16: self.k16,
            w: s.clone_dtod(&self.w)?,
            scale: s.clone_dtod(&self.scale)?,
        })
    }

    /// Bytes a matvec reads from the weights (weights and scales).
    pub fn weight_bytes(&self) -> u64 {
        self.rows * self.k16 + 4 * self.rows
    }

    /// y (rows BF16 words) = scale * (W x); `x` holds BF16 activations zero-padded to a multiple
    /// of 512 (at least K16).
    pub fn matvec_into_bf16(&self, x: &CudaSlice<u16>, y: &mut CudaSlice<u16>) -> Result<(), GpuError> {
        if (x.len() as u64) < self.k16 || x.len() % 512 != 0 {
            return Err(
                ParamError::Length { what: "padded activations", got: x.len() as u64, expected: self.k16.div_ceil(512) * 512 }.into()
            );
        }
        if y.len() as u64 != self.rows {
            return Err(ParamError::Length { what: "output", got: y.len() as u64, expected: self.rows }.into());
        }
        let s = &self.gpu.stream;
        let f = self.gpu.function("bench_fp8_native_matvec")?;
        let per_sm = self.gpu.ctas_per_sm("bench_fp8_native_matvec", THREADS, 0)?;
        let grid = self.rows.div_ceil(u64::from(THREADS / 32)).clamp(1, u64::from(self.gpu.sm_count * per_sm)) as u32;
        let (w, _g1) = self.w.device_ptr(s);
        let (sc, _g2) = self.scale.device_ptr(s);
        let (xp, _g3) = x.device_ptr(s);
        let (yp, _g4) = y.device_ptr(s);
        let cfg = LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 };
        let mut b = s.launch_builder(f);
        b.arg(&w).arg(&sc).arg(&xp).arg(&yp).arg(&self.rows).arg(&self.k16);
        // SAFETY: matches bench_fp8_native_matvec's parameters; w holds rows * k16 bytes, scale rows
        // floats, x at least k16 BF16 words (checked), y rows words (checked).
        unsafe { b.launch(cfg) }?;
        Ok(())
    }
}
