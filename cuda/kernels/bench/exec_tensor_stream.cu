// Bench: the bounded stream kernel (the tensor-core choice up to 16 columns per decode until session
// 13, superseded by exec_tensor_strip.cu; `ExecMatvecKernel::BoundedStream`, timed beside it by
// `nwc-gpu-bench --exec-batch`) and its ceiling probes. Its items, stage copies and decode are
// exec_tensor.cu's (the panel kernel uses them too); persistent CTAs of W warps (exec/tensor.rs
// `stream_plan`) take a row group's items round-robin through a 4-stage cp.async pipeline.

// The stream kernel. PROBE (bench only, kernels/bench/exec_tensor_probes.cu): 1 = the stage words
// as weights (no decode, no patch), 2 = decode without mma; production instantiates PROBE = 0 only.
template <int NT, int D, int PROBE = 0>
__device__ __forceinline__ void exec_tc_body(EXEC_MATVEC_PARAMS(exec_u16), const exec_u32* __restrict__ poff,
                                             const uint2* __restrict__ pent) {
    constexpr int COLS = NT * 8;
    extern __shared__ __align__(16) exec_u8 exec_stage[];
    const exec_u32 K16 = (K + 15u) & ~15u;
    const exec_u32 CB = (K + 511u) >> 9;
    const exec_u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const exec_u32 g = lane >> 2, t = lane & 3u;
    const exec_u32 ngroups = (exec_u32)(((exec_u64)M + 15) / 16);  // M <= 2^31 (spec 20.2)
    // items of a row group: 4 per tile but past K16 in a short last tile (those are the last ones)
    const exec_u32 nitg = EXEC_ITEM_COLUMNS(K16, CB);
    const exec_u32 st = exec_sa(exec_stage) + warp * (D * EXEC_TC_STAGE);
    const exec_u8* sb = exec_stage + (exec_u64)warp * D * EXEC_TC_STAGE;
    float* red = reinterpret_cast<float*>(exec_stage + (exec_u64)nwarps * D * EXEC_TC_STAGE);

    // issue side: the same (row group, tile, item) sequence as the compute loop.
    exec_u32 igr = blockIdx.x, iit = warp, istage = 0;
    ExecTcRows rows = exec_tc_rows(sm, codes, (exec_u64)igr * 16, M, K16, lane);
    auto issue = [&]() {
        if (igr < ngroups && iit < nitg) {
            exec_tc_copy_item(st + istage * EXEC_TC_STAGE, rows, (iit >> 2) * 512u + (iit & 3u) * 128u, K16, lane,
                              poff + ((exec_u64)igr * CB * 4 + iit));
            iit += nwarps;
            if (iit >= nitg) {
                iit = warp;
                igr += gridDim.x;
                rows = exec_tc_rows(sm, codes, (exec_u64)igr * 16, M, K16, lane);
            }
        }
        exec_stage_next<D>(istage);
    };
#pragma unroll
    for (int d = 0; d < D - 1; ++d) issue();

    exec_u32 cstage = 0;
    for (exec_u32 gr = blockIdx.x; gr < ngroups; gr += gridDim.x) {
        exec_u32 rbase[2];
        bool rv[2];
        exec_tc_row_bases(base, gr, M, g, rv, rbase);
        float acc[NT][4] = {};
        for (exec_u32 it = warp; it < nitg; it += nwarps) {  // the group's items, round-robin over the warps
            const exec_u32 cb = it >> 2, sub = it & 3u;
            const exec_u32 kc = cb * 512u + sub * 128u + 32u * t;
            uint4 xv[NT][4];
            exec_tc_load_frags<NT, EXEC_TC_SPAN>(x, ldx, ncols, K16, cb * 512u + sub * 128u, g, t, xv);
            // Lanes read stage bytes other lanes copied: every lane is done with the
            // stage this issue refills, and after the wait every lane's copies have landed.
            __syncwarp();
            issue();
            exec_cp_wait<D - 1>();
            __syncwarp();
            const exec_u8* sd = sb + cstage * EXEC_TC_STAGE;
            cstage = cstage + 1 == (exec_u32)D ? 0u : cstage + 1;
            exec_tc_item<PROBE>(sd, rv, rbase, kc, K16, g, t, lane, esc, pent, [&](exec_u32 j, const exec_u32 (&w)[2][8]) {
                uint4 xa[NT], xb[NT];
#pragma unroll
                for (int nt = 0; nt < NT; ++nt) {
                    xa[nt] = xv[nt][2 * j];
                    xb[nt] = xv[nt][2 * j + 1];
                }
                if (PROBE == 2) {
                    // Probe 2, no mma: the decoded words and the activations folded by XOR.
#pragma unroll
                    for (int nt = 0; nt < NT; ++nt) {
                        exec_u32 f = xa[nt].x ^ xb[nt].w;
#pragma unroll
                        for (int p = 0; p < 8; ++p) f ^= w[0][p] ^ w[1][p];
                        acc[nt][0] = __uint_as_float(__float_as_uint(acc[nt][0]) ^ f);
                    }
                } else {
                    exec_tc_mma16<NT>(acc, w[0], w[1], xa, xb);
                }
            });
        }
        exec_tc_store_acc<NT, COLS>(red + (exec_u64)warp * 16 * COLS, acc, 0u, g, t);
        exec_tc_rowgroup_out<16, COLS>(red, (exec_u64)gr * 16, M, ncols, nwarps, bias, y, ldy, out_bf16);
    }
    exec_cp_wait<0>();
}

// Parameters: EXEC_MATVEC_PARAMS, then the patch list's offsets and entries (exec_derived.cu).
#define EXEC_TC_PROBE(NAME, NT, D, MINB, PROBE)                                                             \
    extern "C" __global__ void __launch_bounds__(512, MINB)                                                 \
        NAME(EXEC_MATVEC_PARAMS(exec_u16), const exec_u32* __restrict__ poff, const uint2* __restrict__ pent) { \
        exec_tc_body<NT, D, PROBE>(sm, codes, base, esc_start, esc, M, K, x, ldx, ncols, bias, y, ldy, out_bf16, \
                                   poff, pent);                                                             \
    }
#define EXEC_TC(NAME, NT, D, MINB) EXEC_TC_PROBE(NAME, NT, D, MINB, 0)

EXEC_TC(bench_exec_tensor_stream_n1, 1, 4, 1)
EXEC_TC(bench_exec_tensor_stream_n2, 2, 4, 1)

// Ceiling probes of the stream kernel above (up to 8 columns per decode), timed beside it by
// `nwc-gpu-bench --exec-batch` (docs/gpu-history.md, session 8); not a matvec, never compared:
// - bench_exec_tensor_probe_raw_n1: the stage words as weights (no decode, no escape offsets,
//   no patch), so copies, stage reads, activations, mma and the row-group reduction are timed alone;
// - bench_exec_tensor_probe_nomma_n1: the decode and the patch list without mma (the words and the
//   activations folded by XOR).
EXEC_TC_PROBE(bench_exec_tensor_probe_raw_n1, 1, 4, 1, 1)
EXEC_TC_PROBE(bench_exec_tensor_probe_nomma_n1, 1, 4, 1, 2)

