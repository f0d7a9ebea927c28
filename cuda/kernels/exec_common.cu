// Execution layout (spec 20): helpers shared by the exec_*.cu kernels (decode of a lane's 16
// weights, the transposed halving tree, BF16 rounding, cp.async and mma.sync wrappers).
//
// Fields (device pointers, little-endian; spec 20):
//   sm        M * K16 bytes      sign | mantissa byte per weight, pad columns 0
//   codes     M * K16 / 2 bytes  4-bit code per weight, even column in bits 0..3
//   base      M bytes            per-row window start, 1..242 (allocated rounded up to 4 bytes:
//                                kernels copy whole aligned words)
//   esc_start M * CB + 1 u32     escape offsets per tile (t = m * CB + cb)
//   esc       esc_start[T] bytes exponent byte of every code-15 weight, row-major position order
// Code c of a weight: 0 -> exponent 0, 1..14 -> base + c - 1, 15 -> next escape byte of the tile.
//
// One translation unit with the other kernels/*.cu; every name here starts with exec_ / EXEC_.
// Compiled with --fmad=false: every multiply-add is an explicit __fmaf_rn.

// host-decode: begin (cuda/tests/decode_host.rs compiles the marked regions with the host's C++
// compiler and checks the decode against the reference encoder; keep them free of device-only calls
// other than the ones its prelude defines)
typedef unsigned char exec_u8;
typedef unsigned short exec_u16;
typedef unsigned int exec_u32;
typedef unsigned long long exec_u64;

#define EXEC_FULL 0xffffffffu

// The leading parameters of every execution-layout matvec entry point, in the order the host
// pushes them (exec/plan.rs `exact_launch`, exec/tensor.rs): the five fields (spec 20.3), the
// shape, the activations (XT: float for the exact kernels, exec_u16 = BF16 for tensor cores) and
// the outputs. Some kernels ignore some of them (one column: ldx, ldy).
#define EXEC_MATVEC_PARAMS(XT)                                                                              \
    const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes, const exec_u8* __restrict__ base,    \
        const exec_u32* __restrict__ esc_start, const exec_u8* __restrict__ esc, exec_u32 M, exec_u32 K,     \
        const XT* __restrict__ x, exec_u64 ldx, exec_u32 ncols, const float* __restrict__ bias,             \
        void* __restrict__ y, exec_u64 ldy, int out_bf16

// prmt with the sign-replicate selector bit (bit 3 of each nibble); __byte_perm drops that bit.
// The host build (cuda/tests/decode_host.rs) takes the same function of the bytes written out.
__device__ __forceinline__ exec_u32 exec_prmt(exec_u32 a, exec_u32 b, exec_u32 sel) {
    exec_u32 d;
#ifdef __CUDA_ARCH__
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
#else
    const exec_u64 ab = ((exec_u64)b << 32) | a;
    d = 0u;
    for (int i = 0; i < 4; ++i) {
        const exec_u32 n = (sel >> (4 * i)) & 15u;
        exec_u32 byte = (exec_u32)(ab >> (8 * (n & 7u))) & 0xffu;
        if (n & 8u) byte = byte & 0x80u ? 0xffu : 0u;
        d |= byte << (8 * i);
    }
#endif
    return d;
}

// True when all 8 codes of the word are in 1..14 (no zero, no escape): a code is 0 or 15 exactly
// when its four bits are equal, i.e. when bits 0..2 of c ^ (c >> 1) are zero in its nibble.
__device__ __forceinline__ exec_u32 exec_plain_bits(exec_u32 c) {
    exec_u32 t = (c ^ (c >> 1)) & 0x77777777u;
    return t + 0x77777777u;  // bit 3 of each nibble set iff that code is plain
}
__device__ __forceinline__ bool exec_plain16(uint2 c) {
    return (exec_plain_bits(c.x) & exec_plain_bits(c.y) & 0x88888888u) == 0x88888888u;
}

// Number of code-15 weights among the 8 codes of a word.
__device__ __forceinline__ exec_u32 exec_count15(exec_u32 c) {
    exec_u32 m = c & (c >> 1);
    m &= m >> 2;
    return __popc(m & 0x11111111u);
}

// Matvec only: pad positions (column >= K) get code 1 instead of 0, so that a tile whose only
// zero codes are pad stays on the fast path. Their sm byte is 0 and their activation is zero-padded,
// so the weight 2^(base - 127) meets x = 0 and fma leaves the chain unchanged (spec 15.4.3 note).
__device__ __forceinline__ uint2 exec_mask_pad(uint2 c, exec_u32 k0, exec_u32 K) {
    if (k0 + 16u > K) {
        const long long valid = (long long)K - (long long)k0;
        const exec_u64 hm = valid <= 0 ? ~0ull : (~0ull << (4 * valid));
        exec_u64 all = (exec_u64)c.x | ((exec_u64)c.y << 32);
        all = (all & ~hm) | (0x1111111111111111ull & hm);
        c = make_uint2((exec_u32)all, (exec_u32)(all >> 32));
    }
    return c;
}

// (base - 1) << 7 in both 16-bit halves: the exponent offset of codes 1..14.
__device__ __forceinline__ exec_u32 exec_b2(exec_u32 base) { return (base - 1u) * 0x00800080u; }

// Fast path: 8 codes (one word) and their 8 sm bytes (two words) -> 4 BF16 pairs (even column in
// the low half). Valid only when every code is in 1..14 (exec_plain16): then base - 1 + c <= 255
// fits the 8-bit exponent field without a carry. Per pair: the codes' bytes are spread to the
// 16-bit halves by one prmt (the sign-replicate of a byte < 0x80 is the zero byte), the sm bytes
// by a second prmt whose replicated sign lands in bit 15, one LOP3 masks and adds the base, and
// one IMAD shifts the code into the exponent field and adds.
__device__ __forceinline__ void exec_pairs8(exec_u32 c, exec_u32 s0, exec_u32 s1, exec_u32 b2,
                                            exec_u32& w0, exec_u32& w1, exec_u32& w2, exec_u32& w3) {
    const exec_u32 ev = c & 0x0f0f0f0fu;
    const exec_u32 od = (c >> 4) & 0x0f0f0f0fu;
    w0 = exec_prmt(ev, od, 0xC480u) * 128u + ((exec_prmt(s0, 0u, 0x9180u) & 0x807f807fu) | b2);
    w1 = exec_prmt(ev, od, 0xD591u) * 128u + ((exec_prmt(s0, 0u, 0xB3A2u) & 0x807f807fu) | b2);
    w2 = exec_prmt(ev, od, 0xE6A2u) * 128u + ((exec_prmt(s1, 0u, 0x9180u) & 0x807f807fu) | b2);
    w3 = exec_prmt(ev, od, 0xF7B3u) * 128u + ((exec_prmt(s1, 0u, 0xB3A2u) & 0x807f807fu) | b2);
}

__device__ __forceinline__ void exec_pairs16_fast(uint2 c, uint4 s, exec_u32 b2, exec_u32 (&w)[8]) {
    exec_pairs8(c.x, s.x, s.y, b2, w[0], w[1], w[2], w[3]);
    exec_pairs8(c.y, s.z, s.w, b2, w[4], w[5], w[6], w[7]);
}

// The exact BF16 pair word of one code byte cb (two weights, the even column in bits 0..3) and
// their two sm bytes sh (even column in bits 0..7), spec 20.13: code 0 -> exponent 0, 1..14 ->
// base - 1 + code, 15 -> esc[off], then off advances (column order).
__device__ __forceinline__ exec_u32 exec_pair_word(exec_u32 cb, exec_u32 sh, exec_u32 base,
                                                   const exec_u8* __restrict__ esc, exec_u64& off) {
    exec_u32 word = 0u;
#pragma unroll
    for (int j = 0; j < 2; ++j) {
        const exec_u32 code = (cb >> (4 * j)) & 15u;
        const exec_u32 sb = (sh >> (8 * j)) & 0xffu;
        exec_u32 e = base - 1u + code;
        if (code == 0u) e = 0u;
        if (code == 15u) {
            e = esc[off];
            ++off;
        }
        word |= (((sb & 0x80u) << 8) | ((e & 0xffu) << 7) | (sb & 0x7fu)) << (16 * j);
    }
    return word;
}

// Bit 8p + 3 set for each pair p (weights 2p, 2p + 1) of a lane's 16 codes that holds a code 0 or 15.
__device__ __forceinline__ exec_u64 exec_special_pairs(uint2 c) {
    // Bit 3 of nibble i of ns set when weight i is not plain.
    const exec_u64 ns = ((exec_u64)(~exec_plain_bits(c.y) & 0x88888888u) << 32) | (~exec_plain_bits(c.x) & 0x88888888u);
    return (ns | (ns >> 4)) & 0x0808080808080808ull;
}

// Rewrites the pairs of a lane's 16 words that hold a code 0 or 15 (spec 20.13), after
// exec_pairs16_fast ran on all of them: each such pair is rebuilt from its sm bytes and codes,
// taking the lane's code-15 exponents esc[off], esc[off + 1], ... in column order. A loop over the
// lane's non-plain pairs only (usually one), not unrolled: the kernels inline this once per row,
// and an unrolled version (8 pair blocks) made the one-column kernel's loop overflow the
// instruction cache (Nsight Compute, 2026-12-01: `no_instruction` the top stall). The new word
// goes into w[p] by a select per pair (no run-time index into the registers). The fast decode of
// a code-15 half may carry into the other half when base = 242; the whole pair is rewritten, so
// that carry never survives.
__device__ __forceinline__ void exec_patch_pairs(uint2 c, uint4 s, exec_u32 base, const exec_u8* __restrict__ esc,
                                                 exec_u64 off, exec_u32 (&w)[8]) {
    exec_u64 pairs = exec_special_pairs(c);
    const exec_u64 c64 = ((exec_u64)c.y << 32) | c.x;
#pragma unroll 1
    while (pairs != 0ull) {
        const exec_u32 p = (exec_u32)(__ffsll((long long)pairs) - 1) >> 3;
        pairs &= pairs - 1ull;
        const exec_u32 cb = (exec_u32)(c64 >> (8u * p)) & 0xffu;
        const exec_u32 sw = p < 4u ? (p < 2u ? s.x : s.y) : (p < 6u ? s.z : s.w);
        const exec_u32 word = exec_pair_word(cb, (sw >> (16u * (p & 1u))) & 0xffffu, base, esc, off);
#pragma unroll
        for (int q = 0; q < 8; ++q)
            if ((exec_u32)q == p) w[q] = word;
    }
}

// General path: any code; the lane's code-15 weights take esc[off], esc[off + 1], ... in order.
// The fast decode of every pair, then the patch of the pairs that need it (a lane whose codes
// are all plain skips it).
__device__ __forceinline__ void exec_pairs16_general(uint2 c, uint4 s, exec_u32 base,
                                                     const exec_u8* __restrict__ esc, exec_u64 off,
                                                     exec_u32 (&w)[8]) {
    exec_pairs16_fast(c, s, exec_b2(base), w);
    if (!exec_plain16(c)) exec_patch_pairs(c, s, base, esc, off, w);
}

// host-decode: end

// Exclusive prefix over the warp's lanes (lane order = position order inside a tile).
__device__ __forceinline__ exec_u32 exec_warp_excl(exec_u32 n, exec_u32 lane) {
    exec_u32 incl = n;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const exec_u32 v = __shfl_up_sync(EXEC_FULL, incl, o);
        if (lane >= (exec_u32)o) incl += v;
    }
    return incl - n;
}

// The 16 BF16 words of a lane (positions 16 L .. 16 L + 15 of its tile), canonical lane mapping;
// warp-uniform choice of path. `tile_esc()` gives the tile's first escape offset (esc_start[t]) and
// is called on the general path only, by every lane. Every lane of the warp must call this
// (votes, shuffles).
template <class TileEsc>
__device__ __forceinline__ void exec_decode_lane_with(uint2 c, uint4 s, exec_u32 base, exec_u32 lane, TileEsc tile_esc,
                                                      const exec_u8* __restrict__ esc, exec_u32 (&w)[8]) {
    if (__all_sync(EXEC_FULL, exec_plain16(c))) {
        exec_pairs16_fast(c, s, exec_b2(base), w);
    } else {
        const exec_u32 n = exec_count15(c.x) + exec_count15(c.y);
        const exec_u32 before = exec_warp_excl(n, lane);
        exec_pairs16_general(c, s, base, esc, (exec_u64)tile_esc() + before, w);
    }
}

// Tile t of the lane's row: its escape offset loaded on the general path.
__device__ __forceinline__ void exec_decode_lane(uint2 c, uint4 s, exec_u32 base, exec_u32 lane,
                                                 const exec_u32* __restrict__ esc_start, exec_u64 t,
                                                 const exec_u8* __restrict__ esc, exec_u32 (&w)[8]) {
    exec_decode_lane_with(c, s, base, lane, [&]() { return esc_start[t]; }, esc, w);
}

// host-decode: begin
__device__ __forceinline__ float exec_lo(exec_u32 w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float exec_hi(exec_u32 w) { return __uint_as_float(w & 0xffff0000u); }
// host-decode: end

// f32 -> BF16, round to nearest even (spec 15.4.6); NaN stays NaN.
__device__ __forceinline__ exec_u16 exec_bf16_rne(float f) {
    const exec_u32 u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (exec_u16)((u >> 16) | 0x40u);
    return (exec_u16)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// Spec 15.4.6 for BF16 weights (no scale) of output row m of column n, stored at y[n ldy + m]: the
// bias as one separate add, then f32, or BF16 by RNE where out_bf16. The index types are the
// caller's (one column: n = ldy = 0 as 32-bit values, so a 32-bit row index keeps its 32-bit
// address arithmetic), and the address is formed after the bias add, as the kernels had it inline.
template <class M, class N, class L>
__device__ __forceinline__ void exec_output(float s, M m, N n, L ldy, const float* __restrict__ bias, void* __restrict__ y, int out_bf16) {
    if (bias) s = __fadd_rn(s, bias[m]);
    if (out_bf16)
        reinterpret_cast<exec_u16*>(y)[n * ldy + m] = exec_bf16_rne(s);
    else
        reinterpret_cast<float*>(y)[n * ldy + m] = s;
}

// Transposed halving tree over R values per lane (R = 1, 2, 4, 8, 16, 32): each step halves the
// number of values, pairing value 2i with 2i + 1 across the lanes that differ in bit o, then the
// plain butterfly. Each value's sum is bit-identical to the canonical tree (spec 15.4.4): a lane
// always adds its own value at its position to the partner's value for the same row, and f32
// addition is commutative. Returns the sum of value index exec_tree_index<R>(lane).
template <int R>
__device__ __forceinline__ float exec_tree(float (&v)[R], exec_u32 lane) {
    int n = R;
    int o = 16;
#pragma unroll
    for (int step = 0; step < 5; ++step) {
        if (n > 1) {
            const bool hi = (lane & (exec_u32)o) != 0;
#pragma unroll
            for (int i = 0; i < R / 2; ++i) {
                if (i < n / 2) {
                    const float keep = hi ? v[2 * i + 1] : v[2 * i];
                    const float send = hi ? v[2 * i] : v[2 * i + 1];
                    v[i] = keep + __shfl_xor_sync(EXEC_FULL, send, o);
                }
            }
            n >>= 1;
        } else {
            v[0] = v[0] + __shfl_xor_sync(EXEC_FULL, v[0], o);
        }
        o >>= 1;
    }
    return v[0];
}

template <int R>
__device__ __forceinline__ exec_u32 exec_tree_index(exec_u32 lane) {
    exec_u32 idx = 0;
    int bits = 0;
#pragma unroll
    for (int s = 0; s < 5; ++s)
        if ((1 << s) < R) {
            idx |= ((lane >> (4 - s)) & 1u) << s;
            ++bits;
        }
    return idx;
}

// Lane that writes value idx: the lowest lane holding it (low 5 - log2(R) bits zero).
template <int R>
__device__ __forceinline__ bool exec_tree_writer(exec_u32 lane) {
    return (lane & (32u / R - 1u)) == 0u;
}

// ---- cp.async (sm_80+): wait_group covers the calling thread's copies only; a kernel whose lanes
// read bytes other lanes copied puts __syncwarp() (or a CTA barrier) after the wait and before
// the copies that refill a stage ----
__device__ __forceinline__ exec_u32 exec_sa(const void* p) { return (exec_u32)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void exec_cp16(exec_u32 dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void exec_cp8(exec_u32 dst, const void* src) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void exec_cp4(exec_u32 dst, const void* src) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void exec_cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void exec_cp_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// ---- L2 prefetch before grid_dependency_wait (common.cu) ----
// Asks L2 for the bytes [p, p + n) rounded inward to 16 bytes (a hint: no fault, no register,
// nothing waits for it); sm_90+, nothing before.
__device__ __forceinline__ void exec_prefetch_l2(const exec_u8* p, exec_u32 n) {
#if __CUDA_ARCH__ >= 900
    const exec_u64 a = ((exec_u64)p + 15u) & ~(exec_u64)15u, e = ((exec_u64)p + n) & ~(exec_u64)15u;
    if (e > a) asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(a), "r"((exec_u32)(e - a)) : "memory");
#endif
}

// The issue side's bookkeeping after an item's copies (stream kernels): move to the next of the D
// stages (modulo D, so D = 3 works) and close its cp.async group; exec_stage_commit also counts
// the item.
template <int D>
__device__ __forceinline__ void exec_stage_next(exec_u32& istage) {
    istage = istage + 1 == (exec_u32)D ? 0u : istage + 1;
    exec_cp_commit();
}
template <int D, class Count>
__device__ __forceinline__ void exec_stage_commit(Count& issued, exec_u32& istage) {
    ++issued;
    exec_stage_next<D>(istage);
}

// Decode with the escape offset of the tile already known to lane 0 (esc0, valid in lane 0 only).
__device__ __forceinline__ void exec_decode_lane_s(uint2 c, uint4 s, exec_u32 base, exec_u32 lane, exec_u32 esc0,
                                                   const exec_u8* __restrict__ esc, exec_u32 (&w)[8]) {
    exec_decode_lane_with(c, s, base, lane, [&]() { return __shfl_sync(EXEC_FULL, esc0, 0); }, esc, w);
}

// ---- tensor cores: one mma.sync.m16n8k16, BF16 x BF16 -> f32 (spec 19 bounded class) ----
__device__ __forceinline__ void exec_mma16816(float (&d)[4], exec_u32 a0, exec_u32 a1, exec_u32 a2, exec_u32 a3,
                                              exec_u32 b0, exec_u32 b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

