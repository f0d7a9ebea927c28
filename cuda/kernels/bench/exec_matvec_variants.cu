// Bench-only ceiling probes of the one-column exact matvec (docs/gpu.md, session 12; session 7 in
// docs/gpu-history.md): not exact, never compared, timed by `nwc-gpu-bench --exec-variants`.
// - bench_exec_probe_nodecode_d4 / _loads_d4: the lean kernel (exec_matvec_lean.cu) with the
//   stage words used as weights (no decode) / with neither decode nor fma, so the rest (copies, x,
//   stage reads, tree, loop) is timed alone; bench_exec_probe_strip_nodecode: the production strip
//   kernel (exec_matvec_strip.cu) with the loaded words as weights;
// - bench_exec_probe_stream*: the copy pipeline alone, for three item shapes.

EXEC_LEAN(bench_exec_probe_nodecode_d4, 4, 1)
EXEC_LEAN(bench_exec_probe_loads_d4, 4, 2)
// The strip kernel (exec_matvec_strip.cu) with the loaded words as weights: no decode, no escapes.
EXEC_STRIP(bench_exec_probe_strip_nodecode, 1)
EXEC_STRIP_W1(bench_exec_probe_strip_w1_nodecode, 1)
// The W1 strip kernel with the high halves' f32 on the FMA pipe (exact; PROBE 2 in
// exec_matvec_strip.cu).
EXEC_STRIP_W1(bench_exec_matvec_strip_w1_fmasplit, 2)
// The W1 strip kernel with the flagged rows' escape prefix by votes (exact; PROBE 3).
EXEC_STRIP_W1(bench_exec_matvec_strip_w1_vote, 3)
// The W1 strip kernel with a flagged row-tile's only escape loaded with the group (exact; PROBE 4).
EXEC_STRIP_W1(bench_exec_matvec_strip_w1_esc1, 4)

// Streaming probes (not a matvec; never compared): how fast the lean kernel's copy pipeline reads
// the sm and code planes when an item (4 pieces of one tile-row each: 512 sm bytes and 256 code
// bytes) is RR rows x TT consecutive tiles. Same persistent grid, 16 warps and 4 stages of cp.async
// as lean, no x, no decode: each warp XORs its stage words and writes one word per warp to y.
template <int RR, int TT>
__device__ __forceinline__ void exec_probe_stream_body(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes,
                                                       exec_u32 M, exec_u32 K, void* __restrict__ y) {
    constexpr exec_u32 D = 4, STAGE = 3072;
    extern __shared__ __align__(16) exec_u8 exec_stage[];
    const exec_u32 K16 = (K + 15u) & ~15u, CB = (K + 511u) >> 9;
    const exec_u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const exec_u32 gw = blockIdx.x * nwarps + warp, GW = gridDim.x * nwarps;
    const exec_u32 nrg = (M + RR - 1) / RR, ntg = (CB + TT - 1) / TT;
    const exec_u32 nitems = gw < nrg ? ((nrg - gw + GW - 1) / GW) * ntg : 0u;
    const exec_u32 st = exec_sa(exec_stage) + warp * (D * STAGE);
    const exec_u8* stg = exec_stage + warp * (D * STAGE);
    exec_u32 irg = gw, itg = 0, issued = 0;
    auto issue = [&]() {
        if (issued < nitems) {
            const exec_u32 sd = st + (issued % D) * STAGE;
#pragma unroll
            for (int p = 0; p < 4; ++p) {
                const exec_u32 row = irg * RR + p / TT, tile = itg * TT + p % TT;
                if (row < M && tile < CB) {
                    if (tile * 512u + lane * 16u < K16) exec_cp16(sd + p * 512u + lane * 16u, sm + (exec_u64)row * K16 + tile * 512u + lane * 16u);
                    if (tile * 512u + lane * 16u < K16)
                        exec_cp8(sd + 2048u + p * 256u + lane * 8u, codes + (exec_u64)row * (K16 >> 1) + tile * 256u + lane * 8u);
                }
            }
            if (++itg == ntg) {
                itg = 0;
                irg += GW;
            }
        }
        ++issued;
        exec_cp_commit();
    };
#pragma unroll
    for (int d = 0; d < (int)D - 1; ++d) issue();
    exec_u32 acc = 0;
    for (exec_u32 j = 0; j < nitems; ++j) {
        issue();
        exec_cp_wait<D - 1>();
        const exec_u8* sd = stg + (j % D) * STAGE;
#pragma unroll
        for (int p = 0; p < 4; ++p) {
            const uint4 s = *reinterpret_cast<const uint4*>(sd + p * 512u + lane * 16u);
            const uint2 c = *reinterpret_cast<const uint2*>(sd + 2048u + p * 256u + lane * 8u);
            acc ^= s.x ^ s.y ^ s.z ^ s.w ^ c.x ^ c.y;
        }
    }
    exec_cp_wait<0>();
    acc = __reduce_xor_sync(EXEC_FULL, acc);
    if (lane == 0u && gw < M) reinterpret_cast<exec_u16*>(y)[gw] = (exec_u16)acc;
}

// Same argument list as EXEC_FLAGS (most unused).
#define EXEC_PROBE_STREAM(NAME, RR, TT)                                                                      \
    extern "C" __global__ void __launch_bounds__(512, 1)                                                     \
        NAME(EXEC_MATVEC_PARAMS(float), exec_u32 G, const exec_u8* __restrict__ flags) {                 \
        exec_probe_stream_body<RR, TT>(sm, codes, M, K, y);                                                  \
    }

EXEC_PROBE_STREAM(bench_exec_probe_stream4x1_d4, 4, 1)
EXEC_PROBE_STREAM(bench_exec_probe_stream2x2_d4, 2, 2)
EXEC_PROBE_STREAM(bench_exec_probe_stream1x4_d4, 1, 4)

// The W1 strip kernel (exec_matvec_strip.cu) with its next D - 1 tiles' words in flight (session
// 15): each lane copies its own 16 sm and 8 code bytes of the 4 rows, its row's escape offset and
// the tile flags of the warp's next tiles into a D-stage buffer in shared memory by cp.async, and
// reads back only what it copied itself, so wait_group alone orders it (no __syncwarp). The copies
// of tile cb + D - 1 are in flight while tile cb is decoded. 96 registers (at W1's 80 the issue's
// pointers spill 68-76 bytes), so 21 warps per SM against W1's 25, each with D tiles in flight.
// V > 1 (var-strip-w2-async3): a CTA of V warps per 4 rows, warp v taking the tiles
// [v CB / V, (v + 1) CB / V), for the shapes whose groups of 4 rows leave SMs with few warps
// (4096x4096: 7.75 per SM); warp 0 sums its tiles' partials as W1 does, the others store theirs
// in shared memory, and after the CTA barrier warp 0 adds them in ascending tile order (spec
// 15.4.5: the same sum as W1). Shared memory: V x D stages, then CB x 4 f32 partials.
// Stage (bytes): sm [4][32][16], codes [4][32][8], per lane {escape offset, flags} [32][8].
constexpr exec_u32 EXEC_W1A_STAGE = 2048u + 1024u + 256u;

__device__ __forceinline__ void exec_cp8z(exec_u32 dst, const void* src, bool valid) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 8u : 0u) : "memory");
}
__device__ __forceinline__ void exec_cp4z(exec_u32 dst, const void* src, bool valid) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 4u : 0u) : "memory");
}

template <int D, int V>
__device__ __forceinline__ void exec_strip_w1_async_body(EXEC_MATVEC_PARAMS(float), const exec_u8* __restrict__ flags) {
    extern __shared__ __align__(16) exec_u8 exec_w1a_stage[];  // V x D x EXEC_W1A_STAGE, then CB x 4 f32
    if (ncols == 0) return;  // CTA-uniform: no output
    const exec_u32 K16 = (K + 15u) & ~15u, CB = (K + 511u) >> 9, M4 = (M + 3u) & ~3u;
    const exec_u32 lane = threadIdx.x & 31u, l3 = lane & 3u, r0 = blockIdx.x * 4u;
    const exec_u32 warp = threadIdx.x >> 5, cb0 = warp * CB / V, cb1 = (warp + 1) * CB / V;  // this warp's tiles
    const bool rows = r0 + 4u <= M;
    const exec_u32 nrows = M - r0;
    exec_u32 b4, b2[4];
    exec_strip_w1_bases(base, r0, l3, b4, b2);
    const exec_u8* ps = sm + (exec_u64)r0 * K16 + lane * 16u + cb0 * 512u;
    const exec_u8* pc = codes + (exec_u64)r0 * (K16 >> 1) + lane * 8u + cb0 * 256u;
    const exec_u8* pf = flags + r0 + (exec_u64)cb0 * M4;
    const bool erow = r0 + l3 < M;
    const exec_u32* pe = esc_start + (exec_u64)(erow ? r0 + l3 : 0u) * CB + cb0;
    exec_u8* stages = exec_w1a_stage + warp * (D * EXEC_W1A_STAGE);
    const exec_u32 st0 = exec_sa(stages);
    // Tile t's copies into stage t % D (an empty cp.async group past the warp's last tile).
    exec_u32 it = cb0, istage = 0u;
    auto issue = [&]() {
        if (it < cb1) {
            const exec_u32 st = st0 + istage * EXEC_W1A_STAGE;
            if (rows && it * 512u + 512u <= K) {  // warp-uniform: 4 rows, no pad column
                const exec_u8* s = ps;
                const exec_u8* c = pc;
#pragma unroll
                for (exec_u32 r = 0; r < 4; ++r) {
                    exec_cp16(st + r * 512u + lane * 16u, s);
                    exec_cp8(st + 2048u + r * 256u + lane * 8u, c);
                    s += K16;
                    c += K16 >> 1;
                }
            } else {
                const bool active = it * 512u + lane * 16u < K16;
#pragma unroll
                for (exec_u32 r = 0; r < 4; ++r) {
                    const bool ok = active && r < nrows;
                    exec_cp16z(st + r * 512u + lane * 16u, ok ? ps + (exec_u64)r * K16 : sm, ok);
                    exec_cp8z(st + 2048u + r * 256u + lane * 8u, ok ? pc + (exec_u64)r * (K16 >> 1) : codes, ok);
                }
            }
            exec_cp4z(st + 3072u + lane * 8u, pe, erow);
            exec_cp4(st + 3076u + lane * 8u, pf);
            ps += 512;
            pc += 256;
            pf += M4;
            ++pe;
        }
        ++it;
        exec_stage_next<D>(istage);
    };
#pragma unroll
    for (int d = 0; d + 1 < D; ++d) issue();
    float S = 0.0f;
    float* part = reinterpret_cast<float*>(exec_w1a_stage + V * D * EXEC_W1A_STAGE);  // [CB][4]
    exec_u32 rstage = 0u;
    for (exec_u32 cb = cb0; cb < cb1; ++cb) {
        issue();  // refills the stage tile cb - 1 was read from
        exec_cp_wait<D - 1>();
        const exec_u32 kc = cb * 512u + lane * 16u;
        const bool active = kc < K16;
        const bool whole = cb * 512u + 512u <= K;  // warp-uniform
        float xv[16];
        exec_strip_x(xv, x, kc, whole, active);
        const exec_u8* st = stages + rstage * EXEC_W1A_STAGE;
        ExecStripGroup g;
#pragma unroll
        for (exec_u32 r = 0; r < 4; ++r) {
            g.s[r] = *reinterpret_cast<const uint4*>(st + r * 512u + lane * 16u);
            g.c[r] = *reinterpret_cast<const uint2*>(st + 2048u + r * 256u + lane * 8u);
        }
        if (!(rows && whole)) {  // warp-uniform: rows past M and lanes past K16 take code 1 (see exec_strip_load)
#pragma unroll
            for (exec_u32 r = 0; r < 4; ++r)
                if (!(active && r < nrows)) g.c[r] = make_uint2(0x11111111u, 0x11111111u);
        }
        const uint2 ef = *reinterpret_cast<const uint2*>(st + 3072u + lane * 8u);
        g.eo = ef.x;
        g.fl = ef.y;
        rstage = rstage + 1 == (exec_u32)D ? 0u : rstage + 1;
        const float P = exec_strip_group<0>(g, b4, b2, xv, esc, lane, whole, kc, K);
        if (V == 1 || warp == 0)
            S = __fadd_rn(S, P);
        else if (exec_tree_writer<4>(lane))
            part[cb * 4u + exec_tree_index<4>(lane)] = P;
    }
    if (V > 1) {
        __syncthreads();
        if (warp != 0) return;
        if (exec_tree_writer<4>(lane))
            for (exec_u32 cb = cb1; cb < CB; ++cb) S = __fadd_rn(S, part[cb * 4u + exec_tree_index<4>(lane)]);
    }
    exec_strip_w1_store(S, r0, lane, M, bias, y, out_bf16);
}

#define EXEC_STRIP_W1_ASYNC(NAME, D, V)                                                                   \
    extern "C" __global__ void __maxnreg__(96)                                                             \
        NAME(EXEC_MATVEC_PARAMS(float), exec_u32 RS, const exec_u8* __restrict__ flags) {                \
        exec_strip_w1_async_body<D, V>(sm, codes, base, esc_start, esc, M, K, x, ldx, ncols, bias, y, ldy, out_bf16, flags); \
    }

EXEC_STRIP_W1_ASYNC(bench_exec_matvec_strip_w1_async2, 2, 1)
EXEC_STRIP_W1_ASYNC(bench_exec_matvec_strip_w1_async3, 3, 1)
EXEC_STRIP_W1_ASYNC(bench_exec_matvec_strip_w2_async3, 3, 2)
