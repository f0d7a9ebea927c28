// Execution layout, version 3: streaming kernels with fewer instructions per weight.
//
// Call 2 (NOTES.md) showed version 2 issue-bound (~300 warp instructions per 16 weights per lane:
// 64-bit address math per copy, per-item bookkeeping) and sensitive to the activations' L1 hit
// rate (exact batches cost +60% per extra column; v2's shared-memory stages shrink L1). Version 3:
//  - an item is R = 4 rows x one tile, so x, the bookkeeping and the tree are shared by 4 rows;
//  - x (f32, NB columns x K16) is copied once per CTA into shared memory (XS), not read through L1;
//  - copies use running pointers (one IMAD.WIDE per row and plane), stage addresses are 32-bit;
//  - CTAs of W warps (one CTA per SM), groups of G warps per row group as in version 2.
// Shared memory: [x: NB * K16 f32 if XS][stages: W * D * STAGE][pbuf: (W / G) * 2 * 4 NB * CB f32].

#define EXEC3_R 4
#define EXEC3_STAGE (EXEC3_R * 768 + 32)

template <int NB, int D, bool XS>
__device__ __forceinline__ void exec_mv3_body(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes,
                                              const exec_u8* __restrict__ base, const exec_u32* __restrict__ esc_start,
                                              const exec_u8* __restrict__ esc, exec_u32 M, exec_u32 K,
                                              const float* __restrict__ x, exec_u64 ldx, exec_u32 ncols,
                                              const float* __restrict__ bias, void* __restrict__ y, exec_u64 ldy,
                                              int out_bf16, exec_u32 G) {
    constexpr int R = EXEC3_R, RN = R * NB;
    extern __shared__ __align__(16) exec_u8 exec_stage[];
    const exec_u32 K16 = (K + 15u) & ~15u;
    const exec_u32 CB = (K + 511u) >> 9;
    const exec_u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    float* xs = reinterpret_cast<float*>(exec_stage);
    const exec_u64 xbytes = XS ? (exec_u64)NB * K16 * 4u : 0u;
    if (XS) {  // activations into shared memory once per CTA (zero for columns >= ncols)
        for (exec_u32 n = 0; n < (exec_u32)NB; ++n)
            for (exec_u32 k = threadIdx.x * 4u; k < K16; k += blockDim.x * 4u) {
                float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
                if (n < ncols) v = __ldg(reinterpret_cast<const float4*>(x + (exec_u64)n * ldx + k));
                *reinterpret_cast<float4*>(xs + (exec_u64)n * K16 + k) = v;
            }
        __syncthreads();
    }
    const exec_u32 q = warp % G, grp = warp / G, ngrp = nwarps / G;
    const exec_u64 gi = (exec_u64)blockIdx.x * ngrp + grp, GG = (exec_u64)gridDim.x * ngrp;
    const exec_u64 nrg = ((exec_u64)M + R - 1) / R;
    if (gi >= nrg) return;  // the whole group (after the only CTA barrier)
    const exec_u32 lo = (exec_u32)((exec_u64)q * CB / G), hi = (exec_u32)((exec_u64)(q + 1) * CB / G);
    const exec_u64 nitems = ((nrg - gi + GG - 1) / GG) * (hi - lo);
    const exec_u32 st = exec_sa(exec_stage + xbytes) + warp * (D * EXEC3_STAGE);
    float* pbuf = reinterpret_cast<float*>(exec_stage + xbytes + (exec_u64)nwarps * D * EXEC3_STAGE) +
                  (exec_u64)grp * 2 * RN * CB;

    // issue side: running pointers to this lane's bytes of row irg * R, tile icb
    exec_u64 irg = gi, issued = 0;
    exec_u32 icb = lo, ivalid = 0;
    const exec_u8* psm = nullptr;
    const exec_u8* pcd = nullptr;
    const exec_u32* pes = nullptr;
    auto rowgroup = [&]() {
        const exec_u64 row0 = irg * R;
        ivalid = row0 < M ? (exec_u32)min((exec_u64)R, (exec_u64)M - row0) : 0u;
        psm = sm + row0 * K16 + lo * 512u + lane * 16u;
        pcd = codes + row0 * (K16 >> 1) + lo * 256u + lane * 8u;
        pes = esc_start + (row0 + (lane & 3u)) * CB + lo;
    };
    rowgroup();
    auto issue = [&]() {
        if (issued < nitems) {
            const exec_u32 sd = st + (exec_u32)(issued & (D - 1)) * EXEC3_STAGE;
            if (icb * 512u + lane * 16u < K16) {
#pragma unroll
                for (int r = 0; r < R; ++r)
                    if ((exec_u32)r < ivalid) {
                        exec_cp16(sd + r * 512 + lane * 16, psm + (exec_u64)r * K16);
                        exec_cp8(sd + R * 512 + r * 256 + lane * 8, pcd + (exec_u64)r * (K16 >> 1));
                    }
            }
            if (lane < ivalid) exec_cp4(sd + R * 768 + lane * 4, pes);
            if (lane == 31u && icb == lo) exec_cp4(sd + R * 768 + 16, base + irg * R);  // R = 4: aligned word
            psm += 512;
            pcd += 256;
            pes += 1;
            if (++icb == hi) {
                icb = lo;
                irg += GG;
                rowgroup();
            }
        }
        ++issued;
        exec_cp_commit();
    };
#pragma unroll
    for (int d = 0; d < D - 1; ++d) issue();

    exec_u64 rg = gi;
    exec_u32 cb = lo, par = 0;
    exec_u32 b4 = 0;
    float S = 0.0f;
    const float* xk = XS ? xs + lo * 512u + lane * 16u : x + lo * 512u + lane * 16u;
    for (exec_u64 j = 0; j < nitems; ++j) {
        issue();
        const exec_u32 k0 = cb * 512u + lane * 16u;
        const bool active = k0 < K16;
        const exec_u32 valid = rg * R < M ? (exec_u32)min((exec_u64)R, (exec_u64)M - rg * R) : 0u;
        float xv[NB][16];
#pragma unroll
        for (int n = 0; n < NB; ++n) {
            if (active && (XS || (exec_u32)n < ncols)) {
                const float4* xp = reinterpret_cast<const float4*>(xk + (exec_u64)n * (XS ? K16 : ldx));
#pragma unroll
                for (int qq = 0; qq < 4; ++qq) {
                    const float4 v = XS ? xp[qq] : __ldg(xp + qq);
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
        const exec_u8* sd = exec_stage + xbytes + (exec_u64)warp * (D * EXEC3_STAGE) + (j & (D - 1)) * EXEC3_STAGE;
        if (cb == lo) b4 = __shfl_sync(EXEC_FULL, lane == 31u ? *reinterpret_cast<const exec_u32*>(sd + R * 768 + 16) : 0u, 31);
        const exec_u32 e0 = lane < valid ? *reinterpret_cast<const exec_u32*>(sd + R * 768 + lane * 4) : 0u;
        float acc[RN];
#pragma unroll
        for (int r = 0; r < R; ++r) {
            uint4 s = make_uint4(0u, 0u, 0u, 0u);
            uint2 c = make_uint2(0x11111111u, 0x11111111u);
            if (active && (exec_u32)r < valid) {
                s = *reinterpret_cast<const uint4*>(sd + r * 512 + lane * 16);
                c = exec_mask_pad(*reinterpret_cast<const uint2*>(sd + R * 512 + r * 256 + lane * 8), k0, K);
            }
            const exec_u32 rb = (b4 >> (8 * r)) & 0xffu;
            exec_u32 w[8];
            if (__all_sync(EXEC_FULL, exec_plain16(c))) {
                exec_pairs16_fast(c, s, exec_b2(rb), w);
            } else {
                const exec_u32 n15 = exec_count15(c.x) + exec_count15(c.y);
                const exec_u32 before = exec_warp_excl(n15, lane);
                const exec_u32 t0 = __shfl_sync(EXEC_FULL, e0, r);
                exec_pairs16_general(c, s, rb, esc, (exec_u64)t0 + before, w);
            }
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
        xk += 512;
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
            xk -= (hi - lo) * 512u;
        }
    }
    exec_cp_wait<0>();
}

#define EXEC_MV3(NAME, NB, D, XS, THREADS)                                                                   \
    extern "C" __global__ void __launch_bounds__(THREADS, 1)                                                \
        NAME(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes, const exec_u8* __restrict__ base, \
             const exec_u32* __restrict__ esc_start, const exec_u8* __restrict__ esc, exec_u32 M, exec_u32 K,    \
             const float* __restrict__ x, exec_u64 ldx, exec_u32 ncols, const float* __restrict__ bias,          \
             void* __restrict__ y, exec_u64 ldy, int out_bf16, exec_u32 G) {                                     \
        exec_mv3_body<NB, D, XS>(sm, codes, base, esc_start, esc, M, K, x, ldx, ncols, bias, y, ldy, out_bf16, G); \
    }

// name: exec_mv3_<NB>_d<D>_w<warps>[g = x from global]
EXEC_MV3(exec_mv3_1_d4_w16, 1, 4, true, 512)
EXEC_MV3(exec_mv3_1_d3_w16, 1, 3, true, 512)
EXEC_MV3(exec_mv3_1_d2_w16, 1, 2, true, 512)
EXEC_MV3(exec_mv3_1_d2_w32, 1, 2, true, 1024)
EXEC_MV3(exec_mv3_1_d4_w8g, 1, 4, false, 256)
EXEC_MV3(exec_mv3_2_d4_w16, 2, 4, true, 512)
EXEC_MV3(exec_mv3_2_d2_w16, 2, 2, true, 512)
EXEC_MV3(exec_mv3_4_d2_w16, 4, 2, true, 512)

// ---- dequant / gather, version 3: the same stream of (4-row group, tile) items, G warps per row
// group splitting the tiles (no reduction), output rows written with 16-byte streaming stores ----
template <int D>
__device__ __forceinline__ void exec_dq3_body(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes,
                                              const exec_u8* __restrict__ base, const exec_u32* __restrict__ esc_start,
                                              const exec_u8* __restrict__ esc, exec_u32 K,
                                              const exec_u32* __restrict__ rows, exec_u32 nrows,
                                              exec_u16* __restrict__ out, exec_u64 ldo, exec_u32 G) {
    constexpr int R = EXEC3_R;
    extern __shared__ __align__(16) exec_u8 exec_stage[];
    const exec_u32 K16 = (K + 15u) & ~15u;
    const exec_u32 CB = (K + 511u) >> 9;
    const exec_u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const exec_u32 q = warp % G, grp = warp / G, ngrp = nwarps / G;
    const exec_u64 gi = (exec_u64)blockIdx.x * ngrp + grp, GG = (exec_u64)gridDim.x * ngrp;
    const exec_u64 nrg = ((exec_u64)nrows + R - 1) / R;
    if (gi >= nrg) return;
    const exec_u32 lo = (exec_u32)((exec_u64)q * CB / G), hi = (exec_u32)((exec_u64)(q + 1) * CB / G);
    const exec_u64 nitems = ((nrg - gi + GG - 1) / GG) * (hi - lo);
    const exec_u32 st = exec_sa(exec_stage) + warp * (D * EXEC3_STAGE);

    exec_u64 irg = gi, issued = 0;
    exec_u32 icb = lo, ivalid = 0;
    exec_u64 srow[R];
    auto rowgroup = [&]() {
        const exec_u64 i0 = irg * R;
        ivalid = i0 < nrows ? (exec_u32)min((exec_u64)R, (exec_u64)nrows - i0) : 0u;
#pragma unroll
        for (int r = 0; r < R; ++r) srow[r] = (exec_u32)r < ivalid ? (rows ? (exec_u64)rows[i0 + r] : i0 + r) : 0u;
    };
    rowgroup();
    auto issue = [&]() {
        if (issued < nitems) {
            const exec_u32 sd = st + (exec_u32)(issued & (D - 1)) * EXEC3_STAGE;
            const exec_u32 k0 = icb * 512u + lane * 16u;
            if (k0 < K16) {
#pragma unroll
                for (int r = 0; r < R; ++r)
                    if ((exec_u32)r < ivalid) {
                        exec_cp16(sd + r * 512 + lane * 16, sm + srow[r] * K16 + k0);
                        exec_cp8(sd + R * 512 + r * 256 + lane * 8, codes + srow[r] * (K16 >> 1) + (k0 >> 1));
                    }
            }
            if (lane < ivalid) {
                exec_u64 myrow = srow[0];
#pragma unroll
                for (int r = 1; r < R; ++r)
                    if (lane == (exec_u32)r) myrow = srow[r];
                exec_cp4(sd + R * 768 + lane * 4, esc_start + myrow * CB + icb);
                exec_cp4(sd + R * 768 + 16 + lane * 4, base + (myrow & ~3ull));
            }
            if (++icb == hi) {
                icb = lo;
                irg += GG;
                rowgroup();
            }
        }
        ++issued;
        exec_cp_commit();
    };
#pragma unroll
    for (int d = 0; d < D - 1; ++d) issue();

    exec_u64 rg = gi;
    exec_u32 cb = lo;
    for (exec_u64 j = 0; j < nitems; ++j) {
        issue();
        const exec_u32 k0 = cb * 512u + lane * 16u;
        const bool active = k0 < K16;
        const exec_u64 i0 = rg * R;
        const exec_u32 valid = i0 < nrows ? (exec_u32)min((exec_u64)R, (exec_u64)nrows - i0) : 0u;
        exec_cp_wait<D - 1>();
        const exec_u8* sd = exec_stage + (exec_u64)warp * (D * EXEC3_STAGE) + (j & (D - 1)) * EXEC3_STAGE;
        exec_u32 e0 = 0u, bw = 0u;
        if (lane < valid) {
            e0 = *reinterpret_cast<const exec_u32*>(sd + R * 768 + lane * 4);
            exec_u64 myrow = rows ? (exec_u64)rows[i0 + lane] : i0 + lane;
            bw = (*reinterpret_cast<const exec_u32*>(sd + R * 768 + 16 + lane * 4) >> (8 * (exec_u32)(myrow & 3ull))) & 0xffu;
        }
#pragma unroll
        for (int r = 0; r < R; ++r) {
            if ((exec_u32)r >= valid) break;  // warp-uniform
            uint4 s = make_uint4(0u, 0u, 0u, 0u);
            uint2 c = make_uint2(0x11111111u, 0x11111111u);
            if (active) {
                s = *reinterpret_cast<const uint4*>(sd + r * 512 + lane * 16);
                c = *reinterpret_cast<const uint2*>(sd + R * 512 + r * 256 + lane * 8);
            }
            const exec_u32 rb = __shfl_sync(EXEC_FULL, bw, r);
            exec_u32 w[8];
            if (__all_sync(EXEC_FULL, exec_plain16(c))) {
                exec_pairs16_fast(c, s, exec_b2(rb), w);
            } else {
                const exec_u32 n15 = exec_count15(c.x) + exec_count15(c.y);
                const exec_u32 before = exec_warp_excl(n15, lane);
                const exec_u32 t0 = __shfl_sync(EXEC_FULL, e0, r);
                exec_pairs16_general(c, s, rb, esc, (exec_u64)t0 + before, w);
            }
            if (active) {
                uint4* o = reinterpret_cast<uint4*>(out + (i0 + r) * ldo + k0);
                __stcs(o, make_uint4(w[0], w[1], w[2], w[3]));
                __stcs(o + 1, make_uint4(w[4], w[5], w[6], w[7]));
            }
        }
        if (++cb == hi) {
            cb = lo;
            rg += GG;
        }
    }
    exec_cp_wait<0>();
}

#define EXEC_DQ3(NAME, D, THREADS)                                                                         \
    extern "C" __global__ void __launch_bounds__(THREADS, 1)                                              \
        NAME(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes, const exec_u8* __restrict__ base, \
             const exec_u32* __restrict__ esc_start, const exec_u8* __restrict__ esc, exec_u32 K,            \
             const exec_u32* __restrict__ rows, exec_u32 nrows, exec_u16* __restrict__ out, exec_u64 ldo,    \
             exec_u32 G) {                                                                                \
        exec_dq3_body<D>(sm, codes, base, esc_start, esc, K, rows, nrows, out, ldo, G);                     \
    }

EXEC_DQ3(exec_dq3_d4_w16, 4, 512)
EXEC_DQ3(exec_dq3_d2_w32, 2, 1024)

// ---- batched, bounded (spec 19), version 3: an item is a whole tile of a 16-row group (8 steps of
// 64 columns), so the copies (32 per thread, immediate offsets), the wait and the tile's escape
// bookkeeping are paid once per tile instead of once per step. CTAs of W warps are persistent over
// 16-row groups; warps split the tiles and add their partial sums in warp order (shared memory). ----
#define EXEC_MM3_STAGE (16 * 768 + 64)

template <int NT, int D>
__device__ __forceinline__ void exec_mm3_body(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes,
                                              const exec_u8* __restrict__ base, const exec_u32* __restrict__ esc_start,
                                              const exec_u8* __restrict__ esc, exec_u32 M, exec_u32 K,
                                              const exec_u16* __restrict__ x, exec_u64 ldx, exec_u32 ncols,
                                              const float* __restrict__ bias, void* __restrict__ y, exec_u64 ldy,
                                              int out_bf16) {
    constexpr int COLS = NT * 8;
    extern __shared__ __align__(16) exec_u8 exec_stage[];
    const exec_u32 K16 = (K + 15u) & ~15u;
    const exec_u32 CB = (K + 511u) >> 9;
    const exec_u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const exec_u32 g = lane >> 2, t = lane & 3u;
    const exec_u64 ngroups = ((exec_u64)M + 15) / 16;
    const exec_u32 st = exec_sa(exec_stage) + warp * (D * EXEC_MM3_STAGE);
    float* red = reinterpret_cast<float*>(exec_stage + (exec_u64)nwarps * D * EXEC_MM3_STAGE);

    exec_u64 igr = blockIdx.x, issued = 0;
    exec_u32 icb = warp;
    auto issue = [&]() {
        if (igr < ngroups) {
            const exec_u32 sd = st + (exec_u32)(issued & (D - 1)) * EXEC_MM3_STAGE;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const exec_u64 m = igr * 16 + 8 * h + g;
                if (m < M) {
                    const exec_u8* ps = sm + m * K16 + icb * 512u + 16u * t;
                    const exec_u8* pc = codes + m * (K16 >> 1) + icb * 256u + 8u * t;
                    const exec_u32 row = 8 * h + g;
#pragma unroll
                    for (int s = 0; s < 8; ++s)
                        if (icb * 512u + 64u * s + 16u * t < K16) {
                            exec_cp16(sd + row * 512 + 64 * s + 16 * t, ps + 64 * s);
                            exec_cp8(sd + 8192 + row * 256 + 32 * s + 8 * t, pc + 32 * s);
                        }
                    if (t == 0) exec_cp4(sd + 12288 + row * 4, esc_start + m * CB + icb);
                }
            }
            icb += nwarps;
            if (icb >= CB) {
                icb = warp;
                igr += gridDim.x;
            }
        }
        ++issued;
        exec_cp_commit();
    };
#pragma unroll
    for (int d = 0; d < D - 1; ++d) issue();

    exec_u64 consumed = 0;
    for (exec_u64 gr = blockIdx.x; gr < ngroups; gr += gridDim.x) {
        exec_u32 rbase[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const exec_u64 m = gr * 16 + 8 * h + g;
            rbase[h] = m < M ? (exec_u32)__ldg(base + m) : 1u;
        }
        float acc[NT][4];
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int i = 0; i < 4; ++i) acc[nt][i] = 0.0f;
        for (exec_u32 cb = warp; cb < CB; cb += nwarps) {
            issue();
            exec_cp_wait<D - 1>();
            const exec_u8* sd = exec_stage + (exec_u64)warp * (D * EXEC_MM3_STAGE) + (consumed & (D - 1)) * EXEC_MM3_STAGE;
            ++consumed;
            exec_u32 rel[2] = {0u, 0u}, tesc[2] = {0u, 0u};
#pragma unroll
            for (int h = 0; h < 2; ++h)
                if (t == 0 && gr * 16 + 8 * h + g < M) tesc[h] = *reinterpret_cast<const exec_u32*>(sd + 12288 + (8 * h + g) * 4);
            for (exec_u32 s = 0; s < 8u && cb * 512u + 64u * s < K16; ++s) {
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
                uint4 sv[2];
                uint2 cv[2];
                bool plain = true;
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    sv[h] = make_uint4(0u, 0u, 0u, 0u);
                    cv[h] = make_uint2(0x11111111u, 0x11111111u);
                    if (gr * 16 + 8 * h + g < M && k0 < K16) {
                        const exec_u32 row = 8 * h + g;
                        sv[h] = *reinterpret_cast<const uint4*>(sd + row * 512 + 64 * s + 16 * t);
                        cv[h] = exec_mask_pad(*reinterpret_cast<const uint2*>(sd + 8192 + row * 256 + 32 * s + 8 * t), k0, K);
                    }
                    plain = plain && exec_plain16(cv[h]);
                }
                exec_u32 w[2][8];
                if (__all_sync(EXEC_FULL, plain)) {
#pragma unroll
                    for (int h = 0; h < 2; ++h) exec_pairs16_fast(cv[h], sv[h], exec_b2(rbase[h]), w[h]);
                } else {
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        const exec_u32 n = exec_count15(cv[h].x) + exec_count15(cv[h].y);
                        exec_u32 incl = n;
                        exec_u32 v = __shfl_up_sync(EXEC_FULL, incl, 1, 4);
                        if (t >= 1u) incl += v;
                        v = __shfl_up_sync(EXEC_FULL, incl, 2, 4);
                        if (t >= 2u) incl += v;
                        const exec_u32 total = __shfl_sync(EXEC_FULL, incl, 3, 4);
                        const exec_u32 t0 = __shfl_sync(EXEC_FULL, tesc[h], 0, 4);
                        if (exec_plain16(cv[h]))
                            exec_pairs16_fast(cv[h], sv[h], exec_b2(rbase[h]), w[h]);
                        else
                            exec_pairs16_general(cv[h], sv[h], rbase[h], esc, (exec_u64)t0 + rel[h] + (incl - n), w[h]);
                        rel[h] += total;
                    }
                }
#pragma unroll
                for (int nt = 0; nt < NT; ++nt) {
                    const exec_u32 xv[8] = {xa[nt].x, xa[nt].y, xa[nt].z, xa[nt].w, xb[nt].x, xb[nt].y, xb[nt].z, xb[nt].w};
#pragma unroll
                    for (int qq = 0; qq < 4; ++qq)
                        exec_mma16816(acc[nt], w[0][2 * qq], w[1][2 * qq], w[0][2 * qq + 1], w[1][2 * qq + 1], xv[2 * qq],
                                      xv[2 * qq + 1]);
                }
            }
        }
        float* rw = red + (exec_u64)warp * 16 * COLS;
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int i = 0; i < 4; ++i) rw[(g + 8u * (i >> 1)) * COLS + 8u * nt + 2u * t + (i & 1)] = acc[nt][i];
        __syncthreads();
        for (exec_u32 idx = threadIdx.x; idx < (exec_u32)(16 * COLS); idx += blockDim.x) {
            const exec_u32 r = idx / COLS, n = idx % COLS;
            const exec_u64 m = gr * 16 + r;
            if (m >= M || n >= ncols) continue;
            float sum = 0.0f;
            for (exec_u32 wi = 0; wi < nwarps; ++wi) sum = __fadd_rn(sum, red[(exec_u64)wi * 16 * COLS + idx]);
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

#define EXEC_MM3(NAME, NT, D, THREADS)                                                                      \
    extern "C" __global__ void __launch_bounds__(THREADS, 1)                                                \
        NAME(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes, const exec_u8* __restrict__ base, \
             const exec_u32* __restrict__ esc_start, const exec_u8* __restrict__ esc, exec_u32 M, exec_u32 K,    \
             const exec_u16* __restrict__ x, exec_u64 ldx, exec_u32 ncols, const float* __restrict__ bias,       \
             void* __restrict__ y, exec_u64 ldy, int out_bf16) {                                                 \
        exec_mm3_body<NT, D>(sm, codes, base, esc_start, esc, M, K, x, ldx, ncols, bias, y, ldy, out_bf16);      \
    }

EXEC_MM3(exec_mm3_n1_d2, 1, 2, 256)
EXEC_MM3(exec_mm3_n2_d2, 2, 2, 256)
EXEC_MM3(exec_mm3_n4_d2, 4, 2, 256)
EXEC_MM3(exec_mm3_n8_d2, 8, 2, 256)
