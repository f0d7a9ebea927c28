//! The execution layout (spec 20) on the device: a matrix as five plain fields (sm plane, code
//! plane, per-row base, per-tile escape offsets, escape bytes) that every lane addresses by
//! arithmetic, so decoding costs a few integer instructions per weight. By role: upload and the
//! device fields here, the GPU encode from BF16 and the transcode from format 10 (`encode`), the
//! matvec, dequant and gather launches (`run`), the exact kernels' launch plans (`plan`, the
//! one-column default's in `strip`), the tensor-core launches (`tensor`, the panel kernel's plan in
//! `panel`, the strip kernel's in `tensor_strip`), the kernel choices (`select`); with the `bench` feature, the plans of the one-column
//! kernels' ceiling probes and variants (`variant`).
//!
//! Results: the exact matvec, dequant and gather are bit-identical to `nwc_reference::exec`
//! (spec 20.14, 20.15); the tensor-core matvec ([`ExecMatvecKernel::Bounded`]) is the bounded
//! class of spec 19. The GPU encode produces the canonical encoding byte for byte (spec 20.12).

mod derived;
mod encode;
mod pair;
mod panel;
mod plan;
mod release;
mod run;
mod select;
mod spread;
mod strip;
mod tensor;
#[cfg(feature = "bench")]
mod tensor_bench;
mod tensor_strip;
mod tensor_strip_launch;
#[cfg(feature = "bench")]
mod variant;
mod w1;

pub use crate::DependentLaunch;
pub use derived::TileFlagRule;
pub use select::{ExecDequantKernel, ExecMatvecKernel};
#[cfg(feature = "bench")]
pub use tensor_strip_launch::TcStripPlanInfo;
#[cfg(feature = "bench")]
pub use variant::{check_strip_plan, check_tc_strip_warps, ForcedStrip, StripCols, StripColsPlanInfo};

use crate::gpu::Gpu;
use crate::launch::param;
use crate::GpuError;
use cudarc::driver::{CudaSlice, DevicePtr, SyncOnDrop};
use nwc_reference::exec::{validate_exec, ExecGeometry, ExecMatrix};
use nwc_reference::{ParamError, Shape};
use std::sync::{Arc, OnceLock};

/// Activations for the execution layout: `batch` vectors, each zero-padded from K to K16 (spec
/// 15.4.3 note: a pad weight is +0.0 and meets a zero activation). The exact kernels take f32,
/// the tensor-core kernels BF16 (the domain of spec 19.2).
pub enum ExecActivations {
    F32 { buf: CudaSlice<f32>, batch: usize },
    Bf16 { buf: CudaSlice<u16>, batch: usize },
}

impl ExecActivations {
    pub fn batch(&self) -> usize {
        match self {
            ExecActivations::F32 { batch, .. } | ExecActivations::Bf16 { batch, .. } => *batch,
        }
    }
}

/// An execution-layout matrix resident on one GPU (validated before upload, or encoded there).
pub struct GpuExecMatrix {
    gpu: Arc<Gpu>,
    pub shape: Shape,
    k16: u64,
    /// Tiles per row (CB).
    col_tiles: u64,
    sm: CudaSlice<u8>,
    codes: CudaSlice<u8>,
    /// M bytes, allocated rounded up to a multiple of 4: kernels copy whole aligned words.
    base: CudaSlice<u8>,
    esc_start: CudaSlice<u32>,
    /// E bytes, at least one allocated (never read when E = 0).
    esc: CudaSlice<u8>,
    escapes: u64,
    matvec_kernel: ExecMatvecKernel,
    dequant_kernel: ExecDequantKernel,
    /// How the strip kernels' launches (one column, and the bounded one on one split) follow the
    /// kernel before them (`crate::launch`).
    dependent_launch: DependentLaunch,
    /// Derived at load, not part of the layout (spec 20.3): the tile flags and the patch list.
    derived: derived::Derived,
    /// The one-column strip plan (`strip::one_column_plan`), chosen at the first one-column
    /// matvec and kept: it depends on the shape and the device alone, and choosing it costs
    /// dozens of occupancy lookups per launch.
    one_column: OnceLock<Option<plan::Plan>>,
    /// The bounded strip kernel's production launches (plan and split sum) at 1, 2 and 4 n-tiles
    /// (`tensor_strip_launch::tc_strip_choice`), kept likewise.
    tc_strip_plans: [OnceLock<tensor_strip_launch::TcStripChoice>; 3],
    /// Bench: the launch shape that [`ExecMatvecKernel::VarStripCta`] takes instead of its plan's
    /// (`force_strip_plan`).
    #[cfg(feature = "bench")]
    strip_force: Option<ForcedStrip>,
    /// Bench: the warps per CTA the bounded strip kernel takes instead of its plan's
    /// (`force_tc_strip_warps`).
    #[cfg(feature = "bench")]
    tc_strip_force: Option<u64>,
}

/// Device pointers of the five fields, valid while the guards live.
pub(crate) struct ExecPtrs<'a> {
    pub sm: u64,
    pub codes: u64,
    pub base: u64,
    pub esc_start: u64,
    pub esc: u64,
    _guards: [SyncOnDrop<'a>; 5],
}

/// The values of `EXEC_MATVEC_PARAMS` (kernels/exec_common.cu) after the five fields, in its order.
pub(crate) struct MatvecArgs {
    pub m: u32,
    pub k: u32,
    pub x: u64,
    pub ldx: u64,
    pub ncols: u32,
    pub bias: u64,
    pub y: u64,
    pub ldy: u64,
    pub out_bf16: i32,
}

impl ExecPtrs<'_> {
    /// `EXEC_MATVEC_PARAMS` as argument pointers for `launch::launch_params` (valid while
    /// `self` and `a` live); a launch appends its entry point's trailing arguments.
    pub(crate) fn matvec_params(&self, a: &MatvecArgs) -> Vec<*mut std::ffi::c_void> {
        vec![
            param(&self.sm),
            param(&self.codes),
            param(&self.base),
            param(&self.esc_start),
            param(&self.esc),
            param(&a.m),
            param(&a.k),
            param(&a.x),
            param(&a.ldx),
            param(&a.ncols),
            param(&a.bias),
            param(&a.y),
            param(&a.ldy),
            param(&a.out_bf16),
        ]
    }
}

impl crate::gpu::Resident for GpuExecMatrix {
    fn device_slot(&mut self) -> &mut Arc<Gpu> {
        &mut self.gpu
    }
}

fn base_alloc_len(rows: u64) -> usize {
    (rows.div_ceil(4) * 4).max(4) as usize
}

impl GpuExecMatrix {
    /// Validates `m` with every rule of spec 20.9 (the reference) and uploads it; nothing reaches
    /// the device unless the matrix is valid.
    pub fn upload(gpu: &Arc<Gpu>, m: &ExecMatrix) -> Result<GpuExecMatrix, GpuError> {
        validate_exec(m)?;
        let g = ExecGeometry::new(m.shape).map_err(|e| GpuError::ExecInvalid(e.into()))?;
        let s = &gpu.stream;
        let mut base = m.base.clone();
        base.resize(base_alloc_len(g.shape.rows), 0);
        let esc = if m.esc.is_empty() { vec![0u8] } else { m.esc.clone() };
        let (sm, codes) = (s.clone_htod(&m.sm)?, s.clone_htod(&m.codes)?);
        let (base, esc_start, esc) = (s.clone_htod(&base)?, s.clone_htod(&m.esc_start)?, s.clone_htod(&esc)?);
        Self::assemble(gpu, &g, [sm, codes, base], esc_start, esc, m.esc.len() as u64)
    }

    /// The matrix around its five fields on the device (upload or GPU encode): the data derived
    /// at load (spec 20.3) made from them, the default kernels chosen.
    pub(crate) fn assemble(
        gpu: &Arc<Gpu>,
        g: &ExecGeometry,
        [sm, codes, base]: [CudaSlice<u8>; 3],
        esc_start: CudaSlice<u32>,
        esc: CudaSlice<u8>,
        escapes: u64,
    ) -> Result<GpuExecMatrix, GpuError> {
        let derived = derived::Derived::new(gpu, g, &sm, &codes, &base, &esc_start, &esc)?;
        Ok(GpuExecMatrix {
            gpu: gpu.clone(),
            shape: g.shape,
            k16: g.k16,
            col_tiles: g.col_tiles,
            sm,
            codes,
            base,
            esc_start,
            esc,
            escapes,
            matvec_kernel: ExecMatvecKernel::Exact,
            dependent_launch: DependentLaunch::default(),
            dequant_kernel: ExecDequantKernel::Rows,
            derived,
            one_column: OnceLock::new(),
            tc_strip_plans: Default::default(),
            #[cfg(feature = "bench")]
            strip_force: None,
            #[cfg(feature = "bench")]
            tc_strip_force: None,
        })
    }

    /// The fields back on the host, exactly as stored (the transcode checks compare them).
    pub fn download(&self) -> Result<ExecMatrix, GpuError> {
        let s = &self.gpu.stream;
        let mut base = s.clone_dtoh(&self.base)?;
        base.truncate(self.shape.rows as usize);
        let mut esc = s.clone_dtoh(&self.esc)?;
        esc.truncate(self.escapes as usize);
        Ok(ExecMatrix {
            shape: self.shape,
            sm: s.clone_dtoh(&self.sm)?,
            codes: s.clone_dtoh(&self.codes)?,
            base,
            esc_start: s.clone_dtoh(&self.esc_start)?,
            esc,
        })
    }

    /// A second device copy (benchmarks rotate copies past the L2 cache).
    pub fn try_clone(&self) -> Result<GpuExecMatrix, GpuError> {
        let s = &self.gpu.stream;
        Ok(GpuExecMatrix {
            gpu: self.gpu.clone(),
            shape: self.shape,
            k16: self.k16,
            col_tiles: self.col_tiles,
            sm: s.clone_dtod(&self.sm)?,
            codes: s.clone_dtod(&self.codes)?,
            base: s.clone_dtod(&self.base)?,
            esc_start: s.clone_dtod(&self.esc_start)?,
            esc: s.clone_dtod(&self.esc)?,
            escapes: self.escapes,
            matvec_kernel: self.matvec_kernel,
            dependent_launch: self.dependent_launch,
            dequant_kernel: self.dequant_kernel,
            derived: self.derived.try_clone(s)?,
            one_column: self.one_column.clone(),
            tc_strip_plans: self.tc_strip_plans.clone(),
            #[cfg(feature = "bench")]
            strip_force: self.strip_force,
            #[cfg(feature = "bench")]
            tc_strip_force: self.tc_strip_force,
        })
    }

    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// Runs `work` with every operation of this matrix issued through `gpu`, a view of the same
    /// device on another stream ([`Gpu::with_borrowed_stream`]: torch's current stream), then
    /// goes back to the matrix's own stream. Nothing is copied. [`GpuError::Unsupported`] when
    /// `gpu` is another device.
    pub fn on_stream<R>(&mut self, gpu: &Arc<Gpu>, work: impl FnOnce(&Self) -> R) -> Result<R, GpuError> {
        crate::gpu::on_view(self, gpu, work)
    }

    /// Row stride of dequant and gather output and of padded activations: K rounded up to 16.
    pub fn row_stride(&self) -> usize {
        self.k16 as usize
    }

    /// Escaped weights (E, spec 20.6).
    pub fn escapes(&self) -> u64 {
        self.escapes
    }

    /// VRAM bytes of the matrix: the five stored fields (spec 20.18 sizes; base counted at M
    /// bytes) and the derived data (tile flags: one byte per tile and row of M rounded up to 4;
    /// the patch list: 4 bytes per item of 16 x 128 weights and 8 per entry).
    pub fn stored_bytes(&self) -> u64 {
        let (m, t) = (self.shape.rows, self.shape.rows * self.col_tiles);
        m * self.k16 + m * self.k16 / 2 + m + 4 * (t + 1) + self.escapes + self.derived.bytes()
    }

    /// Entries of the derived patch list (pairs holding a code 0 or 15 that the bounded stream
    /// kernel overwrites, plus one per row of each dense item; kernels/exec_derived.cu).
    pub fn patch_entries(&self) -> u64 {
        self.derived.plist_entries()
    }

    pub fn matvec_kernel(&self) -> ExecMatvecKernel {
        self.matvec_kernel
    }

    pub fn set_matvec_kernel(&mut self, kernel: ExecMatvecKernel) {
        self.matvec_kernel = kernel;
    }

    pub fn dependent_launch(&self) -> DependentLaunch {
        self.dependent_launch
    }

    /// How the strip kernels' launches (the exact one-column kernels, and the bounded strip kernel
    /// where it runs one split) follow the kernel before them on the stream ([`DependentLaunch`];
    /// the results are the same either way).
    pub fn set_dependent_launch(&mut self, order: DependentLaunch) {
        self.dependent_launch = order;
    }

    pub fn dequant_kernel(&self) -> ExecDequantKernel {
        self.dequant_kernel
    }

    pub fn set_dequant_kernel(&mut self, kernel: ExecDequantKernel) {
        self.dequant_kernel = kernel;
    }

    pub(crate) fn ptrs<'a>(&'a self) -> ExecPtrs<'a> {
        let s = &self.gpu.stream;
        let (sm, g0) = self.sm.device_ptr(s);
        let (codes, g1) = self.codes.device_ptr(s);
        let (base, g2) = self.base.device_ptr(s);
        let (esc_start, g3) = self.esc_start.device_ptr(s);
        let (esc, g4) = self.esc.device_ptr(s);
        ExecPtrs { sm, codes, base, esc_start, esc, _guards: [g0, g1, g2, g3, g4] }
    }

    /// Uploads `batch` f32 activation vectors of K values, each zero-padded to K16.
    pub fn activations_f32(&self, x: &[f32], batch: usize) -> Result<ExecActivations, GpuError> {
        let padded = self.pad(x, batch)?;
        Ok(ExecActivations::F32 { buf: self.gpu.stream.clone_htod(&padded)?, batch })
    }

    /// Uploads `batch` BF16 activation vectors (raw words), each zero-padded to K16.
    pub fn activations_bf16(&self, x: &[u16], batch: usize) -> Result<ExecActivations, GpuError> {
        let padded = self.pad(x, batch)?;
        Ok(ExecActivations::Bf16 { buf: self.gpu.stream.clone_htod(&padded)?, batch })
    }

    fn pad<T: Copy + Default>(&self, x: &[T], batch: usize) -> Result<Vec<T>, GpuError> {
        let (k, k16) = (self.shape.cols as usize, self.k16 as usize);
        if batch == 0 {
            return Err(ParamError::EmptyBatch.into());
        }
        check_len("activations", x.len(), batch * k)?;
        let mut padded = vec![T::default(); batch * k16];
        for (dst, src) in padded.chunks_exact_mut(k16).zip(x.chunks_exact(k)) {
            dst[..k].copy_from_slice(src);
        }
        Ok(padded)
    }
}

pub(crate) fn check_len(what: &'static str, got: usize, expected: usize) -> Result<(), GpuError> {
    if got != expected {
        return Err(ParamError::Length { what, got: got as u64, expected: expected as u64 }.into());
    }
    Ok(())
}
