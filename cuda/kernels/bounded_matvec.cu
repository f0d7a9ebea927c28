// The bounded matvec of layout 1 (spec 19; historically "version 9") on tensor cores, compiled
// after pair_decode.cu, whose decoder (quad_pairs, the host-built pair table), stream staging and
// block loop it reuses.
//
// Layout 1 codes each lane's positions in the order of the A operand of `mma.m16n8k16` (spec 8.3):
// the 16 codes of a lane in one super-chunk are exactly its four A registers of two k16 steps,
// once each decoded pair becomes a bf16x2 word. So a warp decodes a 16 x 32 tile and hands it to
// the tensor core: no per-weight multiply, no per-row reduction, and the batch columns of X are
// the mma's N dimension (8 per instruction).
//
// - Matvec (`nwc_matvec9*`): the bounded class of spec 19, not the exact one. The tensor core adds
//   products in its own order and rounding, so outputs may differ from the canonical result
//   (spec 15.4) by at most the bound B of spec 19.3; decoding is unchanged. Only for BF16
//   activations (spec 19.2). Block partials are added in ascending column-block order by the warp
//   that finishes a row block's last block, so results are deterministic run to run.
// - Dequant (`nwc_dequant9*`): exact (spec 15.2); the same decode, written out as BF16 rows.
//
// Filler positions (spec 8.4) take part in the mma: a filler decodes to the rank-0 byte with a zero
// raw part, which is finite, and meets a zero activation (columns K..Kp are zero-padded) or lands
// in a row >= M that is never written.

#define BOUNDED_WARPS 24
#define BOUNDED_THREADS (32 * BOUNDED_WARPS)
// Bytes of staged stream per warp and buffer: a layout 1 block has 8192 codes, so this holds a
// block of up to 4.25 bits per code (real BF16 weights average about 3, FP8 about 3); denser
// blocks are read from `data` directly, which is correct but slow (the L1 left beside this much
// shared memory is small). One CTA of 24 warps per SM: 2 x 24 buffers plus the table fill the
// SM's shared memory, and 24 warps already give most matrices about one block per warp (a
// 16-row layout 1 block is twice a layout 0 block).
#define BOUNDED_STAGE 4352

// D = A B + D for one m16n8k16 step: A a 16 x 16 BF16 tile (four bf16x2 registers per lane), B a
// 16 x 8 BF16 tile (two registers), D 16 x 8 f32 (four registers).
__device__ __forceinline__ void mma_step(float (&d)[4], u32 a0, u32 a1, u32 a2, u32 a3, u32 b0, u32 b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// Spec 8.5/8.6: the raw bytes of block (rb, cb) are contiguous, 512 (BF16) or 256 (FP8) bytes per
// super-chunk; asks L2 for all of them (at most 64 lines of 128 bytes, two per lane).
template <bool FP8>
__device__ __forceinline__ void prefetch_raw_frag(const u8* __restrict__ low, const Geo& g, u32 rb, u32 cb, u32 lane) {
    constexpr u32 SC_BYTES = FP8 ? 256 : 512;
    const u32 ns = (u32)min(16ull, g.super_chunks - 16ull * cb);
    const u8* p = low + ((u64)rb * g.super_chunks + 16ull * cb) * SC_BYTES;
    for (u32 off = 128 * lane; off < ns * SC_BYTES; off += 32 * 128) asm volatile("prefetch.global.L2 [%0];" ::"l"(p + off));
}

// One lane's 16 raw parts of a super-chunk as four words, byte t & 3 of word t >> 2 for code t
// (BF16: the 16 bytes as stored; FP8: nibble t, spec 8.6, moved to the high half of its own byte).
template <bool FP8>
__device__ __forceinline__ void raw_frag(const u8* __restrict__ p, u32 (&q)[4]) {
    load_raw<FP8>(p, q);
    if (FP8) nibbles_to_bytes(q);
}

// A lane's reader: its bit position in the block's stream and the two words holding bit `pos`
// and the 32 bits after it, kept in registers. Unlike quad_pairs (two loads per four codes), a
// fast quad moves at most 24 bits, so the pair only moves on by one word, and only then is a
// word loaded: on average once every three quads. (Shared-memory wavefronts were 45% of the
// SM's cycles in this kernel's first form, docs/gpu-history.md.)
struct FragReader {
    u32 pos, w0, w1;
};

template <bool STAGED>
__device__ __forceinline__ u32 frag_word(const u32* words, u32 i) {
    return STAGED ? words[i] : __ldg(words + i);
}

template <bool STAGED>
__device__ __forceinline__ FragReader frag_reader(const u32* words, u32 pos) {
    return FragReader{pos, frag_word<STAGED>(words, pos >> 5), frag_word<STAGED>(words, (pos >> 5) + 1)};
}

// Version 7's pair-table look-up of the window `w`.
struct PairTable {
    __device__ __forceinline__ u32 operator()(u32 w) const { return pair_tab[w >> 20]; }
};

// quad_pairs on a FragReader (same table, same slow path, same results). `pair` looks up a window's
// entry: the pair table in the kernels; a timing probe tries another.
template <bool FP8, bool STAGED, class Pair = PairTable>
__device__ __forceinline__ void quad_frag(const u32* words, FragReader& r, u32& ea, u32& eb, Pair pair = Pair()) {
    const u32 hi = __funnelshift_l(r.w1, r.w0, r.pos);
    const u32 lo = __funnelshift_l(0u, r.w1, r.pos);
    ea = pair(hi);
    const u32 h2 = __funnelshift_l(lo, hi, ea);
    eb = pair(h2);
    u32 next = r.pos + (ea >> 24) + (eb >> 24);
    if ((int)(ea | eb) < 0) { // rare: one code at a time, then reload both words
        r = frag_reader<STAGED>(words, quad_slow<FP8, STAGED>(words, r.pos, ea, eb));
        return;
    }
    if ((next ^ r.pos) >= 32) { // crossed into the next word (by at most one: <= 24 bits)
        r.w0 = r.w1;
        r.w1 = frag_word<STAGED>(words, (next >> 5) + 1);
    }
    r.pos = next;
}

// The 16 codes of one super-chunk as eight bf16x2 words in A-fragment order (spec 8.3 note):
// a[0..3] are registers a0..a3 of the first k16 step, a[4..7] of the second.
template <bool FP8, bool STAGED>
__device__ __forceinline__ void frag_tile(const u32* words, FragReader& rd, const u32 (&q)[4], u32 (&a)[8]) {
#pragma unroll
    for (int d = 0; d < 4; d++) {
        u32 ea, eb;
        quad_frag<FP8, STAGED>(words, rd, ea, eb);
        a[2 * d] = dequant_word(ea, q[d], 0);     // codes 4d, 4d + 1: row r8
        a[2 * d + 1] = dequant_word(eb, q[d], 2); // codes 4d + 2, 4d + 3: row r8 + 8
    }
}

// Spec 8.3 + 19: one block's 16 rows times NT * 8 activation columns. Lane L = 4 r8 + q holds
// the activations of column n = 8j + r8 at columns 32s + 8q .. 32s + 8q + 7 of super-chunk s as
// one 16-byte word: .x, .y are B registers of the first k16 step, .z, .w of the second (the K
// order inside a super-chunk is the one spec 8.3 permutes the weights into). Raw parts and
// activations are loaded one super-chunk ahead.
template <bool FP8, bool STAGED, int NT>
__device__ __forceinline__ void bounded_block(const u32* words, u32 pos, const u8* __restrict__ rawp, const uint4* __restrict__ xp,
                                       u64 xstride, u32 xok, u32 ns, float (&c)[NT][4]) {
    constexpr u32 SC_RAW = FP8 ? 256 : 512; // raw bytes of one super-chunk (32 lanes)
    u32 qn[4];
    uint4 xn[NT];
    FragReader rd = frag_reader<STAGED>(words, pos);
    raw_frag<FP8>(rawp, qn);
#pragma unroll
    for (int j = 0; j < NT; j++) xn[j] = (xok >> j) & 1 ? xp[j * xstride] : make_uint4(0, 0, 0, 0);
#pragma unroll 1
    for (u32 s = 0; s < ns; s++) {
        u32 q[4];
        uint4 xc[NT];
#pragma unroll
        for (int i = 0; i < 4; i++) q[i] = qn[i];
#pragma unroll
        for (int j = 0; j < NT; j++) xc[j] = xn[j];
        if (s + 1 < ns) {
            raw_frag<FP8>(rawp + (s + 1) * SC_RAW, qn);
            xp += 4; // 32 columns on
#pragma unroll
            for (int j = 0; j < NT; j++) xn[j] = (xok >> j) & 1 ? xp[j * xstride] : make_uint4(0, 0, 0, 0);
        }
        u32 a[8];
        frag_tile<FP8, STAGED>(words, rd, q, a);
#pragma unroll
        for (int j = 0; j < NT; j++) {
            mma_step(c[j], a[0], a[1], a[2], a[3], xc[j].x, xc[j].y);
            mma_step(c[j], a[4], a[5], a[6], a[7], xc[j].z, xc[j].w);
        }
    }
}

// Spec 15.4 in the bounded class (spec 19) for layout 1, BF16 activations, `batch` columns
// (at most NT * 8) of x (column n at element n * Kp) into y (column n at element n * M).
// `partial` holds NT * 8 * 16 floats per block, `count` one counter per row block (zero before
// the launch; left zero).
template <bool FP8, int NT>
__device__ void bounded_matvec(const u8* __restrict__ data, const u32* __restrict__ bases, const u8* __restrict__ hdr,
                        const u32* __restrict__ pairs, const u8* __restrict__ low, const float* __restrict__ scale,
                        const u16* __restrict__ x, const float* __restrict__ bias, void* y, int out_bf16, Geo g,
                        float* __restrict__ partial, u32* __restrict__ count, u32 batch) {
    extern __shared__ __align__(16) u8 bounded_dyn[];
    constexpr u32 NCOL = NT * 8;
    const u32 lane = threadIdx.x & 31;
    const u32 cbs = (u32)g.col_blocks;
    const u32 r8 = lane >> 2, q = lane & 3;
    const u64 y_elem = out_bf16 ? 2 : 4;
    auto out = [&](float s, u64 row, u32 n) {
        output_row(s, row, scale, bias, reinterpret_cast<u8*>(y) + n * g.rows * y_elem, out_bf16);
    };
    auto work = [&](u32 b, u32 rb, u32 cb, const u8* buf, LaneStart st) {
        const u32 ns = (u32)min(16ull, g.super_chunks - 16ull * cb);
        const u8* rawp = low + ((u64)rb * g.super_chunks + 16ull * cb) * (FP8 ? 256 : 512) + lane * (FP8 ? 8 : 16);
        // Tile j's activations: column 8j + r8 (xok bit j when it exists), uint4 index j * xstride on.
        const u32 n0 = min(r8, batch - 1);
        const uint4* xp = reinterpret_cast<const uint4*>(x + (u64)n0 * g.kp + 512ull * cb + 8 * q);
        const u64 xstride = g.kp; // 8 columns of Kp BF16 values are Kp 16-byte words
        u32 xok = 0;
#pragma unroll
        for (int j = 0; j < NT; j++) xok |= u32(8 * j + r8 < batch) << j;
        float c[NT][4];
#pragma unroll
        for (int j = 0; j < NT; j++) c[j][0] = c[j][1] = c[j][2] = c[j][3] = 0.0f;
        if (st.staged) bounded_block<FP8, true, NT>(reinterpret_cast<const u32*>(buf), st.pos, rawp, xp, xstride, xok, ns, c);
        else bounded_block<FP8, false, NT>(reinterpret_cast<const u32*>(data + st.start16), st.pos, rawp, xp, xstride, xok, ns, c);
        // Accumulator i of tile j: row 16 rb + r8 + 8 (i >> 1), column n = 8j + 2q + (i & 1).
        const u64 row0 = 16ull * rb;
        if (cbs == 1) {
#pragma unroll
            for (int j = 0; j < NT; j++)
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const u32 r = r8 + 8 * (i >> 1), n = 8 * j + 2 * q + (i & 1);
                    if (n < batch && row0 + r < g.rows) out(c[j][i], row0 + r, n);
                }
            return;
        }
        float* mine = partial + (u64)b * NCOL * 16;
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int i = 0; i < 4; i++) mine[(8 * j + 2 * q + (i & 1)) * 16 + r8 + 8 * (i >> 1)] = c[j][i];
        // Publish, count the block, and let the warp that counts the row block's last block add
        // the partials in ascending cb order (as the exact layout 0 matvec does).
        __threadfence();
        if (last_of_row(count, rb, cbs, lane)) {
            for (u32 i = lane; i < min(batch, NCOL) * 16; i += 32) { // i = n * 16 + row in block
                const u32 n = i / 16, r = i % 16;
                if (row0 + r >= g.rows) continue;
                const float* src = partial + (u64)rb * cbs * NCOL * 16 + i;
                float sum = 0.0f;
                for (u32 k = 0; k < cbs; k++) sum = sum + __ldcg(src + (u64)k * NCOL * 16);
                out(sum, row0 + r, n);
            }
            if (lane == 0) count[rb] = 0; // ready for the next launch (kernel boundaries order it)
        }
    };
    auto prefetch = [&](u32 rb, u32 cb) { prefetch_raw_frag<FP8>(low, g, rb, cb, lane); };
    warp_block_loop<BOUNDED_STAGE>(bounded_dyn, data, bases, hdr, pairs, g, prefetch, work);
}

// NT = 1: batches of up to 8 columns; NT = 2: up to 16.
#define NWC_BOUNDED_MATVEC(NAME, FP8, NT)                                                                               \
    extern "C" __global__ void __launch_bounds__(BOUNDED_THREADS, 1)                                                   \
        NAME(const u8* data, const u32* bases, const u8* hdr, const u32* pairs, const u8* low, const float* scale,   \
             const u16* x, const float* bias, void* y, int out_bf16, Geo g, float* partial, u32* count, u32 batch) { \
        bounded_matvec<FP8, NT>(data, bases, hdr, pairs, low, scale, x, bias, y, out_bf16, g, partial, count, batch);     \
    }
NWC_BOUNDED_MATVEC(nwc_bounded_matvec_bf16_l1, false, 1)
NWC_BOUNDED_MATVEC(nwc_bounded_matvec_c16_bf16_l1, false, 2)
NWC_BOUNDED_MATVEC(nwc_bounded_matvec_fp8_l1, true, 1)
NWC_BOUNDED_MATVEC(nwc_bounded_matvec_c16_fp8_l1, true, 2)
