// Execution layout: the exact one-column matvec (spec 20.15, bit-identical to the reference and to
// exec_matvec_lean.cu), the "strip" kernel (docs/gpu-history.md, session 12). The lean kernel spends about
// half of its instructions per row on structure (cp.async copies, stage and activation reads from
// shared memory): its no-decode probe stops at 1.11-1.15x of cuBLAS, this kernel's at 1.24-1.30x.
// Here a warp owns one tile column cb of a strip of RS rows (a unit), so:
// - the lane's 16 activations of the tile stay in registers for the whole unit;
// - a row's 16 sm bytes and 8 code bytes per lane go straight from global memory to registers
//   (ld.global.nc: 512 + 256 contiguous bytes per warp; no shared memory, no cp.async); memory-level
//   parallelism comes from the resident warps, each with a group of 4 rows in flight (80 registers:
//   3 CTAs of 8 warps per SM). Schedules that kept the next group in flight during a group's
//   compute were slower (a second group in registers: 118 registers, 16 warps; the next group's rows
//   loaded as this group's are decoded: spills at 80; W1 with the next tiles staged by cp.async in
//   shared memory, session 16: 5-19% slower where W1 runs; session 27: both kernels with the next
//   group in a cp.async ring of shared memory, 16-20% slower, and with half groups rolled (the
//   next group's rows 0, 1 loaded as this group's rows 2, 3 decode), 8-10% slower);
// - the 4 rows of a group share one transposed halving tree (exec_tree<4>), which gives the tile
//   partials P(m, cb) (spec 15.4.4), added per row over cb ascending from +0.0 (spec 15.4.5), then
//   the bias (15.4.6).
// Two launch shapes (exec/strip.rs picks): CTAs of W warps whose tile partials meet in shared
// memory, summed after the CTA barrier (exec_strip_body), or, where the groups of 4 rows fill half
// a round of resident warps, CTAs of one warp that take 4 rows through every tile in order, with no barrier to wait
// at (exec_strip_w1_body in exec_matvec_strip_w1.cu: +2.5-14% on the bench shapes where it runs).
// Codes 0 and 15 as in lean: the tile flags (derived at load) say which rows take the per-pair
// patch, and which of those take the escape prefix too (a tile whose code-15 weights share the
// escape byte that is its flag needs neither the prefix nor a load of esc: session 23 for one such
// weight, session 26 for several; such a row, where its
// base is at most 241, takes one XOR per special weight, exec_strip_fix, instead of the pair
// patch: session 24); the 4 rows' escape offsets come with the group's loads.
// Instructions (session 14, docs/gpu-history.md): the decode (exec_strip_decode.cu) pairs weights a and a + 4,
// tiles without pad columns load without predicates or masks, and W1 loads its rows' bases once
// and advances its pointers; the path every group of 4 rows runs is 370 SASS instructions in W1
// (466 before) and 404 in the CTA kernel (443), as `bash cuda/sass.sh exec_matvec_strip` counts them;
// a patched pair adds 79 (session 15).
// Shared memory (CTAs of W warps): RB x CB f32 tile partials per activation column (NC: production
// runs one; the bench's kernel on several columns, bench/exec_matvec_strip_cols.cu, 2 or 4).

__device__ __forceinline__ uint4 exec_ldg_nc16(const exec_u8* p) {
    uint4 v;
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}
__device__ __forceinline__ uint2 exec_ldg_nc8(const exec_u8* p) {
    uint2 v;
    asm("ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
    return v;
}

// One group of 4 rows, as loaded: the lane's sm and code words per row, the 4 rows' tile flags
// (one byte each) and row (lane & 3)'s escape offset of the tile.
struct ExecStripGroup {
    uint4 s[4];
    uint2 c[4];
    exec_u32 fl, eo;
};

// The lane's 16 activations of its tile (zero past K16). whole (warp-uniform): no pad column in the
// tile, so every lane loads without a predicate.
__device__ __forceinline__ void exec_strip_x(float (&xv)[16], const float* __restrict__ x, exec_u32 kc, bool whole, bool active) {
    const float4* p = reinterpret_cast<const float4*>(x + kc);
    float4 v[4];
    if (whole) {
#pragma unroll
        for (int q = 0; q < 4; ++q) v[q] = __ldg(p + q);
    } else {
#pragma unroll
        for (int q = 0; q < 4; ++q) v[q] = active ? __ldg(p + q) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        xv[4 * q] = v[q].x;
        xv[4 * q + 1] = v[q].y;
        xv[4 * q + 2] = v[q].z;
        xv[4 * q + 3] = v[q].w;
    }
}

// The same from BF16 activations (nwc.torch's, spec 19.2's domain): 16 words per lane, each widened
// to its f32 value, exactly (a BF16 value is an f32 value), so the chain is the f32 one's.
__device__ __forceinline__ void exec_strip_x(float (&xv)[16], const exec_u16* __restrict__ x, exec_u32 kc, bool whole, bool active) {
    const uint4* p = reinterpret_cast<const uint4*>(x + kc);
    uint4 v[2];
#pragma unroll
    for (int q = 0; q < 2; ++q) v[q] = whole || active ? __ldg(p + q) : make_uint4(0u, 0u, 0u, 0u);
    const exec_u32 wv[8] = {v[0].x, v[0].y, v[0].z, v[0].w, v[1].x, v[1].y, v[1].z, v[1].w};
    // widened once per load, in asm: the compiler would otherwise keep the 8 words and widen them
    // again at every row's use (the W1 kernel's main path 423 SASS instructions against 360)
#pragma unroll
    for (int q = 0; q < 8; ++q) {
        exec_u32 lo, hi;
        asm volatile("shl.b32 %0, %2, 16;\n\tand.b32 %1, %2, 0xffff0000;" : "=r"(lo), "=r"(hi) : "r"(wv[q]));
        xv[2 * q] = __uint_as_float(lo);
        xv[2 * q + 1] = __uint_as_float(hi);
    }
}

// The 4 rows' words of a group: ps / pc point at the group's first row at the lane's columns, row r
// at ps + r K16 and pc + r K16 / 2. full (warp-uniform): the 4 rows are below M and the tile has no
// pad column, so no predicates; else rows r >= nrows and lanes past K16 get zero sm bytes and code 1
// (a finite weight that meets x = 0).
__device__ __forceinline__ void exec_strip_load(ExecStripGroup& g, const exec_u8* ps, const exec_u8* pc, exec_u32 K16,
                                                bool full, exec_u32 nrows, bool active) {
    if (full) {
#pragma unroll
        for (exec_u32 r = 0; r < 4; ++r) {
            g.s[r] = exec_ldg_nc16(ps + (exec_u64)r * K16);
            g.c[r] = exec_ldg_nc8(pc + (exec_u64)r * (K16 >> 1));
        }
    } else {
#pragma unroll
        for (exec_u32 r = 0; r < 4; ++r) {
            g.s[r] = make_uint4(0u, 0u, 0u, 0u);
            g.c[r] = make_uint2(0x11111111u, 0x11111111u);
            if (r < nrows && active) {
                g.s[r] = exec_ldg_nc16(ps + (exec_u64)r * K16);
                g.c[r] = exec_ldg_nc8(pc + (exec_u64)r * (K16 >> 1));
            }
        }
    }
}

// PROBE (bench only, kernels/bench/exec_matvec_variants.cu): 1 = the loaded words used as weights
// (no decode, no escapes; a ceiling probe, not exact); production instantiates PROBE = 0 only.
// Row r of a group: its 16 weights of the lane decoded (spec 20.13) into 8 pairs w, b4 the group's
// 4 bases (one byte each) and b2[r] = exec_b2 of row r's base. Pad columns keep their code 0 on the
// fast path (the tile flags ignore them; the weight is finite, its sm byte 0, and meets x = 0:
// spec 15.4.3 note); in a flagged row
// of a tile with pad columns (not whole) they take code 1 first, so that the patch leaves them
// (session 14: without it, every flagged row of 1000x3000's last tile patched 4 pad pairs, -16%).
template <int PROBE>
__device__ __forceinline__ void exec_strip_row(const ExecStripGroup& g, exec_u32 r, exec_u32 b4, const exec_u32 (&b2)[4],
                                               const exec_u8* __restrict__ esc, exec_u32 lane, bool whole, exec_u32 kc, exec_u32 K,
                                               exec_u32 (&w)[8]) {
    if (PROBE == 1) {
        const exec_u32 raw[8] = {g.s[r].x, g.s[r].y, g.s[r].z, g.s[r].w, g.c[r].x, g.c[r].y, g.s[r].x ^ g.c[r].y, g.s[r].w ^ g.c[r].x};
#pragma unroll
        for (int p = 0; p < 8; ++p) w[p] = raw[p];
    } else {
        exec_strip_pairs16(g.c[r], g.s[r], b2[r], w);
        const exec_u32 f = (g.fl >> (8u * r)) & 0xffu;
        if (f) {  // warp-uniform: the tile holds a code 0 or 15
            const uint2 c = whole ? g.c[r] : exec_mask_pad(g.c[r], kc, K);
            exec_u64 off = 0;
            if (f == 1u) {  // warp-uniform: else f is the escape byte of every code 15 of the tile
                const exec_u32 n15 = exec_count15(c.x) + exec_count15(c.y);
                const exec_u32 before = exec_warp_excl(n15, lane);
                off = (exec_u64)__shfl_sync(EXEC_FULL, g.eo, r) + before;
            }
            const exec_u32 br = (b4 >> (8u * r)) & 0xffu;
            if (!exec_plain16(c)) {
                // flag >= 2 and no carry out of the exponent field: one XOR per special weight
                if (f >= 2u && br <= 241u) exec_strip_fix(c, br, f, w);
                else exec_strip_patch(c, g.s[r], br, esc, off, f, w);
            }
        }
    }
}

// One group on NC columns (activations xv[c]): each row decoded once (exec_strip_row), then one
// chain per column (spec 15.4.3) and one transposed tree per column; P[c] is column c's tile
// partial of row exec_tree_index<4>(lane) of the group (spec 15.4.4). Production runs NC = 1; the
// bench's CTA kernel on several columns (bench/exec_matvec_strip_cols.cu) NC = 2 and 4.
template <int PROBE, int NC>
__device__ __forceinline__ void exec_strip_group_cols(const ExecStripGroup& g, exec_u32 b4, const exec_u32 (&b2)[4], const float (&xv)[NC][16],
                                                      const exec_u8* __restrict__ esc, exec_u32 lane, bool whole, exec_u32 kc, exec_u32 K,
                                                      float (&P)[NC]) {
    float acc[NC][4];
#pragma unroll
    for (exec_u32 r = 0; r < 4; ++r) {
        exec_u32 w[8];
        exec_strip_row<PROBE>(g, r, b4, b2, esc, lane, whole, kc, K, w);
#pragma unroll
        for (int c = 0; c < NC; ++c) {
            float a = 0.0f;
#pragma unroll
            for (int i = 0; i < 16; ++i) {
                a = __fmaf_rn(exec_strip_weight(w, i), xv[c][i], a);
            }
            acc[c][r] = a;
        }
    }
#pragma unroll
    for (int c = 0; c < NC; ++c) P[c] = exec_tree<4>(acc[c], lane);
}

// One group on one column (W1, exec_matvec_strip_w1.cu): the tile partial of row
// exec_tree_index<4>(lane); xv viewed as the one column of exec_strip_group_cols.
template <int PROBE>
__device__ __forceinline__ float exec_strip_group(const ExecStripGroup& g, exec_u32 b4, const exec_u32 (&b2)[4], const float (&xv)[16],
                                                  const exec_u8* __restrict__ esc, exec_u32 lane, bool whole, exec_u32 kc, exec_u32 K) {
    float P[1];
    exec_strip_group_cols<PROBE, 1>(g, b4, b2, reinterpret_cast<const float(&)[1][16]>(xv), esc, lane, whole, kc, K, P);
    return P[0];
}

// One unit: rows [r0, r1) (r0 a multiple of 4, r1 <= M) of tile cb, a group of 4 rows at a time,
// on NC activation columns, column c at x + min(c, ncols - 1) x ldx (a launch on fewer than NC
// columns computes its last one again for the columns past it, which are not stored); sink(m, P)
// receives each group's tree results, P[c] column c's.
template <int PROBE, int NC, class XT, class Sink>
__device__ __forceinline__ void exec_strip_unit(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes,
                                                const exec_u8* __restrict__ base, const exec_u32* __restrict__ esc_start,
                                                const exec_u8* __restrict__ esc, const exec_u8* __restrict__ flags,
                                                const XT* __restrict__ x, exec_u64 ldx, exec_u32 ncols, exec_u32 M, exec_u32 K, exec_u32 cb,
                                                exec_u32 r0, exec_u32 r1, Sink sink) {
    const exec_u32 K16 = (K + 15u) & ~15u, CB = (K + 511u) >> 9, M4 = (M + 3u) & ~3u;
    const exec_u32 lane = threadIdx.x & 31u, l3 = lane & 3u;
    const exec_u32 kc = cb * 512u + lane * 16u;
    const bool active = kc < K16;
    const bool whole = cb * 512u + 512u <= K;  // warp-uniform: no pad column, every lane active
    float xv[NC][16];
#pragma unroll
    for (int c = 0; c < NC; ++c) exec_strip_x(xv[c], x + (c == 0 ? 0u : min((exec_u32)c, ncols - 1u)) * ldx, kc, whole, active);
    const exec_u8* ps = sm + kc;
    const exec_u8* pc = codes + (kc >> 1);
    const exec_u8* fcol = flags + (exec_u64)cb * M4;  // M4 bytes per tile column
    const exec_u32* ecol = esc_start + cb;
    for (exec_u32 m = r0; m < r1; m += 4u) {
        ExecStripGroup g;
        exec_strip_load(g, ps + (exec_u64)m * K16, pc + (exec_u64)m * (K16 >> 1), K16, whole && m + 4u <= M, M - m, active);
        g.fl = __ldg(reinterpret_cast<const exec_u32*>(fcol + m));
        const exec_u32 b4 = __ldg(reinterpret_cast<const exec_u32*>(base + m));  // base is allocated rounded up to 4 bytes
        g.eo = __ldg(ecol + (exec_u64)min(m + l3, M - 1u) * CB);  // a row past M: as in W1
        exec_u32 b2[4];
#pragma unroll
        for (exec_u32 r = 0; r < 4; ++r) b2[r] = exec_b2((b4 >> (8u * r)) & 0xffu);
        float P[NC];
        exec_strip_group_cols<PROBE, NC>(g, b4, b2, xv, esc, lane, whole, kc, K, P);
        sink(m, P);
    }
}

// Programmatic dependent launch (grid_dependency_wait, common.cu): before the wait a warp asks L2 for the first
// rows of its work, so that, launched while the previous kernel's last CTAs run, its weights
// stream in meanwhile. Lane l < n prefetches the sm bytes of row m0 + l, lane n + l its code
// bytes, columns [c0, c0 + cols) clipped to K16 (n <= 16; the matrix's fields, which no kernel
// writes while the matrix lives).
__device__ __forceinline__ void exec_strip_prefetch(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes, exec_u32 K,
                                                    exec_u32 m0, exec_u32 n, exec_u32 c0, exec_u32 cols, exec_u32 lane) {
    const exec_u32 K16 = (K + 15u) & ~15u, bytes = min(cols, K16 - c0);
    if (lane < n) exec_prefetch_l2(sm + (exec_u64)(m0 + lane) * K16 + c0, bytes);
    else if (lane < 2u * n) exec_prefetch_l2(codes + (exec_u64)(m0 + lane - n) * (K16 >> 1) + (c0 >> 1), bytes >> 1);
}

// CTAs of W warps (the default): a CTA covers RB = RS x S rows (S row slices) and all CB tiles,
// its warps take the CB x S units (cb, slice) round-robin; the tile partials meet in shared memory
// and one thread per row adds them after the CTA barrier. FREE = 0: S = max(1, W / CB), derived
// here (the argument S, which exec/strip.rs passes equal, is not read); FREE = 1 (the `_slices`
// entry points): S as passed, for plans whose CTAs hold more row strips (exec/strip.rs,
// session 30). Two instances because reading S costs the kernel registers: with S from the
// argument the kernel spills 20 / 48 bytes against 12 / 12 and its group takes 416 SASS
// instructions against 409, and the launches whose S is max(1, W / CB) ran 1-4% slower (session
// 30, call G).
// LATE: 0 = the next kernel on the stream may launch (grid_dependency_release) once every CTA has started,
// 1 = once every CTA's warps are done with their units (W1: at its last tile). exec/strip.rs
// picks: 0 where the launch fills the device's resident CTAs, 1 where it leaves slots free, so
// that the next kernel's CTAs do not sit resident, waiting, beside this whole kernel.
template <int PROBE, int LATE, int FREE, int NC, class XT>
__device__ __forceinline__ void exec_strip_body(EXEC_MATVEC_PARAMS(XT), exec_u32 RS, exec_u32 S, const exec_u8* __restrict__ flags) {
    extern __shared__ __align__(16) float exec_strip_pbuf[];  // NC x RB x CB tile partials
    if (ncols == 0) return;  // CTA-uniform: no output
    const exec_u32 CB = (K + 511u) >> 9;
    const exec_u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, W = blockDim.x >> 5;
    const exec_u32 slices = FREE ? max(1u, S) : max(1u, W / CB), RB = RS * slices, m0 = blockIdx.x * RB;
    if (warp < CB * slices) {  // the first rows of the warp's first unit, before the wait
        const exec_u32 cb = warp % CB, r0 = m0 + (warp / CB) * RS;
        if (r0 < M) exec_strip_prefetch(sm, codes, K, r0, min(min(RS, 8u), M - r0), cb * 512u, 512u, lane);
    }
    if (!LATE) grid_dependency_release();
    grid_dependency_wait();
    for (exec_u32 u = warp; u < CB * slices; u += W) {
        const exec_u32 cb = u % CB, r0 = m0 + (u / CB) * RS;
        if (r0 >= M) continue;  // warp-uniform
        exec_strip_unit<PROBE, NC, XT>(sm, codes, base, esc_start, esc, flags, x, ldx, ncols, M, K, cb, r0, min(r0 + RS, M),
                                       [&](exec_u32 m, const float (&P)[NC]) {
                                           const exec_u32 idx = exec_tree_index<4>(lane);
                                           if (exec_tree_writer<4>(lane) && m + idx < M) {
#pragma unroll
                                               for (int c = 0; c < NC; ++c) exec_strip_pbuf[(c * RB + m - m0 + idx) * CB + cb] = P[c];
                                           }
                                       });
    }
    if (LATE) grid_dependency_release();
    __syncthreads();
    for (exec_u32 t = threadIdx.x; t < NC * RB; t += blockDim.x) {
        const exec_u32 c = NC == 1 ? 0u : t / RB, m = m0 + t - c * RB;
        if (m < M && (NC == 1 || c < ncols)) {
            float sum = 0.0f;
            for (exec_u32 cb = 0; cb < CB; ++cb) sum = __fadd_rn(sum, exec_strip_pbuf[t * CB + cb]);
            exec_output(sum, m, c, NC == 1 ? 0u : ldy, bias, y, out_bf16);
        }
    }
}
