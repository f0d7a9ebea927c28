// The exact matvec of layout 0 (spec 15.4; historically "version 7"), compiled after
// pair_decode.cu, whose decoder, staging and block loop it uses. Same results bit for bit as the
// canonical order; docs/gpu-history.md has the reasons and the measurements.
//
// Design, and why (against the staged-reader kernels that came before it):
//  - No bit buffer. Each lane keeps only its bit position `pos` in the block's staged stream. Every
//    four codes it loads the two words holding bit `pos` and the 32 bits after it, and one funnel
//    shift makes the left-aligned window: the refill branch and its bookkeeping disappear.
//  - A table entry carries the length of its two codes twice, in byte 0 (funnel shifts use the low
//    5 bits of their amount) and in byte 3 (so `pos += e >> 24` is one shift-add); its bytes 1, 2
//    are the two coded bytes. Byte 0 is below 0x80, so a byte permute that replicates its sign
//    gives the zero bytes a weight's f32 needs. An entry without two complete codes has bit 31 set.
//  - The rare slow case (a pair longer than 12 bits, an escape) is tested once per four codes per
//    lane: that lane decodes the four codes one at a time from the saved position. (A warp vote
//    instead cost more instructions per quad than the divergence it saved, docs/gpu-history.md.)
//  - The table is built once per matrix on the host and copied by each CTA (the per-CTA build cost
//    ~2 us of a ~25 us kernel).
//  - Raw bytes come straight from global memory one row pair ahead in registers; the block after the
//    current one is prefetched into L2 while the current one decodes, and only the stream is
//    staged in shared memory (two small buffers per warp), so 32 warps fit an SM.
//  - Block partials go to a global scratch array; the warp that finishes a row block's last
//    column block (a per-row-block counter) adds them in ascending column-block order (spec
//    15.4.5). Warps never wait for each other, and any warp may take any block.
//  - Batches: the NX = 2 and 4 entry points decode each weight once and keep one fma chain per
//    activation column (spec 15.4.7: each column exactly as alone).

// STAGES < STAGE_ALL are timing probes (docs/gpu-history.md, "Where the time goes"): they leave out the
// later stages of the work and fold what is left into `probe` so the compiler keeps it; their
// results are meaningless. Production kernels run STAGE_ALL, where `probe` is untouched.
#define STAGE_DECODE 0  // decode the codes only
#define STAGE_WEIGHTS 1 // + raw bytes, weights assembled
#define STAGE_FMA 2     // + activations and fma chains (no row sums, no partials, no outputs)
#define STAGE_ALL 3
#define STAGE_DECODE_CLZ (-1) // decode only, with a table-free decoder (bench/probes.cu)

// The decoder of the STAGE_DECODE_CLZ probe, defined by the bench (kernels/bench/probes.cu).
template <int STAGES>
struct ProbeDecoder;

// Spec 15.4.3 for two rows of a block and NX activation columns (lane partials, stream order, fma
// from +0, one chain per column: each weight is decoded once and multiplied into every column),
// then per column the spec 15.4.4 halving tree of both rows at once: lanes 0..15 finish row `a`,
// lanes 16..31 row `b` (the value at lane 0, resp. 16, is the tree's v[0]: f32 addition is
// commutative). v[n] is column n's result.
template <bool FP8, bool STAGED, int NX, class X, int STAGES = STAGE_ALL>
__device__ __forceinline__ void row_pair(const u32* words, u32& pos, const u32 (&qa)[4], const u32 (&qb)[4],
                                          const X& xs, u32 lane, float (&v)[NX], u32& probe) {
    float acc[2][NX];
#pragma unroll
    for (int h = 0; h < 2; h++) {
        u32 q[4];
#pragma unroll
        for (int j = 0; j < 4; j++) q[j] = h ? qb[j] : qa[j];
        if (FP8) nibbles_to_bytes(q);
        float a[NX];
#pragma unroll
        for (int n = 0; n < NX; n++) a[n] = 0.0f;
#pragma unroll
        for (int d = 0; d < 4; d++) { // codes 4d .. 4d + 3 of the row; raw word q[d]
            u32 ea, eb;
            if constexpr (STAGES == STAGE_DECODE_CLZ) ProbeDecoder<STAGES>::template quad<FP8, STAGED>(words, pos, ea, eb);
            else quad_pairs<FP8, STAGED>(words, pos, ea, eb);
            if constexpr (STAGES == STAGE_DECODE || STAGES == STAGE_DECODE_CLZ) {
                probe ^= ea ^ eb;
            } else {
                const float w0 = weight_bits(ea, q[d], 0, 1), w1 = weight_bits(ea, q[d], 1, 2);
                const float w2 = weight_bits(eb, q[d], 2, 1), w3 = weight_bits(eb, q[d], 3, 2);
                if constexpr (STAGES == STAGE_WEIGHTS) {
                    probe ^= __float_as_uint(w0) ^ __float_as_uint(w1) ^ __float_as_uint(w2) ^ __float_as_uint(w3);
                } else {
#pragma unroll
                    for (int n = 0; n < NX; n++) {
                        a[n] = __fmaf_rn(w0, xs.get(n, 4 * d), a[n]);
                        a[n] = __fmaf_rn(w1, xs.get(n, 4 * d + 1), a[n]);
                        a[n] = __fmaf_rn(w2, xs.get(n, 4 * d + 2), a[n]);
                        a[n] = __fmaf_rn(w3, xs.get(n, 4 * d + 3), a[n]);
                    }
                }
            }
        }
#pragma unroll
        for (int n = 0; n < NX; n++) acc[h][n] = a[n];
    }
    if constexpr (STAGES < STAGE_ALL) {
#pragma unroll
        for (int n = 0; n < NX; n++) probe ^= __float_as_uint(acc[0][n]) ^ __float_as_uint(acc[1][n]);
        return;
    }
    const bool upper = lane >= 16;
#pragma unroll
    for (int n = 0; n < NX; n++) {
        const float keep = upper ? acc[1][n] : acc[0][n];
        const float give = upper ? acc[0][n] : acc[1][n];
        float t = keep + __shfl_xor_sync(0xffffffffu, give, 16);
#pragma unroll
        for (int d = 8; d >= 1; d >>= 1) t = t + __shfl_xor_sync(0xffffffffu, t, d);
        v[n] = t;
    }
}

// A lane's 16 activations of each of NX columns (spec 15.4.2: f32, or BF16 widened exactly).
// Unpacked: 16 f32 registers per column. Packed (BF16 input, NX > 1, where registers are short):
// 8 registers of BF16 pairs per column, widened at each use (one shift or mask).
template <bool XBF16, int NX>
struct XUnpacked {
    float v[NX][16];
    __device__ __forceinline__ void load(const void* x, u64 kp, u64 col0) {
#pragma unroll
        for (int n = 0; n < NX; n++) {
            const void* xn = reinterpret_cast<const u8*>(x) + n * kp * (XBF16 ? 2 : 4);
            load_x8<XBF16>(xn, col0, *reinterpret_cast<float(*)[8]>(&v[n][0]));
            load_x8<XBF16>(xn, col0 + 8, *reinterpret_cast<float(*)[8]>(&v[n][8]));
        }
    }
    __device__ __forceinline__ float get(int n, int k) const { return v[n][k]; }
};

template <int NX>
struct XPacked {
    u32 w[NX][8];
    __device__ __forceinline__ void load(const void* x, u64 kp, u64 col0) {
#pragma unroll
        for (int n = 0; n < NX; n++) {
            const uint4* p = reinterpret_cast<const uint4*>(reinterpret_cast<const u16*>(x) + n * kp + col0);
            const uint4 a = p[0], b = p[1];
            w[n][0] = a.x; w[n][1] = a.y; w[n][2] = a.z; w[n][3] = a.w;
            w[n][4] = b.x; w[n][5] = b.y; w[n][6] = b.z; w[n][7] = b.w;
        }
    }
    // volatile: otherwise the compiler hoists the widening out of the row loop and is back to 16
    // registers per column (and spills).
    __device__ __forceinline__ float get(int n, int k) const {
        const u32 p = w[n][k >> 1];
        u32 r;
        if (k & 1) asm volatile("and.b32 %0, %1, 0xffff0000;" : "=r"(r) : "r"(p));
        else asm volatile("shl.b32 %0, %1, 16;" : "=r"(r) : "r"(p));
        return __uint_as_float(r);
    }
};
template <bool XBF16, int NX>
struct XKind {
    typedef XUnpacked<XBF16, NX> T;
};
template <int NX>
struct XKind<true, NX> {
    typedef XPacked<NX> T;
};
template <>
struct XKind<true, 1> {
    typedef XUnpacked<true, 1> T;
};

// Spec 15.4 on layout 0, for NX activation columns at once (spec 15.4.7: each column is
// computed exactly as alone). `partial` holds 8 floats per block and column, `count` one counter
// per row block (zero before the launch; the kernel leaves it zero again). Column n of x starts
// at element n * Kp, column n of y at element n * M.
template <bool FP8, bool XBF16, int NX, int STAGES = STAGE_ALL>
__device__ void exact_matvec_l0(const u8* __restrict__ data, const u32* __restrict__ bases, const u8* __restrict__ hdr,
                        const u32* __restrict__ pairs, const u8* __restrict__ low, const float* __restrict__ scale,
                        const void* x, const float* __restrict__ bias, void* y, int out_bf16, Geo g,
                        float* __restrict__ partial, u32* __restrict__ count) {
    extern __shared__ __align__(16) u8 exact_dyn[];
    const u32 lane = threadIdx.x & 31;
    const u32 cbs = (u32)g.col_blocks;
    const u64 stride = FP8 ? g.k16 / 2 : g.k16;
    const u64 y_elem = out_bf16 ? 2 : 4;
    auto out = [&](float s, u64 row, int n) {
        output_row(s, row, scale, bias, reinterpret_cast<u8*>(y) + n * g.rows * y_elem, out_bf16);
    };
    auto work = [&](u32 b, u32 rb, u32 cb, const u8* buf, LaneStart st) {
        const u64 col0 = 512ull * cb + 16 * lane;
        const bool lane_in = col0 < g.k16;
        const u32* staged = reinterpret_cast<const u32*>(buf);
        const u32* direct = reinterpret_cast<const u32*>(data + st.start16);
        typename XKind<XBF16, NX>::T xs;
        if (STAGES >= STAGE_FMA) xs.load(x, g.kp, col0);
        const bool raw_in = lane_in && STAGES >= STAGE_WEIGHTS; // the decode probe reads no raw bytes
        // Rows of this block that exist (8 except in the last row block), and this lane's raw
        // bytes of row 0; the row loop advances one pointer (32-bit counts, no 64-bit products).
        const u32 nrows = (u32)min(8ull, g.rows - 8ull * rb);
        const u64 row0 = 8ull * rb;
        const u8* rowp = low + row0 * stride + (FP8 ? col0 / 2 : col0);
        u32 pos = st.pos;
        u32 qa[4], qb[4], probe = 0;
        raw_row<FP8>(rowp, raw_in, qa);
        raw_row<FP8>(rowp + stride, raw_in && nrows > 1, qb);
        // The loop is not unrolled: fully unrolled, the kernel outgrew the instruction cache
        // (ncu: "no instruction" stalls, docs/gpu-history.md).
#pragma unroll 1
        for (u32 i = 0; i < 4; i++) {
            rowp += 2 * stride;
            u32 na[4], nb2[4]; // the next two raw rows, one pair ahead
            raw_row<FP8>(rowp, raw_in && 2 * i + 2 < nrows, na);
            raw_row<FP8>(rowp + stride, raw_in && 2 * i + 3 < nrows, nb2);
            float v[NX];
            if (st.staged) row_pair<FP8, true, NX, decltype(xs), STAGES>(staged, pos, qa, qb, xs, lane, v, probe);
            else row_pair<FP8, false, NX, decltype(xs), STAGES>(direct, pos, qa, qb, xs, lane, v, probe);
            // Lane 0 holds row 2i, lane 16 row 2i + 1, of every column.
            const u32 r = 2 * i + (lane >> 4);
            if (STAGES == STAGE_ALL && (lane & 15) == 0 && r < nrows) {
#pragma unroll
                for (int n = 0; n < NX; n++) {
                    if (cbs == 1) out(0.0f + v[n], row0 + r, n); // spec 15.4.5 with one column block: +0 + P
                    else partial[((u64)b * NX + n) * 8 + r] = v[n];
                }
            }
#pragma unroll
            for (int j = 0; j < 4; j++) { qa[j] = na[j]; qb[j] = nb2[j]; }
        }
        if (STAGES < STAGE_ALL) {
            if (probe == 0x9E3779B9u) partial[b] = 1.0f; // a store the compiler cannot drop
            return;
        }
        if (cbs == 1) return;
        // Lanes 0 and 16 published the block's partials; a fence, then one atomic counts the
        // block, and the warp that counts the row block's last block adds the partials in
        // ascending cb order (spec 15.4.5). (Measured on the H200 against a release-only atomic
        // with one writer lane, and an acquire-release one: this was the fastest, docs/gpu-history.md.)
        if ((lane & 15) == 0) __threadfence();
        if (last_of_row(count, rb, cbs, lane)) {
            const u32 n = lane / 8, r = lane % 8; // lane = column * 8 + row
            if (n < NX && r < nrows) {
                const float* src = partial + ((u64)rb * cbs * NX + n) * 8 + r;
                float sum = 0.0f;
                for (u32 c = 0; c < cbs; c++) sum = sum + __ldcg(src + 8ull * NX * c);
                out(sum, row0 + r, n);
            }
            if (lane == 0) count[rb] = 0; // ready for the next launch (kernel boundaries order it)
        }
    };
    auto prefetch = [&](u32 rb, u32 cb) {
        if (STAGES >= STAGE_WEIGHTS) prefetch_raw_rows<FP8>(low, g, rb, cb, lane);
    };
    warp_block_loop<EXACT_STAGE>(exact_dyn, data, bases, hdr, pairs, g, prefetch, work);
}

// Entry points: NX = 1 (batch 1; 2 CTAs of 16 warps per SM) and NX = 2, 4 (a batch's columns in
// groups; more registers for the activations, so 1 CTA per SM).
#define NWC_EXACT_MATVEC_L0(NAME, FP8, XBF16, NX)                                                                      \
    extern "C" __global__ void __launch_bounds__(EXACT_THREADS, NX == 1 ? 2 : 1)                                   \
        NAME(const u8* data, const u32* bases, const u8* hdr, const u32* pairs, const u8* low, const float* scale, \
             const void* x, const float* bias, void* y, int out_bf16, Geo g, float* partial, u32* count) {     \
        exact_matvec_l0<FP8, XBF16, NX>(data, bases, hdr, pairs, low, scale, x, bias, y, out_bf16, g, partial, count); \
    }
NWC_EXACT_MATVEC_L0(nwc_exact_matvec_bf16_l0_xf32, false, false, 1)
NWC_EXACT_MATVEC_L0(nwc_exact_matvec_bf16_l0_xbf16, false, true, 1)
NWC_EXACT_MATVEC_L0(nwc_exact_matvec_fp8_l0_xf32, true, false, 1)
NWC_EXACT_MATVEC_L0(nwc_exact_matvec_fp8_l0_xbf16, true, true, 1)
NWC_EXACT_MATVEC_L0(nwc_exact_matvec_c2_bf16_l0_xf32, false, false, 2)
NWC_EXACT_MATVEC_L0(nwc_exact_matvec_c2_bf16_l0_xbf16, false, true, 2)
NWC_EXACT_MATVEC_L0(nwc_exact_matvec_c2_fp8_l0_xf32, true, false, 2)
NWC_EXACT_MATVEC_L0(nwc_exact_matvec_c2_fp8_l0_xbf16, true, true, 2)
NWC_EXACT_MATVEC_L0(nwc_exact_matvec_c4_bf16_l0_xf32, false, false, 4)
NWC_EXACT_MATVEC_L0(nwc_exact_matvec_c4_bf16_l0_xbf16, false, true, 4)
NWC_EXACT_MATVEC_L0(nwc_exact_matvec_c4_fp8_l0_xf32, true, false, 4)
NWC_EXACT_MATVEC_L0(nwc_exact_matvec_c4_fp8_l0_xbf16, true, true, 4)
