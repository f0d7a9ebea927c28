//! On a device: GPU dequant, gather and matvec equal the reference bit for bit on random matrices
//! of all four modes, and a malformed matrix never reaches the device. Without a device each test
//! prints `skipped: no CUDA device` and returns (names start with `gpu_` so a CI log shows which
//! ones did not run). The full 1000-matrix sweep is `nwc-conform-gpu --sweep 1000`.

use nwc_cuda::conform::run_sweep;
use nwc_cuda::{Gpu, GpuError, GpuMatrix, SKIP_NO_DEVICE};
use nwc_reference::{encode, Mode, Shape, Weights};

fn device() -> Option<std::sync::Arc<Gpu>> {
    if let Err(why) = Gpu::probe() {
        eprintln!("{why}");
        println!("{SKIP_NO_DEVICE}");
        return None;
    }
    Some(Gpu::get(0).expect("device present but kernels failed to load"))
}

#[test]
fn gpu_random_sweep_matches_reference() {
    let Some(gpu) = device() else { return };
    let t = run_sweep(&gpu, 42, 120, 300);
    for f in &t.failures {
        println!("FAIL {f}");
    }
    println!("{}", t.line());
    assert_eq!(t.failed, 0);
}

#[test]
fn gpu_upload_rejects_a_corrupt_offset() {
    let Some(gpu) = device() else { return };
    let w: Vec<u16> = (0..16 * 1100).map(|i| 0x3C00 ^ (i as u16 * 37)).collect();
    let mut m = encode(Mode::BF16_L0, Shape::new(16, 1100), Weights::Bf16(&w)).unwrap().matrix;
    m.bases[1] += 8;
    match GpuMatrix::upload(&gpu, &m) {
        Err(GpuError::Invalid(nwc_reference::DecodeError::Format(e))) => assert_eq!(e.rule(), "offset-mismatch"),
        other => panic!("expected offset-mismatch, got {:?}", other.err()),
    }
}
