// Bench only (feature `bench`): superseded execution-layout kernels kept as measured baselines
// (docs/gpu.md, "Execution layout"): version 1 (short CTAs of R rows whose warps split the
// tiles; one load batch per warp) for the exact matvec and dequant, version 2's tensor-core
// kernel (cp.async items of one 64-column step). Same ABI as the production kernels.

template <int NB, int RW, int U>
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
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const exec_u32 cb = cb0 + (exec_u32)u * nwarps;
            const exec_u32 k0 = cb * 512u + lane * 16u;
#pragma unroll
            for (int r = 0; r < RW; ++r) {
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
            for (int r = 0; r < RW; ++r)
                exec_decode_lane(c[u][r], s[u][r], rbase[r], lane, esc_start, (m0 + r) * CB + cb, esc, w[r]);
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
        if (bias) acc = __fadd_rn(acc, bias[m]);
        if (out_bf16)
            reinterpret_cast<exec_u16*>(y)[n * ldy + m] = exec_bf16_rne(acc);
        else
            reinterpret_cast<float*>(y)[n * ldy + m] = acc;
    }
}

#define EXEC_MATVEC(NAME, NB, RW, U, THREADS, MINB)                                                          \
    extern "C" __global__ void __launch_bounds__(THREADS, MINB)                                             \
        NAME(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes, const exec_u8* __restrict__ base, \
             const exec_u32* __restrict__ esc_start, const exec_u8* __restrict__ esc, exec_u32 M, exec_u32 K,    \
             const float* __restrict__ x, exec_u64 ldx, exec_u32 ncols, const float* __restrict__ bias,          \
             void* __restrict__ y, exec_u64 ldy, int out_bf16) {                                                 \
        exec_matvec_body<NB, RW, U>(sm, codes, base, esc_start, esc, M, K, x, ldx, ncols, bias, y, ldy, out_bf16); \
    }

EXEC_MATVEC(bench_exec_matvec_rows_r2u2, 1, 2, 2, 256, 4)
EXEC_MATVEC(bench_exec_matvec_rows_r4u1, 1, 4, 1, 256, 4)

template <int U, bool STREAM>
__device__ __forceinline__ void exec_dequant_body(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes,
                                                  const exec_u8* __restrict__ base,
                                                  const exec_u32* __restrict__ esc_start,
                                                  const exec_u8* __restrict__ esc, exec_u32 K,
                                                  const exec_u32* __restrict__ rows, exec_u32 nrows,
                                                  exec_u16* __restrict__ out, exec_u64 ldo) {
    const exec_u32 K16 = (K + 15u) & ~15u;
    const exec_u32 CB = (K + 511u) >> 9;
    const exec_u32 lane = threadIdx.x & 31u;
    const exec_u64 items = (exec_u64)nrows * CB;
    const exec_u64 warp_id = ((exec_u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const exec_u64 first = warp_id * U;
    if (first >= items) return;  // warp-uniform

    uint4 s[U];
    uint2 c[U];
    exec_u32 b[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const exec_u64 it = first + u;
        const exec_u64 i = it / CB;
        const exec_u32 cb = (exec_u32)(it - i * CB);
        const exec_u32 k0 = cb * 512u + lane * 16u;
        s[u] = make_uint4(0u, 0u, 0u, 0u);
        c[u] = make_uint2(0x11111111u, 0x11111111u);
        b[u] = 1u;
        if (it < items) {
            const exec_u64 row = rows ? (exec_u64)rows[i] : i;
            b[u] = base[row];
            if (k0 < K16) {
                s[u] = __ldg(reinterpret_cast<const uint4*>(sm + row * K16 + k0));
                c[u] = __ldg(reinterpret_cast<const uint2*>(codes + row * (K16 >> 1) + (k0 >> 1)));
            }
        }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const exec_u64 it = first + u;
        if (it >= items) break;  // warp-uniform
        const exec_u64 i = it / CB;
        const exec_u32 cb = (exec_u32)(it - i * CB);
        const exec_u32 k0 = cb * 512u + lane * 16u;
        const exec_u64 row = rows ? (exec_u64)rows[i] : i;
        exec_u32 w[8];
        exec_decode_lane(c[u], s[u], b[u], lane, esc_start, row * CB + cb, esc, w);
        if (k0 < K16) {
            uint4* o = reinterpret_cast<uint4*>(out + i * ldo + k0);
            const uint4 lo = make_uint4(w[0], w[1], w[2], w[3]);
            const uint4 hi = make_uint4(w[4], w[5], w[6], w[7]);
            if (STREAM) {
                __stcs(o, lo);
                __stcs(o + 1, hi);
            } else {
                o[0] = lo;
                o[1] = hi;
            }
        }
    }
}

#define EXEC_DEQUANT(NAME, U, STREAM)                                                                     \
    extern "C" __global__ void __launch_bounds__(256)                                                    \
        NAME(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes, const exec_u8* __restrict__ base, \
             const exec_u32* __restrict__ esc_start, const exec_u8* __restrict__ esc, exec_u32 K,            \
             const exec_u32* __restrict__ rows, exec_u32 nrows, exec_u16* __restrict__ out, exec_u64 ldo) {  \
        exec_dequant_body<U, STREAM>(sm, codes, base, esc_start, esc, K, rows, nrows, out, ldo);            \
    }

EXEC_DEQUANT(bench_exec_dequant_rows, 2, false)

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

EXEC_MMAS(bench_exec_tensor_step_n2, 1, 2, 4, 2)
EXEC_MMAS(bench_exec_tensor_step_n4, 1, 4, 4, 2)
