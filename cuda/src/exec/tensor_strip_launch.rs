//! Which bounded strip launch runs (kernels/exec_tensor_strip.cu): the plan of
//! exec/tensor_strip.rs, and where it splits the item columns, how the splits are added: inside a
//! thread-block cluster where the device's resident clusters leave the plan as it is
//! ([`cluster_keeps_plan`]), else by the summing kernel (`exec_tensor_panel_sum`); the bench's
//! variants of either.

use super::release::{release_point, Breadth, Release};
use super::tensor::{SplitLaunch, SplitSum};
use super::tensor_strip::{tc_strip_plan, tc_strip_splits, SplitRule, TcStripGeometry, TcStripPlan, MAX_SPLITS};
use super::GpuExecMatrix;
use crate::GpuError;

/// Splits at most of a cluster launch: the portable thread-block cluster size.
const MAX_CLUSTER_SPLITS: u64 = 8;

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
    /// Production's launch on the entry point that releases the next kernel after its items,
    /// whatever the launch's rounds (production until session 31).
    #[cfg(feature = "bench")]
    ReleaseEnd,
    /// Production's launch rules on the least splits alone ([`SplitRule::Least`]; production
    /// until session 32).
    #[cfg(feature = "bench")]
    LeastSplits,
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

/// The entry point of the strip kernel `name` that releases the next kernel at its CTAs' start
/// (the production entry points release it after their items), None for any other.
fn release_start_entry(name: &str) -> Option<&'static str> {
    Some(match name {
        "exec_tensor_strip_n1" => "exec_tensor_strip_n1_release_start",
        "exec_tensor_strip_n2" => "exec_tensor_strip_n2_release_start",
        "exec_tensor_strip_n4" => "exec_tensor_strip_n4_release_start",
        "exec_tensor_strip_cluster_n1" => "exec_tensor_strip_cluster_n1_release_start",
        "exec_tensor_strip_cluster_n2" => "exec_tensor_strip_cluster_n2_release_start",
        "exec_tensor_strip_cluster_n4" => "exec_tensor_strip_cluster_n4_release_start",
        _ => return None,
    })
}

/// Where a bounded strip launch lets the next kernel launch ([`Release::Start`] on a
/// `_release_start` entry point, [`Release::End`] after its items): at the start where the launch
/// is `programmatic` (one split, or splits added in a cluster; a launch followed by the summing
/// kernel is serial) and its `grid` fills at least 0.9 of the device's resident CTAs (`slots`):
/// [`release_point`] of a [`Breadth::Narrow`] launch, the one-column kernels' rule. Below it, the
/// next kernel's CTAs would take the free slots and sit, waiting, beside this whole kernel.
/// Measured on the H200 (docs/gpu.md, session 31; N = 1..8, the start against the end in one
/// process): released at the start everywhere, at 0.97 of the resident CTAs 0.6-2.5% faster on 5
/// of 5 shapes and 2560x9728 in clusters at 0.98 even, at 0.71-0.87 from -2% to +3%, under one
/// round with few warps 9-11% slower (19456x2560, W = 2 at 0.77; 1000x3000 at 0.24); under this
/// rule, of the 13 shapes it moved 9 ran 0.4-2.5% faster, 3 within 0.4%, 15744x4480 (W = 3)
/// 0.6-1.1% slower.
fn tc_release(grid: u64, slots: u64, programmatic: bool) -> Release {
    if programmatic {
        release_point(grid, slots, Breadth::Narrow)
    } else {
        Release::End
    }
}

/// A bounded strip launch as chosen: entry point, plan, how its splits are added and where it
/// releases the next kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct TcStripChoice {
    pub name: &'static str,
    pub plan: TcStripPlan,
    pub sum: SplitSum,
    pub release: Release,
}

impl GpuExecMatrix {
    /// The launch of the strip kernel `v` on `ncols` BF16 columns: [`tc_strip_plan`] with this
    /// device's occupancy, and for production the cluster rule and the release rule
    /// ([`tc_release`]; the choice kept with the matrix per NT).
    fn tc_strip_choice(&self, v: StripVariant, ncols: u32) -> Result<TcStripChoice, GpuError> {
        let nt = u64::from(ncols.div_ceil(8).next_power_of_two());
        let geo = TcStripGeometry { rows: self.shape.rows, cols: self.shape.cols, items: self.item_columns(), nt };
        #[cfg(feature = "bench")]
        let warps = self.tc_strip_force;
        #[cfg(not(feature = "bench"))]
        let warps = None;
        #[cfg(feature = "bench")]
        let rule = if v == StripVariant::LeastSplits { SplitRule::Least } else { SplitRule::OneWave };
        #[cfg(not(feature = "bench"))]
        let rule = SplitRule::OneWave;
        let sms = u64::from(self.gpu.sm_count);
        let plain = |name: &'static str, max_splits: u64| {
            tc_strip_plan(geo, sms, max_splits, rule, warps, |threads, smem, _| {
                Ok(sms * u64::from(self.gpu.ctas_per_sm(name, threads, smem)?))
            })
        };
        // the plan with W from the resident clusters of S CTAs (compute capability 9.0 and later,
        // S >= 2), None elsewhere
        let clustered = || -> Result<Option<TcStripPlan>, GpuError> {
            if self.gpu.compute_capability.0 < 9 || tc_strip_splits(geo, sms, MAX_CLUSTER_SPLITS) < 2 {
                return Ok(None);
            }
            let name = cluster_kernel(nt);
            let plan = tc_strip_plan(geo, sms, MAX_CLUSTER_SPLITS, rule, warps, |threads, smem, s| {
                Ok(u64::from(self.gpu.clusters_resident(name, threads, smem, s as u32)?) * s)
            })?;
            Ok(Some(plan))
        };
        let (name, max_splits) = v.kernel(nt);
        let kernel_sum = |plan| TcStripChoice { name, plan, sum: SplitSum::Kernel, release: Release::End };
        // the plan, its splits added in a cluster where the cluster rule says so; the next kernel
        // released after the items
        let place = || -> Result<TcStripChoice, GpuError> {
            let p = plain(name, max_splits)?;
            // a plan of more splits than a cluster holds is never the cluster plan: no
            // resident-cluster lookups for it
            let fits = (2..=MAX_CLUSTER_SPLITS).contains(&u64::from(p.splits));
            Ok(match if fits { clustered()? } else { None } {
                Some(c) if cluster_keeps_plan(&p, &c) => {
                    TcStripChoice { name: cluster_kernel(nt), plan: p, sum: SplitSum::Cluster, release: Release::End }
                }
                _ => kernel_sum(p),
            })
        };
        match v {
            StripVariant::Production => {
                let choose = || self.with_tc_release(place()?);
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
                Some(plan) => TcStripChoice { name: cluster_kernel(nt), plan, sum: SplitSum::Cluster, release: Release::End },
                None => kernel_sum(plain(name, MAX_CLUSTER_SPLITS)?),
            }),
            #[cfg(feature = "bench")]
            StripVariant::ReleaseEnd => place(),
            #[cfg(feature = "bench")]
            StripVariant::LeastSplits => self.with_tc_release(place()?),
            #[cfg(feature = "bench")]
            _ => Ok(kernel_sum(plain(name, max_splits)?)),
        }
    }

    /// The CTAs of the launch `c` the device holds at once: for a cluster launch its resident
    /// clusters x S, else SMs x resident CTAs per SM.
    fn tc_strip_resident(&self, c: &TcStripChoice) -> Result<u64, GpuError> {
        let TcStripChoice { name, plan: p, sum, .. } = *c;
        let threads = 32 * p.warps;
        Ok(if sum == SplitSum::Cluster && p.splits > 1 {
            u64::from(self.gpu.clusters_resident(name, threads, p.smem, p.splits)?) * u64::from(p.splits)
        } else {
            u64::from(self.gpu.sm_count) * u64::from(self.gpu.ctas_per_sm(name, threads, p.smem)?)
        })
    }

    /// `c` released where [`tc_release`] says, on the entry point that releases at its CTAs' start
    /// where that is the start.
    fn with_tc_release(&self, c: TcStripChoice) -> Result<TcStripChoice, GpuError> {
        let Some(start) = release_start_entry(c.name) else {
            return Ok(c);
        };
        let programmatic = c.plan.splits == 1 || c.sum == SplitSum::Cluster;
        let release = tc_release(u64::from(c.plan.grid), self.tc_strip_resident(&c)?, programmatic);
        let name = if release == Release::Start { start } else { c.name };
        Ok(TcStripChoice { name, release, ..c })
    }

    /// The strip kernel `v` on `ncols` (at most 32) BF16 columns, launched as
    /// [`GpuExecMatrix::tc_strip_choice`] says.
    pub(super) fn tc_strip_launch(&self, v: StripVariant, x: u64, ncols: u32, bias: u64, out_bf16: i32, y: u64) -> Result<(), GpuError> {
        let TcStripChoice { name, plan, sum, .. } = self.tc_strip_choice(v, ncols)?;
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
    /// The launch releases the next kernel at its CTAs' start (else after its items).
    pub release_start: bool,
}

#[cfg(feature = "bench")]
impl GpuExecMatrix {
    /// Bench: the launch of the bounded strip kernel on `ncols` (1..=32) columns as `kernel` runs
    /// it (its strip variant, production's for any other kernel).
    pub fn tc_strip_plan_info(&self, ncols: u32, kernel: super::ExecMatvecKernel) -> Result<TcStripPlanInfo, GpuError> {
        let c = self.tc_strip_choice(super::tensor::strip_variant(kernel, ncols), ncols)?;
        let resident = self.tc_strip_resident(&c)?;
        let p = c.plan;
        let cluster = c.sum == SplitSum::Cluster && p.splits > 1;
        let release_start = c.release == Release::Start;
        Ok(TcStripPlanInfo { warps: p.warps, splits: p.splits, grid: p.grid, resident, cluster, release_start })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::tensor_strip::tc_strip_smem;

    #[test]
    fn a_launch_that_fills_the_device_releases_at_its_start() {
        // 4096x4096 at 8 columns on the H200: 256 CTAs of 11 warps, 264 resident
        assert_eq!(tc_release(256, 264, true), Release::Start);
        assert_eq!(tc_release(90, 100, true), Release::Start);
        assert_eq!(tc_release(89, 100, true), Release::End);
        // 19456x2560: 1216 CTAs of 2 warps, 1584 resident (0.77); 1000x3000: 63 of 264
        assert_eq!(tc_release(1216, 1584, true), Release::End);
        assert_eq!(tc_release(63, 264, true), Release::End);
        // past one round the start too: the next kernel launches once the last wave has started
        assert_eq!(tc_release(1216, 660, true), Release::Start);
        // a split launch whose splits the summing kernel adds is serial: no early release
        assert_eq!(tc_release(480, 489, false), Release::End);
    }

    #[test]
    fn every_strip_entry_point_has_a_loaded_release_start_twin() {
        let loaded = |name: &str| crate::kernels::PRODUCTION.iter().any(|&(n, _)| n == name);
        for nt in [1, 2, 4] {
            for name in [StripVariant::Production.kernel(nt).0, cluster_kernel(nt)] {
                let start = release_start_entry(name).unwrap_or_else(|| panic!("{name}: no release-start entry"));
                assert!(loaded(name) && loaded(start), "{name} / {start}");
                assert_eq!(start, format!("{name}_release_start"));
                // a release-start entry has no twin of its own: the rule applies once
                assert_eq!(release_start_entry(start), None);
            }
        }
        assert_eq!(release_start_entry("exec_tensor_panel_sum"), None);
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
}
