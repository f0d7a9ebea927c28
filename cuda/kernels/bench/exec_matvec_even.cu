// Bench candidate (session 22, docs/gpu.md): the exact one-column matvec with every warp an equal
// share of the work. The production strip kernels (exec_matvec_strip.cu) give a warp whole units:
// W1 one group of 4 rows through all CB tiles, the CTA kernel RS rows of one tile; so a launch of
// G = ceil(M / 4) groups fills the device's resident warps in steps (W1 under one round leaves
// slots empty for the whole kernel; 2560x9728's 19 tiles over CTAs of 4 warps make 5 units per
// warp where 3.84 would do). Here the G x CB (group, tile) pairs, groups ascending and within a
// group tiles ascending, are cut into T equal ranges, one per warp (T = the launch's warps: every
// resident slot, or one pair each where there are fewer pairs), so no warp runs more than
// ceil(G CB / T) pairs. Each pair is W1's step (exec_strip_group: loads, decode, chain, tree).
// A group whose CB tiles all lie in the warp's range is summed in registers over cb ascending and
// stored, as W1 does (spec 15.4.5, 15.4.6). A group cut by the range's ends (at most two per warp)
// has its tile partials P(m, cb) stored in the scratch `part` (M4 x CB f32, row-major); the warp
// then adds its tile count to the group's counter (`count`, zero between launches), and the warp
// that brings it to CB sums the row's CB partials in cb order from +0.0, stores the output and
// sets the counter back to zero. The order of every add is spec 15.4.5's, so the result is the
// reference's bit for bit.
// Memory order: the partials' stores, then __threadfence and __syncwarp, then the counter's
// atomic; the last warp fences again and reads the partials from L2 (__ldcg: no stale L1 line).
// Programmatic dependent launch as the strip kernels: the first pair's rows are prefetched to L2
// before the wait; scratch and counters are touched after it only.
// Registers: 88 (W1 fits 80 with none to spare; here the run's state spills 20-24 bytes even at
// 88, 100+ at 80): 23 resident warps per SM against W1's 24.

// The first and the last group of the pairs [u0, u1) (u0 < u1), with the number of their tiles
// in the range; cut when that is not all CB (the same group twice where the range lies in one).
struct ExecEvenCuts {
    exec_u32 g0, n0, g1, n1;
};

__device__ __forceinline__ ExecEvenCuts exec_even_cuts(exec_u32 u0, exec_u32 u1, exec_u32 CB) {
    ExecEvenCuts c;
    c.g0 = u0 / CB;
    c.n0 = min(u1, (c.g0 + 1u) * CB) - u0;
    c.g1 = (u1 - 1u) / CB;
    c.n1 = u1 - max(u0, c.g1 * CB);
    return c;
}

template <int LATE>
__device__ __forceinline__ void exec_strip_even_body(EXEC_MATVEC_PARAMS(float), const exec_u8* __restrict__ flags,
                                                     float* __restrict__ part, exec_u32* __restrict__ count) {
    if (ncols == 0) return;  // no output
    const exec_u32 K16 = (K + 15u) & ~15u, CB = (K + 511u) >> 9, M4 = (M + 3u) & ~3u, G = M4 >> 2;
    const exec_u32 lane = threadIdx.x & 31u, l3 = lane & 3u, wpc = blockDim.x >> 5;
    const exec_u64 T = (exec_u64)gridDim.x * wpc, t = (exec_u64)blockIdx.x * wpc + (threadIdx.x >> 5);
    const exec_u64 U = (exec_u64)G * CB;  // < 2^32 (the host's plan checks)
    const exec_u32 u0 = (exec_u32)(t * U / T), u1 = (exec_u32)((t + 1u) * U / T);
    if (u0 < u1) exec_strip_prefetch(sm, codes, K, 4u * (u0 / CB), min(4u, M - 4u * (u0 / CB)), (u0 % CB) * 512u, 1024u, lane);
    if (!LATE) grid_dependency_release();
    grid_dependency_wait();
    // the first group: its row, first tile and whether the range holds all its tiles
    exec_u32 r0 = 4u * (u0 / CB), cb = u0 % CB;
    bool whole_group = cb == 0u && u0 + CB <= u1;  // warp-uniform
    exec_u32 b4 = 0u, b2[4] = {0u, 0u, 0u, 0u};
    if (u0 < u1) exec_strip_w1_bases(base, r0, l3, b4, b2);
    const exec_u8* ps = sm + (exec_u64)r0 * K16 + cb * 512u + lane * 16u;
    const exec_u8* pc = codes + (exec_u64)r0 * (K16 >> 1) + cb * 256u + lane * 8u;
    const exec_u8* pf = flags + (exec_u64)cb * M4 + r0;
    const exec_u32* pe = esc_start + (exec_u64)min(r0 + l3, M - 1u) * CB + cb;  // a row past M: as in W1
    float S = 0.0f;
    for (exec_u32 u = u0; u < u1; ++u) {
        const exec_u32 cs = cb * 512u, kc = cs + lane * 16u;
        const bool active = kc < K16;
        const bool whole = cs + 512u <= K;  // warp-uniform
        if (LATE && u + 1u == u1) grid_dependency_release();  // the warp's last pair
        float xv[16];
        exec_strip_x(xv, x, kc, whole, active);
        ExecStripGroup gr;
        exec_strip_load(gr, ps, pc, K16, r0 + 4u <= M && whole, M - r0, active);
        gr.fl = __ldg(reinterpret_cast<const exec_u32*>(pf));
        gr.eo = __ldg(pe);
        const float P = exec_strip_group<0>(gr, b4, b2, xv, esc, lane, whole, kc, K);
        S = __fadd_rn(S, P);
        if (!whole_group) {
            const exec_u32 m = r0 + exec_tree_index<4>(lane);
            if (exec_tree_writer<4>(lane) && m < M) part[(exec_u64)m * CB + cb] = P;
        }
        ++cb;
        ps += 512;
        pc += 256;
        pf += M4;
        ++pe;
        if (cb == CB && u + 1u < u1) {  // warp-uniform: on to the next group, from its tile 0
            if (whole_group) exec_strip_w1_store(S, r0, lane, M, bias, y, out_bf16);
            r0 += 4u;
            cb = 0u;
            S = 0.0f;
            whole_group = u + 1u + CB <= u1;
            ps += 4u * (exec_u64)K16 - (exec_u64)CB * 512u;
            pc += 2u * (exec_u64)K16 - (exec_u64)CB * 256u;
            pf += 4u - (exec_u64)CB * M4;
            pe = esc_start + (exec_u64)min(r0 + l3, M - 1u) * CB;
            exec_strip_w1_bases(base, r0, l3, b4, b2);
        }
    }
    if (whole_group && u0 < u1) exec_strip_w1_store(S, r0, lane, M, bias, y, out_bf16);  // the last group, whole
    if (u0 >= u1) return;
    const ExecEvenCuts c = exec_even_cuts(u0, u1, CB);
    const bool cut0 = c.n0 != CB, cut1 = c.g1 != c.g0 && c.n1 != CB;  // warp-uniform
    if (!cut0 && !cut1) return;
    __threadfence();  // this lane's partials, before the counter
    __syncwarp();
    bool last = false;
    exec_u32 mine = 0u;
    if ((lane == 0u && cut0) || (lane == 1u && cut1)) {
        mine = lane == 0u ? c.g0 : c.g1;
        const exec_u32 n = lane == 0u ? c.n0 : c.n1;
        last = atomicAdd(count + mine, n) + n == CB;
    }
    exec_u32 done = __ballot_sync(EXEC_FULL, last);
    if (done == 0u) return;
    __threadfence();  // the other warps' partials, after their counters
    while (done != 0u) {
        const exec_u32 src = (exec_u32)(__ffs((int)done) - 1);
        done &= done - 1u;
        const exec_u32 g = __shfl_sync(EXEC_FULL, mine, src);
        const exec_u32 m = 4u * g + lane;
        if (lane < 4u && m < M) {
            const float* p = part + (exec_u64)m * CB;
            float S = 0.0f;
#pragma unroll 8
            for (exec_u32 cb = 0; cb < CB; ++cb) S = __fadd_rn(S, __ldcg(p + cb));
            exec_output(S, m, 0u, 0u, bias, y, out_bf16);
        }
        if (lane == 0u) count[g] = 0u;  // every warp of the group has added; the next launch waits for this one
    }
}

// Same leading arguments as EXEC_STRIP_W1, then the tile flags, the partials' scratch (M4 x CB
// f32) and the counters (M4 / 4 words, zero).
#define EXEC_STRIP_EVEN(NAME, LATE)                                                                         \
    extern "C" __global__ void __maxnreg__(88)                                                               \
        NAME(EXEC_MATVEC_PARAMS(float), const exec_u8* __restrict__ flags, float* __restrict__ part,       \
             exec_u32* __restrict__ count) {                                                                 \
        exec_strip_even_body<LATE>(sm, codes, base, esc_start, esc, M, K, x, ldx, ncols, bias, y, ldy, out_bf16, flags, part, count); \
    }

EXEC_STRIP_EVEN(bench_exec_matvec_strip_even, 0)
EXEC_STRIP_EVEN(bench_exec_matvec_strip_even_release_end, 1)
