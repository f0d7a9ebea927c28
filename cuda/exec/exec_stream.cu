// Execution layout, version 2: streaming kernels. Version 1 (exec_matvec.cu, exec_mma.cu,
// exec_dequant.cu) gives each warp one load batch per launch or per step and reached only 1.5-2.5
// TB/s of exec bytes (cuda/exec/NOTES.md, call 1): the bytes in flight per SM were too few.
// Here every warp runs a persistent loop over its items with a D-stage cp.async pipeline in shared
// memory: item j + D - 1 is requested before item j is decoded, so D - 1 items per warp are always in
// flight, with no registers held for them. Each lane copies exactly the bytes it later reads (its
// 16 sm bytes, its 8 code bytes), so cp.async.wait_group alone orders them; no warp barrier.
// A tile's escape offset esc_start[t] travels with the tile (lane 0 copies it) and is broadcast by
// shuffle when the tile takes the general path.

__device__ __forceinline__ exec_u32 exec_sa(const void* p) { return (exec_u32)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void exec_cp16(exec_u32 dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void exec_cp8(exec_u32 dst, const void* src) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void exec_cp4(exec_u32 dst, const void* src) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void exec_cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void exec_cp_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Decode with the escape offset of the tile already known to lane 0 (esc0, valid in lane 0 only).
__device__ __forceinline__ void exec_decode_lane_s(uint2 c, uint4 s, exec_u32 base, exec_u32 lane, exec_u32 esc0,
                                                   const exec_u8* __restrict__ esc, exec_u32 (&w)[8]) {
    if (__all_sync(EXEC_FULL, exec_plain16(c))) {
        exec_pairs16_fast(c, s, exec_b2(base), w);
    } else {
        const exec_u32 n = exec_count15(c.x) + exec_count15(c.y);
        const exec_u32 before = exec_warp_excl(n, lane);
        const exec_u32 t0 = __shfl_sync(EXEC_FULL, esc0, 0);
        exec_pairs16_general(c, s, base, esc, (exec_u64)t0 + before, w);
    }
}

// The base array must be readable in whole aligned 4-byte words (allocate M rounded up to 4).

// ---- batch 1..NB exact, streaming. Rows are owned by groups of G warps of one CTA (G = 1, 2, 4 or
// 8, chosen by the host to balance rows over the resident warps): warp q of a group takes the
// contiguous tiles [q CB / G, (q + 1) CB / G) of each of the group's rows. G = 1: the row sum
// S += P(cb) runs in registers in ascending cb (spec 15.4.5). G > 1: the tile partials go to a
// double-buffered shared array, the group meets at a named barrier, and lanes of the group's first
// warp add them in ascending cb from +0.0 while the other warps stream on. ----
// Stage (per warp, per item): R rows x (512 sm bytes + 256 code bytes), R esc_start words, a base word.
#define EXEC_STAGE(R) ((R)*768 + 16)

template <int NB, int R, int D>
__device__ __forceinline__ void exec_mvs_body(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes,
                                              const exec_u8* __restrict__ base, const exec_u32* __restrict__ esc_start,
                                              const exec_u8* __restrict__ esc, exec_u32 M, exec_u32 K,
                                              const float* __restrict__ x, exec_u64 ldx, exec_u32 ncols,
                                              const float* __restrict__ bias, void* __restrict__ y, exec_u64 ldy,
                                              int out_bf16, exec_u32 G) {
    constexpr int RN = R * NB;
    extern __shared__ __align__(16) exec_u8 exec_stage[];
    const exec_u32 K16 = (K + 15u) & ~15u;
    const exec_u32 CB = (K + 511u) >> 9;
    const exec_u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const exec_u32 q = warp % G, grp = warp / G, ngrp = nwarps / G;
    const exec_u64 gi = (exec_u64)blockIdx.x * ngrp + grp, GG = (exec_u64)gridDim.x * ngrp;
    const exec_u64 nrg = ((exec_u64)M + R - 1) / R;
    if (gi >= nrg) return;  // the whole group; its named barrier is never used
    const exec_u32 lo = (exec_u32)((exec_u64)q * CB / G), hi = (exec_u32)((exec_u64)(q + 1) * CB / G);
    const exec_u64 nitems = ((nrg - gi + GG - 1) / GG) * (hi - lo);  // host ensures G <= CB: hi > lo
    exec_u8* st = exec_stage + (exec_u64)warp * D * EXEC_STAGE(R);
    float* pbuf = reinterpret_cast<float*>(exec_stage + (exec_u64)nwarps * D * EXEC_STAGE(R)) + (exec_u64)grp * 2 * RN * CB;

    exec_u64 irg = gi, issued = 0;
    exec_u32 icb = lo;
    auto issue = [&]() {
        if (issued < nitems) {
            exec_u8* sd = st + (issued & (D - 1)) * EXEC_STAGE(R);
            const exec_u32 k0 = icb * 512u + lane * 16u;
#pragma unroll
            for (int r = 0; r < R; ++r) {
                const exec_u64 row = irg * R + r;
                if (row < M && k0 < K16) {
                    exec_cp16(exec_sa(sd + r * 768 + lane * 16), sm + row * K16 + k0);
                    exec_cp8(exec_sa(sd + r * 768 + 512 + lane * 8), codes + row * (K16 >> 1) + (k0 >> 1));
                }
            }
            if (lane < (exec_u32)R && irg * R + lane < M)
                exec_cp4(exec_sa(sd + R * 768 + lane * 4), esc_start + (irg * R + lane) * CB + icb);
            if (lane == 31u && icb == lo)  // the aligned word holding base[irg * R .. + R - 1] (R <= 2)
                exec_cp4(exec_sa(sd + R * 768 + 8), reinterpret_cast<const exec_u32*>(base + ((irg * R) & ~3ull)));
            if (++icb == hi) {
                icb = lo;
                irg += GG;
            }
        }
        ++issued;
        exec_cp_commit();
    };
#pragma unroll
    for (int d = 0; d < D - 1; ++d) issue();

    exec_u64 rg = gi;
    exec_u32 cb = lo, par = 0;
    exec_u32 rbase[R];
    float S = 0.0f;
    for (exec_u64 j = 0; j < nitems; ++j) {
        issue();
        const exec_u32 k0 = cb * 512u + lane * 16u;
        const bool active = k0 < K16;
        float xv[NB][16];
#pragma unroll
        for (int n = 0; n < NB; ++n) {
            if (active && (exec_u32)n < ncols) {
                const float4* xp = reinterpret_cast<const float4*>(x + (exec_u64)n * ldx + k0);
#pragma unroll
                for (int qq = 0; qq < 4; ++qq) {
                    const float4 v = __ldg(xp + qq);
                    xv[n][4 * qq] = v.x;
                    xv[n][4 * qq + 1] = v.y;
                    xv[n][4 * qq + 2] = v.z;
                    xv[n][4 * qq + 3] = v.w;
                }
            } else {
#pragma unroll
                for (int i = 0; i < 16; ++i) xv[n][i] = 0.0f;
            }
        }
        exec_cp_wait<D - 1>();
        const exec_u8* sd = st + (j & (D - 1)) * EXEC_STAGE(R);
        if (cb == lo) {
            const exec_u32 b4 = __shfl_sync(EXEC_FULL, lane == 31u ? *reinterpret_cast<const exec_u32*>(sd + R * 768 + 8) : 0u, 31);
#pragma unroll
            for (int r = 0; r < R; ++r)
                rbase[r] = (rg * R + r < M) ? (b4 >> (8 * (exec_u32)((rg * R + r) & 3ull))) & 0xffu : 1u;
        }
        float acc[RN];
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const exec_u64 row = rg * R + r;
            uint4 s = make_uint4(0u, 0u, 0u, 0u);
            uint2 c = make_uint2(0x11111111u, 0x11111111u);
            if (active && row < M) {
                s = *reinterpret_cast<const uint4*>(sd + r * 768 + lane * 16);
                c = exec_mask_pad(*reinterpret_cast<const uint2*>(sd + r * 768 + 512 + lane * 8), k0, K);
            }
            const exec_u32 e0 = (lane == 0 && row < M) ? *reinterpret_cast<const exec_u32*>(sd + R * 768 + r * 4) : 0u;
            exec_u32 w[8];
            exec_decode_lane_s(c, s, rbase[r], lane, e0, esc, w);
#pragma unroll
            for (int n = 0; n < NB; ++n) {
                float a = 0.0f;
#pragma unroll
                for (int p = 0; p < 8; ++p) {
                    a = __fmaf_rn(exec_lo(w[p]), xv[n][2 * p], a);
                    a = __fmaf_rn(exec_hi(w[p]), xv[n][2 * p + 1], a);
                }
                acc[r * NB + n] = a;
            }
        }
        const float P = exec_tree<RN>(acc, lane);
        const exec_u32 idx = exec_tree_index<RN>(lane);
        if (G == 1) {
            S = __fadd_rn(S, P);
        } else if (exec_tree_writer<RN>(lane)) {
            pbuf[((exec_u64)par * RN + idx) * CB + cb] = P;
        }
        if (++cb == hi) {
            if (G == 1) {
                const exec_u64 m = rg * R + idx / NB;
                const exec_u32 n = idx % NB;
                if (exec_tree_writer<RN>(lane) && m < M && n < ncols) {
                    float t = S;
                    if (bias) t = __fadd_rn(t, bias[m]);
                    if (out_bf16)
                        reinterpret_cast<exec_u16*>(y)[n * ldy + m] = exec_bf16_rne(t);
                    else
                        reinterpret_cast<float*>(y)[n * ldy + m] = t;
                }
                S = 0.0f;
            } else {
                asm volatile("bar.sync %0, %1;" ::"r"(1u + grp), "r"(32u * G) : "memory");
                if (q == 0 && lane < (exec_u32)RN) {
                    const exec_u64 m = rg * R + lane / NB;
                    const exec_u32 n = lane % NB;
                    if (m < M && n < ncols) {
                        float t = 0.0f;
                        const float* pp = pbuf + ((exec_u64)par * RN + lane) * CB;
                        for (exec_u32 c2 = 0; c2 < CB; ++c2) t = __fadd_rn(t, pp[c2]);
                        if (bias) t = __fadd_rn(t, bias[m]);
                        if (out_bf16)
                            reinterpret_cast<exec_u16*>(y)[n * ldy + m] = exec_bf16_rne(t);
                        else
                            reinterpret_cast<float*>(y)[n * ldy + m] = t;
                    }
                }
                par ^= 1u;
            }
            cb = lo;
            rg += GG;
        }
    }
    exec_cp_wait<0>();
}

#define EXEC_MVS(NAME, NB, R, D, THREADS, MINB)                                                              \
    extern "C" __global__ void __launch_bounds__(THREADS, MINB)                                             \
        NAME(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes, const exec_u8* __restrict__ base, \
             const exec_u32* __restrict__ esc_start, const exec_u8* __restrict__ esc, exec_u32 M, exec_u32 K,    \
             const float* __restrict__ x, exec_u64 ldx, exec_u32 ncols, const float* __restrict__ bias,          \
             void* __restrict__ y, exec_u64 ldy, int out_bf16, exec_u32 G) {                                     \
        exec_mvs_body<NB, R, D>(sm, codes, base, esc_start, esc, M, K, x, ldx, ncols, bias, y, ldy, out_bf16, G); \
    }

EXEC_MVS(exec_mvs1_r1d4, 1, 1, 4, 256, 4)
EXEC_MVS(exec_mvs1_r1d8, 1, 1, 8, 256, 4)
EXEC_MVS(exec_mvs1_r2d4, 1, 2, 4, 256, 4)
EXEC_MVS(exec_mvs1_r2d8, 1, 2, 8, 256, 3)
EXEC_MVS(exec_mvs1_r2d2, 1, 2, 2, 256, 4)
EXEC_MVS(exec_mvs1_r1d4m1, 1, 1, 4, 256, 1)
EXEC_MVS(exec_mvs2_r1d4, 2, 1, 4, 256, 3)
EXEC_MVS(exec_mvs4_r1d4, 4, 1, 4, 256, 2)

// ---- dequant / gather, streaming: warp gw takes items it = gw, gw + GW, ... (row-major tiles) ----
template <int D>
__device__ __forceinline__ void exec_dqs_body(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes,
                                              const exec_u8* __restrict__ base, const exec_u32* __restrict__ esc_start,
                                              const exec_u8* __restrict__ esc, exec_u32 K,
                                              const exec_u32* __restrict__ rows, exec_u32 nrows,
                                              exec_u16* __restrict__ out, exec_u64 ldo) {
    extern __shared__ __align__(16) exec_u8 exec_stage[];
    const exec_u32 K16 = (K + 15u) & ~15u;
    const exec_u32 CB = (K + 511u) >> 9;
    const exec_u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const exec_u64 gw = (exec_u64)blockIdx.x * nwarps + warp, GW = (exec_u64)gridDim.x * nwarps;
    const exec_u64 items = (exec_u64)nrows * CB;
    if (gw >= items) return;
    const exec_u64 nitems = (items - gw + GW - 1) / GW;
    exec_u8* st = exec_stage + (exec_u64)warp * D * EXEC_STAGE(1);
    exec_u64 issued = 0;
    auto issue = [&]() {
        if (issued < nitems) {
            const exec_u64 it = gw + issued * GW;
            const exec_u64 i = it / CB;
            const exec_u32 cb = (exec_u32)(it - i * CB);
            const exec_u64 row = rows ? (exec_u64)rows[i] : i;
            exec_u8* sd = st + (issued & (D - 1)) * EXEC_STAGE(1);
            const exec_u32 k0 = cb * 512u + lane * 16u;
            if (k0 < K16) {
                exec_cp16(exec_sa(sd + lane * 16), sm + row * K16 + k0);
                exec_cp8(exec_sa(sd + 512 + lane * 8), codes + row * (K16 >> 1) + (k0 >> 1));
            }
            if (lane == 0) {
                exec_cp4(exec_sa(sd + 768), esc_start + row * CB + cb);
                exec_cp4(exec_sa(sd + 772), reinterpret_cast<const exec_u32*>(base + (row & ~3ull)));
            }
        }
        ++issued;
        exec_cp_commit();
    };
#pragma unroll
    for (int d = 0; d < D - 1; ++d) issue();
    for (exec_u64 j = 0; j < nitems; ++j) {
        issue();
        const exec_u64 it = gw + j * GW;
        const exec_u64 i = it / CB;
        const exec_u32 cb = (exec_u32)(it - i * CB);
        const exec_u64 row = rows ? (exec_u64)rows[i] : i;
        const exec_u32 k0 = cb * 512u + lane * 16u;
        exec_cp_wait<D - 1>();
        const exec_u8* sd = st + (j & (D - 1)) * EXEC_STAGE(1);
        uint4 s = make_uint4(0u, 0u, 0u, 0u);
        uint2 c = make_uint2(0x11111111u, 0x11111111u);
        if (k0 < K16) {
            s = *reinterpret_cast<const uint4*>(sd + lane * 16);
            c = *reinterpret_cast<const uint2*>(sd + 512 + lane * 8);
        }
        exec_u32 e0 = 0u, b4 = 0u;
        if (lane == 0) {
            e0 = *reinterpret_cast<const exec_u32*>(sd + 768);
            b4 = *reinterpret_cast<const exec_u32*>(sd + 772);
        }
        b4 = __shfl_sync(EXEC_FULL, b4, 0);
        const exec_u32 b = (b4 >> (8 * (exec_u32)(row & 3ull))) & 0xffu;
        exec_u32 w[8];
        exec_decode_lane_s(c, s, b, lane, e0, esc, w);
        if (k0 < K16) {
            uint4* o = reinterpret_cast<uint4*>(out + i * ldo + k0);
            __stcs(o, make_uint4(w[0], w[1], w[2], w[3]));
            __stcs(o + 1, make_uint4(w[4], w[5], w[6], w[7]));
        }
    }
    exec_cp_wait<0>();
}

#define EXEC_DQS(NAME, D, MINB)                                                                            \
    extern "C" __global__ void __launch_bounds__(256, MINB)                                               \
        NAME(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes, const exec_u8* __restrict__ base, \
             const exec_u32* __restrict__ esc_start, const exec_u8* __restrict__ esc, exec_u32 K,            \
             const exec_u32* __restrict__ rows, exec_u32 nrows, exec_u16* __restrict__ out, exec_u64 ldo) {  \
        exec_dqs_body<D>(sm, codes, base, esc_start, esc, K, rows, nrows, out, ldo);                        \
    }

EXEC_DQS(exec_dqs_d4, 4, 4)
EXEC_DQS(exec_dqs_d8, 8, 4)

// ---- batched, bounded (spec 19), streaming: the tensor-core kernel of exec_mma.cu with the same
// k permutation and escape bookkeeping, fed by a D-stage cp.async pipeline. A CTA of W warps is
// persistent over row groups of RG * 16 rows; its warps split the tiles of a row group and add
// their partial sums in warp order through shared memory after each row group. ----
template <int RG>
struct ExecMmaStage {
    static constexpr int SM = 0, CODES = RG * 2 * 512, ESC = RG * 2 * 768, SIZE = RG * 2 * 768 + RG * 2 * 32;
};

template <int RG, int NT, int D>
__device__ __forceinline__ void exec_mmas_body(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes,
                                               const exec_u8* __restrict__ base, const exec_u32* __restrict__ esc_start,
                                               const exec_u8* __restrict__ esc, exec_u32 M, exec_u32 K,
                                               const exec_u16* __restrict__ x, exec_u64 ldx, exec_u32 ncols,
                                               const float* __restrict__ bias, void* __restrict__ y, exec_u64 ldy,
                                               int out_bf16) {
    typedef ExecMmaStage<RG> L;
    constexpr int ROWS = RG * 16, COLS = NT * 8;
    extern __shared__ __align__(16) exec_u8 exec_stage[];
    const exec_u32 K16 = (K + 15u) & ~15u;
    const exec_u32 CB = (K + 511u) >> 9;
    const exec_u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const exec_u32 g = lane >> 2, t = lane & 3u;
    const exec_u64 ngroups = ((exec_u64)M + ROWS - 1) / ROWS;
    exec_u8* st = exec_stage + (exec_u64)warp * D * L::SIZE;
    float* red = reinterpret_cast<float*>(exec_stage + (exec_u64)nwarps * D * L::SIZE);

    // issue pointer over the same item sequence as the compute loop: (row group, tile, step)
    exec_u64 igr = blockIdx.x;
    exec_u32 icb = warp, is = 0;
    exec_u64 issued = 0;
    auto issue = [&]() {
        if (igr < ngroups) {
            exec_u8* sd = st + (issued & (D - 1)) * L::SIZE;
            const exec_u32 k0 = icb * 512u + 64u * is + 16u * t;
#pragma unroll
            for (int rg = 0; rg < RG; ++rg)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const exec_u64 m = igr * ROWS + 16 * rg + 8 * h + g;
                    const int slot = rg * 2 + h;
                    if (m < M && k0 < K16) {
                        exec_cp16(exec_sa(sd + L::SM + slot * 512 + lane * 16), sm + m * K16 + k0);
                        exec_cp8(exec_sa(sd + L::CODES + slot * 256 + lane * 8), codes + m * (K16 >> 1) + (k0 >> 1));
                    }
                    if (is == 0 && t == 0 && m < M)
                        exec_cp4(exec_sa(sd + L::ESC + slot * 32 + g * 4), esc_start + m * CB + icb);
                }
            // advance: step, tile, row group
            ++is;
            if (is == 8u || icb * 512u + 64u * is >= K16) {
                is = 0;
                icb += nwarps;
                if (icb >= CB) {
                    icb = warp;
                    igr += gridDim.x;
                }
            }
        }
        ++issued;
        exec_cp_commit();
    };
#pragma unroll
    for (int d = 0; d < D - 1; ++d) issue();

    exec_u64 consumed = 0;
    for (exec_u64 gr = blockIdx.x; gr < ngroups; gr += gridDim.x) {
        exec_u32 rbase[RG][2];
#pragma unroll
        for (int rg = 0; rg < RG; ++rg)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const exec_u64 m = gr * ROWS + 16 * rg + 8 * h + g;
                rbase[rg][h] = m < M ? (exec_u32)__ldg(base + m) : 1u;
            }
        float acc[RG][NT][4];
#pragma unroll
        for (int rg = 0; rg < RG; ++rg)
#pragma unroll
            for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                for (int i = 0; i < 4; ++i) acc[rg][nt][i] = 0.0f;
        for (exec_u32 cb = warp; cb < CB; cb += nwarps) {
            exec_u32 rel[RG][2], tesc[RG][2];
#pragma unroll
            for (int rg = 0; rg < RG; ++rg) rel[rg][0] = rel[rg][1] = tesc[rg][0] = tesc[rg][1] = 0u;
            for (exec_u32 s = 0; s < 8u && cb * 512u + 64u * s < K16; ++s) {
                issue();
                const exec_u32 k0 = cb * 512u + 64u * s + 16u * t;
                uint4 xa[NT], xb[NT];
#pragma unroll
                for (int nt = 0; nt < NT; ++nt) {
                    const exec_u32 n = nt * 8u + g;
                    xa[nt] = xb[nt] = make_uint4(0u, 0u, 0u, 0u);
                    if (n < ncols && k0 < K16) {
                        const uint4* xp = reinterpret_cast<const uint4*>(x + (exec_u64)n * ldx + k0);
                        xa[nt] = __ldg(xp);
                        xb[nt] = __ldg(xp + 1);
                    }
                }
                exec_cp_wait<D - 1>();
                const exec_u8* sd = st + (consumed & (D - 1)) * L::SIZE;
                ++consumed;
                uint4 sv[RG][2];
                uint2 cv[RG][2];
                bool plain = true;
#pragma unroll
                for (int rg = 0; rg < RG; ++rg)
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        const exec_u64 m = gr * ROWS + 16 * rg + 8 * h + g;
                        const int slot = rg * 2 + h;
                        sv[rg][h] = make_uint4(0u, 0u, 0u, 0u);
                        cv[rg][h] = make_uint2(0x11111111u, 0x11111111u);
                        if (m < M && k0 < K16) {
                            sv[rg][h] = *reinterpret_cast<const uint4*>(sd + L::SM + slot * 512 + lane * 16);
                            cv[rg][h] = exec_mask_pad(*reinterpret_cast<const uint2*>(sd + L::CODES + slot * 256 + lane * 8), k0, K);
                        }
                        if (s == 0 && t == 0 && m < M) tesc[rg][h] = *reinterpret_cast<const exec_u32*>(sd + L::ESC + slot * 32 + g * 4);
                        plain = plain && exec_plain16(cv[rg][h]);
                    }
                exec_u32 w[RG][2][8];
                if (__all_sync(EXEC_FULL, plain)) {
#pragma unroll
                    for (int rg = 0; rg < RG; ++rg)
#pragma unroll
                        for (int h = 0; h < 2; ++h) exec_pairs16_fast(cv[rg][h], sv[rg][h], exec_b2(rbase[rg][h]), w[rg][h]);
                } else {
#pragma unroll
                    for (int rg = 0; rg < RG; ++rg)
#pragma unroll
                        for (int h = 0; h < 2; ++h) {
                            const exec_u32 n = exec_count15(cv[rg][h].x) + exec_count15(cv[rg][h].y);
                            exec_u32 incl = n;
                            exec_u32 v = __shfl_up_sync(EXEC_FULL, incl, 1, 4);
                            if (t >= 1u) incl += v;
                            v = __shfl_up_sync(EXEC_FULL, incl, 2, 4);
                            if (t >= 2u) incl += v;
                            const exec_u32 total = __shfl_sync(EXEC_FULL, incl, 3, 4);
                            const exec_u32 t0 = __shfl_sync(EXEC_FULL, tesc[rg][h], 0, 4);
                            if (exec_plain16(cv[rg][h]))
                                exec_pairs16_fast(cv[rg][h], sv[rg][h], exec_b2(rbase[rg][h]), w[rg][h]);
                            else
                                exec_pairs16_general(cv[rg][h], sv[rg][h], rbase[rg][h], esc,
                                                     (exec_u64)t0 + rel[rg][h] + (incl - n), w[rg][h]);
                            rel[rg][h] += total;
                        }
                }
#pragma unroll
                for (int nt = 0; nt < NT; ++nt) {
                    const exec_u32 xv[8] = {xa[nt].x, xa[nt].y, xa[nt].z, xa[nt].w, xb[nt].x, xb[nt].y, xb[nt].z, xb[nt].w};
#pragma unroll
                    for (int q = 0; q < 4; ++q)
#pragma unroll
                        for (int rg = 0; rg < RG; ++rg)
                            exec_mma16816(acc[rg][nt], w[rg][0][2 * q], w[rg][1][2 * q], w[rg][0][2 * q + 1],
                                          w[rg][1][2 * q + 1], xv[2 * q], xv[2 * q + 1]);
                }
            }
        }
        float* rw = red + (exec_u64)warp * ROWS * COLS;
#pragma unroll
        for (int rg = 0; rg < RG; ++rg)
#pragma unroll
            for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                for (int i = 0; i < 4; ++i)
                    rw[(16u * rg + g + 8u * (i >> 1)) * COLS + 8u * nt + 2u * t + (i & 1)] = acc[rg][nt][i];
        __syncthreads();
        for (exec_u32 idx = threadIdx.x; idx < (exec_u32)(ROWS * COLS); idx += blockDim.x) {
            const exec_u32 r = idx / COLS, n = idx % COLS;
            const exec_u64 m = gr * ROWS + r;
            if (m >= M || n >= ncols) continue;
            float sum = 0.0f;
            for (exec_u32 wi = 0; wi < nwarps; ++wi) sum = __fadd_rn(sum, red[(exec_u64)wi * ROWS * COLS + idx]);
            if (bias) sum = __fadd_rn(sum, bias[m]);
            if (out_bf16)
                reinterpret_cast<exec_u16*>(y)[n * ldy + m] = exec_bf16_rne(sum);
            else
                reinterpret_cast<float*>(y)[n * ldy + m] = sum;
        }
        __syncthreads();
    }
    exec_cp_wait<0>();
}

#define EXEC_MMAS(NAME, RG, NT, D, MINB)                                                                    \
    extern "C" __global__ void __launch_bounds__(256, MINB)                                                 \
        NAME(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes, const exec_u8* __restrict__ base, \
             const exec_u32* __restrict__ esc_start, const exec_u8* __restrict__ esc, exec_u32 M, exec_u32 K,    \
             const exec_u16* __restrict__ x, exec_u64 ldx, exec_u32 ncols, const float* __restrict__ bias,       \
             void* __restrict__ y, exec_u64 ldy, int out_bf16) {                                                 \
        exec_mmas_body<RG, NT, D>(sm, codes, base, esc_start, esc, M, K, x, ldx, ncols, bias, y, ldy, out_bf16); \
    }

EXEC_MMAS(exec_mmas_r1n1d4, 1, 1, 4, 2)
EXEC_MMAS(exec_mmas_r1n2d4, 1, 2, 4, 2)
EXEC_MMAS(exec_mmas_r2n2d4, 2, 2, 4, 1)
EXEC_MMAS(exec_mmas_r1n4d4, 1, 4, 4, 2)
EXEC_MMAS(exec_mmas_r2n4d4, 2, 4, 4, 1)
EXEC_MMAS(exec_mmas_r2n8d4, 2, 8, 4, 1)
