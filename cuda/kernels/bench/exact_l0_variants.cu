// Bench variants of the exact layout 0 matvec (exact_matvec_l0.cu), batch 1, timed beside it by
// nwc-gpu-bench (docs/gpu.md, session 9). Same results bit for bit.
//   direct:   no stream staging: every lane reads its stream words from global memory (L1), the
//             CTA's shared memory holds only the pair table; 2 CTAs of 16 warps per SM.
//   direct32: the same in one CTA of 32 warps per SM (one table copy per SM instead of two).
#define NWC_EXACT_DIRECT(NAME, FP8, XBF16, THREADS, MIN_CTAS)                                                        \
    extern "C" __global__ void __launch_bounds__(THREADS, MIN_CTAS)                                                 \
        NAME(const u8* data, const u32* bases, const u8* hdr, const u32* pairs, const u8* low, const float* scale, \
             const void* x, const float* bias, void* y, int out_bf16, Geo g, float* partial, u32* count) {     \
        exact_matvec_l0<FP8, XBF16, 1, STAGE_ALL, 0>(data, bases, hdr, pairs, low, scale, x, bias, y, out_bf16, g, partial, count); \
    }
NWC_EXACT_DIRECT(bench_exact_direct_bf16_l0_xf32, false, false, 512, 2)
NWC_EXACT_DIRECT(bench_exact_direct_bf16_l0_xbf16, false, true, 512, 2)
NWC_EXACT_DIRECT(bench_exact_direct_fp8_l0_xf32, true, false, 512, 2)
NWC_EXACT_DIRECT(bench_exact_direct_fp8_l0_xbf16, true, true, 512, 2)
NWC_EXACT_DIRECT(bench_exact_direct32_bf16_l0_xf32, false, false, 1024, 1)
NWC_EXACT_DIRECT(bench_exact_direct32_bf16_l0_xbf16, false, true, 1024, 1)
NWC_EXACT_DIRECT(bench_exact_direct32_fp8_l0_xf32, true, false, 1024, 1)
NWC_EXACT_DIRECT(bench_exact_direct32_fp8_l0_xbf16, true, true, 1024, 1)
