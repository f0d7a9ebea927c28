// Execution layout: the lane decode of the batch-1 strip kernels (exec_matvec_strip.cu, spec
// 20.13), on its own so that cuda/tests/decode_host.rs builds it with the host's C++ compiler
// (the `host-decode` region) and checks it against the reference encoder.

// host-decode: begin
// The strip kernels' decode (spec 20.13) pairs weight a with a + 4 (a in 0..3 and 8..11), not with
// a + 1 as exec_pairs16_fast does: w[q] holds weight a(q) = (q & 3) + 2 (q & 4) in its low half and
// a(q) + 4 in its high half (exec_strip_weight gives the f32 of weight i). The two codes of such a
// pair sit 16 bits apart in the code word, so one mask puts them in the halves (at bit 0, or at bit
// 4 for odd a, shifted by the IMAD's multiplier instead): per 8 weights one shift and 4 masks where
// the adjacent pairs take the nibble split (3) and 4 PRMT. The sm bytes of a pair come from two
// words by one PRMT, as before. Valid for codes 1..14 (no carry out of the exponent field).

// a b + c as one IMAD: written in PTX so that the compiler does not turn (x & M) * 128 + c into a
// shift, a mask and an add.
__device__ __forceinline__ exec_u32 exec_strip_mad(exec_u32 a, exec_u32 b, exec_u32 c) {
    exec_u32 d;
#ifdef __CUDA_ARCH__
    asm("mad.lo.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
#else
    d = a * b + c;  // the host build (cuda/tests/decode_host.rs)
#endif
    return d;
}

__device__ __forceinline__ void exec_strip_pairs8(exec_u32 c, exec_u32 s0, exec_u32 s1, exec_u32 b2, exec_u32& w0,
                                                  exec_u32& w1, exec_u32& w2, exec_u32& w3) {
    const exec_u32 h = c >> 8;
    w0 = exec_strip_mad(c & 0x000f000fu, 128u, (exec_prmt(s0, s1, 0xC480u) & 0x807f807fu) | b2);
    w1 = exec_strip_mad(c & 0x00f000f0u, 8u, (exec_prmt(s0, s1, 0xD591u) & 0x807f807fu) | b2);
    w2 = exec_strip_mad(h & 0x000f000fu, 128u, (exec_prmt(s0, s1, 0xE6A2u) & 0x807f807fu) | b2);
    w3 = exec_strip_mad(h & 0x00f000f0u, 8u, (exec_prmt(s0, s1, 0xF7B3u) & 0x807f807fu) | b2);
}

__device__ __forceinline__ void exec_strip_pairs16(uint2 c, uint4 s, exec_u32 b2, exec_u32 (&w)[8]) {
    exec_strip_pairs8(c.x, s.x, s.y, b2, w[0], w[1], w[2], w[3]);
    exec_strip_pairs8(c.y, s.z, s.w, b2, w[4], w[5], w[6], w[7]);
}

// Weight i (0..15, column order) of the lane as f32.
__device__ __forceinline__ float exec_strip_weight(const exec_u32 (&w)[8], int i) {
    const exec_u32 v = w[(i & 3) | ((i >> 1) & 4)];
    return (i & 4) ? exec_hi(v) : exec_lo(v);
}

// Rewrites the pairs (a, a + 4) of exec_strip_pairs16's words that hold a code 0 or 15 (spec 20.13),
// exactly as exec_patch_pairs does for adjacent pairs: a loop over those pairs only (not unrolled: the kernels
// inline it once per row), each pair rebuilt from its codes and sm bytes. A code-15 weight i takes
// esc[off + the number of code-15 weights at positions below i in the lane] (column order; the
// pairs do not come in column order), or, where lone >= 2, the exponent lone: the row's tile flag
// (exec_derived.cu), which is the escape byte of every code-15 weight of the tile (the one such
// weight, session 23; any number that share one byte, session 26), so that neither the escape
// offset nor a load of esc is on the row's path.
// The fast decode's carry out of a code-15 half (base 242) stays inside its pair, which is
// rewritten whole. One pair costs 79 SASS instructions (session 15; 101-106
// with the lane's 64-bit masks).
__device__ __forceinline__ void exec_strip_patch(uint2 c, uint4 s, exec_u32 base, const exec_u8* __restrict__ esc,
                                                 exec_u64 off, exec_u32 lone, exec_u32 (&w)[8]) {
    // A pair's two codes lie in one code word (c.x for a in 0..3, c.y for a in 8..11), so the loop
    // works on that 32-bit word alone; its code-15 mask is derived in the loop (pairs are rare, and
    // masks kept across it cost registers the unrolled rows need: 24 bytes of spills in W1).
    // bit 4a + 3 (a in 0..3) / 16 + 4a + 3: pair (a, a + 4) / (8 + a, 12 + a) holds a weight that
    // is not plain.
    const exec_u32 nx = ~exec_plain_bits(c.x) & 0x88888888u, ny = ~exec_plain_bits(c.y) & 0x88888888u;
    exec_u32 pairs = ((nx | (nx >> 16)) & 0x8888u) | ((ny | (ny >> 16)) << 16);
#pragma unroll 1
    while (pairs != 0u) {
        const exec_u32 bit = (exec_u32)(__ffs((int)pairs) - 1);
        pairs &= pairs - 1u;
        const bool hi = bit >= 16u;
        const exec_u32 sh = (bit & 15u) - 3u;  // 4 (a & 3): the pair's low weight in its code word
        const exec_u32 cw = hi ? c.y : c.x;
        const exec_u32 s0 = hi ? s.z : s.x, s1 = hi ? s.w : s.y;
        exec_u32 m15 = cw & (cw >> 1);  // bit 4k: weight k of the word has code 15
        m15 &= (m15 >> 2) & 0x11111111u;
        const exec_u32 below = hi ? exec_count15(c.x) : 0u;  // code-15 weights in 0..7
        exec_u32 word = 0u;
#pragma unroll
        for (exec_u32 j = 0; j < 2; ++j) {
            const exec_u32 p = sh + 16u * j;  // weight a + 4j's code at bit p of cw
            const exec_u32 code = (cw >> p) & 15u;
            const exec_u32 sb = ((j ? s1 : s0) >> (2u * sh)) & 0xffu;
            exec_u32 e = base - 1u + code;
            if (code == 0u) e = 0u;
            if (code == 15u) e = lone >= 2u ? lone : esc[off + (below + (exec_u32)__popc(m15 & ((1u << p) - 1u)))];
            word |= (((sb & 0x80u) << 8) | ((e & 0xffu) << 7) | (sb & 0x7fu)) << (16u * j);
        }
        const exec_u32 q = (sh >> 2) | (hi ? 4u : 0u);
#pragma unroll
        for (exec_u32 k = 0; k < 8; ++k)
            if (k == q) w[k] = word;
    }
}

// The same result as exec_strip_patch where the row's tile flag f is at least 2 and base <= 241,
// by one XOR per weight of code 0 or 15 instead of a pair rebuilt (54 SASS instructions per weight
// against ~84 per pair): the fast decode wrote the exponent field base - 1 + code (no carry: base
// - 1 + 15 <= 255), which becomes 0 (code 0) or f (code 15, the escape byte every code-15 weight
// of the tile shares; flag 2 where the tile has code 0 but no code 15, exec_derived.cu). Built in session 23 as a bench
// variant, in production since session 24 (+2-3% on the bench shapes and a grid, two calls).
__device__ __forceinline__ void exec_strip_fix(uint2 c, exec_u32 base, exec_u32 f, exec_u32 (&w)[8]) {
    const exec_u64 cc = (exec_u64)c.y << 32 | c.x;  // weight i's code at bits 4i .. 4i + 3
    exec_u64 m = (exec_u64)(~exec_plain_bits(c.y) & 0x88888888u) << 32 | (~exec_plain_bits(c.x) & 0x88888888u);
#pragma unroll 1
    while (m != 0ull) {
        const exec_u32 i = (exec_u32)(__ffsll((long long)m) - 1) >> 2;  // a weight of code 0 or 15
        m &= m - 1ull;
        const exec_u32 code = (exec_u32)(cc >> (4u * i)) & 15u;
        const exec_u32 d = (base - 1u + code) ^ (code == 0u ? 0u : f);
        const exec_u32 corr = d << (7u + 16u * ((i >> 2) & 1u));  // weight i's half of w[q]
        const exec_u32 q = (i & 3u) | ((i >> 1) & 4u);
#pragma unroll
        for (exec_u32 k = 0; k < 8; ++k) w[k] ^= k == q ? corr : 0u;
    }
}

// host-decode: end
