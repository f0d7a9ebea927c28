// The pair-table decoder shared by the exact layout 0 matvec, the bounded matvec and the layout 1
// dequant, compiled after common.cu: the host-built two-code table (nwc_cuda::pair_table), four
// codes per look-up pair with a slow path, stream staging, and the block loop in which every warp
// takes one block at a time. exact_matvec_l0.cu explains the design.

#define EXACT_WARPS 16
#define EXACT_THREADS (32 * EXACT_WARPS)
#define EXACT_STAGE 2304 // bytes of staged stream per warp and buffer (4096 codes at <= 4.4 bits)
#define PAIR_SLOW 0x80000000u

// The two-code table and exp_of_rank (spec 10.6), built once per matrix by the host
// (nwc_cuda::pair_table, which documents the entry layout) and copied into every CTA.
__shared__ __align__(16) u32 pair_tab[4096 + 16];
#define pair_eor (pair_tab + 4096)

__device__ void copy_pair_table(const u32* __restrict__ pairs) {
    const uint4* src = reinterpret_cast<const uint4*>(pairs);
    uint4* dst = reinterpret_cast<uint4*>(pair_tab);
    for (u32 i = threadIdx.x; i < (4096 + 16) / 4; i += blockDim.x) dst[i] = __ldg(src + i);
    __syncthreads();
}

// The 32 stream bits from bit `pos` on, left-aligned (spec 6.4: MSB first in little-endian
// words). `words` is the staged copy in shared memory or `data` itself.
template <bool STAGED>
__device__ __forceinline__ void stream_window(const u32* words, u32 pos, u32& hi, u32& lo) {
    const u32 i = pos >> 5;
    u32 w0, w1;
    if (STAGED) {
        w0 = words[i];
        w1 = words[i + 1];
    } else {
        w0 = __ldg(words + i);
        w1 = __ldg(words + i + 1);
    }
    hi = __funnelshift_l(w1, w0, pos); // the shift amount is pos & 31
    lo = __funnelshift_l(0u, w1, pos);
}

// Spec 6.1/6.2, one code from bit `pos` by counting zeros: its coded byte; advances pos.
template <bool FP8, bool STAGED>
__device__ __forceinline__ u32 one_code(const u32* words, u32& pos) {
    u32 top, unused;
    stream_window<STAGED>(words, pos, top, unused);
    const u32 z = min((u32)__clz(top), 15u); // a valid stream never has more; the clamp bounds pair_eor
    const bool escape = !FP8 && z == 15;       // 15 zeros, the one, 8 verbatim bits (spec 6.2)
    const u32 coded = (((top >> (30 - z)) & 1) << 7) | pair_eor[z];
    pos += escape ? 24 : z + 2;
    return escape ? (top >> 8) & 0xFF : coded;
}

// The rare case of a quad (a pair longer than 12 bits, an FP8 rank >= 10, an escape): the four
// codes from bit `pos` one by one, as two table-layout entries; returns the position after them.
template <bool FP8, bool STAGED>
__device__ __forceinline__ u32 quad_slow(const u32* words, u32 pos, u32& ea, u32& eb) {
    u32 p = pos;
    const u32 c0 = one_code<FP8, STAGED>(words, p);
    const u32 c1 = one_code<FP8, STAGED>(words, p);
    const u32 c2 = one_code<FP8, STAGED>(words, p);
    const u32 c3 = one_code<FP8, STAGED>(words, p);
    ea = (c0 << 8) | (c1 << 16);
    eb = (c2 << 8) | (c3 << 16);
    return p;
}

// Four codes from bit `pos` as two table-layout entries (coded bytes in bytes 1 and 2, byte 0
// zero). The fast path does two look-ups; a lane that met an entry without two complete codes
// (spec 10.1) redoes the four codes one by one.
template <bool FP8, bool STAGED>
__device__ __forceinline__ void quad_pairs(const u32* words, u32& pos, u32& ea, u32& eb) {
    u32 hi, lo;
    stream_window<STAGED>(words, pos, hi, lo);
    ea = pair_tab[hi >> 20];
    const u32 h2 = __funnelshift_l(lo, hi, ea); // drop the first pair: shift by ea & 31 = its length
    eb = pair_tab[h2 >> 20];
    const bool slow = (int)(ea | eb) < 0;
    u32 next = pos + (ea >> 24) + (eb >> 24);
    if (slow) next = quad_slow<FP8, STAGED>(words, pos, ea, eb);
    pos = next;
}

// f32 bits of a weight: byte 3 = coded byte `which` (1 or 2) of entry e, byte 2 = raw byte
// `rb` (0..3) of q, bytes 1 and 0 = sign copies of e's byte 0, which is below 0x80 (zero).
// (PTX prmt replicates the sign of a byte when bit 3 of its selector is set; __byte_perm ignores
// that bit, hence the inline PTX.)
__device__ __forceinline__ float weight_bits(u32 e, u32 q, u32 rb, u32 which) {
    u32 r;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(e), "r"(q), "r"(0x0088u | ((4u + rb) << 8) | (which << 12)));
    return __uint_as_float(r);
}

// The dequant word of two codes (raw, coded, raw, coded) from entry e and raw word q.
__device__ __forceinline__ u32 dequant_word(u32 e, u32 q, u32 rb) {
    return __byte_perm(e, q, (4u + rb) | (1u << 4) | ((5u + rb) << 8) | (2u << 12));
}

// FP8 raw parts as loaded (two words of 16 nibbles; nibble t at byte (t & 3) + 4 (t >> 3), high
// half when bit 2 of t is set: spec 7.4, 8.6) to four words with nibble t in the high half of byte
// t & 3 of word t >> 2, where a BF16 raw byte would be.
__device__ __forceinline__ void nibbles_to_bytes(u32 (&q)[4]) {
    const u32 r0 = q[0], r1 = q[1];
    q[0] = (r0 << 4) & 0xF0F0F0F0u;
    q[1] = r0 & 0xF0F0F0F0u;
    q[2] = (r1 << 4) & 0xF0F0F0F0u;
    q[3] = r1 & 0xF0F0F0F0u;
}

// One lane's raw row (16 BF16 bytes or 8 FP8 nibble bytes), zeros for rows past M or lanes past
// K16 (spec 15.4.3: those positions are fillers, and a zero raw part keeps them finite).
template <bool FP8>
__device__ __forceinline__ void raw_row(const u8* __restrict__ p, bool ok, u32 (&r)[4]) {
    r[0] = r[1] = r[2] = r[3] = 0;
    if (ok) load_raw<FP8>(p, r);
}

// Lane start and staging of one block (spec 9.1/9.2): the lane's first bit counted from byte
// `start16` of `data` (the block's offset rounded down to 16), and whether the stream from there
// was staged in shared memory. Positions stay below 2^17 whatever the size of `data`.
struct LaneStart {
    u32 pos;
    bool staged;
    u32 start16;
};

template <u32 STAGE>
__device__ __forceinline__ LaneStart stage_stream(u8* buf, const u8* __restrict__ data, u32 lane, u32 words, u32 base) {
    const StreamSpan sp = lane_span(lane, words, base);
    const u32 start16 = sp.start16, n16 = sp.n16;
    LaneStart st;
    // A lane reads at most two words past its last one: +16 keeps that inside the buffer, and the
    // staged span ends at most 15 bytes past the stream end, inside the spec 9.5 tail slack.
    st.staged = n16 * 16 + 16 <= STAGE;
    if (st.staged) {
        const u32 dst = smem_u32(buf);
        for (u32 k = lane; k < n16; k += 32) cp_async16(dst + 16 * k, data + start16 + 16 * k, 16);
    }
    st.pos = 32 * ((base - start16) / 4 + sp.before);
    st.start16 = start16;
    return st;
}

// Asks L2 for block (rb, cb)'s raw rows (8 rows x 512 BF16 bytes or 256 FP8 bytes), one 128-byte
// line per lane, so the row loads of the next block hit L2.
template <bool FP8>
__device__ __forceinline__ void prefetch_raw_rows(const u8* __restrict__ low, const Geo& g, u32 rb, u32 cb, u32 lane) {
    constexpr u32 LINES = FP8 ? 2 : 4; // lines per row
    const u32 i = lane / LINES, part = lane % LINES;
    const u64 row = 8ull * rb + i;
    const u64 stride = FP8 ? g.k16 / 2 : g.k16;
    const u64 col = (FP8 ? 256ull : 512ull) * cb + 128ull * part;
    if (i < 8 && row < g.rows && col < stride) asm volatile("prefetch.global.L2 [%0];" ::"l"(low + row * stride + col));
}


// Counts one more finished block of row block rb, whose partials its writers have published and
// fenced, and says whether it was the row block's last of `cbs`; the warp that gets true then
// sees every partial of the row block (the second fence) and resets the counter when done.
__device__ __forceinline__ bool last_of_row(u32* __restrict__ count, u32 rb, u32 cbs, u32 lane) {
    __syncwarp();
    u32 old = 0;
    if (lane == 0) old = atomicAdd(count + rb, 1u);
    old = __shfl_sync(0xffffffffu, old, 0);
    const bool last = old == cbs - 1;
    if (last) __threadfence();
    return last;
}

// Spec 15.4.6 for one row.
__device__ __forceinline__ void output_row(float s, u64 row, const float* __restrict__ scale, const float* __restrict__ bias,
                                        void* y, int out_bf16) {
    float v = s;
    if (scale) v = v * scale[row];
    if (bias) v = v + bias[row];
    if (out_bf16) reinterpret_cast<u16*>(y)[row] = bf16_rne(v);
    else reinterpret_cast<float*>(y)[row] = v;
}

// The block loop the exact layout 0 matvec, the bounded matvec and the layout 1 dequant share: warp `gw` of `tw` takes blocks
// b = gw, gw + tw, ... in row-major order, copies block n + 1's stream into its other buffer of
// STAGE bytes and asks L2 for block n + 1's raw bytes (`prefetch(rb, cb)`) while it decodes
// block n (`work(b, rb, cb, buf, start)`; the stream is in `buf` when start.staged, else in
// `data`: two template instances, so the compiler knows which memory the words come from).
template <u32 STAGE, class Prefetch, class Setup, class Work>
__device__ __forceinline__ void block_loop(u8* mybuf, u32 gw, u32 tw, const u8* __restrict__ data, const u32* __restrict__ bases,
                                        const u8* __restrict__ hdr, const Geo& g, u32 lane, Prefetch prefetch,
                                        Setup setup, Work work) {
    const u32 cbs = (u32)g.col_blocks;
    const u32 nb = (u32)(g.row_blocks * g.col_blocks); // < 2^32 (spec 3 hard limits)
    // The first block's stream copy, its raw rows and the next block's header byte and offset
    // are requested before `setup` (the table build) so their latency overlaps it. `setup` runs
    // on every thread of the CTA (it has barriers), also on warps without a block.
    u32 b = gw;
    LaneStart cur = {0, false, 0};
    bool has_next = false;
    u32 words_next = 0, base_next = 0;
    if (b < nb) {
        cur = stage_stream<STAGE>(mybuf, data, lane, hdr[(u64)b * 32 + lane], bases[b]);
        prefetch(b / cbs, b % cbs);
        // Header byte and offset of the block after the next one are loaded a step early, so
        // the staging of each block never waits for them.
        has_next = b + tw < nb && b + tw > b;
        if (has_next) {
            words_next = hdr[(u64)(b + tw) * 32 + lane];
            base_next = bases[b + tw];
        }
    }
    cp_commit();
    setup();
    if (b >= nb) return;
    // Programmatic dependent launch (common.cu): the first block's stream and raw rows are on
    // their way (matrix fields); activations, outputs, partials and counters come after the wait.
    grid_dependency_wait();
    for (u32 n = 0;; n++) {
        const u32 bn = b + tw;
        const bool next = has_next;
        LaneStart nxt = {0, false, 0};
        if (next) {
            nxt = stage_stream<STAGE>(mybuf + ((n + 1) & 1) * STAGE, data, lane, words_next, base_next);
            prefetch(bn / cbs, bn % cbs);
        }
        cp_commit();
        has_next = next && bn + tw < nb && bn + tw > bn;
        if (has_next) {
            words_next = hdr[(u64)(bn + tw) * 32 + lane];
            base_next = bases[bn + tw];
        }
        cp_wait<1>(); // block b's stream has landed
        __syncwarp();
        // The next kernel may launch once every warp is at its last block (a persistent grid's
        // tail; at the start where a warp has one block): its CTAs then take the SMs this one frees.
        if (!next) grid_dependency_release();
        work(b, b / cbs, b % cbs, mybuf + (n & 1) * STAGE, cur);
        __syncwarp(); // every lane is done with buffer n & 1 before step n + 1 refills it
        if (!next) break;
        b = bn;
        cur = nxt;
    }
    cp_wait<0>();
}

// The kernels' common frame: this warp's place among all warps of the grid, its two staging
// buffers of STAGE bytes in dynamic shared memory, the table copy, then block_loop.
template <u32 STAGE, class Prefetch, class Work>
__device__ __forceinline__ void warp_block_loop(u8* dyn, const u8* __restrict__ data, const u32* __restrict__ bases,
                                             const u8* __restrict__ hdr, const u32* __restrict__ pairs, const Geo& g,
                                             Prefetch prefetch, Work work) {
    const u32 warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    block_loop<STAGE>(dyn + warp * 2 * STAGE, blockIdx.x * warps + warp, gridDim.x * warps, data, bases, hdr, g, threadIdx.x & 31,
                   prefetch, [&] { copy_pair_table(pairs); }, work);
}

// Spec 15.2 entry points on this block loop (the layout 1 dequant; the bench's version 7 dequant).
#define NWC_DEQUANT_ENTRY(NAME, FN, THREADS, MIN_CTAS, FP8)                                                  \
    extern "C" __global__ void __launch_bounds__(THREADS, MIN_CTAS)                                            \
        NAME(const u8* data, const u32* bases, const u8* hdr, const u32* pairs, const u8* low, u16* out, Geo g) { \
        FN<FP8>(data, bases, hdr, pairs, low, out, g);                                                         \
    }
