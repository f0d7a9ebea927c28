//! Launch plans of the strip kernels (kernels/exec_matvec_strip.cu), the exact one-column matvec
//! of [`ExecMatvecKernel::Exact`](super::ExecMatvecKernel::Exact): CTAs of one warp (W1) where the
//! groups of 4 rows fill at least half a round of resident warps (but for a band just past one
//! round), else CTAs of W warps with warps per CTA, row slices and rows per unit from the matrix's
//! shape and the device's resident CTAs.

use super::plan::{Plan, Tail};
use super::GpuExecMatrix;
use crate::GpuError;
use std::cmp::Reverse;

/// Row slices S of a CTA of W warps, as the kernel derives them: max(1, W / CB).
pub(super) fn strip_slices(w: u64, cb: u64) -> u64 {
    (w / cb).max(1)
}

/// Rows per unit RS: the smallest of 4, 8 and 16 whose CTAs (`rows` / (RS x `slices`)) fit one
/// round of resident CTAs, else 32. So every CTA starts at once and no second round leaves SMs idle
/// at its tail, and each warp takes as few units as that allows. `ctas(rs)`: the device's resident
/// CTAs at that RS. Measured on the H200 (docs/gpu.md, session 17: the CTA kernel forced to RS =
/// 4..32 on the bench shapes and a grid of 36 others): against the rule before it (the largest RS
/// that still gave two units per resident warp), 6144x4096 0.88x -> 1.09x of cuBLAS, 4096x4096
/// 0.94x -> 1.05x; 1.06x -> 1.12x over the grid.
pub(super) fn strip_rows(rows: u64, slices: u64, mut ctas: impl FnMut(u64) -> Result<u64, GpuError>) -> Result<u64, GpuError> {
    for rs in [4u64, 8, 16] {
        if rows.div_ceil(rs * slices) <= ctas(rs)? {
            return Ok(rs);
        }
    }
    Ok(32)
}

/// Most warps per CTA of the CTA kernel (its 512 threads of launch bounds).
pub(super) const MAX_WARPS: u64 = 16;

/// Which rows per unit [`strip_launch`] weighs for each W.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum UnitRows {
    /// The RS of [`strip_rows`]: the CTA kernel's own domain, where one round of CTAs is possible.
    OneRound,
    /// Every RS of 4, 8, 16 and 32, whole rounds counted: W1's tail band, where the CTAs take more
    /// than one round at any RS.
    Any,
}

/// The CTA kernel's launch shape (W warps per CTA, RS rows per unit) for `rows` rows of CB tiles
/// on `sms` SMs; `ctas(w, rs)`: the device's resident CTAs per SM at that shape (0 where its tile
/// partials do not fit shared memory). For each W in 2..=16, RS by `unit_rows` (`OneRound`: by
/// [`strip_rows`], all CTAs in one round where an RS of at most 16 allows; `Any`: each of 4, 8, 16
/// and 32, in as many rounds as it takes); then the shape whose warps each run the least work in
/// sequence: ceil(CB x S / W) units of RS / 4 groups of 4 rows, each unit costing about a
/// quarter of a group more (its tile of activations loaded, its partials written), so units x
/// (RS + 1) per round of CTAs. On a tie, the least work on the busiest SM (its CTAs x CB x S x
/// (RS + 1): fewer CTAs than SMs leave some SMs doing twice the work of others), then the most
/// working warps resident per SM (a warp past CB x S units is idle), then the fewest warps. None
/// where no shape fits shared memory (K above ~7 M on the H200).
///
/// Measured on the H200 (docs/gpu.md, session 19: every W in 2..16 and RS in 4, 8, 16 forced on
/// 81 shapes with M = 1000..6272, then 30 more against the tree before): the rule before it (one
/// warp per tile up to 8 tiles, else ceil(CB / ceil(CB / 8)) warps) lost most where CB has no
/// small divisor (2560x9728, CB = 19: 7 warps, 0.95x of cuBLAS; 4 warps at RS = 4, 1.04x). Fitted
/// on 41 shapes, this rule took the 30 of the last call from 0.982x to 1.049x (the best forced
/// shape per matrix: 1.055x). Of the bench shapes it made one slower, 4096x4096 on real weights
/// (3 warps of 3, 3 and 2 tiles: 0.99-1.03x against 1.07-1.09x at 8 warps and RS = 16).
pub(super) fn strip_launch(
    rows: u64,
    cb: u64,
    sms: u64,
    unit_rows: UnitRows,
    mut ctas: impl FnMut(u64, u64) -> Result<u64, GpuError>,
) -> Result<Option<(u64, u64)>, GpuError> {
    // work per warp, on the busiest SM, working warps per SM (more first), warps: compared in order
    type Key = (u64, u64, Reverse<u64>, u64);
    let mut best: Option<(Key, (u64, u64))> = None;
    for w in 2..=MAX_WARPS {
        let s = strip_slices(w, cb);
        // (RS, resident CTAs per SM) of the shapes this W may take
        let mut shapes = Vec::with_capacity(4);
        match unit_rows {
            UnitRows::OneRound => {
                let one_round = strip_rows(rows, s, |rs| Ok(sms * ctas(w, rs)?))?;
                // where RS = 32 does not fit shared memory, the largest RS that does, in more rounds
                for rs in [32u64, 16, 8, 4] {
                    if rs <= one_round && shapes.is_empty() {
                        let n = ctas(w, rs)?;
                        if n > 0 {
                            shapes.push((rs, n));
                        }
                    }
                }
            }
            UnitRows::Any => {
                for rs in [4u64, 8, 16, 32] {
                    let n = ctas(w, rs)?;
                    if n > 0 {
                        shapes.push((rs, n));
                    }
                }
            }
        }
        for (rs, per_sm) in shapes {
            let grid = rows.div_ceil(rs * s);
            let rounds = grid.div_ceil(sms * per_sm);
            let unit = rs + 1; // a unit's groups and its load, in quarters of a group
            let warp = (cb * s).div_ceil(w) * unit * rounds;
            let busiest_sm = grid.div_ceil(sms) * cb * s * unit;
            let working = w.min(cb * s) * per_sm;
            let key = (warp, busiest_sm, Reverse(working), w);
            if best.as_ref().is_none_or(|(b, _)| key < *b) {
                best = Some((key, (w, rs)));
            }
        }
    }
    Ok(best.map(|(_, shape)| shape))
}

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
    /// The shape of [`strip_launch`] over every RS ([`UnitRows::Any`]).
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
const W1_TAIL_PLAN: (u64, u64) = (4, 8);

impl GpuExecMatrix {
    /// The production strip plan for one column ([`GpuExecMatrix::strip_choice`] of the
    /// production kernels, launched as exec/pair.rs says), chosen once per matrix and kept: up to
    /// 60 occupancy lookups behind the cache's mutex, 2.5-6.8 us per launch on the H200 machine's
    /// host where the CTA kernel runs, which eager callers (no CUDA graph) paid on every launch
    /// until session 20 (docs/results.md, session 20: an eager enqueue 4.0-5.2 us against 7.0-14.0).
    pub(super) fn one_column_plan(&self) -> Result<Option<Plan>, GpuError> {
        if let Some(p) = self.one_column.get() {
            return Ok(*p);
        }
        let p = self.strip_choice("exec_matvec_strip_w1", "exec_matvec_strip")?;
        let p = match p {
            Some(p) => Some(self.one_column_launch(p)?),
            None => None,
        };
        Ok(*self.one_column.get_or_init(|| p))
    }

    /// Bench: the production one-column plan chosen again, without the kept one (its host cost,
    /// `nwc-gpu-bench --exec-host`); the kernel's name and threads per CTA.
    #[cfg(feature = "bench")]
    pub fn one_column_plan_uncached(&self) -> Result<Option<(&'static str, u32)>, GpuError> {
        match self.strip_choice("exec_matvec_strip_w1", "exec_matvec_strip")? {
            Some(p) => Ok(Some(self.one_column_launch(p).map(|p| (p.name, p.threads))?)),
            None => Ok(None),
        }
    }

    /// The strip kernel for one column: W1 (`w1`) or CTAs of W warps (`cta`) by [`strip_w1`] and
    /// [`strip_w1_tail`]; None where neither fits.
    pub(super) fn strip_choice(&self, w1: &'static str, cta: &'static str) -> Result<Option<Plan>, GpuError> {
        let slots = u64::from(self.gpu.sm_count) * u64::from(self.gpu.ctas_per_sm(w1, 32, 0)?);
        if strip_w1(self.shape.rows, slots) {
            let tail = match strip_w1_tail(self.shape.rows, self.col_tiles, slots) {
                Some(TailLaunch::Fixed) => self.strip_plan_with(cta, W1_TAIL_PLAN.0, W1_TAIL_PLAN.1),
                Some(TailLaunch::LeastWork) => match self.strip_plan(cta, UnitRows::Any)? {
                    Some(p) => {
                        let (w, per_sm) = (u64::from(p.threads / 32), u64::from(self.gpu.ctas_per_sm(p.name, p.threads, p.smem)?));
                        let w1_per_sm = slots / u64::from(self.gpu.sm_count);
                        fills_warp_slots(w, self.col_tiles, per_sm, w1_per_sm).then_some(p)
                    }
                    None => None,
                },
                None => None,
            };
            return Ok(Some(tail.unwrap_or_else(|| self.strip_w1_plan(w1))));
        }
        self.strip_plan(cta, UnitRows::OneRound)
    }

    /// The W1 kernel's plan: one CTA of one warp per 4 rows.
    pub(super) fn strip_w1_plan(&self, name: &'static str) -> Plan {
        let grid = self.shape.rows.div_ceil(4);
        Plan { name, grid: grid as u32, threads: 32, smem: 0, tail: Tail::RowsFlags(4) }
    }

    /// The plan of the strip kernel `name` (production or its bench probe) for one column: the
    /// launch shape by [`strip_launch`] with `unit_rows`; None where no shape's tile partials (RS x S x CB f32 per
    /// CTA) fit shared memory (K above ~7 M at RS = 4 on the H200).
    pub(super) fn strip_plan(&self, name: &'static str, unit_rows: UnitRows) -> Result<Option<Plan>, GpuError> {
        let cb = self.col_tiles;
        let optin = u64::from(self.gpu.smem_optin);
        let shape = strip_launch(self.shape.rows, cb, u64::from(self.gpu.sm_count), unit_rows, |w, rs| {
            let smem = rs * strip_slices(w, cb) * cb * 4;
            if smem > optin {
                return Ok(0);
            }
            Ok(u64::from(self.gpu.ctas_per_sm(name, 32 * w as u32, smem as u32)?))
        })?;
        Ok(shape.and_then(|(w, rs)| self.strip_plan_with(name, w, rs)))
    }

    /// The strip kernel `name` with W warps per CTA and RS rows per unit (W1's tail band and the
    /// bench's forced shapes take them as given), its slices by [`strip_slices`]; None where its
    /// tile partials do not fit shared memory.
    pub(super) fn strip_plan_with(&self, name: &'static str, w: u64, rs: u64) -> Option<Plan> {
        let cb = self.col_tiles;
        let slices = strip_slices(w, cb);
        let smem = rs * slices * cb * 4;
        if smem > u64::from(self.gpu.smem_optin) {
            return None;
        }
        let grid = self.shape.rows.div_ceil(rs * slices);
        Some(Plan { name, grid: grid as u32, threads: 32 * w as u32, smem: smem as u32, tail: Tail::RowsFlags(rs as u32) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Resident CTAs per SM of the H200 at 80 registers: 24 warps.
    fn h200(w: u64, _rs: u64) -> Result<u64, GpuError> {
        Ok(24 / w)
    }

    fn launch(rows: u64, k: u64) -> (u64, u64) {
        strip_launch(rows, k.div_ceil(512), 132, UnitRows::OneRound, h200).unwrap().unwrap()
    }

    #[test]
    fn the_launch_shape_gives_each_warp_the_least_work_in_sequence() {
        // 19 tiles: 4 warps of 5 units at RS = 4 (640 CTAs of 792 resident); the rule before it took
        // 7 warps of 3 units at RS = 8 (measured 1.066x against 0.978x of cuBLAS)
        assert_eq!(launch(2560, 9728), (4, 4));
        // 24 tiles: 12 warps of 2 units at RS = 16 (256 CTAs of 264), not 8 of 3
        assert_eq!(launch(4096, 12288), (12, 16));
        // 8 tiles: 3 warps of 3 units at RS = 4 (1024 CTAs of 1056): 3 x 5 = 15 quarters of a
        // group each, against 8 warps of one unit at RS = 16 (17)
        assert_eq!(launch(4096, 4096), (3, 4));
        // but 6144 rows at 3 warps need RS = 8 (3 x 9 = 27 quarters): 8 warps at RS = 16 (17)
        assert_eq!(launch(6144, 4096), (8, 16));
        // 6 tiles, 250 CTAs of 4 rows: 6 warps, 1 unit each
        assert_eq!(launch(1000, 3000), (6, 4));
        // 16 tiles: 8 warps of 2 units at RS = 4 (396 resident)
        assert_eq!(launch(1536, 8192), (8, 4));
    }

    #[test]
    fn ties_go_to_the_busiest_sm_then_to_working_warps() {
        // 1280 x 6 tiles: 6, 7, 8 and 12 warps each run 1 unit at RS = 4; 12 warps (2 slices) make
        // 160 CTAs on 132 SMs, 28 SMs with twice the work; of 6, 7, 8 warps (320 CTAs) the most
        // working warps per SM: 6 x 4 against 6 x 3
        assert_eq!(launch(1280, 3072), (6, 4));
        // 10 tiles: 10 and 12 warps tie on every count but the working warps (12 holds 2 idle)
        assert_eq!(launch(3520, 4864), (10, 16));
    }

    #[test]
    fn a_shape_whose_partials_do_not_fit_is_never_taken() {
        // RS = 32 never fits: 1 M rows run at RS = 16 in more rounds
        let no32 = |w: u64, rs: u64| Ok(if rs == 32 { 0 } else { 24 / w });
        let (_, rs) = strip_launch(1_000_000, 8, 132, UnitRows::OneRound, no32).unwrap().unwrap();
        assert_eq!(rs, 16);
        // only 2 warps fit: they are taken
        let two = |w: u64, _rs: u64| Ok(if w == 2 { 12 } else { 0 });
        assert_eq!(strip_launch(4096, 8, 132, UnitRows::OneRound, two).unwrap(), Some((2, 4)));
        // nothing fits: no plan
        assert_eq!(strip_launch(4096, 8, 132, UnitRows::OneRound, |_, _| Ok(0)).unwrap(), None);
    }

    #[test]
    fn where_one_round_is_possible_the_shape_takes_one() {
        for cb in 1..=64u64 {
            for rows in [1u64, 3, 100, 1000, 2560, 4096, 6000, 20000] {
                let (w, rs) = strip_launch(rows, cb, 132, UnitRows::OneRound, h200).unwrap().unwrap();
                assert!((2..=MAX_WARPS).contains(&w) && [4, 8, 16, 32].contains(&rs), "{rows}x{cb}: {w}:{rs}");
                let grid = rows.div_ceil(rs * strip_slices(w, cb));
                assert!(grid <= 132 * (24 / w), "{rows}x{cb}: {w}:{rs}, {grid} CTAs");
            }
        }
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
        let any = |rows: u64, k: u64| strip_launch(rows, k.div_ceil(512), 132, UnitRows::Any, h200).unwrap().unwrap();
        assert_eq!(any(13440, 15872), (8, 8));
        assert_eq!(any(16512, 7424), (3, 16));
        assert_eq!(any(15744, 8960), (6, 32));
    }

    #[test]
    fn units_grow_until_the_ctas_fit_one_round() {
        // 132 SMs x 3 CTAs of 8 warps
        let ctas = |_: u64| Ok(396);
        // 6144x4096 (8 tiles, one slice): 1536 CTAs of 4 rows, 768 of 8, 384 of 16
        assert_eq!(strip_rows(6144, 1, ctas).unwrap(), 16);
        assert_eq!(strip_rows(4096, 1, ctas).unwrap(), 16);
        assert_eq!(strip_rows(3072, 1, ctas).unwrap(), 8);
        assert_eq!(strip_rows(1584, 1, ctas).unwrap(), 4);
        assert_eq!(strip_rows(1585, 1, ctas).unwrap(), 8);
        // two slices: a CTA covers 2 RS rows
        assert_eq!(strip_rows(3168, 2, ctas).unwrap(), 4);
        assert_eq!(strip_rows(4096, 2, ctas).unwrap(), 8);
        assert_eq!(strip_rows(3, 1, ctas).unwrap(), 4);
        // beyond 16 rows per unit, 32
        assert_eq!(strip_rows(1_000_000, 1, ctas).unwrap(), 32);
        // an RS whose tile partials do not fit shared memory counts no resident CTA
        assert_eq!(strip_rows(100, 1, |rs| Ok(if rs < 16 { 0 } else { 396 })).unwrap(), 16);
    }

    #[test]
    fn the_tail_band_takes_no_shape_that_leaves_warp_slots_idle() {
        // 13824x5120 (CB = 10, 1.09 rounds of W1): the least-work shape is 10 warps at RS = 8,
        // 2 CTAs per SM, 20 of 24 warps: W1 instead
        let cb = 10;
        assert_eq!(strip_w1_tail(13824, cb, 3168), Some(TailLaunch::LeastWork));
        let (w, rs) = strip_launch(13824, cb, 132, UnitRows::Any, h200).unwrap().unwrap();
        assert_eq!((w, rs), (10, 8));
        assert!(!fills_warp_slots(w, cb, h200(w, rs).unwrap(), 24));
        // 12 warps on 10 tiles: 2 of them without a unit
        assert!(!fills_warp_slots(12, cb, 2, 24));
        // 14500x8704 (CB = 17): 6 warps at RS = 32, 4 CTAs per SM, all 24 working: taken
        let (w, rs) = strip_launch(14500, 17, 132, UnitRows::Any, h200).unwrap().unwrap();
        assert_eq!((w, rs), (6, 32));
        assert!(fills_warp_slots(w, 17, h200(w, rs).unwrap(), 24));
        // the fixed band's 4 warps of units of 8 rows: 6 CTAs, 24 warps
        assert!(fills_warp_slots(W1_TAIL_PLAN.0, 8, 6, 24));
    }
}
