//! The GPU backend (crate nwc-cuda). Without a device: `nwc-conform gpu` fails unless told
//! `--allow-no-device`, and then says it skipped; the kernel choices are typed. On a device (the
//! `#[ignore]`d tests, run there with `--include-ignored`; without a device each prints `skipped:
//! no CUDA device` and fails, never passes): the corpus through the shared reader with the exact
//! and the bounded matvec, a random sweep bit for bit against the reference, a malformed matrix
//! never reaches the device, and a kernel choice that does not fit the layout is a typed error.
//! The long sweep is `nwc-conform gpu --sweep 1000`.

use nwc_conformance::backend::MatvecClass;
use nwc_conformance::corpus::Corpus;
use nwc_conformance::gpu::sweep::run_sweep;
use nwc_conformance::gpu::GpuBackend;
use nwc_conformance::run::reference::run_backend_class;
use nwc_cuda::{Gpu, GpuError, GpuMatrix, MatvecKernel, SKIP_NO_DEVICE};
use nwc_reference::{encode, Mode, Shape, Weights};
use std::path::Path;
use std::process::Command;

/// The device, or a failure: these tests only run when asked for (`--include-ignored`), so a
/// missing device there is an error, not a pass.
fn device() -> std::sync::Arc<Gpu> {
    if let Err(why) = Gpu::probe() {
        println!("{SKIP_NO_DEVICE}");
        panic!("{SKIP_NO_DEVICE}: {why}");
    }
    Gpu::get(0).expect("device present but kernels failed to load")
}

/// The corpus of this checkout, or `vectors` under the working directory (the device machine
/// runs a prebuilt test binary from the repository root, cuda/device-run.sh).
fn corpus_dir() -> std::path::PathBuf {
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("../vectors");
    if built.join("manifest.json").exists() {
        built
    } else {
        "vectors".into()
    }
}

#[test]
fn without_a_device_the_gpu_command_fails_unless_allowed() {
    if Gpu::present() {
        println!("a device is present: nothing to check here");
        return;
    }
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_nwc-conform")).arg("--vectors").arg(corpus_dir()).arg("gpu").args(extra).output().unwrap()
    };
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--allow-no-device"));
    let out = run(&["--allow-no-device", "--sweep", "3"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with(SKIP_NO_DEVICE));
}

#[test]
fn kernel_names_parse_or_fail_with_the_choices() {
    assert_eq!("bounded".parse::<MatvecKernel>().unwrap(), MatvecKernel::Bounded);
    let e = "7".parse::<MatvecKernel>().unwrap_err();
    assert!(matches!(e, GpuError::UnknownKernel { .. }) && e.to_string().contains("exact"), "{e}");
    assert!(MatvecKernel::Bounded.check(Mode::BF16_L0).is_err());
}

#[test]
#[ignore = "needs a CUDA device: run with --include-ignored on the GPU machine"]
fn gpu_corpus_exact_and_bounded() {
    let gpu = device();
    let corpus = Corpus::load(&corpus_dir()).unwrap();
    for (kernel, class) in [(MatvecKernel::Exact, MatvecClass::Exact), (MatvecKernel::Bounded, MatvecClass::Bounded)] {
        let report = run_backend_class(&corpus, &GpuBackend::new(gpu.clone(), kernel), class);
        assert!(report.all_passed(), "{}", report.to_text());
    }
}

#[test]
#[ignore = "needs a CUDA device: run with --include-ignored on the GPU machine"]
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
#[ignore = "needs a CUDA device: run with --include-ignored on the GPU machine"]
fn gpu_upload_rejects_a_corrupt_offset_and_mismatched_kernels() {
    let gpu = device();
    let w: Vec<u16> = (0..16 * 1100).map(|i| 0x3C00 ^ (i as u16 * 37)).collect();
    let mut m = encode(Mode::BF16_L0, Shape::new(16, 1100), Weights::Bf16(&w)).unwrap().matrix;
    let mut g = GpuMatrix::upload(&gpu, &m).unwrap();
    assert!(matches!(g.set_matvec_kernel(MatvecKernel::Bounded), Err(GpuError::KernelMismatch { .. })));
    m.bases[1] += 8;
    match GpuMatrix::upload(&gpu, &m) {
        Err(GpuError::Invalid(nwc_reference::DecodeError::Format(e))) => assert_eq!(e.rule(), "offset-mismatch"),
        other => panic!("expected offset-mismatch, got {:?}", other.err()),
    }
}
