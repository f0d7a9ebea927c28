// Execution layout, bench: the tile kernel of the bounded batched matvec on tensor cores (spec 19,
// 20.15), the 33..64-column kernel until session 11 (superseded by exec_tensor_panel.cu; the
// bench's `bounded-tile` at every batch size); same operand mapping, k permutation and escape
// patching as the stream kernel of exec_tensor.cu (whose helpers it uses).

// ---- batched, bounded (spec 19), tile kernel: an item is a whole tile of a 16-row group (8 steps of
// 64 columns), so the copies (32 per thread, immediate offsets), the wait and the tile's escape
// bookkeeping are paid once per tile instead of once per step. CTAs of W warps are persistent over
// 16-row groups; warps split the tiles and add their partial sums in warp order (shared memory). ----
#define EXEC_MM3_STAGE (16 * 768 + 64)

template <int NT, int D>
__device__ __forceinline__ void exec_mm3_body(EXEC_MATVEC_PARAMS(exec_u16)) {
    constexpr int COLS = NT * 8;
    static_assert((D & (D - 1)) == 0, "stage index uses & (D - 1)");
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
                exec_load_b<NT>(x, ldx, ncols, K16, k0, g, xa, xb);
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
#pragma unroll
                for (int h = 0; h < 2; ++h) exec_pairs16_fast(cv[h], sv[h], exec_b2(rbase[h]), w[h]);
                if (!__all_sync(EXEC_FULL, plain)) {
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        const exec_u32 n = exec_count15(cv[h].x) + exec_count15(cv[h].y);
                        const exec_u32 off = exec_tc_esc_offset(n, t, tesc[h], rel[h]);
                        if (!exec_plain16(cv[h])) exec_patch_pairs(cv[h], sv[h], rbase[h], esc, off, w[h]);
                    }
                }
                exec_tc_mma16<NT>(acc, w[0], w[1], xa, xb);
            }
        }
        exec_tc_store_acc<NT, COLS>(red + (exec_u64)warp * 16 * COLS, acc, 0u, g, t);
        exec_tc_rowgroup_out<16, COLS>(red, gr * 16, M, ncols, nwarps, bias, y, ldy, out_bf16);
    }
    exec_cp_wait<0>();
}

#define EXEC_MM3(NAME, NT, D, THREADS)                                                                      \
    extern "C" __global__ void __launch_bounds__(THREADS, 1)                                                \
        NAME(EXEC_MATVEC_PARAMS(exec_u16)) {                                                             \
        exec_mm3_body<NT, D>(sm, codes, base, esc_start, esc, M, K, x, ldx, ncols, bias, y, ldy, out_bf16);      \
    }

EXEC_MM3(bench_exec_tensor_tile_n1, 1, 2, 256)
EXEC_MM3(bench_exec_tensor_tile_n2, 2, 2, 256)
EXEC_MM3(bench_exec_tensor_tile_n4, 4, 2, 256)
EXEC_MM3(bench_exec_tensor_tile_n8, 8, 2, 256)
