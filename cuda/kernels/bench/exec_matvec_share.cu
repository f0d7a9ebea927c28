// Bench (session 33): the exact one-column strip kernel on an even share of all groups' tiles
// (spec 20.15: bit-identical to W1 and to the reference). W1 (exec_matvec_strip.cu) gives each
// one-warp CTA a group of 4 rows through all CB tiles, so under one round of resident warps
// (W1's half-round band: 6400x5120, 1,600 groups of 10 tiles on 3,168 warp slots) each warp runs
// CB tiles in sequence while the device holds twice the warps. Here the (group, tile) units of all
// groups stand in one sequence, group after group, tiles ascending, and warp c takes units c x n ..
// c x n + n - 1 (n from exec/variant.rs: the fewest that fit one round; 6400x5120: 6 tiles, 2,667
// warps). A group wholly inside a warp's units is added as W1 adds it (each tile partial to the
// row's sum as it comes, from +0.0: spec 15.4.5). A group shared by several warps: each writes
// its tiles' partials P(m, cb) (spec 15.4.4, the same tree as W1's) to tp[m][cb], fences and
// counts itself in cnt[group]; the last to count adds the row's CB partials over cb ascending from
// +0.0, exactly W1's sums in W1's order, then the bias (spec 15.4.6), and sets the counter back to
// 0 for the next launch. Activations f32 only (BF16 ones are widened first, exec/run.rs).
__device__ __noinline__ void exec_strip_share_fold(const float* __restrict__ tp, exec_u32* __restrict__ cnt, exec_u32 q, exec_u32 r0,
                                                   exec_u32 CB, exec_u32 chunk, exec_u32 lane, exec_u32 M, const float* __restrict__ bias,
                                                   void* __restrict__ y, int out_bf16) {
    const exec_u32 first = q * CB / chunk, last = (q * CB + CB - 1u) / chunk;
    __threadfence();  // this warp's partials visible on the device before it counts itself
    __syncwarp();
    exec_u32 ticket = 0;
    if (lane == 0) ticket = atomicAdd(cnt + q, 1u);
    ticket = __shfl_sync(EXEC_FULL, ticket, 0);
    if (ticket != last - first) return;  // warp-uniform: another warp of the group comes later
    if (lane == 0) cnt[q] = 0u;          // every warp of the group has counted itself
    __threadfence();
    if (lane < 4u && r0 + lane < M) {
        float s = 0.0f;
        for (exec_u32 cb = 0; cb < CB; ++cb) s = __fadd_rn(s, __ldcg(tp + (exec_u64)(r0 + lane) * CB + cb));
        exec_output(s, r0 + lane, 0u, 0u, bias, y, out_bf16);
    }
}

extern "C" __global__ void __maxnreg__(80)
    bench_exec_matvec_strip_share(EXEC_MATVEC_PARAMS(float), const exec_u8* __restrict__ flags, exec_u32 chunk, float* __restrict__ tp,
                                  exec_u32* __restrict__ cnt) {
    if (ncols == 0) return;  // no output
    const exec_u32 K16 = (K + 15u) & ~15u, CB = (K + 511u) >> 9, M4 = (M + 3u) & ~3u;
    const exec_u32 lane = threadIdx.x & 31u, l3 = lane & 3u;
    const exec_u32 units = ((M + 3u) >> 2) * CB, u0 = blockIdx.x * chunk, u1 = min(units, u0 + chunk);
    {  // its first tile, before the wait (the matrix's own fields)
        const exec_u32 r0 = u0 / CB * 4u;
        exec_strip_prefetch(sm, codes, K, r0, min(4u, M - r0), u0 % CB * 512u, 512u, lane);
    }
    grid_dependency_release();
    grid_dependency_wait();
    for (exec_u32 u = u0; u < u1;) {
        const exec_u32 q = u / CB, t0 = u - q * CB, t1 = min(CB, t0 + (u1 - u)), r0 = q * 4u;
        const bool rows = r0 + 4u <= M, alone = t0 == 0 && t1 == CB;  // warp-uniform
        exec_u32 b4, b2[4];
        exec_strip_w1_bases(base, r0, l3, b4, b2);
        const exec_u8* ps = sm + (exec_u64)r0 * K16 + lane * 16u + t0 * 512u;
        const exec_u8* pc = codes + (exec_u64)r0 * (K16 >> 1) + lane * 8u + t0 * 256u;
        const exec_u8* pf = flags + (exec_u64)t0 * M4 + r0;
        const exec_u32* pe = esc_start + (exec_u64)min(r0 + l3, M - 1u) * CB + t0;  // as in W1
        float S = 0.0f;
        // the writer lanes' partial P(m, cb) at pt + cb (a group shared with other warps)
        float* pt = tp + (exec_u64)(r0 + exec_tree_index<4>(lane)) * CB;
        const bool writes = !alone && exec_tree_writer<4>(lane) && r0 + exec_tree_index<4>(lane) < M;
        for (exec_u32 c0 = t0 * 512u; c0 < t1 * 512u; c0 += 512u) {  // c0: the tile's first column, as W1
            const exec_u32 kc = c0 + lane * 16u, c1 = c0 + 512u;
            const bool active = kc < K16;
            const bool whole = c1 <= K;  // warp-uniform
            float xv[16];
            exec_strip_x(xv, x, kc, whole, active);
            ExecStripGroup g;
            exec_strip_w1_tile(g, ps, pc, pf, pe, K16, rows && whole, M - r0, active);
            const float P = exec_strip_group<0>(g, b4, b2, xv, esc, lane, whole, kc, K);
            S = __fadd_rn(S, P);
            if (writes) pt[c0 >> 9] = P;
            ps += 512;
            pc += 256;
            pf += M4;
            ++pe;
        }
        if (alone) exec_strip_w1_store(S, r0, lane, M, bias, y, out_bf16);
        else exec_strip_share_fold(tp, cnt, q, r0, CB, chunk, lane, M, bias, y, out_bf16);
        u += t1 - t0;
    }
}
