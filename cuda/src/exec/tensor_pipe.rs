//! Bench: the launch plan of the bounded matvec built like the lean one-column kernel
//! (kernels/bench/exec_tensor_pipe.cu, [`ExecMatvecKernel::BoundedPipe`]).

use super::{ExecMatvecKernel, GpuExecMatrix};
use crate::GpuError;
use cudarc::driver::{DevicePtr, LaunchConfig, PushKernelArg};

/// exec_tensor_pipe.cu `EXEC_TP_STAGE`: sm 16 x 128, codes 16 x 64, 16 escape offsets, 16 flags,
/// 16 bases.
const STAGE: u64 = 16 * 128 + 16 * 64 + 16 * 4 + 16 + 16;
/// Warps per CTA at most (`__launch_bounds__(512, 1)`).
const WARPS: u64 = 16;
/// Rows per item and row group.
const ROWS: u64 = 16;

impl GpuExecMatrix {
    /// Launches the pipe kernel for `ncols` (1..=16) BF16 columns when it applies (K16 % 32 ==
    /// 0 and the activations and a plan fit shared memory); Ok(false) otherwise, and the caller runs the bounded
    /// production choice.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn pipe_launch(&self, k: ExecMatvecKernel, x: u64, ncols: u32, bias: u64, out_bf16: i32, y: u64) -> Result<bool, GpuError> {
        if k != ExecMatvecKernel::BoundedPipe || self.k16 % 32 != 0 || !(1..=16).contains(&ncols) {
            return Ok(false);
        }
        let nt: u64 = if ncols <= 8 { 1 } else { 2 };
        let list: [(&'static str, u64); 2] = if nt == 1 {
            [("bench_exec_tensor_pipe_n1_d4", 4), ("bench_exec_tensor_pipe_n1_d3", 3)]
        } else {
            [("bench_exec_tensor_pipe_n2_d3", 3), ("bench_exec_tensor_pipe_n2_d2", 2)]
        };
        let row_groups = self.shape.rows.div_ceil(ROWS);
        let sms = u64::from(self.gpu.sm_count);
        // G warps per row group, each a contiguous range of tiles: the fewest rounds x tiles per
        // warp over the device's 16 warps per SM (ties to the smaller G: fewer partial sums).
        let slots = sms * WARPS;
        let g = (1..=self.col_tiles.min(WARPS))
            .min_by_key(|&g| (row_groups.div_ceil((slots / g).max(1)) * self.col_tiles.div_ceil(g), g))
            .unwrap_or(1);
        // CTAs of G warps per row group times just enough row groups that every SM gets one
        // (all 16 warps when there are rounds to go).
        let per_cta = row_groups.div_ceil(sms).clamp(1, WARPS / g);
        let warps = g * per_cta;
        // x: ncols columns of K16 / 8 units rounded up to 8, 16 bytes each (EXEC_TP x layout)
        let xbytes = u64::from(ncols) * (self.k16 / 8).next_multiple_of(8) * 16;
        // pbuf: per group of G warps, 2 parities x (G - 1) warps x NT * 4 x 32 partial sums
        let pbuf = per_cta * 2 * (g - 1) * nt * 4 * 32 * 4;
        let optin = u64::from(self.gpu.smem_optin);
        let Some((name, smem)) = list.iter().map(|&(n, d)| (n, xbytes + warps * d * STAGE + pbuf)).find(|&(_, s)| s <= optin) else {
            return Ok(false);
        };
        let per_sm = u64::from(self.gpu.ctas_per_sm(name, 32 * warps as u32, smem as u32)?);
        let grid = (sms * per_sm).min(row_groups.div_ceil(per_cta)).max(1) as u32;
        let s = &self.gpu.stream;
        let f = self.ptrs();
        let (m32, k32, ldx, ldy, g32) = (self.shape.rows as u32, self.shape.cols as u32, self.k16, self.shape.rows, g as u32);
        let cfg = LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (32 * warps as u32, 1, 1), shared_mem_bytes: smem as u32 };
        let (flags, _guard) = self.flags.device_ptr(s);
        let mut b = s.launch_builder(self.gpu.function(name)?);
        b.arg(&f.sm).arg(&f.codes).arg(&f.base).arg(&f.esc_start).arg(&f.esc).arg(&m32).arg(&k32).arg(&x).arg(&ldx).arg(&ncols);
        b.arg(&bias).arg(&y).arg(&ldy).arg(&out_bf16).arg(&g32).arg(&flags);
        // SAFETY: the argument list matches EXEC_TP (kernels/bench/exec_tensor_pipe.cu); x holds
        // ncols <= 16 vectors of K16 BF16 activations, y ncols x M outputs, bias M values or
        // null; K16 % 32 == 0 (16-byte code rows); shared memory sized as the kernel lays it out
        // and within the opt-in limit (x staged there: ncols * K16 BF16); G is at most CB and 16 and
        // divides the CTA's warps.
        unsafe { b.launch(cfg) }?;
        Ok(true)
    }
}
