// Execution layout: the exact "rows" matvec (spec 20.15, bit-identical to the streaming kernel of
// exec_matvec.cu and to the reference): short-lived CTAs of 2 rows, one column per launch. The
// default exact kernel for matrices too small to fill the streaming pipeline (cuda/src/exec/plan.rs).

// ---- the "rows" kernel (version 1): a CTA owns 2 rows, its warps take the tiles cb = warp,
// warp + W, ... two at a time (loads of both before the first decode), partials through shared
// memory, then one thread per row adds them in ascending cb. Short-lived CTAs: each warp issues
// one batch of loads. Kept as a production choice (ExecMatvecKernel::Rows); same results.
// ES: the tiles' escape offsets (esc_start) are loaded in the same batch, so a tile with escapes
// waits for one dependent load (its escape bytes) instead of two. ----
template <int NB, int RW, int U, bool ES>
__device__ __forceinline__ void exec_matvec_body(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes,
                                                 const exec_u8* __restrict__ base,
                                                 const exec_u32* __restrict__ esc_start,
                                                 const exec_u8* __restrict__ esc, exec_u32 M, exec_u32 K,
                                                 const float* __restrict__ x, exec_u64 ldx, exec_u32 ncols,
                                                 const float* __restrict__ bias, void* __restrict__ y,
                                                 exec_u64 ldy, int out_bf16) {
    constexpr int RN = RW * NB;
    extern __shared__ float exec_ps[];
    const exec_u32 K16 = (K + 15u) & ~15u;
    const exec_u32 CB = (K + 511u) >> 9;
    const exec_u32 lane = threadIdx.x & 31u;
    const exec_u32 warp = threadIdx.x >> 5;
    const exec_u32 nwarps = blockDim.x >> 5;
    const exec_u64 m0 = (exec_u64)blockIdx.x * RW;

    exec_u32 rbase[RW];
#pragma unroll
    for (int r = 0; r < RW; ++r) rbase[r] = (m0 + r < M) ? (exec_u32)base[m0 + r] : 1u;

    for (exec_u32 cb0 = warp; cb0 < CB; cb0 += nwarps * U) {
        uint4 s[U][RW];
        uint2 c[U][RW];
        exec_u32 e0[U][RW];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const exec_u32 cb = cb0 + (exec_u32)u * nwarps;
            const exec_u32 k0 = cb * 512u + lane * 16u;
#pragma unroll
            for (int r = 0; r < RW; ++r) {
                e0[u][r] = (ES && cb < CB && m0 + r < M) ? __ldg(esc_start + (m0 + r) * CB + cb) : 0u;
                if (cb < CB && k0 < K16 && m0 + r < M) {
                    const exec_u64 row = m0 + r;
                    s[u][r] = __ldg(reinterpret_cast<const uint4*>(sm + row * K16 + k0));
                    c[u][r] = exec_mask_pad(__ldg(reinterpret_cast<const uint2*>(codes + row * (K16 >> 1) + (k0 >> 1))), k0, K);
                } else {
                    s[u][r] = make_uint4(0u, 0u, 0u, 0u);
                    c[u][r] = make_uint2(0x11111111u, 0x11111111u);  // plain codes, weight +2^(base-127)
                }
            }
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const exec_u32 cb = cb0 + (exec_u32)u * nwarps;
            if (cb >= CB) break;  // warp-uniform
            const exec_u32 k0 = cb * 512u + lane * 16u;
            const bool active = k0 < K16;
            exec_u32 w[RW][8];
#pragma unroll
            for (int r = 0; r < RW; ++r) {
                if (ES)
                    exec_decode_lane_s(c[u][r], s[u][r], rbase[r], lane, e0[u][r], esc, w[r]);
                else
                    exec_decode_lane(c[u][r], s[u][r], rbase[r], lane, esc_start, (m0 + r) * CB + cb, esc, w[r]);
            }
            float acc[RN];
#pragma unroll
            for (int n = 0; n < NB; ++n) {
                float xv[16];
                if (active && (exec_u32)n < ncols) {
                    const float4* xp = reinterpret_cast<const float4*>(x + (exec_u64)n * ldx + k0);
#pragma unroll
                    for (int q = 0; q < 4; ++q) {
                        const float4 v = __ldg(xp + q);
                        xv[4 * q] = v.x;
                        xv[4 * q + 1] = v.y;
                        xv[4 * q + 2] = v.z;
                        xv[4 * q + 3] = v.w;
                    }
                } else {
#pragma unroll
                    for (int j = 0; j < 16; ++j) xv[j] = 0.0f;
                }
#pragma unroll
                for (int r = 0; r < RW; ++r) {
                    float a = 0.0f;
#pragma unroll
                    for (int p = 0; p < 8; ++p) {
                        a = __fmaf_rn(exec_lo(w[r][p]), xv[2 * p], a);
                        a = __fmaf_rn(exec_hi(w[r][p]), xv[2 * p + 1], a);
                    }
                    acc[r * NB + n] = a;
                }
            }
            const float v = exec_tree<RN>(acc, lane);
            if (exec_tree_writer<RN>(lane)) exec_ps[exec_tree_index<RN>(lane) * CB + cb] = v;
        }
    }
    __syncthreads();
    for (exec_u32 i = threadIdx.x; i < (exec_u32)RN; i += blockDim.x) {
        const exec_u32 r = i / NB, n = i % NB;
        const exec_u64 m = m0 + r;
        if (m >= M || n >= ncols) continue;
        float acc = 0.0f;
        for (exec_u32 cb = 0; cb < CB; ++cb) acc = __fadd_rn(acc, exec_ps[i * CB + cb]);
        exec_output(acc, m, n, ldy, bias, y, out_bf16);
    }
}

#define EXEC_MATVEC(NAME, NB, RW, U, ES, THREADS, MINB)                                                          \
    extern "C" __global__ void __launch_bounds__(THREADS, MINB)                                             \
        NAME(EXEC_MATVEC_PARAMS(float)) {                                                                \
        exec_matvec_body<NB, RW, U, ES>(sm, codes, base, esc_start, esc, M, K, x, ldx, ncols, bias, y, ldy, out_bf16); \
    }

EXEC_MATVEC(exec_matvec_rows, 1, 2, 2, true, 256, 4)
