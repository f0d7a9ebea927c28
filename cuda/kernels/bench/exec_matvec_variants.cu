// Bench-only ceiling probes of the one-column exact matvec (docs/gpu-history.md, session 12; session 7 in
// docs/gpu-history.md): not exact, never compared, timed by `nwc-gpu-bench --exec-variants`.
// - bench_exec_probe_nodecode_d4 / _loads_d4: the lean kernel (exec_matvec_lean.cu) with the
//   stage words used as weights (no decode) / with neither decode nor fma, so the rest (copies, x,
//   stage reads, tree, loop) is timed alone; bench_exec_probe_strip_nodecode: the production strip
//   kernel (exec_matvec_strip.cu) with the loaded words as weights;
// - bench_exec_probe_stream*: the copy pipeline alone, for three item shapes.

EXEC_LEAN(bench_exec_probe_nodecode_d4, 4, 1)
EXEC_LEAN(bench_exec_probe_loads_d4, 4, 2)
// The strip kernel (exec_matvec_strip.cu) with the loaded words as weights: no decode, no escapes
// (the CTA kernel's instance that reads S, so that it covers any plan's rows).
EXEC_STRIP(bench_exec_probe_strip_nodecode, 1, 0, 1)
EXEC_STRIP_W1(bench_exec_probe_strip_w1_nodecode, 1, 0)

// Streaming probes (not a matvec; never compared): how fast the lean kernel's copy pipeline reads
// the sm and code planes when an item (4 pieces of one tile-row each: 512 sm bytes and 256 code
// bytes) is RR rows x TT consecutive tiles. Same persistent grid, 16 warps and 4 stages of cp.async
// as lean, no x, no decode: each warp XORs its stage words and writes one word per warp to y.
template <int RR, int TT>
__device__ __forceinline__ void exec_probe_stream_body(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes,
                                                       exec_u32 M, exec_u32 K, void* __restrict__ y) {
    constexpr exec_u32 D = 4, STAGE = 3072;
    extern __shared__ __align__(16) exec_u8 exec_stage[];
    const exec_u32 K16 = (K + 15u) & ~15u, CB = (K + 511u) >> 9;
    const exec_u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const exec_u32 gw = blockIdx.x * nwarps + warp, GW = gridDim.x * nwarps;
    const exec_u32 nrg = (M + RR - 1) / RR, ntg = (CB + TT - 1) / TT;
    const exec_u32 nitems = gw < nrg ? ((nrg - gw + GW - 1) / GW) * ntg : 0u;
    const exec_u32 st = exec_sa(exec_stage) + warp * (D * STAGE);
    const exec_u8* stg = exec_stage + warp * (D * STAGE);
    exec_u32 irg = gw, itg = 0, issued = 0;
    auto issue = [&]() {
        if (issued < nitems) {
            const exec_u32 sd = st + (issued % D) * STAGE;
#pragma unroll
            for (int p = 0; p < 4; ++p) {
                const exec_u32 row = irg * RR + p / TT, tile = itg * TT + p % TT;
                if (row < M && tile < CB) {
                    if (tile * 512u + lane * 16u < K16) exec_cp16(sd + p * 512u + lane * 16u, sm + (exec_u64)row * K16 + tile * 512u + lane * 16u);
                    if (tile * 512u + lane * 16u < K16)
                        exec_cp8(sd + 2048u + p * 256u + lane * 8u, codes + (exec_u64)row * (K16 >> 1) + tile * 256u + lane * 8u);
                }
            }
            if (++itg == ntg) {
                itg = 0;
                irg += GW;
            }
        }
        ++issued;
        exec_cp_commit();
    };
#pragma unroll
    for (int d = 0; d < (int)D - 1; ++d) issue();
    exec_u32 acc = 0;
    for (exec_u32 j = 0; j < nitems; ++j) {
        issue();
        exec_cp_wait<D - 1>();
        const exec_u8* sd = stg + (j % D) * STAGE;
#pragma unroll
        for (int p = 0; p < 4; ++p) {
            const uint4 s = *reinterpret_cast<const uint4*>(sd + p * 512u + lane * 16u);
            const uint2 c = *reinterpret_cast<const uint2*>(sd + 2048u + p * 256u + lane * 8u);
            acc ^= s.x ^ s.y ^ s.z ^ s.w ^ c.x ^ c.y;
        }
    }
    exec_cp_wait<0>();
    acc = __reduce_xor_sync(EXEC_FULL, acc);
    if (lane == 0u && gw < M) reinterpret_cast<exec_u16*>(y)[gw] = (exec_u16)acc;
}

// Same argument list as EXEC_FLAGS (most unused).
#define EXEC_PROBE_STREAM(NAME, RR, TT)                                                                      \
    extern "C" __global__ void __launch_bounds__(512, 1)                                                     \
        NAME(EXEC_MATVEC_PARAMS(float), exec_u32 G, const exec_u8* __restrict__ flags) {                 \
        exec_probe_stream_body<RR, TT>(sm, codes, M, K, y);                                                  \
    }

EXEC_PROBE_STREAM(bench_exec_probe_stream4x1_d4, 4, 1)
EXEC_PROBE_STREAM(bench_exec_probe_stream2x2_d4, 2, 2)
EXEC_PROBE_STREAM(bench_exec_probe_stream1x4_d4, 1, 4)
