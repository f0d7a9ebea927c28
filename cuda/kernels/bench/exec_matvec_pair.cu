// Bench (session 35): W1 on two columns per decode (`var-strip-w1-c2`,
// ExecMatvecKernel::VarStripW1C2). The question it answers: what a second activation column costs
// the one-column strip kernel. At batch 1 the kernel streams at ~1.3x of cuBLAS with its decode
// hidden under the loads; the tensor-core strip kernel, which serves batches 2..32, runs the same
// bytes at ~1.19x (bench shapes) and ~1.0x (fresh shapes). Each row's 16 weights per lane are
// decoded once (exec_strip_row) and meet both columns: a second chain of 16 FMAs per row and a
// second transposed tree per group, 32 more registers of activations. Each column's result is
// spec 20.15's exact one (the same chain, tree and adds as W1's), so the run is checked bit for
// bit against one launch per column.
// Launch as W1 (exec_matvec_strip_w1): CTAs of one warp on 4 rows through every tile ascending.
// ncols 1 or 2; with one column the kernel computes it twice and stores it once.
template <int LATE, class XT>
__device__ __forceinline__ void bench_exec_strip_w1_c2_body(EXEC_MATVEC_PARAMS(XT), const exec_u8* __restrict__ flags) {
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
    const exec_u32* pe = esc_start + (exec_u64)min(r0 + l3, M - 1u) * CB;  // as W1
    const XT* x1 = ncols > 1 ? x + ldx : x;
    float S[2] = {0.0f, 0.0f};
    for (exec_u32 c0 = 0; c0 < K; c0 += 512u) {  // c0: the tile's first column
        const exec_u32 kc = c0 + lane * 16u, c1 = c0 + 512u;
        const bool active = kc < K16;
        const bool whole = c1 <= K;  // warp-uniform
        if (LATE && c1 >= K) grid_dependency_release();
        float xv[2][16];
        exec_strip_x(xv[0], x, kc, whole, active);
        exec_strip_x(xv[1], x1, kc, whole, active);
        ExecStripGroup g;
        exec_strip_w1_tile(g, ps, pc, pf, pe, K16, rows && whole, M - r0, active);
        float P[2];
        exec_strip_group_cols<0, 2>(g, b4, b2, xv, esc, lane, whole, kc, K, P);
        S[0] = __fadd_rn(S[0], P[0]);
        S[1] = __fadd_rn(S[1], P[1]);
        ps += 512;
        pc += 256;
        pf += M4;
        ++pe;
    }
    const exec_u32 m = r0 + exec_tree_index<4>(lane);
    if (exec_tree_writer<4>(lane) && m < M) {
        exec_output(S[0], m, 0u, ldy, bias, y, out_bf16);
        if (ncols > 1) exec_output(S[1], m, 1u, ldy, bias, y, out_bf16);
    }
}

// Same argument list as EXEC_STRIP_W1 (RS and S unused). The second column's 16 activations on
// top of W1's 80 registers: at most 104 (100 used, no spills; held to 96 it spilled 16 / 8
// bytes), 19 resident warps per SM on the H200 against W1's 24. Main path 449 SASS instructions
// per group (_xbf16 488) against W1's 360 (377).
#define BENCH_STRIP_W1_C2(NAME, LATE, XT)                                                                  \
    extern "C" __global__ void __maxnreg__(104)                                                            \
        NAME(EXEC_MATVEC_PARAMS(XT), exec_u32 RS, exec_u32 S, const exec_u8* __restrict__ flags) {       \
        bench_exec_strip_w1_c2_body<LATE, XT>(sm, codes, base, esc_start, esc, M, K, x, ldx, ncols, bias, y, ldy, out_bf16, flags); \
    }

BENCH_STRIP_W1_C2(bench_exec_matvec_strip_w1_c2, 0, float)
BENCH_STRIP_W1_C2(bench_exec_matvec_strip_w1_c2_release_end, 1, float)
BENCH_STRIP_W1_C2(bench_exec_matvec_strip_w1_c2_xbf16, 0, exec_u16)
BENCH_STRIP_W1_C2(bench_exec_matvec_strip_w1_c2_release_end_xbf16, 1, exec_u16)
