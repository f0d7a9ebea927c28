// NWC format 10 GPU kernels: dequant (spec 15.2), row gather (spec 15.3) and the fused matvec in
// the canonical accumulation order (spec 15.4). Compiled at run time by NVRTC with --fmad=false
// (no contraction: every multiply-add below is an explicit __fmaf_rn), no flush-to-zero and
// IEEE division/sqrt. No #include: CI compiles this file with a bare NVRTC and no CUDA headers.
//
// Every kernel trusts that the host ran the reference decoder's validity rules (spec 13) on the
// matrix first (nwc_cuda::GpuMatrix::upload does): offsets, header bytes, codes and the LUT are
// consistent. Reads that run past a lane's last code stay inside the buffers because:
//  - data: a lane reads at most one (version 1) or two (version 2) 32-bit words past the word
//    holding its last bit, and the device copy of `data` is at least align8(stream end) + 64
//    bytes (spec 9.3 tail slack);
//  - low (layout 0): a lane whose 16 columns lie past K16 still loads its 16 (BF16) or 8 (FP8)
//    bytes at row*stride + column; for row < M the farthest such byte is below n_low + 512, and the
//    device copy of `low` is n_low + 512 bytes (spec 9.4 raw slack). Rows >= M load nothing.
// The values read there are never used: those positions are fillers and count as weight 0.

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

#define NWC_WARPS 8            // warps per CTA
#define NWC_THREADS (32 * NWC_WARPS)
#define LUT_PARTIAL (1u << 30) // spec 10.1: entry holds fewer than two complete codes
#define LUT_ONE_CODE (1u << 24) // spec 10.1: ... but exactly one

// Per-CTA copy of the 4096-entry table and the recovered exp_of_rank (spec 10.2).
struct Tables {
    u32 lut[4096];
    u32 eor[16];
};

__device__ __forceinline__ void load_tables(Tables& t, const u32* __restrict__ lut) {
    const uint4* src = reinterpret_cast<const uint4*>(lut);
    uint4* dst = reinterpret_cast<uint4*>(t.lut);
    for (int i = threadIdx.x; i < 1024; i += blockDim.x) dst[i] = __ldg(src + i);
    if (threadIdx.x < 16) {
        const int r = threadIdx.x;
        u32 v = 0;
        // Spec 10.2: rank r <= 10 is byte 1 of entry 1 << (11 - r); 11..14 live in entries 0, 1.
        if (r <= 10) v = (__ldg(lut + (1u << (11 - r))) >> 8) & 0xFF;
        else if (r == 11) v = (__ldg(lut) >> 8) & 0xFF;
        else if (r == 12) v = (__ldg(lut) >> 16) & 0xFF;
        else if (r == 13) v = (__ldg(lut + 1) >> 8) & 0xFF;
        else if (r == 14) v = (__ldg(lut + 1) >> 16) & 0xFF;
        t.eor[r] = v;
    }
    __syncthreads();
}

// Spec 6.4: one lane stream, read MSB first from little-endian 32-bit words. `buf` holds the
// unread bits left-aligned; `nbits` of them are real.
struct BitReader {
    const u32* words;
    u64 buf;
    int nbits;
};

__device__ __forceinline__ void refill(BitReader& s) {
    if (s.nbits <= 32) {
        s.buf |= (u64)__ldg(s.words++) << (32 - s.nbits);
        s.nbits += 32;
    }
}

__device__ __forceinline__ void consume(BitReader& s, u32 n) {
    s.buf <<= n;
    s.nbits -= (int)n;
}

// Spec 6.1/6.2: one code by counting leading zeros (needs nbits > 24). Returns the coded byte:
// sign << 7 | symbol, or the verbatim high byte of a BF16 escape.
template <bool FP8>
__device__ __forceinline__ u32 read_one(BitReader& s, const Tables& t) {
    const u32 top = (u32)(s.buf >> 32);
    // min(): a valid stream never has more than 15 leading zeros here; the clamp keeps the table
    // index in bounds even if that promise were broken.
    const u32 z = min((u32)__clz(top), 15u);
    if (!FP8 && z == 15) {
        consume(s, 24); // 15 zeros, the one, 8 verbatim bits
        return (top >> 8) & 0xFF;
    }
    const u32 sign = (top >> (30 - z)) & 1;
    consume(s, z + 2);
    return (sign << 7) | t.eor[z];
}

// Two consecutive codes: one table lookup when both fit in the 12-bit window (spec 10.1).
template <bool FP8>
__device__ __forceinline__ void read_pair(BitReader& s, const Tables& t, u32& b0, u32& b1) {
    refill(s);
    const u32 e = t.lut[(u32)(s.buf >> 52)];
    if (!(e & LUT_PARTIAL)) {
        b0 = (e >> 8) & 0xFF;
        b1 = (e >> 16) & 0xFF;
        consume(s, e & 0xFF);
        return;
    }
    if (e & LUT_ONE_CODE) {
        b0 = (e >> 8) & 0xFF;
        consume(s, e & 0xFF);
    } else {
        b0 = read_one<FP8>(s, t);
    }
    refill(s);
    b1 = read_one<FP8>(s, t);
}

// Spec 9.1/9.2: the reader for lane `lane` of block `b`: header bytes summed over the lanes
// before it (a warp prefix sum), added to the block's base offset.
__device__ __forceinline__ BitReader lane_reader(const u8* __restrict__ data, const u32* __restrict__ bases,
                                                 const u8* __restrict__ hdr, u64 b, u32 lane) {
    const u32 words = hdr[b * 32 + lane];
    u32 incl = words;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const u32 v = __shfl_up_sync(0xffffffffu, incl, d);
        if (lane >= (u32)d) incl += v;
    }
    BitReader s;
    s.words = reinterpret_cast<const u32*>(data + bases[b] + 4ull * (incl - words));
    s.buf = 0;
    s.nbits = 0;
    return s;
}

// Spec 4.1/4.2/15.2: a weight as a BF16 word from its coded byte and raw part.
template <bool FP8>
__device__ __forceinline__ u32 weight_word(u32 coded, u32 raw) {
    return FP8 ? ((coded << 8) | (raw << 4)) : ((coded << 8) | raw);
}

// Raw part of code t (0..15) of a 16-code group held in registers: BF16 byte t of 16 bytes, or
// FP8 nibble t of 8 bytes at byte (t & 3) + 4 (t >> 3), high nibble when bit 2 of t is set (spec 7.4).
template <bool FP8>
__device__ __forceinline__ u32 raw_part(const u32 (&r)[4], int t) {
    if (FP8) return (r[t >> 3] >> (8 * (t & 3) + 4 * ((t >> 2) & 1))) & 0xF;
    return (r[t >> 2] >> (8 * (t & 3))) & 0xFF;
}

template <bool FP8>
__device__ __forceinline__ void load_raw(const u8* p, u32 (&r)[4]) {
    if (FP8) {
        const uint2 v = *reinterpret_cast<const uint2*>(p);
        r[0] = v.x; r[1] = v.y; r[2] = 0; r[3] = 0;
    } else {
        const uint4 v = *reinterpret_cast<const uint4*>(p);
        r[0] = v.x; r[1] = v.y; r[2] = v.z; r[3] = v.w;
    }
}

// Activations: f32, or BF16 widened exactly (spec 15.4.1).
template <bool XBF16>
__device__ __forceinline__ void load_x8(const void* x, u64 i, float (&v)[8]) {
    if (XBF16) {
        const uint4 q = *reinterpret_cast<const uint4*>(reinterpret_cast<const u16*>(x) + i);
        const u32 w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
        for (int j = 0; j < 4; j++) {
            v[2 * j] = __uint_as_float(w[j] << 16);
            v[2 * j + 1] = __uint_as_float(w[j] & 0xFFFF0000u);
        }
    } else {
        const float4 a = *reinterpret_cast<const float4*>(reinterpret_cast<const float*>(x) + i);
        const float4 b = *reinterpret_cast<const float4*>(reinterpret_cast<const float*>(x) + i + 4);
        v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w; v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
    }
}

// Spec 15.4.6: f32 to BF16, round to nearest even; NaN stays NaN (quiet bit set).
__device__ __forceinline__ u16 bf16_rne(float f) {
    u32 u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (u16)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1);
    return (u16)(u >> 16);
}

struct Geo {
    u64 rows, cols, k16, kp, col_blocks, row_blocks, super_chunks;
    u64 flags; // bit 0: version 2 waits for each block's copy before decoding it (timing only)
};

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
NWC_MATVEC(nwc_matvec_bf16_l0_xf32, 0, false, false)
NWC_MATVEC(nwc_matvec_bf16_l0_xbf16, 0, false, true)
NWC_MATVEC(nwc_matvec_fp8_l0_xf32, 0, true, false)
NWC_MATVEC(nwc_matvec_fp8_l0_xbf16, 0, true, true)
NWC_MATVEC(nwc_matvec_bf16_l1_xf32, 1, false, false)
NWC_MATVEC(nwc_matvec_bf16_l1_xbf16, 1, false, true)
NWC_MATVEC(nwc_matvec_fp8_l1_xf32, 1, true, false)
NWC_MATVEC(nwc_matvec_fp8_l1_xbf16, 1, true, true)

// ---------------------------------------------------------------------------------------------
// Dequant and gather (spec 15.2, 15.3): BF16 rows of stride K16. One warp per task; a task is a
// block (dequant: `sel` is null, every row of the block is written to its own row) or a pair
// (output row o, column block cb) (gather: source row sel[o], written to output row o).
// Pad columns K..K16-1 hold filler codes with zero raw parts, so they decode to the filler word.

template <int LAYOUT, bool FP8>
__device__ void expand(const u8* __restrict__ data, const u32* __restrict__ bases, const u8* __restrict__ hdr,
                       const u32* __restrict__ lut, const u8* __restrict__ low, const u64* __restrict__ sel,
                       u64 tasks, u16* __restrict__ out, Geo g) {
    __shared__ Tables t;
    load_tables(t, lut);
    const u32 warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int rows_per_block = LAYOUT == 0 ? 8 : 16;
    for (u64 task = (u64)blockIdx.x * NWC_WARPS + warp; task < tasks; task += (u64)gridDim.x * NWC_WARPS) {
        u64 rb, cb, want = ~0ull, out_row_of_want = 0;
        if (sel) {
            const u64 o = task / g.col_blocks;
            cb = task % g.col_blocks;
            want = sel[o];
            out_row_of_want = o;
            rb = want / rows_per_block;
        } else {
            rb = task / g.col_blocks;
            cb = task % g.col_blocks;
        }
        BitReader s = lane_reader(data, bases, hdr, rb * g.col_blocks + cb, lane);
        if (LAYOUT == 0) {
            const u64 col0 = 512 * cb + 16 * lane;
            const u64 stride = FP8 ? g.k16 / 2 : g.k16;
#pragma unroll 1
            for (int i = 0; i < 8; i++) {
                const u64 row = 8 * rb + i;
                const bool write = row < g.rows && col0 < g.k16 && (!sel || row == want);
                u32 r[4] = {0, 0, 0, 0};
                if (write) load_raw<FP8>(low + row * stride + (FP8 ? col0 / 2 : col0), r);
                u32 packed[8];
#pragma unroll
                for (int p = 0; p < 8; p++) {
                    u32 c0, c1;
                    read_pair<FP8>(s, t, c0, c1);
                    packed[p] = weight_word<FP8>(c0, raw_part<FP8>(r, 2 * p)) |
                                (weight_word<FP8>(c1, raw_part<FP8>(r, 2 * p + 1)) << 16);
                }
                if (write) {
                    const u64 orow = sel ? out_row_of_want : row;
                    uint4* dst = reinterpret_cast<uint4*>(out + orow * g.k16 + col0);
                    dst[0] = make_uint4(packed[0], packed[1], packed[2], packed[3]);
                    dst[1] = make_uint4(packed[4], packed[5], packed[6], packed[7]);
                }
            }
        } else {
            const u32 r8 = lane >> 2, q = lane & 3;
            const u64 row0 = 16 * rb + r8, row1 = row0 + 8;
            const bool w0 = row0 < g.rows && (!sel || row0 == want);
            const bool w1 = row1 < g.rows && (!sel || row1 == want);
            const u64 orow0 = sel ? out_row_of_want : row0, orow1 = sel ? out_row_of_want : row1;
            u64 chunks = g.super_chunks - 16 * cb;
            if (chunks > 16) chunks = 16;
#pragma unroll 1
            for (u64 sc = 16 * cb; sc < 16 * cb + chunks; sc++) {
                const u64 lane_start = (rb * g.super_chunks + sc) * 32 + lane;
                u32 r[4];
                load_raw<FP8>(low + lane_start * (FP8 ? 8 : 16), r);
                const u64 col0 = 32 * sc + 8 * q;
#pragma unroll
                for (int p = 0; p < 8; p++) {
                    u32 c0, c1;
                    read_pair<FP8>(s, t, c0, c1);
                    const u64 col = col0 + 2 * (p >> 1);
                    const u32 pair = weight_word<FP8>(c0, raw_part<FP8>(r, 2 * p)) |
                                     (weight_word<FP8>(c1, raw_part<FP8>(r, 2 * p + 1)) << 16);
                    const bool h = p & 1;
                    // col is even and K16 is even, so col < K16 means both columns are inside.
                    if ((h ? w1 : w0) && col < g.k16)
                        *reinterpret_cast<u32*>(out + (h ? orow1 : orow0) * g.k16 + col) = pair;
                }
            }
        }
    }
}

#define NWC_EXPAND(NAME, LAYOUT, FP8)                                                                          \
    extern "C" __global__ void __launch_bounds__(NWC_THREADS)                                                  \
        NAME(const u8* data, const u32* bases, const u8* hdr, const u32* lut, const u8* low, const u64* sel,   \
             u64 tasks, u16* out, Geo g) {                                                                     \
        expand<LAYOUT, FP8>(data, bases, hdr, lut, low, sel, tasks, out, g);                                   \
    }
NWC_EXPAND(nwc_expand_bf16_l0, 0, false)
NWC_EXPAND(nwc_expand_fp8_l0, 0, true)
NWC_EXPAND(nwc_expand_bf16_l1, 1, false)
NWC_EXPAND(nwc_expand_fp8_l1, 1, true)
