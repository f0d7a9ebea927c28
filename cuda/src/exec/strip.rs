//! Launch plans of the strip kernels (kernels/exec_matvec_strip.cu), the exact one-column matvec
//! of [`ExecMatvecKernel::Exact`](super::ExecMatvecKernel::Exact): CTAs of one warp (W1) where the
//! groups of 4 rows fill at least half a round of resident warps (but for a band just past one
//! round), else CTAs of W warps with warps per CTA, row slices and rows per unit from the matrix's
//! shape and the device's resident CTAs.

use super::plan::{Plan, Tail};
use super::GpuExecMatrix;
use crate::GpuError;

/// Warps per CTA W for CB tiles per row: up to 8 tiles, every tile of each of ceil(8 / CB) row
/// slices gets one warp (W = 8..15, so short rows still fill a CTA); more tiles, one slice and W =
/// ceil(CB / ceil(CB / 8)) warps that take ceil(CB / 8) tiles each (W <= 8: the units split
/// evenly).
pub(super) fn strip_warps(cb: u64) -> u64 {
    if cb <= 8 {
        cb * 8u64.div_ceil(cb)
    } else {
        cb.div_ceil(cb.div_ceil(8))
    }
}

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

/// The W1 kernel (a warp per 4 rows, every tile) where the groups of 4 rows fill at least half a
/// round of resident warps (`w1_slots`; 24 per SM on the H200): W1 has no CTA barrier, but a warp
/// runs all CB tiles of its rows one after the other, so with too few groups the SMs hold too few
/// warps. Measured on the H200 (docs/gpu.md, session 16: a grid of M = 3072..10240 x K =
/// 2048..14336): W1 was faster by 7-25% at every K from 0.65 of a round (M = 8192, 10240); at 0.48
/// (M = 6144) faster by 6-8% with 4 and 8 tiles per row but slower by 11-13% with 16 and 28; at
/// 0.40 and below slower but for 4 tiles per row (3-4% faster). Until session 16 the threshold was
/// one whole round.
pub(super) fn strip_w1(rows: u64, w1_slots: u64) -> bool {
    rows.div_ceil(4) * 2 >= w1_slots
}

/// Where [`strip_w1`] holds but W1's groups of 4 rows overrun one round of its warps by at most
/// 40%, and a row's tiles split evenly over 4 warps (CB a multiple of 4, at least 8): there the
/// last, partial round of W1 runs warps that each take every tile of their rows, a tail as long
/// as a whole round on a few SMs. CTAs of 4 warps with units of 8 rows (shorter units, in ~2.5
/// rounds) take their place. Measured on the H200 (docs/gpu.md, session 17, M = 8192..28672 x K =
/// 2048..12288, 24 one-warp CTAs per SM): 2-11% faster than W1 on all 16 shapes at 1.01-1.37
/// rounds with CB = 8, 12, 16 or 24; slower with CB = 4, 7 or 10 (CB = 10: 3, 3, 2 and 2 tiles
/// per warp, 2-3% slower) and beyond 1.4 rounds.
pub(super) fn strip_w1_tail(rows: u64, cb: u64, w1_slots: u64) -> bool {
    let groups = rows.div_ceil(4);
    cb >= 8 && cb % W1_TAIL_PLAN.0 == 0 && groups > w1_slots && 10 * groups <= 14 * w1_slots
}

/// The CTA kernel's launch shape in W1's tail band ([`strip_w1_tail`]): warps per CTA, rows per
/// unit.
const W1_TAIL_PLAN: (u64, u64) = (4, 8);

impl GpuExecMatrix {
    /// The strip kernel for one column: W1 (`w1`) or CTAs of W warps (`cta`) by [`strip_w1`] and
    /// [`strip_w1_tail`]; None where neither fits.
    pub(super) fn strip_choice(&self, w1: &'static str, cta: &'static str) -> Result<Option<Plan>, GpuError> {
        let slots = u64::from(self.gpu.sm_count) * u64::from(self.gpu.ctas_per_sm(w1, 32, 0)?);
        if strip_w1(self.shape.rows, slots) {
            if strip_w1_tail(self.shape.rows, self.col_tiles, slots) {
                if let Some(plan) = self.strip_plan_with(cta, W1_TAIL_PLAN.0, Some(W1_TAIL_PLAN.1))? {
                    return Ok(Some(plan));
                }
            }
            return Ok(Some(self.strip_w1_plan(w1)));
        }
        self.strip_plan(cta)
    }

    /// The W1 kernel's plan: one CTA of one warp per 4 rows.
    pub(super) fn strip_w1_plan(&self, name: &'static str) -> Plan {
        let grid = self.shape.rows.div_ceil(4);
        Plan { name, grid: grid as u32, threads: 32, smem: 0, tail: Tail::RowsFlags(4) }
    }

    /// The plan of the strip kernel `name` (production or its bench probe) for one column, or None
    /// where its tile partials (RS x S x CB f32 per CTA) do not fit shared memory (K above ~7 M at
    /// RS = 4 on the H200).
    pub(super) fn strip_plan(&self, name: &'static str) -> Result<Option<Plan>, GpuError> {
        self.strip_plan_with(name, strip_warps(self.col_tiles), None)
    }

    /// [`GpuExecMatrix::strip_plan`] with W warps per CTA and, if given, RS rows per unit (the
    /// bench's variants force them), its slices by [`strip_slices`].
    pub(super) fn strip_plan_with(&self, name: &'static str, w: u64, rs: Option<u64>) -> Result<Option<Plan>, GpuError> {
        let cb = self.col_tiles;
        let slices = strip_slices(w, cb);
        let smem = |rs: u64| rs * slices * cb * 4;
        let optin = u64::from(self.gpu.smem_optin);
        if smem(rs.unwrap_or(4)) > optin {
            return Ok(None);
        }
        let sms = u64::from(self.gpu.sm_count);
        let rs = match rs {
            Some(rs) => rs,
            None => strip_rows(self.shape.rows, slices, |rs| {
                if smem(rs) > optin {
                    return Ok(0);
                }
                Ok(sms * u64::from(self.gpu.ctas_per_sm(name, 32 * w as u32, smem(rs) as u32)?))
            })?,
        };
        let grid = self.shape.rows.div_ceil(rs * slices);
        Ok(Some(Plan { name, grid: grid as u32, threads: 32 * w as u32, smem: smem(rs) as u32, tail: Tail::RowsFlags(rs as u32) }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unit_has_a_warp_and_the_kernel_derives_the_same_slices() {
        for cb in 1..=200u64 {
            let w = strip_warps(cb);
            let s = strip_slices(w, cb);
            assert!((1..=16).contains(&w), "cb {cb}: {w} warps");
            // ceil(8 / CB) slices of short rows, one slice of long ones
            assert_eq!(s, if cb <= 8 { 8u64.div_ceil(cb) } else { 1 }, "cb {cb}");
            if cb <= 8 {
                assert_eq!(w, cb * s, "cb {cb}: one warp per unit");
                assert!(w >= 8);
            } else {
                // as few rounds of units as 8 warps would need, with at most 8 warps
                assert!(w <= 8 && cb.div_ceil(w) == cb.div_ceil(8), "cb {cb}: w {w}");
            }
        }
        assert_eq!((strip_warps(8), strip_slices(8, 8)), (8, 1));
        assert_eq!((strip_warps(6), strip_slices(12, 6)), (12, 2));
        assert_eq!((strip_warps(5), strip_slices(10, 5)), (10, 2));
        assert_eq!((strip_warps(24), strip_slices(8, 24)), (8, 1));
        assert_eq!((strip_warps(19), strip_slices(7, 19)), (7, 1));
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
    fn the_cta_kernel_takes_w1s_tail_band_where_4_warps_split_the_tiles_evenly() {
        // 3168 one-warp CTAs resident; 13824 rows: 3456 groups, 1.09 rounds; 16384: 1.29; 17740: 1.40
        let slots = 132 * 24;
        assert!(strip_w1_tail(13824, 8, slots));
        assert!(strip_w1_tail(16384, 16, slots));
        assert!(strip_w1_tail(17740, 12, slots));
        assert!(!strip_w1_tail(17744, 12, slots));
        // one round or less
        assert!(!strip_w1_tail(12672, 8, slots));
        assert!(strip_w1_tail(12676, 8, slots));
        // tiles that do not split evenly over 4 warps, or too few of them
        assert!(!strip_w1_tail(14336, 4, slots));
        assert!(!strip_w1_tail(14848, 7, slots));
        assert!(!strip_w1_tail(14848, 10, slots));
        // the bench shapes W1 serves keep it: 24576 (1.94 rounds), 19456 (1.54), 151936
        assert!(!strip_w1_tail(24576, 8, slots));
        assert!(!strip_w1_tail(19456, 5, slots));
        assert!(!strip_w1_tail(151936, 8, slots));
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
}
