// Execution layout: the panel kernel of the bounded batched matvec on tensor cores (spec 19, 20.15),
// used for 33..64 columns per decode. The stream, step, tile and strip kernels load each warp's
// activation fragments from L1/L2 (N / 8 bytes per weight: 8 at N = 64, mostly L2 hits at K =
// 4096: the tile kernel's L1 hit rate was 47% on 6144x4096); here a CTA of EXEC_PN_WARPS warps
// stages the activations of one item's 128 columns in shared memory once, beside its warps' items
// (a panel of 8 row groups of 16 rows, same columns), so the L2 reads of activations per weight
// drop 8-fold and the fragments come from shared memory without bank conflicts; a CTA barrier
// per item (session 11: +22% against the tile kernel at 64 columns, docs/gpu.md). Work unit: a
// panel x one of `splits` equal ranges of its items (exec/panel.rs `panel_plan`); with splits > 1
// the units write f32 partial sums and exec_tensor_panel_sum adds them in split order (spec 19
// allows any order; this one is fixed), then the bias and the conversion. Same operand mapping,
// k permutation, item decode and patch list as the strip and stream kernels (exec_tensor.cu:
// exec_tc_rows, exec_tc_copy_item, exec_tc_item, exec_tc_decode).

#define EXEC_PN_WARPS 8

// Byte offset of the 16-byte piece p (activations 8 p .. 8 p + 7 of the item's 128 columns) of
// column n in the staged activations: lane (g = n & 7, t = p >> 2) reads it as half p & 1 of its
// chunk j = (p >> 1) & 1 of n-tile n >> 3, so one warp read of (n-tile, j, half) is 512
// contiguous bytes, one per lane.
__device__ __forceinline__ exec_u32 exec_pn_slot(exec_u32 n, exec_u32 p) {
    return ((((n >> 3) * 2u + ((p >> 1) & 1u)) * 2u + (p & 1u)) * 32u + (n & 7u) * 4u + (p >> 2)) * 16u;
}

// cp.async of 16 bytes, or 16 zero bytes when !valid (src-size 0 reads nothing; src stays a
// mapped address all the same).
__device__ __forceinline__ void exec_cp16z(exec_u32 dst, const void* src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16u : 0u)
                 : "memory");
}

// RG row groups per warp (a panel of W x RG row groups): 1, or 2, which decodes both groups' chunk
// before the mma, so each activation fragment read from shared memory feeds 2 mma.
template <int NT, int D, int RG = 1>
__device__ __forceinline__ void exec_pn_body(EXEC_MATVEC_PARAMS(exec_u16), const exec_u32* __restrict__ poff,
                                             const uint2* __restrict__ pent, float* __restrict__ part, exec_u32 splits) {
    constexpr exec_u32 W = EXEC_PN_WARPS, STAGE = W * RG * EXEC_TC_STAGE + NT * 2048u;
    extern __shared__ __align__(16) exec_u8 exec_stage[];
    const exec_u32 K16 = (K + 15u) & ~15u;
    const exec_u32 CB = (K + 511u) >> 9;
    const exec_u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const exec_u32 g = lane >> 2, t = lane & 3u;
    const exec_u32 ngroups = (exec_u32)(((exec_u64)M + 15) / 16);  // M <= 2^31 (spec 20.2)
    const exec_u32 nitg = EXEC_ITEM_COLUMNS(K16, CB);
    const exec_u32 units = (ngroups + W * RG - 1) / (W * RG) * splits;
    const exec_u32 per = (nitg + splits - 1) / splits;  // items per split (the host keeps every split non-empty)
    const exec_u32 sbase = exec_sa(exec_stage);

    // issue side: the same (unit, item) sequence as the compute loop
    exec_u32 iu = blockIdx.x, iit = 0, iend = 0, igr = 0, istage = 0;
    ExecTcRows rows[RG] = {};
    auto unit = [&]() {
        if (iu < units) {
            iit = (iu % splits) * per;
            iend = min(nitg, iit + per);
            igr = ((iu / splits) * W + warp) * RG;
#pragma unroll
            for (int r = 0; r < RG; ++r) rows[r] = exec_tc_rows(sm, codes, ((exec_u64)igr + r) * 16, M, K16, lane);
        }
    };
    unit();
    auto issue = [&]() {
        if (iu < units) {
            const exec_u32 sd = sbase + istage * STAGE, k0 = iit * 128u;
#pragma unroll
            for (int r = 0; r < RG; ++r)
                if (rows[r].valid != 0u)
                    exec_tc_copy_item(sd + (warp * RG + r) * EXEC_TC_STAGE, rows[r], k0, K16, lane,
                                      poff + (((exec_u64)igr + r) * CB * 4 + iit));
#pragma unroll
            for (exec_u32 i = threadIdx.x; i < NT * 128u; i += W * 32u) {
                const exec_u32 n = i >> 4, p = i & 15u;
                const bool v = n < ncols && k0 + 8u * p < K16;
                exec_cp16z(sd + W * RG * EXEC_TC_STAGE + exec_pn_slot(n, p), v ? x + (exec_u64)n * ldx + k0 + 8u * p : x, v);
            }
            if (++iit >= iend) {
                iu += gridDim.x;
                unit();
            }
        }
        exec_stage_next<D>(istage);
    };
#pragma unroll
    for (int d = 0; d < D - 1; ++d) issue();

    exec_u32 cstage = 0;
    for (exec_u32 u = blockIdx.x; u < units; u += gridDim.x) {
        const exec_u32 s = u % splits, gr = ((u / splits) * W + warp) * RG;
        const exec_u32 it0 = s * per, it1 = min(nitg, it0 + per);
        exec_u32 rbase[RG][2];
        bool rv[RG][2];
#pragma unroll
        for (int r = 0; r < RG; ++r) exec_tc_row_bases(base, gr + r, M, g, rv[r], rbase[r]);
        float acc[RG][NT][4] = {};
        for (exec_u32 it = it0; it < it1; ++it) {
            // every thread's copies of this item have landed, and every warp is done with the
            // stage the issue below refills (the previous item's)
            exec_cp_wait<D - 2>();
            __syncthreads();
            issue();
            const exec_u8* sd = exec_stage + cstage * STAGE;
            cstage = cstage + 1 == (exec_u32)D ? 0u : cstage + 1;
            const exec_u8* xs = sd + W * RG * EXEC_TC_STAGE + lane * 16u;
            const exec_u32 kc = it * 128u + 32u * t;
            // the staged fragments of chunk j, half hf
            auto frag = [&](exec_u32 j, int hf, uint4 (&v)[NT]) {
#pragma unroll
                for (int nt = 0; nt < NT; ++nt) v[nt] = *reinterpret_cast<const uint4*>(xs + ((nt * 2 + j) * 2 + hf) * 512u);
            };
            if (RG == 1 || gr + 1 >= ngroups) {  // one row group (the last of a short panel)
                if (gr < ngroups)
                    exec_tc_item<0>(sd + warp * RG * EXEC_TC_STAGE, rv[0], rbase[0], kc, K16, g, t, lane, esc, pent,
                                    [&](exec_u32 j, const exec_u32 (&w)[2][8]) {
#pragma unroll
                                        for (int hf = 0; hf < 2; ++hf) {  // half the fragments at a time (registers)
                                            uint4 v[NT];
                                            frag(j, hf, v);
                                            exec_tc_mma8<NT>(acc[0], w[0], w[1], v, hf);
                                        }
                                    });
            } else {  // two: the first group's pairs kept, the fragments read once for both
                exec_u32 w0[2][2][8];
                exec_tc_item<0>(sd + warp * RG * EXEC_TC_STAGE, rv[0], rbase[0], kc, K16, g, t, lane, esc, pent,
                                [&](exec_u32 j, const exec_u32 (&w)[2][8]) {
#pragma unroll
                                    for (int h = 0; h < 2; ++h)
#pragma unroll
                                        for (int p = 0; p < 8; ++p) w0[j][h][p] = w[h][p];
                                });
                exec_tc_item<0>(sd + (warp * RG + 1) * EXEC_TC_STAGE, rv[RG - 1], rbase[RG - 1], kc, K16, g, t, lane, esc,
                                pent, [&](exec_u32 j, const exec_u32 (&w)[2][8]) {
#pragma unroll
                                    for (int hf = 0; hf < 2; ++hf) {
                                        uint4 v[NT];
                                        frag(j, hf, v);
                                        exec_tc_mma8<NT>(acc[0], w0[j][0], w0[j][1], v, hf);
                                        exec_tc_mma8<NT>(acc[RG - 1], w[0], w[1], v, hf);
                                    }
                                });
            }
        }
#pragma unroll
        for (int r = 0; r < RG; ++r) {
            if (gr + r >= ngroups) continue;
#pragma unroll
            for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    const exec_u32 m = (gr + r) * 16 + g + 8u * (q >> 1), n = 8u * nt + 2u * t + (q & 1);
                    if (m >= M || n >= ncols) continue;
                    if (splits > 1) {
                        part[((exec_u64)s * ncols + n) * M + m] = acc[r][nt][q];
                    } else {
                        exec_output(acc[r][nt][q], m, n, ldy, bias, y, out_bf16);
                    }
                }
        }
    }
    exec_cp_wait<0>();
}

// Parameters: EXEC_MATVEC_PARAMS, the patch list's offsets and entries (exec_derived.cu), the f32
// partial sums [splits][ncols][M] (unused when splits == 1) and the splits.
#define EXEC_PN(NAME, NT, D, RG)                                                                             \
    extern "C" __global__ void __launch_bounds__(EXEC_PN_WARPS * 32, 1)                                      \
        NAME(EXEC_MATVEC_PARAMS(exec_u16), const exec_u32* __restrict__ poff, const uint2* __restrict__ pent, \
             float* __restrict__ part, exec_u32 splits) {                                                    \
        exec_pn_body<NT, D, RG>(sm, codes, base, esc_start, esc, M, K, x, ldx, ncols, bias, y, ldy, out_bf16, poff,  \
                                pent, part, splits);                                                         \
    }

EXEC_PN(exec_tensor_panel_n8, 8, 4, 1)
// 2 row groups per warp (panels of 16 row groups, 3 stages of 66 KB): each activation fragment
// read from shared memory feeds 2 mma, and a CTA barrier covers twice the weights (session 11:
// +7% at 64 columns where its panels fill the device; exec/panel.rs chooses).
EXEC_PN(exec_tensor_panel_rg2_n8, 8, 3, 2)

// The panel kernel's outputs where splits > 1: y[n][m] = the partial sums of splits 0, 1, ... added
// in that order, then the bias, then the conversion (BF16 by RNE, spec 15.4.6). Grid (ceil(M /
// blockDim.x), ncols).
extern "C" __global__ void exec_tensor_panel_sum(const float* __restrict__ part, exec_u32 splits, exec_u32 M,
                                                 exec_u32 ncols, const float* __restrict__ bias, void* __restrict__ y,
                                                 exec_u64 ldy, int out_bf16) {
    const exec_u32 m = blockIdx.x * blockDim.x + threadIdx.x, n = blockIdx.y;
    if (m >= M || n >= ncols) return;
    float sum = 0.0f;
    for (exec_u32 s = 0; s < splits; ++s) sum = __fadd_rn(sum, part[((exec_u64)s * ncols + n) * M + m]);
    exec_output(sum, m, (exec_u64)n, ldy, bias, y, out_bf16);
}
