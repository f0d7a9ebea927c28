// Execution layout: W1, the exact one-column strip kernel on CTAs of one warp (spec 20.15; the
// strip kernels' shared parts, their decode of a group of 4 rows and the CTA kernel are in
// exec_matvec_strip.cu, compiled before this file). exec/w1.rs and exec/strip.rs choose it where
// the groups of 4 rows fill at least half a round of resident warps.

// W1's 4 rows from r0: b4 their bases (one byte each), b2[r] = exec_b2 of row r's. Each lane
// loads row l3's and the shuffles spread them: b2 stays in vector registers, where a uniform load
// would put it in uniform registers that every use first moves (six more instructions per row).
__device__ __forceinline__ void exec_strip_w1_bases(const exec_u8* __restrict__ base, exec_u32 r0, exec_u32 l3, exec_u32& b4,
                                                    exec_u32 (&b2)[4]) {
    b4 = __ldg(reinterpret_cast<const exec_u32*>(base + r0));  // base is allocated rounded up to 4 bytes
    const exec_u32 mine = exec_b2(__ldg(base + r0 + l3));
#pragma unroll
    for (exec_u32 r = 0; r < 4; ++r) b2[r] = __shfl_sync(EXEC_FULL, mine, r);
}

// W1's end: the writer lanes of the tree add the bias to their row's sum S and store it (spec
// 15.4.6).
__device__ __forceinline__ void exec_strip_w1_store(float S, exec_u32 r0, exec_u32 lane, exec_u32 M, const float* __restrict__ bias,
                                                    void* __restrict__ y, int out_bf16) {
    const exec_u32 m = r0 + exec_tree_index<4>(lane);
    if (exec_tree_writer<4>(lane) && m < M) {
        exec_output(S, m, 0u, 0u, bias, y, out_bf16);
    }
}

// W1's group of one tile: its 4 rows' words at ps / pc, their tile flags at pf, row (lane & 3)'s
// escape offset at pe.
__device__ __forceinline__ void exec_strip_w1_tile(ExecStripGroup& g, const exec_u8* ps, const exec_u8* pc, const exec_u8* pf,
                                                   const exec_u32* pe, exec_u32 K16, bool full, exec_u32 nrows, bool active) {
    exec_strip_load(g, ps, pc, K16, full, nrows, active);
    g.fl = __ldg(reinterpret_cast<const exec_u32*>(pf));
    g.eo = __ldg(pe);
}

// CTAs of one warp (W1): the warp takes 4 rows through every tile in ascending cb, adding each
// tile partial to its row's sum as it comes (spec 15.4.5): no shared memory, no CTA barrier, so no
// warp waits for the slowest of its CTA (Nsight Compute, session 12: 15% of the CTA kernel's stall
// samples at that barrier). Needs 4 rows per warp to fill the device (exec/strip.rs). The rows'
// bases are loaded once and the rows' pointers advance by one tile per step.
// AHEAD = 1 ("W1 ahead"): the next tile's group is loaded before this tile's decode, two groups of
// words in registers per warp, so twice W1's bytes in flight per warp, at up to 112 registers (no
// spills with the CI's NVRTC; the main path 389-397 SASS instructions against W1's 362; 16 warps
// per SM on the H200 as its driver compiles it, against W1's 24). exec/w1.rs takes it for W1's
// launches that fit one round of its slots, where W1 leaves slots idle anyway (session 30: 1.8-6.5%
// faster on every such shape, 8-21% slower where it would need a second round). At 80 registers
// the same schedule spilled (session 27). The decode, chain and adds are the same, in the same
// order.
template <int PROBE, int LATE, int AHEAD, class XT>
__device__ __forceinline__ void exec_strip_w1_body(EXEC_MATVEC_PARAMS(XT), const exec_u8* __restrict__ flags) {
    if (ncols == 0) return;  // no output
    const exec_u32 K16 = (K + 15u) & ~15u, CB = (K + 511u) >> 9, M4 = (M + 3u) & ~3u;
    const exec_u32 lane = threadIdx.x & 31u, l3 = lane & 3u, r0 = blockIdx.x * 4u;
    const bool rows = r0 + 4u <= M;
    exec_strip_prefetch(sm, codes, K, r0, min(4u, M - r0), 0u, 1024u, lane);  // its first 2 tiles
    if (!LATE) grid_dependency_release();
    grid_dependency_wait();
    exec_u32 b4, b2[4];
    exec_strip_w1_bases(base, r0, l3, b4, b2);
    const exec_u8* ps = sm + (exec_u64)r0 * K16 + lane * 16u;
    const exec_u8* pc = codes + (exec_u64)r0 * (K16 >> 1) + lane * 8u;
    const exec_u8* pf = flags + r0;
    // a row past M reads the last row's escape offsets: a row past M loads as code 1 (plain), so
    // its offset is never used, and the load needs no predicate
    const exec_u32* pe = esc_start + (exec_u64)min(r0 + l3, M - 1u) * CB;
    ExecStripGroup g;
    if (AHEAD) exec_strip_w1_tile(g, ps, pc, pf, pe, K16, rows && 512u <= K, M - r0, lane * 16u < K16);
    float S = 0.0f;
    for (exec_u32 c0 = 0; c0 < K; c0 += 512u) {  // c0: the tile's first column
        const exec_u32 kc = c0 + lane * 16u, c1 = c0 + 512u;
        const bool active = kc < K16;
        const bool whole = c1 <= K;  // warp-uniform
        float xv[16];
        if (AHEAD) {
            ExecStripGroup n;
            if (c1 < K) {  // warp-uniform: the next tile's group, before this one's decode
                exec_strip_w1_tile(n, ps + 512, pc + 256, pf + M4, pe + 1, K16, rows && c1 + 512u <= K, M - r0, c1 + lane * 16u < K16);
            } else {
                if (LATE) grid_dependency_release();
                n = g;
            }
            exec_strip_x(xv, x, kc, whole, active);
            S = __fadd_rn(S, exec_strip_group<PROBE>(g, b4, b2, xv, esc, lane, whole, kc, K));
            g = n;
        } else {
            if (LATE && c1 >= K) grid_dependency_release();
            exec_strip_x(xv, x, kc, whole, active);
            exec_strip_w1_tile(g, ps, pc, pf, pe, K16, rows && whole, M - r0, active);
            S = __fadd_rn(S, exec_strip_group<PROBE>(g, b4, b2, xv, esc, lane, whole, kc, K));
        }
        ps += 512;
        pc += 256;
        pf += M4;
        ++pe;
    }
    exec_strip_w1_store(S, r0, lane, M, bias, y, out_bf16);
}

// Same argument list as EXEC_LEAN, with RS (rows per unit, a multiple of 4) and S (row slices per
// CTA, at least 1) in place of G. 80 registers: 3 CTAs of 8 warps per SM (the kernel needs 80
// without spills). XT: the activations' type, float or exec_u16 (BF16, the `_xbf16` entry points:
// the exact class on nwc.torch's activations without a widening launch).
#define EXEC_STRIP_X(NAME, PROBE, LATE, FREE, XT)                                                         \
    extern "C" __global__ void __maxnreg__(80)                                                             \
        NAME(EXEC_MATVEC_PARAMS(XT), exec_u32 RS, exec_u32 S, const exec_u8* __restrict__ flags) {       \
        exec_strip_body<PROBE, LATE, FREE, 1, XT>(sm, codes, base, esc_start, esc, M, K, x, ldx, ncols, bias, y, ldy, out_bf16, RS, S, flags); \
    }
#define EXEC_STRIP(NAME, PROBE, LATE, FREE) EXEC_STRIP_X(NAME, PROBE, LATE, FREE, float)

EXEC_STRIP(exec_matvec_strip, 0, 0, 0)
EXEC_STRIP(exec_matvec_strip_release_end, 0, 1, 0)
EXEC_STRIP_X(exec_matvec_strip_xbf16, 0, 0, 0, exec_u16)
EXEC_STRIP_X(exec_matvec_strip_release_end_xbf16, 0, 1, 0, exec_u16)
EXEC_STRIP(exec_matvec_strip_slices, 0, 0, 1)
EXEC_STRIP(exec_matvec_strip_slices_release_end, 0, 1, 1)
EXEC_STRIP_X(exec_matvec_strip_slices_xbf16, 0, 0, 1, exec_u16)
EXEC_STRIP_X(exec_matvec_strip_slices_release_end_xbf16, 0, 1, 1, exec_u16)

// Same argument list as EXEC_STRIP (RS and S unused: 4 rows per CTA); NREG registers at most (W1
// 80, W1 ahead 112).
#define EXEC_STRIP_W1_X(NAME, PROBE, LATE, AHEAD, NREG, XT)                                               \
    extern "C" __global__ void __maxnreg__(NREG)                                                           \
        NAME(EXEC_MATVEC_PARAMS(XT), exec_u32 RS, exec_u32 S, const exec_u8* __restrict__ flags) {       \
        exec_strip_w1_body<PROBE, LATE, AHEAD, XT>(sm, codes, base, esc_start, esc, M, K, x, ldx, ncols, bias, y, ldy, out_bf16, flags); \
    }
#define EXEC_STRIP_W1(NAME, PROBE, LATE) EXEC_STRIP_W1_X(NAME, PROBE, LATE, 0, 80, float)

EXEC_STRIP_W1(exec_matvec_strip_w1, 0, 0)
EXEC_STRIP_W1(exec_matvec_strip_w1_release_end, 0, 1)
EXEC_STRIP_W1_X(exec_matvec_strip_w1_xbf16, 0, 0, 0, 80, exec_u16)
EXEC_STRIP_W1_X(exec_matvec_strip_w1_release_end_xbf16, 0, 1, 0, 80, exec_u16)
EXEC_STRIP_W1_X(exec_matvec_strip_w1_ahead, 0, 0, 1, 112, float)
EXEC_STRIP_W1_X(exec_matvec_strip_w1_ahead_release_end, 0, 1, 1, 112, float)
EXEC_STRIP_W1_X(exec_matvec_strip_w1_ahead_xbf16, 0, 0, 1, 112, exec_u16)
EXEC_STRIP_W1_X(exec_matvec_strip_w1_ahead_release_end_xbf16, 0, 1, 1, 112, exec_u16)
