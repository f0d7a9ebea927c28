// Bench-only variant and probe of the bounded strip kernel (exec_tensor_strip.cu), timed beside it
// by `nwc-gpu-bench --exec-batch` (session 13):
// - bench_exec_tensor_strip_n2_xchunk: 16 columns with each chunk's activation fragments loaded
//   as its mma need them, as at 32 columns (checked against spec 19 by `--exec-sweep`);
// - bench_exec_tensor_strip_probe_raw_n*: the loaded words used as weights, no decode and no
//   patch (a ceiling probe, never compared), up to 16 columns.
EXEC_TCS(bench_exec_tensor_strip_n2_xchunk, 2, true)
EXEC_TCS_PROBE(bench_exec_tensor_strip_probe_raw_n1, 1, false, 1)
EXEC_TCS_PROBE(bench_exec_tensor_strip_probe_raw_n2, 2, false, 1)

// The strip kernel with the warp's next D - 1 items in flight (session 15, as the W1 variant
// var-strip-w1-async of the one-column kernel): each lane copies its 4 x 16 sm and 4 x 8 code
// bytes of an item and the item's patch-list range into a D-stage buffer of the warp in shared
// memory by cp.async and reads back only what it copied, so wait_group alone orders it. The
// activation fragments stay loads from L1/L2 at the item's turn. Shared memory: the production
// kernel's W x 16 x 8 NT f32 of partial sums, then W x D stages of EXEC_TCA_STAGE bytes.
// Stage: sm [4][32][16] (slot 2 h + j: row g + 8 h, chunk j), codes [4][32][8], range [32][8].
constexpr exec_u32 EXEC_TCA_STAGE = 2048u + 1024u + 256u;

// The chunks of an item that is not whole (its rows reach past M or its columns past K16):
// f(h, j, ok, s, c) for row g + 8 h and chunk j, ok when that row is below M and the chunk below
// K16, s and c then the addresses of its 16 sm and 8 code bytes. (exec_tensor_strip.cu's partial
// loads keep their own loop: routed through this helper their kernel took 2 more registers at 16
// columns, not yet timed.)
template <class F>
__device__ __forceinline__ void exec_tcs_partial(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes, exec_u32 gr,
                                                 exec_u32 g, exec_u32 t, exec_u32 c0, exec_u32 K16, const bool (&rv)[2], F f) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const exec_u64 m = (exec_u64)gr * 16 + 8 * h + g;
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            const exec_u32 kc = c0 + 64u * j + 16u * t;
            const bool ok = rv[h] && kc < K16;
            f(h, j, ok, sm + m * K16 + kc, codes + m * (K16 >> 1) + (kc >> 1));
        }
    }
}

template <int NT, int D>
__device__ __forceinline__ void exec_tcs_async_body(EXEC_MATVEC_PARAMS(exec_u16), const exec_u32* __restrict__ poff,
                                                    const uint2* __restrict__ pent, float* __restrict__ part, exec_u32 splits) {
    constexpr int COLS = NT * 8;
    extern __shared__ __align__(16) float exec_tca_red[];
    EXEC_TCS_LOCALS
    exec_u8* stages = reinterpret_cast<exec_u8*>(exec_tca_red + (exec_u64)nwarps * 16 * COLS) + warp * (D * EXEC_TCA_STAGE);
    const exec_u32 st0 = exec_sa(stages);
    exec_u32 iss = i0 + warp, istage = 0u;
    auto issue = [&]() {
        if (iss < i1) {
            const exec_u32 st = st0 + istage * EXEC_TCA_STAGE;
            const exec_u32 c0 = (iss >> 2) * 512u + (iss & 3u) * 128u;
            if (rows && c0 + 128u <= K16) {  // warp-uniform: a whole item
#pragma unroll
                for (int j = 0; j < 2; ++j) {
                    exec_cp16(st + (0u + j) * 512u + lane * 16u, ps0 + c0 + 64u * j);
                    exec_cp16(st + (2u + j) * 512u + lane * 16u, ps1 + c0 + 64u * j);
                    exec_cp8(st + 2048u + (0u + j) * 256u + lane * 8u, pc0 + (c0 >> 1) + 32u * j);
                    exec_cp8(st + 2048u + (2u + j) * 256u + lane * 8u, pc1 + (c0 >> 1) + 32u * j);
                }
            } else {
                exec_tcs_partial(sm, codes, gr, g, t, c0, K16, rv, [&](int h, int j, bool ok, const exec_u8* s, const exec_u8* c) {
                    exec_cp16z(st + (2u * h + j) * 512u + lane * 16u, ok ? s : sm, ok);
                    exec_cp8z(st + 2048u + (2u * h + j) * 256u + lane * 8u, ok ? c : codes, ok);
                });
            }
            exec_cp4(st + 3072u + lane * 8u, prow + iss);
            exec_cp4(st + 3076u + lane * 8u, prow + iss + 1);
        }
        iss += nwarps;
        exec_stage_next<D>(istage);
    };
#pragma unroll
    for (int d = 0; d + 1 < D; ++d) issue();
    exec_u32 rstage = 0u;
    for (exec_u32 it = i0 + warp; it < i1; it += nwarps) {
        issue();  // refills the stage the previous item was read from
        exec_cp_wait<D - 1>();
        const exec_u32 c0 = (it >> 2) * 512u + (it & 3u) * 128u;
        const bool whole = rows && c0 + 128u <= K16;  // warp-uniform
        const exec_u8* st = stages + rstage * EXEC_TCA_STAGE;
        rstage = rstage + 1 == (exec_u32)D ? 0u : rstage + 1;
        uint4 sv[2][2];
        uint2 cv[2][2];
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            sv[q >> 1][q & 1] = *reinterpret_cast<const uint4*>(st + q * 512u + lane * 16u);
            cv[q >> 1][q & 1] = *reinterpret_cast<const uint2*>(st + 2048u + q * 256u + lane * 8u);
        }
        const uint2 range = *reinterpret_cast<const uint2*>(st + 3072u + lane * 8u);
        uint4 xv[NT][4];
        if (whole) {
            exec_tc_load_frags<NT, EXEC_TC_INTERLEAVE>(x, ldx, ncols, 0xffffffffu, c0, g, t, xv);
        } else {
            // rows past M and chunks past K16 take code 1 (zero-filled sm bytes), as the production kernel
            exec_tcs_partial(sm, codes, gr, g, t, c0, K16, rv, [&](int h, int j, bool ok, const exec_u8*, const exec_u8*) {
                if (!ok) cv[h][j] = make_uint2(0x11111111u, 0x11111111u);
            });
            exec_tc_load_frags<NT, EXEC_TC_INTERLEAVE>(x, ldx, ncols, K16, c0, g, t, xv);
        }
        exec_tcs_item<NT, false, 0>(sv, cv, xv, rv, rbase, range, g, t, lane, esc, pent, x, ldx, ncols, K16, c0, acc);
    }
    exec_tcs_finish<NT>(exec_tca_red, acc, warp, nwarps, gr, g, t, M, ncols, bias, y, ldy, out_bf16, part, split, splits);
}

#define EXEC_TCS_ASYNC(NAME, NT, D)                                                                                      \
    extern "C" __global__ void __launch_bounds__(512, 1)                                                    \
        NAME(EXEC_MATVEC_PARAMS(exec_u16), const exec_u32* __restrict__ poff, const uint2* __restrict__ pent, \
             float* __restrict__ part, exec_u32 splits) {                                                   \
        exec_tcs_async_body<NT, D>(sm, codes, base, esc_start, esc, M, K, x, ldx, ncols, bias, y, ldy, out_bf16, poff, pent, \
                                   part, splits);                                                           \
    }

EXEC_TCS_ASYNC(bench_exec_tensor_strip_async3_n1, 1, 3)
EXEC_TCS_ASYNC(bench_exec_tensor_strip_async3_n2, 2, 3)
