// Bench-only variants of the lean one-column exact matvec (exec_matvec_lean.cu), prepared for one
// device call (docs/gpu.md, "session 6, late"). Same lane mapping, per-row lane chains, halving
// tree and ascending tile partials as the lean kernel (spec 20.15), so bit-identical; they change
// only what the measured counters blamed (issue-bound at ~625 SASS per 4-row item, ~65% issue
// active with 4 warps per scheduler, `wait` stalls from 16-FFMA dependent chains):
// - ILP: a group of 4 rows is decoded first (per-row vote and fallback inline, as lean), then
//   the four rows' fma chains run interleaved (four independent chains instead of one at a time);
//   each row's chain keeps its order (lo, hi of pair 0, 1, ..., 7).
// - R = 8: items of 8 rows x one tile (two groups of 4), so the x loads, stage bookkeeping, loop
//   control and part of the tree are paid once per 4,096 weights instead of 2,048.
// - W24: the R = 4 ILP body under __launch_bounds__(768, 1): 24 warps per SM (<= 85 registers).
// Stage of an item: [R sm rows x 512][R code rows x 256][R escape offsets][R / 4 base words],
// R * 768 + 32 * (R / 4) bytes. Needs K16 % 32 == 0 (as lean; the host falls back otherwise).

template <int R, int D, bool LOW>
__device__ __forceinline__ void exec_var_body(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes,
                                              const exec_u8* __restrict__ base, const exec_u32* __restrict__ esc_start,
                                              const exec_u8* __restrict__ esc, exec_u32 M, exec_u32 K,
                                              const float* __restrict__ x, exec_u32 ncols, const float* __restrict__ bias,
                                              void* __restrict__ y, int out_bf16, exec_u32 G) {
    constexpr exec_u32 STAGE = R * 768 + 32 * (R / 4), EOFF = R * 768, BOFF = R * 768 + 4 * R;
    extern __shared__ __align__(16) exec_u8 exec_stage[];
    const exec_u32 K16 = (K + 15u) & ~15u;
    const exec_u32 CB = (K + 511u) >> 9;
    const exec_u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    float* xs = reinterpret_cast<float*>(exec_stage);
    const exec_u32 xbytes = CB * 2048u;
    for (exec_u32 k = threadIdx.x * 4u; k < K16; k += blockDim.x * 4u) {
        float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
        if (ncols > 0) v = __ldg(reinterpret_cast<const float4*>(x + k));
        *reinterpret_cast<float4*>(xs + (k & ~511u) + ((k >> 2) & 3u) * 128u + ((k >> 4) & 31u) * 4u) = v;
    }
    __syncthreads();
    const exec_u32 q = warp % G, grp = warp / G, ngrp = nwarps / G;
    const exec_u32 gi = blockIdx.x * ngrp + grp, GG = gridDim.x * ngrp;
    const exec_u32 nrg = (M + R - 1) / R;
    if (gi >= nrg) return;  // the whole group (after the only CTA barrier)
    const exec_u32 lo = (exec_u32)((exec_u64)q * CB / G), hi = (exec_u32)((exec_u64)(q + 1) * CB / G);
    const exec_u32 nitems = ((nrg - gi + GG - 1) / GG) * (hi - lo);
    const exec_u32 st = exec_sa(exec_stage + xbytes) + warp * (D * STAGE);
    const exec_u8* stg = exec_stage + xbytes + warp * (D * STAGE);
    float* pbuf = reinterpret_cast<float*>(exec_stage + xbytes + nwarps * D * STAGE) + grp * 2 * R * CB;

    // Issue side as lean: lane L copies 16 bytes of each sm row at L * 16 and of the code rows
    // 2 i + (L >> 4) at (L & 15) * 16; sm rows and code-row pairs are both K16 bytes apart, so
    // one running pointer each (row 0 / pair 0) plus r * K16.
    const exec_u64 K16c = K16 >> 1;
    const exec_u32 hl = lane >> 4, cl = (lane & 15u) * 16u;
    exec_u32 irg = gi, issued = 0, icb = lo, ivalid = 0, istage = 0;
    const exec_u8* ps = nullptr;
    const exec_u8* pc = nullptr;
    const exec_u32* pes = nullptr;
    auto rowgroup = [&]() {
        const exec_u32 row0 = irg * R;
        ivalid = row0 < M ? min((exec_u32)R, M - row0) : 0u;
        ps = sm + (exec_u64)row0 * K16 + lo * 512u + lane * 16u;
        pc = codes + (exec_u64)(row0 + hl) * K16c + lo * 256u + cl;
        pes = esc_start + (exec_u64)(row0 + (lane & (R - 1u))) * CB + lo;
    };
    rowgroup();
    auto issue = [&]() {
        if (issued < nitems) {
            const exec_u32 sd = st + istage * STAGE;
            const exec_u32 kw = K16 - icb * 512u;  // columns of this tile in K16 (a multiple of 32)
            if (ivalid == R && kw >= 512u) {       // warp-uniform: the whole item, no predicates
#pragma unroll
                for (exec_u32 r = 0; r < R; ++r) exec_cp16(sd + r * 512u + lane * 16u, ps + (exec_u64)r * K16);
#pragma unroll
                for (exec_u32 i = 0; i < R / 2; ++i) exec_cp16(sd + R * 512u + i * 512u + hl * 256u + cl, pc + (exec_u64)i * K16);
            } else {
                const bool ls = lane * 16u < kw, lc = cl * 2u < kw;
#pragma unroll
                for (exec_u32 r = 0; r < R; ++r)
                    if (r < ivalid && ls) exec_cp16(sd + r * 512u + lane * 16u, ps + (exec_u64)r * K16);
#pragma unroll
                for (exec_u32 i = 0; i < R / 2; ++i)
                    if (2u * i + hl < ivalid && lc) exec_cp16(sd + R * 512u + i * 512u + hl * 256u + cl, pc + (exec_u64)i * K16);
            }
            if (lane < ivalid) exec_cp4(sd + EOFF + lane * 4u, pes);
            // base words (aligned: R % 4 == 0); word j only when its rows exist (base is
            // allocated rounded up to 4 bytes, not to R)
            if (lane >= 32u - R / 4 && icb == lo && (31u - lane) * 4u < ivalid)
                exec_cp4(sd + BOFF + (31u - lane) * 4u, base + (exec_u64)irg * R + (31u - lane) * 4u);
            ps += 512;
            pc += 256;
            pes += 1;
            if (++icb == hi) {
                icb = lo;
                irg += GG;
                rowgroup();
            }
        }
        ++issued;
        istage = istage + 1 == (exec_u32)D ? 0u : istage + 1;
        exec_cp_commit();
    };
#pragma unroll
    for (int d = 0; d < D - 1; ++d) issue();

    exec_u32 rg = gi, cb = lo, par = 0, cstage = 0;
    exec_u32 bw[R / 4];
#pragma unroll
    for (int j = 0; j < R / 4; ++j) bw[j] = 0;
    float S = 0.0f;
    const float* xk = xs + lo * 512u + lane * 4u;
    for (exec_u32 j = 0; j < nitems; ++j) {
        issue();
        const exec_u32 valid = min((exec_u32)R, M - rg * R);
        const bool full = valid == R && cb * 512u + 512u <= K;  // warp-uniform
        const bool active = cb * 512u + lane * 16u < K16;
        // x of the lane's 16 columns: qq-th float4 at xk + qq * 128 (zero past K16 for partial tiles).
        auto load_x = [&](int qq) {
            float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
            if (full || active) v = *reinterpret_cast<const float4*>(xk + qq * 128);
            return v;
        };
        float xv[16];
        if (!LOW) {
#pragma unroll
            for (int qq = 0; qq < 4; ++qq) {
                const float4 v = load_x(qq);
                xv[4 * qq] = v.x;
                xv[4 * qq + 1] = v.y;
                xv[4 * qq + 2] = v.z;
                xv[4 * qq + 3] = v.w;
            }
        }
        exec_cp_wait<D - 1>();
        const exec_u8* sd = stg + cstage * STAGE;
        cstage = cstage + 1 == (exec_u32)D ? 0u : cstage + 1;
        if (cb == lo) {
#pragma unroll
            for (int jw = 0; jw < R / 4; ++jw) {
                const exec_u32 src = 31u - jw;
                const exec_u32 mine = lane == src && jw * 4u < valid ? *reinterpret_cast<const exec_u32*>(sd + BOFF + jw * 4u) : 0u;
                bw[jw] = __shfl_sync(EXEC_FULL, mine, src);
            }
        }
        const exec_u32 e0 = lane < valid ? *reinterpret_cast<const exec_u32*>(sd + EOFF + lane * 4u) : 0u;
        const exec_u32 k0 = cb * 512u + lane * 16u;
        float acc[R];
#pragma unroll
        for (int g = 0; g < R / 4; ++g) {
            // The group's stage words: one warp-uniform branch per group of 4 rows (as lean per
            // item); LOW: per row, just before its decode (fewer live registers).
            auto load_row = [&](exec_u32 r, uint4& sr, uint2& cr) {
                sr = make_uint4(0u, 0u, 0u, 0u);
                cr = make_uint2(0x11111111u, 0x11111111u);
                if (full) {
                    sr = *reinterpret_cast<const uint4*>(sd + r * 512u + lane * 16u);
                    cr = *reinterpret_cast<const uint2*>(sd + R * 512u + r * 256u + lane * 8u);
                } else if (active && r < valid) {
                    sr = *reinterpret_cast<const uint4*>(sd + r * 512u + lane * 16u);
                    cr = exec_mask_pad(*reinterpret_cast<const uint2*>(sd + R * 512u + r * 256u + lane * 8u), k0, K);
                }
            };
            uint4 s[4];
            uint2 c[4];
            if (!LOW) {
                if (full) {
#pragma unroll
                    for (int rr = 0; rr < 4; ++rr) {
                        s[rr] = *reinterpret_cast<const uint4*>(sd + (4u * g + rr) * 512u + lane * 16u);
                        c[rr] = *reinterpret_cast<const uint2*>(sd + R * 512u + (4u * g + rr) * 256u + lane * 8u);
                    }
                } else {
#pragma unroll
                    for (int rr = 0; rr < 4; ++rr) load_row(4u * g + rr, s[rr], c[rr]);
                }
            }
            exec_u32 w[4][8];
#pragma unroll
            for (int rr = 0; rr < 4; ++rr) {
                const exec_u32 r = 4u * g + rr;
                const exec_u32 rb = (bw[g] >> (8u * rr)) & 0xffu;
                if (LOW) load_row(r, s[rr], c[rr]);
                if (__all_sync(EXEC_FULL, exec_plain16(c[rr]))) {
                    exec_pairs16_fast(c[rr], s[rr], exec_b2(rb), w[rr]);
                } else {
                    const exec_u32 n15 = exec_count15(c[rr].x) + exec_count15(c[rr].y);
                    const exec_u32 before = exec_warp_excl(n15, lane);
                    const exec_u32 t0 = __shfl_sync(EXEC_FULL, e0, r);
                    exec_pairs16_general(c[rr], s[rr], rb, esc, (exec_u64)t0 + before, w[rr]);
                }
            }
            // Four independent chains, each in the canonical order of its row.
            float a[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
            for (int qq = 0; qq < 4; ++qq) {
                float xq[4];
                if (LOW) {
                    const float4 v = load_x(qq);
                    xq[0] = v.x;
                    xq[1] = v.y;
                    xq[2] = v.z;
                    xq[3] = v.w;
                } else {
#pragma unroll
                    for (int i = 0; i < 4; ++i) xq[i] = xv[4 * qq + i];
                }
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int p = 2 * qq + h;
#pragma unroll
                    for (int rr = 0; rr < 4; ++rr) a[rr] = __fmaf_rn(exec_lo(w[rr][p]), xq[2 * h], a[rr]);
#pragma unroll
                    for (int rr = 0; rr < 4; ++rr) a[rr] = __fmaf_rn(exec_hi(w[rr][p]), xq[2 * h + 1], a[rr]);
                }
            }
#pragma unroll
            for (int rr = 0; rr < 4; ++rr) acc[4 * g + rr] = a[rr];
        }
        const float P = exec_tree<R>(acc, lane);
        const exec_u32 idx = exec_tree_index<R>(lane);
        if (G == 1) {
            S = __fadd_rn(S, P);
        } else if (exec_tree_writer<R>(lane)) {
            pbuf[(par * R + idx) * CB + cb] = P;
        }
        xk += 512;
        if (++cb == hi) {
            if (G == 1) {
                const exec_u32 m = rg * R + idx;
                if (exec_tree_writer<R>(lane) && m < M && ncols > 0) {
                    float t = S;
                    if (bias) t = __fadd_rn(t, bias[m]);
                    if (out_bf16)
                        reinterpret_cast<exec_u16*>(y)[m] = exec_bf16_rne(t);
                    else
                        reinterpret_cast<float*>(y)[m] = t;
                }
                S = 0.0f;
            } else {
                asm volatile("bar.sync %0, %1;" ::"r"(1u + grp), "r"(32u * G) : "memory");
                if (q == 0 && lane < R) {
                    const exec_u32 m = rg * R + lane;
                    if (m < M && ncols > 0) {
                        float t = 0.0f;
                        const float* pp = pbuf + (par * R + lane) * CB;
                        for (exec_u32 c2 = 0; c2 < CB; ++c2) t = __fadd_rn(t, pp[c2]);
                        if (bias) t = __fadd_rn(t, bias[m]);
                        if (out_bf16)
                            reinterpret_cast<exec_u16*>(y)[m] = exec_bf16_rne(t);
                        else
                            reinterpret_cast<float*>(y)[m] = t;
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

// Same arguments as EXEC_LEAN (ldx, ldy unused). THREADS: the CTA size the launch bounds promise
// (one CTA per SM).
#define EXEC_VAR(NAME, R, D, LOW, THREADS)                                                                        \
    extern "C" __global__ void __launch_bounds__(THREADS, 1)                                                 \
        NAME(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes, const exec_u8* __restrict__ base, \
             const exec_u32* __restrict__ esc_start, const exec_u8* __restrict__ esc, exec_u32 M, exec_u32 K,    \
             const float* __restrict__ x, exec_u64 ldx, exec_u32 ncols, const float* __restrict__ bias,          \
             void* __restrict__ y, exec_u64 ldy, int out_bf16, exec_u32 G) {                                     \
        exec_var_body<R, D, LOW>(sm, codes, base, esc_start, esc, M, K, x, ncols, bias, y, out_bf16, G);          \
    }

// ILP: 4-row items, 16 warps, depth 4/3/2 (as lean).
EXEC_VAR(bench_exec_ilp4_d4, 4, 4, false, 512)
EXEC_VAR(bench_exec_ilp4_d3, 4, 3, false, 512)
EXEC_VAR(bench_exec_ilp4_d2, 4, 2, false, 512)
// R8: 8-row items, 16 warps, depth 2 (16 x 3 stages of 6,208 bytes exceed 227 KB).
EXEC_VAR(bench_exec_r8_d2, 8, 2, false, 512)
// W24: 4-row items, 24 warps (<= 85 registers), depth 2 (24 x 3 x 3,104 bytes leave too little for x).
EXEC_VAR(bench_exec_w24_d2, 4, 2, true, 768)
