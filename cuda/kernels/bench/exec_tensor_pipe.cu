// Execution layout: batched matvec on tensor cores, bounded class (spec 19 on the execution
// layout, spec 20.15.3), built like the one-column exact kernel (exec_matvec_lean.cu) instead of
// the stream kernel (exec_tensor.cu): persistent CTAs of 16 warps, G warps per 16-row group
// splitting its tiles (partials added in warp order through shared memory, a named barrier per
// group, no CTA barrier), every warp streaming items of 16 rows x 128 columns through a D-stage
// cp.async pipeline from six running pointers (six 16-byte copies per lane and item), the tiles'
// flags (GpuExecMatrix::flags), escape offsets and the rows' bases arriving with the stage, an
// unpredicated path for full items, and the activations staged once per CTA in shared memory
// (the stream kernel loads them from global memory in every item).
// Fragments, the k permutation per thread and the escape order inside a tile (items, then threads
// t, then the thread's columns) are exec_tensor.cu's; lane (g, t) owns rows g and g + 8 and the
// columns 32 t .. 32 t + 31 of the item. Needs K16 % 32 == 0 (16-byte aligned code rows).
// Stage: sm [16 rows][8 units of 16 bytes], unit u of row r at r * 8 + (u ^ (r & 7)) (the reads
// of rows g and g + 8 are then free of bank conflicts); codes [16][64]; esc_start of the 16 rows'
// tile [16] u32; the tile flags [16]; the bases [16] (EXEC_TP_STAGE bytes).
// x in shared memory: column n's 16-byte unit U (8 activations) at n * XU + (U ^ exec_tp_swz(U, n)),
// XU = K16 / 8 rounded up to 8 units; the swizzle flips bits 0 and 1 inside each group of 8 units
// so that a quarter warp's B-fragment reads (lanes g = 0, 1, t = 0..3) hit 8 different units.
// Shared memory: [x: ncols * XU * 16][stages: W * D * EXEC_TP_STAGE][pbuf: (W / G) groups x 2
// parities x (G - 1) warps x NT * 4 x 32 f32].
#define EXEC_TP_CODES 2048
#define EXEC_TP_ESC 3072
#define EXEC_TP_FLAGS 3136
#define EXEC_TP_BASE 3152
#define EXEC_TP_STAGE 3168

__device__ __forceinline__ exec_u32 exec_tp_swz(exec_u32 U, exec_u32 n) { return (((U >> 3) & 1u) << 1) ^ (n & 1u); }

// The activations of one item for this thread from shared memory: column 8 nt + g, the 32
// columns from kc (zero past ncols or K16).
template <int NT>
__device__ __forceinline__ void exec_tp_load_x(const exec_u8* xs, exec_u32 XU, exec_u32 ncols, exec_u32 K16, exec_u32 kc,
                                               exec_u32 g, uint4 (&xv)[NT][4]) {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
        const exec_u32 n = nt * 8u + g;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const exec_u32 U = (kc >> 3) + (exec_u32)j;
            xv[nt][j] = make_uint4(0u, 0u, 0u, 0u);
            if (n < ncols && kc + 16u * (exec_u32)(j >> 1) < K16)
                xv[nt][j] = *reinterpret_cast<const uint4*>(xs + (n * XU + (U ^ exec_tp_swz(U, n))) * 16u);
        }
    }
}

template <int NT, int D>
__device__ __forceinline__ void exec_tp_body(EXEC_MATVEC_PARAMS(exec_u16), exec_u32 G, const exec_u8* __restrict__ flags) {
    constexpr exec_u32 R = 16;
    extern __shared__ __align__(16) exec_u8 exec_stage[];
    const exec_u32 K16 = (K + 15u) & ~15u;
    const exec_u32 CB = (K + 511u) >> 9;
    const exec_u32 M4 = (M + 3u) & ~3u;
    const exec_u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const exec_u32 g = lane >> 2, t = lane & 3u;
    const exec_u32 q = warp % G, grp = warp / G, ngrp = nwarps / G;
    const exec_u32 gi = blockIdx.x * ngrp + grp, GG = gridDim.x * ngrp;
    const exec_u32 nrg = (exec_u32)(((exec_u64)M + R - 1) / R);  // M <= 2^31 (spec 20.2)
    {
        // x into shared memory, once per CTA (ncols <= 16 columns of K16 BF16, ldx apart)
        const exec_u32 XU = ((K16 >> 3) + 7u) & ~7u, units = K16 >> 3;
        for (exec_u32 i = threadIdx.x; i < ncols * units; i += blockDim.x) {
            const exec_u32 n = i / units, U = i % units;
            *reinterpret_cast<uint4*>(exec_stage + (n * XU + (U ^ exec_tp_swz(U, n))) * 16u) =
                __ldg(reinterpret_cast<const uint4*>(x + (exec_u64)n * ldx) + U);
        }
        __syncthreads();
    }
    if (gi >= nrg) return;  // the whole group (after the only CTA barrier)
    const exec_u32 lo = (exec_u32)((exec_u64)q * CB / G), hi = (exec_u32)((exec_u64)(q + 1) * CB / G);
    // Items of one row group for this warp: 4 per tile, ceil(columns / 128) in the last tile.
    const exec_u32 last_subs = (K16 - (CB - 1u) * 512u + 127u) >> 7;
    const exec_u32 per_rg = (hi - lo) * 4u - (hi == CB ? 4u - last_subs : 0u);
    const exec_u32 nitems = ((nrg - gi + GG - 1) / GG) * per_rg;  // <= 2^28 (spec 3.2: M * K <= 2^40)
    const exec_u32 XU = ((K16 >> 3) + 7u) & ~7u;
    const exec_u32 xbytes = ncols * XU * 16u;
    const exec_u8* xs = exec_stage;
    const exec_u32 st = exec_sa(exec_stage + xbytes) + warp * (D * EXEC_TP_STAGE);
    const exec_u8* stg = exec_stage + xbytes + warp * (D * EXEC_TP_STAGE);
    float* pbuf = reinterpret_cast<float*>(exec_stage + xbytes + nwarps * D * EXEC_TP_STAGE) + grp * 2 * (G - 1) * (NT * 4 * 32);

    // Issue side: lane L copies sm unit (L & 7) of rows (L >> 3) + 4 i and code unit (L & 3) of
    // rows (L >> 2) + 8 i; lanes 0..15 the rows' escape offsets, 16..19 the flag words and 20..23
    // the base words (with the first item of a tile, of a row group).
    const exec_u32 su = lane & 7u, sr = lane >> 3, cu = lane & 3u, cr = lane >> 2;
    exec_u32 sdst[4], cdst[2];
#pragma unroll
    for (exec_u32 i = 0; i < 4; ++i) {
        const exec_u32 r = sr + 4u * i;
        sdst[i] = r * 128u + ((su ^ (r & 7u)) << 4);
    }
#pragma unroll
    for (exec_u32 i = 0; i < 2; ++i) cdst[i] = EXEC_TP_CODES + (cr + 8u * i) * 64u + cu * 16u;
    const exec_u64 K16c = K16 >> 1;
    exec_u32 irg = gi, issued = 0, icb = lo, isub = 0, ivalid = 0, istage = 0;
    const exec_u8* ps[4];
    const exec_u8* pc[2];
    auto rowgroup = [&]() {
        const exec_u32 row0 = irg * R;
        ivalid = row0 < M ? min(R, M - row0) : 0u;
#pragma unroll
        for (exec_u32 i = 0; i < 4; ++i) ps[i] = sm + (exec_u64)(row0 + sr + 4u * i) * K16 + lo * 512u + su * 16u;
#pragma unroll
        for (exec_u32 i = 0; i < 2; ++i) pc[i] = codes + (exec_u64)(row0 + cr + 8u * i) * K16c + lo * 256u + cu * 16u;
    };
    rowgroup();
    auto issue = [&]() {
        if (issued < nitems) {
            const exec_u32 sd = st + istage * EXEC_TP_STAGE;
            const exec_u32 kw = K16 - icb * 512u - isub * 128u;  // columns of this item in K16 (a multiple of 32)
            if (ivalid == R && kw >= 128u) {  // warp-uniform: the whole item, no predicates
#pragma unroll
                for (exec_u32 i = 0; i < 4; ++i) exec_cp16(sd + sdst[i], ps[i]);
#pragma unroll
                for (exec_u32 i = 0; i < 2; ++i) exec_cp16(sd + cdst[i], pc[i]);
            } else {
                const bool ls = su * 16u < kw, lc = cu * 32u < kw;
#pragma unroll
                for (exec_u32 i = 0; i < 4; ++i)
                    if (sr + 4u * i < ivalid && ls) exec_cp16(sd + sdst[i], ps[i]);
#pragma unroll
                for (exec_u32 i = 0; i < 2; ++i)
                    if (cr + 8u * i < ivalid && lc) exec_cp16(sd + cdst[i], pc[i]);
            }
            if (isub == 0u) {
                const exec_u32 row0 = irg * R;
                if (lane < 16u) {
                    if (lane < ivalid) exec_cp4(sd + EXEC_TP_ESC + lane * 4u, esc_start + (exec_u64)(row0 + lane) * CB + icb);
                } else if (lane < 20u) {
                    const exec_u32 wd = (lane - 16u) * 4u;  // flags: [cb][M4], M4 % 4 == 0: aligned words
                    if (row0 + wd < M4) exec_cp4(sd + EXEC_TP_FLAGS + wd, flags + (exec_u64)icb * M4 + row0 + wd);
                } else if (lane < 24u && icb == lo) {
                    const exec_u32 wd = (lane - 20u) * 4u;  // base is allocated rounded up to 4 bytes
                    if (row0 + wd < M) exec_cp4(sd + EXEC_TP_BASE + wd, base + row0 + wd);
                }
            }
#pragma unroll
            for (exec_u32 i = 0; i < 4; ++i) ps[i] += 128;
#pragma unroll
            for (exec_u32 i = 0; i < 2; ++i) pc[i] += 64;
            if (++isub == 4u || kw <= 128u) {
                isub = 0;
                if (++icb == hi) {
                    icb = lo;
                    irg += GG;
                    rowgroup();
                }
            }
        }
        exec_stage_commit<D>(issued, istage);
    };
#pragma unroll
    for (int d = 0; d < D - 1; ++d) issue();

    exec_u32 rg = gi, cb = lo, sub = 0, par = 0, cstage = 0, xi = 0;
    exec_u32 rb[2] = {1u, 1u}, fl[2] = {0u, 0u}, tesc[2] = {0u, 0u}, rel[2] = {0u, 0u};
    bool anyf = false;
    float acc[NT][4];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[nt][i] = 0.0f;
    for (exec_u32 j = 0; j < nitems; ++j) {
        issue();
        uint4 xv[NT][4];
        exec_tp_load_x<NT>(xs, XU, ncols, K16, lo * 512u + xi * 128u + 32u * t, g, xv);
        xi = xi + 1u == per_rg ? 0u : xi + 1u;
        const exec_u32 valid = min(R, M - rg * R);
        const exec_u32 kw = K16 - cb * 512u - sub * 128u;
        const bool full = valid == R && kw >= 128u;  // warp-uniform
        exec_cp_wait<D - 1>();
        __syncwarp();  // the stage holds every lane's copies
        const exec_u8* sd = stg + cstage * EXEC_TP_STAGE;
        cstage = cstage + 1 == (exec_u32)D ? 0u : cstage + 1;
        if (sub == 0u) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const exec_u32 r = g + 8u * h;
                const bool rv = r < valid;
                if (cb == lo) rb[h] = rv ? (exec_u32)sd[EXEC_TP_BASE + r] : 1u;
                fl[h] = rv ? (exec_u32)sd[EXEC_TP_FLAGS + r] : 0u;
                tesc[h] = fl[h] ? *reinterpret_cast<const exec_u32*>(sd + EXEC_TP_ESC + r * 4u) : 0u;
                rel[h] = 0u;
            }
            anyf = __any_sync(EXEC_FULL, (fl[0] | fl[1]) != 0u);
        }
        uint4 sv[2][2];
        uint2 cv[2][2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const exec_u32 r = g + 8u * h;
            uint4 c4 = make_uint4(0x11111111u, 0x11111111u, 0x11111111u, 0x11111111u);  // no weight: code 1, sm 0, x 0
            if (full || (r < valid && 32u * t < kw)) c4 = *reinterpret_cast<const uint4*>(sd + EXEC_TP_CODES + r * 64u + t * 16u);
#pragma unroll
            for (int jj = 0; jj < 2; ++jj) {
                sv[h][jj] = make_uint4(0u, 0u, 0u, 0u);
                if (full || (r < valid && 32u * t + 16u * jj < kw))
                    sv[h][jj] = *reinterpret_cast<const uint4*>(sd + r * 128u + (((2u * t + jj) ^ g) << 4));
            }
            cv[h][0] = make_uint2(c4.x, c4.y);
            cv[h][1] = make_uint2(c4.z, c4.w);
            // K16 - kw < 32 t + 32 <= K16: the second chunk may lie past K16 (K16 % 32 == 0 keeps
            // it whole or absent only when kw is a multiple of 32, which it is)
        }
        // escape offsets: only in a tile whose flags name a code 0 or 15 in one of the 16 rows
        exec_u32 eoff[2] = {0u, 0u}, n0[2] = {0u, 0u};  // E <= 2^32 - 1 (spec 20.2)
        if (anyf) {  // warp-uniform
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                n0[h] = exec_count15(cv[h][0].x) + exec_count15(cv[h][0].y);
                const exec_u32 n = n0[h] + exec_count15(cv[h][1].x) + exec_count15(cv[h][1].y);
                eoff[h] = exec_tc_esc_offset(n, t, tesc[h], rel[h]);
            }
        }
#pragma unroll
        for (int jj = 0; jj < 2; ++jj) {
            exec_u32 w[2][8];
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                exec_pairs16_fast(cv[h][jj], sv[h][jj], exec_b2(rb[h]), w[h]);
                if (fl[h] && !exec_plain16(cv[h][jj]))
                    exec_patch_pairs(cv[h][jj], sv[h][jj], rb[h], esc, (exec_u64)eoff[h] + (jj ? n0[h] : 0u), w[h]);
            }
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) exec_tc_mma16(acc[nt], w[0], w[1], xv[nt][2 * jj], xv[nt][2 * jj + 1]);
        }
        if (++sub == 4u || kw <= 128u) {
            sub = 0;
            if (++cb == hi) {
                // The row group's outputs: G == 1 straight from the registers; otherwise warps
                // q > 0 leave their partial sums in pbuf and warp q = 0 adds them in warp order.
                bool mine = true;
                if (G > 1) {
                    float* pb = pbuf + par * (G - 1) * (NT * 4 * 32);
                    if (q > 0)
#pragma unroll
                        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                            for (int i = 0; i < 4; ++i) pb[((q - 1u) * NT * 4 + nt * 4 + i) * 32u + lane] = acc[nt][i];
                    asm volatile("bar.sync %0, %1;" ::"r"(1u + grp), "r"(32u * G) : "memory");
                    mine = q == 0u;
                    if (mine)
                        for (exec_u32 qq = 1; qq < G; ++qq)
#pragma unroll
                            for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                                for (int i = 0; i < 4; ++i)
                                    acc[nt][i] = __fadd_rn(acc[nt][i], pb[((qq - 1u) * NT * 4 + nt * 4 + i) * 32u + lane]);
                    par ^= 1u;
                }
                if (mine) {
#pragma unroll
                    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                        for (int i = 0; i < 4; ++i) {
                            const exec_u32 m = rg * R + g + 8u * (exec_u32)(i >> 1);
                            const exec_u32 n = 8u * nt + 2u * t + (exec_u32)(i & 1);
                            if (m < M && n < ncols) {
                                float v = acc[nt][i];
                                if (bias) v = __fadd_rn(v, bias[m]);
                                if (out_bf16)
                                    reinterpret_cast<exec_u16*>(y)[n * ldy + m] = exec_bf16_rne(v);
                                else
                                    reinterpret_cast<float*>(y)[n * ldy + m] = v;
                            }
                        }
                }
#pragma unroll
                for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                    for (int i = 0; i < 4; ++i) acc[nt][i] = 0.0f;
                cb = lo;
                rg += GG;
            }
        }
    }
    exec_cp_wait<0>();
}

// Same arguments as EXEC_TC (exec_tensor.cu), then the warps per row group and the tile flags.
#define EXEC_TP(NAME, NT, D)                                                                                   \
    extern "C" __global__ void __launch_bounds__(512, 1)                                                       \
        NAME(EXEC_MATVEC_PARAMS(exec_u16), exec_u32 G, const exec_u8* __restrict__ flags) {                   \
        exec_tp_body<NT, D>(sm, codes, base, esc_start, esc, M, K, x, ldx, ncols, bias, y, ldy, out_bf16, G, flags); \
    }

EXEC_TP(bench_exec_tensor_pipe_n1_d4, 1, 4)
EXEC_TP(bench_exec_tensor_pipe_n1_d3, 1, 3)
EXEC_TP(bench_exec_tensor_pipe_n2_d3, 2, 3)
EXEC_TP(bench_exec_tensor_pipe_n2_d2, 2, 2)
