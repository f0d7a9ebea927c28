//! CI without a GPU: every kernel must compile with NVRTC for sm_90 (the H200) before any device
//! time is spent (run it with and without `--features bench`). CI puts the PyPI NVRTC on LD_LIBRARY_PATH (cuda/ci-nvrtc.sh) and sets
//! NWC_REQUIRE_NVRTC=1, so a missing library fails there instead of skipping.

use nwc_cuda::kernels::{all_kernels, compile, nvrtc_available};

/// True when NVRTC is there; otherwise says the test was skipped (and fails where CI requires it).
fn nvrtc_or_skip() -> bool {
    if nvrtc_available() {
        return true;
    }
    assert!(std::env::var("NWC_REQUIRE_NVRTC").is_err(), "NWC_REQUIRE_NVRTC is set but libnvrtc was not found");
    println!("skipped: no NVRTC library (run cuda/ci-nvrtc.sh)");
    false
}

#[test]
fn every_kernel_compiles_for_sm_90_with_exact_float_options() {
    if !nvrtc_or_skip() {
        return;
    }
    let ptx = compile("sm_90").unwrap_or_else(|e| panic!("{e}")).to_src();
    // cuda/sass.sh takes the PTX from here, so that its counts are of exactly this build
    if let Ok(path) = std::env::var("NWC_WRITE_PTX") {
        std::fs::write(&path, &ptx).unwrap_or_else(|e| panic!("{path}: {e}"));
    }
    assert!(ptx.contains(".target sm_90"), "PTX is not for sm_90");
    for (name, _) in all_kernels() {
        assert!(ptx.contains(&format!(".entry {name}(")), "kernel {name} missing from the PTX");
    }
    // The build compiles exactly the kernels it loads: production builds no bench entry point.
    let entries = ptx.matches(".entry ").count();
    assert_eq!(entries, all_kernels().count(), "entry points in the PTX that the crate does not load");
    assert_eq!(cfg!(feature = "bench"), ptx.contains(".entry bench_"), "bench kernels compiled iff the bench feature is on");
    // --fmad=false: the only fused multiply-adds are our explicit __fmaf_rn (fma.rn.f32), and
    // no flush-to-zero variant appears anywhere.
    assert!(ptx.contains("fma.rn.f32"), "explicit fmas missing");
    assert!(!ptx.contains(".ftz"), "flush-to-zero instruction in the PTX");
    // And the options really reach NVRTC: with contraction on, a*b+c would become an fma.
    let src = "extern \"C\" __global__ void k(float* p) { p[0] = p[1] * p[2] + p[3]; }";
    let plain = cudarc::nvrtc::compile_ptx_with_opts(src, nwc_cuda::kernels::options("sm_90")).unwrap().to_src();
    assert!(!plain.contains("fma."), "--fmad=false did not take effect");
}

/// The bench's warpgroup-MMA probe compiles on its own for sm_90a (wgmma needs it) and holds the
/// entry points the bench loads.
#[cfg(feature = "bench")]
#[test]
fn the_wgmma_probe_compiles_for_sm_90a() {
    use nwc_cuda::kernels::{options, WGMMA_PROBE_KERNELS, WGMMA_PROBE_SOURCE};
    if !nvrtc_or_skip() {
        return;
    }
    let ptx = cudarc::nvrtc::compile_ptx_with_opts(WGMMA_PROBE_SOURCE, options("sm_90a")).unwrap_or_else(|e| panic!("{e:?}")).to_src();
    assert!(ptx.contains(".target sm_90a"), "PTX is not for sm_90a");
    assert!(ptx.contains("wgmma.mma_async"), "no wgmma in the probe's PTX");
    for name in WGMMA_PROBE_KERNELS {
        assert!(ptx.contains(&format!(".entry {name}(")), "kernel {name} missing from the PTX");
    }
}

/// The bench's warpgroup-MMA kernels compile after the production sources for sm_90a, as `Gpu`
/// loads them.
#[cfg(feature = "bench")]
#[test]
fn the_wgmma_kernels_compile_for_sm_90a() {
    use nwc_cuda::kernels::{options, SOURCE, WGMMA_KERNELS, WGMMA_SOURCE};
    if !nvrtc_or_skip() {
        return;
    }
    let ptx = cudarc::nvrtc::compile_ptx_with_opts(format!("{SOURCE}{WGMMA_SOURCE}"), options("sm_90a"))
        .unwrap_or_else(|e| panic!("{e:?}"))
        .to_src();
    // for ptxas by hand (registers, spills): NWC_WRITE_WGMMA_PTX=path
    if let Ok(path) = std::env::var("NWC_WRITE_WGMMA_PTX") {
        std::fs::write(&path, &ptx).unwrap_or_else(|e| panic!("{path}: {e}"));
    }
    assert!(ptx.contains("wgmma.mma_async"), "no wgmma in the PTX");
    for name in WGMMA_KERNELS {
        assert!(ptx.contains(&format!(".entry {name}(")), "kernel {name} missing from the PTX");
    }
}
