// NWC format 10 GPU kernels: dequant (spec 15.2), row gather (spec 15.3) and the fused matvec in
// the canonical accumulation order (spec 15.4). Compiled at run time by NVRTC with --fmad=false
// (no contraction: every multiply-add below is an explicit __fmaf_rn), no flush-to-zero and
// IEEE division/sqrt. No #include: CI compiles this file with a bare NVRTC and no CUDA headers.
//
// Every kernel trusts that the host ran the reference decoder's validity rules (spec 13) on the
// matrix first (nwc_cuda::GpuMatrix::upload does): offsets, header bytes, codes and the LUT are
// consistent. Reads that run past a lane's last code stay inside the buffers because:
//  - data: a lane reads at most two 32-bit words past the word
//    holding its last bit, and the device copy of `data` is at least align8(stream end) + 64
//    bytes (spec 9.5 tail slack);
//  - low (layout 0): a lane whose 16 columns lie past K16 still loads its 16 (BF16) or 8 (FP8)
//    bytes at row*stride + column; for row < M the farthest such byte is below n_low + 512, and the
//    device copy of `low` is n_low + 512 bytes (spec 9.6 raw slack). Rows >= M load nothing.
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
};

// ---------------------------------------------------------------------------------------------
// Staging (sm_80+): the block loops of the exact layout 0 matvec, the bounded matvec and both
// dequants copy a block's stream into shared memory with cp.async.
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

// ---- Programmatic dependent launch (sm_90+; nwc_cuda's launch.rs, docs/gpu.md, session 21) ----
// A kernel launched with the host's programmatic-serialization attribute may start while the
// kernel before it on the stream still runs. grid_dependency_wait blocks until that kernel has
// completed and its memory is visible: whatever another kernel may write (activations, bias,
// outputs, scratch and counters) is touched only after it; the matrix's own fields, which no kernel
// writes while the matrix lives, may be read or prefetched before. grid_dependency_release lets the
// next kernel on the stream launch once every CTA of this one has called it or exited. Both are
// no-ops in a plain launch and before sm_90.
__device__ __forceinline__ void grid_dependency_wait() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void grid_dependency_release() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Spec 9.1/9.2 for one block: the words of the lanes before this one (a warp prefix sum of the
// header bytes), and the 16-byte-aligned span [start16, start16 + 16 n16) of `data` that holds
// all 32 lane streams of the block (`base` is its offset).
struct StreamSpan {
    u32 before, start16, n16;
};

__device__ __forceinline__ StreamSpan lane_span(u32 lane, u32 words, u32 base) {
    u32 incl = words;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const u32 v = __shfl_up_sync(0xffffffffu, incl, d);
        if (lane >= (u32)d) incl += v;
    }
    const u32 total = __shfl_sync(0xffffffffu, incl, 31);
    const u32 start16 = base & ~15u;
    return StreamSpan{incl - words, start16, (base + 4 * total - start16 + 15) >> 4};
}
