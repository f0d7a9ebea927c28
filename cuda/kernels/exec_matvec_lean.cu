// Execution layout: the exact one-column streaming matvec (spec 20.15, bit-identical to
// exec_matvec.cu and the reference). Items of 4 rows x one 512-column tile; every warp streams its
// items through a 2-4 stage cp.async pipeline; the lane mapping, per-row lane chains, halving tree
// and ascending tile partials are those of spec 15.4.3-15.4.5 (tile = column block).
// - 32-bit item and row-group counters (spec 3.2: M * K <= 2^40, so at most 2^29 items and row
//   groups < 2^30);
// - six 16-byte cp.async per lane and item (4 sm rows; the 4 code rows as 2 x 512 contiguous
//   bytes of two rows each); needs K16 % 32 == 0 (16-byte aligned code rows; the host takes
//   exec_matvec.cu otherwise);
// - x in shared memory transposed per tile (float4 qq of lane L at (qq * 32 + L) * 16 bytes), so a
//   warp's 16-byte loads are 512 contiguous bytes: no bank conflicts;
// - a full item (4 valid rows, no column past K in the tile) loads its stage without predicates or
//   masks; only the others take the masked loads;
// - every row is decoded by the fast path; the derived tile flags (GpuExecMatrix::flags, computed
//   at load by exec_tile_flags: not 0 when a tile holds a code 0 or 15) arrive with the stage, the 4
//   rows' bytes in one word, and only a flagged row takes the escape prefix and the per-pair patch
//   (exec_patch_pairs). Testing the codes and voting per row instead cost ~8 ALU instructions a row
//   on the pipe the decode fills; the flags made the kernel 4-5% faster on the large shapes
//   (docs/gpu-history.md, session 7).
// PROBE (bench only, kernels/bench/exec_matvec_variants.cu): 1 = the stage words as weights (no
// decode), 2 = no decode and no fma; production instantiates PROBE = 0 only.
// Stage: [4 sm rows x 512][4 code rows x 256][4 escape offsets][base word][flag word] (EXEC3_STAGE).
// Shared memory: [x: CB * 512 f32][stages: W * D * EXEC3_STAGE][pbuf: (W / G) * 2 * 4 * CB f32].

template <int D, int PROBE>
__device__ __forceinline__ void exec_lean_body(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes,
                                               const exec_u8* __restrict__ base, const exec_u32* __restrict__ esc_start,
                                               const exec_u8* __restrict__ esc, exec_u32 M, exec_u32 K,
                                               const float* __restrict__ x, exec_u32 ncols, const float* __restrict__ bias,
                                               void* __restrict__ y, int out_bf16, exec_u32 G,
                                                const exec_u8* __restrict__ flags) {
    constexpr exec_u32 R = EXEC3_R;
    const exec_u32 M4 = (M + 3u) & ~3u;
    extern __shared__ __align__(16) exec_u8 exec_stage[];
    const exec_u32 K16 = (K + 15u) & ~15u;
    const exec_u32 CB = (K + 511u) >> 9;
    const exec_u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    float* xs = reinterpret_cast<float*>(exec_stage);
    const exec_u32 xbytes = CB * 2048u;
    for (exec_u32 k = threadIdx.x * 4u; k < K16; k += blockDim.x * 4u) {
        float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
        if (ncols > 0) v = __ldg(reinterpret_cast<const float4*>(x + k));
        *reinterpret_cast<float4*>(xs + (k & ~511u) + ((k >> 2) & 3u) * 128u + ((k >> 4) & 31u) * 4u) = v;
    }
    __syncthreads();
    const exec_u32 q = warp % G, grp = warp / G, ngrp = nwarps / G;
    const exec_u32 gi = blockIdx.x * ngrp + grp, GG = gridDim.x * ngrp;
    const exec_u32 nrg = (M + R - 1) / R;
    if (gi >= nrg) return;  // the whole group (after the only CTA barrier)
    const exec_u32 lo = (exec_u32)((exec_u64)q * CB / G), hi = (exec_u32)((exec_u64)(q + 1) * CB / G);
    const exec_u32 nitems = ((nrg - gi + GG - 1) / GG) * (hi - lo);
    const exec_u32 st = exec_sa(exec_stage + xbytes) + warp * (D * EXEC3_STAGE);
    const exec_u8* stg = exec_stage + xbytes + warp * (D * EXEC3_STAGE);
    float* pbuf = reinterpret_cast<float*>(exec_stage + xbytes + nwarps * D * EXEC3_STAGE) + grp * 2 * R * CB;

    // Issue side: lane L copies 16 bytes of each sm row at L * 16, and of the code rows 2 i +
    // (L >> 4) at (L & 15) * 16 (stage layout as exec_mv3_body: code row r at 4 * 512 + r * 256).
    const exec_u64 K16c = K16 >> 1;
    const exec_u32 hl = lane >> 4, cl = (lane & 15u) * 16u;
    // Six running source pointers (4 sm rows, 2 code-row pairs), advanced by one tile per item.
    exec_u32 irg = gi, issued = 0, icb = lo, ivalid = 0, istage = 0;
    const exec_u8* ps[R];
    const exec_u8* pc[R / 2];
    const exec_u32* pes = nullptr;
    auto rowgroup = [&]() {
        const exec_u32 row0 = irg * R;
        ivalid = row0 < M ? min(R, M - row0) : 0u;
#pragma unroll
        for (exec_u32 r = 0; r < R; ++r) ps[r] = sm + (exec_u64)(row0 + r) * K16 + lo * 512u + lane * 16u;
#pragma unroll
        for (exec_u32 i = 0; i < R / 2; ++i) pc[i] = codes + (exec_u64)(row0 + 2u * i + hl) * K16c + lo * 256u + cl;
        pes = esc_start + (exec_u64)(row0 + (lane & 3u)) * CB + lo;
    };
    rowgroup();
    auto issue = [&]() {
        if (issued < nitems) {
            const exec_u32 sd = st + istage * EXEC3_STAGE;
            const exec_u32 kw = K16 - icb * 512u;  // columns of this tile in K16 (a multiple of 32)
            if (ivalid == R && kw >= 512u) {  // warp-uniform: the whole item, no predicates
#pragma unroll
                for (exec_u32 r = 0; r < R; ++r) exec_cp16(sd + r * 512u + lane * 16u, ps[r]);
#pragma unroll
                for (exec_u32 i = 0; i < R / 2; ++i) exec_cp16(sd + R * 512u + i * 512u + hl * 256u + cl, pc[i]);
            } else {
                const bool ls = lane * 16u < kw, lc = cl * 2u < kw;
#pragma unroll
                for (exec_u32 r = 0; r < R; ++r)
                    if (r < ivalid && ls) exec_cp16(sd + r * 512u + lane * 16u, ps[r]);
#pragma unroll
                for (exec_u32 i = 0; i < R / 2; ++i)
                    if (2u * i + hl < ivalid && lc) exec_cp16(sd + R * 512u + i * 512u + hl * 256u + cl, pc[i]);
            }
            if (lane < ivalid) exec_cp4(sd + R * 768u + lane * 4u, pes);
            if (lane == 31u && icb == lo) exec_cp4(sd + R * 768u + 16u, base + (exec_u64)irg * R);  // aligned word
            if (lane == 30u && ivalid > 0u) exec_cp4(sd + R * 768u + 20u, flags + (exec_u64)icb * M4 + irg * R);  // the 4 rows' flags
#pragma unroll
            for (exec_u32 r = 0; r < R; ++r) ps[r] += 512;
#pragma unroll
            for (exec_u32 i = 0; i < R / 2; ++i) pc[i] += 256;
            pes += 1;
            if (++icb == hi) {
                icb = lo;
                irg += GG;
                rowgroup();
            }
        }
        exec_stage_commit<D>(issued, istage);
    };
#pragma unroll
    for (int d = 0; d < D - 1; ++d) issue();

    exec_u32 rg = gi, cb = lo, par = 0, cstage = 0, b4 = 0;
    float S = 0.0f;
    const float* xk = xs + lo * 512u + lane * 4u;
    for (exec_u32 j = 0; j < nitems; ++j) {
        // Lanes read stage bytes other lanes copied (the code rows, the tail words): every lane
        // is done with the stage this issue refills, and after the wait, every lane's copies of
        // the current stage have landed (cp.async.wait_group covers only the calling thread's).
        __syncwarp();
        issue();
        const exec_u32 valid = min(R, M - rg * R);
        const bool full = valid == R && cb * 512u + 512u <= K;  // warp-uniform
        const bool active = cb * 512u + lane * 16u < K16;
        float xv[16];
#pragma unroll
        for (int qq = 0; qq < 4; ++qq) {
            float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
            if (full || active) v = *reinterpret_cast<const float4*>(xk + qq * 128);
            xv[4 * qq] = v.x;
            xv[4 * qq + 1] = v.y;
            xv[4 * qq + 2] = v.z;
            xv[4 * qq + 3] = v.w;
        }
        exec_cp_wait<D - 1>();
        __syncwarp();
        const exec_u8* sd = stg + cstage * EXEC3_STAGE;
        cstage = cstage + 1 == (exec_u32)D ? 0u : cstage + 1;
        uint4 s[R];
        uint2 c[R];
        if (full) {
#pragma unroll
            for (exec_u32 r = 0; r < R; ++r) {
                s[r] = *reinterpret_cast<const uint4*>(sd + r * 512u + lane * 16u);
                c[r] = *reinterpret_cast<const uint2*>(sd + R * 512u + r * 256u + lane * 8u);
            }
        } else {
            const exec_u32 k0 = cb * 512u + lane * 16u;
#pragma unroll
            for (exec_u32 r = 0; r < R; ++r) {
                s[r] = make_uint4(0u, 0u, 0u, 0u);
                c[r] = make_uint2(0x11111111u, 0x11111111u);
                if (active && r < valid) {
                    s[r] = *reinterpret_cast<const uint4*>(sd + r * 512u + lane * 16u);
                    c[r] = exec_mask_pad(*reinterpret_cast<const uint2*>(sd + R * 512u + r * 256u + lane * 8u), k0, K);
                }
            }
        }
        if (cb == lo) b4 = __shfl_sync(EXEC_FULL, lane == 31u ? *reinterpret_cast<const exec_u32*>(sd + R * 768u + 16u) : 0u, 31);
        const exec_u32 fl = *reinterpret_cast<const exec_u32*>(sd + R * 768u + 20u);  // same word in every lane
        float acc[R];
#pragma unroll
        for (exec_u32 r = 0; r < R; ++r) {
            const exec_u32 rb = (b4 >> (8u * r)) & 0xffu;
            exec_u32 w[8];
            if (PROBE != 0) {
                // Ceiling probes: the stage words themselves as the row's 8 BF16 pairs (no decode).
                const exec_u32 raw[8] = {s[r].x, s[r].y, s[r].z, s[r].w, c[r].x, c[r].y, s[r].x ^ c[r].y, s[r].w ^ c[r].x};
#pragma unroll
                for (int p = 0; p < 8; ++p) w[p] = raw[p];
            } else {
                exec_pairs16_fast(c[r], s[r], exec_b2(rb), w);
                if ((fl >> (8u * r)) & 0xffu) {  // warp-uniform: the tile holds a code 0 or 15
                    const exec_u32 n15 = exec_count15(c[r].x) + exec_count15(c[r].y);
                    const exec_u32 before = exec_warp_excl(n15, lane);
                    const exec_u32 t0 = *reinterpret_cast<const exec_u32*>(sd + R * 768u + r * 4u);
                    if (!exec_plain16(c[r])) exec_patch_pairs(c[r], s[r], rb, esc, (exec_u64)t0 + before, w);
                }
            }
            float a = 0.0f;
            if (PROBE == 2) {
                // Probe 2, no fma either: a few XORs keep the loads alive.
                a = __uint_as_float(w[0] ^ w[1] ^ w[2] ^ w[3] ^ w[4] ^ w[5]);
            } else {
#pragma unroll
                for (int p = 0; p < 8; ++p) {
                    a = __fmaf_rn(exec_lo(w[p]), xv[2 * p], a);
                    a = __fmaf_rn(exec_hi(w[p]), xv[2 * p + 1], a);
                }
            }
            acc[r] = a;
        }
        const float P = exec_tree<R>(acc, lane);
        const exec_u32 idx = exec_tree_index<R>(lane);
        if (G == 1) {
            S = __fadd_rn(S, P);
        } else if (exec_tree_writer<R>(lane)) {
            pbuf[(par * R + idx) * CB + cb] = P;
        }
        xk += 512;
        if (++cb == hi) {
            if (G == 1) {
                const exec_u32 m = rg * R + idx;
                if (exec_tree_writer<R>(lane) && m < M && ncols > 0) {
                    float t = S;
                    exec_output(t, m, 0u, 0u, bias, y, out_bf16);
                }
                S = 0.0f;
            } else {
                asm volatile("bar.sync %0, %1;" ::"r"(1u + grp), "r"(32u * G) : "memory");
                if (q == 0 && lane < R) {
                    const exec_u32 m = rg * R + lane;
                    if (m < M && ncols > 0) {
                        float t = 0.0f;
                        const float* pp = pbuf + (par * R + lane) * CB;
                        for (exec_u32 c2 = 0; c2 < CB; ++c2) t = __fadd_rn(t, pp[c2]);
                        exec_output(t, m, 0u, 0u, bias, y, out_bf16);
                    }
                }
                par ^= 1u;
            }
            cb = lo;
            rg += GG;
            xk -= (hi - lo) * 512u;
        }
    }
    exec_cp_wait<0>();
}

// Same arguments as EXEC_MV3 (ldx, ldy unused: one column, x and y contiguous), then the tile flags.
#define EXEC_LEAN(NAME, D, PROBE)                                                                            \
    extern "C" __global__ void __launch_bounds__(512, 1)                                                     \
        NAME(EXEC_MATVEC_PARAMS(float), exec_u32 G, const exec_u8* __restrict__ flags) {                 \
        exec_lean_body<D, PROBE>(sm, codes, base, esc_start, esc, M, K, x, ncols, bias, y, out_bf16, G, flags);  \
    }

EXEC_LEAN(exec_matvec_lean_d4, 4, 0)
EXEC_LEAN(exec_matvec_lean_d3, 3, 0)
EXEC_LEAN(exec_matvec_lean_d2, 2, 0)
