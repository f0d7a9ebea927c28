//! On a device: GPU dequant, gather and matvec equal the reference bit for bit on random matrices
//! of all four modes, and a malformed matrix never reaches the device. The tests are `#[ignore]`d,
//! so a run without a device reports them as ignored, never as passed; on the GPU machine run them
//! with `--include-ignored`. Run there without a device anyway, each prints `skipped: no CUDA
//! device` and fails. The full 1000-matrix sweep is `nwc-conform-gpu --sweep 1000`.

use nwc_cuda::conform::run_sweep;
use nwc_cuda::{Gpu, GpuError, GpuMatrix, SKIP_NO_DEVICE};
use nwc_reference::{encode, Mode, Shape, Weights};

/// The device, or a failure: these tests only run when asked for (`--include-ignored`), so a
/// missing device there is an error, not a pass.
fn device() -> std::sync::Arc<Gpu> {
    if let Err(why) = Gpu::probe() {
        println!("{SKIP_NO_DEVICE}");
        panic!("{SKIP_NO_DEVICE}: {why}");
    }
    Gpu::get(0).expect("device present but kernels failed to load")
}

#[test]
#[ignore = "needs a CUDA device: run with --ignored on the GPU machine"]
fn gpu_random_sweep_matches_reference() {
    let gpu = device();
    let t = run_sweep(&gpu, 42, 120, 300);
    for f in &t.failures {
        println!("FAIL {f}");
    }
    println!("{}", t.line());
    assert_eq!(t.failed, 0);
}

#[test]
#[ignore = "needs a CUDA device: run with --ignored on the GPU machine"]
fn gpu_upload_rejects_a_corrupt_offset() {
    let gpu = device();
    let w: Vec<u16> = (0..16 * 1100).map(|i| 0x3C00 ^ (i as u16 * 37)).collect();
    let mut m = encode(Mode::BF16_L0, Shape::new(16, 1100), Weights::Bf16(&w)).unwrap().matrix;
    m.bases[1] += 8;
    match GpuMatrix::upload(&gpu, &m) {
        Err(GpuError::Invalid(nwc_reference::DecodeError::Format(e))) => assert_eq!(e.rule(), "offset-mismatch"),
        other => panic!("expected offset-mismatch, got {:?}", other.err()),
    }
}
