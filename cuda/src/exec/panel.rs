//! The panel kernel of the bounded matvec, 33..64 columns per decode (kernels/exec_tensor_panel.cu):
//! CTAs of [`PANEL_WARPS`] warps, a panel of 8 row groups of 16 rows (16 with 2 row groups per
//! warp, where the plan models that faster) sharing each item's activations through shared
//! memory; a row's items split into `splits` ranges across CTAs where the panels alone would leave
//! SMs idle, the f32 partial sums then added in split order by a second kernel.

use super::tensor::{SplitLaunch, SplitSum};
use super::GpuExecMatrix;
use crate::kernels::EXEC_TC_STAGE;
use crate::GpuError;

/// Warps per CTA (kernels/exec_tensor_panel.cu `EXEC_PN_WARPS`).
const PANEL_WARPS: u64 = 8;
/// Pipeline stages (the kernel's D).
const PANEL_STAGES: u64 = 4;
/// n-tiles of 8 columns (exec_tensor_panel_n8).
const PANEL_NT: u64 = 8;
/// Dynamic shared memory of a CTA: 4 stages of 8 items and 128 x 64 activations (165,888 bytes).
pub(super) const PANEL_SMEM: u32 = (PANEL_STAGES * (PANEL_WARPS * EXEC_TC_STAGE as u64 + PANEL_NT * 2048)) as u32;
/// The plan's model of the device (H200): the time of one item step of a CTA at 64 columns (8
/// items of 16 x 128 weights per row group of a warp; session 11 measured 2.4-2.7 us with one row
/// group: 65.7 us for 24 steps on 4096x12288; with two, 0.855-0.897 of twice that in session 13's
/// record call on 4096x12288, 19456x2560 and 2560x9728: 4.3 us), bytes per microsecond the whole
/// device moves to and from memory for the partial sums (the copy roof reads ~4.2 TB/s) and the
/// fixed cost of the summing launch.
const MODEL_STEP_US: f64 = 2.5;
const MODEL_STEP_RG2_US: f64 = 4.3;
const MODEL_BYTES_PER_US: f64 = 4.0e6;
const MODEL_SUM_LAUNCH_US: f64 = 1.5;

/// What the plan needs of a matrix and a launch.
#[derive(Clone, Copy, Debug)]
struct PanelGeometry {
    rows: u64,
    /// Row groups per warp (1 or 2: the item step of 2 covers twice the weights).
    rg: u64,
    /// Items (128 columns each) per row group.
    items: u64,
    ncols: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PanelPlan {
    splits: u32,
    grid: u32,
}

/// The splits S and the grid: modelled time = the most units a CTA runs x the items of a unit x
/// the time of one item step + where S > 1 the partial sums written and read back and the summing
/// launch. Every split non-empty; on a tie the fewer splits.
fn panel_plan(g: PanelGeometry, sm_count: u64, ctas_per_sm: u64) -> (f64, PanelPlan) {
    let panels = g.rows.div_ceil(16).div_ceil(PANEL_WARPS * g.rg);
    let slots = (sm_count * ctas_per_sm).max(1);
    let mut best: Option<(f64, PanelPlan)> = None;
    for s in 1..=g.items.min(64) {
        let per = g.items.div_ceil(s);
        if (s - 1) * per >= g.items {
            continue; // an empty split
        }
        let units = panels * s;
        let grid = units.min(slots);
        let step = if g.rg == 2 { MODEL_STEP_RG2_US } else { MODEL_STEP_US };
        let mut cost = units.div_ceil(grid) as f64 * per as f64 * step;
        if s > 1 {
            cost += MODEL_SUM_LAUNCH_US + (s * g.rows * g.ncols * 8) as f64 / MODEL_BYTES_PER_US;
        }
        if best.is_none_or(|(b, _)| cost < b) {
            best = Some((cost, PanelPlan { splits: s as u32, grid: grid as u32 }));
        }
    }
    best.unwrap_or((0.0, PanelPlan { splits: 1, grid: panels.min(slots) as u32 }))
}

/// The panel kernel's row groups per warp: forced by a bench choice, or (`Auto`) the one whose
/// [`panel_plan`] models the shorter time (rg2 needs its 3 stages of shared memory).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PanelRows {
    Auto,
    #[cfg(feature = "bench")]
    One,
    #[cfg(feature = "bench")]
    Two,
}

/// Entry point, dynamic shared memory and row groups per warp of the two panel kernels.
const PANEL_RG1: (&str, u32, u64) = ("exec_tensor_panel_n8", PANEL_SMEM, 1);
const PANEL_RG2: (&str, u32, u64) = ("exec_tensor_panel_rg2_n8", PANEL_RG2_SMEM, 2);
/// 3 stages of 16 items and 128 x 64 activations (199,680 bytes).
const PANEL_RG2_SMEM: u32 = (3 * (2 * PANEL_WARPS * EXEC_TC_STAGE as u64 + PANEL_NT * 2048)) as u32;

impl GpuExecMatrix {
    /// The panel kernel on `ncols` (at most 64) BF16 columns, with 1 or 2 row groups per warp by
    /// `rows`.
    pub(super) fn panel_launch(&self, rows: PanelRows, x: u64, ncols: u32, bias: u64, out_bf16: i32, y: u64) -> Result<(), GpuError> {
        let threads = 32 * PANEL_WARPS as u32;
        let items = self.item_columns();
        let m = self.shape.rows;
        let plan_of = |(name, smem, rg): (&'static str, u32, u64)| -> Result<(f64, PanelPlan, &'static str, u32), GpuError> {
            let per_sm = u64::from(self.gpu.ctas_per_sm(name, threads, smem)?);
            let (cost, plan) =
                panel_plan(PanelGeometry { rows: m, rg, items, ncols: u64::from(ncols) }, u64::from(self.gpu.sm_count), per_sm);
            Ok((cost, plan, name, smem))
        };
        let rg2_fits = u64::from(PANEL_RG2_SMEM) <= u64::from(self.gpu.smem_optin);
        let (_, plan, name, smem) = match rows {
            PanelRows::Auto if rg2_fits => {
                let (one, two) = (plan_of(PANEL_RG1)?, plan_of(PANEL_RG2)?);
                if two.0 < one.0 {
                    two
                } else {
                    one
                }
            }
            PanelRows::Auto => plan_of(PANEL_RG1)?,
            #[cfg(feature = "bench")]
            PanelRows::One => plan_of(PANEL_RG1)?,
            #[cfg(feature = "bench")]
            PanelRows::Two if rg2_fits => plan_of(PANEL_RG2)?,
            #[cfg(feature = "bench")]
            PanelRows::Two => return Err(GpuError::Unsupported("the 2-row-group panel kernel does not fit this device's shared memory")),
        };
        let launch = SplitLaunch { name, grid: plan.grid, threads, smem, splits: plan.splits, waits: false, sum: SplitSum::Kernel };
        self.split_launch(launch, x, ncols, bias, out_bf16, y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::exec::tensor::item_columns;

    fn h200(rows: u64, cols: u64, ncols: u64) -> PanelPlan {
        let items = item_columns(cols);
        panel_plan(PanelGeometry { rows, rg: 1, items, ncols }, 132, 1).1
    }

    /// The row groups per warp the plan's costs choose on an H200 (one CTA per SM either way).
    fn h200_rg(rows: u64, cols: u64) -> u64 {
        let items = item_columns(cols);
        let cost = |rg| panel_plan(PanelGeometry { rows, rg, items, ncols: 64 }, 132, 1).0;
        if cost(2) < cost(1) {
            2
        } else {
            1
        }
    }

    #[test]
    fn two_row_groups_where_their_panels_fill_the_device() {
        // session 13's record call at 64 columns: rg2 faster on these (0.86-0.90 of the time) ...
        for (m, k) in [(4096, 12288), (19456, 2560), (2560, 9728), (151_936, 4096)] {
            assert_eq!(h200_rg(m, k), 2, "{m}x{k}");
        }
        // ... and slower on 1000x3000 (4 panels of 16 row groups: 11.38 against 10.47 us)
        assert_eq!(h200_rg(1000, 3000), 1);
    }

    #[test]
    fn the_rg2_cta_fits_an_h100_or_h200() {
        // sm_90 gives a CTA up to 232,448 bytes; an A100 (166,912) runs one row group per warp
        assert_eq!(PANEL_RG2_SMEM, 199_680);
    }

    #[test]
    fn small_matrices_split_the_items_and_large_ones_do_not() {
        // 32 panels of 32 items: 4 splits fill 128 SMs
        assert_eq!(h200(4096, 4096, 64), PanelPlan { splits: 4, grid: 128 });
        // lm_head: 1187 panels, no split
        assert_eq!(h200(151_936, 4096, 64).splits, 1);
        // 48 panels: 8 splits, 3 rounds of 4 items, rather than 96 CTAs of 16 items on 132 SMs
        assert_eq!(h200(6144, 4096, 64), PanelPlan { splits: 8, grid: 132 });
        // every split non-empty: 1000x3000 has 24 items per row group
        let p = h200(1000, 3000, 64);
        assert!(p.splits > 1 && p.splits <= 24, "{p:?}");
    }

    #[test]
    fn the_cta_fits_an_a100_or_h100() {
        // sm_80 and sm_90 give a CTA up to 166,912 and 232,448 bytes
        assert_eq!(PANEL_SMEM, 165_888);
    }

    #[test]
    fn a_single_item_never_splits() {
        assert_eq!(h200(16, 100, 64), PanelPlan { splits: 1, grid: 1 });
    }

    #[test]
    fn no_split_is_empty() {
        for (m, k) in [(1000, 3000), (300, 700), (64, 1000), (8192, 257)] {
            let p = h200(m, k, 40);
            let items = item_columns(k);
            let per = items.div_ceil(u64::from(p.splits));
            assert!((u64::from(p.splits) - 1) * per < items, "{m}x{k}: {p:?}");
        }
    }
}
