// Bench (session 33): the bounded strip kernel (exec_tensor_strip.cu, SHARE) on an even share of
// all row groups' items. The production plan gives each CTA one row group and one of S equal
// ranges of its item columns, so where the row groups do not divide evenly over the resident
// warps some warps run an item more than the others (2560x9728 at 8 columns: 160 row groups of
// 76 items, W = 6 on 3 splits, warps of 4 and 5 items, where 12,160 items over 3,168 warp slots
// allow 4). Here each row group's item columns are cut into chunks of q items (its last chunk
// shorter), the chunks of all row groups stand in one sequence, row group after row group, and
// warp w of CTA c takes chunk c x W + w: every warp runs at most q items, all of one row group,
// with the production kernel's loop (the items one after the other instead of W apart). A CTA's
// warps then hold the end of one row group and the start of the next at most (the host keeps W
// within a row group's chunks, exec/tensor_share.rs), and each row group's sums are added here:
// - a row group whose chunks all lie in this CTA: its warps' sums in warp order, then the bias
//   and the output conversion (exec_tc_rowgroup_out);
// - else the CTA writes the warp-order sum of its warps of that row group (16 x 8 NT f32) to
//   part[c][0 or 1], and the last CTA of the row group to count itself in cnt[row group] (after
//   a memory fence: every other part is written) adds the parts in CTA order, then the bias and
//   the conversion, and sets the counter back to 0 for the next launch.
// The order of the additions is fixed (warps, then CTAs, ascending) whichever CTA comes last;
// spec 19 allows any. No second launch and no cluster; the counters live with the matrix.
// A call, not inlined: inlined, its registers pushed the 8-column kernel's accumulators into
// local memory (76 bytes of spills at 80 registers; as a call, none, and the items' main path
// 292 instructions against production's 291: cuda/sass.sh).
template <int NT>
__device__ __noinline__ void exec_tcs_share_finish(float* red, const float (&acc)[NT][4], exec_u32 warp, exec_u32 nwarps, exec_u32 g,
                                                      exec_u32 t, exec_u32 nitg, exec_u32 q, exec_u32 M, exec_u32 ncols,
                                                      const float* __restrict__ bias, void* __restrict__ y, exec_u64 ldy, int out_bf16,
                                                      float* __restrict__ part, exec_u32* __restrict__ cnt) {
    constexpr int COLS = NT * 8, TILE = 16 * COLS;
    __shared__ exec_u32 last;
    exec_tc_store_acc<NT, COLS>(red + (exec_u64)warp * TILE, acc, 0u, g, t);
    __syncthreads();
    // the CTA's chunks [c0, c1) and their row groups
    const exec_u32 kc = (nitg + q - 1) / q, chunks = ((M + 15u) >> 4) * kc;
    const exec_u32 c0 = blockIdx.x * nwarps, c1 = min(chunks, c0 + nwarps);
    for (exec_u32 gr = c0 / kc, s = 0; gr * kc < c1; ++gr, ++s) {
        // this CTA's warps of row group gr, and the CTAs that hold its chunks
        const exec_u32 wa = max(gr * kc, c0) - c0, wb = min(gr * kc + kc, c1) - c0;
        const exec_u32 c_first = gr * kc / nwarps, c_last = (gr * kc + kc - 1u) / nwarps;
        const float* rs = red + (exec_u64)wa * TILE;
        if (c_first == c_last) {
            exec_tc_rowgroup_out<16, COLS>(rs, (exec_u64)gr * 16, M, ncols, wb - wa, bias, y, ldy, out_bf16);
            continue;
        }
        float* mine = part + ((exec_u64)blockIdx.x * 2 + s) * TILE;
        for (exec_u32 idx = threadIdx.x; idx < (exec_u32)TILE; idx += blockDim.x) {
            float sum = 0.0f;
            for (exec_u32 wi = 0; wi < wb - wa; ++wi) sum = __fadd_rn(sum, rs[(exec_u64)wi * TILE + idx]);
            mine[idx] = sum;
        }
        __threadfence();  // this part visible on the device before the CTA counts itself
        __syncthreads();
        if (threadIdx.x == 0) {
            const exec_u32 ticket = atomicAdd(cnt + gr, 1u);
            last = ticket == c_last - c_first;
            if (last) cnt[gr] = 0u;  // every CTA of the row group has counted itself
        }
        __syncthreads();
        if (last) {
            __threadfence();
            for (exec_u32 idx = threadIdx.x; idx < (exec_u32)TILE; idx += blockDim.x) {
                const exec_u32 r = idx / COLS, n = idx % COLS;
                const exec_u64 m = (exec_u64)gr * 16 + r;
                if (m >= M || n >= ncols) continue;
                float sum = 0.0f;
                for (exec_u32 c = c_first; c <= c_last; ++c) {
                    const exec_u32 pc = gr - c * nwarps / kc;  // the row group's part of CTA c: 0 or 1
                    sum = __fadd_rn(sum, __ldcg(part + ((exec_u64)c * 2 + pc) * TILE + idx));
                }
                exec_output(sum, m, n, ldy, bias, y, out_bf16);
            }
        }
        __syncthreads();  // `last` is the next part's
    }
}

// Parameters: EXEC_MATVEC_PARAMS, the patch list's offsets and entries, the parts [CTAs][2][16][8
// NT] f32, the items per warp (q) and the row groups' counters (zero); grid = ceil(row groups x
// ceil(item columns / q) / W), W at most a row group's chunks, dynamic shared memory W x 16 x 8 NT
// f32 (as production). Each NT in production's configuration (EXEC_TCS_N1 / N2 / N4).
#define EXEC_TCS_SHARE(NAME, NT, XCHUNK, BOUNDS, AHEAD, EARLY)                                                             \
    extern "C" __global__ void BOUNDS NAME(EXEC_MATVEC_PARAMS(exec_u16), const exec_u32* __restrict__ poff,                 \
                                           const uint2* __restrict__ pent, float* __restrict__ part, exec_u32 q,          \
                                           exec_u32* __restrict__ cnt) {                                                  \
        exec_tcs_body<NT, XCHUNK, 0, AHEAD, false, EARLY, true>(sm, codes, base, esc_start, esc, M, K, x, ldx, ncols, bias, y, \
                                                               ldy, out_bf16, poff, pent, part, q, cnt);                  \
    }
EXEC_TCS_SHARE(bench_exec_tensor_strip_share_n1, 1, false, __maxnreg__(80), false, false)
EXEC_TCS_SHARE(bench_exec_tensor_strip_share_n2, 2, false, __launch_bounds__(512, 1), true, false)
EXEC_TCS_SHARE(bench_exec_tensor_strip_share_n4, 4, true, __launch_bounds__(512, 1), false, false)
// The same, releasing the next kernel at the CTAs' start (EARLY), where production's rule would
// (tc_release; session 34: without it, and with the parts allocated per launch, the share kernel
// lost 3.4-4.8 us a launch to production even where their plans are the same).
EXEC_TCS_SHARE(bench_exec_tensor_strip_share_n1_release_start, 1, false, __maxnreg__(80), false, true)
EXEC_TCS_SHARE(bench_exec_tensor_strip_share_n2_release_start, 2, false, __launch_bounds__(512, 1), true, true)
EXEC_TCS_SHARE(bench_exec_tensor_strip_share_n4_release_start, 4, true, __launch_bounds__(512, 1), false, true)
