// Execution layout: data derived at load from a matrix's fields, not part of the layout (spec
// 20.3). Every GpuExecMatrix constructor (upload, GPU encode, transcode, clone) makes both on the
// device from the validated or GPU-encoded fields (exec/derived.rs), and `stored_bytes` counts them.
//
// Tile flags (the lean and strip exact kernels, exec_matvec_lean.cu, exec_matvec_strip.cu): one byte
// per tile, [cb][M4] with M4 = M rounded up to 4: 0 when no column k < K of the tile has code 0 or
// 15; else, with rule 2 (TileFlagRule::SharedByte, production), a byte f >= 2 that every code-15 weight of the tile has as its escape
// byte where one exists: the escape byte that all the tile's code-15 weights share where they
// share one and it is at least 2 (any number: session 26; rule 1, LoneByte, bench only: exactly
// one, as in sessions 23-25), or 2 where the tile has code 0 but no code 15 (the strip kernels
// then patch without the escape offset or a load of esc); else 1 (rule 0, Plain, bench only: 1
// wherever the tile holds a code 0 or 15, as before session 23). The lean kernel tests only flag
// != 0.
//
// Patch list (the bounded stream kernel, exec_tensor.cu): the items of that kernel are 16 rows x
// 128 columns, item i = (gr * CB + cb) * 4 + sub for row group gr (rows 16 gr ..), tile cb and
// quarter sub (columns cb * 512 + sub * 128 ..). For each item, every pair of weights (columns
// 2q, 2q + 1 of the item) that holds a code 0 or 15 in a column k < K is one entry, two u32: pos =
// r << 6 | q (r = row in the group) and the pair's exact BF16 word (spec 20.13; a pad half, k >= K,
// is +0). The entries of item i are ent[off[i] .. off[i + 1]), rows in order, then columns. With
// them the kernel decodes every pair by the fast path and overwrites the listed pairs: no code
// tests, vote or escape offsets in the item's path. A dense item (more than EXEC_PLIST_CAP pairs,
// e.g. zero padding: code 0) instead holds one entry per row r < M of its group, pos =
// EXEC_PLIST_DENSE | r << 6 and the escape offset of row r's first code-15 weight at or after the
// item's first column: the kernel then tests the codes and patches like exec_patch_pairs, so the
// list stays at most 16 entries (128 bytes) per item of 2,048 weights.
// Launch order (one stream): exec_plist_count writes the entries of (item i, row r) at
// cnt[1 + 16 i + r] (cnt zeroed: rows past M count 0); exec_plist_dense marks the dense items
// (dense[i] = 1, their rows count 1); exec_enc_scan_a/b/c (exec_encode.cu) make cnt[1 .. 16 I]
// inclusive, so cnt[16 i + r] is the first entry of (i, r) and cnt[16 I] the total;
// exec_plist_emit writes the entries and off[0 .. I].
#define EXEC_PLIST_CAP 16u
#define EXEC_PLIST_DENSE 0x80000000u

extern "C" __global__ void exec_tile_flags(const exec_u8* __restrict__ codes, const exec_u32* __restrict__ esc_start,
                                           const exec_u8* __restrict__ esc, exec_u32 M, exec_u32 K, int rule,
                                           exec_u8* __restrict__ flags) {
    const exec_u32 K16 = (K + 15u) & ~15u, CB = (K + 511u) >> 9, M4 = (M + 3u) & ~3u;
    const exec_u32 lane = threadIdx.x & 31u;
    const exec_u64 T = (exec_u64)M * CB;
    for (exec_u64 t = ((exec_u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; t < T; t += ((exec_u64)gridDim.x * blockDim.x) >> 5) {
        const exec_u32 m = (exec_u32)(t / CB), cb = (exec_u32)(t % CB);
        const exec_u32 k0 = cb * 512u + lane * 16u;
        bool special = false;
        exec_u32 n15 = 0;
        if (k0 < K16) {
            const uint2 c = exec_mask_pad(*reinterpret_cast<const uint2*>(codes + (exec_u64)m * (K16 >> 1) + (k0 >> 1)), k0, K);
            special = !exec_plain16(c);
            n15 = exec_count15(c.x) + exec_count15(c.y);
        }
        const bool any = __any_sync(EXEC_FULL, special);
        n15 = __reduce_add_sync(EXEC_FULL, n15);  // warp-uniform, as any
        exec_u32 f = any ? 1u : 0u;
        if (rule != 0 && n15 == 0u && any) f = 2u;  // code 0 only: no escape byte to find
        if ((rule == 1 && n15 == 1u) || (rule == 2 && n15 >= 1u)) {
            // the tile's escape bytes esc[s .. s + n15) (tile t = m CB + cb, spec 20.7): one shared byte?
            const exec_u32 s = esc_start[t], e = esc[s];
            bool same = true;
            for (exec_u32 i = lane; i < n15; i += 32u) same = same && esc[s + i] == e;
            if (__all_sync(EXEC_FULL, same) && e >= 2u) f = e;
        }
        if (lane == 0u) flags[(exec_u64)cb * M4 + m] = (exec_u8)f;
    }
}

// Exclusive prefix of v over the 8 lanes of this lane's octet (lanes 8o .. 8o + 7).
__device__ __forceinline__ exec_u32 exec_octet_excl(exec_u32 v, exec_u32 lane) {
    exec_u32 incl = v;
#pragma unroll
    for (int o = 1; o < 8; o <<= 1) {
        const exec_u32 u = __shfl_up_sync(EXEC_FULL, incl, o, 8);
        if ((lane & 7u) >= (exec_u32)o) incl += u;
    }
    return incl - v;
}

// One warp per tile (m, cb), tiles grid-strided; lane L holds columns cb * 512 + 16 L .. + 15, so
// octet L >> 3 is item quarter sub = L >> 3.
extern "C" __global__ void __launch_bounds__(256)
    exec_plist_count(const exec_u8* __restrict__ codes, exec_u32 M, exec_u32 K, exec_u32* __restrict__ cnt) {
    const exec_u32 K16 = (K + 15u) & ~15u, CB = (K + 511u) >> 9;
    const exec_u32 lane = threadIdx.x & 31u;
    const exec_u64 T = (exec_u64)M * CB;
    for (exec_u64 t = ((exec_u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; t < T; t += ((exec_u64)gridDim.x * blockDim.x) >> 5) {
        const exec_u32 m = (exec_u32)(t / CB), cb = (exec_u32)(t % CB);
        const exec_u32 k0 = cb * 512u + lane * 16u;
        exec_u32 n = 0;
        if (k0 < K16)
            n = __popcll(exec_special_pairs(exec_mask_pad(*reinterpret_cast<const uint2*>(codes + (exec_u64)m * (K16 >> 1) + (k0 >> 1)), k0, K)));
        n += __shfl_xor_sync(EXEC_FULL, n, 1);
        n += __shfl_xor_sync(EXEC_FULL, n, 2);
        n += __shfl_xor_sync(EXEC_FULL, n, 4);
        const exec_u64 item = ((exec_u64)(m >> 4) * CB + cb) * 4 + (lane >> 3);
        if ((lane & 7u) == 0u) cnt[1 + item * 16 + (m & 15u)] = n;
    }
}

// One thread per item, items grid-strided.
extern "C" __global__ void __launch_bounds__(256)
    exec_plist_dense(exec_u32 M, exec_u32 K, exec_u32* __restrict__ cnt, exec_u8* __restrict__ dense) {
    const exec_u32 CB = (K + 511u) >> 9;
    const exec_u64 items = ((exec_u64)M + 15) / 16 * CB * 4;
    for (exec_u64 i = (exec_u64)blockIdx.x * blockDim.x + threadIdx.x; i < items; i += (exec_u64)gridDim.x * blockDim.x) {
        exec_u32 n = 0;
#pragma unroll
        for (int r = 0; r < 16; ++r) n += cnt[1 + i * 16 + r];
        if (n > EXEC_PLIST_CAP) {
            const exec_u64 row0 = i / (4ull * CB) * 16;
            dense[i] = 1u;
#pragma unroll
            for (int r = 0; r < 16; ++r) cnt[1 + i * 16 + r] = row0 + r < M ? 1u : 0u;
        }
    }
}

extern "C" __global__ void __launch_bounds__(256)
    exec_plist_emit(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes, const exec_u8* __restrict__ base,
                    const exec_u32* __restrict__ esc_start, const exec_u8* __restrict__ esc, exec_u32 M, exec_u32 K,
                    const exec_u32* __restrict__ cnt, const exec_u8* __restrict__ dense, exec_u32* __restrict__ ent,
                    exec_u32* __restrict__ off) {
    const exec_u32 K16 = (K + 15u) & ~15u, CB = (K + 511u) >> 9;
    const exec_u32 lane = threadIdx.x & 31u;
    const exec_u64 T = (exec_u64)M * CB;
    const exec_u64 items = ((exec_u64)M + 15) / 16 * CB * 4;
    for (exec_u64 t = ((exec_u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; t < T; t += ((exec_u64)gridDim.x * blockDim.x) >> 5) {
        const exec_u32 m = (exec_u32)(t / CB), cb = (exec_u32)(t % CB);
        const exec_u32 k0 = cb * 512u + lane * 16u;
        const exec_u64 item = ((exec_u64)(m >> 4) * CB + cb) * 4 + (lane >> 3);
        uint2 c = make_uint2(0u, 0u);
        uint4 s = make_uint4(0u, 0u, 0u, 0u);
        exec_u64 pairs = 0;
        if (k0 < K16) {
            c = *reinterpret_cast<const uint2*>(codes + (exec_u64)m * (K16 >> 1) + (k0 >> 1));
            s = *reinterpret_cast<const uint4*>(sm + (exec_u64)m * K16 + k0);
            pairs = exec_special_pairs(exec_mask_pad(c, k0, K));
        }
        // code-15 weights of the tile before this lane (pad columns hold code 0: never 15)
        exec_u64 eo = (exec_u64)esc_start[t] + exec_warp_excl(exec_count15(c.x) + exec_count15(c.y), lane);
        exec_u64 o = (exec_u64)cnt[item * 16 + (m & 15u)] + exec_octet_excl((exec_u32)__popcll(pairs), lane);
        if (dense[item]) {  // warp-uniform per octet: one entry per row, the row's escape offset here
            if ((lane & 7u) == 0u) {
                ent[2 * o] = EXEC_PLIST_DENSE | ((m & 15u) << 6);
                ent[2 * o + 1] = (exec_u32)eo;  // E <= 2^32 - 1 (spec 20.2)
            }
            pairs = 0;
        }
        const exec_u32 b = base[m];
        const exec_u64 c64 = ((exec_u64)c.y << 32) | c.x;
        const exec_u32 sw[4] = {s.x, s.y, s.z, s.w};
        // every pair in column order, so code-15 weights take their escapes in order; a pair
        // not listed holds no code 15 (a code 15 is never plain)
#pragma unroll
        for (exec_u32 p = 0; p < 8u; ++p) {
            if (!((pairs >> (8u * p + 3u)) & 1u)) continue;
            const exec_u32 cbyte = (exec_u32)(c64 >> (8u * p)) & 0xffu;  // a pad half: code 0, sm 0 -> +0
            const exec_u32 word = exec_pair_word(cbyte, (sw[p >> 1] >> (16u * (p & 1u))) & 0xffffu, b, esc, eo);
            ent[2 * o] = ((m & 15u) << 6) | ((lane & 7u) * 8u + p);
            ent[2 * o + 1] = word;
            ++o;
        }
        if ((m & 15u) == 0u && (lane & 7u) == 0u) {
            off[item] = cnt[item * 16];
            if (item + 1 == items) off[items] = cnt[items * 16];
        }
    }
}
