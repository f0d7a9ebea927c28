// Host build of the execution layout's lane decode (cuda/tests/decode_host.rs): the regions of
// kernels/exec_common.cu and kernels/exec_strip_decode.cu marked `host-decode` are pasted where
// the marker line below stands, after this prelude, which defines the few CUDA names they use.
//
// Input, one case per line (decimal): base K c.x c.y s.x s.y s.z s.w n e0 .. e(n-1): a row of one
// tile as the kernels load it (K columns, 1..16; the lane's 8 code bytes and 16 sm bytes as little-
// endian words) and its n escape bytes in column order. Output, one line per case: the 16 BF16
// words of the adjacent-pair decode (exec_pairs16_fast, then exec_patch_pairs where a code is 0 or
// 15), then the 16 of the strip kernels' decode (exec_strip_pairs16 and exec_strip_patch, read back
// by exec_strip_weight), then those 16 again through the patch's escape-byte path where the row's
// escapes share one byte of at least 2 or it has none (the tile flag's shared byte; else the
// general path again), then through the XOR fix (exec_strip_fix) where that path applies with
// base <= 241. Pad columns (K..15) take code 1 first, as in the kernels' flagged rows.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#define __device__
#define __forceinline__ inline
#define __restrict__
struct uint2 {
    unsigned x, y;
};
struct uint4 {
    unsigned x, y, z, w;
};
static inline uint2 make_uint2(unsigned x, unsigned y) { return uint2{x, y}; }
static inline int __popc(unsigned v) { return __builtin_popcount(v); }
static inline int __popcll(unsigned long long v) { return __builtin_popcountll(v); }
static inline int __ffsll(long long v) { return __builtin_ffsll(v); }
static inline int __ffs(int v) { return __builtin_ffs(v); }
static inline float __uint_as_float(unsigned u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
static inline unsigned bits(float f) {
    unsigned u;
    std::memcpy(&u, &f, 4);
    return u;
}

// @REGIONS@

int main() {
    unsigned base, K, cx, cy, sx, sy, sz, sw, n;
    while (std::scanf("%u %u %u %u %u %u %u %u %u", &base, &K, &cx, &cy, &sx, &sy, &sz, &sw, &n) == 9) {
        std::vector<exec_u8> esc(n + 1u);
        for (unsigned i = 0; i < n; ++i) {
            unsigned e;
            if (std::scanf("%u", &e) != 1) return 2;
            esc[i] = (exec_u8)e;
        }
        uint2 c = make_uint2(cx, cy);
        if (K < 16u) c = exec_mask_pad(c, 0u, K);
        const uint4 s = uint4{sx, sy, sz, sw};
        exec_u32 w[8];
        exec_pairs16_fast(c, s, exec_b2(base), w);
        if (!exec_plain16(c)) exec_patch_pairs(c, s, base, esc.data(), 0ull, w);
        for (int p = 0; p < 8; ++p) std::printf("%u %u ", w[p] & 0xffffu, w[p] >> 16);
        exec_u32 v[8];
        exec_strip_pairs16(c, s, exec_b2(base), v);
        if (!exec_plain16(c)) exec_strip_patch(c, s, base, esc.data(), 0ull, 1u, v);
        for (int i = 0; i < 16; ++i) std::printf("%u ", bits(exec_strip_weight(v, i)) >> 16);
        // the strip kernels' escape-byte path (the tile flag holds the escape byte, esc unread):
        // where the row's escapes share one byte of at least 2 (the flag is that byte) or it has
        // none (the flag is 2), with an esc that holds other bytes; else the general path again
        bool shared = n >= 1u && esc[0] >= 2u;
        for (unsigned i = 1; i < n; ++i) shared = shared && esc[i] == esc[0];
        const bool lone = shared || n == 0u;
        const exec_u32 flag = n >= 1u ? esc[0] : 2u;
        std::vector<exec_u8> other(n + 1u, (exec_u8)(flag ^ 0x55u));
        exec_strip_pairs16(c, s, exec_b2(base), v);
        if (!exec_plain16(c)) exec_strip_patch(c, s, base, lone ? other.data() : esc.data(), 0ull, lone ? flag : 1u, v);
        for (int i = 0; i < 16; ++i) std::printf("%u ", bits(exec_strip_weight(v, i)) >> 16);
        // the XOR fix (exec_strip_fix) where it applies (lone, base <= 241), else the general path
        exec_strip_pairs16(c, s, exec_b2(base), v);
        if (!exec_plain16(c)) {
            if (lone && base <= 241u) exec_strip_fix(c, base, flag, v);
            else exec_strip_patch(c, s, base, esc.data(), 0ull, 1u, v);
        }
        for (int i = 0; i < 16; ++i) std::printf("%u ", bits(exec_strip_weight(v, i)) >> 16);
        std::printf("\n");
    }
    return 0;
}
