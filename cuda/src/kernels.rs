//! The kernel source and how NVRTC compiles it (spec 15.4 demands exact IEEE f32: no contraction,
//! no flush-to-zero, IEEE division and square root).

use crate::GpuError;
use cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions, Ptx};

/// The kernels, compiled at run time as one translation unit: `kernels/nwc.cu` (version 1 and
/// the shared helpers), `kernels/nwc_v2.cu` (versions 2 and 6), `kernels/fp8_native.cu` (the
/// bench's uncompressed fp8 baseline), `kernels/nwc_v7.cu` (version 7, the layout 0 default) and
/// `kernels/nwc_mma.cu` (version 9: layout 1 on tensor cores, bounded matvec and exact dequant).
pub const SOURCE: &str = concat!(
    include_str!("../kernels/nwc.cu"),
    include_str!("../kernels/nwc_v2.cu"),
    include_str!("../kernels/fp8_native.cu"),
    include_str!("../kernels/nwc_v7.cu"),
    include_str!("../kernels/nwc_mma.cu"),
);

/// The entry points of [`SOURCE`] of version 1 and the fp8 baseline; [`all_kernels`] adds
/// [`V2_KERNELS`], [`V7_KERNELS`] and [`V9_KERNELS`].
pub const KERNELS: [&str; 13] = [
    "nwc_matvec_bf16_l0_xf32",
    "nwc_matvec_bf16_l0_xbf16",
    "nwc_matvec_fp8_l0_xf32",
    "nwc_matvec_fp8_l0_xbf16",
    "nwc_matvec_bf16_l1_xf32",
    "nwc_matvec_bf16_l1_xbf16",
    "nwc_matvec_fp8_l1_xf32",
    "nwc_matvec_fp8_l1_xbf16",
    "nwc_expand_bf16_l0",
    "nwc_expand_fp8_l0",
    "nwc_expand_bf16_l1",
    "nwc_expand_fp8_l1",
    "fp8_native_matvec",
];

/// Version 7 kernels: CTAs of 16 warps (`V7_THREADS`), each warp with two stream staging buffers
/// of `V7_STAGE` bytes in dynamic shared memory.
pub const V7_THREADS: u32 = 512;
pub const V7_SMEM: u32 = (V7_THREADS / 32) * 2 * 2304;
pub const V7_KERNELS: [&str; 14] = [
    "nwc_matvec7_bf16_l0_xf32",
    "nwc_matvec7_bf16_l0_xbf16",
    "nwc_matvec7_fp8_l0_xf32",
    "nwc_matvec7_fp8_l0_xbf16",
    "nwc_dequant7_bf16_l0",
    "nwc_dequant7_fp8_l0",
    "nwc_matvec7x2_bf16_l0_xf32",
    "nwc_matvec7x2_bf16_l0_xbf16",
    "nwc_matvec7x2_fp8_l0_xf32",
    "nwc_matvec7x2_fp8_l0_xbf16",
    "nwc_matvec7x4_bf16_l0_xf32",
    "nwc_matvec7x4_bf16_l0_xbf16",
    "nwc_matvec7x4_fp8_l0_xf32",
    "nwc_matvec7x4_fp8_l0_xbf16",
];

/// Timing probes (`GpuMatrix::probe`, `nwc-gpu-bench --ceiling`): version 7's matvec with its
/// later stages left out, launched like version 7, and a plain read of the stored bytes. Their
/// outputs mean nothing.
pub const PROBE7_KERNELS: [&str; 6] =
    ["nwc_probe7_decode", "nwc_probe7_decode_clz", "nwc_probe7_weights", "nwc_probe7_fma", "nwc_probe7_decode_flat", "nwc_probe7_decode_reg"];
pub const PROBE_READ_KERNEL: &str = "nwc_probe_read";
/// The dequant memory floor (`GpuMatrix::probe_read_write`).
pub const PROBE_READ_WRITE_KERNEL: &str = "nwc_probe_read_write";
/// The conflict-free table probe (`kernels/nwc_mma.cu`): a 32 KB replicated table and two
/// 1792-byte staging buffers per warp (`PROBE_REP_BYTES`, `PROBE_REP_STAGE` in the source).
pub const PROBE_REP_KERNEL: &str = "nwc_probe7_decode_rep";
pub const PROBE_REP_SMEM: u32 = 256 * 32 * 4 + (V7_THREADS / 32) * 2 * 1792;

/// Version 9 kernels (layout 1, `kernels/nwc_mma.cu`): one CTA of 24 warps per SM, each warp with
/// two stream staging buffers of `V9_STAGE` (4352) bytes. `nwc_matvec9*` is the bounded matvec of spec 19
/// (tensor cores; `x16`: up to 16 activation columns per launch, else 8); `nwc_dequant9*` is exact.
pub const V9_THREADS: u32 = 768;
pub const V9_SMEM: u32 = (V9_THREADS / 32) * 2 * 4352;
pub const V9_KERNELS: [&str; 6] = [
    "nwc_matvec9_bf16_l1",
    "nwc_matvec9x16_bf16_l1",
    "nwc_matvec9_fp8_l1",
    "nwc_matvec9x16_fp8_l1",
    "nwc_dequant9_bf16_l1",
    "nwc_dequant9_fp8_l1",
];
/// Activation columns one version 9 matvec launch takes at most.
pub const V9_MAX_COLUMNS: usize = 16;

/// Every entry point of [`SOURCE`] the crate launches.
pub fn all_kernels() -> impl Iterator<Item = &'static str> {
    KERNELS.into_iter().chain(V2_KERNELS).chain(V7_KERNELS).chain(V9_KERNELS).chain(PROBE7_KERNELS).chain([PROBE_READ_KERNEL, PROBE_READ_WRITE_KERNEL, PROBE_REP_KERNEL])
}

/// Columns per launch of the batched version 7 matvec (`nwc_matvec7x{2,4}_*`): a batch is split
/// into groups of 4, then 2, then 1.
pub const V7_MAX_COLUMNS: usize = 4;

/// Version 2 kernels take dynamic shared memory: two buffers per warp of the block's raw plane
/// (8 x 512 BF16 bytes or FP8 nibbles) and its staged stream (`V2Buf` and `V2_STAGE` in the
/// source). The bytes one warp needs:
pub const fn v2_warp_smem(fp8: bool) -> u32 {
    2 * (if fp8 { 2048 } else { 4096 } + 1792)
}

/// The version 2 kernels (they need the dynamic shared memory limit raised).
pub const V2_KERNELS: [&str; 12] = [
    "nwc_matvec6_bf16_l0_xf32",
    "nwc_matvec6_bf16_l0_xbf16",
    "nwc_matvec6_fp8_l0_xf32",
    "nwc_matvec6_fp8_l0_xbf16",
    "nwc_dequant6_bf16_l0",
    "nwc_dequant6_fp8_l0",
    "nwc_matvec2_bf16_l0_xf32",
    "nwc_matvec2_bf16_l0_xbf16",
    "nwc_matvec2_fp8_l0_xf32",
    "nwc_matvec2_fp8_l0_xbf16",
    "nwc_dequant2_bf16_l0",
    "nwc_dequant2_fp8_l0",
];

/// Threads per CTA of every kernel (`NWC_THREADS` in the source).
pub const THREADS: u32 = 256;
/// Warps per CTA (`NWC_WARPS`).
pub const WARPS: u32 = THREADS / 32;

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

/// Compiles [`SOURCE`] to PTX for `arch` (e.g. "sm_90"); no device is needed.
pub fn compile(arch: &'static str) -> Result<Ptx, GpuError> {
    if !nvrtc_available() {
        return Err(GpuError::Compile("libnvrtc not found (run cuda/ci-nvrtc.sh and set LD_LIBRARY_PATH)".into()));
    }
    compile_ptx_with_opts(SOURCE, options(arch)).map_err(|e| GpuError::Compile(format!("{e:?}")))
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
