//! The bounded matvec (spec 19 on the execution layout, spec 20.15.3) on tensor cores: the choice
//! of kernel family per launch and the launch of the kernels that split a row's items over CTAs
//! (the strip kernel's plan in `tensor_strip`, the panel kernel's in `panel`, the bench's
//! superseded kernels in `tensor_bench`). BF16 activations only; `run` routes here.

use super::panel::{PanelRows, PANEL_SMEM};
use super::tensor_strip_launch::StripVariant;
use super::{ExecMatvecKernel, GpuExecMatrix, MatvecArgs};
use crate::launch::{launch_params, param, LaunchAttrs};
use crate::GpuError;
use cudarc::driver::{DevicePtr, LaunchConfig, PushKernelArg};

/// The tensor-core kernel families of kernels/exec_tensor.cu, exec_tensor_strip.cu,
/// exec_tensor_panel.cu and, with `bench`, bench/exec_tensor_step.cu, exec_tensor_stream.cu and
/// exec_tensor_tile.cu.
enum TensorFamily {
    /// `exec_tensor_strip_n*`: the stream kernel's items loaded straight into registers, up to 32
    /// columns per decode (with `bench`, its variants and probe: exec/tensor_strip.rs).
    Strip(StripVariant),
    /// Bench: `bench_exec_tensor_stream_n*`, items of 16 rows x 128 columns through a cp.async
    /// stage, up to 16 columns per decode (the choice until session 13), and its probes.
    #[cfg(feature = "bench")]
    Stream,
    /// Bench: `bench_exec_wgmma_n*` (kernels/bench/exec_wgmma.cu), warpgroup MMA, 16 to 64
    /// columns per decode.
    #[cfg(feature = "bench")]
    Wgmma,
    /// Bench: `bench_exec_tensor_step_n4`, items of 16 rows x 64 columns, 32 columns per decode
    /// (the choice at 17..32 until session 13), and `bench_exec_tensor_step_n2` at 16.
    #[cfg(feature = "bench")]
    Step,
    /// `exec_tensor_panel_n8`: CTAs of 8 row groups sharing staged activations, 64 columns per
    /// decode, 1 or 2 row groups per warp (exec/panel.rs).
    Panel(PanelRows),
    /// Bench: `bench_exec_tensor_tile_n*`, a whole tile per item, up to 64 columns per decode.
    #[cfg(feature = "bench")]
    Tile,
}

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
        // The panel kernel (33..64 columns) needs PANEL_SMEM bytes of shared memory; on a device
        // that cannot give them, batches run as launches of at most 32 columns.
        let per = if u64::from(PANEL_SMEM) <= u64::from(self.gpu.smem_optin) { 64 } else { 32 };
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
        let family = tensor_family(k, nt);
        match family {
            TensorFamily::Panel(rows) => self.panel_launch(rows, x, ncols, bias, out_bf16, y),
            TensorFamily::Strip(v) => self.tc_strip_launch(v, x, ncols, bias, out_bf16, y),
            #[cfg(feature = "bench")]
            TensorFamily::Stream => self.stream_launch(k, nt, x, ncols, bias, out_bf16, y),
            #[cfg(feature = "bench")]
            TensorFamily::Step => self.step_launch(nt, x, ncols, bias, out_bf16, y),
            #[cfg(feature = "bench")]
            TensorFamily::Tile => self.tile_launch(nt, x, ncols, bias, out_bf16, y),
            #[cfg(feature = "bench")]
            TensorFamily::Wgmma => self.wgmma_launch(x, ncols, bias, out_bf16, y),
        }
    }

    /// [`item_columns`] of this matrix's K.
    pub(super) fn item_columns(&self) -> u64 {
        item_columns(self.shape.cols)
    }
}

/// The kernel family that runs `k` at `nt` n-tiles of 8 columns per decode (the launch's, and the
/// bench's plan report's).
fn tensor_family(k: ExecMatvecKernel, nt: u32) -> TensorFamily {
    // Measured (docs/gpu.md, "Execution layout"): the strip kernel up to 32 columns per decode
    // (session 13), the panel kernel at 64 (session 11).
    match k {
        #[cfg(feature = "bench")]
        ExecMatvecKernel::BoundedStream | ExecMatvecKernel::ProbeBoundedRaw | ExecMatvecKernel::ProbeBoundedNoMma if nt <= 2 => {
            TensorFamily::Stream
        }
        #[cfg(feature = "bench")]
        ExecMatvecKernel::BoundedTile => TensorFamily::Tile,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::BoundedWgmma => TensorFamily::Wgmma,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::BoundedStep if nt <= 4 => TensorFamily::Step,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::BoundedPanelRg1 if nt == 8 => TensorFamily::Panel(PanelRows::One),
        #[cfg(feature = "bench")]
        ExecMatvecKernel::BoundedPanelRg2 if nt == 8 => TensorFamily::Panel(PanelRows::Two),
        #[cfg(feature = "bench")]
        ExecMatvecKernel::VarTcStripNoSplit if nt <= 4 => TensorFamily::Strip(StripVariant::NoSplit),
        #[cfg(feature = "bench")]
        ExecMatvecKernel::VarTcStripXChunk if nt == 2 => TensorFamily::Strip(StripVariant::XChunk),
        #[cfg(feature = "bench")]
        ExecMatvecKernel::VarTcStripCluster if nt <= 4 => TensorFamily::Strip(StripVariant::Cluster),
        #[cfg(feature = "bench")]
        ExecMatvecKernel::VarTcStripSumKernel if nt <= 4 => TensorFamily::Strip(StripVariant::SumKernel),
        #[cfg(feature = "bench")]
        ExecMatvecKernel::VarTcStripReleaseEnd if nt <= 4 => TensorFamily::Strip(StripVariant::ReleaseEnd),
        #[cfg(feature = "bench")]
        ExecMatvecKernel::VarTcStripLeastSplits if nt <= 4 => TensorFamily::Strip(StripVariant::LeastSplits),
        #[cfg(feature = "bench")]
        ExecMatvecKernel::ProbeBoundedStripRaw if nt <= 2 => TensorFamily::Strip(StripVariant::ProbeRaw),
        _ if nt <= 4 => TensorFamily::Strip(StripVariant::Production),
        _ => TensorFamily::Panel(PanelRows::Auto),
    }
}

/// The bounded strip kernel's variant that runs `k` on `ncols` columns, production's where `k` is
/// no strip variant (bench: the plan report of `--exec-batch`).
#[cfg(feature = "bench")]
pub(super) fn strip_variant(k: ExecMatvecKernel, ncols: u32) -> StripVariant {
    match tensor_family(k, ncols.div_ceil(8).next_power_of_two()) {
        TensorFamily::Strip(v) => v,
        _ => StripVariant::Production,
    }
}

/// Item columns of 128 columns per row group of a K-column matrix: 4 per tile, none past K16 in a
/// short last tile (the kernels' `EXEC_ITEM_COLUMNS`, kernels/exec_tensor.cu).
pub(super) fn item_columns(cols: u64) -> u64 {
    let (k16, cb) = (cols.div_ceil(16) * 16, cols.div_ceil(512).max(1));
    4 * (cb - 1) + (k16 - (cb - 1) * 512).div_ceil(128)
}

/// A launch of a kernel whose argument list ends with the f32 partial sums and the splits
/// (EXEC_PN in kernels/exec_tensor_panel.cu, EXEC_TCS_ENTRY in exec_tensor_strip.cu): `grid` CTAs of
/// `threads` threads, `smem` dynamic bytes, a row's items split into `splits` ranges.
pub(super) struct SplitLaunch {
    pub name: &'static str,
    pub grid: u32,
    pub threads: u32,
    pub smem: u32,
    pub splits: u32,
    /// The kernel waits for the kernel before it before it touches activations, outputs or
    /// partial sums (EXEC_TCS_ENTRY), so it may be launched programmatically where `splits` is 1.
    pub waits: bool,
    /// How the splits of a row group are added where `splits` > 1.
    pub sum: SplitSum,
}

/// How a split launch adds its splits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SplitSum {
    /// f32 partial sums in a stream-ordered buffer, added by `exec_tensor_panel_sum`.
    Kernel,
    /// The `splits` CTAs of a row group form one thread-block cluster and add the splits
    /// themselves (EXEC_TCS_ENTRY with CLUSTER, compute capability 9.0 and later): no partial sums, no
    /// summing kernel, programmatic as a one-split launch. At most 8 splits.
    Cluster,
}

impl GpuExecMatrix {
    /// Runs `l` on `ncols` BF16 columns at `x` into `y`; where `l.splits > 1` the kernel writes f32
    /// partial sums [splits][ncols][M] and `exec_tensor_panel_sum` adds them in split order, then
    /// the bias, then the conversion; a cluster launch ([`SplitSum::Cluster`]) adds them in the
    /// kernel.
    pub(super) fn split_launch(&self, l: SplitLaunch, x: u64, ncols: u32, bias: u64, out_bf16: i32, y: u64) -> Result<(), GpuError> {
        let m = self.shape.rows;
        let s = &self.gpu.stream;
        let split = l.splits > 1;
        let summed = split && l.sum == SplitSum::Kernel;
        let clustered = split && l.sum == SplitSum::Cluster;
        // Stream-ordered (cuMemAllocAsync): freed after the summing kernel has read it.
        // SAFETY: the kernel writes every element (split, column < ncols, row < M) before the
        // summing kernel reads it (stream order).
        let part = if summed { Some(unsafe { s.alloc::<f32>(l.splits as usize * ncols as usize * m as usize) }?) } else { None };
        let f = self.ptrs();
        let (poff, _go) = self.derived.plist_off.device_ptr(s);
        let (pent, _ge) = self.derived.plist_ent.device_ptr(s);
        let (pp, _gp) = match &part {
            Some(p) => {
                let (ptr, guard) = p.device_ptr(s);
                (ptr, Some(guard))
            }
            None => (0u64, None),
        };
        let (m32, k32, ldx, ldy) = (m as u32, self.shape.cols as u32, self.k16, m);
        let cfg = LaunchConfig { grid_dim: (l.grid, 1, 1), block_dim: (l.threads, 1, 1), shared_mem_bytes: l.smem };
        let a = MatvecArgs { m: m32, k: k32, x, ldx, ncols, bias, y, ldy, out_bf16 };
        let mut params = f.matvec_params(&a);
        params.extend([param(&poff), param(&pent), param(&pp), param(&l.splits)]);
        let programmatic = l.waits && !summed && self.dependent_launch.programmatic_on(&self.gpu);
        let cluster = if clustered { l.splits } else { 1 };
        // SAFETY: the argument list matches EXEC_PN / EXEC_TCS_ENTRY (the callers pass only those
        // kernels), each value of the type it declares and alive for the call; x holds ncols
        // vectors of K16 BF16 activations, y ncols x M outputs, bias M values or null; the patch
        // list is the matrix's own; part holds splits x ncols x M floats where the launch is
        // summed (the kernels do not touch it otherwise: one split, or a cluster launch); the callers' plans keep every split non-empty and the
        // shared memory within what the kernel may have. Programmatic only on one split (no
        // partial sums, no summing kernel) of a kernel that waits (EXEC_TCS_ENTRY, exec_tcs_body: it
        // reads only the matrix's fields before it waits for the kernel before it), or on a
        // cluster launch (the same, its splits added inside the cluster); a cluster of `splits`
        // CTAs only on the cluster entry points, whose grid is row groups x splits.
        unsafe { launch_params(s, self.gpu.function(l.name)?, cfg, &mut params, LaunchAttrs { programmatic, cluster }) }?;
        if summed {
            let cfg = LaunchConfig { grid_dim: (m32.div_ceil(256), ncols, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
            let mut b = s.launch_builder(self.gpu.function("exec_tensor_panel_sum")?);
            b.arg(&pp).arg(&l.splits).arg(&m32).arg(&ncols).arg(&bias).arg(&y).arg(&ldy).arg(&out_bf16);
            // SAFETY: matches exec_tensor_panel_sum; part as above, y ncols x M outputs.
            unsafe { b.launch(cfg) }?;
        }
        Ok(())
    }
}

#[cfg(all(test, feature = "bench"))]
mod tests {
    use super::*;

    #[test]
    fn the_plan_report_names_the_strip_variant_the_launch_runs() {
        assert!(strip_variant(ExecMatvecKernel::VarTcStripCluster, 8) == StripVariant::Cluster);
        assert!(strip_variant(ExecMatvecKernel::VarTcStripLeastSplits, 32) == StripVariant::LeastSplits);
        assert!(strip_variant(ExecMatvecKernel::Bounded, 16) == StripVariant::Production);
        // the 16-column variant only at 16 columns; kernels of other families report production's
        assert!(strip_variant(ExecMatvecKernel::VarTcStripXChunk, 16) == StripVariant::XChunk);
        assert!(strip_variant(ExecMatvecKernel::VarTcStripXChunk, 8) == StripVariant::Production);
        assert!(strip_variant(ExecMatvecKernel::BoundedTile, 8) == StripVariant::Production);
    }
}
