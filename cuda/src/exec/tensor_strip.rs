//! Launch plan of the bounded strip kernel (kernels/exec_tensor_strip.cu), the tensor-core matvec
//! of [`ExecMatvecKernel::Bounded`](super::ExecMatvecKernel::Bounded) up to 32 columns per
//! decode: a CTA of W warps per row group of 16 rows and range of item columns, the ranges
//! (`splits`) added where the row groups alone would spread unevenly over the SMs: inside a
//! thread-block cluster where the device's resident clusters leave the plan as it is
//! ([`cluster_keeps_plan`]), else by a second kernel.

use super::tensor::{SplitLaunch, SplitSum};
use super::GpuExecMatrix;
use crate::GpuError;

/// Warps per CTA at most (the kernel's launch bounds: 512 threads) and splits at most.
pub(super) const MAX_WARPS: u64 = 16;
const MAX_SPLITS: u64 = 64;
/// Splits at most of a cluster launch: the portable thread-block cluster size.
const MAX_CLUSTER_SPLITS: u64 = 8;
/// Splits only for matrices of at least this many weights: below, the summing launch (~2 us on
/// the H200) costs more than the balance gains (session 13: 1000x3000 at 8 columns, 5.3 us with
/// one split, 6.1 us with two).
const SPLIT_MIN_WEIGHTS: u64 = 1 << 24;
/// Splits only where, unsplit, the busiest SM would run at least 1.5x the average of row groups
/// (ceil(G / SMs) against G / SMs, in tenths above it): where that SM runs 2 against an average of
/// at most 1.33 (G = 133..176 on 132 SMs), or 1 against at most 0.67. Elsewhere an SM's extra row
/// group runs beside the others (two CTAs resident) and the splits, their summing launch and
/// their CTAs of few items per warp cost more than they balance. Measured on the H200 (docs/gpu.md,
/// session 18, batches of 1..32 columns, held to one split against the rule before this one,
/// which split from 10% above): 2304x8192, 2560x9728 and 2816x8192 (G = 144..176: 1.5-1.8x) 7-16%
/// faster with their splits; 1792x14336 (112), 3328x5120 (208), 3584x6144 (224) 7-40% faster
/// without, 6656x4096 .. 12800x5120 (416..800) 5-65% faster without; 4800x8192, 5120x5120 and
/// 5632x4096 (300..352: 1.12-1.32x) within -13% .. +8% by batch size.
const SPLIT_FROM_IMBALANCE_TENTHS: u64 = 5;
/// The most CTAs an SM may run above the average over the SMs, in tenths of that average, before
/// the items are split (session 13: 2560x9728, 160 row groups on 132 SMs, so 28 SMs run two row
/// groups and 104 one: 20.5 us at 8 columns with one split, 17.0 us with four; 19456x2560, 1216
/// row groups, 8.5% above: 33.0 us at 16 columns with one split, 38.6 us with two).
const MAX_IMBALANCE_TENTHS: u64 = 1;

/// What the plan needs of a matrix and a launch.
#[derive(Clone, Copy, Debug)]
pub(super) struct TcStripGeometry {
    pub rows: u64,
    pub cols: u64,
    /// Item columns of 128 columns per row group (4 per tile, fewer in a short last tile).
    pub items: u64,
    /// n-tiles of 8 columns per decode (1, 2 or 4).
    pub nt: u64,
}

/// A launch: CTAs of `warps` warps, `grid` = row groups x `splits` CTAs, `smem` dynamic bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct TcStripPlan {
    pub warps: u32,
    pub splits: u32,
    pub grid: u32,
    pub smem: u32,
}

/// Shared memory of a CTA: the warps' partial sums, W x 16 rows x 8 NT columns of f32 (at most
/// 32 KB: 16 warps, NT = 4).
pub(super) fn tc_strip_smem(warps: u64, nt: u64) -> u64 {
    warps * 16 * 8 * nt * 4
}

/// The splits S: 1, unless the matrix has at least [`SPLIT_MIN_WEIGHTS`] weights and its row
/// groups spread over the SMs with one SM at least [`SPLIT_FROM_IMBALANCE_TENTHS`] tenths above
/// the average (ceil(G / SMs) against G / SMs); then the least S (at most `max_splits` and the item
/// columns, every split non-empty) that brings G x S units within [`MAX_IMBALANCE_TENTHS`].
pub(super) fn tc_strip_splits(g: TcStripGeometry, sm_count: u64, max_splits: u64) -> u64 {
    let groups = g.rows.div_ceil(16);
    // 10 x the busiest SM's units against (10 + tenths) x the average, in integers
    let busiest = |units: u64| 10 * units.div_ceil(sm_count) * sm_count;
    let even = |units: u64| busiest(units) <= (10 + MAX_IMBALANCE_TENTHS) * units;
    if g.rows * g.cols < SPLIT_MIN_WEIGHTS || busiest(groups) < (10 + SPLIT_FROM_IMBALANCE_TENTHS) * groups {
        return 1;
    }
    let mut best = 1;
    for s in 2..=g.items.min(max_splits) {
        if (s - 1) * g.items.div_ceil(s) >= g.items {
            continue; // an empty split
        }
        best = s;
        if even(groups * s) {
            break;
        }
    }
    best
}

/// The cost of one wave of a plan whose warps each run `items` items per CTA in `waves` waves, in
/// items: `items`, but 2 for one item in more than one wave, where a CTA's own work (its start,
/// the activation fragments, the warps' partial sums and barrier) is as long as its one item per
/// warp and every wave pays it again. Measured on the H200 (docs/gpu.md, session 29; W forced to
/// 2..12): where the plan took one item per warp in 2.75-4.6 waves (2144x12288 and 2176x8192
/// split 9 and 8 ways at W = 11 and 8, 17152x1536 at W = 12, 18944x1024 at W = 8) it ran 32-52%
/// slower at 1..8 columns than W = 2 in one wave, the W this cost gives; at 16 columns
/// (2176x8192, 18944x1024: W = 8 in 4.1-4.5 waves) 39-54% slower than W = 3.
fn wave_items(items: u64, waves: u64) -> u64 {
    if items == 1 && waves > 1 {
        2
    } else {
        items
    }
}

/// The splits by [`tc_strip_splits`], then W (1 to 16, at most the split's item columns): the CTAs
/// run in waves of `resident(threads, smem)` (the device's resident CTAs: SMs x CTAs per SM, or
/// for a cluster launch the resident clusters x S) and a warp runs ceil(items / S / W)
/// items one after the other, so the plan takes the W with the fewest waves x items per warp, on
/// a tie the fewest warps (fewer wait at the CTA's barrier). Where the units outnumber the SMs,
/// only a W at which an SM holds at least two CTAs (unless none does): with one, each CTA's last
/// item, partial sums and barrier leave its SM idle until the next CTA starts; measured on the
/// H200 (docs/gpu.md, session 18, W forced to 2..16), the model's W = 16 at 16 and 32 columns
/// ran 14-19% slower than W = 4 on 6144x4096 and 21-24% slower than W = 2 or 4 on 14336x4096,
/// while on the 12 other shapes its choice was within 2% of the best forced W or better. A W that
/// gives each warp one item per CTA in more than one wave counts two items a wave
/// ([`wave_items`]). `warps` (bench) holds W to one value (at most the split's item columns).
pub(super) fn tc_strip_plan(
    g: TcStripGeometry,
    sm_count: u64,
    max_splits: u64,
    warps: Option<u64>,
    mut resident: impl FnMut(u32, u32) -> Result<u64, GpuError>,
) -> Result<TcStripPlan, GpuError> {
    let s = tc_strip_splits(g, sm_count, max_splits);
    let per = g.items.div_ceil(s).max(1);
    let units = g.rows.div_ceil(16) * s;
    let (lo, hi) = match warps {
        Some(w) => (w.clamp(1, per), w.clamp(1, per)),
        None => (1, MAX_WARPS.min(per)),
    };
    // (cost, plan) of the best W with two resident CTAs per SM and of the best of all
    let mut best: [Option<(u64, TcStripPlan)>; 2] = [None, None];
    for w in lo..=hi {
        let smem = tc_strip_smem(w, g.nt);
        let wave = resident(32 * w as u32, smem as u32)?.max(1);
        let per_sm = wave / sm_count;
        let cost = units.div_ceil(wave) * wave_items(per.div_ceil(w), units.div_ceil(wave));
        let plan = TcStripPlan { warps: w as u32, splits: s as u32, grid: units as u32, smem: smem as u32 };
        for (slot, ok) in best.iter_mut().zip([per_sm >= 2, true]) {
            if ok && slot.is_none_or(|(b, _)| cost < b) {
                *slot = Some((cost, plan));
            }
        }
    }
    let [paired, any] = best;
    let choice = if units > sm_count { paired.or(any) } else { any };
    choice.map(|(_, plan)| plan).ok_or(GpuError::Unsupported("no CTA of the bounded strip kernel"))
}

/// Whether a split launch's plan `plain` (its W from the SMs' resident CTAs) runs as a cluster
/// launch: where `clustered`, the plan with W chosen from the device's resident clusters of S CTAs
/// (a cluster's CTAs share one GPC), is the same launch (W, S, CTAs). The cluster then adds the
/// splits itself, without the partial sums and the summing launch (~1.5 us), and the launch is
/// programmatic. Where the resident clusters move W, the GPC-bound placement costs more than the
/// summing launch. Measured on the H200 (docs/gpu.md, session 29; 18 split shapes at N = 1..16,
/// the cluster launch with its own plan against the summing kernel): where the plans agree, the
/// cluster launch faster on 24 of 29 rows (geomean +7.7%; 2560x9728 +9-12%, 2304x8192 +9-10%,
/// 1024x16384 +12-14%, 2200x8704 +9-13%), the others within 1.1%; where they differ, slower
/// (geomean -6%, up to -15%). On 8 fresh split shapes it took clusters on 3: 15 of 15 rows faster
/// (+1.7% to +10.9%).
pub(super) fn cluster_keeps_plan(plain: &TcStripPlan, clustered: &TcStripPlan) -> bool {
    plain.splits > 1 && plain == clustered
}

/// Which strip kernel a launch runs: the production one, or a bench variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum StripVariant {
    /// The plan of [`tc_strip_plan`], its splits added in a cluster where [`cluster_keeps_plan`],
    /// else by the summing kernel.
    Production,
    /// The production kernels with the plan held to one split.
    #[cfg(feature = "bench")]
    NoSplit,
    /// 16 columns with each chunk's activations loaded as its mma need them.
    #[cfg(feature = "bench")]
    XChunk,
    /// Every split launch in clusters, on the plan that counts resident clusters (at most
    /// [`MAX_CLUSTER_SPLITS`]; session 28).
    #[cfg(feature = "bench")]
    Cluster,
    /// Production's plan with its splits always added by the summing kernel (production until
    /// session 28).
    #[cfg(feature = "bench")]
    SumKernel,
    /// Ceiling probe (not a matvec): the loaded words used as weights, no decode, no patch; up to
    /// 16 columns.
    #[cfg(feature = "bench")]
    ProbeRaw,
}

impl StripVariant {
    /// The entry point at `nt` n-tiles (1, 2 or 4) and the most splits its plan may take.
    fn kernel(self, nt: u64) -> (&'static str, u64) {
        match (self, nt) {
            #[cfg(feature = "bench")]
            (StripVariant::XChunk, 2) => ("bench_exec_tensor_strip_n2_xchunk", MAX_SPLITS),
            #[cfg(feature = "bench")]
            (StripVariant::ProbeRaw, 1) => ("bench_exec_tensor_strip_probe_raw_n1", MAX_SPLITS),
            #[cfg(feature = "bench")]
            (StripVariant::ProbeRaw, 2) => ("bench_exec_tensor_strip_probe_raw_n2", MAX_SPLITS),
            #[cfg(feature = "bench")]
            (StripVariant::NoSplit, _) => (StripVariant::Production.kernel(nt).0, 1),
            (_, 1) => ("exec_tensor_strip_n1", MAX_SPLITS),
            (_, 2) => ("exec_tensor_strip_n2", MAX_SPLITS),
            _ => ("exec_tensor_strip_n4", MAX_SPLITS),
        }
    }
}

/// The cluster launch's entry point at `nt` n-tiles.
fn cluster_kernel(nt: u64) -> &'static str {
    match nt {
        1 => "exec_tensor_strip_cluster_n1",
        2 => "exec_tensor_strip_cluster_n2",
        _ => "exec_tensor_strip_cluster_n4",
    }
}

/// A bounded strip launch as chosen: entry point, plan and how its splits are added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct TcStripChoice {
    pub name: &'static str,
    pub plan: TcStripPlan,
    pub sum: SplitSum,
}

impl GpuExecMatrix {
    /// The launch of the strip kernel `v` on `ncols` BF16 columns: [`tc_strip_plan`] with this
    /// device's occupancy, and for production the cluster rule (kept with the matrix per NT).
    fn tc_strip_choice(&self, v: StripVariant, ncols: u32) -> Result<TcStripChoice, GpuError> {
        let nt = u64::from(ncols.div_ceil(8).next_power_of_two());
        let geo = TcStripGeometry { rows: self.shape.rows, cols: self.shape.cols, items: self.item_columns(), nt };
        #[cfg(feature = "bench")]
        let warps = self.tc_strip_force;
        #[cfg(not(feature = "bench"))]
        let warps = None;
        let sms = u64::from(self.gpu.sm_count);
        let plain = |name: &'static str, max_splits: u64| {
            tc_strip_plan(geo, sms, max_splits, warps, |threads, smem| Ok(sms * u64::from(self.gpu.ctas_per_sm(name, threads, smem)?)))
        };
        // the plan with W from the resident clusters of S CTAs (compute capability 9.0 and later,
        // S >= 2), None elsewhere
        let clustered = || -> Result<Option<TcStripPlan>, GpuError> {
            let s = tc_strip_splits(geo, sms, MAX_CLUSTER_SPLITS);
            if self.gpu.compute_capability.0 < 9 || s < 2 {
                return Ok(None);
            }
            let name = cluster_kernel(nt);
            let plan = tc_strip_plan(geo, sms, MAX_CLUSTER_SPLITS, warps, |threads, smem| {
                Ok(u64::from(self.gpu.clusters_resident(name, threads, smem, s as u32)?) * s)
            })?;
            Ok(Some(plan))
        };
        let (name, max_splits) = v.kernel(nt);
        let kernel_sum = |plan| TcStripChoice { name, plan, sum: SplitSum::Kernel };
        match v {
            StripVariant::Production => {
                let choose = || -> Result<TcStripChoice, GpuError> {
                    let p = plain(name, max_splits)?;
                    Ok(match clustered()? {
                        Some(c) if cluster_keeps_plan(&p, &c) => {
                            TcStripChoice { name: cluster_kernel(nt), plan: p, sum: SplitSum::Cluster }
                        }
                        _ => kernel_sum(p),
                    })
                };
                // The choice depends on the shape, the device and NT alone: kept with the matrix
                // per NT (up to 32 occupancy lookups a launch otherwise).
                match (warps, self.tc_strip_plans.get(nt.trailing_zeros() as usize)) {
                    (None, Some(kept)) => match kept.get() {
                        Some(c) => Ok(*c),
                        None => {
                            let c = choose()?;
                            Ok(*kept.get_or_init(|| c))
                        }
                    },
                    _ => choose(),
                }
            }
            #[cfg(feature = "bench")]
            StripVariant::Cluster => Ok(match clustered()? {
                Some(plan) => TcStripChoice { name: cluster_kernel(nt), plan, sum: SplitSum::Cluster },
                None => kernel_sum(plain(name, MAX_CLUSTER_SPLITS)?),
            }),
            #[cfg(feature = "bench")]
            _ => Ok(kernel_sum(plain(name, max_splits)?)),
        }
    }

    /// The strip kernel `v` on `ncols` (at most 32) BF16 columns, launched as
    /// [`GpuExecMatrix::tc_strip_choice`] says.
    pub(super) fn tc_strip_launch(&self, v: StripVariant, x: u64, ncols: u32, bias: u64, out_bf16: i32, y: u64) -> Result<(), GpuError> {
        let TcStripChoice { name, plan, sum } = self.tc_strip_choice(v, ncols)?;
        let launch =
            SplitLaunch { name, grid: plan.grid, threads: 32 * plan.warps, smem: plan.smem, splits: plan.splits, waits: true, sum };
        self.split_launch(launch, x, ncols, bias, out_bf16, y)
    }
}

/// Bench: a bounded strip launch's plan as `--exec-batch` prints it.
#[cfg(feature = "bench")]
#[derive(Clone, Copy, Debug)]
pub struct TcStripPlanInfo {
    pub warps: u32,
    pub splits: u32,
    /// CTAs (row groups x splits).
    pub grid: u32,
    /// CTAs the device holds at once at this plan (a cluster launch: resident clusters x splits).
    pub resident: u64,
    /// The splits are added in a thread-block cluster (else by the summing kernel).
    pub cluster: bool,
}

#[cfg(feature = "bench")]
impl GpuExecMatrix {
    /// Bench: the launch of the bounded strip kernel on `ncols` (1..=32) columns, production's or,
    /// with `cluster`, the cluster variant's (its own plan, counting resident clusters).
    pub fn tc_strip_plan_info(&self, ncols: u32, cluster: bool) -> Result<TcStripPlanInfo, GpuError> {
        let v = if cluster { StripVariant::Cluster } else { StripVariant::Production };
        let TcStripChoice { name, plan: p, sum } = self.tc_strip_choice(v, ncols)?;
        let (threads, smem) = (32 * p.warps, p.smem);
        let clustered = sum == SplitSum::Cluster && p.splits > 1;
        let resident = if clustered {
            u64::from(self.gpu.clusters_resident(name, threads, smem, p.splits)?) * u64::from(p.splits)
        } else {
            u64::from(self.gpu.sm_count) * u64::from(self.gpu.ctas_per_sm(name, threads, smem)?)
        };
        Ok(TcStripPlanInfo { warps: p.warps, splits: p.splits, grid: p.grid, resident, cluster: clustered })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::exec::tensor::item_columns;

    fn geo(rows: u64, cols: u64, ncols: u64) -> TcStripGeometry {
        TcStripGeometry { rows, cols, items: item_columns(cols), nt: ncols.div_ceil(8) }
    }

    /// An H200-like device: 132 SMs, 64 K registers per SM at 96 per thread, at most 32 CTAs and
    /// 64 warps per SM.
    fn h200(rows: u64, cols: u64, ncols: u64) -> TcStripPlan {
        tc_strip_plan(geo(rows, cols, ncols), 132, MAX_SPLITS, None, |threads, _| {
            Ok(132 * u64::from((65_536 / (96 * threads)).min(32).min(2048 / threads)))
        })
        .unwrap()
    }

    #[test]
    fn uneven_row_groups_split_the_items() {
        // 160 row groups on 132 SMs: 28 SMs would run two (2 against 1.21: 65% above); 3 x 160 =
        // 480 units: 4 per SM against 3.64, exactly 10% above
        assert_eq!(h200(2560, 9728, 8).splits, 3);
        assert_eq!(h200(2560, 9728, 8).grid, 480);
        // 144 row groups (2 against 1.09): 5 x 144 = 720 units, 6 per SM against 5.45
        assert_eq!(h200(2304, 8192, 8).splits, 5);
        // 176 row groups: 2 against 1.33, exactly 50% above, still split
        assert!(h200(2816, 8192, 16).splits > 1);
    }

    #[test]
    fn even_or_small_matrices_do_not_split() {
        // 256, 384, 1536 and 9496 row groups spread within 10%; 1000x3000 is below 2^24 weights
        for (m, k) in [(4096, 4096), (6144, 4096), (24576, 4096), (151_936, 4096), (4096, 12288), (1000, 3000)] {
            assert_eq!(h200(m, k, 16).splits, 1, "{m}x{k}");
        }
        // 1216 row groups: ceil(1216 / 132) = 10 against 9.2, 8.5% above
        assert_eq!(h200(19456, 2560, 8).splits, 1);
    }

    #[test]
    fn less_than_half_again_above_the_average_does_not_split() {
        // 112 (1 against 0.85), 208, 224, 300, 320, 352, 416, 448, 544, 576, 688 and 800 row
        // groups: 12-32% above; measured faster unsplit (session 18), but 300..352 row groups
        // within -13% .. +8% by batch size
        for (m, k) in [
            (1792, 14336),
            (3328, 5120),
            (3584, 6144),
            (4800, 8192),
            (5120, 5120),
            (5632, 4096),
            (6656, 4096),
            (7168, 4096),
            (8704, 3584),
            (9216, 4096),
            (11008, 4096),
            (12800, 5120),
        ] {
            assert_eq!(h200(m, k, 16).splits, 1, "{m}x{k}");
        }
        // 64 row groups (1 against 0.48) split
        assert!(h200(1024, 16384, 8).splits > 1);
    }

    #[test]
    fn no_split_is_empty_and_max_splits_holds() {
        for (m, k) in [(2560, 9728), (300, 70_000), (64, 300_000), (2048, 8200)] {
            let g = geo(m, k, 8);
            let s = tc_strip_splits(g, 132, MAX_SPLITS);
            assert!((s - 1) * g.items.div_ceil(s) < g.items, "{m}x{k}: {s}");
            assert_eq!(tc_strip_splits(g, 132, 1), 1);
        }
    }

    #[test]
    fn more_units_than_sms_keep_two_ctas_per_sm() {
        // 128 registers a thread (the 16-column kernel on the H200): 16 warps per SM. 384 and 896
        // row groups: one CTA of 16 warps per SM would give the fewest waves x items (3 x 2 and
        // 7 x 2); the plan takes a W with at least two CTAs per SM
        let plan = |m: u64| {
            tc_strip_plan(geo(m, 4096, 16), 132, MAX_SPLITS, None, |threads, _| Ok(132 * u64::from(65_536 / (128 * threads)))).unwrap()
        };
        for m in [6144, 14336] {
            assert!(plan(m).warps <= 8, "{m}: {:?}", plan(m));
        }
        // 63 row groups on 132 SMs: at most one CTA per SM anyway, 12 warps of 2 items
        assert_eq!(h200(1000, 3000, 8).warps, 12);
    }

    #[test]
    fn one_item_per_warp_in_several_waves_counts_twice() {
        // 80 registers (the kernel at 8 columns on the H200): 24 warps per SM
        let at80 = |m: u64, k: u64| {
            tc_strip_plan(geo(m, k, 8), 132, MAX_SPLITS, None, |threads, _| Ok(132 * u64::from((768 / threads).min(32)))).unwrap()
        };
        // 134 row groups split 9 ways (11 items each): W = 11 ran them one item per warp in
        // 4.6 waves (5 x 1 against 1 x 6 at W = 2; measured 27.4 us against 18.7)
        let p = at80(2144, 12288);
        assert_eq!((p.warps, p.splits), (2, 9), "{p:?}");
        // 12 item columns, 1072 row groups: W = 12 in 4.1 waves; W = 2, one wave of 6 items
        assert_eq!(at80(17152, 1536).warps, 2);
        assert_eq!(at80(18944, 1024).warps, 2);
        assert_eq!(at80(2176, 8192).warps, 2);
        // one wave of one item per warp is not counted twice (63 row groups, 24 item columns:
        // 12 warps of 2 items as before; 100 columns: 1 item, W = 1)
        assert_eq!(at80(1000, 3000).warps, 12);
        assert_eq!(wave_items(1, 1), 1);
        assert_eq!(wave_items(1, 2), 2);
        assert_eq!(wave_items(3, 5), 3);
    }

    #[test]
    fn a_split_runs_in_clusters_only_where_they_leave_the_plan_as_it_is() {
        let plan = |warps, splits, grid| TcStripPlan { warps, splits, grid, smem: tc_strip_smem(u64::from(warps), 1) as u32 };
        // 2560x9728 at 8 columns on the H200: W = 6, S = 3 either way
        assert!(cluster_keeps_plan(&plan(6, 3, 480), &plan(6, 3, 480)));
        // 2816x8192: the resident clusters move W from 6 to 4 (measured 10% slower in clusters)
        assert!(!cluster_keeps_plan(&plan(6, 3, 528), &plan(4, 3, 528)));
        // 2144x12288: 9 splits, more than a cluster holds (8)
        assert!(!cluster_keeps_plan(&plan(2, 9, 1206), &plan(4, 8, 1072)));
        // one split: nothing to add
        assert!(!cluster_keeps_plan(&plan(11, 1, 256), &plan(11, 1, 256)));
    }

    #[test]
    fn warps_fill_the_waves() {
        // 63 row groups of 24 item columns (one split): 12 warps, 2 items each
        let p = h200(1000, 3000, 8);
        assert_eq!((p.warps, p.grid), (12, 63), "{p:?}");
        // one item column: one warp
        assert_eq!(h200(300, 100, 8).warps, 1);
        // the partial sums fit the default 48 KB at 16 warps and 16 columns
        assert_eq!(tc_strip_smem(16, 2), 16 * 1024);
        assert_eq!(tc_strip_smem(MAX_WARPS, 4), 32 * 1024);
        assert_eq!(u64::from(h200(4096, 4096, 16).smem), tc_strip_smem(u64::from(h200(4096, 4096, 16).warps), 2));
    }
}
