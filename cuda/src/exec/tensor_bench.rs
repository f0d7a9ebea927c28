//! Bench: the superseded tensor-core kernels of the bounded matvec and their launches: the stream
//! kernel (kernels/bench/exec_tensor_stream.cu, the choice up to 16 columns per decode until
//! session 13) with its plan and its ceiling probes, the step kernel (bench/exec_tensor_step.cu,
//! the choice at 17..32 until session 13) and the tile kernel (bench/exec_tensor_tile.cu, the
//! choice at 64 until session 11).

use super::tensor::{SplitLaunch, SplitSum};
use super::{ExecMatvecKernel, GpuExecMatrix};
use crate::kernels::{EXEC_TC_STAGE, EXEC_TENSOR_STAGE};
use crate::GpuError;
use cudarc::driver::{DevicePtr, LaunchConfig, PushKernelArg};

impl GpuExecMatrix {
    /// The warpgroup-MMA kernel (kernels/bench/exec_wgmma.cu) on `ncols` (at most 64) BF16
    /// columns, as 16, 32 or 64 per decode: CTAs of 2 or 4 warpgroups (128 or 256 rows), a row's
    /// item columns in S ranges of R = per x 128 columns whose N x R BF16 activations fit shared
    /// memory; the WG and S with the fewest waves x items per warp, on a tie fewer ranges, then 4
    /// warpgroups (fewer stagings of the activations).
    pub(super) fn wgmma_launch(&self, x: u64, ncols: u32, bias: u64, out_bf16: i32, y: u64) -> Result<(), GpuError> {
        let nt: u64 = match ncols {
            0..=16 => 2,
            17..=32 => 4,
            _ => 8,
        };
        let items = self.item_columns();
        let (sms, optin) = (u64::from(self.gpu.sm_count), u64::from(self.gpu.smem_optin));
        // (cost, splits, warpgroups (more first), plan)
        let mut best: Option<(u64, u64, std::cmp::Reverse<u64>, SplitLaunch)> = None;
        for (wg, name) in [(2u64, wgmma_name(nt, 2)), (4, wgmma_name(nt, 4))] {
            let panels = self.shape.rows.div_ceil(64 * wg);
            for s in 1..=items {
                let per = items.div_ceil(s);
                let s = items.div_ceil(per);
                let smem = per * 128 * 8 * nt * 2;
                if smem > optin {
                    continue;
                }
                let per_sm = u64::from(self.gpu.ctas_per_sm(name, (128 * wg) as u32, smem as u32)?).max(1);
                let cost = (panels * s).div_ceil(sms * per_sm) * per;
                let key = (cost, s, std::cmp::Reverse(wg));
                if best.as_ref().is_none_or(|b| key < (b.0, b.1, b.2)) {
                    let l = SplitLaunch {
                        name,
                        grid: (panels * s) as u32,
                        threads: (128 * wg) as u32,
                        smem: smem as u32,
                        splits: s as u32,
                        waits: false,
                        sum: SplitSum::Kernel,
                    };
                    best = Some((key.0, key.1, key.2, l));
                }
            }
        }
        let (.., l) = best.ok_or(GpuError::Unsupported("no range of the wgmma kernel fits shared memory"))?;
        self.split_launch(l, x, ncols, bias, out_bf16, y)
    }

    /// The stream kernel (or, for `k` a probe at 8 columns, that probe) on `ncols` (at most 16)
    /// BF16 columns, `nt` n-tiles of 8 columns.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn stream_launch(
        &self,
        k: ExecMatvecKernel,
        nt: u32,
        x: u64,
        ncols: u32,
        bias: u64,
        out_bf16: i32,
        y: u64,
    ) -> Result<(), GpuError> {
        // EXEC_TC: 4 stages of EXEC_TC_STAGE bytes per warp, then the warps' 16 x 8 NT partial sums
        let (name, nt) = match (k, nt) {
            (ExecMatvecKernel::ProbeBoundedRaw, 1) => ("bench_exec_tensor_probe_raw_n1", 1u64),
            (ExecMatvecKernel::ProbeBoundedNoMma, 1) => ("bench_exec_tensor_probe_nomma_n1", 1u64),
            (_, 1) => ("bench_exec_tensor_stream_n1", 1u64),
            _ => ("bench_exec_tensor_stream_n2", 2),
        };
        let p = self.stream_plan(name, nt)?;
        self.tensor_args(name, p.grid, 32 * p.warps, p.smem, x, ncols, bias, out_bf16, y, true)
    }

    /// The step kernel on `ncols` (at most 32) columns, `nt` n-tiles: EXEC_MMAS, 4 stages of 1600
    /// bytes per warp, then the partial sums; CTAs of up to 8 warps, persistent over row groups.
    pub(super) fn step_launch(&self, nt: u32, x: u64, ncols: u32, bias: u64, out_bf16: i32, y: u64) -> Result<(), GpuError> {
        let warps = self.col_tiles.clamp(1, 8);
        let (name, nt) = if nt <= 2 { ("bench_exec_tensor_step_n2", 2u64) } else { ("bench_exec_tensor_step_n4", 4u64) };
        let smem = warps * 4 * 1600 + warps * 16 * nt * 8 * 4;
        let per_sm = u64::from(self.gpu.ctas_per_sm(name, 32 * warps as u32, smem as u32)?);
        let grid = (u64::from(self.gpu.sm_count) * per_sm).min(self.shape.rows.div_ceil(16)).max(1) as u32;
        self.tensor_args(name, grid, 32 * warps as u32, smem as u32, x, ncols, bias, out_bf16, y, false)
    }

    /// The tile kernel on `ncols` (at most 64) columns, `nt` n-tiles: a whole tile per item, 2
    /// stages per warp, as many warps (up to 8) as shared memory allows.
    pub(super) fn tile_launch(&self, nt: u32, x: u64, ncols: u32, bias: u64, out_bf16: i32, y: u64) -> Result<(), GpuError> {
        let (name, nt) = match nt {
            1 => ("bench_exec_tensor_tile_n1", 1u64),
            2 => ("bench_exec_tensor_tile_n2", 2),
            4 => ("bench_exec_tensor_tile_n4", 4),
            _ => ("bench_exec_tensor_tile_n8", 8),
        };
        let optin = u64::from(self.gpu.smem_optin);
        let smem = |w: u64| w * 2 * u64::from(EXEC_TENSOR_STAGE) + w * 16 * nt * 8 * 4;
        let mut w = self.col_tiles.clamp(1, 8);
        while w > 1 && smem(w) > optin {
            w /= 2;
        }
        let per_sm = u64::from(self.gpu.ctas_per_sm(name, 32 * w as u32, smem(w) as u32)?);
        let grid = (u64::from(self.gpu.sm_count) * per_sm).min(self.shape.rows.div_ceil(16)).max(1) as u32;
        self.tensor_args(name, grid, 32 * w as u32, smem(w) as u32, x, ncols, bias, out_bf16, y, false)
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
        list: bool,
    ) -> Result<(), GpuError> {
        let s = &self.gpu.stream;
        let f = self.ptrs();
        let (poff, _go) = self.derived.plist_off.device_ptr(s);
        let (pent, _ge) = self.derived.plist_ent.device_ptr(s);
        let (m32, k32, ldx, ldy) = (self.shape.rows as u32, self.shape.cols as u32, self.k16, self.shape.rows);
        let cfg = LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: smem };
        let mut b = s.launch_builder(self.gpu.function(name)?);
        b.arg(&f.sm).arg(&f.codes).arg(&f.base).arg(&f.esc_start).arg(&f.esc).arg(&m32).arg(&k32).arg(&x).arg(&ldx).arg(&ncols);
        b.arg(&bias).arg(&y).arg(&ldy).arg(&out_bf16);
        if list {
            b.arg(&poff).arg(&pent);
        }
        // SAFETY: the argument list matches EXEC_TC_PROBE (bench/exec_tensor_stream.cu, with the
        // patch list: `list` is set for the stream family only), EXEC_MM3 (bench/exec_tensor_tile.cu) or
        // EXEC_MMAS (bench/exec_tensor_step.cu); x holds ncols vectors of K16 BF16 activations, y ncols x
        // M outputs, bias M values or null; the patch list is the matrix's own (exec/derived.rs);
        // shared memory within the device's opt-in limit.
        unsafe { b.launch(cfg) }?;
        Ok(())
    }

    /// The stream kernel's plan: [`stream_plan`] with this device's occupancy.
    fn stream_plan(&self, name: &str, nt: u64) -> Result<StreamPlan, GpuError> {
        let geo = StreamGeometry { rows: self.shape.rows, col_tiles: self.col_tiles, items: self.item_columns(), nt };
        stream_plan(geo, u64::from(self.gpu.sm_count), u64::from(self.gpu.smem_optin), |threads, smem| {
            self.gpu.ctas_per_sm(name, threads, smem)
        })
    }
}

/// What the stream kernel's plan needs of a matrix and a launch.
#[derive(Clone, Copy, Debug)]
struct StreamGeometry {
    rows: u64,
    /// Tiles per row (CB).
    col_tiles: u64,
    /// Item columns per row group (`GpuExecMatrix::item_columns`).
    items: u64,
    /// n-tiles of 8 columns per decode (1 or 2).
    nt: u64,
}

/// A launch of the stream kernel: CTAs of `warps` warps, `grid` CTAs, `smem` dynamic bytes each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct StreamPlan {
    warps: u32,
    grid: u32,
    smem: u32,
}

/// The stream kernel's CTA size W, grid and shared memory. Its warps split a row group's items
/// round-robin and CTAs are persistent over row groups, so a warp handles ceil(groups / CTAs) x
/// ceil(items per group / W) items at most; the plan takes the W (1 to 16, at most the group's
/// items) that makes this smallest; on a tie the CTA of session 9 (min(tiles per row, 8) warps),
/// then the fewest rounds of row groups (session 10: 6144x4096 takes W = 16 and 3 rounds of 2 items
/// per warp instead of W = 8 and 2 rounds of 4; 2560x9728 W = 8 and 10 items instead of 12;
/// 1000x3000 W = 12 and 2 instead of 4). `ctas_per_sm(threads, smem)` is the device's occupancy.
fn stream_plan(
    g: StreamGeometry,
    sm_count: u64,
    smem_optin: u64,
    mut ctas_per_sm: impl FnMut(u32, u32) -> Result<u32, GpuError>,
) -> Result<StreamPlan, GpuError> {
    let groups = g.rows.div_ceil(16);
    let items = g.items;
    let before = g.col_tiles.clamp(1, 8);
    // (items per warp, not session 9's CTA, rounds) and the plan
    let mut best: Option<((u64, bool, u64), StreamPlan)> = None;
    for w in 1..=16u64.min(items) {
        // 4 stages of EXEC_TC_STAGE bytes per warp, then the warps' 16 x 8 NT partial sums
        let smem = w * 4 * u64::from(EXEC_TC_STAGE) + w * 16 * g.nt * 8 * 4;
        if smem > smem_optin {
            break;
        }
        let per_sm = u64::from(ctas_per_sm(32 * w as u32, smem as u32)?);
        let grid = (sm_count * per_sm).min(groups).max(1);
        let rounds = groups.div_ceil(grid);
        let key = (rounds * items.div_ceil(w), w != before, rounds);
        if best.is_none_or(|(b, _)| key < b) {
            best = Some((key, StreamPlan { warps: w as u32, grid: grid as u32, smem: smem as u32 }));
        }
    }
    best.map(|(_, plan)| plan).ok_or(GpuError::Unsupported("no CTA of the bounded stream kernel fits shared memory"))
}

/// The wgmma kernel's entry point for `nt` n-tiles (2, 4, 8) and `wg` warpgroups (2, 4).
fn wgmma_name(nt: u64, wg: u64) -> &'static str {
    match (nt, wg) {
        (2, 2) => "bench_exec_wgmma_n2_wg2",
        (4, 2) => "bench_exec_wgmma_n4_wg2",
        (8, 2) => "bench_exec_wgmma_n8_wg2",
        (2, _) => "bench_exec_wgmma_n2_wg4",
        (4, _) => "bench_exec_wgmma_n4_wg4",
        _ => "bench_exec_wgmma_n8_wg4",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::tensor::item_columns;

    /// An H200-like device: 132 SMs, 227 KB of opt-in shared memory per CTA and 228 KB per SM (1 KB
    /// reserved per CTA), 64 K registers at 120 per thread, at most 32 CTAs per SM.
    fn h200(rows: u64, cols: u64, nt: u64) -> StreamPlan {
        let g = StreamGeometry { rows, col_tiles: cols.div_ceil(512), items: item_columns(cols), nt };
        stream_plan(g, 132, 232_448, |threads, smem| {
            let by_regs = 65_536 / (120 * threads);
            let by_smem = 233_472 / (smem + 1024);
            Ok(by_regs.min(by_smem).min(32))
        })
        .unwrap()
    }

    #[test]
    fn the_plan_balances_items_per_warp() {
        // 384 row groups: 3 rounds of 2 items per warp beat 2 rounds of 4
        assert_eq!(h200(6144, 4096, 1), StreamPlan { warps: 16, grid: 132, smem: 16 * 4 * EXEC_TC_STAGE + 16 * 512 });
        // 160 row groups of 76 items: one round, 10 items per warp instead of 3 tiles (12 items)
        assert_eq!(h200(2560, 9728, 1).warps, 8);
        assert_eq!(h200(2560, 9728, 1).grid, 160);
        // 63 row groups of 24 items (K16 = 3008: the last tile has 4 items)
        assert_eq!(h200(1000, 3000, 1), StreamPlan { warps: 12, grid: 63, smem: 12 * 4 * EXEC_TC_STAGE + 12 * 512 });
    }

    #[test]
    fn ties_keep_the_session_9_cta() {
        for (m, k) in [(4096, 4096), (4096, 12288), (24576, 4096), (151936, 4096)] {
            assert_eq!(h200(m, k, 1).warps, 8, "{m}x{k}");
            assert_eq!(h200(m, k, 2).warps, 8, "{m}x{k}, 16 columns");
        }
    }

    #[test]
    fn small_matrices_never_get_idle_warps() {
        // one item per row group: one warp per CTA
        assert_eq!(h200(16, 16, 1).warps, 1);
        assert_eq!(h200(300, 100, 1), StreamPlan { warps: 1, grid: 19, smem: 4 * EXEC_TC_STAGE + 512 });
    }

    #[test]
    fn no_cta_that_fits_is_an_error() {
        let g = StreamGeometry { rows: 64, col_tiles: 1, items: 4, nt: 1 };
        let r = stream_plan(g, 132, 1000, |_, _| Ok(1));
        assert!(matches!(r, Err(GpuError::Unsupported(_))), "{r:?}");
    }
}
