//! Unit tests of exec/strip.rs: the one-column launch plans on an H200-like device.

use super::*;

/// Resident CTAs per SM of the H200 at 80 registers: 24 warps.
fn h200(w: u64, _rs: u64, _s: u64) -> Result<u64, GpuError> {
    Ok(24 / w)
}

/// (W, RS) of a production shape, whose S is [`strip_slices`]'s.
fn ws(shape: Option<StripShape>) -> (u64, u64) {
    let s = shape.unwrap();
    (s.warps, s.rows)
}

/// The production plan's (W, RS) where its S is [`strip_slices`]'s, as under
/// [`SliceRule::PerWarps`].
fn launch(rows: u64, k: u64) -> (u64, u64) {
    let cb = k.div_ceil(512);
    let shape = strip_launch(rows, cb, 132, UnitRows::OneRound, PRODUCTION_SLICES, h200).unwrap();
    let per_warps = strip_launch(rows, cb, 132, UnitRows::OneRound, SliceRule::PerWarps, h200).unwrap();
    assert_eq!(shape, per_warps, "{rows}x{k}");
    ws(shape)
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
    type Ctas = fn(u64, u64, u64) -> Result<u64, GpuError>;
    let one_round = |rows, cb, ctas: Ctas| strip_launch(rows, cb, 132, UnitRows::OneRound, SliceRule::PerWarps, ctas).unwrap();
    let no32 = |w: u64, rs: u64, _s: u64| Ok(if rs == 32 { 0 } else { 24 / w });
    assert_eq!(one_round(1_000_000, 8, no32).unwrap().rows, 16);
    // only 2 warps fit: they are taken
    let two = |w: u64, _rs: u64, _s: u64| Ok(if w == 2 { 12 } else { 0 });
    assert_eq!(ws(one_round(4096, 8, two)), (2, 4));
    // nothing fits: no plan
    assert_eq!(one_round(4096, 8, |_, _, _| Ok(0)), None);
}

#[test]
fn where_one_round_is_possible_the_shape_takes_one() {
    for cb in 1..=64u64 {
        for rows in [1u64, 3, 100, 1000, 2560, 4096, 6000, 20000] {
            for rule in [SliceRule::PerWarps, SliceRule::Free] {
                let StripShape { warps: w, rows: rs, slices: s } =
                    strip_launch(rows, cb, 132, UnitRows::OneRound, rule, h200).unwrap().unwrap();
                assert!((2..=MAX_WARPS).contains(&w) && [4, 8, 16, 32].contains(&rs), "{rows}x{cb}: {w}:{rs}");
                assert!((1..=MAX_FREE_SLICES).contains(&s), "{rows}x{cb}: {w}:{rs}:{s}");
                let grid = rows.div_ceil(rs * s);
                assert!(grid <= 132 * (24 / w), "{rows}x{cb}: {w}:{rs}:{s}, {grid} CTAs");
            }
        }
    }
}

#[test]
fn only_plans_with_other_slices_take_the_kernel_that_reads_them() {
    assert_eq!(slices_entry("exec_matvec_strip", false), "exec_matvec_strip");
    assert_eq!(slices_entry("exec_matvec_strip", true), "exec_matvec_strip_slices");
    assert_eq!(slices_entry("bench_exec_probe_strip_nodecode", true), "bench_exec_probe_strip_nodecode");
    // over a grid, a production plan's S differs from max(1, W / CB) only where free slices
    // moved it, and every such plan is named for the instance that reads S
    let mut free = 0;
    for cb in 1..=40u64 {
        for rows in (16..6336u64).step_by(96) {
            let s = strip_launch(rows, cb, 132, UnitRows::OneRound, PRODUCTION_SLICES, h200).unwrap().unwrap();
            let moved = s.slices != strip_slices(s.warps, cb);
            let name = slices_entry("exec_matvec_strip", moved);
            assert_eq!(name == "exec_matvec_strip_slices", moved, "{rows}x{cb}: {s:?}");
            free += u64::from(moved);
        }
    }
    assert!(free > 100, "{free}");
}

#[test]
fn free_slices_share_a_ctas_units_more_evenly() {
    let one_round = |rows, cb, rule| strip_launch(rows, cb, 132, UnitRows::OneRound, rule, h200).unwrap().unwrap();
    let shape = |warps, rows, slices| StripShape { warps, rows, slices };
    // 5040x4480 (CB = 9): 2 warps at RS = 4 run 5 and 4 units (25 quarters of a group); 12
    // warps on 5 slices share 45 units, 4 each at most (20), in 252 CTAs of 264 resident
    // (measured 0.891x -> 1.091x of cuBLAS)
    assert_eq!(one_round(5040, 9, SliceRule::PerWarps), shape(2, 4, 1));
    assert_eq!(one_round(5040, 9, SliceRule::Free), shape(12, 4, 5));
    // 4588x14509 (CB = 29): 8 warps of 4 units at RS = 16 (68) against 8 warps on 3 slices,
    // 11 units of 4 rows each (55) (measured 1.502x -> 1.763x)
    assert_eq!(one_round(4588, 29, SliceRule::PerWarps), shape(8, 16, 1));
    assert_eq!(one_round(4588, 29, SliceRule::Free), shape(8, 4, 3));
    // where a strip's units already spread evenly, the same shape
    assert_eq!(one_round(4096, 8, SliceRule::Free), shape(3, 4, 1));
    assert_eq!(one_round(2560, 19, SliceRule::Free), shape(4, 4, 1));
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
