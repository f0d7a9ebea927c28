//! Unit tests of exec/plan.rs: the exact streaming plans on an H200-like device.

use super::*;

/// An H200-like device: 132 SMs, 227 KB of opt-in shared memory per CTA and 228 KB per SM
/// (1 KB of it reserved per CTA), 2048 threads per SM.
fn h200(rows: u64, k: u64, nb: u64, lean: bool) -> Option<Plan> {
    let k16 = k.div_ceil(16) * 16;
    let geo = StreamGeometry { rows, k16, col_tiles: k.div_ceil(512), sms: 132, optin: 232_448 };
    stream_plan(geo, nb, lean, |_, threads, smem| Ok((2048 / threads).min(233_472 / (smem + 1024)).max(1))).unwrap()
}

#[test]
fn every_plan_fits_the_shared_memory_it_asks_for() {
    let mut planned = 0;
    for rows in [1u64, 4, 1000, 4096, 6144, 16_384, 151_936] {
        for k16 in (16..=70_000u64).step_by(16) {
            for (nb, lean) in [(1, true), (1, false), (2, false), (4, false)] {
                if let Some(p) = h200(rows, k16, nb, lean) {
                    planned += 1;
                    assert!(u64::from(p.smem) <= 232_448, "{rows}x{k16}, {nb} columns: {} bytes for {}", p.smem, p.name);
                    assert!(p.grid >= 1 && p.threads >= 32 && p.threads <= EXEC_THREADS, "{rows}x{k16}: {} threads", p.threads);
                }
            }
        }
    }
    assert!(planned > 10_000);
}

#[test]
fn the_case_the_device_refused_takes_a_shallower_pipeline() {
    // 4096x8192 on the lean kernel: d4 needs 233,472 bytes at G = 4 (session 16's launch error)
    let p = h200(4096, 8192, 1, true).unwrap();
    assert_eq!(p.name, "exec_matvec_lean_d3");
    // 3072x8192 fits one round at d4 (CTAs of 12 warps)
    let p = h200(3072, 8192, 1, true).unwrap();
    assert_eq!((p.name, p.threads), ("exec_matvec_lean_d4", 384));
}
