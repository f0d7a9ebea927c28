//! The canonical execution layout built on the device (spec 20.12): from BF16 words
//! (kernels/exec_encode.cu: per-row canonical base and per-tile escape counts, their prefix sum,
//! then the planes and escape bytes), and the transcode from format 10 (spec 20.12: the format-10
//! dequant kernel, then the same encode).

use super::{base_alloc_len, check_len, GpuExecMatrix};
use crate::gpu::Gpu;
use crate::{GpuError, GpuMatrix};
use cudarc::driver::{CudaSlice, DevicePtr, LaunchConfig, PushKernelArg};
use nwc_reference::exec::{ExecEncodeError, ExecGeometry};
use nwc_reference::{ElemType, Shape};
use std::sync::Arc;

/// Elements of esc_start one block of the scan kernels covers (exec_encode.cu).
const SCAN_BLOCK: u64 = 1024;

impl GpuExecMatrix {
    /// The canonical execution layout of M x K BF16 words given on the host (row-major).
    pub fn from_bf16(gpu: &Arc<Gpu>, shape: Shape, words: &[u16]) -> Result<GpuExecMatrix, GpuError> {
        let g = ExecGeometry::new(shape).map_err(|e| GpuError::ExecInvalid(e.into()))?;
        check_len("BF16 words", words.len(), (g.shape.rows * g.shape.cols) as usize)?;
        let dev = gpu.stream.clone_htod(words)?;
        Self::encode_device(gpu, shape, &dev, shape.cols)
    }

    /// Spec 20.12 transcode of a format-10 matrix already on the device: its dequant (rows of
    /// stride K16) encoded again. FP8 matrices have no execution layout (ExecEncodeError::Fp8).
    pub fn transcode(m: &GpuMatrix) -> Result<GpuExecMatrix, GpuError> {
        if m.mode.elem != ElemType::Bf16 {
            return Err(GpuError::ExecEncode(ExecEncodeError::Fp8));
        }
        let gpu = m.gpu();
        let mut words = gpu.stream.alloc_zeros::<u16>((m.shape.rows as usize) * m.row_stride())?;
        m.dequant_into(&mut words)?;
        Self::encode_device(gpu, m.shape, &words, m.row_stride() as u64)
    }

    /// Spec 20.12 on the device: `words` holds M rows of BF16 words at stride `ldw` >= K.
    pub fn encode_device(gpu: &Arc<Gpu>, shape: Shape, words: &CudaSlice<u16>, ldw: u64) -> Result<GpuExecMatrix, GpuError> {
        let g = ExecGeometry::new(shape).map_err(|e| GpuError::ExecInvalid(e.into()))?;
        let (m, k) = (g.shape.rows, g.shape.cols);
        if ldw < k || (words.len() as u64) < (m - 1) * ldw + k {
            return Err(nwc_reference::ParamError::Length { what: "BF16 words", got: words.len() as u64, expected: m * ldw }.into());
        }
        let s = &gpu.stream;
        let t = g.tiles;
        let base = s.alloc_zeros::<u8>(base_alloc_len(m))?;
        let esc_start = s.alloc_zeros::<u32>((t + 1) as usize)?;
        let sm = s.alloc_zeros::<u8>((m * g.k16) as usize)?;
        let codes = s.alloc_zeros::<u8>((m * g.k16 / 2) as usize)?;
        let (w, _gw) = words.device_ptr(s);
        let (m32, k32) = (m as u32, k as u32);
        {
            let (pb, _g1) = base.device_ptr(s);
            let (pe, _g2) = esc_start.device_ptr(s);
            let mut b = s.launch_builder(gpu.function("exec_enc_stats")?);
            b.arg(&w).arg(&ldw).arg(&m32).arg(&k32).arg(&pb).arg(&pe);
            // SAFETY: argument list of exec_enc_stats (exec_encode.cu); words holds M rows of
            // stride ldw >= K (checked above); base has M (rounded up) bytes, esc_start T + 1
            // words; one warp per row.
            unsafe { b.launch(cfg(m.div_ceil(8), 256)) }?;
        }
        let total = inclusive_scan(gpu, &esc_start, t)?;
        if total > u64::from(u32::MAX) {
            return Err(GpuError::ExecEncode(ExecEncodeError::TooManyEscapes { escapes: total }));
        }
        let esc = s.alloc_zeros::<u8>(total.max(1) as usize)?;
        {
            let (pb, _g1) = base.device_ptr(s);
            let (pe, _g2) = esc_start.device_ptr(s);
            let (psm, _g4) = sm.device_ptr(s);
            let (pc, _g5) = codes.device_ptr(s);
            let (pesc, _g6) = esc.device_ptr(s);
            let mut b = s.launch_builder(gpu.function("exec_enc_emit")?);
            b.arg(&w).arg(&ldw).arg(&m32).arg(&k32).arg(&pb).arg(&pe).arg(&psm).arg(&pc).arg(&pesc);
            // SAFETY: as above; sm and codes hold M x K16 and M x K16 / 2 bytes, esc holds the
            // E = esc_start[T] bytes the scan counted (at least one).
            unsafe { b.launch(cfg((t * 32).div_ceil(256), 256)) }?;
        }
        drop(_gw);
        GpuExecMatrix::assemble(gpu, &g, [sm, codes, base], esc_start, esc, total)
    }
}

/// `grid` CTAs (at least one) of `threads` threads, no dynamic shared memory: the encode and scan
/// kernels' launches.
fn cfg(grid: u64, threads: u32) -> LaunchConfig {
    LaunchConfig { grid_dim: (grid.max(1) as u32, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: 0 }
}

/// Makes `a[1..=n]` its own inclusive prefix sum on the device (`a[0]` must be 0, so `a[i]` is the
/// sum of the first i counts) and returns the total: exec_enc_scan_a/b/c (exec_encode.cu).
pub(super) fn inclusive_scan(gpu: &Arc<Gpu>, a: &CudaSlice<u32>, n: u64) -> Result<u64, GpuError> {
    let s = &gpu.stream;
    check_len("scan words", a.len(), (n + 1) as usize)?;
    let blocks = n.div_ceil(SCAN_BLOCK);
    let scratch = s.alloc_zeros::<u64>((blocks + 1) as usize)?;
    {
        let (pa, _ga) = a.device_ptr(s);
        let (ps, _gs) = scratch.device_ptr(s);
        // SAFETY (three launches): argument lists match exec_encode.cu; a holds n + 1 words
        // (checked above), scratch ceil(n / 1024) + 1; grids as the file's header says.
        unsafe {
            let mut b = s.launch_builder(gpu.function("exec_enc_scan_a")?);
            b.arg(&pa).arg(&n).arg(&ps);
            b.launch(cfg(blocks, 256))?;
            let mut b = s.launch_builder(gpu.function("exec_enc_scan_b")?);
            b.arg(&ps).arg(&blocks);
            b.launch(cfg(1, 1024))?;
            let mut b = s.launch_builder(gpu.function("exec_enc_scan_c")?);
            b.arg(&pa).arg(&n).arg(&ps);
            b.launch(cfg(blocks, 256))?;
        }
    }
    Ok(s.clone_dtoh(&scratch.slice(blocks as usize..))?[0])
}
