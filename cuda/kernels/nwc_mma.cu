// NWC format 10 GPU kernels, version 9 (issue 7): layout 1 (spec 8) on tensor cores. Compiled by
// NVRTC after nwc_v7.cu (one translation unit), whose decoder (quad7, the host-built pair table),
// stream staging and block loop it reuses.
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

#define V9_WARPS 24
#define V9_THREADS (32 * V9_WARPS)
// Bytes of staged stream per warp and buffer: a layout 1 block has 8192 codes, so this holds a
// block of up to 4.25 bits per code (real BF16 weights average about 3, FP8 about 3); denser
// blocks are read from `data` directly, which is correct but slow (the L1 left beside this much
// shared memory is small). One CTA of 24 warps per SM: 2 x 24 buffers plus the table fill the
// SM's shared memory, and 24 warps already give most matrices about one block per warp (a
// 16-row layout 1 block is twice a layout 0 block).
#define V9_STAGE 4352

// D = A B + D for one m16n8k16 step: A a 16 x 16 BF16 tile (four bf16x2 registers per lane), B a
// 16 x 8 BF16 tile (two registers), D 16 x 8 f32 (four registers).
__device__ __forceinline__ void mma9(float (&d)[4], u32 a0, u32 a1, u32 a2, u32 a3, u32 b0, u32 b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// Spec 8.5/8.6: the raw bytes of block (rb, cb) are contiguous, 512 (BF16) or 256 (FP8) bytes per
// super-chunk; asks L2 for all of them (at most 64 lines of 128 bytes, two per lane).
template <bool FP8>
__device__ __forceinline__ void prefetch_raw9(const u8* __restrict__ low, const Geo& g, u32 rb, u32 cb, u32 lane) {
    constexpr u32 SC_BYTES = FP8 ? 256 : 512;
    const u32 ns = (u32)min(16ull, g.super_chunks - 16ull * cb);
    const u8* p = low + ((u64)rb * g.super_chunks + 16ull * cb) * SC_BYTES;
    for (u32 off = 128 * lane; off < ns * SC_BYTES; off += 32 * 128) asm volatile("prefetch.global.L2 [%0];" ::"l"(p + off));
}

// One lane's 16 raw parts of a super-chunk as four words, byte t & 3 of word t >> 2 for code t
// (BF16: the 16 bytes as stored; FP8: nibble t, spec 8.6, moved to the high half of its own byte).
template <bool FP8>
__device__ __forceinline__ void raw9(const u8* __restrict__ p, u32 (&q)[4]) {
    load_raw<FP8>(p, q);
    if (FP8) nibbles7(q);
}

// A lane's reader: its bit position in the block's stream and the two words holding bit `pos`
// and the 32 bits after it, kept in registers. Unlike version 7 (two loads per four codes), a
// fast quad moves at most 24 bits, so the pair only moves on by one word, and only then is a
// word loaded: on average once every three quads. (Shared-memory wavefronts were 45% of the
// SM's cycles in version 9's first form, docs/gpu.md.)
struct Reader9 {
    u32 pos, w0, w1;
};

template <bool STAGED>
__device__ __forceinline__ u32 word9(const u32* words, u32 i) {
    return STAGED ? words[i] : __ldg(words + i);
}

template <bool STAGED>
__device__ __forceinline__ Reader9 reader9(const u32* words, u32 pos) {
    return Reader9{pos, word9<STAGED>(words, pos >> 5), word9<STAGED>(words, (pos >> 5) + 1)};
}

// Version 7's pair-table look-up of the window `w`.
struct PairTab7 {
    __device__ __forceinline__ u32 operator()(u32 w) const { return v7_tab[w >> 20]; }
};

// quad7 on a Reader9 (same table, same slow path, same results). `pair` looks up a window's
// entry: version 7's table in the kernels; a timing probe tries another.
template <bool FP8, bool STAGED, class Pair = PairTab7>
__device__ __forceinline__ void quad9(const u32* words, Reader9& r, u32& ea, u32& eb, Pair pair = Pair()) {
    const u32 hi = __funnelshift_l(r.w1, r.w0, r.pos);
    const u32 lo = __funnelshift_l(0u, r.w1, r.pos);
    ea = pair(hi);
    const u32 h2 = __funnelshift_l(lo, hi, ea);
    eb = pair(h2);
    u32 next = r.pos + (ea >> 24) + (eb >> 24);
    if ((int)(ea | eb) < 0) { // rare: one code at a time, then reload both words
        r = reader9<STAGED>(words, slow7<FP8, STAGED>(words, r.pos, ea, eb));
        return;
    }
    if ((next ^ r.pos) >= 32) { // crossed into the next word (by at most one: <= 24 bits)
        r.w0 = r.w1;
        r.w1 = word9<STAGED>(words, (next >> 5) + 1);
    }
    r.pos = next;
}

// The 16 codes of one super-chunk as eight bf16x2 words in A-fragment order (spec 8.3 note):
// a[0..3] are registers a0..a3 of the first k16 step, a[4..7] of the second.
template <bool FP8, bool STAGED>
__device__ __forceinline__ void tile9(const u32* words, Reader9& rd, const u32 (&q)[4], u32 (&a)[8]) {
#pragma unroll
    for (int d = 0; d < 4; d++) {
        u32 ea, eb;
        quad9<FP8, STAGED>(words, rd, ea, eb);
        a[2 * d] = word7(ea, q[d], 0);     // codes 4d, 4d + 1: row r8
        a[2 * d + 1] = word7(eb, q[d], 2); // codes 4d + 2, 4d + 3: row r8 + 8
    }
}

// Spec 8.3 + 19: one block's 16 rows times NT * 8 activation columns. Lane L = 4 r8 + q holds
// the activations of column n = 8j + r8 at columns 32s + 8q .. 32s + 8q + 7 of super-chunk s as
// one 16-byte word: .x, .y are B registers of the first k16 step, .z, .w of the second (the K
// order inside a super-chunk is the one spec 8.3 permutes the weights into). Raw parts and
// activations are loaded one super-chunk ahead.
template <bool FP8, bool STAGED, int NT>
__device__ __forceinline__ void block9(const u32* words, u32 pos, const u8* __restrict__ rawp, const uint4* __restrict__ xp,
                                       u64 xstride, u32 xok, u32 ns, float (&c)[NT][4]) {
    constexpr u32 SC_RAW = FP8 ? 256 : 512; // raw bytes of one super-chunk (32 lanes)
    u32 qn[4];
    uint4 xn[NT];
    Reader9 rd = reader9<STAGED>(words, pos);
    raw9<FP8>(rawp, qn);
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
            raw9<FP8>(rawp + (s + 1) * SC_RAW, qn);
            xp += 4; // 32 columns on
#pragma unroll
            for (int j = 0; j < NT; j++) xn[j] = (xok >> j) & 1 ? xp[j * xstride] : make_uint4(0, 0, 0, 0);
        }
        u32 a[8];
        tile9<FP8, STAGED>(words, rd, q, a);
#pragma unroll
        for (int j = 0; j < NT; j++) {
            mma9(c[j], a[0], a[1], a[2], a[3], xc[j].x, xc[j].y);
            mma9(c[j], a[4], a[5], a[6], a[7], xc[j].z, xc[j].w);
        }
    }
}

// Spec 15.4 in the bounded class (spec 19) for layout 1, BF16 activations, `batch` columns
// (at most NT * 8) of x (column n at element n * Kp) into y (column n at element n * M).
// `partial` holds NT * 8 * 16 floats per block, `count` one counter per row block (zero before
// the launch; left zero).
template <bool FP8, int NT>
__device__ void matvec9(const u8* __restrict__ data, const u32* __restrict__ bases, const u8* __restrict__ hdr,
                        const u32* __restrict__ pairs, const u8* __restrict__ low, const float* __restrict__ scale,
                        const u16* __restrict__ x, const float* __restrict__ bias, void* y, int out_bf16, Geo g,
                        float* __restrict__ partial, u32* __restrict__ count, u32 batch) {
    extern __shared__ __align__(16) u8 v9_dyn[];
    constexpr u32 NCOL = NT * 8;
    const u32 lane = threadIdx.x & 31;
    const u32 cbs = (u32)g.col_blocks;
    const u32 r8 = lane >> 2, q = lane & 3;
    const u64 y_elem = out_bf16 ? 2 : 4;
    auto out = [&](float s, u64 row, u32 n) {
        output7(s, row, scale, bias, reinterpret_cast<u8*>(y) + n * g.rows * y_elem, out_bf16);
    };
    auto work = [&](u32 b, u32 rb, u32 cb, const u8* buf, Start7 st) {
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
        if (st.staged) block9<FP8, true, NT>(reinterpret_cast<const u32*>(buf), st.pos, rawp, xp, xstride, xok, ns, c);
        else block9<FP8, false, NT>(reinterpret_cast<const u32*>(data + st.start16), st.pos, rawp, xp, xstride, xok, ns, c);
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
        // the partials in ascending cb order (as version 7 does).
        __threadfence();
        if (last_of_row7(count, rb, cbs, lane)) {
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
    auto prefetch = [&](u32 rb, u32 cb) { prefetch_raw9<FP8>(low, g, rb, cb, lane); };
    warp_blocks7<V9_STAGE>(v9_dyn, data, bases, hdr, pairs, g, prefetch, work);
}

// NT = 1: batches of up to 8 columns; NT = 2: up to 16.
#define NWC_MATVEC9(NAME, FP8, NT)                                                                               \
    extern "C" __global__ void __launch_bounds__(V9_THREADS, 1)                                                   \
        NAME(const u8* data, const u32* bases, const u8* hdr, const u32* pairs, const u8* low, const float* scale,   \
             const u16* x, const float* bias, void* y, int out_bf16, Geo g, float* partial, u32* count, u32 batch) { \
        matvec9<FP8, NT>(data, bases, hdr, pairs, low, scale, x, bias, y, out_bf16, g, partial, count, batch);     \
    }
NWC_MATVEC9(nwc_matvec9_bf16_l1, false, 1)
NWC_MATVEC9(nwc_matvec9x16_bf16_l1, false, 2)
NWC_MATVEC9(nwc_matvec9_fp8_l1, true, 1)
NWC_MATVEC9(nwc_matvec9x16_fp8_l1, true, 2)

// Spec 15.2 for layout 1, exact: lane L = 4 r8 + q writes, per super-chunk s, columns
// 32s + 8q .. 32s + 8q + 7 of rows r8 and r8 + 8 (16 bytes each; the first row's words are the
// A registers a0, a2 of both k16 steps, the second row's a1, a3). Columns at or past K16 are not
// written (K16 is a multiple of 16, so a lane's 8 columns lie all inside or all outside).
template <bool FP8, bool STAGED>
__device__ __forceinline__ void rows_dequant9(const u32* words, u32 pos, const u8* __restrict__ rawp, u32 ns, u16* dst0,
                                              u16* dst1, u64 col0, const Geo& g, bool ok0, bool ok1) {
    constexpr u32 SC_RAW = FP8 ? 256 : 512;
    u32 qn[4];
    Reader9 rd = reader9<STAGED>(words, pos);
    raw9<FP8>(rawp, qn);
#pragma unroll 1
    for (u32 s = 0; s < ns; s++) {
        u32 q[4];
#pragma unroll
        for (int i = 0; i < 4; i++) q[i] = qn[i];
        if (s + 1 < ns) raw9<FP8>(rawp + (s + 1) * SC_RAW, qn);
        u32 a[8];
        tile9<FP8, STAGED>(words, rd, q, a);
        const u64 col = col0 + 32ull * s;
        if (col < g.k16) {
            if (ok0) *reinterpret_cast<uint4*>(dst0 + 32ull * s) = make_uint4(a[0], a[2], a[4], a[6]);
            if (ok1) *reinterpret_cast<uint4*>(dst1 + 32ull * s) = make_uint4(a[1], a[3], a[5], a[7]);
        }
    }
}

template <bool FP8>
__device__ void dequant9(const u8* __restrict__ data, const u32* __restrict__ bases, const u8* __restrict__ hdr,
                         const u32* __restrict__ pairs, const u8* __restrict__ low, u16* __restrict__ out, Geo g) {
    extern __shared__ __align__(16) u8 v9_dyn[];
    const u32 lane = threadIdx.x & 31;
    const u32 r8 = lane >> 2, q = lane & 3;
    auto work = [&](u32, u32 rb, u32 cb, const u8* buf, Start7 st) {
        const u32 ns = (u32)min(16ull, g.super_chunks - 16ull * cb);
        const u8* rawp = low + ((u64)rb * g.super_chunks + 16ull * cb) * (FP8 ? 256 : 512) + lane * (FP8 ? 8 : 16);
        const u64 row0 = 16ull * rb + r8, col0 = 512ull * cb + 8 * q;
        const bool ok0 = row0 < g.rows, ok1 = row0 + 8 < g.rows;
        u16* dst0 = out + row0 * g.k16 + col0;
        u16* dst1 = dst0 + 8 * g.k16;
        if (st.staged) rows_dequant9<FP8, true>(reinterpret_cast<const u32*>(buf), st.pos, rawp, ns, dst0, dst1, col0, g, ok0, ok1);
        else rows_dequant9<FP8, false>(reinterpret_cast<const u32*>(data + st.start16), st.pos, rawp, ns, dst0, dst1, col0, g, ok0, ok1);
    };
    auto prefetch = [&](u32 rb, u32 cb) { prefetch_raw9<FP8>(low, g, rb, cb, lane); };
    warp_blocks7<V9_STAGE>(v9_dyn, data, bases, hdr, pairs, g, prefetch, work);
}

NWC_DEQUANT_ENTRY(nwc_dequant9_bf16_l1, dequant9, V9_THREADS, 1, false)
NWC_DEQUANT_ENTRY(nwc_dequant9_fp8_l1, dequant9, V9_THREADS, 1, true)

// Timing probes (docs/gpu.md, "Where the time goes"): version 7's block loop and staging, then
// only the decode of each lane's 128 codes in one flat loop, with the stream read by quad7 (two
// shared loads per quad; READER false) or by quad9 (stream words kept in registers; true).
// (`pair`: the look-up quad9 uses.)
template <bool READER, bool STAGED, class Pair = PairTab7>
__device__ __forceinline__ u32 probe_quads7(const u32* words, u32 pos, Pair pair = Pair()) {
    u32 probe = 0;
    Reader9 rd = reader9<STAGED>(words, pos);
#pragma unroll 4
    for (u32 i = 0; i < 32; i++) {
        u32 ea, eb;
        if (READER) quad9<false, STAGED>(words, rd, ea, eb, pair);
        else quad7<false, STAGED>(words, pos, ea, eb);
        probe ^= ea ^ eb;
    }
    return probe;
}

template <bool READER>
__device__ void probe_decode7(const u8* __restrict__ data, const u32* __restrict__ bases, const u8* __restrict__ hdr,
                              const u32* __restrict__ pairs, const Geo& g, float* __restrict__ partial) {
    extern __shared__ __align__(16) u8 v7_dyn[];
    auto work = [&](u32 b, u32, u32, const u8* buf, Start7 st) {
        const u32 probe = st.staged ? probe_quads7<READER, true>(reinterpret_cast<const u32*>(buf), st.pos)
                                    : probe_quads7<READER, false>(reinterpret_cast<const u32*>(data + st.start16), st.pos);
        if (probe == 0x9E3779B9u) partial[b] = 1.0f; // a store the compiler cannot drop
    };
    warp_blocks7<V7_STAGE>(v7_dyn, data, bases, hdr, pairs, g, [](u32, u32) {}, work);
}

#define NWC_PROBE_DECODE(NAME, READER)                                                                         \
    extern "C" __global__ void __launch_bounds__(V7_THREADS, 2)                                                 \
        NAME(const u8* data, const u32* bases, const u8* hdr, const u32* pairs, const u8* low, const float* scale, \
             const void* x, const float* bias, void* y, int out_bf16, Geo g, float* partial, u32* count) {     \
        probe_decode7<READER>(data, bases, hdr, pairs, g, partial);                                            \
    }
NWC_PROBE_DECODE(nwc_probe7_decode_flat, false)
NWC_PROBE_DECODE(nwc_probe7_decode_reg, true)

// Timing probe "rep": a pair table without bank conflicts. The first 8 bits of the window index
// a 256-entry table of the pairs that fit in 8 bits, kept 32 times over so that lane L reads
// its copy from bank L (entry i of lane L at word 32 i + L: 32 KB). About 96% of the pairs of
// normal-like weights fit (docs/gpu.md); a lane whose pair does not reads version 7's 12-bit table
// instead (a predicated load, no branch), and the rare quad neither can decode takes the slow path.
// Stream words are kept in registers as in quad9.
#define PROBE_REP_STAGE 1792
#define PROBE_REP_BYTES (256 * 32 * 4)

__device__ __forceinline__ u32 pair_rep(u32 rep, u32 tab12, u32 w, u32 lane) {
    u32 e;
    asm volatile("ld.shared.u32 %0, [%1];" : "=r"(e) : "r"(rep + (((w >> 24) * 32 + lane) << 2)));
    asm volatile("{ .reg .pred p; setp.lt.s32 p, %0, 0; @p ld.shared.u32 %0, [%1]; }" : "+r"(e) : "r"(tab12 + ((w >> 20) << 2)));
    return e;
}

// pair_rep as quad9's look-up.
struct PairRep {
    u32 rep, tab12, lane;
    __device__ __forceinline__ u32 operator()(u32 w) const { return pair_rep(rep, tab12, w, lane); }
};

extern "C" __global__ void __launch_bounds__(V7_THREADS, 2)
    nwc_probe7_decode_rep(const u8* data, const u32* bases, const u8* hdr, const u32* pairs, const u8* low, const float* scale,
                          const void* x, const float* bias, void* y, int out_bf16, Geo g, float* partial, u32* count) {
    extern __shared__ __align__(16) u8 probe_rep_dyn[];
    u32* rep_tab = reinterpret_cast<u32*>(probe_rep_dyn);
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const u32 rep = smem_u32(rep_tab), tab12 = smem_u32(v7_tab);
    auto setup = [&] {
        copy_tables7(pairs);
        for (u32 i = threadIdx.x; i < 256 * 32; i += blockDim.x) {
            const u32 e = v7_tab[(i >> 5) << 4]; // the pair of pattern i / 32 followed by four zeros
            rep_tab[i] = (int)e >= 0 && (e >> 24) <= 8 ? e : V7_SLOW;
        }
        __syncthreads();
    };
    auto work = [&](u32 b, u32, u32, const u8* buf, Start7 st) {
        const PairRep pair = {rep, tab12, lane};
        const u32 probe = st.staged ? probe_quads7<true, true>(reinterpret_cast<const u32*>(buf), st.pos, pair)
                                    : probe_quads7<true, false>(reinterpret_cast<const u32*>(data + st.start16), st.pos, pair);
        if (probe == 0x9E3779B9u) partial[b] = 1.0f; // a store the compiler cannot drop
    };
    blocks7<PROBE_REP_STAGE>(probe_rep_dyn + PROBE_REP_BYTES + warp * 2 * PROBE_REP_STAGE, blockIdx.x * warps + warp, gridDim.x * warps,
                             data, bases, hdr, g, lane, [](u32, u32) {}, setup, work);
}
