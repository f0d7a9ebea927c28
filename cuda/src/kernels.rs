//! The kernel sources, their entry points and how NVRTC compiles them (spec 15.4 demands exact
//! IEEE f32: no contraction, no flush-to-zero, IEEE division and square root).
//!
//! Production kernels live in `kernels/*.cu`, one file per role, compiled as one translation unit
//! in the order of [`SOURCE`] (each file uses what the files before it define). With the `bench`
//! feature, `kernels/bench/*.cu` (`BENCH_SOURCE`: superseded versions, timing probes, the fp8
//! baseline) is appended; production builds never compile it.
//!
//! Adding a kernel: put it in the file of its role (or a new file, added to [`SOURCE`] after the
//! files it uses), list its entry points in [`PRODUCTION`] with the dynamic shared memory they
//! need, and launch them from the `matrix` module of its role.

use crate::GpuError;
use cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions, Ptx};

// The bench-only sources and entry points (kernels/bench.rs), under their old paths.
#[cfg(feature = "bench")]
mod bench;
#[cfg(feature = "bench")]
pub use bench::*;

/// The production kernels, in compile order.
pub const SOURCE: &str = concat!(
    include_str!("../kernels/common.cu"),
    include_str!("../kernels/gather.cu"),
    include_str!("../kernels/exact_matvec_l1.cu"),
    include_str!("../kernels/dequant_l0.cu"),
    include_str!("../kernels/pair_decode.cu"),
    include_str!("../kernels/exact_matvec_l0.cu"),
    include_str!("../kernels/bounded_matvec.cu"),
    include_str!("../kernels/dequant_l1.cu"),
    include_str!("../kernels/exec_common.cu"),
    include_str!("../kernels/exec_encode.cu"),
    include_str!("../kernels/exec_derived.cu"),
    include_str!("../kernels/exec_matvec.cu"),
    include_str!("../kernels/exec_matvec_rows.cu"),
    include_str!("../kernels/exec_matvec_lean.cu"),
    include_str!("../kernels/exec_strip_decode.cu"),
    include_str!("../kernels/exec_matvec_strip.cu"),
    include_str!("../kernels/exec_matvec_strip_w1.cu"),
    include_str!("../kernels/exec_tensor.cu"),
    include_str!("../kernels/exec_tensor_panel.cu"),
    include_str!("../kernels/exec_tensor_strip.cu"),
    include_str!("../kernels/exec_dequant.cu"),
);

/// What this build compiles: [`SOURCE`], and `BENCH_SOURCE` with the `bench` feature.
pub fn source() -> String {
    #[cfg(feature = "bench")]
    return format!("{SOURCE}{BENCH_SOURCE}");
    #[cfg(not(feature = "bench"))]
    SOURCE.to_owned()
}

/// Threads per CTA of the gather kernel and the layout 1 exact matvec (`NWC_THREADS`).
pub const THREADS: u32 = 256;
/// Warps per CTA of those kernels (`NWC_WARPS`).
pub const WARPS: u32 = THREADS / 32;

/// The layout 0 exact matvec (`exact_matvec_l0.cu`): CTAs of 16 warps, each warp with two stream
/// staging buffers of `EXACT_STAGE` (2304) bytes in dynamic shared memory.
pub const EXACT_THREADS: u32 = 512;
pub const EXACT_SMEM: u32 = (EXACT_THREADS / 32) * 2 * 2304;
/// Activation columns one layout 0 exact matvec launch takes at most (groups of 4, 2, 1).
pub const EXACT_MAX_COLUMNS: usize = 4;

/// The bounded matvec and the layout 1 dequant (`bounded_matvec.cu`, `dequant_l1.cu`): one CTA
/// of 24 warps per SM, each warp with two stream staging buffers of `BOUNDED_STAGE` (4352) bytes.
pub const BOUNDED_THREADS: u32 = 768;
pub const BOUNDED_SMEM: u32 = (BOUNDED_THREADS / 32) * 2 * 4352;
/// Activation columns one bounded matvec launch takes at most (8 per mma tile).
pub const BOUNDED_MAX_COLUMNS: usize = 16;

/// The layout 0 dequant (`dequant_l0.cu`): one buffer per warp of the block's raw plane (8 x 512
/// BF16 bytes or FP8 nibbles) and its staged stream (`StagedBuf` in the source).
pub const fn staged_warp_smem(fp8: bool) -> u32 {
    if fp8 {
        2048 + 1792
    } else {
        4096 + 1792
    }
}

/// The execution-layout streaming kernels (exec_matvec.cu, exec_dequant.cu): CTAs of 16 warps,
/// one per SM; an item stage is 4 rows x (512 sm + 256 code bytes) + 32 bytes of escape offsets and
/// base word.
pub const EXEC_THREADS: u32 = 512;
pub const EXEC_STAGE: u32 = 4 * 768 + 32;

/// The stream tensor-core kernel's stage (exec_tensor.cu `EXEC_TC_STAGE`): 16 rows x 128 columns
/// of sm bytes and codes, and 64 bytes for the item's patch-list range (two words used).
pub const EXEC_TC_STAGE: u32 = 16 * 128 + 16 * 64 + 16 * 4;
/// Dynamic shared memory limit "the device's opt-in maximum" (`Gpu::smem_optin`): the execution
/// layout kernels size their pipelines and activation copies to it at launch.
pub const SMEM_OPTIN: u32 = u32::MAX;
/// The dynamic shared memory a kernel may take without raising its limit.
pub const DEFAULT_DYNAMIC_SMEM: u32 = 48 * 1024;

/// The dynamic shared memory a launch of a kernel whose registry value is `limit` (the second
/// field of [`PRODUCTION`] and of the `bench` feature's `BENCH`) may take: the default for 0, the
/// device's opt-in maximum `optin` for [`SMEM_OPTIN`], else `limit`.
pub fn smem_allowance(limit: u32, optin: u32) -> u32 {
    match limit {
        0 => DEFAULT_DYNAMIC_SMEM,
        SMEM_OPTIN => optin,
        n => n,
    }
}

/// Every production entry point and the dynamic shared memory limit it is given (0: the default).
pub const PRODUCTION: [(&str, u32); 81] = [
    // Gather (spec 15.3), both layouts (gather.cu).
    ("nwc_gather_bf16_l0", 0),
    ("nwc_gather_fp8_l0", 0),
    ("nwc_gather_bf16_l1", 0),
    ("nwc_gather_fp8_l1", 0),
    // Dequant (spec 15.2): layout 0 (dequant_l0.cu), layout 1 (dequant_l1.cu).
    ("nwc_dequant_bf16_l0", WARPS * staged_warp_smem(false)),
    ("nwc_dequant_fp8_l0", WARPS * staged_warp_smem(false)),
    ("nwc_dequant_bf16_l1", BOUNDED_SMEM),
    ("nwc_dequant_fp8_l1", BOUNDED_SMEM),
    // Exact matvec (spec 15.4), layout 1 (exact_matvec_l1.cu).
    ("nwc_exact_matvec_bf16_l1_xf32", 0),
    ("nwc_exact_matvec_bf16_l1_xbf16", 0),
    ("nwc_exact_matvec_fp8_l1_xf32", 0),
    ("nwc_exact_matvec_fp8_l1_xbf16", 0),
    // Exact matvec, layout 0, 1, 2 or 4 activation columns per launch (exact_matvec_l0.cu).
    ("nwc_exact_matvec_bf16_l0_xf32", EXACT_SMEM),
    ("nwc_exact_matvec_bf16_l0_xbf16", EXACT_SMEM),
    ("nwc_exact_matvec_fp8_l0_xf32", EXACT_SMEM),
    ("nwc_exact_matvec_fp8_l0_xbf16", EXACT_SMEM),
    ("nwc_exact_matvec_c2_bf16_l0_xf32", EXACT_SMEM),
    ("nwc_exact_matvec_c2_bf16_l0_xbf16", EXACT_SMEM),
    ("nwc_exact_matvec_c2_fp8_l0_xf32", EXACT_SMEM),
    ("nwc_exact_matvec_c2_fp8_l0_xbf16", EXACT_SMEM),
    ("nwc_exact_matvec_c4_bf16_l0_xf32", EXACT_SMEM),
    ("nwc_exact_matvec_c4_bf16_l0_xbf16", EXACT_SMEM),
    ("nwc_exact_matvec_c4_fp8_l0_xf32", EXACT_SMEM),
    ("nwc_exact_matvec_c4_fp8_l0_xbf16", EXACT_SMEM),
    // Bounded matvec (spec 19), layout 1, BF16 activations, up to 8 or 16 columns (bounded_matvec.cu).
    ("nwc_bounded_matvec_bf16_l1", BOUNDED_SMEM),
    ("nwc_bounded_matvec_c16_bf16_l1", BOUNDED_SMEM),
    ("nwc_bounded_matvec_fp8_l1", BOUNDED_SMEM),
    ("nwc_bounded_matvec_c16_fp8_l1", BOUNDED_SMEM),
    // Execution layout (spec 20): GPU encode (exec_encode.cu).
    ("exec_enc_stats", 0),
    ("exec_enc_scan_a", 0),
    ("exec_enc_scan_b", 0),
    ("exec_enc_scan_c", 0),
    ("exec_enc_emit", 0),
    // Derived at load (exec_derived.cu): tile flags, the patch list.
    ("exec_tile_flags", 0),
    ("exec_plist_count", 0),
    ("exec_plist_dense", 0),
    ("exec_plist_emit", 0),
    // Exact matvec, 1, 2 or 4 columns per decode, pipeline depth 4/3/2 or x from global (exec_matvec.cu).
    ("exec_matvec_c1_d4", SMEM_OPTIN),
    ("exec_matvec_c1_d3", SMEM_OPTIN),
    ("exec_matvec_c1_d2", SMEM_OPTIN),
    ("exec_matvec_c1_xg", SMEM_OPTIN),
    ("exec_matvec_c2_d2", SMEM_OPTIN),
    ("exec_matvec_c4_d2", SMEM_OPTIN),
    // One column, fewer instructions per item (K16 % 32 == 0), depth 4/3/2 (exec_matvec_lean.cu).
    ("exec_matvec_lean_d4", SMEM_OPTIN),
    ("exec_matvec_lean_d3", SMEM_OPTIN),
    ("exec_matvec_lean_d2", SMEM_OPTIN),
    // One column, the default: a warp per tile column of a strip of rows, in CTAs of W warps or
    // of one warp (exec_matvec_strip.cu, exec_matvec_strip_w1.cu); the next kernel released at the
    // start or at the end.
    ("exec_matvec_strip", SMEM_OPTIN),
    ("exec_matvec_strip_w1", 0),
    ("exec_matvec_strip_release_end", SMEM_OPTIN),
    ("exec_matvec_strip_w1_release_end", 0),
    // The same on BF16 activations (nwc.torch's), widened as they load.
    ("exec_matvec_strip_xbf16", SMEM_OPTIN),
    ("exec_matvec_strip_w1_xbf16", 0),
    ("exec_matvec_strip_release_end_xbf16", SMEM_OPTIN),
    ("exec_matvec_strip_w1_release_end_xbf16", 0),
    // The CTA kernel reading its row slices from the argument, for plans with more row strips per
    // CTA than max(1, W / CB) (exec_matvec_strip.cu), both activation types.
    ("exec_matvec_strip_slices", SMEM_OPTIN),
    ("exec_matvec_strip_slices_release_end", SMEM_OPTIN),
    ("exec_matvec_strip_slices_xbf16", SMEM_OPTIN),
    ("exec_matvec_strip_slices_release_end_xbf16", SMEM_OPTIN),
    // W1 with the next tile's group loaded ahead (exec_matvec_strip_w1.cu), both activation types.
    ("exec_matvec_strip_w1_ahead", 0),
    ("exec_matvec_strip_w1_ahead_release_end", 0),
    ("exec_matvec_strip_w1_ahead_xbf16", 0),
    ("exec_matvec_strip_w1_ahead_release_end_xbf16", 0),
    // BF16 activations widened to f32 for the other exact kernels (exec_matvec.cu).
    ("exec_widen_bf16", 0),
    // Exact matvec, version 1 ("rows": short CTAs of 2 rows), one column per launch (exec_matvec_rows.cu).
    ("exec_matvec_rows", SMEM_OPTIN),
    // Bounded matvec on tensor cores: the panel kernel, 64 columns per decode, with 1 or 2 row
    // groups per warp, and the sum of partial sums of split launches (exec_tensor_panel.cu).
    ("exec_tensor_panel_n8", SMEM_OPTIN),
    ("exec_tensor_panel_rg2_n8", SMEM_OPTIN),
    ("exec_tensor_panel_sum", 0),
    // Bounded matvec on tensor cores, up to 32 columns per decode: the strip kernel, 8, 16 or 32
    // columns, and the same whose split launches add their splits in a thread-block cluster
    // (exec_tensor_strip.cu).
    ("exec_tensor_strip_n1", 0),
    ("exec_tensor_strip_n2", 0),
    ("exec_tensor_strip_n4", 0),
    ("exec_tensor_strip_cluster_n1", 0),
    ("exec_tensor_strip_cluster_n2", 0),
    ("exec_tensor_strip_cluster_n4", 0),
    // The same, releasing the next kernel at their CTAs' start (launches that fill the device).
    ("exec_tensor_strip_n1_release_start", 0),
    ("exec_tensor_strip_n2_release_start", 0),
    ("exec_tensor_strip_n4_release_start", 0),
    ("exec_tensor_strip_cluster_n1_release_start", 0),
    ("exec_tensor_strip_cluster_n2_release_start", 0),
    ("exec_tensor_strip_cluster_n4_release_start", 0),
    // Dequant and gather (exec_dequant.cu).
    ("exec_dequant_d4", SMEM_OPTIN),
    ("exec_dequant_rows", 0),
];

/// Every entry point this build loads, with its dynamic shared memory limit.
pub fn all_kernels() -> impl Iterator<Item = (&'static str, u32)> {
    #[cfg(feature = "bench")]
    let bench = BENCH.iter().copied();
    #[cfg(not(feature = "bench"))]
    let bench = std::iter::empty();
    PRODUCTION.iter().copied().chain(bench)
}

/// True when the NVRTC library can be loaded (CI fetches it from PyPI: `cuda/ci-nvrtc.sh`).
pub fn nvrtc_available() -> bool {
    // SAFETY: only probes whether the shared library can be opened; calls nothing in it.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// The NVRTC options: `--fmad=false` so no multiply and add is contracted (every fma in the source
/// is an explicit `__fmaf_rn`), no flush-to-zero, IEEE division and square root.
pub fn options(arch: &'static str) -> CompileOptions {
    let mut include_paths = Vec::new();
    if std::path::Path::new("/usr/local/cuda/include").is_dir() {
        include_paths.push("/usr/local/cuda/include".to_owned());
    }
    CompileOptions {
        ftz: Some(false),
        prec_sqrt: Some(true),
        prec_div: Some(true),
        fmad: Some(false),
        use_fast_math: Some(false),
        arch: Some(arch),
        include_paths,
        options: vec!["--std=c++17".to_owned()],
        ..Default::default()
    }
}

/// Compiles [`source`] to PTX for `arch` (e.g. "sm_90"); no device is needed.
pub fn compile(arch: &'static str) -> Result<Ptx, GpuError> {
    if !nvrtc_available() {
        return Err(GpuError::Compile("libnvrtc not found (run cuda/ci-nvrtc.sh and set LD_LIBRARY_PATH)".into()));
    }
    compile_ptx_with_opts(source(), options(arch)).map_err(|e| GpuError::Compile(format!("{e:?}")))
}

/// The `sm_XY` name of a compute capability (a leaked string for the rare unknown one: at most
/// one per device kind per process).
pub fn arch_name(major: i32, minor: i32) -> &'static str {
    match (major, minor) {
        (8, 0) => "sm_80",
        (8, 6) => "sm_86",
        (8, 9) => "sm_89",
        (9, 0) => "sm_90",
        (10, 0) => "sm_100",
        (12, 0) => "sm_120",
        _ => Box::leak(format!("sm_{major}{minor}").into_boxed_str()),
    }
}
