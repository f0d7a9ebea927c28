//! The bounded matvec (spec 19 on the execution layout, spec 20.15.3) on tensor cores: launch
//! plans of the kernels in kernels/exec_tensor.cu. BF16 activations only; `run` routes here.

use super::{ExecMatvecKernel, GpuExecMatrix};
use crate::kernels::EXEC_TENSOR_STAGE;
use crate::GpuError;
use cudarc::driver::{LaunchConfig, PushKernelArg};

impl GpuExecMatrix {
    /// Spec 19 into `y` (batch x M outputs of `y_elem` bytes each): `x` holds `batch` BF16 vectors
    /// of K16 words; the kernels take up to 64 columns per launch.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn tensor_matvec(
        &self,
        k: ExecMatvecKernel,
        x: u64,
        batch: usize,
        bias: u64,
        out_bf16: i32,
        y: u64,
        y_elem: u64,
    ) -> Result<(), GpuError> {
        let m = self.shape.rows;
        let per = 64;
        let mut col = 0usize;
        while col < batch {
            let n = per.min(batch - col);
            self.tensor_launch(k, x + (col as u64) * self.k16 * 2, n as u32, bias, out_bf16, y + col as u64 * m * y_elem)?;
            col += n;
        }
        Ok(())
    }

    fn tensor_launch(&self, k: ExecMatvecKernel, x: u64, ncols: u32, bias: u64, out_bf16: i32, y: u64) -> Result<(), GpuError> {
        let nt = ncols.div_ceil(8).next_power_of_two();
        // Measured (docs/gpu.md): the step kernel is faster up to 32 columns, the tile kernel at 64.
        #[cfg(feature = "bench")]
        let step = k == ExecMatvecKernel::Bounded && nt <= 4;
        #[cfg(not(feature = "bench"))]
        let step = {
            let _ = k;
            nt <= 4
        };
        if step {
            let (name, nt) = if nt <= 2 { ("exec_tensor_step_n2", 2u64) } else { ("exec_tensor_step_n4", 4u64) };
            let warps = self.col_tiles.clamp(1, 8);
            let smem = (warps * 4 * 1600 + warps * 16 * nt * 8 * 4) as u32;
            let per_sm = u64::from(self.gpu.ctas_per_sm(name, 32 * warps as u32, smem)?);
            let grid = (u64::from(self.gpu.sm_count) * per_sm).min(self.shape.rows.div_ceil(16)).max(1) as u32;
            return self.tensor_args(name, grid, 32 * warps as u32, smem, x, ncols, bias, out_bf16, y);
        }
        let (name, nt) = match nt {
            1 => ("exec_tensor_n1", 1u64),
            2 => ("exec_tensor_n2", 2),
            4 => ("exec_tensor_n4", 4),
            _ => ("exec_tensor_n8", 8),
        };
        let optin = u64::from(self.gpu.smem_optin);
        let mut warps = self.col_tiles.clamp(1, 8);
        let smem = |w: u64| w * 2 * u64::from(EXEC_TENSOR_STAGE) + w * 16 * nt * 8 * 4;
        while warps > 1 && smem(warps) > optin {
            warps /= 2;
        }
        let per_sm = u64::from(self.gpu.ctas_per_sm(name, 32 * warps as u32, smem(warps) as u32)?);
        let grid = (u64::from(self.gpu.sm_count) * per_sm).min(self.shape.rows.div_ceil(16)).max(1) as u32;
        self.tensor_args(name, grid, 32 * warps as u32, smem(warps) as u32, x, ncols, bias, out_bf16, y)
    }

    #[allow(clippy::too_many_arguments)]
    fn tensor_args(
        &self,
        name: &str,
        grid: u32,
        threads: u32,
        smem: u32,
        x: u64,
        ncols: u32,
        bias: u64,
        out_bf16: i32,
        y: u64,
    ) -> Result<(), GpuError> {
        let s = &self.gpu.stream;
        let f = self.ptrs();
        let (m32, k32, ldx, ldy) = (self.shape.rows as u32, self.shape.cols as u32, self.k16, self.shape.rows);
        let cfg = LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: smem };
        let mut b = s.launch_builder(self.gpu.function(name)?);
        b.arg(&f.sm).arg(&f.codes).arg(&f.base).arg(&f.esc_start).arg(&f.esc).arg(&m32).arg(&k32).arg(&x).arg(&ldx).arg(&ncols);
        b.arg(&bias).arg(&y).arg(&ldy).arg(&out_bf16);
        // SAFETY: the argument list matches EXEC_MM3 or EXEC_MMAS (kernels/exec_tensor.cu); x holds ncols vectors of K16 BF16 activations, y ncols x M outputs, bias M
        // values or null; shared memory within the device's opt-in limit.
        unsafe { b.launch(cfg) }?;
        Ok(())
    }
}
