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

// =============================================================================================
// Version 2 (issue 7): layout 0 matvec and dequant, same results bit for bit, fewer instructions
// and more loads in flight. Differences from version 1 (docs/gpu.md has the reasons and numbers):
//  - a 1024-entry pair table for a 10-bit window, built in shared memory from exp_of_rank (spec
//    10.6 recovery; spec 13 guarantees the stored LUT is exactly what exp_of_rank builds), so no
//    CTA copies the 16 KB stored table; pairs longer than 10 bits take the clz path;
//  - each block's stream is copied into shared memory with coalesced 16-byte loads, the raw row
//    for row i + 1 is loaded while row i decodes;
//  - a weight's f32 bits come from one byte permute of the table entry and the raw word;
//  - filler positions are not masked: a filler code with a zero raw part decodes to a finite value
//    (its exponent byte is at most 0xFE, spec 4.1/4.4) and meets x = 0 (activations are padded
//    with zeros), so fma(w, 0, a) == a exactly (a is never -0, spec 15.4.2). Lanes whose columns
//    lie past K16 and rows past M skip the raw load and use raw 0 for the same reason.

#define V2_WINDOW 12
#define V2_ENTRIES (1u << V2_WINDOW)
#define V2_STAGE 1792 // bytes of staged stream per warp and buffer (4096 codes at <= 3.4 bits)

// Bytes of one warp's buffer: the block's raw plane (8 rows x 32 lanes x 16 or 8 bytes), then
// its staged stream. Each warp has two, used alternately (block n decodes from one while block
// n + 1 arrives in the other). The host sizes dynamic shared memory as warps * 2 * v2_buf(fp8).
template <bool FP8>
struct V2Buf {
    static constexpr u32 RAW = FP8 ? 2048 : 4096;
    static constexpr u32 BYTES = RAW + V2_STAGE;
};

// The pair table and exp_of_rank of version 2, at fixed shared addresses. Each kernel that uses
// them gets its own copy.
__shared__ u32 v2_pair[V2_ENTRIES];
__shared__ u32 v2_eor[16];

// Spec 10.1-10.3, rebuilt from exp_of_rank (spec 10.6; rule lut-mismatch guarantees the stored
// table is exactly this one, so no CTA copies 16 KB from global memory): entry = len0 + len1 |
// byte0 << 8 | byte1 << 16 when two complete codes fit the 12-bit window, else LUT_PARTIAL
// (| LUT_ONE_CODE | len0 | byte0 << 8 when one does). Byte 3 of a two-code entry is zero: the
// byte permutes below use it as their zero byte.
template <bool FP8>
__device__ void build_tables2(const u32* __restrict__ lut) {
    if (threadIdx.x < 16) {
        const int r = threadIdx.x;
        u32 v = 0;
        if (r <= 10) v = (__ldg(lut + (1u << (11 - r))) >> 8) & 0xFF;
        else if (r == 11) v = (__ldg(lut) >> 8) & 0xFF;
        else if (r == 12) v = (__ldg(lut) >> 16) & 0xFF;
        else if (r == 13) v = (__ldg(lut + 1) >> 8) & 0xFF;
        else if (r == 14) v = (__ldg(lut + 1) >> 16) & 0xFF;
        v2_eor[r] = v;
    }
    __syncthreads();
    const u32 rank_limit = FP8 ? 10 : 15; // spec 5: ranks a code can have
    for (u32 p = threadIdx.x; p < V2_ENTRIES; p += blockDim.x) {
        const u32 v = p << (32 - V2_WINDOW); // the window, left-aligned; bits past it are zero
        const u32 z0 = __clz(v);            // 32 when v == 0
        u32 e = LUT_PARTIAL;
        if (z0 < rank_limit && z0 + 2 <= V2_WINDOW) {
            const u32 len0 = z0 + 2;
            const u32 b0 = (((v >> (30 - z0)) & 1) << 7) | v2_eor[z0];
            const u32 v1 = v << len0;
            const u32 z1 = __clz(v1);
            if (z1 < rank_limit && len0 + z1 + 2 <= V2_WINDOW) {
                const u32 b1 = (((v1 >> (30 - z1)) & 1) << 7) | v2_eor[z1];
                e = (len0 + z1 + 2) | (b0 << 8) | (b1 << 16);
            } else {
                e = LUT_PARTIAL | LUT_ONE_CODE | len0 | (b0 << 8);
            }
        }
        v2_pair[p] = e;
    }
    __syncthreads();
}

// Spec 6.4 bit reader of version 2: the 64 unread bits left-aligned in (hi, lo); the low byte of
// `count` is how many are real (the bits above it are junk: consuming subtracts a whole table
// entry, whose low byte is the length). Words come from the staged copy in shared memory
// (STAGED) or straight from global memory, by a 32-bit word index.
template <bool STAGED>
struct Reader2 {
    const u32* words;
    u32 hi, lo, count, idx;

    __device__ __forceinline__ u32 word(u32 i) const {
        if (STAGED) return words[i];
        return __ldg(words + i);
    }
    __device__ __forceinline__ u32 real() const { return count & 0xFF; }
    // Append a word when at most 32 bits are real (then 33..64 are). Needs >= 1 real bit.
    __device__ __forceinline__ void refill() {
        if (real() <= 32) {
            const u32 w = word(idx++);
            const u32 sh = 32 - count; // low 5 bits: 32 - real, in 0..31
            hi |= __funnelshift_l(w, 0u, sh);
            lo |= __funnelshift_l(0u, w, sh);
            count += 32;
        }
    }
    // Drop the first `n & 31` bits (n's low 5 bits must be the length, n <= 31 or a table entry).
    __device__ __forceinline__ void drop(u32 n) {
        hi = __funnelshift_l(lo, hi, n);
        lo = __funnelshift_l(0u, lo, n);
    }
    // Spec 6.1/6.2, one code by counting zeros (needs > 24 real bits): the coded byte.
    template <bool FP8>
    __device__ __forceinline__ u32 one() {
        const u32 z = min((u32)__clz(hi), 15u);
        if (!FP8 && z == 15) {
            const u32 b = (hi >> 8) & 0xFF;
            drop(24);
            count -= 24;
            return b;
        }
        const u32 b = (((hi >> (30 - z)) & 1) << 7) | v2_eor[z];
        drop(z + 2);
        count -= z + 2;
        return b;
    }
    // The rare pair that does not fit the window: byte0 << 8 | byte1 << 16 (byte 3 zero, like a
    // two-code entry). Leaves more than 32 real bits, like a refill.
    template <bool FP8>
    __device__ __forceinline__ u32 slow_pair(u32 e) {
        u32 b0;
        refill();
        if (e & LUT_ONE_CODE) {
            b0 = (e >> 8) & 0xFF;
            drop(e);
            count -= e & 0xFF;
        } else {
            b0 = one<FP8>();
        }
        refill();
        const u32 b1 = one<FP8>();
        refill();
        return (b0 << 8) | (b1 << 16);
    }
    // Two codes as a table entry (needs >= 12 real bits).
    template <bool FP8>
    __device__ __forceinline__ u32 pair();
};

template <bool STAGED>
template <bool FP8>
__device__ __forceinline__ u32 Reader2<STAGED>::pair() {
    u32 e = v2_pair[hi >> (32 - V2_WINDOW)];
    if (e & LUT_PARTIAL) {
        e = slow_pair<FP8>(e);
    } else {
        drop(e);
        count -= e; // only the low byte matters; e's length byte is <= 12
    }
    return e;
}

template <bool STAGED>
__device__ __forceinline__ Reader2<STAGED> reader2(const u32* words, u32 first) {
    Reader2<STAGED> r;
    r.words = words;
    r.hi = r.word(first);
    r.lo = r.word(first + 1);
    r.idx = first + 2;
    r.count = 64;
    return r;
}

// Raw parts as bytes: code t's raw byte is byte (t & 3) of word t >> 2. BF16: the raw bytes as
// loaded. FP8 (spec 7.4: nibble t at byte (t & 3) + 4 (t >> 3), high nibble when bit 2 of t is
// set): each nibble moved to the high half of its own byte, i.e. already shifted left by 4.
template <bool FP8>
__device__ __forceinline__ void raw_bytes2(const u32 (&r)[4], u32 (&q)[4]) {
    if (FP8) {
        q[0] = (r[0] << 4) & 0xF0F0F0F0u;
        q[1] = r[0] & 0xF0F0F0F0u;
        q[2] = (r[1] << 4) & 0xF0F0F0F0u;
        q[3] = r[1] & 0xF0F0F0F0u;
    } else {
        q[0] = r[0]; q[1] = r[1]; q[2] = r[2]; q[3] = r[3];
    }
}

// f32 bits of code t's weight: byte 3 = its coded byte (byte `which` of entry e), byte 2 = its raw
// byte, bytes 1 and 0 = byte 3 of e, which is zero (spec 4.2/15.4.1: the BF16 word << 16).
__device__ __forceinline__ float weight2(u32 e, const u32 (&q)[4], int t, u32 which) {
    return __uint_as_float(__byte_perm(e, q[t >> 2], 0x0033u | ((4u + (t & 3)) << 8) | (which << 12)));
}

// The dequant word of codes t, t + 1 (t even): [raw t, coded t, raw t+1, coded t+1].
__device__ __forceinline__ u32 word_pair2(u32 e, const u32 (&q)[4], int t) {
    return __byte_perm(e, q[t >> 2], (4u + (t & 3)) | (1u << 4) | ((5u + (t & 3)) << 8) | (2u << 12));
}

// cp.async (sm_80+): 16 or 8 bytes global -> shared without registers; `n` = 0 writes zeros and
// reads nothing.
__device__ __forceinline__ u32 smem_u32(const void* p) {
    u32 r;
    asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(r) : "l"(p));
    return r;
}
__device__ __forceinline__ void cp_async16(u32 dst, const void* src, u32 n) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(n) : "memory");
}
__device__ __forceinline__ void cp_async8(u32 dst, const void* src, u32 n) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" ::"r"(dst), "l"(src), "r"(n) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

// Where a lane's codes of a prefetched block start: a word index into the staged copy, or into
// `data` (as u32) when the block's stream is too long to stage.
struct Start2 {
    u32 first;
    bool staged;
};

// Starts copying block (rb, cb) into the warp buffer `buf`: the 8 raw rows of every lane (zeros
// for rows past M and lanes past K16) and, when it fits, the block's stream (spec 9.1/9.2: the
// lane's words start at bases[b] + 4 * (header bytes of the lanes before it)). `words` is the
// lane's header byte, `base` = bases[b], both loaded a round earlier.
template <bool FP8>
__device__ __forceinline__ Start2 issue2(u8* buf, const u8* __restrict__ data, const u8* __restrict__ low, const Geo& g,
                                         u64 rb, u64 cb, u32 lane, u32 words, u32 base) {
    const u64 col0 = 512 * cb + 16 * lane;
    const bool lane_in = col0 < g.k16;
    const u64 stride = FP8 ? g.k16 / 2 : g.k16;
    const u8* rowp = low + 8 * rb * stride + (FP8 ? col0 / 2 : col0);
    const u32 raw_dst = smem_u32(buf) + lane * (FP8 ? 8 : 16);
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const bool ok = lane_in && 8 * rb + i < g.rows;
        const u8* src = ok ? rowp + i * stride : low;
        if (FP8) cp_async8(raw_dst + i * 256, src, ok ? 8 : 0);
        else cp_async16(raw_dst + i * 512, src, ok ? 16 : 0);
    }
    u32 incl = words;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const u32 v = __shfl_up_sync(0xffffffffu, incl, d);
        if (lane >= (u32)d) incl += v;
    }
    const u32 total = __shfl_sync(0xffffffffu, incl, 31);
    const u32 start16 = base & ~15u;
    const u32 n16 = (base + 4 * total - start16 + 15) >> 4;
    Start2 st;
    // A lane may read two words past its last one: +16 keeps that inside the buffer. The staged
    // span ends at most 15 bytes past the stream end, inside the spec 9.3 tail slack.
    st.staged = n16 * 16 + 16 <= V2_STAGE;
    if (st.staged) {
        const u32 dst = smem_u32(buf + V2Buf<FP8>::RAW);
        for (u32 k = lane; k < n16; k += 32) cp_async16(dst + 16 * k, data + start16 + 16 * k, 16);
        st.first = (base - start16) / 4 + (incl - words);
    } else {
        st.first = base / 4 + (incl - words);
    }
    return st;
}

// One raw row of this lane from the warp buffer, as bytes (raw_bytes2).
template <bool FP8>
__device__ __forceinline__ void raw_row2(const u8* buf, int i, u32 lane, u32 (&q)[4]) {
    u32 r[4];
    if (FP8) {
        const uint2 v = *reinterpret_cast<const uint2*>(buf + i * 256 + lane * 8);
        r[0] = v.x; r[1] = v.y; r[2] = 0; r[3] = 0;
    } else {
        const uint4 v = *reinterpret_cast<const uint4*>(buf + i * 512 + lane * 16);
        r[0] = v.x; r[1] = v.y; r[2] = v.z; r[3] = v.w;
    }
    raw_bytes2<FP8>(r, q);
}

// Spec 15.4.3-4, layout 0: lane partial of row i of a block (stream order, fma from +0), halving
// tree over the 32 lanes, part[i].
template <bool FP8, bool STAGED>
__device__ __forceinline__ void row_partial2(Reader2<STAGED>& s, const u8* buf, int i, const float (&xv)[16], u32 lane,
                                             float* part) {
    u32 q[4];
    raw_row2<FP8>(buf, i, lane, q);
    float acc = 0.0f;
#pragma unroll
    for (int p = 0; p < 8; p++) {
        // Refill before even pairs: > 32 real bits cover two pairs of <= 12 bits (the slow path
        // refills itself and leaves > 32 too). p is a constant once unrolled.
        if (p % 2 == 0) s.refill();
        const u32 e = s.template pair<FP8>();
        acc = __fmaf_rn(weight2(e, q, 2 * p, 1), xv[2 * p], acc);
        acc = __fmaf_rn(weight2(e, q, 2 * p + 1, 2), xv[2 * p + 1], acc);
    }
#pragma unroll
    for (int d = 16; d >= 1; d >>= 1) acc = acc + __shfl_xor_sync(0xffffffffu, acc, d); // spec 15.4.4
    if (lane == 0) part[i] = acc;
}

// The 8 rows of a block. Variants (same results, docs/gpu.md): VAR 2 unrolls the row loop twice
// and double-buffers the copies; VAR 6 (the default) does not unroll and keeps one copy buffer
// per warp (pipeline2, NB = 1), so three CTAs fit an SM.
template <bool FP8, bool STAGED, int VAR>
__device__ __forceinline__ void rows_partials2(Reader2<STAGED> s, const u8* buf, const float (&xv)[16], u32 lane,
                                               float* part) {
    if constexpr (VAR == 2) {
#pragma unroll 2
        for (int i = 0; i < 8; i++) row_partial2<FP8, STAGED>(s, buf, i, xv, lane, part);
    } else {
#pragma unroll 1
        for (int i = 0; i < 8; i++) row_partial2<FP8, STAGED>(s, buf, i, xv, lane, part);
    }
}

// Spec 15.2, layout 0: the 8 rows of a block as BF16 words, rows of stride K16.
template <bool FP8, bool STAGED>
__device__ __forceinline__ void rows_dequant2(Reader2<STAGED> s, const u8* buf, u32 lane, bool lane_in, u64 nrows,
                                              u16* dst, u64 k16) {
#pragma unroll 2
    for (int i = 0; i < 8; i++) {
        u32 q[4];
        raw_row2<FP8>(buf, i, lane, q);
        u32 w[8];
#pragma unroll
        for (int p = 0; p < 8; p++) {
            if (p % 2 == 0) s.refill();
            w[p] = word_pair2(s.template pair<FP8>(), q, 2 * p);
        }
        if (lane_in && (u64)i < nrows) {
            uint4* d = reinterpret_cast<uint4*>(dst + i * k16);
            d[0] = make_uint4(w[0], w[1], w[2], w[3]);
            d[1] = make_uint4(w[4], w[5], w[6], w[7]);
        }
    }
}

// The prefetch pipeline both kernels share: step r of this warp is block `blk(r)` (or none); the
// warp copies block r + 1 while it decodes block r, and loads block r + 2's header byte and
// offset (the copy of r + 2 needs them) while it decodes block r. `work(r, rb, cb, buf, start)`
// decodes; `after(r)` runs once per step on every thread (the matvec's barriers).
// NB = 1 (version 6): one buffer per warp, so three CTAs fit an SM instead of two; block r + 1 is
// copied after block r is decoded (call 2 measured no gain from the overlap, docs/gpu.md).
template <bool FP8, int NB, class Blk, class Work, class After>
__device__ __forceinline__ void pipeline2(u8* mybuf, u64 steps, const u8* __restrict__ data, const u32* __restrict__ bases,
                                          const u8* __restrict__ hdr, const u8* __restrict__ low, const Geo& g, u32 lane,
                                          Blk blk, Work work, After after) {
    if constexpr (NB == 1) {
        u64 rb = 0, cb = 0;
        u32 words = 0, base = 0;
        bool ok = steps > 0 && blk(0, rb, cb);
        if (ok) {
            const u64 b = rb * g.col_blocks + cb;
            words = hdr[b * 32 + lane];
            base = bases[b];
        }
        for (u64 r = 0; r < steps; r++) {
            Start2 st = {0, false};
            __syncwarp(); // every lane is done with the buffer (block r - 1)
            if (ok) st = issue2<FP8>(mybuf, data, low, g, rb, cb, lane, words, base);
            cp_commit();
            u64 rb2 = 0, cb2 = 0;
            const bool ok2 = r + 1 < steps && blk(r + 1, rb2, cb2);
            if (ok2) {
                const u64 b = rb2 * g.col_blocks + cb2;
                words = hdr[b * 32 + lane];
                base = bases[b];
            }
            cp_wait<0>();
            __syncwarp();
            if (ok) work(r, rb, cb, mybuf, st);
            after(r);
            rb = rb2; cb = cb2; ok = ok2;
        }
        return;
    }
    u64 rb_n = 0, cb_n = 0; // block of the step whose meta is in (words, base)
    u32 words = 0, base = 0;
    bool ok_n = steps > 0 && blk(0, rb_n, cb_n);
    if (ok_n) {
        const u64 b = rb_n * g.col_blocks + cb_n;
        words = hdr[b * 32 + lane];
        base = bases[b];
    }
    Start2 cur = {0, false}, nxt = {0, false};
    u64 rb_c = rb_n, cb_c = cb_n;
    bool ok_c = ok_n;
    if (ok_c) cur = issue2<FP8>(mybuf, data, low, g, rb_c, cb_c, lane, words, base);
    cp_commit();
    ok_n = steps > 1 && blk(1, rb_n, cb_n);
    if (ok_n) {
        const u64 b = rb_n * g.col_blocks + cb_n;
        words = hdr[b * 32 + lane];
        base = bases[b];
    }
    for (u64 r = 0; r < steps; r++) {
        u8* buf = mybuf + (r & 1) * V2Buf<FP8>::BYTES;
        u8* buf_n = mybuf + ((r + 1) & 1) * V2Buf<FP8>::BYTES;
        // Block r + 1 into the other buffer (every lane finished reading it in step r - 1).
        __syncwarp();
        if (ok_n) nxt = issue2<FP8>(buf_n, data, low, g, rb_n, cb_n, lane, words, base);
        cp_commit();
        const u64 rb_nn_c = rb_n, cb_nn_c = cb_n;
        const bool ok_nn_c = ok_n;
        u64 rb_2 = 0, cb_2 = 0;
        const bool ok_2 = r + 2 < steps && blk(r + 2, rb_2, cb_2);
        if (ok_2) {
            const u64 b = rb_2 * g.col_blocks + cb_2;
            words = hdr[b * 32 + lane];
            base = bases[b];
        }
        if (g.flags & 1) cp_wait<0>(); // timing variant: no overlap with the next block's copy
        else cp_wait<1>();             // block r has landed (the group of block r + 1 may not)
        __syncwarp();
        if (ok_c) work(r, rb_c, cb_c, buf, cur);
        after(r);
        cur = nxt;
        rb_c = rb_nn_c; cb_c = cb_nn_c; ok_c = ok_nn_c;
        rb_n = rb_2; cb_n = cb_2; ok_n = ok_2;
    }
    cp_wait<0>();
}

// Spec 15.4 with version 2 blocks: a CTA of blockDim.x / 32 warps (the host picks min(8, CB))
// walks row blocks rb = blockIdx.x, + gridDim.x, ...; a row block takes ceil(CB / warps) rounds,
// warp w decoding column block round * warps + w. Block partials meet in shared memory and one
// thread per row adds them in ascending cb order from +0 (spec 15.4.5), as in version 1.
template <bool FP8, bool XBF16, int VAR>
__device__ void matvec2(const u8* __restrict__ data, const u32* __restrict__ bases, const u8* __restrict__ hdr,
                        const u32* __restrict__ lut, const u8* __restrict__ low, const float* __restrict__ scale,
                        const void* x, const float* __restrict__ bias, void* y, int out_bf16, Geo g) {
    extern __shared__ __align__(16) u8 v2_dyn[];
    __shared__ float part[NWC_WARPS][8];
    build_tables2<FP8>(lut);
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
    auto work = [&](u64, u64, u64 cb, const u8* buf, Start2 st) {
        const u64 col0 = 512 * cb + 16 * lane;
        float xv[16];
        load_x8<XBF16>(x, col0, *reinterpret_cast<float(*)[8]>(&xv[0]));
        load_x8<XBF16>(x, col0 + 8, *reinterpret_cast<float(*)[8]>(&xv[8]));
        if (st.staged)
            rows_partials2<FP8, true, VAR>(reader2<true>(reinterpret_cast<const u32*>(buf + V2Buf<FP8>::RAW), st.first), buf, xv, lane, part[warp]);
        else
            rows_partials2<FP8, false, VAR>(reader2<false>(reinterpret_cast<const u32*>(data), st.first), buf, xv, lane, part[warp]);
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
    pipeline2<FP8, NB>(v2_dyn + warp * NB * V2Buf<FP8>::BYTES, rounds * my_rbs, data, bases, hdr, low, g, lane, blk, work, after);
}

#define NWC_MATVEC2(NAME, FP8, XBF16, VAR)                                                                    \
    extern "C" __global__ void __launch_bounds__(NWC_THREADS, VAR == 6 ? 3 : 2)                                \
        NAME(const u8* data, const u32* bases, const u8* hdr, const u32* lut, const u8* low, const float* scale, \
             const void* x, const float* bias, void* y, int out_bf16, Geo g) {                               \
        matvec2<FP8, XBF16, VAR>(data, bases, hdr, lut, low, scale, x, bias, y, out_bf16, g);                  \
    }
NWC_MATVEC2(nwc_matvec2_bf16_l0_xf32, false, false, 2)
NWC_MATVEC2(nwc_matvec2_bf16_l0_xbf16, false, true, 2)
NWC_MATVEC2(nwc_matvec2_fp8_l0_xf32, true, false, 2)
NWC_MATVEC2(nwc_matvec2_fp8_l0_xbf16, true, true, 2)
NWC_MATVEC2(nwc_matvec6_bf16_l0_xf32, false, false, 6)
NWC_MATVEC2(nwc_matvec6_bf16_l0_xbf16, false, true, 6)
NWC_MATVEC2(nwc_matvec6_fp8_l0_xf32, true, false, 6)
NWC_MATVEC2(nwc_matvec6_fp8_l0_xbf16, true, true, 6)

// Spec 15.2, layout 0, version 2: warp steps over blocks b = first + r * (all warps of the grid);
// a pair of codes becomes one output word [raw t, coded t, raw t+1, coded t+1] by one permute.
template <bool FP8, int NB>
__device__ void dequant2(const u8* __restrict__ data, const u32* __restrict__ bases, const u8* __restrict__ hdr,
                         const u32* __restrict__ lut, const u8* __restrict__ low, u16* __restrict__ out, Geo g) {
    extern __shared__ __align__(16) u8 v2_dyn[];
    build_tables2<FP8>(lut);
    const u32 warps = blockDim.x >> 5, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const u64 blocks = g.row_blocks * g.col_blocks;
    const u64 first = (u64)blockIdx.x * warps + warp, step = (u64)gridDim.x * warps;
    const u64 steps = first < blocks ? (blocks - 1 - first) / step + 1 : 0;
    auto blk = [&](u64 r, u64& rb, u64& cb) -> bool {
        const u64 b = first + r * step;
        rb = b / g.col_blocks;
        cb = b % g.col_blocks;
        return true;
    };
    auto work = [&](u64, u64 rb, u64 cb, const u8* buf, Start2 st) {
        const u64 col0 = 512 * cb + 16 * lane;
        const bool lane_in = col0 < g.k16;
        const u64 nrows = g.rows - 8 * rb;
        u16* dst = out + 8 * rb * g.k16 + col0;
        if (st.staged)
            rows_dequant2<FP8, true>(reader2<true>(reinterpret_cast<const u32*>(buf + V2Buf<FP8>::RAW), st.first), buf, lane, lane_in, nrows, dst, g.k16);
        else
            rows_dequant2<FP8, false>(reader2<false>(reinterpret_cast<const u32*>(data), st.first), buf, lane, lane_in, nrows, dst, g.k16);
    };
    auto after = [](u64) {};
    pipeline2<FP8, NB>(v2_dyn + warp * NB * V2Buf<FP8>::BYTES, steps, data, bases, hdr, low, g, lane, blk, work, after);
}

#define NWC_DEQUANT2(NAME, FP8, NB, MINB)                                                                     \
    extern "C" __global__ void __launch_bounds__(NWC_THREADS, MINB)                                            \
        NAME(const u8* data, const u32* bases, const u8* hdr, const u32* lut, const u8* low, u16* out, Geo g) { \
        dequant2<FP8, NB>(data, bases, hdr, lut, low, out, g);                                                 \
    }
NWC_DEQUANT2(nwc_dequant2_bf16_l0, false, 2, 2)
NWC_DEQUANT2(nwc_dequant2_fp8_l0, true, 2, 2)
NWC_DEQUANT2(nwc_dequant6_bf16_l0, false, 1, 3)
NWC_DEQUANT2(nwc_dequant6_fp8_l0, true, 1, 3)

// ---------------------------------------------------------------------------------------------
// Baseline for the benchmark only (not part of the format): a plain fp8 e4m3 weight-only matvec,
// y[r] = bf16(scale[r] * sum_k w[r][k] x[k]), w stored 1 byte per weight with row stride K16,
// x BF16 padded with zeros to a multiple of 512. One warp per row, 16-byte loads, two chunks in
// flight. Not bit-exact with anything: it is the speed an uncompressed fp8 weight would give.

__device__ __forceinline__ void fp8x4_to_f32(u32 w, float (&f)[4]) {
#if __CUDA_ARCH__ >= 890
    u32 h01, h23;
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h01) : "h"((unsigned short)(w & 0xFFFF)));
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h23) : "h"((unsigned short)(w >> 16)));
    asm("cvt.f32.f16 %0, %1;" : "=f"(f[0]) : "h"((unsigned short)(h01 & 0xFFFF)));
    asm("cvt.f32.f16 %0, %1;" : "=f"(f[1]) : "h"((unsigned short)(h01 >> 16)));
    asm("cvt.f32.f16 %0, %1;" : "=f"(f[2]) : "h"((unsigned short)(h23 & 0xFFFF)));
    asm("cvt.f32.f16 %0, %1;" : "=f"(f[3]) : "h"((unsigned short)(h23 >> 16)));
#else
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const u32 b = (w >> (8 * j)) & 0xFF;
        // magnitude bits into an f32 with exponent bias 127 instead of 7, then 2^120 (exact)
        const float m = __uint_as_float((b & 0x7F) << 20) * 1.329227995784916e36f;
        f[j] = (b & 0x80) ? -m : m;
    }
#endif
}

extern "C" __global__ void __launch_bounds__(NWC_THREADS)
    fp8_native_matvec(const u8* __restrict__ w, const float* __restrict__ scale, const u16* __restrict__ x,
                      u16* __restrict__ y, u64 rows, u64 k16) {
    const u32 warps = blockDim.x >> 5, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const u64 chunks = k16 / 16; // 16 weights per chunk
    for (u64 r = (u64)blockIdx.x * warps + warp; r < rows; r += (u64)gridDim.x * warps) {
        const uint4* row = reinterpret_cast<const uint4*>(w + r * k16);
        float acc = 0.0f;
        for (u64 c = lane; c < chunks; c += 64) {
            const bool two = c + 32 < chunks;
            const uint4 a = __ldg(row + c);
            uint4 b = make_uint4(0, 0, 0, 0);
            if (two) b = __ldg(row + c + 32);
            float xa[16], xb[16];
            load_x8<true>(x, 16 * c, *reinterpret_cast<float(*)[8]>(&xa[0]));
            load_x8<true>(x, 16 * c + 8, *reinterpret_cast<float(*)[8]>(&xa[8]));
            if (two) {
                load_x8<true>(x, 16 * (c + 32), *reinterpret_cast<float(*)[8]>(&xb[0]));
                load_x8<true>(x, 16 * (c + 32) + 8, *reinterpret_cast<float(*)[8]>(&xb[8]));
            }
            const u32 aw[4] = {a.x, a.y, a.z, a.w}, bw[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
            for (int j = 0; j < 4; j++) {
                float f[4];
                fp8x4_to_f32(aw[j], f);
#pragma unroll
                for (int k = 0; k < 4; k++) acc = __fmaf_rn(f[k], xa[4 * j + k], acc);
            }
            if (two) {
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    float f[4];
                    fp8x4_to_f32(bw[j], f);
#pragma unroll
                    for (int k = 0; k < 4; k++) acc = __fmaf_rn(f[k], xb[4 * j + k], acc);
                }
            }
        }
#pragma unroll
        for (int d = 16; d >= 1; d >>= 1) acc = acc + __shfl_xor_sync(0xffffffffu, acc, d);
        if (lane == 0) y[r] = bf16_rne(acc * scale[r]);
    }
}
