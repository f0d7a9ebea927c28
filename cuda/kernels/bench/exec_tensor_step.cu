// Bench: the step kernel of the bounded batched matvec on tensor cores (spec 19, 20.15), the
// choice for 17..32 columns per decode until session 13, when the strip kernel
// (exec_tensor_strip.cu) replaced it (docs/gpu.md, "Execution layout"); at 32 columns
// (bench_exec_tensor_step_n4) and 16 (bench_exec_tensor_step_n2; the stream kernel replaced it
// there in session 9). It uses exec_tensor.cu's helpers; `ExecMatvecKernel::BoundedStep`, timed by
// `nwc-gpu-bench --exec-batch`.

// A warp's next tile in round-robin order: tiles warp, warp + W, ... of a row group, then the
// grid's next row group (the step kernel's issue side; the tile kernel, bench/exec_tensor_tile.cu,
// keeps the same lines inline, because the call changed its register allocation and it is session
// 11's timed baseline).
__device__ __forceinline__ void exec_tc_next_tile(exec_u32& icb, exec_u64& igr, exec_u32 CB, exec_u32 warp, exec_u32 nwarps) {
    icb += nwarps;
    if (icb >= CB) {
        icb = warp;
        igr += gridDim.x;
    }
}


// ---- batched, bounded (spec 19), step kernel: the k permutation and escape bookkeeping of the
// stream kernel, but a pipeline item is one 64-column step of 16 rows (RG = 1) or 32 rows
// (RG = 2), copied by each lane for itself; CTAs persistent over row groups whose warps split
// the tiles and add their partial sums in warp order through shared memory. ----
template <int RG>
struct ExecMmaStage {
    static constexpr int SM = 0, CODES = RG * 2 * 512, ESC = RG * 2 * 768, SIZE = RG * 2 * 768 + RG * 2 * 32;
};

template <int RG, int NT, int D>
__device__ __forceinline__ void exec_mmas_body(EXEC_MATVEC_PARAMS(exec_u16)) {
    typedef ExecMmaStage<RG> L;
    static_assert((D & (D - 1)) == 0, "stage index uses & (D - 1)");
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
                exec_tc_next_tile(icb, igr, CB, warp, nwarps);
            }
        }
        ++issued;
        exec_cp_commit();
    };
#pragma unroll
    for (int d = 0; d < D - 1; ++d) issue();

    // PF: B fragments prefetched one step ahead (registers: 8 per n-tile; not for NT = 4, which
    // already sits at the 128-register cap of two CTAs per SM)
    constexpr bool PF = NT <= 2;
    uint4 pxa[NT], pxb[NT];
    if (PF) exec_load_b<NT>(x, ldx, ncols, K16, warp * 512u + 16u * t, g, pxa, pxb);

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
                if (PF) {
                    // the activations of this step were loaded one step ahead; load the next
                    // step's (x is the same for every row group: the next k only depends on the
                    // step, the tile and the warp)
                    exec_u32 kn = cb * 512u + 64u * (s + 1u);
                    if (s + 1u >= 8u || kn >= K16) kn = cb + nwarps < CB ? (cb + nwarps) * 512u : warp * 512u;
                    kn += 16u * t;
#pragma unroll
                    for (int nt = 0; nt < NT; ++nt) {
                        xa[nt] = pxa[nt];
                        xb[nt] = pxb[nt];
                    }
                    exec_load_b<NT>(x, ldx, ncols, K16, kn, g, pxa, pxb);
                } else {
                    exec_load_b<NT>(x, ldx, ncols, K16, k0, g, xa, xb);
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
#pragma unroll
                for (int rg = 0; rg < RG; ++rg)
#pragma unroll
                    for (int h = 0; h < 2; ++h) exec_pairs16_fast(cv[rg][h], sv[rg][h], exec_b2(rbase[rg][h]), w[rg][h]);
                if (!__all_sync(EXEC_FULL, plain)) {
#pragma unroll
                    for (int rg = 0; rg < RG; ++rg)
#pragma unroll
                        for (int h = 0; h < 2; ++h) {
                            const exec_u32 n = exec_count15(cv[rg][h].x) + exec_count15(cv[rg][h].y);
                            const exec_u32 off = exec_tc_esc_offset(n, t, tesc[rg][h], rel[rg][h]);
                            if (!exec_plain16(cv[rg][h])) exec_patch_pairs(cv[rg][h], sv[rg][h], rbase[rg][h], esc, off, w[rg][h]);
                        }
                }
#pragma unroll
                for (int rg = 0; rg < RG; ++rg) exec_tc_mma16<NT>(acc[rg], w[rg][0], w[rg][1], xa, xb);
            }
        }
#pragma unroll
        for (int rg = 0; rg < RG; ++rg) exec_tc_store_acc<NT, COLS>(red + (exec_u64)warp * ROWS * COLS, acc[rg], 16u * rg, g, t);
        exec_tc_rowgroup_out<ROWS, COLS>(red, gr * ROWS, M, ncols, nwarps, bias, y, ldy, out_bf16);
    }
    exec_cp_wait<0>();
}

#define EXEC_MMAS(NAME, RG, NT, D, MINB)                                                                    \
    extern "C" __global__ void __launch_bounds__(256, MINB)                                                 \
        NAME(EXEC_MATVEC_PARAMS(exec_u16)) {                                                             \
        exec_mmas_body<RG, NT, D>(sm, codes, base, esc_start, esc, M, K, x, ldx, ncols, bias, y, ldy, out_bf16); \
    }

EXEC_MMAS(bench_exec_tensor_step_n4, 1, 4, 4, 2)
EXEC_MMAS(bench_exec_tensor_step_n2, 1, 2, 4, 2)

