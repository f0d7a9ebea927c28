// Execution layout: exact one-column matvec with Hopper bulk copies (spec 20.15, bit-identical to
// exec_matvec.cu and the reference). Same items (4 rows x one 512-column tile), same lane mapping,
// same trees and tile-partial order as the streaming kernel of exec_matvec.cu; what changes is
// the instruction count per item (docs/gpu.md, "Execution layout"):
// - copies: lanes 0..7 of the warp each issue ONE cp.async.bulk (lane r: the sm bytes of row r,
//   lane 4 + r: its codes) completing on the stage's mbarrier, instead of 8 cp.async per lane;
//   the consumer waits on the mbarrier (parity of the stage's round);
// - escapes: the escape offsets of item j + 2 are loaded into registers while item j is decoded,
//   the first 8 escape bytes of each row of item j + 1 likewise (one byte per lane), and stored into
//   the warp's 32-byte escape area before item j + 1 is decoded (more than 8 in a tile row: the
//   rest from global memory); the row bases of item j + 1 likewise (one word);
// - full items (4 valid rows, every lane inside K16, no pad column) take one branch-free path.
// Needs K16 % 32 == 0 (16-byte aligned code rows; the host picks exec_matvec.cu otherwise) and x
// in shared memory (transposed per tile as in PF). Shared memory:
// [x: CB * 512 f32][esc: W * 32][mbarriers: W * D * 8][stages: W * D * 3072][pbuf: (W / G) * 2 * 4 * CB f32].

#define EXEC_BULK_STAGE (EXEC3_R * 768)

__device__ __forceinline__ void exec_mbar_init(exec_u32 bar, exec_u32 count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void exec_mbar_expect(exec_u32 bar, exec_u32 bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void exec_mbar_wait(exec_u32 bar, exec_u32 parity) {
    asm volatile(
        "{\n .reg .pred p;\n WAIT:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra WAIT;\n }" ::"r"(bar),
        "r"(parity)
        : "memory");
}
__device__ __forceinline__ void exec_bulk_copy(exec_u32 dst, const void* src, exec_u32 bytes, exec_u32 bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar)
                 : "memory");
}

template <int D>
__device__ __forceinline__ void exec_bulk_body(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes,
                                               const exec_u8* __restrict__ base, const exec_u32* __restrict__ esc_start,
                                               const exec_u8* __restrict__ esc, exec_u32 M, exec_u32 K,
                                               const float* __restrict__ x, exec_u32 ncols, const float* __restrict__ bias,
                                               void* __restrict__ y, int out_bf16, exec_u32 G) {
    constexpr int R = EXEC3_R;
    extern __shared__ __align__(16) exec_u8 exec_stage[];
    const exec_u32 K16 = (K + 15u) & ~15u;
    const exec_u32 CB = (K + 511u) >> 9;
    const exec_u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    float* xs = reinterpret_cast<float*>(exec_stage);
    const exec_u64 xbytes = (exec_u64)CB * 2048u;
    for (exec_u32 k = threadIdx.x * 4u; k < K16; k += blockDim.x * 4u) {
        float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
        if (ncols > 0) v = __ldg(reinterpret_cast<const float4*>(x + k));
        *reinterpret_cast<float4*>(xs + (k & ~511u) + ((k >> 2) & 3u) * 128u + ((k >> 4) & 31u) * 4u) = v;
    }
    exec_u8* escs = exec_stage + xbytes + warp * 32u;
    const exec_u32 bars = exec_sa(exec_stage + xbytes + nwarps * 32u) + warp * (D * 8u);
    const exec_u32 st = exec_sa(exec_stage + xbytes + nwarps * (32u + D * 8u)) + warp * (D * EXEC_BULK_STAGE);
    const exec_u8* stg = exec_stage + xbytes + nwarps * (32u + D * 8u) + warp * (D * EXEC_BULK_STAGE);
    if (lane == 0u) {
        for (int d = 0; d < D; ++d) exec_mbar_init(bars + 8u * d, 1u);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    const exec_u32 q = warp % G, grp = warp / G, ngrp = nwarps / G;
    const exec_u64 gi = (exec_u64)blockIdx.x * ngrp + grp, GG = (exec_u64)gridDim.x * ngrp;
    const exec_u64 nrg = ((exec_u64)M + R - 1) / R;
    if (gi >= nrg) return;  // the whole group (after the only CTA barrier)
    const exec_u32 lo = (exec_u32)((exec_u64)q * CB / G), hi = (exec_u32)((exec_u64)(q + 1) * CB / G);
    const exec_u64 nitems = ((nrg - gi + GG - 1) / GG) * (hi - lo);
    float* pbuf = reinterpret_cast<float*>(exec_stage + xbytes + nwarps * (32u + D * 8u + D * EXEC_BULK_STAGE)) +
                  (exec_u64)grp * 2 * R * CB;

    // Issue side (lanes 0..7): lane r copies the sm bytes of row r, lane 4 + r its codes, from a
    // running source pointer; one bulk-copy instruction per item for the warp.
    const bool cl = (lane & 4u) != 0u;
    const exec_u32 r8 = lane & 3u;
    const exec_u64 rstride = cl ? (K16 >> 1) : K16;
    const exec_u32 tstep = cl ? 256u : 512u;
    const exec_u32 doff = cl ? 2048u + r8 * 256u : r8 * 512u;
    exec_u64 irg = gi, issued = 0;
    exec_u32 icb = lo, istage = 0;
    const exec_u8* src = (cl ? codes : sm) + (irg * R + r8) * rstride + (exec_u64)lo * tstep;
    auto issue = [&]() {
        if (issued < nitems) {
            const exec_u32 nv = (exec_u32)min((exec_u64)R, (exec_u64)M - irg * R);
            const exec_u32 wsm = min(512u, K16 - icb * 512u);
            const exec_u32 bar = bars + 8u * istage;
            if (lane == 0u) exec_mbar_expect(bar, nv * (wsm + (wsm >> 1)));
            __syncwarp();
            if (lane < 8u && r8 < nv) {
                asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // after the warp's reads of the stage
                exec_bulk_copy(st + istage * EXEC_BULK_STAGE + doff, src, cl ? wsm >> 1 : wsm, bar);
            }
            src += tstep;
            if (++icb == hi) {
                icb = lo;
                irg += GG;
                src = (cl ? codes : sm) + (irg * R + r8) * rstride + (exec_u64)lo * tstep;
            }
        }
        ++issued;
        istage = istage + 1 == (exec_u32)D ? 0u : istage + 1;
    };
#pragma unroll
    for (int d = 0; d < D - 1; ++d) issue();

    // Escape and base look-ahead: es2 (lanes 0..7) = escape offsets of item j + 2 (start of row
    // lane & 3 in lanes 0..3, end in lanes 4..7); eb1 = escape byte lane & 7 of row lane >> 3 of
    // item j + 1; st1 = start of row lane & 3 of item j + 1; b1 = base word of item j + 1.
    exec_u64 arg = gi;  // look-ahead iterator (item j + 2 once primed)
    exec_u32 acb = lo;
    auto advance = [&]() {
        if (++acb == hi) {
            acb = lo;
            arg += GG;
        }
    };
    auto load_es = [&](exec_u64 idx) -> exec_u32 {  // lanes 0..7, item idx at (arg, acb)
        const exec_u64 row = arg * R + r8;
        return (lane < 8u && idx < nitems && row < M) ? __ldg(esc_start + row * CB + acb + (lane >> 2)) : 0u;
    };
    auto load_bytes = [&](exec_u32 es, exec_u32& start) -> exec_u32 {  // from offsets of one item
        const exec_u32 a = __shfl_sync(EXEC_FULL, es, lane >> 3);
        const exec_u32 b = __shfl_sync(EXEC_FULL, es, 4u + (lane >> 3));
        start = __shfl_sync(EXEC_FULL, es, r8);
        return a + (lane & 7u) < b ? (exec_u32)__ldg(esc + (exec_u64)a + (lane & 7u)) : 0u;
    };
    auto load_base = [&](exec_u64 idx) -> exec_u32 {
        return (idx < nitems && arg * R < M) ? __ldg(reinterpret_cast<const exec_u32*>(base + arg * R)) : 0u;
    };
    exec_u32 st0, st1, b0, b1, eb0, eb1, es2;
    b0 = load_base(0);
    eb0 = load_bytes(load_es(0), st0);
    advance();
    b1 = load_base(1);
    eb1 = load_bytes(load_es(1), st1);
    advance();
    es2 = load_es(2);

    exec_u64 rg = gi;
    exec_u32 cb = lo, par = 0, cstage = 0, phase = 0;
    float S = 0.0f;
    const float* xk = xs + lo * 512u + lane * 4u;
    for (exec_u64 j = 0; j < nitems; ++j) {
        issue();
        // look-ahead: item j + 2's offsets in es2 give its bytes (eb2); item j + 3's offsets
        const exec_u32 b2 = load_base(j + 2);
        exec_u32 st2;
        const exec_u32 eb2 = load_bytes(es2, st2);
        advance();
        es2 = load_es(j + 3);

        const exec_u32 k0 = cb * 512u + lane * 16u;
        const exec_u32 valid = (exec_u32)min((exec_u64)R, (exec_u64)M - rg * R);
        float xv[16];
        uint4 s[R];
        uint2 c[R];
        escs[lane] = (exec_u8)eb0;
        exec_mbar_wait(bars + 8u * cstage, phase);
        const exec_u8* sd = stg + cstage * EXEC_BULK_STAGE;
        const bool full = valid == (exec_u32)R && cb * 512u + 512u <= K;  // warp-uniform
        if (full) {
#pragma unroll
            for (int qq = 0; qq < 4; ++qq) {
                const float4 v = *reinterpret_cast<const float4*>(xk + qq * 128);
                xv[4 * qq] = v.x;
                xv[4 * qq + 1] = v.y;
                xv[4 * qq + 2] = v.z;
                xv[4 * qq + 3] = v.w;
            }
#pragma unroll
            for (int r = 0; r < R; ++r) {
                s[r] = *reinterpret_cast<const uint4*>(sd + r * 512 + lane * 16);
                c[r] = *reinterpret_cast<const uint2*>(sd + 2048 + r * 256 + lane * 8);
            }
        } else {
            const bool active = k0 < K16;
#pragma unroll
            for (int qq = 0; qq < 4; ++qq) {
                float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
                if (active) v = *reinterpret_cast<const float4*>(xk + qq * 128);
                xv[4 * qq] = v.x;
                xv[4 * qq + 1] = v.y;
                xv[4 * qq + 2] = v.z;
                xv[4 * qq + 3] = v.w;
            }
#pragma unroll
            for (int r = 0; r < R; ++r) {
                s[r] = make_uint4(0u, 0u, 0u, 0u);
                c[r] = make_uint2(0x11111111u, 0x11111111u);
                if (active && (exec_u32)r < valid) {
                    s[r] = *reinterpret_cast<const uint4*>(sd + r * 512 + lane * 16);
                    c[r] = exec_mask_pad(*reinterpret_cast<const uint2*>(sd + 2048 + r * 256 + lane * 8), k0, K);
                }
            }
        }
        exec_u32 plain = 0u;
#pragma unroll
        for (int r = 0; r < R; ++r) plain |= (exec_u32)exec_plain16(c[r]) << r;
        plain = __reduce_and_sync(EXEC_FULL, plain);
        float acc[R];
        auto fma_row = [&](int r, const exec_u32(&w)[8]) {
            float a = 0.0f;
#pragma unroll
            for (int p = 0; p < 8; ++p) {
                a = __fmaf_rn(exec_lo(w[p]), xv[2 * p], a);
                a = __fmaf_rn(exec_hi(w[p]), xv[2 * p + 1], a);
            }
            acc[r] = a;
        };
        if (plain == (1u << R) - 1u) {
#pragma unroll
            for (int r = 0; r < R; ++r) {
                exec_u32 w[8];
                exec_pairs16_fast(c[r], s[r], exec_b2((b0 >> (8 * r)) & 0xffu), w);
                fma_row(r, w);
            }
        } else {
            __syncwarp();  // the escape area is written
#pragma unroll
            for (int r = 0; r < R; ++r) {
                const exec_u32 rb = (b0 >> (8 * r)) & 0xffu;
                exec_u32 w[8];
                if ((plain >> r) & 1u) {
                    exec_pairs16_fast(c[r], s[r], exec_b2(rb), w);
                } else {
                    const exec_u32 n15 = exec_count15(c[r].x) + exec_count15(c[r].y);
                    const exec_u32 before = exec_warp_excl(n15, lane);
                    const exec_u32 t0 = __shfl_sync(EXEC_FULL, st0, r);
                    exec_pairs16_general_pf(c[r], s[r], rb, escs + r * 8, esc, t0, before, w);
                }
                fma_row(r, w);
            }
        }
        __syncwarp();  // every lane is done with the stage and the escape area
        cstage = cstage + 1 == (exec_u32)D ? 0u : cstage + 1;
        phase ^= cstage == 0u ? 1u : 0u;
        st0 = st1;
        st1 = st2;
        b0 = b1;
        b1 = b2;
        eb0 = eb1;
        eb1 = eb2;
        const float P = exec_tree<R>(acc, lane);
        const exec_u32 idx = exec_tree_index<R>(lane);
        if (G == 1) {
            S = __fadd_rn(S, P);
        } else if (exec_tree_writer<R>(lane)) {
            pbuf[((exec_u64)par * R + idx) * CB + cb] = P;
        }
        xk += 512;
        if (++cb == hi) {
            if (G == 1) {
                const exec_u64 m = rg * R + idx;
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
                if (q == 0 && lane < (exec_u32)R) {
                    const exec_u64 m = rg * R + lane;
                    if (m < M && ncols > 0) {
                        float t = 0.0f;
                        const float* pp = pbuf + ((exec_u64)par * R + lane) * CB;
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
}

// Same arguments as EXEC_MV3 (ldx, ldy unused: one column).
#define EXEC_BULK(NAME, D)                                                                                   \
    extern "C" __global__ void __launch_bounds__(512, 1)                                                     \
        NAME(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes, const exec_u8* __restrict__ base, \
             const exec_u32* __restrict__ esc_start, const exec_u8* __restrict__ esc, exec_u32 M, exec_u32 K,    \
             const float* __restrict__ x, exec_u64 ldx, exec_u32 ncols, const float* __restrict__ bias,          \
             void* __restrict__ y, exec_u64 ldy, int out_bf16, exec_u32 G) {                                     \
        exec_bulk_body<D>(sm, codes, base, esc_start, esc, M, K, x, ncols, bias, y, out_bf16, G);             \
    }

EXEC_BULK(exec_matvec_bulk_d4, 4)
EXEC_BULK(exec_matvec_bulk_d3, 3)
