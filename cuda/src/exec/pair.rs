//! Short launches of the CTA strip kernel at 2 warps per CTA whose warps run unequal units: the
//! launch rule of session 29 (docs/gpu.md, "Session 29"). Where a row's CB tiles split over 2
//! warps unevenly (CB x S odd: one warp runs one unit more than the other), the SM holds one warp
//! of the pair working alone through that last unit, and under one round of CTAs nothing else
//! fills its slots. Such a launch under 0.75 of a round takes CTAs of 3 warps at RS = 4 instead
//! (they fill just past one round); from 0.75 to 0.9 of a round it keeps its shape and releases
//! the next kernel at its start (exec/release.rs would release it at its end).

use super::plan::{Plan, Tail};
use super::release::Release;
use super::strip::strip_slices;
use super::GpuExecMatrix;
use crate::GpuError;

/// Most units per row strip of a pair launch that the rule takes: at 9 the busier warp runs 5
/// against an average of 4.5 (11% above); at 17, 9 against 8.5 (6%), where 3 warps measured
/// -4% to +2% and the start release -5% to -10% (session 29).
const MAX_UNITS: u64 = 9;

/// What [`pair_launch`] does with a two-warp launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PairLaunch {
    /// CTAs of 3 warps at RS = 4.
    Three,
    /// The same launch, releasing the next kernel at its start.
    StartRelease,
}

/// The rule for a launch of the CTA kernel at 2 warps per CTA and RS = 4 on CB tiles per row:
/// `pair_grid` CTAs of `pair_slots` resident; `three_grid` and `three_slots` the same at 3 warps.
/// Where its units per row strip (CB x S) are odd and at most [`MAX_UNITS`]: under 0.75 of a
/// round, [`PairLaunch::Three`] where those CTAs fit 1.5 rounds; from 0.75 to 0.9,
/// [`PairLaunch::StartRelease`]; else None (at 0.9 rounds and more the release is already at the
/// start).
///
/// Measured on the H200 (docs/gpu.md, sessions 27-29; CB = 5 and 9 at 0.67-0.89 rounds, fresh
/// shapes in each of four calls): 3 warps at RS = 4 faster than the two-warp launch released at its
/// end on 26 of 26 shapes (+1.6% to +15%; on real weights 13 of 13). Under 0.75 rounds 3 warps
/// were faster than the start release on 6 of 8 (the others within 1.7%), where the start release
/// lost up to 5% to the end release on CB = 9; from 0.75 the start release was faster than the end
/// release on 14 of 14 and than 3 warps on 8 of 10 (the others within 1.1%). Where CB x S is even
/// (CB = 6, 10) the two-warp launch has no lone warp: 3 warps measured 13-18% slower (session 27),
/// the start release 4% slower (5000x2900, session 29).
pub(super) fn pair_launch(cb: u64, pair_grid: u64, pair_slots: u64, three_grid: u64, three_slots: u64) -> Option<PairLaunch> {
    let units = cb * strip_slices(2, cb);
    if units % 2 == 0 || units > MAX_UNITS {
        return None;
    }
    if 4 * pair_grid < 3 * pair_slots {
        (2 * three_grid <= 3 * three_slots).then_some(PairLaunch::Three)
    } else if 10 * pair_grid < 9 * pair_slots {
        Some(PairLaunch::StartRelease)
    } else {
        None
    }
}

impl GpuExecMatrix {
    /// The production one-column launch from the strip choice `p`: [`pair_launch`]'s where `p`
    /// is a two-warp launch of the CTA kernel at RS = 4 that it takes, else `p` spread and
    /// released as exec/spread.rs says (`spread_release`).
    pub(super) fn one_column_launch(&self, p: Plan) -> Result<Plan, GpuError> {
        if p.name == "exec_matvec_strip"
            && p.threads == 64
            && p.tail == (Tail::Strip { rows: 4, slices: strip_slices(2, self.col_tiles) as u32 })
        {
            if let Some(three) = self.strip_plan_with(p.name, self.per_warps(3, 4)) {
                let rule = pair_launch(
                    self.col_tiles,
                    u64::from(p.grid),
                    self.resident_ctas(&p)?,
                    u64::from(three.grid),
                    self.resident_ctas(&three)?,
                );
                match rule {
                    Some(PairLaunch::Three) => return self.spread_release(three),
                    Some(PairLaunch::StartRelease) => return self.with_release(p, Some(Release::Start)),
                    None => {}
                }
            }
        }
        self.spread_release(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 132 SMs: 12 CTAs of 2 warps (1584), 8 of 3 (1056) per SM.
    const PAIR: u64 = 1584;
    const THREE: u64 = 1056;

    /// The rule at `rows` rows of `cb` tiles, RS = 4, one slice (CB >= 3).
    fn rule(rows: u64, cb: u64) -> Option<PairLaunch> {
        let grid = rows.div_ceil(4);
        pair_launch(cb, grid, PAIR, grid, THREE)
    }

    #[test]
    fn a_lone_warp_under_three_quarters_of_a_round_becomes_three_warps() {
        // 4400x4400 (CB 9, 1100 CTAs: 0.69 / 1.04 rounds), 4232x2176 (CB 5, 0.67)
        assert_eq!(rule(4400, 9), Some(PairLaunch::Three));
        assert_eq!(rule(4232, 5), Some(PairLaunch::Three));
        // 0.75 of a round: 1188 CTAs, 4752 rows
        assert_eq!(rule(4748, 9), Some(PairLaunch::Three));
        assert_eq!(rule(4752, 9), Some(PairLaunch::StartRelease));
    }

    #[test]
    fn from_three_quarters_to_nine_tenths_the_pair_is_released_at_its_start() {
        assert_eq!(rule(5232, 5), Some(PairLaunch::StartRelease)); // 0.83
        assert_eq!(rule(5664, 9), Some(PairLaunch::StartRelease)); // 0.89
                                                                   // 0.9 of a round (1426 CTAs) and more: release_point's start already
        assert_eq!(rule(5700, 9), Some(PairLaunch::StartRelease));
        assert_eq!(rule(5704, 9), None);
        assert_eq!(rule(5800, 9), None);
    }

    #[test]
    fn even_units_and_near_even_ones_keep_the_pair() {
        // CB 6, 10: each warp runs the same units
        assert_eq!(rule(4400, 6), None);
        assert_eq!(rule(4400, 10), None);
        // CB 17: 9 units against 8 (measured slower at 3 warps and at the start)
        assert_eq!(rule(4500, 17), None);
        // CB 1: two slices, 2 units
        assert_eq!(rule(4400, 1), None);
        // CB 3 and 7: odd, few units
        assert_eq!(rule(4400, 3), Some(PairLaunch::Three));
        assert_eq!(rule(4400, 7), Some(PairLaunch::Three));
    }

    #[test]
    fn three_warps_past_half_again_a_round_are_not_taken() {
        assert_eq!(pair_launch(9, 1100, PAIR, 1600, THREE), None);
        assert_eq!(pair_launch(9, 1100, PAIR, 1584, THREE), Some(PairLaunch::Three));
    }
}
