// Execution layout: the exact one-column matvec (spec 20.15, bit-identical to the reference and to
// exec_matvec_lean.cu), the "strip" kernel (docs/gpu.md, session 12). The lean kernel spends about
// half of its instructions per row on structure (cp.async copies, stage and activation reads from
// shared memory): its no-decode probe stops at 1.11-1.15x of cuBLAS, this kernel's at 1.24-1.30x.
// Here a warp owns one tile column cb of a strip of RS rows (a unit), so:
// - the lane's 16 activations of the tile stay in registers for the whole unit;
// - a row's 16 sm bytes and 8 code bytes per lane go straight from global memory to registers
//   (ld.global.nc: 512 + 256 contiguous bytes per warp; no shared memory, no cp.async); memory-level
//   parallelism comes from the resident warps, each with a group of 4 rows in flight (80 registers:
//   3 CTAs of 8 warps per SM). Two schedules that kept the next group in flight during a group's
//   compute were slower (a second group in registers: 118 registers, 16 warps; the next group's rows
//   loaded as this group's are decoded: spills at 80);
// - the 4 rows of a group share one transposed halving tree (exec_tree<4>), which gives the tile
//   partials P(m, cb) (spec 15.4.4), added per row over cb ascending from +0.0 (spec 15.4.5), then
//   the bias (15.4.6).
// Two launch shapes (exec/strip.rs picks): CTAs of W warps whose tile partials meet in shared
// memory, summed after the CTA barrier (exec_strip_body), or, where the rows alone fill the
// device, CTAs of one warp that take 4 rows through every tile in order, with no barrier to wait
// at (exec_strip_w1_body: +2.5-14% on the bench shapes where it runs).
// Codes 0 and 15 as in lean: the tile flags (derived at load) say which rows take the escape prefix
// and the per-pair patch; the 4 rows' escape offsets come with the group's loads.
// Shared memory (CTAs of W warps): RB x CB f32 tile partials.

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

// One group of 4 rows of a unit, as loaded: the lane's sm and code words per row, the 4 rows' tile
// flags and bases (one byte each), and row (lane & 3)'s escape offset of the tile.
struct ExecStripGroup {
    uint4 s[4];
    uint2 c[4];
    exec_u32 fl, b4, eo;
};

// PROBE (bench only, kernels/bench/exec_matvec_variants.cu): 1 = the loaded words used as weights
// (no decode, no escapes; a ceiling probe, not exact); production instantiates PROBE = 0 only.
// One unit: rows [r0, r1) (r0 a multiple of 4, r1 <= M) of tile cb, a group of 4 rows at a time;
// sink(m, P) receives each group's tree result, P = the tile partial of row m + exec_tree_index<4>
// (lane) in every lane.
template <int PROBE, class Sink>
__device__ __forceinline__ void exec_strip_unit(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes,
                                                const exec_u8* __restrict__ base, const exec_u32* __restrict__ esc_start,
                                                const exec_u8* __restrict__ esc, const exec_u8* __restrict__ flags,
                                                const float* __restrict__ x, exec_u32 M, exec_u32 K, exec_u32 ncols,
                                                exec_u32 cb, exec_u32 r0, exec_u32 r1, Sink sink) {
    const exec_u32 K16 = (K + 15u) & ~15u, CB = (K + 511u) >> 9, M4 = (M + 3u) & ~3u;
    const exec_u64 K16c = K16 >> 1;
    const exec_u32 lane = threadIdx.x & 31u;
    const exec_u32 kc = cb * 512u + lane * 16u;
    const bool active = kc < K16;
    const bool whole = cb * 512u + 512u <= K;  // warp-uniform: no pad column, every lane active
    // the lane's 16 activations of the tile, for every row of the unit (zero past K16)
    float xv[16];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
        if (active && ncols > 0) v = __ldg(reinterpret_cast<const float4*>(x + kc) + q);
        xv[4 * q] = v.x;
        xv[4 * q + 1] = v.y;
        xv[4 * q + 2] = v.z;
        xv[4 * q + 3] = v.w;
    }
    const exec_u8* fcol = flags + (exec_u64)cb * M4;
    // Row r of the group at m (a multiple of 4); rows past M and lanes past K16 get zero sm
    // bytes and code 1 (a finite weight that meets x = 0).
    auto load_row = [&](ExecStripGroup& g, exec_u32 r, exec_u32 m) {
        const exec_u8* ps = sm + (exec_u64)(m + r) * K16 + kc;
        const exec_u8* pc = codes + (exec_u64)(m + r) * K16c + (kc >> 1);
        if (m + 4u <= M && whole) {  // warp-uniform: no predicates
            g.s[r] = exec_ldg_nc16(ps);
            g.c[r] = exec_ldg_nc8(pc);
        } else {
            g.s[r] = make_uint4(0u, 0u, 0u, 0u);
            g.c[r] = make_uint2(0x11111111u, 0x11111111u);
            if (m + r < M && active) {
                g.s[r] = exec_ldg_nc16(ps);
                g.c[r] = exec_ldg_nc8(pc);
            }
        }
    };
    auto load_meta = [&](ExecStripGroup& g, exec_u32 m) {
        g.fl = __ldg(reinterpret_cast<const exec_u32*>(fcol + m));  // 4 rows' flags (M4 bytes per tile column)
        g.b4 = __ldg(reinterpret_cast<const exec_u32*>(base + m));  // base is allocated rounded up to 4 bytes
        g.eo = m + (lane & 3u) < M ? __ldg(esc_start + (exec_u64)(m + (lane & 3u)) * CB + cb) : 0u;
    };
    auto load = [&](ExecStripGroup& g, exec_u32 m) {
#pragma unroll
        for (exec_u32 r = 0; r < 4; ++r) load_row(g, r, m);
        load_meta(g, m);
    };
    // Row r's 8 BF16 pairs (spec 20.13); pad columns of the last tile take code 1.
    auto decode = [&](const ExecStripGroup& g, exec_u32 r, exec_u32 (&w)[8]) {
        if (PROBE) {
            const exec_u32 raw[8] = {g.s[r].x, g.s[r].y, g.s[r].z, g.s[r].w, g.c[r].x, g.c[r].y, g.s[r].x ^ g.c[r].y, g.s[r].w ^ g.c[r].x};
#pragma unroll
            for (int p = 0; p < 8; ++p) w[p] = raw[p];
            return;
        }
        const uint2 c = whole ? g.c[r] : exec_mask_pad(g.c[r], kc, K);
        const exec_u32 rb = (g.b4 >> (8u * r)) & 0xffu;
        exec_pairs16_fast(c, g.s[r], exec_b2(rb), w);
        if ((g.fl >> (8u * r)) & 0xffu) {  // warp-uniform: the tile holds a code 0 or 15
            const exec_u32 n15 = exec_count15(c.x) + exec_count15(c.y);
            const exec_u32 before = exec_warp_excl(n15, lane);
            const exec_u32 t0 = __shfl_sync(EXEC_FULL, g.eo, r);
            if (!exec_plain16(c)) exec_patch_pairs(c, g.s[r], rb, esc, (exec_u64)t0 + before, w);
        }
    };
    auto chain = [&](const exec_u32 (&w)[8]) {
        float a = 0.0f;
#pragma unroll
        for (int p = 0; p < 8; ++p) {
            a = __fmaf_rn(exec_lo(w[p]), xv[2 * p], a);
            a = __fmaf_rn(exec_hi(w[p]), xv[2 * p + 1], a);
        }
        return a;
    };
    auto compute = [&](const ExecStripGroup& g, exec_u32 m) {
        float acc[4];
#pragma unroll
        for (exec_u32 r = 0; r < 4; ++r) {
            exec_u32 w[8];
            decode(g, r, w);
            acc[r] = chain(w);
        }
        sink(m, exec_tree<4>(acc, lane));
    };
    for (exec_u32 m = r0; m < r1; m += 4u) {
        ExecStripGroup g;
        load(g, m);
        compute(g, m);
    }
}

// CTAs of W warps (the default): a CTA covers RB = RS x slices rows and all CB tiles, its warps take
// the CB x slices units (cb, slice) round-robin, slices = max(1, W / CB); the tile partials meet in
// shared memory and one thread per row adds them after the CTA barrier.
template <int PROBE>
__device__ __forceinline__ void exec_strip_body(EXEC_MATVEC_PARAMS(float), exec_u32 RS, const exec_u8* __restrict__ flags) {
    extern __shared__ __align__(16) float exec_strip_pbuf[];  // RB x CB tile partials
    const exec_u32 CB = (K + 511u) >> 9;
    const exec_u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, W = blockDim.x >> 5;
    const exec_u32 slices = max(1u, W / CB), RB = RS * slices, m0 = blockIdx.x * RB;
    for (exec_u32 u = warp; u < CB * slices; u += W) {
        const exec_u32 cb = u % CB, r0 = m0 + (u / CB) * RS;
        if (r0 >= M) continue;  // warp-uniform
        exec_strip_unit<PROBE>(sm, codes, base, esc_start, esc, flags, x, M, K, ncols, cb, r0, min(r0 + RS, M),
                               [&](exec_u32 m, float P) {
                                   const exec_u32 idx = exec_tree_index<4>(lane);
                                   if (exec_tree_writer<4>(lane) && m + idx < M) exec_strip_pbuf[(m - m0 + idx) * CB + cb] = P;
                               });
    }
    __syncthreads();
    for (exec_u32 t = threadIdx.x; t < RB; t += blockDim.x) {
        const exec_u32 m = m0 + t;
        if (m < M && ncols > 0) {
            float S = 0.0f;
            for (exec_u32 cb = 0; cb < CB; ++cb) S = __fadd_rn(S, exec_strip_pbuf[t * CB + cb]);
            if (bias) S = __fadd_rn(S, bias[m]);
            if (out_bf16)
                reinterpret_cast<exec_u16*>(y)[m] = exec_bf16_rne(S);
            else
                reinterpret_cast<float*>(y)[m] = S;
        }
    }
}

// CTAs of one warp (W1): the warp takes 4 rows through every tile in ascending cb, adding each
// tile partial to its row's sum as it comes (spec 15.4.5): no shared memory, no CTA barrier, so no
// warp waits for the slowest of its CTA (Nsight Compute, session 12: 15% of the CTA kernel's stall
// samples at that barrier). Needs 4 rows per warp to fill the device (exec/strip.rs).
template <int PROBE>
__device__ __forceinline__ void exec_strip_w1_body(EXEC_MATVEC_PARAMS(float), const exec_u8* __restrict__ flags) {
    const exec_u32 CB = (K + 511u) >> 9, lane = threadIdx.x & 31u, r0 = blockIdx.x * 4u;
    const exec_u32 idx = exec_tree_index<4>(lane);
    float S = 0.0f;
    for (exec_u32 cb = 0; cb < CB; ++cb)
        exec_strip_unit<PROBE>(sm, codes, base, esc_start, esc, flags, x, M, K, ncols, cb, r0, min(r0 + 4u, M),
                               [&](exec_u32, float P) { S = __fadd_rn(S, P); });
    const exec_u32 m = r0 + idx;
    if (exec_tree_writer<4>(lane) && m < M && ncols > 0) {
        if (bias) S = __fadd_rn(S, bias[m]);
        if (out_bf16)
            reinterpret_cast<exec_u16*>(y)[m] = exec_bf16_rne(S);
        else
            reinterpret_cast<float*>(y)[m] = S;
    }
}

// Same argument list as EXEC_LEAN, with RS (rows per unit, a multiple of 4) in place of G. 80
// registers: 3 CTAs of 8 warps per SM (the kernel needs 80 without spills).
#define EXEC_STRIP(NAME, PROBE)                                                                           \
    extern "C" __global__ void __maxnreg__(80)                                                             \
        NAME(EXEC_MATVEC_PARAMS(float), exec_u32 RS, const exec_u8* __restrict__ flags) {                \
        exec_strip_body<PROBE>(sm, codes, base, esc_start, esc, M, K, x, ldx, ncols, bias, y, ldy, out_bf16, RS, flags); \
    }

EXEC_STRIP(exec_matvec_strip, 0)

// Same argument list as EXEC_STRIP (RS unused: always 4).
#define EXEC_STRIP_W1(NAME, PROBE)                                                                        \
    extern "C" __global__ void __maxnreg__(80)                                                             \
        NAME(EXEC_MATVEC_PARAMS(float), exec_u32 RS, const exec_u8* __restrict__ flags) {                \
        exec_strip_w1_body<PROBE>(sm, codes, base, esc_start, esc, M, K, x, ldx, ncols, bias, y, ldy, out_bf16, flags); \
    }

EXEC_STRIP_W1(exec_matvec_strip_w1, 0)
