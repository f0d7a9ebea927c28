//! The bench-only kernels (`kernels/bench/*.cu`, the `bench` feature): their sources, entry
//! points and shared memory limits, beside production's registry in the parent module. Each is
//! timed beside production by `nwc-gpu-bench` (docs/gpu.md, "Bench-only kernels and variants");
//! production builds never compile them.
//!
//! Adding a bench kernel: put it in `kernels/bench/`, add its file to [`BENCH_SOURCE`] and its entry
//! points to [`BENCH`].

use super::{staged_warp_smem, EXACT_SMEM, EXACT_THREADS, SMEM_OPTIN, WARPS};

/// The bench-only kernels, compiled after [`SOURCE`](super::SOURCE).
pub const BENCH_SOURCE: &str = concat!(
    include_str!("../../kernels/bench/versions.cu"),
    include_str!("../../kernels/bench/probes.cu"),
    include_str!("../../kernels/bench/fp8_native.cu"),
    include_str!("../../kernels/bench/exec_tensor_step.cu"),
    include_str!("../../kernels/bench/exec_matvec_variants.cu"),
    include_str!("../../kernels/bench/exec_tensor_stream.cu"),
    include_str!("../../kernels/bench/exec_tensor_tile.cu"),
    include_str!("../../kernels/bench/exec_tensor_variants.cu"),
    include_str!("../../kernels/bench/exec_matvec_strip_cols.cu"),
);

/// Bench: the warpgroup-MMA ceiling probe (kernels/bench/exec_wgmma_probe.cu), which needs
/// sm_90a and so is compiled on its own, by `nwc-gpu-bench --exec-wgmma-probe`, never with
/// [`source`](super::source).
pub const WGMMA_PROBE_SOURCE: &str = include_str!("../../kernels/bench/exec_wgmma_probe.cu");

/// Bench: the entry points of [`WGMMA_PROBE_SOURCE`].
pub const WGMMA_PROBE_KERNELS: [&str; 13] = [
    "bench_exec_wgmma_probe_n2_wg2_p0",
    "bench_exec_wgmma_probe_n4_wg2_p0",
    "bench_exec_wgmma_probe_n8_wg2_p0",
    "bench_exec_wgmma_probe_n2_wg4_p0",
    "bench_exec_wgmma_probe_n4_wg4_p0",
    "bench_exec_wgmma_probe_n8_wg4_p0",
    "bench_exec_wgmma_probe_n2_wg2_p1",
    "bench_exec_wgmma_probe_n4_wg2_p1",
    "bench_exec_wgmma_probe_n8_wg2_p1",
    "bench_exec_wgmma_probe_n2_wg4_p1",
    "bench_exec_wgmma_probe_n4_wg4_p1",
    "bench_exec_wgmma_probe_n8_wg4_p1",
    "bench_exec_wgmma_probe_sum",
];

/// Bench: the bounded batched matvec with warpgroup MMA (kernels/bench/exec_wgmma.cu), compiled
/// after [`SOURCE`](super::SOURCE) for sm_90a in a module of its own (`Gpu` loads it on first use).
pub const WGMMA_SOURCE: &str = include_str!("../../kernels/bench/exec_wgmma.cu");

/// Bench: the entry points of [`WGMMA_SOURCE`].
pub const WGMMA_KERNELS: [&str; 6] = [
    "bench_exec_wgmma_n2_wg2",
    "bench_exec_wgmma_n4_wg2",
    "bench_exec_wgmma_n8_wg2",
    "bench_exec_wgmma_n2_wg4",
    "bench_exec_wgmma_n4_wg4",
    "bench_exec_wgmma_n8_wg4",
];

/// Bench: the tile tensor-core kernel's stage, a 16-row tile (bench/exec_tensor_tile.cu).
pub const EXEC_TENSOR_STAGE: u32 = 16 * 768 + 64;

/// The conflict-free table probe (`bench/probes.cu`): a 32 KB replicated table and two
/// 1792-byte staging buffers per warp.
pub const PROBE_REP_SMEM: u32 = 256 * 32 * 4 + (EXACT_THREADS / 32) * 2 * 1792;

/// The bench-only entry points (`kernels/bench/`) and their dynamic shared memory limits.
pub const BENCH: [(&str, u32); 49] = [
    // The rows kernel without the escape offsets in its load batch (exec_matvec_rows.cu's template).
    ("exec_matvec_rows_noprefetch", SMEM_OPTIN),
    // Version 1 on layout 0 (exact_matvec_l1.cu's template).
    ("bench_matvec_v1_bf16_l0_xf32", 0),
    ("bench_matvec_v1_bf16_l0_xbf16", 0),
    ("bench_matvec_v1_fp8_l0_xf32", 0),
    ("bench_matvec_v1_fp8_l0_xbf16", 0),
    // Version 6's matvec (dequant_l0.cu's staging).
    ("bench_matvec_v6_bf16_l0_xf32", WARPS * staged_warp_smem(false)),
    ("bench_matvec_v6_bf16_l0_xbf16", WARPS * staged_warp_smem(false)),
    ("bench_matvec_v6_fp8_l0_xf32", WARPS * staged_warp_smem(false)),
    ("bench_matvec_v6_fp8_l0_xbf16", WARPS * staged_warp_smem(false)),
    // Version 7's dequant (pair_decode.cu).
    ("bench_dequant_v7_bf16_l0", EXACT_SMEM),
    ("bench_dequant_v7_fp8_l0", EXACT_SMEM),
    // Timing probes.
    ("bench_probe_decode", EXACT_SMEM),
    ("bench_probe_decode_clz", EXACT_SMEM),
    ("bench_probe_weights", EXACT_SMEM),
    ("bench_probe_fma", EXACT_SMEM),
    ("bench_probe_decode_flat", EXACT_SMEM),
    ("bench_probe_decode_reg", EXACT_SMEM),
    ("bench_probe_decode_rep", PROBE_REP_SMEM),
    ("bench_probe_read", 0),
    ("bench_probe_read_write", 0),
    // The uncompressed fp8 baseline.
    ("bench_fp8_native_matvec", 0),
    // The execution layout's step kernel at 32 and 16 columns per decode (exec_tensor_step.cu).
    ("bench_exec_tensor_step_n4", SMEM_OPTIN),
    ("bench_exec_tensor_step_n2", SMEM_OPTIN),
    // Ceiling probes of the lean one-column matvec: no decode, loads only (not exact).
    ("bench_exec_probe_nodecode_d4", SMEM_OPTIN),
    ("bench_exec_probe_loads_d4", SMEM_OPTIN),
    // The strip kernel's ceiling probe: no decode (exec_matvec_variants.cu).
    ("bench_exec_probe_strip_nodecode", SMEM_OPTIN),
    ("bench_exec_probe_strip_w1_nodecode", 0),
    // Streaming probes: the copy pipeline alone, items of 4 x 1, 2 x 2 and 1 x 4 tile-rows.
    ("bench_exec_probe_stream4x1_d4", SMEM_OPTIN),
    ("bench_exec_probe_stream2x2_d4", SMEM_OPTIN),
    ("bench_exec_probe_stream1x4_d4", SMEM_OPTIN),
    // The bounded stream kernel, 8 or 16 columns per decode (the choice until session 13), and its
    // ceiling probes: no decode, no mma (exec_tensor_stream.cu).
    ("bench_exec_tensor_stream_n1", SMEM_OPTIN),
    ("bench_exec_tensor_stream_n2", SMEM_OPTIN),
    ("bench_exec_tensor_probe_raw_n1", SMEM_OPTIN),
    ("bench_exec_tensor_probe_nomma_n1", SMEM_OPTIN),
    // The tile kernel of the bounded matvec, the 33..64-column kernel until session 11
    // (exec_tensor_tile.cu).
    ("bench_exec_tensor_tile_n1", SMEM_OPTIN),
    ("bench_exec_tensor_tile_n2", SMEM_OPTIN),
    ("bench_exec_tensor_tile_n4", SMEM_OPTIN),
    ("bench_exec_tensor_tile_n8", SMEM_OPTIN),
    // The strip kernel at 16 columns with activations loaded per chunk, and its no-decode probe
    // (exec_tensor_variants.cu).
    ("bench_exec_tensor_strip_n2_xchunk", 0),
    ("bench_exec_tensor_strip_probe_raw_n1", 0),
    ("bench_exec_tensor_strip_probe_raw_n2", 0),
    // The CTA strip kernel on two and on four columns per decode (exec_matvec_strip_cols.cu).
    ("bench_exec_matvec_strip_c2", SMEM_OPTIN),
    ("bench_exec_matvec_strip_c2_release_end", SMEM_OPTIN),
    ("bench_exec_matvec_strip_c2_xbf16", SMEM_OPTIN),
    ("bench_exec_matvec_strip_c2_release_end_xbf16", SMEM_OPTIN),
    ("bench_exec_matvec_strip_c4", SMEM_OPTIN),
    ("bench_exec_matvec_strip_c4_release_end", SMEM_OPTIN),
    ("bench_exec_matvec_strip_c4_xbf16", SMEM_OPTIN),
    ("bench_exec_matvec_strip_c4_release_end_xbf16", SMEM_OPTIN),
];
