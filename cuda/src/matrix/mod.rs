//! An encoded matrix on the device, and the three operations of spec 15 on it. By role:
//! `upload` here (validation, the device fields of `fields`, kernel choice), the exact matvec
//! (`exact`), the bounded matvec (`bounded`), dequant and gather (`expand`), and the bench-only
//! kernels (`bench`, feature `bench`).

#[cfg(feature = "bench")]
mod bench;
mod bounded;
mod exact;
mod expand;
mod fields;
mod io;
mod select;

#[cfg(feature = "bench")]
pub use bench::Probe;
pub use select::{DequantKernel, MatvecKernel};

use crate::gpu::Gpu;
use crate::kernels::{BOUNDED_MAX_COLUMNS, EXACT_MAX_COLUMNS};
use crate::DependentLaunch;
use crate::GpuError;
use cudarc::driver::{CudaSlice, DeviceRepr};
use fields::DeviceFields;
use nwc_reference::geometry::{RAW_SLACK, TAIL_SLACK};
use nwc_reference::{decode, ElemType, EncodedMatrix, Geometry, Layout, Mode, ParamError, Shape};
use std::sync::Arc;

/// Sizes the kernels need; the same field order as `struct Geo` in kernels/common.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct Geo {
    rows: u64,
    cols: u64,
    k16: u64,
    kp: u64,
    col_blocks: u64,
    row_blocks: u64,
    super_chunks: u64,
}

// SAFETY: plain-old-data of seven u64, laid out exactly like the kernels' `struct Geo`.
unsafe impl DeviceRepr for Geo {}

/// What the matvec writes: f32, or f32 rounded to BF16 (nearest even, spec 15.4.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputKind {
    F32,
    Bf16,
}

/// Activations on the device, `batch` vectors each padded with zeros from K to Kp (a multiple of
/// 512), so every lane can load its columns with aligned vector loads (spec 15.4.2: pad columns
/// meet weight 0).
pub enum DeviceActivations {
    F32 { buf: CudaSlice<f32>, batch: usize, kp: usize },
    Bf16 { buf: CudaSlice<u16>, batch: usize, kp: usize },
}

impl DeviceActivations {
    pub fn batch(&self) -> usize {
        match self {
            DeviceActivations::F32 { batch, .. } | DeviceActivations::Bf16 { batch, .. } => *batch,
        }
    }
}

/// A validated encoded matrix resident on one GPU.
pub struct GpuMatrix {
    gpu: Arc<Gpu>,
    pub mode: Mode,
    pub shape: Shape,
    geo: Geo,
    dev: DeviceFields,
    /// Bytes of the stored fields a matvec reads (data up to the stream end, bases, hdr, low,
    /// scale): the numerator of "compressed bytes per second".
    pub stored_bytes: u64,
    matvec_kernel: MatvecKernel,
    dequant_kernel: DequantKernel,
    /// How the layout 0 exact matvec's launches follow the kernel before them ([`DependentLaunch`]).
    dependent_launch: DependentLaunch,
}

fn pad_to(mut v: Vec<u8>, len: usize) -> Vec<u8> {
    if v.len() < len {
        v.resize(len, 0);
    }
    v
}

impl GpuMatrix {
    /// Validates `m` with every rule of spec 13 (the reference decoder) and uploads it. Nothing
    /// reaches the device unless the matrix is valid.
    pub fn upload(gpu: &Arc<Gpu>, m: &EncodedMatrix) -> Result<GpuMatrix, GpuError> {
        decode(m)?;
        Self::upload_validated(gpu, m)
    }

    /// Like [`GpuMatrix::upload`], also returning the host decode the validation produced (saves
    /// a second decode when the caller wants reference results too).
    pub fn upload_and_decode(gpu: &Arc<Gpu>, m: &EncodedMatrix) -> Result<(GpuMatrix, nwc_reference::DecodedMatrix), GpuError> {
        let decoded = decode(m)?;
        Ok((Self::upload_validated(gpu, m)?, decoded))
    }

    /// Uploads a matrix the caller has just validated with `nwc_reference::decode`. Private so no
    /// outside caller can skip validation.
    fn upload_validated(gpu: &Arc<Gpu>, m: &EncodedMatrix) -> Result<GpuMatrix, GpuError> {
        let g = Geometry::new(m.mode, m.shape).map_err(|e| GpuError::Invalid(e.into()))?;
        let s = &gpu.stream;
        let stream_end: u64 = u64::from(*m.bases.last().expect("validated: at least one block"))
            + m.hdr[m.hdr.len() - 32..].iter().map(|&w| 4 * u64::from(w)).sum::<u64>();
        // Spec 9.5/9.6 slacks, so over-reads documented in kernels/common.cu stay in bounds.
        let data_len = (stream_end.div_ceil(8) * 8 + TAIL_SLACK) as usize;
        let blocks = (g.row_blocks * g.col_blocks) as usize;
        let partials_per_block = match m.mode.layout {
            Layout::Rows8 => 8 * EXACT_MAX_COLUMNS,
            Layout::Fragment16 => 16 * BOUNDED_MAX_COLUMNS,
        };
        let dev = DeviceFields {
            data: s.clone_htod(&pad_to(m.data[..data_len.min(m.data.len())].to_vec(), data_len))?,
            bases: s.clone_htod(&m.bases)?,
            hdr: s.clone_htod(&m.hdr)?,
            lut: s.clone_htod(&m.lut)?,
            low: s.clone_htod(&pad_to(m.low[..(g.n_low as usize).min(m.low.len())].to_vec(), (g.n_low + RAW_SLACK) as usize))?,
            scale: m.scale.as_ref().map(|v| s.clone_htod(v)).transpose()?,
            pairs: s.clone_htod(&crate::pair_table::build(m.mode.elem, &m.lut))?,
            partial: s.alloc_zeros(partials_per_block * blocks.max(1))?,
            count: s.alloc_zeros((g.row_blocks as usize).max(1))?,
        };
        let stored_bytes =
            stream_end + 4 * m.bases.len() as u64 + m.hdr.len() as u64 + g.n_low + 4 * m.scale.as_ref().map_or(0, |v| v.len() as u64);
        Ok(GpuMatrix {
            gpu: gpu.clone(),
            mode: m.mode,
            shape: m.shape,
            geo: Geo {
                rows: g.shape.rows,
                cols: g.shape.cols,
                k16: g.k16,
                kp: g.kp,
                col_blocks: g.col_blocks,
                row_blocks: g.row_blocks,
                super_chunks: g.super_chunks,
            },
            dev,
            stored_bytes,
            matvec_kernel: MatvecKernel::Exact,
            dequant_kernel: DequantKernel::ByLayout,
            dependent_launch: DependentLaunch::default(),
        })
    }

    /// A second device copy of the same matrix (benchmarks rotate copies past the L2 cache).
    pub fn try_clone(&self) -> Result<GpuMatrix, GpuError> {
        Ok(GpuMatrix {
            gpu: self.gpu.clone(),
            mode: self.mode,
            shape: self.shape,
            geo: self.geo,
            dev: self.dev.try_clone(&self.gpu.stream)?,
            stored_bytes: self.stored_bytes,
            matvec_kernel: self.matvec_kernel,
            dequant_kernel: self.dequant_kernel,
            dependent_launch: self.dependent_launch,
        })
    }

    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// Row stride of dequant and gather output: K rounded up to 16 (spec 15.2).
    pub fn row_stride(&self) -> usize {
        self.geo.k16 as usize
    }

    pub fn matvec_kernel(&self) -> MatvecKernel {
        self.matvec_kernel
    }

    /// Chooses the matvec kernel; [`GpuError::KernelMismatch`] when it has none for this layout.
    pub fn set_matvec_kernel(&mut self, kernel: MatvecKernel) -> Result<(), GpuError> {
        kernel.check(self.mode)?;
        self.matvec_kernel = kernel;
        Ok(())
    }

    pub fn dependent_launch(&self) -> DependentLaunch {
        self.dependent_launch
    }

    /// How the layout 0 exact matvec's launches follow the kernel before them on the stream
    /// ([`DependentLaunch`]; the results are the same either way).
    pub fn set_dependent_launch(&mut self, order: DependentLaunch) {
        self.dependent_launch = order;
    }

    pub fn dequant_kernel(&self) -> DequantKernel {
        self.dequant_kernel
    }

    /// Chooses the dequant kernel; [`GpuError::KernelMismatch`] when it has none for this layout.
    pub fn set_dequant_kernel(&mut self, kernel: DequantKernel) -> Result<(), GpuError> {
        kernel.check(self.mode)?;
        self.dequant_kernel = kernel;
        Ok(())
    }

    /// Kernel name suffix of the element type and layout.
    fn suffix(&self) -> &'static str {
        match (self.mode.elem, self.mode.layout) {
            (ElemType::Bf16, Layout::Rows8) => "bf16_l0",
            (ElemType::Fp8E4m3, Layout::Rows8) => "fp8_l0",
            (ElemType::Bf16, Layout::Fragment16) => "bf16_l1",
            (ElemType::Fp8E4m3, Layout::Fragment16) => "fp8_l1",
        }
    }

    /// A grid-stride grid of `ctas` CTAs at most; 8 CTAs of 256 threads fill one SM.
    fn grid(&self, ctas: u64) -> u32 {
        ctas.clamp(1, u64::from(self.gpu.sm_count) * 8) as u32
    }

    /// A resident grid of CTAs of `threads` threads and `smem` bytes whose warps each take one
    /// block at a time (the pair-table and fragment kernels, the layout 0 dequant): at most one
    /// warp per block.
    fn warp_per_block_grid(&self, name: &str, threads: u32, smem: u32) -> Result<u32, GpuError> {
        let blocks = self.geo.row_blocks * self.geo.col_blocks;
        self.resident_grid(name, threads, smem, blocks.div_ceil(u64::from(threads / 32)))
    }

    /// A persistent grid: as many CTAs of `threads` as fit on the device at once, at most `ctas`.
    fn resident_grid(&self, name: &str, threads: u32, smem: u32, ctas: u64) -> Result<u32, GpuError> {
        let per_sm = self.gpu.ctas_per_sm(name, threads, smem)?;
        Ok(ctas.clamp(1, u64::from(self.gpu.sm_count) * u64::from(per_sm)) as u32)
    }

    fn check_len(what: &'static str, got: usize, expected: usize) -> Result<(), GpuError> {
        if got != expected {
            return Err(ParamError::Length { what, got: got as u64, expected: expected as u64 }.into());
        }
        Ok(())
    }
}
