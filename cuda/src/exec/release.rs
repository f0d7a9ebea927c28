//! Where a strip kernel lets the next kernel on the stream start (programmatic dependent launch,
//! crate::launch): each strip kernel has an entry point for either release point, and a plan
//! takes one by its rounds ([`release_point`]) or as the spread of short launches asks
//! (exec/spread.rs).

use super::plan::Plan;
#[cfg(feature = "bench")]
use super::variant::StripCols;
use super::GpuExecMatrix;
use crate::GpuError;

/// Where a strip kernel lets the next kernel on the stream launch (`grid_dependency_release`,
/// kernels/exec_matvec_strip.cu and exec_matvec_strip_w1.cu; only launches with
/// [`DependentLaunch::Programmatic`](super::DependentLaunch) start early).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Release {
    /// Once every CTA has started: the next kernel's CTAs take the slots this one frees, in its
    /// tail.
    Start,
    /// Once every CTA is done with its units (W1: at its last tile).
    End,
}

/// How a strip launch's CTAs hold their units, for [`release_point`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Breadth {
    /// The one-warp kernel, or CTAs of fewer than [`WIDE_MIN_WARPS`] warps.
    Narrow,
    /// The CTA kernel with at least [`WIDE_MIN_WARPS`] warps per CTA.
    Wide,
}

/// Fewest warps per CTA of a [`Breadth::Wide`] launch (also the fewest that exec/spread.rs
/// spreads).
pub(super) const WIDE_MIN_WARPS: u32 = 4;

/// The breadth of the strip launch `p` ([`Breadth::Narrow`] for any other kernel too).
pub(super) fn breadth(p: &Plan) -> Breadth {
    if strip_entry(p.name).is_some_and(StripEntry::is_cta) && p.threads / 32 >= WIDE_MIN_WARPS {
        Breadth::Wide
    } else {
        Breadth::Narrow
    }
}

/// [`Release::Start`] where the launch's CTAs fill at least 0.9 of the device's resident CTAs
/// (`slots`), or 0.7 of them for a [`Breadth::Wide`] launch, else [`Release::End`]. Where a
/// launch leaves slots free, a release at the start lets the next kernel's CTAs take them and sit,
/// waiting, beside this whole kernel. Measured on the H200 (docs/gpu.md, session 21; 74 rows, the
/// three orders in one process, ratios against serial launches): at 0.9 rounds and more the start
/// release gained 2-14% (the end release 0-12%); below, it lost up to 18% on long kernels (W1 at
/// 0.57-0.83 rounds: 0.82-0.97), where the end release held 0.95-1.02 and gained up to 25% on
/// short ones; geomean 1.075 under this rule against 1.061 (start everywhere) and 1.068 (end
/// everywhere). The wide threshold (sessions 25-26): CTAs of at least 4 warps at 0.7-0.9 rounds
/// ran faster released at their start on 13 of 15 launches in session 25 (up to +7.5%), and on 22
/// fresh shapes in session 26 the rule changed 12 launches: 5 gained 4-6.5%, 3 gained 0.6-1.1%,
/// the rest within 0.8%; below 0.7 rounds the start lost on 6 of 6 (0-1.6%), and CTAs of 2 or 3
/// warps lost 3-8% at the start at 0.68-0.79 rounds.
pub(super) fn release_point(grid: u64, slots: u64, breadth: Breadth) -> Release {
    let tenths = match breadth {
        Breadth::Narrow => 9,
        Breadth::Wide => 7,
    };
    if 10 * grid >= tenths * slots {
        Release::Start
    } else {
        Release::End
    }
}

/// Which strip kernel an entry point runs, whatever its release point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum StripEntry {
    /// The CTA kernel with S = max(1, W / CB) (`exec_matvec_strip`,
    /// `exec_matvec_strip_release_end`).
    Cta,
    /// The CTA kernel with S as passed (`exec_matvec_strip_slices`,
    /// `exec_matvec_strip_slices_release_end`).
    CtaSlices,
    /// The one-warp kernel (`exec_matvec_strip_w1`, `exec_matvec_strip_w1_release_end`).
    W1,
    /// The one-warp kernel with the next tile's group loaded ahead (`exec_matvec_strip_w1_ahead`,
    /// `exec_matvec_strip_w1_ahead_release_end`).
    W1Ahead,
    /// Bench: the CTA kernel on two or four columns per decode, S as passed
    /// (`bench_exec_matvec_strip_c2`, `bench_exec_matvec_strip_c4` and their `_release_end`;
    /// kernels/bench/exec_matvec_strip_cols.cu).
    #[cfg(feature = "bench")]
    CtaCols(StripCols),
}

impl StripEntry {
    /// The CTA kernel (CTAs of W warps whose tile partials meet in shared memory), not W1.
    fn is_cta(self) -> bool {
        match self {
            StripEntry::Cta | StripEntry::CtaSlices => true,
            #[cfg(feature = "bench")]
            StripEntry::CtaCols(_) => true,
            StripEntry::W1 | StripEntry::W1Ahead => false,
        }
    }
}

/// The strip kernel the production entry point `name` runs (with `bench`, the CTA kernel's on
/// several columns too); None for any other kernel (the probes included).
pub(super) fn strip_entry(name: &str) -> Option<StripEntry> {
    match name {
        "exec_matvec_strip" | "exec_matvec_strip_release_end" => Some(StripEntry::Cta),
        "exec_matvec_strip_slices" | "exec_matvec_strip_slices_release_end" => Some(StripEntry::CtaSlices),
        "exec_matvec_strip_w1" | "exec_matvec_strip_w1_release_end" => Some(StripEntry::W1),
        "exec_matvec_strip_w1_ahead" | "exec_matvec_strip_w1_ahead_release_end" => Some(StripEntry::W1Ahead),
        #[cfg(feature = "bench")]
        "bench_exec_matvec_strip_c2" | "bench_exec_matvec_strip_c2_release_end" => Some(StripEntry::CtaCols(StripCols::Two)),
        #[cfg(feature = "bench")]
        "bench_exec_matvec_strip_c4" | "bench_exec_matvec_strip_c4_release_end" => Some(StripEntry::CtaCols(StripCols::Four)),
        _ => None,
    }
}

/// The entry point of the strip kernel `name` (either release point, any of [`StripEntry`]) that
/// releases the next kernel at `release`; None for any other kernel.
fn release_entry(name: &str, release: Release) -> Option<&'static str> {
    Some(match (strip_entry(name)?, release) {
        (StripEntry::Cta, Release::Start) => "exec_matvec_strip",
        (StripEntry::Cta, Release::End) => "exec_matvec_strip_release_end",
        (StripEntry::CtaSlices, Release::Start) => "exec_matvec_strip_slices",
        (StripEntry::CtaSlices, Release::End) => "exec_matvec_strip_slices_release_end",
        (StripEntry::W1, Release::Start) => "exec_matvec_strip_w1",
        (StripEntry::W1, Release::End) => "exec_matvec_strip_w1_release_end",
        (StripEntry::W1Ahead, Release::Start) => "exec_matvec_strip_w1_ahead",
        (StripEntry::W1Ahead, Release::End) => "exec_matvec_strip_w1_ahead_release_end",
        #[cfg(feature = "bench")]
        (StripEntry::CtaCols(c), Release::Start) => c.entry(),
        #[cfg(feature = "bench")]
        (StripEntry::CtaCols(c), Release::End) => c.entry_release_end(),
    })
}

/// The entry point of the production strip kernel `name` that takes BF16 activations (the same
/// kernel, launch shape and release point, its activations widened to f32 as they load); None
/// for any other kernel.
pub(super) fn bf16_entry(name: &str) -> Option<&'static str> {
    Some(match name {
        "exec_matvec_strip" => "exec_matvec_strip_xbf16",
        "exec_matvec_strip_release_end" => "exec_matvec_strip_release_end_xbf16",
        "exec_matvec_strip_slices" => "exec_matvec_strip_slices_xbf16",
        "exec_matvec_strip_slices_release_end" => "exec_matvec_strip_slices_release_end_xbf16",
        "exec_matvec_strip_w1" => "exec_matvec_strip_w1_xbf16",
        "exec_matvec_strip_w1_release_end" => "exec_matvec_strip_w1_release_end_xbf16",
        "exec_matvec_strip_w1_ahead" => "exec_matvec_strip_w1_ahead_xbf16",
        "exec_matvec_strip_w1_ahead_release_end" => "exec_matvec_strip_w1_ahead_release_end_xbf16",
        #[cfg(feature = "bench")]
        "bench_exec_matvec_strip_c2" => "bench_exec_matvec_strip_c2_xbf16",
        #[cfg(feature = "bench")]
        "bench_exec_matvec_strip_c2_release_end" => "bench_exec_matvec_strip_c2_release_end_xbf16",
        #[cfg(feature = "bench")]
        "bench_exec_matvec_strip_c4" => "bench_exec_matvec_strip_c4_xbf16",
        #[cfg(feature = "bench")]
        "bench_exec_matvec_strip_c4_release_end" => "bench_exec_matvec_strip_c4_release_end_xbf16",
        _ => return None,
    })
}

impl GpuExecMatrix {
    /// The CTAs of `p` the device holds at once: SMs x resident CTAs per SM (one round).
    pub(super) fn resident_ctas(&self, p: &Plan) -> Result<u64, GpuError> {
        Ok(u64::from(self.gpu.sm_count) * u64::from(self.gpu.ctas_per_sm(p.name, p.threads, p.smem)?))
    }

    /// `p` with the strip kernel's entry point that releases the next kernel on the stream
    /// (programmatic dependent launch, `crate::launch`) where `release` says, or where
    /// [`release_point`] puts it for the launch's rounds when None. Other kernels unchanged.
    pub(super) fn with_release(&self, mut p: Plan, release: Option<Release>) -> Result<Plan, GpuError> {
        if release_entry(p.name, Release::Start).is_none() {
            return Ok(p);
        }
        let release = match release {
            Some(r) => r,
            None => release_point(u64::from(p.grid), self.resident_ctas(&p)?, breadth(&p)),
        };
        p.name = release_entry(p.name, release).unwrap_or(p.name);
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The production strip entry points on f32 activations.
    const STRIP_ENTRIES: [&str; 8] = [
        "exec_matvec_strip",
        "exec_matvec_strip_slices",
        "exec_matvec_strip_w1",
        "exec_matvec_strip_w1_ahead",
        "exec_matvec_strip_release_end",
        "exec_matvec_strip_slices_release_end",
        "exec_matvec_strip_w1_release_end",
        "exec_matvec_strip_w1_ahead_release_end",
    ];

    #[test]
    fn the_next_kernel_is_released_at_the_start_only_where_the_launch_fills_the_device() {
        // 132 SMs x 24 one-warp CTAs
        let slots = 132 * 24;
        let narrow = |grid| release_point(grid, slots, Breadth::Narrow);
        assert_eq!(narrow(6144), Release::Start); // 24576 rows: 1.94 rounds
        assert_eq!(narrow(2852), Release::Start); // 0.90: the threshold
        assert_eq!(narrow(2851), Release::End);
        assert_eq!(narrow(2019), Release::End); // 8073 rows: 0.64 rounds, lost 15% at the start
        assert_eq!(narrow(1), Release::End);
    }

    #[test]
    fn a_wide_launch_is_released_at_its_start_from_seven_tenths_of_the_slots() {
        // 132 SMs x 4 CTAs of 6 warps
        let slots = 132 * 4;
        let wide = |grid| release_point(grid, slots, Breadth::Wide);
        assert_eq!(wide(370), Release::Start); // 0.70: the threshold
        assert_eq!(wide(369), Release::End);
        assert_eq!(wide(448), Release::Start); // 3584x8704: 0.85 rounds, +6.5% at the start
        assert_eq!(release_point(448, slots, Breadth::Narrow), Release::End);
    }

    #[test]
    fn only_the_cta_kernel_of_four_warps_or_more_is_wide() {
        let plan = |name, warps: u32| Plan {
            name,
            grid: 1,
            threads: 32 * warps,
            smem: 0,
            tail: super::super::plan::Tail::Strip { rows: 4, slices: 1 },
        };
        assert_eq!(breadth(&plan("exec_matvec_strip", 4)), Breadth::Wide);
        assert_eq!(breadth(&plan("exec_matvec_strip_release_end", 12)), Breadth::Wide);
        assert_eq!(breadth(&plan("exec_matvec_strip", 3)), Breadth::Narrow);
        assert_eq!(breadth(&plan("exec_matvec_strip_slices", 12)), Breadth::Wide);
        assert_eq!(breadth(&plan("exec_matvec_strip_w1", 1)), Breadth::Narrow);
        assert_eq!(breadth(&plan("exec_matvec_rows", 8)), Breadth::Narrow);
    }

    #[test]
    fn each_strip_kernel_has_both_release_points_among_the_production_entry_points() {
        let loaded = |n: &str| crate::kernels::PRODUCTION.iter().any(|&(k, _)| k == n);
        for name in STRIP_ENTRIES {
            for release in [Release::Start, Release::End] {
                let e = release_entry(name, release).unwrap();
                assert!(loaded(e), "{e}");
                // the same kernel (CTA, W1 or W1 ahead), only the release point differs
                assert_eq!(strip_entry(e), strip_entry(name));
                assert_eq!(release_entry(e, release), Some(e));
            }
        }
        assert_eq!(release_entry("exec_matvec_rows", Release::End), None);
        // every strip entry point has its BF16 twin among the production entry points
        for name in STRIP_ENTRIES {
            let b = bf16_entry(name).unwrap();
            assert!(loaded(b), "{b}");
            assert_eq!(b, format!("{name}_xbf16"));
        }
        assert_eq!(bf16_entry("exec_matvec_rows"), None);
        assert_eq!(bf16_entry("bench_exec_probe_strip_nodecode"), None);
        assert_eq!(release_entry("bench_exec_probe_strip_nodecode", Release::End), None);
    }

    #[cfg(feature = "bench")]
    #[test]
    fn the_cta_kernel_on_several_columns_has_both_release_points_and_bf16_twins() {
        let loaded = |n: &str| crate::kernels::BENCH.iter().any(|&(k, _)| k == n);
        for cols in [StripCols::Two, StripCols::Four] {
            for name in [cols.entry(), cols.entry_release_end()] {
                assert_eq!(strip_entry(name), Some(StripEntry::CtaCols(cols)));
                for release in [Release::Start, Release::End] {
                    let e = release_entry(name, release).unwrap();
                    assert!(loaded(e), "{e}");
                    assert_eq!(strip_entry(e), Some(StripEntry::CtaCols(cols)));
                }
                let b = bf16_entry(name).unwrap();
                assert!(loaded(b), "{b}");
                assert_eq!(b, format!("{name}_xbf16"));
                // the tile partials of each column
                assert_eq!(super::super::strip::strip_columns(name), cols.columns());
            }
            // wide from 4 warps, as the one-column CTA kernel: spread and released by the same rules
            let plan = |warps: u32| Plan {
                name: cols.entry(),
                grid: 1,
                threads: 32 * warps,
                smem: 0,
                tail: super::super::plan::Tail::Strip { rows: 4, slices: 1 },
            };
            assert_eq!(breadth(&plan(4)), Breadth::Wide);
            assert_eq!(breadth(&plan(3)), Breadth::Narrow);
        }
        assert_eq!(super::super::strip::strip_columns("exec_matvec_strip"), 1);
    }
}
