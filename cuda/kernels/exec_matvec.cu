// Execution layout: exact fused matvec (spec 20.15: the canonical order of spec 15.4 with the
// layout-0 lane mapping), 1, 2 or 4 activation columns per decode, bit-identical to the reference.
//
// Design (docs/gpu.md, "Execution layout"): a CTA of 16 warps (one per SM) copies x (f32, NB x K16,
// zero-padded) into shared memory once, then every warp streams items through a D-stage cp.async
// pipeline: an item is 4 rows x one 512-column tile, D - 1 items always in flight. A row group of 4
// rows is owned by G warps (G = 1, 2, 4, 8 chosen by the host to balance the rows over the resident
// warps), each with a contiguous range of tiles; G = 1 adds the tile partials in registers in
// ascending tile order, G > 1 through a double-buffered shared array after a named barrier (spec
// 15.4.5 order either way). The lane partials of the 4 rows are combined by the transposed halving
// tree (exec_tree, bit-identical to the per-row tree of spec 15.4.4).
// Shared memory: [x: NB * K16 f32 if XS][stages: W * D * EXEC3_STAGE][pbuf: (W / G) * 2 * 4 NB * CB f32].
// x from global (XS = false) serves K too large for shared memory.

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
    // Stage of the item being issued / consumed: counters modulo D (D need not be a power of 2).
    exec_u64 irg = gi, issued = 0;
    exec_u32 icb = lo, ivalid = 0, istage = 0, cstage = 0;
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
            const exec_u32 sd = st + istage * EXEC3_STAGE;
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
        exec_stage_commit<D>(issued, istage);
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
        const exec_u8* sd = exec_stage + xbytes + (exec_u64)warp * (D * EXEC3_STAGE) + cstage * EXEC3_STAGE;
        cstage = cstage + 1 == (exec_u32)D ? 0u : cstage + 1;
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
            exec_decode_lane_with(c, s, rb, lane, [&]() { return __shfl_sync(EXEC_FULL, e0, r); }, esc, w);
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
                    exec_output(t, m, n, ldy, bias, y, out_bf16);
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
                        exec_output(t, m, n, ldy, bias, y, out_bf16);
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
        NAME(EXEC_MATVEC_PARAMS(float), exec_u32 G) {                                                    \
        exec_mv3_body<NB, D, XS>(sm, codes, base, esc_start, esc, M, K, x, ldx, ncols, bias, y, ldy, out_bf16, G); \
    }

EXEC_MV3(exec_matvec_c1_d4, 1, 4, true, 512)
EXEC_MV3(exec_matvec_c1_d3, 1, 3, true, 512)
EXEC_MV3(exec_matvec_c1_d2, 1, 2, true, 512)
EXEC_MV3(exec_matvec_c1_xg, 1, 4, false, 256)
EXEC_MV3(exec_matvec_c2_d2, 2, 2, true, 512)
EXEC_MV3(exec_matvec_c4_d2, 4, 2, true, 512)

// BF16 activations widened to f32 (exactly: a BF16 value is an f32 value) for the exact kernels
// that take f32 (every one but the strip kernels' `_xbf16` entry points, which widen as they
// load): `n` words at x into out. Launched in stream order (exec/run.rs).
extern "C" __global__ void exec_widen_bf16(const exec_u16* __restrict__ x, float* __restrict__ out, exec_u64 n) {
    const exec_u64 i = (exec_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __uint_as_float((exec_u32)x[i] << 16);
}
