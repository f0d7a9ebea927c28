//! The matvec dispatch and the exact matvec (spec 15.4): the pair-table kernel on layout 0
//! (kernels/exact_matvec_l0.cu), one code at a time on layout 1 (kernels/exact_matvec_l1.cu).

use super::fields::Table;
use super::{DeviceActivations, GpuMatrix, MatvecKernel, OutputKind};
use crate::kernels::{EXACT_MAX_COLUMNS, EXACT_SMEM, EXACT_THREADS, THREADS};
use crate::launch::{launch_params, param, LaunchAttrs};
use crate::GpuError;
use cudarc::driver::{CudaSlice, DevicePtr, LaunchConfig, PushKernelArg};
use nwc_reference::Layout;

/// One matvec launch's activation and output columns: `x` points at `n` vectors of Kp
/// activations, `y` at `n` vectors of M outputs.
pub(super) struct Columns {
    pub x: u64,
    pub y: u64,
    pub n: usize,
    pub xname: &'static str,
    pub out_bf16: i32,
    pub bias: u64,
}

impl GpuMatrix {
    /// Spec 15.4: y = scale * (W x) + bias for every vector of `x`, written to `y` (batch x M
    /// elements of `kind`). The caller guarantees `y` holds that many. Each column follows the
    /// batch-1 canonical order whatever the grouping, so the result is exact (spec 15.4.7); the
    /// bounded kernel with BF16 activations runs spec 19 instead (`bounded.rs`).
    pub(super) fn matvec_raw(
        &self,
        x: &DeviceActivations,
        bias: Option<&CudaSlice<f32>>,
        kind: OutputKind,
        y: u64,
    ) -> Result<(), GpuError> {
        let s = &self.gpu.stream;
        let m = self.geo.rows;
        if let Some(b) = bias {
            Self::check_len("bias", b.len(), m as usize)?;
        }
        let (x_base, _gx, x_elem, kp, batch, xname) = match x {
            DeviceActivations::F32 { buf, batch, kp } => {
                let (p, g) = buf.device_ptr(s);
                (p, g, 4u64, *kp, *batch, "xf32")
            }
            DeviceActivations::Bf16 { buf, batch, kp } => {
                let (p, g) = buf.device_ptr(s);
                (p, g, 2u64, *kp, *batch, "xbf16")
            }
        };
        Self::check_len("padded activations", kp, self.geo.kp as usize)?;
        let bias_guard = bias.map(|v| v.device_ptr(s));
        let bias_ptr = bias_guard.as_ref().map_or(0, |(p, _)| *p);
        let out_bf16 = i32::from(kind == OutputKind::Bf16);
        let y_elem: u64 = if kind == OutputKind::Bf16 { 2 } else { 4 };
        let kernel = self.matvec_kernel;
        // Spec 19.2: only BF16 activations are in the bounded class's domain.
        if kernel == MatvecKernel::Bounded && xname == "xbf16" {
            return self.bounded_matvec(x_base, kp as u64, batch, bias_ptr, out_bf16, y);
        }
        // Columns per launch: the layout 0 pair-table kernel decodes each weight once for up to
        // EXACT_MAX_COLUMNS columns (groups of 4, then 2, then 1); every other kernel takes one.
        let grouped = self.mode.layout == Layout::Rows8 && kernel == MatvecKernel::Exact;
        let mut col = 0usize;
        while col < batch {
            let n = if grouped { [4, 2, 1].into_iter().find(|&n| n <= batch - col).unwrap_or(1) } else { 1 };
            let c =
                Columns { x: x_base + col as u64 * kp as u64 * x_elem, y: y + col as u64 * m * y_elem, n, xname, out_bf16, bias: bias_ptr };
            match (kernel, self.mode.layout) {
                #[cfg(feature = "bench")]
                (MatvecKernel::ExactPerColumn, _) => self.exact_l0(&c)?,
                #[cfg(feature = "bench")]
                (MatvecKernel::Codewise, Layout::Rows8) => self.codewise(&format!("bench_matvec_v1_{}_{xname}", self.suffix()), &c)?,
                #[cfg(feature = "bench")]
                (MatvecKernel::Staged, _) => self.staged_matvec(&c)?,
                (_, Layout::Rows8) => self.exact_l0(&c)?,
                (_, Layout::Fragment16) => self.codewise(&format!("nwc_exact_matvec_{}_{xname}", self.suffix()), &c)?,
            }
            col += n;
        }
        Ok(())
    }

    /// Layout 0, pair-table kernel, `c.n` (1, 2 or 4) columns in one launch.
    fn exact_l0(&self, c: &Columns) -> Result<(), GpuError> {
        debug_assert!(c.n <= EXACT_MAX_COLUMNS);
        let s = &self.gpu.stream;
        let name = match c.n {
            1 => format!("nwc_exact_matvec_{}_{}", self.suffix(), c.xname),
            n => format!("nwc_exact_matvec_c{n}_{}_{}", self.suffix(), c.xname),
        };
        let grid = self.warp_per_block_grid(&name, EXACT_THREADS, EXACT_SMEM)?;
        let cfg = LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (EXACT_THREADS, 1, 1), shared_mem_bytes: EXACT_SMEM };
        let p = self.dev.ptrs(s);
        let tail = [
            param(&p.scale),
            param(&c.x),
            param(&c.bias),
            param(&c.y),
            param(&c.out_bf16),
            param(&self.geo),
            param(&p.partial),
            param(&p.count),
        ];
        let mut params: Vec<_> = p.stream_fields(Table::Pairs).map(param).into_iter().chain(tail).collect();
        // SAFETY: NWC_EXACT_MATVEC_L0's argument list (kernels/exact_matvec_l0.cu), each value of
        // the type it declares, alive for the call; matrix pointers are live allocations padded by
        // the spec 9.5/9.6 slacks, the scratch holds 8 floats per block and column for up to
        // EXACT_MAX_COLUMNS columns and one zeroed counter per row block; c.x points at c.n
        // vectors of Kp activations (length checked by matvec_raw); bias has M values or is null;
        // c.y has c.n x M outputs of the kind out_bf16 says (matvec_raw's contract); the matrix
        // passed the validity rules. Programmatic: the kernel (block_loop, kernels/pair_decode.cu)
        // touches only the matrix's fields before it waits for the kernel before it: activations,
        // bias, outputs, partials and counters come after.
        let programmatic = self.dependent_launch.programmatic_on(&self.gpu);
        unsafe { launch_params(s, self.gpu.function(&name)?, cfg, &mut params, LaunchAttrs::plain(programmatic)) }?;
        Ok(())
    }

    /// One code at a time (kernels/exact_matvec_l1.cu's template): the layout 1 exact matvec, and
    /// the bench's "version 1" on layout 0. One column per launch.
    fn codewise(&self, name: &str, c: &Columns) -> Result<(), GpuError> {
        let s = &self.gpu.stream;
        let cfg = LaunchConfig { grid_dim: (self.grid(self.geo.row_blocks), 1, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 };
        let p = self.dev.ptrs(s);
        let mut b = s.launch_builder(self.gpu.function(name)?);
        p.push_stream(&mut b, Table::Stored);
        b.arg(&p.scale).arg(&c.x).arg(&c.bias).arg(&c.y).arg(&c.out_bf16).arg(&self.geo);
        // SAFETY: the argument list matches NWC_MATVEC (kernels/exact_matvec_l1.cu); matrix
        // pointers are live allocations padded by the spec 9.5/9.6 slacks; c.x points at one
        // vector of Kp activations, c.y at M outputs of the kind out_bf16 says (matvec_raw's
        // contract); bias has M values or is null; the matrix passed the validity rules.
        unsafe { b.launch(cfg) }?;
        Ok(())
    }
}
