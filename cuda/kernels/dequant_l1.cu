// The exact dequant of layout 1 (spec 15.2), compiled after bounded_matvec.cu, whose fragment
// decoder it shares.

// Spec 15.2 for layout 1, exact: lane L = 4 r8 + q writes, per super-chunk s, columns
// 32s + 8q .. 32s + 8q + 7 of rows r8 and r8 + 8 (16 bytes each; the first row's words are the
// A registers a0, a2 of both k16 steps, the second row's a1, a3). Columns at or past K16 are not
// written (K16 is a multiple of 16, so a lane's 8 columns lie all inside or all outside).
template <bool FP8, bool STAGED>
__device__ __forceinline__ void rows_dequant_frag(const u32* words, u32 pos, const u8* __restrict__ rawp, u32 ns, u16* dst0,
                                              u16* dst1, u64 col0, const Geo& g, bool ok0, bool ok1) {
    constexpr u32 SC_RAW = FP8 ? 256 : 512;
    u32 qn[4];
    FragReader rd = frag_reader<STAGED>(words, pos);
    raw_frag<FP8>(rawp, qn);
#pragma unroll 1
    for (u32 s = 0; s < ns; s++) {
        u32 q[4];
#pragma unroll
        for (int i = 0; i < 4; i++) q[i] = qn[i];
        if (s + 1 < ns) raw_frag<FP8>(rawp + (s + 1) * SC_RAW, qn);
        u32 a[8];
        frag_tile<FP8, STAGED>(words, rd, q, a);
        const u64 col = col0 + 32ull * s;
        if (col < g.k16) {
            if (ok0) *reinterpret_cast<uint4*>(dst0 + 32ull * s) = make_uint4(a[0], a[2], a[4], a[6]);
            if (ok1) *reinterpret_cast<uint4*>(dst1 + 32ull * s) = make_uint4(a[1], a[3], a[5], a[7]);
        }
    }
}

template <bool FP8>
__device__ void dequant_frag(const u8* __restrict__ data, const u32* __restrict__ bases, const u8* __restrict__ hdr,
                         const u32* __restrict__ pairs, const u8* __restrict__ low, u16* __restrict__ out, Geo g) {
    extern __shared__ __align__(16) u8 bounded_dyn[];
    const u32 lane = threadIdx.x & 31;
    const u32 r8 = lane >> 2, q = lane & 3;
    auto work = [&](u32, u32 rb, u32 cb, const u8* buf, LaneStart st) {
        const u32 ns = (u32)min(16ull, g.super_chunks - 16ull * cb);
        const u8* rawp = low + ((u64)rb * g.super_chunks + 16ull * cb) * (FP8 ? 256 : 512) + lane * (FP8 ? 8 : 16);
        const u64 row0 = 16ull * rb + r8, col0 = 512ull * cb + 8 * q;
        const bool ok0 = row0 < g.rows, ok1 = row0 + 8 < g.rows;
        u16* dst0 = out + row0 * g.k16 + col0;
        u16* dst1 = dst0 + 8 * g.k16;
        if (st.staged) rows_dequant_frag<FP8, true>(reinterpret_cast<const u32*>(buf), st.pos, rawp, ns, dst0, dst1, col0, g, ok0, ok1);
        else rows_dequant_frag<FP8, false>(reinterpret_cast<const u32*>(data + st.start16), st.pos, rawp, ns, dst0, dst1, col0, g, ok0, ok1);
    };
    auto prefetch = [&](u32 rb, u32 cb) { prefetch_raw_frag<FP8>(low, g, rb, cb, lane); };
    warp_block_loop<BOUNDED_STAGE>(bounded_dyn, data, bases, hdr, pairs, g, prefetch, work);
}

NWC_DEQUANT_ENTRY(nwc_dequant_bf16_l1, dequant_frag, BOUNDED_THREADS, 1, false)
NWC_DEQUANT_ENTRY(nwc_dequant_fp8_l1, dequant_frag, BOUNDED_THREADS, 1, true)
