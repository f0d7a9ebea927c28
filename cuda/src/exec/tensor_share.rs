//! Bench (session 33): the bounded strip kernel on an even share of all row groups' items
//! (kernels/bench/exec_tensor_share.cu, [`ExecMatvecKernel::VarTcStripShare`]): its plan and its
//! launch. Production's plan (exec/tensor_strip.rs) gives each CTA one row group and one of S
//! equal ranges of its item columns, so a warp runs ceil(items / S / W) items; where the row
//! groups divide unevenly over the resident warps, some warps run one item more than the average
//! allows (2560x9728 at 8 columns on the H200: 5 where 12,160 items over 3,168 resident warps
//! allow 4). Here each row group's item columns are cut into chunks of q items, the chunks of all
//! row groups stand in one sequence and warp w of CTA c takes chunk c x W + w: no warp runs more
//! than q items, and a row group's sums in two CTAs or more are added by the last of them to
//! finish (a counter per row group, kept with the matrix).
//!
//! [`ExecMatvecKernel::VarTcStripShare`]: super::ExecMatvecKernel::VarTcStripShare

use super::release::Release;
use super::tensor_strip::{tc_strip_smem, wave_items, TcStripGeometry, MAX_WARPS};
use super::tensor_strip_launch::tc_release;
use super::GpuExecMatrix;
use crate::launch::{launch_params, param, LaunchAttrs};
use crate::GpuError;
use cudarc::driver::{CudaSlice, DevicePtr, LaunchConfig};

/// A launch: CTAs of `warps` warps, each warp a chunk of at most `items` items of one row group,
/// `grid` CTAs, `smem` dynamic bytes (the warps' partial sums, as production's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct SharePlan {
    pub warps: u32,
    pub items: u32,
    pub grid: u32,
    pub smem: u32,
}

/// Bench: a share launch's plan as `--exec-batch` prints it.
#[derive(Clone, Copy, Debug)]
pub struct SharePlanInfo {
    pub warps: u32,
    /// Items per warp.
    pub items: u32,
    pub grid: u32,
    /// CTAs the device holds at once at this plan.
    pub resident: u64,
    /// The next kernel is released at the CTAs' start (else after their items).
    pub release_start: bool,
}

/// A share launch as chosen for one NT, kept with the matrix (`GpuExecMatrix::share_launches`):
/// the entry point, the plan, where it releases the next kernel and the buffer of its parts
/// (2 x 16 x 8 NT f32 per CTA), so that a launch neither searches the plan again nor allocates.
pub(super) struct ShareLaunch {
    name: &'static str,
    plan: SharePlan,
    release: Release,
    part: CudaSlice<f32>,
}

/// The plan: q items per warp (the least q of each count of chunks per row group, ceil(item
/// columns / q)) and W (1 to 16, at most a row group's chunks, so that a CTA's warps meet two
/// row groups at most), the CTAs in waves of `resident(threads, smem)` (the device's resident
/// CTAs), by the fewest waves x items per warp (production's cost, [`wave_items`]), then the
/// fewest waves (a second wave pays each CTA's start and end again: session 32), then the fewest
/// CTAs (fewer sums to add across CTAs; CTAs of one warp on many splits measured up to 31% slower
/// in session 32), then the fewest items on the busiest SM (ceil(CTAs / SMs) x W x q), then the
/// fewest warps. Unsupported where the chunks do not fit the kernel's
/// 32-bit numbering.
pub(super) fn share_plan(
    g: TcStripGeometry,
    sm_count: u64,
    mut resident: impl FnMut(u32, u32) -> Result<u64, GpuError>,
) -> Result<SharePlan, GpuError> {
    let groups = g.rows.div_ceil(16);
    if groups * g.items == 0 || groups * g.items > u64::from(u32::MAX) {
        return Err(GpuError::Unsupported("the share kernel numbers a matrix's items in 32 bits"));
    }
    // (waves x items per warp, waves, CTAs, the busiest SM's items, warps): the least wins
    type Key = (u64, u64, u64, u64, u64);
    let mut best: Option<(Key, SharePlan)> = None;
    let mut waves_at = Vec::with_capacity(MAX_WARPS as usize);
    for w in 1..=MAX_WARPS.min(g.items) {
        waves_at.push(resident(32 * w as u32, tc_strip_smem(w, g.nt) as u32)?.max(1));
    }
    for chunks_per_group in 1..=g.items {
        let q = g.items.div_ceil(chunks_per_group);
        if g.items.div_ceil(q) != chunks_per_group {
            continue; // the same chunks as a count already tried
        }
        let chunks = groups * chunks_per_group;
        for w in 1..=MAX_WARPS.min(chunks_per_group) {
            let grid = chunks.div_ceil(w);
            let waves = grid.div_ceil(waves_at[w as usize - 1]);
            let key = (waves * wave_items(q, waves), waves, grid, grid.div_ceil(sm_count) * w * q, w);
            if best.is_none_or(|(b, _)| key < b) {
                let plan = SharePlan { warps: w as u32, items: q as u32, grid: grid as u32, smem: tc_strip_smem(w, g.nt) as u32 };
                best = Some((key, plan));
            }
        }
    }
    best.map(|(_, p)| p).ok_or(GpuError::Unsupported("no CTA of the share kernel"))
}

/// The entry point at `nt` n-tiles (1, 2 or 4), releasing the next kernel at its CTAs' start or
/// after its items.
fn share_kernel(nt: u64, release: Release) -> &'static str {
    match (nt, release) {
        (1, Release::Start) => "bench_exec_tensor_strip_share_n1_release_start",
        (2, Release::Start) => "bench_exec_tensor_strip_share_n2_release_start",
        (_, Release::Start) => "bench_exec_tensor_strip_share_n4_release_start",
        (1, _) => "bench_exec_tensor_strip_share_n1",
        (2, _) => "bench_exec_tensor_strip_share_n2",
        _ => "bench_exec_tensor_strip_share_n4",
    }
}

impl GpuExecMatrix {
    /// The share launch on `ncols` (at most 32) columns: the plan ([`share_plan`], with the
    /// occupancy of the entry point that releases after its items; both entry points have the
    /// same registers and shared memory), released where production's rule would release a
    /// programmatic launch of that many CTAs ([`tc_release`]), kept with the matrix per NT.
    fn share_choice(&self, ncols: u32) -> Result<&ShareLaunch, GpuError> {
        let nt = u64::from(ncols.div_ceil(8).next_power_of_two());
        let kept = &self.share_launches[nt.trailing_zeros() as usize];
        if let Some(l) = kept.get() {
            return Ok(l);
        }
        let geo = TcStripGeometry { rows: self.shape.rows, cols: self.shape.cols, items: self.item_columns(), nt };
        let end = share_kernel(nt, Release::End);
        let sms = u64::from(self.gpu.sm_count);
        let resident = |threads, smem| -> Result<u64, GpuError> { Ok(sms * u64::from(self.gpu.ctas_per_sm(end, threads, smem)?)) };
        let plan = share_plan(geo, sms, resident)?;
        let release = tc_release(u64::from(plan.grid), resident(32 * plan.warps, plan.smem)?, true);
        let part = self.gpu.stream.alloc_zeros::<f32>(plan.grid as usize * 2 * 16 * 8 * nt as usize)?;
        Ok(kept.get_or_init(|| ShareLaunch { name: share_kernel(nt, release), plan, release, part }))
    }

    /// Bench: the share launch on `ncols` (1..=32) columns.
    pub fn share_plan_info(&self, ncols: u32) -> Result<SharePlanInfo, GpuError> {
        let l = self.share_choice(ncols)?;
        let p = l.plan;
        let resident = u64::from(self.gpu.sm_count) * u64::from(self.gpu.ctas_per_sm(l.name, 32 * p.warps, p.smem)?);
        let release_start = l.release == Release::Start;
        Ok(SharePlanInfo { warps: p.warps, items: p.items, grid: p.grid, resident, release_start })
    }

    /// The share kernel on `ncols` (at most 32) BF16 columns at `x` into `y`: the sums of row
    /// groups that two CTAs or more share go through the launch's buffer of parts (kept with the
    /// matrix, reused launch after launch in stream order), counted in the matrix's counters
    /// (zero between launches: the last CTA of a row group sets its counter back).
    pub(super) fn share_launch(&self, x: u64, ncols: u32, bias: u64, out_bf16: i32, y: u64) -> Result<(), GpuError> {
        let l = self.share_choice(ncols)?;
        let plan = l.plan;
        let s = &self.gpu.stream;
        let f = self.ptrs();
        let (poff, _go) = self.derived.plist_off.device_ptr(s);
        let (pent, _ge) = self.derived.plist_ent.device_ptr(s);
        let (pp, _gp) = l.part.device_ptr(s);
        let (cnt, _gc) = self.share_counters.device_ptr(s);
        let m = self.shape.rows;
        let a = super::MatvecArgs { m: m as u32, k: self.shape.cols as u32, x, ldx: self.k16, ncols, bias, y, ldy: m, out_bf16 };
        let mut params = f.matvec_params(&a);
        params.extend([param(&poff), param(&pent), param(&pp), param(&plan.items), param(&cnt)]);
        let cfg = LaunchConfig { grid_dim: (plan.grid, 1, 1), block_dim: (32 * plan.warps, 1, 1), shared_mem_bytes: plan.smem };
        let programmatic = self.dependent_launch.programmatic_on(&self.gpu);
        // SAFETY: the argument list matches EXEC_TCS_SHARE (kernels/bench/exec_tensor_share.cu),
        // each value of the type it declares and alive for the call; x holds ncols vectors of K16
        // BF16 activations, y ncols x M outputs, bias M values or null; the patch list is the
        // matrix's own; part holds 2 x 16 x 8 NT floats per CTA of this plan, the counters one
        // u32 per row group, zero (set back by each launch). The plan keeps W within a row
        // group's chunks and the shared memory at production's (at most 32 KB).
        // Programmatic: the kernel reads only the matrix's fields before it waits for the kernel
        // before it (all of it, so the parts and counters of the launch before are done with).
        unsafe { launch_params(s, self.gpu.function(l.name)?, cfg, &mut params, LaunchAttrs { programmatic, cluster: 1 }) }?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::tensor::item_columns;

    fn geo(rows: u64, cols: u64, ncols: u64) -> TcStripGeometry {
        TcStripGeometry { rows, cols, items: item_columns(cols), nt: ncols.div_ceil(8) }
    }

    /// The H200 at 8 columns: 132 SMs, 24 resident warps per SM (80 registers).
    fn at80(rows: u64, cols: u64) -> SharePlan {
        share_plan(geo(rows, cols, 8), 132, |threads, _| Ok(132 * u64::from((768 / threads).min(32)))).unwrap()
    }

    #[test]
    fn every_warp_runs_the_least_items_one_wave_allows() {
        // 160 row groups of 76 items: 12,160 items over 3,168 warps, 4 each (production: 5), in
        // 19 chunks per row group
        let p = at80(2560, 9728);
        assert_eq!(p.items, 4, "{p:?}");
        assert!(u64::from(p.grid) <= 132 * u64::from(24 / p.warps), "{p:?}");
        // a CTA's warps meet two row groups at most
        assert!(p.warps <= 19, "{p:?}");
        // 256 row groups of 32 items: 8,192 items, 3 per warp (as production)
        assert_eq!(at80(4096, 4096).items, 3);
    }

    #[test]
    fn small_matrices_and_one_item_rows() {
        // one item per row group: one warp per CTA, one item each
        let p = at80(300, 100);
        assert_eq!((p.warps, p.items, p.grid), (1, 1, 19));
        // 63 row groups of 24 items: one wave of one item per warp
        let p = at80(1000, 3000);
        assert_eq!(p.items, 1, "{p:?}");
        assert!(u64::from(p.grid) <= 132 * u64::from(24 / p.warps), "{p:?}");
    }

    #[test]
    fn a_row_groups_chunks_bound_the_warps() {
        // 3 item columns: chunks of 1 item, at most 3 warps per CTA
        let p = share_plan(geo(64_000, 384, 16), 132, |threads, _| Ok(132 * u64::from((512 / threads).min(32)))).unwrap();
        assert!(p.warps <= item_columns(384).div_ceil(u64::from(p.items)) as u32, "{p:?}");
        assert!(u64::from(p.smem) == tc_strip_smem(u64::from(p.warps), 2), "{p:?}");
    }
}
