//! Launch plan of the bounded strip kernel (kernels/exec_tensor_strip.cu), the tensor-core matvec
//! of [`ExecMatvecKernel::Bounded`](super::ExecMatvecKernel::Bounded) up to 32 columns per
//! decode: a CTA of W warps per row group of 16 rows and range of item columns, the ranges
//! (`splits`) added where the row groups alone would spread unevenly over the SMs (in a
//! thread-block cluster or by a second kernel: exec/tensor_strip_launch.rs).

use crate::GpuError;

/// Warps per CTA at most (the kernel's launch bounds: 512 threads) and splits at most.
pub(super) const MAX_WARPS: u64 = 16;
pub(super) const MAX_SPLITS: u64 = 64;
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

/// How a plan takes its splits S.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SplitRule {
    /// The least S of [`tc_strip_splits`]; where its plan runs the CTAs in more than one wave, the
    /// S from there to [`ONE_WAVE_MOST_SPLITS`] whose plan fits one wave at no more waves x items
    /// per warp, the least such cost, on a tie the fewest splits (session 32).
    OneWave,
    /// Bench: the least S of [`tc_strip_splits`] alone (production until session 32).
    #[cfg(feature = "bench")]
    Least,
}

/// The most splits [`SplitRule::OneWave`] takes to fit one wave (a thread-block cluster's portable
/// size). A second wave pays every CTA's start, activations, partial sums and barrier again and
/// leaves SMs idle between the waves, which waves x items per warp leaves out. Measured on the
/// H200 (docs/gpu.md, session 32, 19 split shapes at 1..32 columns): where the least S ran 1.8-2.8
/// waves at 16 and 32 columns (2304x8192, 2320x8256, 2368x15680, 2320x12864: W = 5 or 7 on 5
/// splits, summing kernel), W = 2 on 7 splits in one wave ran 4-24% faster on 8 of 8 rows; the
/// same search without the one-wave condition lost up to 19% where it moved one-wave plans (out
/// of a cluster, or into 2.9 waves of 2 items), and up to 64 splits (CTAs of one warp on 13-31
/// splits) lost up to 31%. This rule on 13 fresh shapes of the band it moves on the H200 (144..149
/// row groups): 13 of 13 rows faster at 16 columns (+6% to +27%), 12 of 13 at 32 (2304x9216, whose
/// 6 splits tie the least S's cost, 6% slower).
const ONE_WAVE_MOST_SPLITS: u64 = 8;

/// A plan and what the model says of it.
#[derive(Clone, Copy, Debug)]
struct Costed {
    plan: TcStripPlan,
    /// Waves x items per warp ([`wave_items`]).
    cost: u64,
    waves: u64,
}

/// The plan at `s` splits: W (1 to 16, at most the split's item columns) where the CTAs run in
/// waves of `resident(threads, smem, s)` (the device's resident CTAs: SMs x CTAs per SM, or for a
/// cluster launch the resident clusters x S) and a warp runs ceil(items / S / W) items one after
/// the other, so the plan takes the W with the fewest waves x items per warp, on a tie the fewest
/// warps (fewer wait at the CTA's barrier). Where the units outnumber the SMs, only a W at which
/// an SM holds at least two CTAs (unless none does): with one, each CTA's last item, partial sums
/// and barrier leave its SM idle until the next CTA starts; measured on the H200 (docs/gpu.md,
/// session 18, W forced to 2..16), the model's W = 16 at 16 and 32 columns ran 14-19% slower than
/// W = 4 on 6144x4096 and 21-24% slower than W = 2 or 4 on 14336x4096, while on the 12 other
/// shapes its choice was within 2% of the best forced W or better. A W that gives each warp one
/// item per CTA in more than one wave counts two items a wave ([`wave_items`]). `warps` (bench)
/// holds W to one value (at most the split's item columns).
fn tc_strip_plan_at(
    g: TcStripGeometry,
    s: u64,
    sm_count: u64,
    warps: Option<u64>,
    resident: &mut impl FnMut(u32, u32, u64) -> Result<u64, GpuError>,
) -> Result<Option<Costed>, GpuError> {
    let per = g.items.div_ceil(s).max(1);
    let units = g.rows.div_ceil(16) * s;
    let (lo, hi) = match warps {
        Some(w) => (w.clamp(1, per), w.clamp(1, per)),
        None => (1, MAX_WARPS.min(per)),
    };
    // the best W with two resident CTAs per SM and the best of all
    let mut best: [Option<Costed>; 2] = [None, None];
    for w in lo..=hi {
        let smem = tc_strip_smem(w, g.nt);
        let wave = resident(32 * w as u32, smem as u32, s)?.max(1);
        let per_sm = wave / sm_count;
        let waves = units.div_ceil(wave);
        let cost = waves * wave_items(per.div_ceil(w), waves);
        let plan = TcStripPlan { warps: w as u32, splits: s as u32, grid: units as u32, smem: smem as u32 };
        for (slot, ok) in best.iter_mut().zip([per_sm >= 2, true]) {
            if ok && slot.is_none_or(|b| cost < b.cost) {
                *slot = Some(Costed { plan, cost, waves });
            }
        }
    }
    let [paired, any] = best;
    Ok(if units > sm_count { paired.or(any) } else { any })
}

/// The splits by `rule` (the least by [`tc_strip_splits`], and for [`SplitRule::OneWave`] more
/// where they fit one wave) and W by [`tc_strip_plan_at`].
pub(super) fn tc_strip_plan(
    g: TcStripGeometry,
    sm_count: u64,
    max_splits: u64,
    rule: SplitRule,
    warps: Option<u64>,
    mut resident: impl FnMut(u32, u32, u64) -> Result<u64, GpuError>,
) -> Result<TcStripPlan, GpuError> {
    let least = tc_strip_splits(g, sm_count, max_splits);
    let none = GpuError::Unsupported("no CTA of the bounded strip kernel");
    let first = tc_strip_plan_at(g, least, sm_count, warps, &mut resident)?.ok_or(none)?;
    let mut choice = first;
    if rule == SplitRule::OneWave && least > 1 && first.waves > 1 {
        // at most the splits a cluster holds, and no split empty
        for s in least + 1..=ONE_WAVE_MOST_SPLITS.min(max_splits).min(g.items) {
            if (s - 1) * g.items.div_ceil(s) >= g.items {
                continue;
            }
            if let Some(c) = tc_strip_plan_at(g, s, sm_count, warps, &mut resident)? {
                let better = if choice.waves > 1 { c.cost <= first.cost } else { c.cost < choice.cost };
                if c.waves == 1 && better {
                    choice = c;
                }
            }
        }
    }
    Ok(choice.plan)
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
        tc_strip_plan(geo(rows, cols, ncols), 132, MAX_SPLITS, SplitRule::OneWave, None, |threads, _, _| {
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
        // 144 row groups (2 against 1.09): 5 x 144 = 720 units, 6 per SM against 5.45 (the least
        // S; this model's plan, 21 warps per SM, takes 6 to fit one wave)
        assert_eq!(tc_strip_splits(geo(2304, 8192, 8), 132, MAX_SPLITS), 5);
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
            tc_strip_plan(geo(m, 4096, 16), 132, MAX_SPLITS, SplitRule::OneWave, None, |threads, _, _| {
                Ok(132 * u64::from(65_536 / (128 * threads)))
            })
            .unwrap()
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
            tc_strip_plan(geo(m, k, 8), 132, MAX_SPLITS, SplitRule::OneWave, None, |threads, _, _| {
                Ok(132 * u64::from((768 / threads).min(32)))
            })
            .unwrap()
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
    fn splits_past_the_least_only_to_fit_one_wave() {
        // the H200's resident warps per SM: 24 at 8 columns (80 registers), 16 at 16 and 32
        let at = |m: u64, k: u64, ncols: u64, rule| {
            let per_sm = if ncols <= 8 { 24 } else { 16 };
            tc_strip_plan(geo(m, k, ncols), 132, MAX_SPLITS, rule, None, |threads, _, _| {
                Ok(132 * u64::from((per_sm / (threads / 32)).min(32)))
            })
            .unwrap()
        };
        let one = |m, k, ncols| {
            let p = at(m, k, ncols, SplitRule::OneWave);
            (p.warps, p.splits, p.grid)
        };
        // 144 row groups of 64 item columns at 16 columns: the least S (5) gives W = 5 in two
        // waves of 3 items (720 CTAs, 396 resident); 7 splits W = 2 in one wave of 5
        assert_eq!(one(2304, 8192, 16), (2, 7, 1008));
        // at 8 columns the least S's plan is one wave: kept (W = 4, 5 splits)
        assert_eq!(one(2304, 8192, 8), (4, 5, 720));
        // 160 row groups: one wave at S = 3 at 8 and 16 columns
        assert_eq!(one(2560, 9728, 8), (6, 3, 480));
        assert_eq!(one(2560, 9728, 16), (4, 3, 480));
        // unsplit matrices stay unsplit, whatever their waves (19456x2560 at 16: W = 3, 2 waves)
        assert_eq!(one(19456, 2560, 16).1, 1);
        assert_eq!(one(4096, 4096, 16).1, 1);
        // a least S past 8 is kept (2144x12288: 9)
        assert_eq!(one(2144, 12288, 8).1, 9);
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
