//! The bounded matvec (spec 19) of a layout 1 matrix on tensor cores
//! (kernels/bounded_matvec.cu): decoding is exact, each output within the bound B of spec 19.3
//! of the canonical one.

use super::fields::Table;
use super::GpuMatrix;
use crate::kernels::{BOUNDED_MAX_COLUMNS, BOUNDED_SMEM, BOUNDED_THREADS};
use crate::GpuError;
use cudarc::driver::{LaunchConfig, PushKernelArg};
use nwc_reference::ElemType;

impl GpuMatrix {
    /// BF16 activations at `x` (`batch` vectors of `kp` words), columns in groups of up to
    /// BOUNDED_MAX_COLUMNS (8 per mma tile); `y` holds batch x M outputs (matvec_raw's contract).
    pub(super) fn bounded_matvec(&self, x: u64, kp: u64, batch: usize, bias: u64, out_bf16: i32, y: u64) -> Result<(), GpuError> {
        let s = &self.gpu.stream;
        let m = self.geo.rows;
        let fp8 = self.mode.elem == ElemType::Fp8E4m3;
        let y_elem: u64 = if out_bf16 != 0 { 2 } else { 4 };
        let p = self.dev.ptrs(s);
        for col in (0..batch).step_by(BOUNDED_MAX_COLUMNS) {
            let n = (batch - col).min(BOUNDED_MAX_COLUMNS);
            let name = match (fp8, n > 8) {
                (false, false) => "nwc_bounded_matvec_bf16_l1",
                (false, true) => "nwc_bounded_matvec_c16_bf16_l1",
                (true, false) => "nwc_bounded_matvec_fp8_l1",
                (true, true) => "nwc_bounded_matvec_c16_fp8_l1",
            };
            let grid = self.warp_per_block_grid(name, BOUNDED_THREADS, BOUNDED_SMEM)?;
            let cfg = LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (BOUNDED_THREADS, 1, 1), shared_mem_bytes: BOUNDED_SMEM };
            let x_ptr = x + col as u64 * kp * 2;
            let y_ptr = y + col as u64 * m * y_elem;
            let n32 = n as u32;
            let mut b = s.launch_builder(self.gpu.function(name)?);
            p.push_stream(&mut b, Table::Pairs);
            b.arg(&p.scale).arg(&x_ptr).arg(&bias).arg(&y_ptr).arg(&out_bf16).arg(&self.geo).arg(&p.partial).arg(&p.count).arg(&n32);
            // SAFETY: the argument list matches NWC_BOUNDED_MATVEC in kernels/bounded_matvec.cu;
            // matrix pointers are live allocations (data padded by the spec 9.5 slack); the
            // scratch holds 16 floats per block and column for BOUNDED_MAX_COLUMNS columns and
            // one zeroed counter per row block; x_ptr points at n <= 16 BF16 vectors of Kp values
            // (columns col.. of the caller's batch x Kp buffer, length checked by matvec_raw);
            // bias has M values or is null; y_ptr has n x M outputs of the kind out_bf16 says.
            unsafe { b.launch(cfg) }?;
        }
        Ok(())
    }
}
