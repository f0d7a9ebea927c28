//! Launch plans of the strip kernels (kernels/exec_matvec_strip.cu and exec_matvec_strip_w1.cu),
//! the exact one-column matvec of [`ExecMatvecKernel::Exact`](super::ExecMatvecKernel::Exact):
//! CTAs of one warp (W1) where the groups of 4 rows fill at least half a round of resident warps
//! (but for a band just past one round; the rules in exec/w1.rs), else CTAs of W warps with warps
//! per CTA, row slices and rows per unit from the matrix's shape and the device's resident CTAs.

use super::plan::{Plan, Tail};
use super::w1::{fills_warp_slots, strip_w1, strip_w1_tail, TailLaunch, W1_TAIL_PLAN};
use super::GpuExecMatrix;
use crate::GpuError;
use std::cmp::Reverse;

/// Row slices S of a CTA of W warps, as the kernel derives them: max(1, W / CB).
pub(super) fn strip_slices(w: u64, cb: u64) -> u64 {
    (w / cb).max(1)
}

/// The CTA kernel's entry point for a plan whose row slices are not [`strip_slices`]'s (`free`):
/// `exec_matvec_strip_slices`, the instance that reads S from its argument (kernels/
/// exec_matvec_strip.cu: the other derives it, and keeps its registers); any other name unchanged
/// (the bench probe reads S always).
pub(super) fn slices_entry(name: &'static str, free: bool) -> &'static str {
    match (name, free) {
        ("exec_matvec_strip", true) => "exec_matvec_strip_slices",
        _ => name,
    }
}

/// Activation columns per decode of the CTA strip kernel `name`, whose CTAs hold that many
/// columns' tile partials: 1 for the production entry points and the probes; with `bench`, 2 or 4
/// for the kernel on several columns (kernels/bench/exec_matvec_strip_cols.cu).
#[cfg(feature = "bench")]
pub(super) fn strip_columns(name: &str) -> u64 {
    match super::release::strip_entry(name) {
        Some(super::release::StripEntry::CtaCols(c)) => c.columns(),
        _ => 1,
    }
}

/// Activation columns per decode of the CTA strip kernel `name`: 1 (every production entry
/// point).
#[cfg(not(feature = "bench"))]
pub(super) fn strip_columns(_name: &str) -> u64 {
    1
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

/// A launch shape of the CTA kernel: warps per CTA W, rows per unit RS, row slices per CTA S (a
/// CTA covers RS x S rows; its warps take the CB x S units round-robin).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct StripShape {
    pub warps: u64,
    pub rows: u64,
    pub slices: u64,
}

/// Which row slices [`strip_launch`] weighs for each W.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SliceRule {
    /// S = max(1, W / CB) ([`strip_slices`]): a CTA holds as many row strips as its warps cover
    /// with one unit each (production until session 29; W1's tail band keeps it).
    PerWarps,
    /// Every S of 1..=[`MAX_FREE_SLICES`]: a CTA may hold more units than its warps, so that
    /// units of few rows spread over more warps per SM, and more evenly (12 warps on 5 strips of
    /// 9 tiles run 4 units at most where 2 warps on one strip run 5 and 4).
    Free,
}

/// The row slices of the CTA kernel's one-round plans (W1's tail band keeps
/// [`SliceRule::PerWarps`], the rule it was measured with). Measured on the H200 (docs/gpu.md,
/// session 30): on 28 fresh shapes whose plan it moves (all with M = 4,200..5,300 at 0.67-0.95
/// of a round, where the shapes of [`SliceRule::PerWarps`] ran units of 8 or 16 rows or 2 warps
/// per CTA), faster on all 55 rows measured, synthetic and real, by 2-28%; 5040x4480 0.891x ->
/// 1.091x of cuBLAS, 4680x4224 1.007x -> 1.178x. The bench shapes keep their plans.
pub(super) const PRODUCTION_SLICES: SliceRule = SliceRule::Free;

/// Most row slices [`SliceRule::Free`] weighs (on an H200-like grid of M up to 6,336 rows no
/// plan takes more than 5; 7 appear in W1's domain).
pub(super) const MAX_FREE_SLICES: u64 = 16;

/// Which rows per unit [`strip_launch`] weighs for each W.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum UnitRows {
    /// The RS of [`strip_rows`]: the CTA kernel's own domain, where one round of CTAs is possible.
    OneRound,
    /// Every RS of 4, 8, 16 and 32, whole rounds counted: W1's tail band, where the CTAs take more
    /// than one round at any RS.
    Any,
}

/// The CTA kernel's launch shape (W warps per CTA, RS rows per unit, S row slices per CTA) for
/// `rows` rows of CB tiles on `sms` SMs; `ctas(w, rs, s)`: the device's resident CTAs per SM at
/// that shape (0 where its tile partials do not fit shared memory). For each W in 2..=16 and S by
/// `slice_rule`, RS by `unit_rows` (`OneRound`: by [`strip_rows`], all CTAs in one round where an
/// RS of at most 16 allows; `Any`: each of 4, 8, 16 and 32, in as many rounds as it takes); then
/// the shape whose warps each run the least work in
/// sequence: ceil(CB x S / W) units of RS / 4 groups of 4 rows, each unit costing about a
/// quarter of a group more (its tile of activations loaded, its partials written), so units x
/// (RS + 1) per round of CTAs. On a tie, the least work on the busiest SM (its CTAs x CB x S x
/// (RS + 1): fewer CTAs than SMs leave some SMs doing twice the work of others), then the most
/// working warps resident per SM (a warp past CB x S units is idle), then the fewest warps, then
/// the fewest slices. None where no shape fits shared memory (K above ~7 M on the H200).
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
    slice_rule: SliceRule,
    mut ctas: impl FnMut(u64, u64, u64) -> Result<u64, GpuError>,
) -> Result<Option<StripShape>, GpuError> {
    // work per warp, on the busiest SM, working warps per SM (more first), warps, slices: compared
    // in order
    type Key = (u64, u64, Reverse<u64>, u64, u64);
    let mut best: Option<(Key, StripShape)> = None;
    let pairs = (2..=MAX_WARPS).flat_map(|w| {
        let slices = match slice_rule {
            SliceRule::PerWarps => strip_slices(w, cb)..=strip_slices(w, cb),
            SliceRule::Free => 1..=MAX_FREE_SLICES,
        };
        slices.map(move |s| (w, s))
    });
    for (w, s) in pairs {
        // (RS, resident CTAs per SM) of the shapes this W and S may take
        let mut shapes = Vec::with_capacity(4);
        match unit_rows {
            UnitRows::OneRound => {
                let one_round = strip_rows(rows, s, |rs| Ok(sms * ctas(w, rs, s)?))?;
                // where RS = 32 does not fit shared memory, the largest RS that does, in more rounds
                for rs in [32u64, 16, 8, 4] {
                    if rs <= one_round && shapes.is_empty() {
                        let n = ctas(w, rs, s)?;
                        if n > 0 {
                            shapes.push((rs, n));
                        }
                    }
                }
            }
            UnitRows::Any => {
                for rs in [4u64, 8, 16, 32] {
                    let n = ctas(w, rs, s)?;
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
            let key = (warp, busiest_sm, Reverse(working), w, s);
            if best.as_ref().is_none_or(|(b, _)| key < *b) {
                best = Some((key, StripShape { warps: w, rows: rs, slices: s }));
            }
        }
    }
    Ok(best.map(|(_, shape)| shape))
}
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
        let p = match self.production_choice(PRODUCTION_SLICES)? {
            Some(p) => Some(self.one_column_launch(p)?),
            None => None,
        };
        Ok(*self.one_column.get_or_init(|| p))
    }

    /// The production strip kernel and shape for one column with `slice_rule`, before the launch
    /// rules of exec/pair.rs, exec/spread.rs and exec/release.rs: [`Self::strip_choice`], W1's
    /// launches on W1 ahead where exec/w1.rs takes it. The bench variants that change one launch
    /// rule start from it too.
    pub(super) fn production_choice(&self, slice_rule: SliceRule) -> Result<Option<Plan>, GpuError> {
        match self.strip_choice("exec_matvec_strip_w1", "exec_matvec_strip", slice_rule)? {
            Some(p) => Ok(Some(self.w1_ahead_launch(p)?)),
            None => Ok(None),
        }
    }

    /// Bench: the production one-column plan chosen again, without the kept one (its host cost,
    /// `nwc-gpu-bench --exec-host`); the kernel's name and threads per CTA.
    #[cfg(feature = "bench")]
    pub fn one_column_plan_uncached(&self) -> Result<Option<(&'static str, u32)>, GpuError> {
        match self.production_choice(PRODUCTION_SLICES)? {
            Some(p) => Ok(Some(self.one_column_launch(p).map(|p| (p.name, p.threads))?)),
            None => Ok(None),
        }
    }

    /// The strip kernel for one column: W1 (`w1`) or CTAs of W warps (`cta`) by [`strip_w1`] and
    /// [`strip_w1_tail`]; None where neither fits.
    pub(super) fn strip_choice(&self, w1: &'static str, cta: &'static str, slice_rule: SliceRule) -> Result<Option<Plan>, GpuError> {
        let slots = u64::from(self.gpu.sm_count) * u64::from(self.gpu.ctas_per_sm(w1, 32, 0)?);
        if strip_w1(self.shape.rows, slots) {
            let tail = match strip_w1_tail(self.shape.rows, self.col_tiles, slots) {
                Some(TailLaunch::Fixed) => self.strip_plan_with(cta, self.per_warps(W1_TAIL_PLAN.0, W1_TAIL_PLAN.1)),
                Some(TailLaunch::LeastWork) => match self.strip_plan(cta, UnitRows::Any, SliceRule::PerWarps)? {
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
        self.strip_plan(cta, UnitRows::OneRound, slice_rule)
    }

    /// The W1 kernel's plan: one CTA of one warp per 4 rows.
    pub(super) fn strip_w1_plan(&self, name: &'static str) -> Plan {
        let grid = self.shape.rows.div_ceil(4);
        Plan { name, grid: grid as u32, threads: 32, smem: 0, tail: Tail::Strip { rows: 4, slices: 1 } }
    }

    /// The plan of the strip kernel `name` (production, its bench probe or the bench's kernel on
    /// several columns) for its columns: the launch shape by [`strip_launch`] with `unit_rows` and
    /// `slice_rule`; None where no shape's tile partials (RS x S x CB f32 per CTA and column,
    /// [`strip_columns`]) fit shared memory (K above ~7 M at RS = 4 on the H200, one column).
    pub(super) fn strip_plan(&self, name: &'static str, unit_rows: UnitRows, slice_rule: SliceRule) -> Result<Option<Plan>, GpuError> {
        let cb = self.col_tiles;
        let optin = u64::from(self.gpu.smem_optin);
        let shape = strip_launch(self.shape.rows, cb, u64::from(self.gpu.sm_count), unit_rows, slice_rule, |w, rs, s| {
            let smem = strip_columns(name) * rs * s * cb * 4;
            if smem > optin {
                return Ok(0);
            }
            Ok(u64::from(self.gpu.ctas_per_sm(name, 32 * w as u32, smem as u32)?))
        })?;
        Ok(shape.and_then(|shape| self.strip_plan_with(name, shape)))
    }

    /// The shape of W warps and RS rows per unit with [`strip_slices`]'s S.
    pub(super) fn per_warps(&self, w: u64, rs: u64) -> StripShape {
        StripShape { warps: w, rows: rs, slices: strip_slices(w, self.col_tiles) }
    }

    /// The strip kernel `name` at `shape` (W1's tail band and the bench's forced shapes take it as
    /// given), on its entry point for the shape's slices ([`slices_entry`]); None where its tile
    /// partials do not fit shared memory.
    pub(super) fn strip_plan_with(&self, name: &'static str, shape: StripShape) -> Option<Plan> {
        let StripShape { warps: w, rows: rs, slices } = shape;
        let smem = strip_columns(name) * rs * slices * self.col_tiles * 4;
        if smem > u64::from(self.gpu.smem_optin) {
            return None;
        }
        let grid = self.shape.rows.div_ceil(rs * slices);
        let tail = Tail::Strip { rows: rs as u32, slices: slices as u32 };
        let name = slices_entry(name, slices != strip_slices(w, self.col_tiles));
        Some(Plan { name, grid: grid as u32, threads: 32 * w as u32, smem: smem as u32, tail })
    }
}

#[cfg(test)]
#[path = "strip_tests.rs"]
mod tests;
