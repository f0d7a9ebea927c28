// The dequant of layout 0 (spec 15.2; historically "version 6"), compiled after common.cu. Measured
// faster than a dequant on pair_decode.cu's decoder on 6 of the 8 bench shapes (docs/results.md);
// the bench's version 6 matvec (bench/versions.cu) shares this file's staging and reader.
//
// =============================================================================================
// How it decodes (same results bit for bit as one code at a time; docs/gpu-history.md has the
// reasons and the measurements):
//  - a 4096-entry pair table built in shared memory from exp_of_rank (spec 10.6 recovery; rule
//    lut-mismatch makes it equal to the stored table), so no CTA copies 16 KB from global memory;
//  - each block's raw plane and stream are copied into a per-warp shared buffer with cp.async;
//  - a weight's f32 bits come from one byte permute of the table entry and the raw word;
//  - filler positions are not masked: a filler code with a zero raw part decodes to a finite value
//    (its exponent byte is at most 0xFE, spec 4.1/4.4) and meets x = 0 (activations are padded
//    with zeros), so fma(w, 0, a) == a exactly (a is never -0, spec 15.4.3). Lanes whose columns
//    lie past K16 and rows past M get raw 0 (cp.async zero fill) for the same reason.

#define PAIR_WINDOW 12
#define PAIR_ENTRIES (1u << PAIR_WINDOW)
#define STAGED_STREAM 1792 // bytes of staged stream per warp and buffer (4096 codes at <= 3.4 bits)

// Bytes of one warp's buffer: the block's raw plane (8 rows x 32 lanes x 16 or 8 bytes), then
// its staged stream. Each warp has two, used alternately (block n decodes from one while block
// n + 1 arrives in the other). The host sizes dynamic shared memory as warps * 2 * StagedBuf<FP8>::BYTES.
template <bool FP8>
struct StagedBuf {
    static constexpr u32 RAW = FP8 ? 2048 : 4096;
    static constexpr u32 BYTES = RAW + STAGED_STREAM;
};

// The staged reader's pair table and exp_of_rank, at fixed shared addresses. Each kernel that uses
// them gets its own copy.
__shared__ u32 staged_pairs[PAIR_ENTRIES];
__shared__ u32 staged_eor[16];

// Spec 10.1-10.3, rebuilt from exp_of_rank (spec 10.6; rule lut-mismatch guarantees the stored
// table is exactly this one, so no CTA copies 16 KB from global memory): entry = len0 + len1 |
// byte0 << 8 | byte1 << 16 when two complete codes fit the 12-bit window, else LUT_PARTIAL
// (| LUT_ONE_CODE | len0 | byte0 << 8 when one does). Byte 3 of a two-code entry is zero: the
// byte permutes below use it as their zero byte.
template <bool FP8>
__device__ void build_staged_pairs(const u32* __restrict__ lut) {
    if (threadIdx.x < 16) {
        const int r = threadIdx.x;
        u32 v = 0;
        if (r <= 10) v = (__ldg(lut + (1u << (11 - r))) >> 8) & 0xFF;
        else if (r == 11) v = (__ldg(lut) >> 8) & 0xFF;
        else if (r == 12) v = (__ldg(lut) >> 16) & 0xFF;
        else if (r == 13) v = (__ldg(lut + 1) >> 8) & 0xFF;
        else if (r == 14) v = (__ldg(lut + 1) >> 16) & 0xFF;
        staged_eor[r] = v;
    }
    __syncthreads();
    const u32 rank_limit = FP8 ? 10 : 15; // spec 5: ranks a code can have
    for (u32 p = threadIdx.x; p < PAIR_ENTRIES; p += blockDim.x) {
        const u32 v = p << (32 - PAIR_WINDOW); // the window, left-aligned; bits past it are zero
        const u32 z0 = __clz(v);            // 32 when v == 0
        u32 e = LUT_PARTIAL;
        if (z0 < rank_limit && z0 + 2 <= PAIR_WINDOW) {
            const u32 len0 = z0 + 2;
            const u32 b0 = (((v >> (30 - z0)) & 1) << 7) | staged_eor[z0];
            const u32 v1 = v << len0;
            const u32 z1 = __clz(v1);
            if (z1 < rank_limit && len0 + z1 + 2 <= PAIR_WINDOW) {
                const u32 b1 = (((v1 >> (30 - z1)) & 1) << 7) | staged_eor[z1];
                e = (len0 + z1 + 2) | (b0 << 8) | (b1 << 16);
            } else {
                e = LUT_PARTIAL | LUT_ONE_CODE | len0 | (b0 << 8);
            }
        }
        staged_pairs[p] = e;
    }
    __syncthreads();
}

// Spec 6.4 bit reader of the staged kernels: the 64 unread bits left-aligned in (hi, lo); the low byte of
// `count` is how many are real (the bits above it are junk: consuming subtracts a whole table
// entry, whose low byte is the length). Words come from the staged copy in shared memory
// (STAGED) or straight from global memory, by a 32-bit word index.
template <bool STAGED>
struct StagedReader {
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
        const u32 b = (((hi >> (30 - z)) & 1) << 7) | staged_eor[z];
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
__device__ __forceinline__ u32 StagedReader<STAGED>::pair() {
    u32 e = staged_pairs[hi >> (32 - PAIR_WINDOW)];
    if (e & LUT_PARTIAL) {
        e = slow_pair<FP8>(e);
    } else {
        drop(e);
        count -= e; // only the low byte matters; e's length byte is <= 12
    }
    return e;
}

template <bool STAGED>
__device__ __forceinline__ StagedReader<STAGED> staged_reader(const u32* words, u32 first) {
    StagedReader<STAGED> r;
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
__device__ __forceinline__ void staged_raw_bytes(const u32 (&r)[4], u32 (&q)[4]) {
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
__device__ __forceinline__ float staged_weight(u32 e, const u32 (&q)[4], int t, u32 which) {
    return __uint_as_float(__byte_perm(e, q[t >> 2], 0x0033u | ((4u + (t & 3)) << 8) | (which << 12)));
}

// The dequant word of codes t, t + 1 (t even): [raw t, coded t, raw t+1, coded t+1].
__device__ __forceinline__ u32 staged_word_pair(u32 e, const u32 (&q)[4], int t) {
    return __byte_perm(e, q[t >> 2], (4u + (t & 3)) | (1u << 4) | ((5u + (t & 3)) << 8) | (2u << 12));
}

// Where a lane's codes of a prefetched block start: a word index into the staged copy, or into
// `data` (as u32) when the block's stream is too long to stage.
struct BlockStart {
    u32 first;
    bool staged;
};

// Starts copying block (rb, cb) into the warp buffer `buf`: the 8 raw rows of every lane (zeros
// for rows past M and lanes past K16) and, when it fits, the block's stream (spec 9.1/9.2: the
// lane's words start at bases[b] + 4 * (header bytes of the lanes before it)). `words` is the
// lane's header byte, `base` = bases[b], both loaded a round earlier.
template <bool FP8>
__device__ __forceinline__ BlockStart issue_block(u8* buf, const u8* __restrict__ data, const u8* __restrict__ low, const Geo& g,
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
    const StreamSpan sp = lane_span(lane, words, base);
    const u32 start16 = sp.start16, n16 = sp.n16;
    BlockStart st;
    // A lane may read two words past its last one: +16 keeps that inside the buffer. The staged
    // span ends at most 15 bytes past the stream end, inside the spec 9.5 tail slack.
    st.staged = n16 * 16 + 16 <= STAGED_STREAM;
    if (st.staged) {
        const u32 dst = smem_u32(buf + StagedBuf<FP8>::RAW);
        for (u32 k = lane; k < n16; k += 32) cp_async16(dst + 16 * k, data + start16 + 16 * k, 16);
        st.first = (base - start16) / 4 + sp.before;
    } else {
        st.first = base / 4 + sp.before;
    }
    return st;
}

// One raw row of this lane from the warp buffer, as bytes (staged_raw_bytes).
template <bool FP8>
__device__ __forceinline__ void staged_raw_row(const u8* buf, int i, u32 lane, u32 (&q)[4]) {
    u32 r[4];
    if (FP8) {
        const uint2 v = *reinterpret_cast<const uint2*>(buf + i * 256 + lane * 8);
        r[0] = v.x; r[1] = v.y; r[2] = 0; r[3] = 0;
    } else {
        const uint4 v = *reinterpret_cast<const uint4*>(buf + i * 512 + lane * 16);
        r[0] = v.x; r[1] = v.y; r[2] = v.z; r[3] = v.w;
    }
    staged_raw_bytes<FP8>(r, q);
}


// Spec 15.2, layout 0: the 8 rows of a block as BF16 words, rows of stride K16.
template <bool FP8, bool STAGED>
__device__ __forceinline__ void rows_dequant_staged(StagedReader<STAGED> s, const u8* buf, u32 lane, bool lane_in, u64 nrows,
                                              u16* dst, u64 k16) {
#pragma unroll 2
    for (int i = 0; i < 8; i++) {
        u32 q[4];
        staged_raw_row<FP8>(buf, i, lane, q);
        u32 w[8];
#pragma unroll
        for (int p = 0; p < 8; p++) {
            if (p % 2 == 0) s.refill();
            w[p] = staged_word_pair(s.template pair<FP8>(), q, 2 * p);
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
// copied after block r is decoded (call 2 measured no gain from the overlap, docs/gpu-history.md).
template <bool FP8, int NB, class Blk, class Work, class After>
__device__ __forceinline__ void block_pipeline(u8* mybuf, u64 steps, const u8* __restrict__ data, const u32* __restrict__ bases,
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
            BlockStart st = {0, false};
            __syncwarp(); // every lane is done with the buffer (block r - 1)
            if (ok) st = issue_block<FP8>(mybuf, data, low, g, rb, cb, lane, words, base);
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
    BlockStart cur = {0, false}, nxt = {0, false};
    u64 rb_c = rb_n, cb_c = cb_n;
    bool ok_c = ok_n;
    if (ok_c) cur = issue_block<FP8>(mybuf, data, low, g, rb_c, cb_c, lane, words, base);
    cp_commit();
    ok_n = steps > 1 && blk(1, rb_n, cb_n);
    if (ok_n) {
        const u64 b = rb_n * g.col_blocks + cb_n;
        words = hdr[b * 32 + lane];
        base = bases[b];
    }
    for (u64 r = 0; r < steps; r++) {
        u8* buf = mybuf + (r & 1) * StagedBuf<FP8>::BYTES;
        u8* buf_n = mybuf + ((r + 1) & 1) * StagedBuf<FP8>::BYTES;
        // Block r + 1 into the other buffer (every lane finished reading it in step r - 1).
        __syncwarp();
        if (ok_n) nxt = issue_block<FP8>(buf_n, data, low, g, rb_n, cb_n, lane, words, base);
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
        cp_wait<1>(); // block r has landed (the group of block r + 1 may not)
        __syncwarp();
        if (ok_c) work(r, rb_c, cb_c, buf, cur);
        after(r);
        cur = nxt;
        rb_c = rb_nn_c; cb_c = cb_nn_c; ok_c = ok_nn_c;
        rb_n = rb_2; cb_n = cb_2; ok_n = ok_2;
    }
    cp_wait<0>();
}


// Spec 15.2, layout 0: warp steps over blocks b = first + r * (all warps of the grid);
// a pair of codes becomes one output word [raw t, coded t, raw t+1, coded t+1] by one permute.
template <bool FP8, int NB>
__device__ void dequant_staged(const u8* __restrict__ data, const u32* __restrict__ bases, const u8* __restrict__ hdr,
                         const u32* __restrict__ lut, const u8* __restrict__ low, u16* __restrict__ out, Geo g) {
    extern __shared__ __align__(16) u8 staged_dyn[];
    build_staged_pairs<FP8>(lut);
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
    auto work = [&](u64, u64 rb, u64 cb, const u8* buf, BlockStart st) {
        const u64 col0 = 512 * cb + 16 * lane;
        const bool lane_in = col0 < g.k16;
        const u64 nrows = g.rows - 8 * rb;
        u16* dst = out + 8 * rb * g.k16 + col0;
        if (st.staged)
            rows_dequant_staged<FP8, true>(staged_reader<true>(reinterpret_cast<const u32*>(buf + StagedBuf<FP8>::RAW), st.first), buf, lane, lane_in, nrows, dst, g.k16);
        else
            rows_dequant_staged<FP8, false>(staged_reader<false>(reinterpret_cast<const u32*>(data), st.first), buf, lane, lane_in, nrows, dst, g.k16);
    };
    auto after = [](u64) {};
    block_pipeline<FP8, NB>(staged_dyn + warp * NB * StagedBuf<FP8>::BYTES, steps, data, bases, hdr, low, g, lane, blk, work, after);
}

#define NWC_DEQUANT_STAGED(NAME, FP8, NB, MINB)                                                                     \
    extern "C" __global__ void __launch_bounds__(NWC_THREADS, MINB)                                            \
        NAME(const u8* data, const u32* bases, const u8* hdr, const u32* lut, const u8* low, u16* out, Geo g) { \
        dequant_staged<FP8, NB>(data, bases, hdr, lut, low, out, g);                                                 \
    }
NWC_DEQUANT_STAGED(nwc_dequant_bf16_l0, false, 1, 3)
NWC_DEQUANT_STAGED(nwc_dequant_fp8_l0, true, 1, 3)
