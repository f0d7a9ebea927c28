// Bench only: variants of the stream tensor-core kernel (kernels/exec_tensor.cu, exec_tc_body),
// prepared for one device call (docs/gpu.md, "session 6, late"). Same items, stages, decode,
// patch and mma sequence as the production kernel, and the same warp-order sum of the partials,
// so every output is bit-identical to exec_tensor_stream_n1 / _n2 (and within spec 19's bound).
// What changes is only where the waits are:
//   XPF: the activation fragments (B operand) of the warp's next item are loaded from L2 while
//        this item still runs: chunk j's fragments of the next item right after this item's chunk-j
//        mma reads them (same registers, no second set: a second set spilled at 16 columns), i.e.
//        about half an item ahead (~250 warp instructions, thousands of cycles at 16 warps per SM);
//        the production kernel loads them at the top of the item that uses them, ~150
//        instructions ahead of their first mma (their L2 latency on every item's critical path).
//   RED: the row-group reduction without the two CTA-wide barriers: warps store their partials
//        and arrive (bar.arrive, no wait) on named barrier 1; one reducer warp per row group
//        (rotating) waits on it, adds the partials in warp order, writes the outputs and arrives
//        on barrier 2, which the writers of the next row group wait on before they overwrite the
//        partials (one row group of slack absorbs load imbalance between warps).

__device__ __forceinline__ void bench_tc_bar_sync(exec_u32 id, exec_u32 n) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory");
}
__device__ __forceinline__ void bench_tc_bar_arrive(exec_u32 id, exec_u32 n) {
    asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(n) : "memory");
}

// The B fragments of one item: column n = 8 nt + g, the 32 activations kc .. kc + 31 of this
// thread (zero past ncols or K16), as the production kernel loads them.
template <int NT>
__device__ __forceinline__ void bench_tc_load_x(const exec_u16* __restrict__ x, exec_u64 ldx, exec_u32 ncols, exec_u32 K16,
                                                exec_u32 kc, exec_u32 g, uint4 (&xv)[NT][4]) {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
        const exec_u32 n = nt * 8u + g;
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            xv[nt][2 * j] = xv[nt][2 * j + 1] = make_uint4(0u, 0u, 0u, 0u);
            if (n < ncols && kc + 16u * j < K16) {
                const uint4* xp = reinterpret_cast<const uint4*>(x + (exec_u64)n * ldx + kc + 16u * j);
                xv[nt][2 * j] = __ldg(xp);
                xv[nt][2 * j + 1] = __ldg(xp + 1);
            }
        }
    }
}

template <int NT, int D, bool XPF, bool RED>
__device__ __forceinline__ void bench_tc_body(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes,
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
    const exec_u32 ngroups = (exec_u32)(((exec_u64)M + 15) / 16);  // M <= 2^31 (spec 20.2)
    const exec_u32 st = exec_sa(exec_stage) + warp * (D * EXEC_TC_STAGE);
    const exec_u8* sb = exec_stage + (exec_u64)warp * D * EXEC_TC_STAGE;
    float* red = reinterpret_cast<float*>(exec_stage + (exec_u64)nwarps * D * EXEC_TC_STAGE);

    // issue side: as exec_tc_body (kernels/exec_tensor.cu)
    exec_u32 igr = blockIdx.x, icb = warp, isub = 0, istage = 0;
    exec_u32 irow[2];
    auto rowgroup = [&]() {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const exec_u64 m = (exec_u64)igr * 16 + 8 * h + g;
            irow[h] = m < M ? (exec_u32)m : ~0u;
        }
    };
    rowgroup();
    auto issue = [&]() {
        if (igr < ngroups && icb < CB) {
            const exec_u32 sd = st + istage * EXEC_TC_STAGE;
            const exec_u32 off = icb * 512u + isub * 128u;
#pragma unroll
            for (int h = 0; h < 2; ++h)
                if (irow[h] != ~0u) {
                    const exec_u32 row = 8 * h + g;
                    const exec_u64 roff = (exec_u64)irow[h] * K16;
#pragma unroll
                    for (int j = 0; j < 2; ++j)
                        if (off + 32u * t + 16u * j < K16) {
                            exec_cp16(sd + row * 128 + 32 * t + 16 * j, sm + roff + off + 32u * t + 16 * j);
                            exec_cp8(sd + EXEC_TC_CODES + row * 64 + 16 * t + 8 * j,
                                     codes + (roff >> 1) + (off >> 1) + 16u * t + 8 * j);
                        }
                    if (isub == 0u && t == 0u)
                        exec_cp4(sd + EXEC_TC_ESC + row * 4, esc_start + (exec_u64)irow[h] * CB + icb);
                }
            ++isub;
            if (isub == 4u || off + 128u >= K16) {
                isub = 0;
                icb += nwarps;
                if (icb >= CB) {
                    icb = warp;
                    igr += gridDim.x;
                    rowgroup();
                }
            }
        }
        istage = istage + 1 == (exec_u32)D ? 0u : istage + 1;
        exec_cp_commit();
    };
#pragma unroll
    for (int d = 0; d < D - 1; ++d) issue();

    // XPF: xv holds the fragments of the warp's next item (first: tile warp, sub-block 0); the
    // item sequence of x repeats per row group (tiles warp, warp + nwarps, ...)
    uint4 xv[NT][4];
    if (XPF) bench_tc_load_x<NT>(x, ldx, ncols, K16, warp * 512u + 32u * t, g, xv);

    exec_u32 cstage = 0, ngr = 0;
    for (exec_u32 gr = blockIdx.x; gr < ngroups; gr += gridDim.x, ++ngr) {
        exec_u32 rbase[2];
        bool rv[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const exec_u64 m = (exec_u64)gr * 16 + 8 * h + g;
            rv[h] = m < M;
            rbase[h] = rv[h] ? (exec_u32)__ldg(base + m) : 1u;
        }
        float acc[NT][4];
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int i = 0; i < 4; ++i) acc[nt][i] = 0.0f;
        for (exec_u32 cb = warp; cb < CB; cb += nwarps) {
            exec_u32 rel[2] = {0u, 0u}, tesc[2] = {0u, 0u};
            for (exec_u32 sub = 0; sub < 4u && cb * 512u + sub * 128u < K16; ++sub) {
                const exec_u32 kc = cb * 512u + sub * 128u + 32u * t;
                // XPF: the warp's next item: next sub-block, else next tile, else the first tile
                // again (next row group; loaded even past the last one: harmless)
                exec_u32 nkc = 0u;
                if (XPF) {
                    exec_u32 ncb = cb, nsub = sub + 1u;
                    if (nsub == 4u || cb * 512u + nsub * 128u >= K16) {
                        nsub = 0u;
                        ncb = cb + nwarps < CB ? cb + nwarps : warp;
                    }
                    nkc = ncb * 512u + nsub * 128u + 32u * t;
                } else {
                    bench_tc_load_x<NT>(x, ldx, ncols, K16, kc, g, xv);
                }
                issue();
                exec_cp_wait<D - 1>();
                const exec_u8* sd = sb + cstage * EXEC_TC_STAGE;
                cstage = cstage + 1 == (exec_u32)D ? 0u : cstage + 1;
                uint4 sv[2][2];
                uint2 cv[2][2];
                bool plain = true;
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const exec_u32 row = 8 * h + g;
#pragma unroll
                    for (int j = 0; j < 2; ++j) {
                        sv[h][j] = make_uint4(0u, 0u, 0u, 0u);
                        cv[h][j] = make_uint2(0x11111111u, 0x11111111u);  // no weight: code 1, sm 0, x 0
                        if (rv[h] && kc + 16u * j < K16) {
                            sv[h][j] = *reinterpret_cast<const uint4*>(sd + row * 128 + 32 * t + 16 * j);
                            cv[h][j] = *reinterpret_cast<const uint2*>(sd + EXEC_TC_CODES + row * 64 + 16 * t + 8 * j);
                        }
                        plain = plain && exec_plain16(cv[h][j]);
                    }
                    if (sub == 0u && t == 0u && rv[h]) tesc[h] = *reinterpret_cast<const exec_u32*>(sd + EXEC_TC_ESC + row * 4);
                }
                const bool patch = !__all_sync(EXEC_FULL, plain);
                exec_u32 eoff[2] = {0u, 0u};  // E <= 2^32 - 1 (spec 20.2)
                exec_u32 n0[2] = {0u, 0u};
                if (patch) {
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        n0[h] = exec_count15(cv[h][0].x) + exec_count15(cv[h][0].y);
                        const exec_u32 n = n0[h] + exec_count15(cv[h][1].x) + exec_count15(cv[h][1].y);
                        eoff[h] = exec_tc_esc_offset(n, t, tesc[h], rel[h]);
                    }
                }
#pragma unroll
                for (int j = 0; j < 2; ++j) {
                    exec_u32 w[2][8];
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        exec_pairs16_fast(cv[h][j], sv[h][j], exec_b2(rbase[h]), w[h]);
                        if (patch && !exec_plain16(cv[h][j]))
                            exec_tc_patch(cv[h][j], sv[h][j], rbase[h], esc, eoff[h] + (j ? n0[h] : 0u), w[h]);
                    }
#pragma unroll
                    for (int nt = 0; nt < NT; ++nt) {
                        exec_tc_mma16(acc[nt], w[0], w[1], xv[nt][2 * j], xv[nt][2 * j + 1]);
                        if (XPF) {
                            const exec_u32 n = nt * 8u + g;
                            xv[nt][2 * j] = xv[nt][2 * j + 1] = make_uint4(0u, 0u, 0u, 0u);
                            if (n < ncols && nkc + 16u * j < K16) {
                                const uint4* xp = reinterpret_cast<const uint4*>(x + (exec_u64)n * ldx + nkc + 16u * j);
                                xv[nt][2 * j] = __ldg(xp);
                                xv[nt][2 * j + 1] = __ldg(xp + 1);
                            }
                        }
                    }
                }
            }
        }
        float* rw = red + (exec_u64)warp * 16 * COLS;
        if (RED) {
            // the previous row group's reducer has read the partials (barrier 2: that reducer
            // arrived, the other warps wait; every thread meets each barrier generation once)
            if (ngr > 0u && warp != (ngr - 1u) % nwarps) bench_tc_bar_sync(2u, blockDim.x);
#pragma unroll
            for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                for (int i = 0; i < 4; ++i) rw[(g + 8u * (i >> 1)) * COLS + 8u * nt + 2u * t + (i & 1)] = acc[nt][i];
            if (warp == ngr % nwarps) {
                bench_tc_bar_sync(1u, blockDim.x);
                const exec_u64 row0 = (exec_u64)gr * 16;
                for (exec_u32 idx = lane; idx < (exec_u32)(16 * COLS); idx += 32u) {
                    const exec_u32 r = idx / COLS, n = idx % COLS;
                    const exec_u64 m = row0 + r;
                    if (m >= M || n >= ncols) continue;
                    float sum = 0.0f;
                    for (exec_u32 wi = 0; wi < nwarps; ++wi) sum = __fadd_rn(sum, red[(exec_u64)wi * 16 * COLS + idx]);
                    if (bias) sum = __fadd_rn(sum, bias[m]);
                    if (out_bf16)
                        reinterpret_cast<exec_u16*>(y)[n * ldy + m] = exec_bf16_rne(sum);
                    else
                        reinterpret_cast<float*>(y)[n * ldy + m] = sum;
                }
                __syncwarp();  // bar.arrive is .aligned: the whole warp, converged
                bench_tc_bar_arrive(2u, blockDim.x);
            } else {
                bench_tc_bar_arrive(1u, blockDim.x);
            }
        } else {
#pragma unroll
            for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                for (int i = 0; i < 4; ++i) rw[(g + 8u * (i >> 1)) * COLS + 8u * nt + 2u * t + (i & 1)] = acc[nt][i];
            exec_tc_rowgroup_out<16, COLS>(red, (exec_u64)gr * 16, M, ncols, nwarps, bias, y, ldy, out_bf16);
        }
    }
    // RED: complete barrier 2's last generation (the last reducer arrived on it)
    if (RED && ngr > 0u && warp != (ngr - 1u) % nwarps) bench_tc_bar_sync(2u, blockDim.x);
    exec_cp_wait<0>();
}

#define BENCH_TC(NAME, NT, D, XPF, RED)                                                                      \
    extern "C" __global__ void __launch_bounds__(256, 2)                                                      \
        NAME(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes, const exec_u8* __restrict__ base, \
             const exec_u32* __restrict__ esc_start, const exec_u8* __restrict__ esc, exec_u32 M, exec_u32 K,    \
             const exec_u16* __restrict__ x, exec_u64 ldx, exec_u32 ncols, const float* __restrict__ bias,       \
             void* __restrict__ y, exec_u64 ldy, int out_bf16) {                                                 \
        bench_tc_body<NT, D, XPF, RED>(sm, codes, base, esc_start, esc, M, K, x, ldx, ncols, bias, y, ldy, out_bf16); \
    }

BENCH_TC(bench_exec_tc_xpf_n1, 1, 4, true, false)
BENCH_TC(bench_exec_tc_xpf_n2, 2, 4, true, false)
BENCH_TC(bench_exec_tc_xpfred_n1, 1, 4, true, true)
BENCH_TC(bench_exec_tc_xpfred_n2, 2, 4, true, true)
BENCH_TC(bench_exec_tc_red_n1, 1, 4, false, true)
BENCH_TC(bench_exec_tc_red_n2, 2, 4, false, true)
