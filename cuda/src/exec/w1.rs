//! Where the one-column matvec runs the W1 kernel (CTAs of one warp that take 4 rows through every
//! tile, kernels/exec_matvec_strip_w1.cu), where its variant with the next tile loaded ahead runs
//! instead, and where the CTA kernel takes W1's tail band just past one round; exec/strip.rs
//! builds the plans.

use super::plan::Plan;
use super::release::{strip_entry, StripEntry};
use super::strip::strip_slices;
use super::GpuExecMatrix;
use crate::GpuError;

/// The W1 kernel (a warp per 4 rows, every tile) where the groups of 4 rows fill at least half a
/// round of resident warps (`w1_slots`; 24 per SM on the H200): W1 has no CTA barrier, but a warp
/// runs all CB tiles of its rows one after the other, so with too few groups the SMs hold too few
/// warps. Measured on the H200 (docs/gpu-history.md, session 16: a grid of M = 3072..10240 x K =
/// 2048..14336): W1 was faster by 7-25% at every K from 0.65 of a round (M = 8192, 10240); at 0.48
/// (M = 6144) faster by 6-8% with 4 and 8 tiles per row but slower by 11-13% with 16 and 28; at
/// 0.40 and below slower but for 4 tiles per row (3-4% faster). Until session 16 the threshold was
/// one whole round.
pub(super) fn strip_w1(rows: u64, w1_slots: u64) -> bool {
    rows.div_ceil(4) * 2 >= w1_slots
}

/// How the CTA kernel serves W1's tail band ([`strip_w1_tail`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TailLaunch {
    /// CTAs of 4 warps with units of 8 rows ([`W1_TAIL_PLAN`]).
    Fixed,
    /// The shape of [`strip_launch`](super::strip::strip_launch) over every RS
    /// ([`UnitRows::Any`](super::strip::UnitRows::Any)).
    LeastWork,
}

/// Where [`strip_w1`] holds but W1's groups of 4 rows overrun one round of its warps, with at
/// least 8 tiles per row: there the last, partial round of W1 runs warps that each take every
/// tile of their rows, a tail as long as a whole round on a few SMs, and the CTA kernel takes its
/// place. Where a row's tiles split evenly over 4 warps (CB a multiple of 4), up to 40% past one
/// round, CTAs of 4 warps with units of 8 rows (session 17, M = 8192..28672 x K = 2048..12288, 24
/// one-warp CTAs per SM: 2-11% faster than W1 on all 16 shapes at 1.01-1.37 rounds with CB = 8,
/// 12, 16 or 24; slower with CB = 4, 7 or 10 and beyond 1.4 rounds). Other CB, up to a third past
/// one round: the least-work shape over every RS (session 19: fixed on 38 shapes with every
/// launch forced, then on 16 fresh shapes at 1.01-1.31 rounds 0.995x -> 1.028x of cuBLAS with CB
/// from 5; held to CB >= 8, as the fixed band, 8 of its 11 shapes there gained 2.9-19% and 3 lost
/// 1.3-3.0%; with CB = 5..7 it lost on 4 of 6 shapes of two calls). Its shape is taken only where
/// it keeps the SM's warp slots working ([`fills_warp_slots`], session 22), W1 otherwise.
pub(super) fn strip_w1_tail(rows: u64, cb: u64, w1_slots: u64) -> Option<TailLaunch> {
    let groups = rows.div_ceil(4);
    if cb < 8 || groups <= w1_slots {
        return None;
    }
    if cb % W1_TAIL_PLAN.0 == 0 {
        return (10 * groups <= 14 * w1_slots).then_some(TailLaunch::Fixed);
    }
    (3 * groups <= 4 * w1_slots).then_some(TailLaunch::LeastWork)
}

/// Whether CTAs of `w` warps, `per_sm` of them resident per SM, keep as many warps working on
/// `cb` tiles per row as W1 keeps resident (`w1_per_sm`): a warp past the CTA's CB x S units has
/// none, and W x CTAs per SM may fall short of the SM's warp slots (W = 10: 2 CTAs, 20 of 24). In
/// W1's tail band ([`TailLaunch::LeastWork`]) a shape that does not is not taken, W1 runs
/// instead. Measured on the H200 (docs/gpu.md, session 22): where CB = 10 or 11 the least-work
/// shape was CTAs of 10 or 11 warps at RS = 8 in 6-7 rounds, 16-26% slower than W1 on all four
/// shapes (13824x5120: 0.790x of cuBLAS against W1's 0.999x); the shape work per warp does not
/// count the idle slots.
pub(super) fn fills_warp_slots(w: u64, cb: u64, per_sm: u64, w1_per_sm: u64) -> bool {
    w.min(cb * strip_slices(w, cb)) * per_sm >= w1_per_sm
}

/// The CTA kernel's launch shape in W1's tail band where the tiles split over 4 warps
/// ([`TailLaunch::Fixed`]): warps per CTA, rows per unit.
pub(super) const W1_TAIL_PLAN: (u64, u64) = (4, 8);

/// W1 with the next tile's group loaded ahead (kernels/exec_matvec_strip_w1.cu; its release points by
/// exec/release.rs).
const W1_AHEAD: &str = "exec_matvec_strip_w1_ahead";

/// Whether W1's launch of `groups` one-warp CTAs runs on the W1-ahead kernel: where they fit one
/// round of that kernel's resident CTAs (`ahead_slots`, the device's occupancy for its entry
/// point: 16 per SM on the H200 in session 30's calls, against W1's 24 at 80 registers). There
/// every warp has twice W1's bytes in flight and no warp waits for a slot. Measured on the H200
/// (docs/gpu.md, session 30): on 20 shapes at 0.51-0.67 of W1's round, as a bench variant, faster
/// on 40 of 40 rows by 0.8-5.1% (6920x5736 1.108x -> 1.148x of cuBLAS on real weights); in
/// production on 13 fresh shapes it took, 25 of 25 rows faster by 1.8-6.5%; where it would need a
/// second round (10633x7310, 12635x7798, 24576x4096, 19456x2560) 8-21% slower.
pub(super) fn w1_ahead(groups: u64, ahead_slots: u64) -> bool {
    groups <= ahead_slots
}

impl GpuExecMatrix {
    /// `p` on the W1-ahead kernel where `p` is W1's launch and [`w1_ahead`] takes it; else `p`.
    pub(super) fn w1_ahead_launch(&self, p: Plan) -> Result<Plan, GpuError> {
        if strip_entry(p.name) != Some(StripEntry::W1) {
            return Ok(p);
        }
        let ahead = Plan { name: W1_AHEAD, ..p };
        Ok(if w1_ahead(u64::from(p.grid), self.resident_ctas(&ahead)?) { ahead } else { p })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::strip::{strip_launch, SliceRule, StripShape, UnitRows};
    use crate::GpuError;

    /// Resident CTAs per SM of the H200 at 80 registers: 24 warps.
    fn h200(w: u64, _rs: u64, _s: u64) -> Result<u64, GpuError> {
        Ok(24 / w)
    }

    /// (W, RS) of the least-work shape over every RS, with [`SliceRule::PerWarps`]'s S.
    fn any(rows: u64, cb: u64) -> (u64, u64) {
        let StripShape { warps, rows: rs, .. } = strip_launch(rows, cb, 132, UnitRows::Any, SliceRule::PerWarps, h200).unwrap().unwrap();
        (warps, rs)
    }

    #[test]
    fn one_warp_ctas_only_where_the_rows_fill_half_a_round() {
        let slots = 132 * 24;
        assert!(strip_w1(151936, slots));
        assert!(strip_w1(24576, slots));
        assert!(strip_w1(19456, slots));
        // half a round: 6336 rows
        assert!(strip_w1(8192, slots));
        assert!(strip_w1(6336, slots));
        assert!(!strip_w1(6332, slots));
        assert!(!strip_w1(6144, slots));
        assert!(!strip_w1(4096, slots));
        assert!(!strip_w1(3, slots));
    }

    #[test]
    fn the_cta_kernel_takes_w1s_tail_band() {
        // 3168 one-warp CTAs resident; 13824 rows: 3456 groups, 1.09 rounds; 16384: 1.29; 17740: 1.40
        let slots = 132 * 24;
        let tail = |rows, cb| strip_w1_tail(rows, cb, slots);
        // a row's tiles split evenly over 4 warps: 4:8 to 1.4 rounds
        assert_eq!(tail(13824, 8), Some(TailLaunch::Fixed));
        assert_eq!(tail(16384, 16), Some(TailLaunch::Fixed));
        assert_eq!(tail(17740, 12), Some(TailLaunch::Fixed));
        assert_eq!(tail(17744, 12), None);
        // one round or less
        assert_eq!(tail(12672, 8), None);
        assert_eq!(tail(12676, 8), Some(TailLaunch::Fixed));
        assert_eq!(tail(12672, 10), None);
        // other tile counts from 8: the least-work shape to 4/3 of a round (16896 rows)
        assert_eq!(tail(14848, 10), Some(TailLaunch::LeastWork));
        assert_eq!(tail(16896, 9), Some(TailLaunch::LeastWork));
        assert_eq!(tail(16900, 9), None);
        assert_eq!(tail(17024, 22), None);
        // too few tiles
        assert_eq!(tail(14336, 4), None);
        assert_eq!(tail(14848, 7), None);
        assert_eq!(tail(14592, 5), None);
        // the bench shapes W1 serves keep it: 24576 (1.94 rounds), 19456 (1.54), 151936
        assert_eq!(tail(24576, 8), None);
        assert_eq!(tail(19456, 5), None);
        assert_eq!(tail(151936, 8), None);
    }

    #[test]
    fn in_the_tail_band_the_shape_may_take_several_rounds() {
        // 13440 x 31 tiles (1.06 rounds of W1): 8 warps of 4 units at RS = 8, 1680 CTAs in 5 rounds
        // of 396, 4 x 9 x 5 = 180 quarters of a group, against 4 x 33 x 2 = 264 at RS = 32
        // (measured 1.137x of cuBLAS against 0.872x, W1 0.964x)
        let any = |rows: u64, k: u64| any(rows, k.div_ceil(512));
        assert_eq!(any(13440, 15872), (8, 8));
        assert_eq!(any(16512, 7424), (3, 16));
        assert_eq!(any(15744, 8960), (6, 32));
    }

    #[test]
    fn the_tail_band_takes_no_shape_that_leaves_warp_slots_idle() {
        // 13824x5120 (CB = 10, 1.09 rounds of W1): the least-work shape is 10 warps at RS = 8,
        // 2 CTAs per SM, 20 of 24 warps: W1 instead
        let cb = 10;
        assert_eq!(strip_w1_tail(13824, cb, 3168), Some(TailLaunch::LeastWork));
        let (w, rs) = any(13824, cb);
        assert_eq!((w, rs), (10, 8));
        assert!(!fills_warp_slots(w, cb, h200(w, rs, 1).unwrap(), 24));
        // 12 warps on 10 tiles: 2 of them without a unit
        assert!(!fills_warp_slots(12, cb, 2, 24));
        // 14500x8704 (CB = 17): 6 warps at RS = 32, 4 CTAs per SM, all 24 working: taken
        let (w, rs) = any(14500, 17);
        assert_eq!((w, rs), (6, 32));
        assert!(fills_warp_slots(w, 17, h200(w, rs, 1).unwrap(), 24));
        // the fixed band's 4 warps of units of 8 rows: 6 CTAs, 24 warps
        assert!(fills_warp_slots(W1_TAIL_PLAN.0, 8, 6, 24));
    }

    #[test]
    fn w1_runs_ahead_only_in_one_round_of_its_slots() {
        // 132 SMs x 16 one-warp CTAs: 2112
        assert!(w1_ahead(1730, 2112)); // 6920x5736
        assert!(w1_ahead(2112, 2112));
        assert!(!w1_ahead(2113, 2112));
        assert!(!w1_ahead(2659, 2112)); // 10633x7310: 1.26 rounds, measured 20% slower
    }
}
