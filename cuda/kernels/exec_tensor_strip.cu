// Execution layout: the strip kernel of the bounded batched matvec on tensor cores (spec 19,
// 20.15), up to 32 columns per decode. The stream kernel (bench/exec_tensor_stream.cu) copies
// every item through a cp.async stage in shared memory and reads it back; its probes
// (docs/gpu-history.md, session 8) put the decode plus the stage reads at 0.95-1.01x of cuBLAS
// before any mma. As the one-column strip kernel did for batch 1 (exec_matvec_strip.cu, session
// 12), here each lane loads its words straight from global memory into registers (ld.global.nc,
// no shared memory, no cp.async):
// - a CTA of W warps covers one row group of 16 rows and the item columns (128 columns: 4 per
//   tile, fewer in a short last tile) of one of `splits` equal ranges; warp w takes the range's
//   item columns w, w + W, ...; each item: the activation fragments of the NT n-tiles, the item's
//   words and patch-list range, the stream kernel's decode (exec_tc_decode, with the threads'
//   chunks interleaved: EXEC_TC_INTERLEAVE), the mma;
// - at the end the warps' partial sums meet in shared memory and are added in warp order (spec 19
//   allows any order; this one is fixed); with one split, then the bias and the output conversion,
//   else the f32 sum is written to part[split][n][m] and exec_tensor_panel_sum adds the splits in
//   order.
// W and splits come from exec/tensor_strip.rs. Shared memory: W x 16 x 8 NT f32. NT = 1, 2, 4:
// 8, 16, 32 columns per decode.

// One item: the decode of its words sv / cv (exec_tc_decode, with its patch-list range) and the mma
// into acc. xv: the item's activation fragments, or with XCHUNK (XN = 1, unused) each chunk's
// loaded as its mma need them (at 32 columns, 64 registers for the item's would not fit beside
// the words and the accumulators).
template <int NT, bool XCHUNK, int PROBE, bool AHEAD, int XN>
__device__ __forceinline__ void exec_tcs_item(const uint4 (&sv)[2][2], const uint2 (&cv)[2][2], const uint4 (&xv)[XN][4],
                                              const bool (&rv)[2], const exec_u32 (&rbase)[2], uint2 range, uint2 first, exec_u32 g, exec_u32 t,
                                              exec_u32 lane, const exec_u8* __restrict__ esc, const uint2* __restrict__ pent,
                                              const exec_u16* __restrict__ x, exec_u64 ldx, exec_u32 ncols, exec_u32 K16,
                                              exec_u32 c0, float (&acc)[NT][4]) {
    exec_tc_decode<PROBE, EXEC_TC_INTERLEAVE, AHEAD>(sv, cv, rv, rbase, range, g, t, lane, esc, pent, [&](exec_u32 j, const exec_u32 (&w)[2][8]) {
        uint4 xa[NT], xb[NT];
        if constexpr (!XCHUNK) {
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) {
                xa[nt] = xv[nt][2 * j];
                xb[nt] = xv[nt][2 * j + 1];
            }
        } else {
            exec_load_b<NT>(x, ldx, ncols, K16, c0 + 64u * j + 16u * t, g, xa, xb);
        }
        exec_tc_mma16<NT>(acc, w[0], w[1], xa, xb);
    }, first);
}

// The end of a CTA: the warps' partial sums meet in red (W x 16 x 8 NT f32) and are added in warp
// order; with one split, then the bias and the output conversion, else the f32 sum goes to
// part[split][n][m] for exec_tensor_panel_sum.
// CLUSTER: a split launch's CTAs of a row group are one cluster and add the splits themselves
// (exec_tc_cluster_out), part unused.
template <int NT, bool CLUSTER>
__device__ __forceinline__ void exec_tcs_finish(float* red, const float (&acc)[NT][4], exec_u32 warp, exec_u32 nwarps, exec_u32 gr,
                                                exec_u32 g, exec_u32 t, exec_u32 M, exec_u32 ncols, const float* __restrict__ bias,
                                                void* __restrict__ y, exec_u64 ldy, int out_bf16, float* __restrict__ part,
                                                exec_u32 split, exec_u32 splits) {
    constexpr int COLS = NT * 8;
    exec_tc_store_acc<NT, COLS>(red + (exec_u64)warp * 16 * COLS, acc, 0u, g, t);
#if __CUDA_ARCH__ >= 900
    if constexpr (CLUSTER) {
        if (splits > 1) {
            exec_tc_cluster_out<16, COLS>(red, (exec_u64)gr * 16, M, ncols, nwarps, bias, y, ldy, out_bf16, split, splits);
            return;
        }
    }
#endif
    if (splits == 1)
        exec_tc_rowgroup_out<16, COLS>(red, (exec_u64)gr * 16, M, ncols, nwarps, bias, y, ldy, out_bf16);
    else
        exec_tc_rowgroup_out<16, COLS, true>(red, (exec_u64)gr * 16, M, ncols, nwarps, bias, y, ldy, out_bf16, part, split);
}

// PROBE (bench only, kernels/bench/exec_tensor_variants.cu): 1 = the loaded words used as weights
// (no decode, no patch; a ceiling probe, not a matvec); production instantiates PROBE = 0 only.
// AHEAD (session 24; production at 16 columns only): the range and the first entry of the item's
// patch list come one item ahead (the next item's range with this item's loads, its first entry
// after this item's decode), so that no item waits for a load that depends on another before its
// decode. (The range alone one item ahead, at 8 and 32 columns, measured in session 25: -1.2% at
// 8, +0.5% at 32; removed.)
// CLUSTER (bench, session 28): launched in clusters of `splits` CTAs (exec_tcs_finish).
// EARLY: the next kernel released at the CTA's start instead of after its items (the
// `_release_start` entry points; exec/tensor_strip_launch.rs takes them where the launch fills at
// least 0.9 of the device's resident CTAs, session 31).
template <int NT, bool XCHUNK, int PROBE = 0, bool AHEAD = false, bool CLUSTER = false, bool EARLY = false>
__device__ __forceinline__ void exec_tcs_body(EXEC_MATVEC_PARAMS(exec_u16), const exec_u32* __restrict__ poff,
                                              const uint2* __restrict__ pent, float* __restrict__ part, exec_u32 splits) {
    extern __shared__ __align__(16) float exec_tcs_red[];
    // The CTA's row group gr and range [i0, i1) of item columns (the host keeps every split of the
    // item columns non-empty), the thread's rows g and g + 8 with their bases, and its pointers:
    // rows g and g + 8 of the row group at the thread's chunk offset 16 t, so an item's words are
    // at + c0 (sm) and + c0 / 2 (codes), chunk j = 1 at a further + 64 and + 32, and a whole item
    // (rows below M, columns below K16) takes 4 pointer adds and unpredicated loads (session 14).
    const exec_u32 K16 = (K + 15u) & ~15u, CB = (K + 511u) >> 9, nitg = EXEC_ITEM_COLUMNS(K16, CB);
    const exec_u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const exec_u32 g = lane >> 2, t = lane & 3u;
    const exec_u32 gr = blockIdx.x / splits, split = blockIdx.x % splits;
    const exec_u32 per = (nitg + splits - 1) / splits;
    const exec_u32 i0 = split * per, i1 = min(nitg, i0 + per);
    bool rv[2];
    exec_u32 rbase[2];
    exec_tc_row_bases(base, gr, M, g, rv, rbase);
    float acc[NT][4] = {};
    const bool rows = (exec_u64)gr * 16 + 16 <= M;
    const exec_u8* ps0 = sm + ((exec_u64)gr * 16 + g) * K16 + 16u * t;
    const exec_u8* ps1 = ps0 + 8ull * K16;
    const exec_u8* pc0 = codes + ((exec_u64)gr * 16 + g) * (K16 >> 1) + 8u * t;
    const exec_u8* pc1 = pc0 + 4ull * K16;
    const exec_u32* prow = poff + (exec_u64)gr * CB * 4;  // the row group's item offsets
    // Programmatic dependent launch (grid_dependency_wait, common.cu): the warp's first item (lane
    // l < 16: row l's sm bytes, l >= 16: row l - 16's code bytes) asked of L2 before the wait;
    // activations, outputs and partial sums after it. The next kernel is released once the CTA's
    // warps are done with their items, or with EARLY before the wait.
    if (i0 + warp < i1) {
        const exec_u32 c0 = ((i0 + warp) >> 2) * 512u + ((i0 + warp) & 3u) * 128u;
        const exec_u64 m = (exec_u64)gr * 16 + (lane & 15u);
        const exec_u32 n = min(128u, K16 - c0);
        if (m < M) {
            if (lane < 16u) exec_prefetch_l2(sm + m * K16 + c0, n);
            else exec_prefetch_l2(codes + m * (K16 >> 1) + (c0 >> 1), n >> 1);
        }
    }
    uint2 rng_n = make_uint2(0u, 0u), fst_n = make_uint2(0u, 0u);  // AHEAD: the next item's range and first entry
    if (AHEAD && i0 + warp < i1) {  // the matrix's own fields: before the wait
        rng_n = make_uint2(__ldg(prow + i0 + warp), __ldg(prow + i0 + warp + 1));
        if (rng_n.x != rng_n.y) fst_n = __ldg(pent + rng_n.x);
    }
    if (EARLY) grid_dependency_release();
    grid_dependency_wait();
    for (exec_u32 it = i0 + warp; it < i1; it += nwarps) {
        const exec_u32 c0 = (it >> 2) * 512u + (it & 3u) * 128u;
        const bool whole = rows && c0 + 128u <= K16;  // warp-uniform
        // Rows g and g + 8, chunks j: 16 sm bytes and 8 code bytes each; rows past M and chunks
        // past K16 get sm 0 and code 1 (a finite weight that meets x = 0). A variant that loaded
        // the warp's next item before decoding this one (121-128 registers) was slower on 3 of
        // the 6 shapes (docs/gpu-history.md, session 13).
        uint4 sv[2][2];
        uint2 cv[2][2];
        constexpr int XN = XCHUNK ? 1 : NT;
        uint4 xv[XN][4];
        if (whole) {
#pragma unroll
            for (int j = 0; j < 2; ++j) {
                sv[0][j] = exec_ldg_nc16(ps0 + c0 + 64u * j);
                sv[1][j] = exec_ldg_nc16(ps1 + c0 + 64u * j);
                cv[0][j] = exec_ldg_nc8(pc0 + (c0 >> 1) + 32u * j);
                cv[1][j] = exec_ldg_nc8(pc1 + (c0 >> 1) + 32u * j);
            }
            // no column of the item is past K16: the fragments' bound test folds away
            if constexpr (!XCHUNK) exec_tc_load_frags<NT, EXEC_TC_INTERLEAVE>(x, ldx, ncols, 0xffffffffu, c0, g, t, xv);
        } else {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const exec_u64 m = (exec_u64)gr * 16 + 8 * h + g;
#pragma unroll
                for (int j = 0; j < 2; ++j) {
                    const exec_u32 kc = c0 + 64u * j + 16u * t;
                    sv[h][j] = make_uint4(0u, 0u, 0u, 0u);
                    cv[h][j] = make_uint2(0x11111111u, 0x11111111u);
                    if (rv[h] && kc < K16) {
                        sv[h][j] = exec_ldg_nc16(sm + m * K16 + kc);
                        cv[h][j] = exec_ldg_nc8(codes + m * (K16 >> 1) + (kc >> 1));
                    }
                }
            }
            if constexpr (!XCHUNK) exec_tc_load_frags<NT, EXEC_TC_INTERLEAVE>(x, ldx, ncols, K16, c0, g, t, xv);
        }
        // the item's patch-list range (exec_derived.cu: item (gr x CB + tile) x 4 + quarter)
        uint2 range, first = make_uint2(0u, 0u);
        const exec_u32 nx = it + nwarps;  // AHEAD: the warp's next item
        if (AHEAD) {
            range = rng_n;
            first = fst_n;
            if (nx < i1) rng_n = make_uint2(__ldg(prow + nx), __ldg(prow + nx + 1));
        } else {
            range = make_uint2(__ldg(prow + it), __ldg(prow + it + 1));
        }
        exec_tcs_item<NT, XCHUNK, PROBE, AHEAD>(sv, cv, xv, rv, rbase, range, first, g, t, lane, esc, pent, x, ldx, ncols, K16, c0, acc);
        if (AHEAD && nx < i1 && rng_n.x != rng_n.y) fst_n = __ldg(pent + rng_n.x);
    }
    if (!EARLY) grid_dependency_release();
    exec_tcs_finish<NT, CLUSTER>(exec_tcs_red, acc, warp, nwarps, gr, g, t, M, ncols, bias, y, ldy, out_bf16, part, split, splits);
}

// Parameters: EXEC_MATVEC_PARAMS, the patch list's offsets and entries (exec_derived.cu), the f32
// partial sums [splits][ncols][M] (unused when splits == 1) and the splits; grid = row groups x
// splits, at most 16 warps per CTA. BOUNDS: the launch bounds, or at 8 columns a register limit
// of 80 (24 resident warps per SM against 93 registers' 20; session 23: +4% on the bench shapes,
// +7% on a grid of 6, at N = 1..8, with 12 bytes of spills, 291 instructions per item; 96 registers at
// 16 columns: within 1%, mixed; 72 at 8: spills, slower; session 32 again: 80 / 56 bytes of
// spills, 28 resident warps, 10% slower).
#define EXEC_TCS_ENTRY(NAME, NT, XCHUNK, PROBE, BOUNDS, AHEAD, CLUSTER, EARLY)                                        \
    extern "C" __global__ void BOUNDS                                                                                    \
        NAME(EXEC_MATVEC_PARAMS(exec_u16), const exec_u32* __restrict__ poff, const uint2* __restrict__ pent, \
             float* __restrict__ part, exec_u32 splits) {                                                   \
        exec_tcs_body<NT, XCHUNK, PROBE, AHEAD, CLUSTER, EARLY>(sm, codes, base, esc_start, esc, M, K, x, ldx, ncols, bias, y, \
                                 ldy, out_bf16, poff, pent, part, splits);                                  \
    }
// The production kernel at each NT, one configuration for all its launches (CLUSTER) and release
// points (EARLY):
// - 8 columns: held to 80 registers (above);
// - 16 columns: the patch list's range and first entry one item ahead (AHEAD; session 24: faster
//   on all 12 shapes of its call at 16 columns, +0.2-3.4%; at 8 columns, capped at 80 registers,
//   it spilled and lost 2%; at 32 even);
// - 32 columns: each chunk's activation fragments loaded as its mma need them (XCHUNK).
#define EXEC_TCS_N1(NAME, CLUSTER, EARLY) EXEC_TCS_ENTRY(NAME, 1, false, 0, __maxnreg__(80), false, CLUSTER, EARLY)
#define EXEC_TCS_N2(NAME, CLUSTER, EARLY) EXEC_TCS_ENTRY(NAME, 2, false, 0, __launch_bounds__(512, 1), true, CLUSTER, EARLY)
#define EXEC_TCS_N4(NAME, CLUSTER, EARLY) EXEC_TCS_ENTRY(NAME, 4, true, 0, __launch_bounds__(512, 1), false, CLUSTER, EARLY)
// Bench variants and probes (kernels/bench/exec_tensor_variants.cu): one split, released after
// the items, the launch bounds only.
#define EXEC_TCS_BENCH(NAME, NT, XCHUNK, PROBE) EXEC_TCS_ENTRY(NAME, NT, XCHUNK, PROBE, __launch_bounds__(512, 1), false, false, false)

// NAME, CLUSTER, EARLY
EXEC_TCS_N1(exec_tensor_strip_n1, false, false)
EXEC_TCS_N2(exec_tensor_strip_n2, false, false)
EXEC_TCS_N4(exec_tensor_strip_n4, false, false)
// The same kernels whose split launches put a row group's CTAs in one thread-block cluster that
// adds the splits through distributed shared memory (exec_tc_cluster_out; sm_90; bench in session
// 28, production in session 29 where the cluster count leaves the launch's plan as it is: no
// partial-sum buffer, no summing kernel, programmatic like one split).
EXEC_TCS_N1(exec_tensor_strip_cluster_n1, true, false)
EXEC_TCS_N2(exec_tensor_strip_cluster_n2, true, false)
EXEC_TCS_N4(exec_tensor_strip_cluster_n4, true, false)
// The same six, each releasing the next kernel at its CTAs' start (EARLY).
EXEC_TCS_N1(exec_tensor_strip_n1_release_start, false, true)
EXEC_TCS_N2(exec_tensor_strip_n2_release_start, false, true)
EXEC_TCS_N4(exec_tensor_strip_n4_release_start, false, true)
EXEC_TCS_N1(exec_tensor_strip_cluster_n1_release_start, true, true)
EXEC_TCS_N2(exec_tensor_strip_cluster_n2_release_start, true, true)
EXEC_TCS_N4(exec_tensor_strip_cluster_n4_release_start, true, true)
