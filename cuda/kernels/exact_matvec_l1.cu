// The exact matvec of layout 1 (spec 15.4), one code at a time, compiled after common.cu.
// The template takes both layouts; production instantiates layout 1 (layout 0 has the faster
// pair-table kernel of exact_matvec_l0.cu; the bench instantiates layout 0 as "version 1").

// ---------------------------------------------------------------------------------------------
// Matvec. One CTA per row block at a time (grid-stride); its warps take column blocks
// cb = warp, warp + NWC_WARPS, ...; each writes its block partials (spec 15.4.3-4) to shared
// memory, and one thread per row adds them in ascending cb order from +0 (spec 15.4.5).

// Layout 0 (spec 7): lane L decodes row i's 16 columns 512cb + 16L + j in order, for i = 0..7.
template <bool FP8, bool XBF16>
__device__ __forceinline__ void block_partials_l0(const Tables& t, BitReader s, const u8* __restrict__ low,
                                                  const void* x, const Geo& g, u64 rb, u64 cb, u32 lane,
                                                  float* part) {
    const u64 col0 = 512 * cb + 16 * lane;
    float xv[16];
    load_x8<XBF16>(x, col0, *reinterpret_cast<float(*)[8]>(&xv[0]));
    load_x8<XBF16>(x, col0 + 8, *reinterpret_cast<float(*)[8]>(&xv[8]));
    const u64 ncols = g.cols > col0 ? g.cols - col0 : 0; // columns of this lane inside K
    const u64 stride = FP8 ? g.k16 / 2 : g.k16;
#pragma unroll 1
    for (int i = 0; i < 8; i++) {
        const u64 row = 8 * rb + i;
        const bool row_ok = row < g.rows;
        u32 r[4] = {0, 0, 0, 0};
        if (row_ok) load_raw<FP8>(low + row * stride + (FP8 ? col0 / 2 : col0), r);
        float acc = 0.0f;
#pragma unroll
        for (int p = 0; p < 8; p++) {
            u32 c0, c1;
            read_pair<FP8>(s, t, c0, c1);
            const int j = 2 * p;
            // Filler positions (row >= M or column >= K) count as weight 0 (spec 15.4.2); their
            // decoded value may be Inf or NaN and is never used.
            const float w0 = (row_ok && (u64)j < ncols) ? __uint_as_float(weight_word<FP8>(c0, raw_part<FP8>(r, j)) << 16) : 0.0f;
            const float w1 = (row_ok && (u64)(j + 1) < ncols) ? __uint_as_float(weight_word<FP8>(c1, raw_part<FP8>(r, j + 1)) << 16) : 0.0f;
            acc = __fmaf_rn(w0, xv[j], acc);
            acc = __fmaf_rn(w1, xv[j + 1], acc);
        }
        // Spec 15.4.4: halving tree over the 32 lanes.
#pragma unroll
        for (int d = 16; d >= 1; d >>= 1) acc = acc + __shfl_xor_sync(0xffffffffu, acc, d);
        if (lane == 0) part[i] = acc;
    }
}

// Layout 1 (spec 8): lane L = 4 r8 + q owns rows r8 and r8 + 8; per super-chunk s its 16 codes
// are t = 0..15 with column 32s + 8q + 2(t >> 2) + (t & 1) and row r8 + 8((t >> 1) & 1).
template <bool FP8, bool XBF16>
__device__ __forceinline__ void block_partials_l1(const Tables& t, BitReader s, const u8* __restrict__ low,
                                                  const void* x, const Geo& g, u64 rb, u64 cb, u32 lane,
                                                  float* part) {
    const u32 r8 = lane >> 2, q = lane & 3;
    const u64 row0 = 16 * rb + r8, row1 = row0 + 8;
    const bool ok0 = row0 < g.rows, ok1 = row1 < g.rows;
    u64 chunks = g.super_chunks - 16 * cb;
    if (chunks > 16) chunks = 16;
    float acc0 = 0.0f, acc1 = 0.0f;
#pragma unroll 1
    for (u64 sc = 16 * cb; sc < 16 * cb + chunks; sc++) {
        const u64 lane_start = (rb * g.super_chunks + sc) * 32 + lane; // spec 8.3
        u32 r[4];
        load_raw<FP8>(low + lane_start * (FP8 ? 8 : 16), r);
        const u64 col0 = 32 * sc + 8 * q;
        float xv[8];
        load_x8<XBF16>(x, col0, xv);
        const u64 ncols = g.cols > col0 ? g.cols - col0 : 0;
#pragma unroll
        for (int p = 0; p < 8; p++) {
            u32 c0, c1;
            read_pair<FP8>(s, t, c0, c1);
            const int tt = 2 * p, j = 2 * (p >> 1);
            const bool h = p & 1;
            const bool row_ok = h ? ok1 : ok0;
            const float w0 = (row_ok && (u64)j < ncols) ? __uint_as_float(weight_word<FP8>(c0, raw_part<FP8>(r, tt)) << 16) : 0.0f;
            const float w1 = (row_ok && (u64)(j + 1) < ncols) ? __uint_as_float(weight_word<FP8>(c1, raw_part<FP8>(r, tt + 1)) << 16) : 0.0f;
            if (h) {
                acc1 = __fmaf_rn(w0, xv[j], acc1);
                acc1 = __fmaf_rn(w1, xv[j + 1], acc1);
            } else {
                acc0 = __fmaf_rn(w0, xv[j], acc0);
                acc0 = __fmaf_rn(w1, xv[j + 1], acc0);
            }
        }
    }
    // Spec 15.4.4: halving tree over the 4 lanes q = 0..3 of this r8 (steps 2, 1).
    acc0 = acc0 + __shfl_xor_sync(0xffffffffu, acc0, 2);
    acc1 = acc1 + __shfl_xor_sync(0xffffffffu, acc1, 2);
    acc0 = acc0 + __shfl_xor_sync(0xffffffffu, acc0, 1);
    acc1 = acc1 + __shfl_xor_sync(0xffffffffu, acc1, 1);
    if (q == 0) {
        part[r8] = acc0;
        part[r8 + 8] = acc1;
    }
}

template <int LAYOUT, bool FP8, bool XBF16>
__device__ void matvec(const u8* __restrict__ data, const u32* __restrict__ bases, const u8* __restrict__ hdr,
                       const u32* __restrict__ lut, const u8* __restrict__ low, const float* __restrict__ scale,
                       const void* x, const float* __restrict__ bias, void* y, int out_bf16, Geo g) {
    __shared__ Tables t;
    __shared__ float part[NWC_WARPS][16];
    load_tables(t, lut);
    const u32 warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int rows_per_block = LAYOUT == 0 ? 8 : 16;
    for (u64 rb = blockIdx.x; rb < g.row_blocks; rb += gridDim.x) {
        float sum = 0.0f; // thread `threadIdx.x` < rows_per_block owns row 16rb + threadIdx.x
        for (u64 first = 0; first < g.col_blocks; first += NWC_WARPS) {
            const u64 cb = first + warp;
            if (cb < g.col_blocks) {
                const u64 b = rb * g.col_blocks + cb;
                BitReader s = lane_reader(data, bases, hdr, b, lane);
                if (LAYOUT == 0) block_partials_l0<FP8, XBF16>(t, s, low, x, g, rb, cb, lane, part[warp]);
                else block_partials_l1<FP8, XBF16>(t, s, low, x, g, rb, cb, lane, part[warp]);
            }
            __syncthreads();
            if (threadIdx.x < rows_per_block) {
                for (u32 w = 0; w < NWC_WARPS && first + w < g.col_blocks; w++) sum = sum + part[w][threadIdx.x];
            }
            __syncthreads();
        }
        const u64 row = rb * rows_per_block + threadIdx.x;
        if (threadIdx.x < rows_per_block && row < g.rows) {
            // Spec 15.4.6: one scale multiply, then a separate bias add; optional BF16 rounding.
            float v = sum;
            if (scale) v = v * scale[row];
            if (bias) v = v + bias[row];
            if (out_bf16) reinterpret_cast<u16*>(y)[row] = bf16_rne(v);
            else reinterpret_cast<float*>(y)[row] = v;
        }
    }
}

#define NWC_MATVEC(NAME, LAYOUT, FP8, XBF16)                                                                  \
    extern "C" __global__ void __launch_bounds__(NWC_THREADS)                                                  \
        NAME(const u8* data, const u32* bases, const u8* hdr, const u32* lut, const u8* low, const float* scale, \
             const void* x, const float* bias, void* y, int out_bf16, Geo g) {                               \
        matvec<LAYOUT, FP8, XBF16>(data, bases, hdr, lut, low, scale, x, bias, y, out_bf16, g);                \
    }
NWC_MATVEC(nwc_exact_matvec_bf16_l1_xf32, 1, false, false)
NWC_MATVEC(nwc_exact_matvec_bf16_l1_xbf16, 1, false, true)
NWC_MATVEC(nwc_exact_matvec_fp8_l1_xf32, 1, true, false)
NWC_MATVEC(nwc_exact_matvec_fp8_l1_xbf16, 1, true, true)
