// Superseded kernels kept for side-by-side timing by nwc-gpu-bench (cargo feature `bench`):
// version 1 on layout 0 (exact_matvec_l1.cu's template), version 6's matvec (dequant_l0.cu's
// staging) and version 7's dequant (pair_decode.cu). Compiled after every production file.

NWC_MATVEC(bench_matvec_v1_bf16_l0_xf32, 0, false, false)
NWC_MATVEC(bench_matvec_v1_bf16_l0_xbf16, 0, false, true)
NWC_MATVEC(bench_matvec_v1_fp8_l0_xf32, 0, true, false)
NWC_MATVEC(bench_matvec_v1_fp8_l0_xbf16, 0, true, true)

// Spec 15.4.3-4, layout 0: lane partial of row i of a block (stream order, fma from +0), halving
// tree over the 32 lanes, part[i].
template <bool FP8, bool STAGED>
__device__ __forceinline__ void row_partial_v6(StagedReader<STAGED>& s, const u8* buf, int i, const float (&xv)[16], u32 lane,
                                             float* part) {
    u32 q[4];
    staged_raw_row<FP8>(buf, i, lane, q);
    float acc = 0.0f;
#pragma unroll
    for (int p = 0; p < 8; p++) {
        // Refill before even pairs: > 32 real bits cover two pairs of <= 12 bits (the slow path
        // refills itself and leaves > 32 too). p is a constant once unrolled.
        if (p % 2 == 0) s.refill();
        const u32 e = s.template pair<FP8>();
        acc = __fmaf_rn(staged_weight(e, q, 2 * p, 1), xv[2 * p], acc);
        acc = __fmaf_rn(staged_weight(e, q, 2 * p + 1, 2), xv[2 * p + 1], acc);
    }
#pragma unroll
    for (int d = 16; d >= 1; d >>= 1) acc = acc + __shfl_xor_sync(0xffffffffu, acc, d); // spec 15.4.4
    if (lane == 0) part[i] = acc;
}

// The 8 rows of a block. Variants (same results, docs/gpu-history.md): VAR 2 unrolls the row loop twice
// and double-buffers the copies; VAR 6 (the default) does not unroll and keeps one copy buffer
// per warp (block_pipeline, NB = 1), so three CTAs fit an SM.
template <bool FP8, bool STAGED, int VAR>
__device__ __forceinline__ void rows_partials_v6(StagedReader<STAGED> s, const u8* buf, const float (&xv)[16], u32 lane,
                                               float* part) {
    if constexpr (VAR == 2) {
#pragma unroll 2
        for (int i = 0; i < 8; i++) row_partial_v6<FP8, STAGED>(s, buf, i, xv, lane, part);
    } else {
#pragma unroll 1
        for (int i = 0; i < 8; i++) row_partial_v6<FP8, STAGED>(s, buf, i, xv, lane, part);
    }
}
// Spec 15.4 with version 2 blocks: a CTA of blockDim.x / 32 warps (the host picks min(8, CB))
// walks row blocks rb = blockIdx.x, + gridDim.x, ...; a row block takes ceil(CB / warps) rounds,
// warp w decoding column block round * warps + w. Block partials meet in shared memory and one
// thread per row adds them in ascending cb order from +0 (spec 15.4.5), as in version 1.
template <bool FP8, bool XBF16, int VAR>
__device__ void matvec_v6(const u8* __restrict__ data, const u32* __restrict__ bases, const u8* __restrict__ hdr,
                        const u32* __restrict__ lut, const u8* __restrict__ low, const float* __restrict__ scale,
                        const void* x, const float* __restrict__ bias, void* y, int out_bf16, Geo g) {
    extern __shared__ __align__(16) u8 staged_dyn[];
    __shared__ float part[NWC_WARPS][8];
    build_staged_pairs<FP8>(lut);
    const u32 warps = blockDim.x >> 5, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (blockIdx.x >= g.row_blocks) return; // the whole CTA (the host never launches more)
    const u64 rounds = (g.col_blocks + warps - 1) / warps;
    const u64 my_rbs = (g.row_blocks - 1 - blockIdx.x) / gridDim.x + 1;
    float sum = 0.0f; // thread `threadIdx.x` < 8 owns row 8rb + threadIdx.x of the current rb
    auto blk = [&](u64 r, u64& rb, u64& cb) -> bool {
        rb = blockIdx.x + (r / rounds) * gridDim.x;
        cb = (r % rounds) * warps + warp;
        return cb < g.col_blocks;
    };
    auto work = [&](u64, u64, u64 cb, const u8* buf, BlockStart st) {
        const u64 col0 = 512 * cb + 16 * lane;
        float xv[16];
        load_x8<XBF16>(x, col0, *reinterpret_cast<float(*)[8]>(&xv[0]));
        load_x8<XBF16>(x, col0 + 8, *reinterpret_cast<float(*)[8]>(&xv[8]));
        if (st.staged)
            rows_partials_v6<FP8, true, VAR>(staged_reader<true>(reinterpret_cast<const u32*>(buf + StagedBuf<FP8>::RAW), st.first), buf, xv, lane, part[warp]);
        else
            rows_partials_v6<FP8, false, VAR>(staged_reader<false>(reinterpret_cast<const u32*>(data), st.first), buf, xv, lane, part[warp]);
    };
    auto after = [&](u64 r) {
        const u64 round = r % rounds;
        __syncthreads();
        if (threadIdx.x < 8) {
            if (round == 0) sum = 0.0f;
            for (u32 w = 0; w < warps && round * warps + w < g.col_blocks; w++) sum = sum + part[w][threadIdx.x];
        }
        __syncthreads();
        const u64 rb = blockIdx.x + (r / rounds) * gridDim.x;
        const u64 row = rb * 8 + threadIdx.x;
        if (round == rounds - 1 && threadIdx.x < 8 && row < g.rows) {
            float v = sum; // spec 15.4.6
            if (scale) v = v * scale[row];
            if (bias) v = v + bias[row];
            if (out_bf16) reinterpret_cast<u16*>(y)[row] = bf16_rne(v);
            else reinterpret_cast<float*>(y)[row] = v;
        }
    };
    constexpr int NB = VAR == 6 ? 1 : 2;
    block_pipeline<FP8, NB>(staged_dyn + warp * NB * StagedBuf<FP8>::BYTES, rounds * my_rbs, data, bases, hdr, low, g, lane, blk, work, after);
}

#define NWC_MATVEC_V6(NAME, FP8, XBF16, VAR)                                                                    \
    extern "C" __global__ void __launch_bounds__(NWC_THREADS, VAR == 6 ? 3 : 2)                                \
        NAME(const u8* data, const u32* bases, const u8* hdr, const u32* lut, const u8* low, const float* scale, \
             const void* x, const float* bias, void* y, int out_bf16, Geo g) {                               \
        matvec_v6<FP8, XBF16, VAR>(data, bases, hdr, lut, low, scale, x, bias, y, out_bf16, g);                  \
    }
NWC_MATVEC_V6(bench_matvec_v6_bf16_l0_xf32, false, false, 6)
NWC_MATVEC_V6(bench_matvec_v6_bf16_l0_xbf16, false, true, 6)
NWC_MATVEC_V6(bench_matvec_v6_fp8_l0_xf32, true, false, 6)
NWC_MATVEC_V6(bench_matvec_v6_fp8_l0_xbf16, true, true, 6)


// Spec 15.2, layout 0, version 7: each lane writes its 16 BF16 words of a row as two 16-byte
// stores; four codes make two output words.
template <bool FP8, bool STAGED>
__device__ __forceinline__ void rows_dequant_v7(const u32* words, u32 pos, const u8* __restrict__ rowp, u64 stride, bool lane_in,
                                              u64 nrows, u16* dst, u64 k16) {
    u32 qn[4];
    raw_row<FP8>(rowp, lane_in && nrows > 0, qn);
#pragma unroll 2
    for (int i = 0; i < 8; i++) {
        u32 q[4];
#pragma unroll
        for (int j = 0; j < 4; j++) q[j] = qn[j];
        raw_row<FP8>(rowp + (i + 1) * stride, lane_in && i < 7 && (u64)(i + 1) < nrows, qn);
        if (FP8) nibbles_to_bytes(q);
        u32 w[8];
#pragma unroll
        for (int d = 0; d < 4; d++) {
            u32 ea, eb;
            quad_pairs<FP8, STAGED>(words, pos, ea, eb);
            w[2 * d] = dequant_word(ea, q[d], 0);
            w[2 * d + 1] = dequant_word(eb, q[d], 2);
        }
        if (lane_in && (u64)i < nrows) {
            uint4* d = reinterpret_cast<uint4*>(dst + i * k16);
            d[0] = make_uint4(w[0], w[1], w[2], w[3]);
            d[1] = make_uint4(w[4], w[5], w[6], w[7]);
        }
    }
}

template <bool FP8>
__device__ void dequant_v7(const u8* __restrict__ data, const u32* __restrict__ bases, const u8* __restrict__ hdr,
                         const u32* __restrict__ pairs, const u8* __restrict__ low, u16* __restrict__ out, Geo g) {
    extern __shared__ __align__(16) u8 exact_dyn[];
    const u32 lane = threadIdx.x & 31;
    const u64 stride = FP8 ? g.k16 / 2 : g.k16;
    auto work = [&](u32, u32 rb, u32 cb, const u8* buf, LaneStart st) {
        const u64 col0 = 512ull * cb + 16 * lane;
        const bool lane_in = col0 < g.k16;
        const u64 nrows = g.rows - 8ull * rb;
        const u8* rowp = low + 8ull * rb * stride + (FP8 ? col0 / 2 : col0);
        u16* dst = out + 8ull * rb * g.k16 + col0;
        if (st.staged) rows_dequant_v7<FP8, true>(reinterpret_cast<const u32*>(buf), st.pos, rowp, stride, lane_in, nrows, dst, g.k16);
        else rows_dequant_v7<FP8, false>(reinterpret_cast<const u32*>(data + st.start16), st.pos, rowp, stride, lane_in, nrows, dst, g.k16);
    };
    auto prefetch = [&](u32 rb, u32 cb) { prefetch_raw_rows<FP8>(low, g, rb, cb, lane); };
    warp_block_loop<EXACT_STAGE>(exact_dyn, data, bases, hdr, pairs, g, prefetch, work);
}

NWC_DEQUANT_ENTRY(bench_dequant_v7_bf16_l0, dequant_v7, EXACT_THREADS, 2, false)
NWC_DEQUANT_ENTRY(bench_dequant_v7_fp8_l0, dequant_v7, EXACT_THREADS, 2, true)

// ---- Execution layout: the rows kernel without the escape offsets in its load batch (ES = false). ----
EXEC_MATVEC(exec_matvec_rows_noprefetch, 1, 2, 2, false, 256, 4)
