// Execution layout: batched matvec on tensor cores, bounded class (spec 19 applies unchanged to
// the execution layout, spec 20.15): mma.sync.m16n8k16 BF16 x BF16 -> f32, BF16 activations.
// A warp owns 16 rows (A operand: rows g and g + 8 of lane 4 g + t), 8 activation columns per
// n-tile (B operand: column g); the k order inside an instruction is free in the bounded class, so
// each thread feeds 16 consecutive columns it decoded itself (columns k0 + 4q + {0,1} and
// + {2,3} for k-step q, A and B alike). Two kernel families: the stream kernel (items of 16 rows x
// 128 columns; up to 32 columns per decode) and the tile kernel (a whole 512-column tile per
// item; 64 columns). Escapes: every pair is decoded by the fast path, then the pairs holding a
// code 0 or 15 are rewritten (exec_patch_pairs); escape order inside a tile follows the items, then
// the threads t, then the thread's columns.

// The offset in `esc` of this thread's first code-15 weight in the item: the tile's first escape
// (tesc, read by thread t = 0 of the row), the escapes of the tile's earlier items (rel, advanced
// here by the item's total) and those of threads t' < t of the same row (n: this thread's count).
// Every thread of the warp calls it (shuffles within groups of 4).
__device__ __forceinline__ exec_u32 exec_tc_esc_offset(exec_u32 n, exec_u32 t, exec_u32 tesc, exec_u32& rel) {
    exec_u32 incl = n;
    exec_u32 v = __shfl_up_sync(EXEC_FULL, incl, 1, 4);
    if (t >= 1u) incl += v;
    v = __shfl_up_sync(EXEC_FULL, incl, 2, 4);
    if (t >= 2u) incl += v;
    const exec_u32 total = __shfl_sync(EXEC_FULL, incl, 3, 4);
    const exec_u32 off = __shfl_sync(EXEC_FULL, tesc, 0, 4) + rel + (incl - n);
    rel += total;
    return off;
}

// The outputs of a row group (ROWS rows from row0): each warp has stored its ROWS x COLS partial
// sums at red + warp * ROWS * COLS; they are added in warp order (spec 19 allows any order; this
// one is fixed), then the bias, then the output conversion (BF16 by RNE, spec 15.4.6).
template <int ROWS, int COLS>
__device__ __forceinline__ void exec_tc_rowgroup_out(const float* red, exec_u64 row0, exec_u32 M, exec_u32 ncols,
                                                     exec_u32 nwarps, const float* __restrict__ bias, void* __restrict__ y,
                                                     exec_u64 ldy, int out_bf16) {
    __syncthreads();
    for (exec_u32 idx = threadIdx.x; idx < (exec_u32)(ROWS * COLS); idx += blockDim.x) {
        const exec_u32 r = idx / COLS, n = idx % COLS;
        const exec_u64 m = row0 + r;
        if (m >= M || n >= ncols) continue;
        float sum = 0.0f;
        for (exec_u32 wi = 0; wi < nwarps; ++wi) sum = __fadd_rn(sum, red[(exec_u64)wi * ROWS * COLS + idx]);
        if (bias) sum = __fadd_rn(sum, bias[m]);
        if (out_bf16)
            reinterpret_cast<exec_u16*>(y)[n * ldy + m] = exec_bf16_rne(sum);
        else
            reinterpret_cast<float*>(y)[n * ldy + m] = sum;
    }
    __syncthreads();
}

// The 4 mma k-steps over 16 consecutive columns of this thread (k permuted per thread, spec 19):
// A = its pairs of rows g and g + 8 (w0, w1), B = the same 16 columns of activation column g of
// the n-tile (xa: columns 0..7, xb: 8..15).
__device__ __forceinline__ void exec_tc_mma16(float (&acc)[4], const exec_u32 (&w0)[8], const exec_u32 (&w1)[8], uint4 xa,
                                              uint4 xb) {
    const exec_u32 xw[8] = {xa.x, xa.y, xa.z, xa.w, xb.x, xb.y, xb.z, xb.w};
#pragma unroll
    for (int q = 0; q < 4; ++q) exec_mma16816(acc, w0[2 * q], w1[2 * q], w0[2 * q + 1], w1[2 * q + 1], xw[2 * q], xw[2 * q + 1]);
}

// The B fragments of one k step: column n = 8 nt + g, the 16 activations k .. k + 15 of this
// thread (zero past ncols or K16).
template <int NT>
__device__ __forceinline__ void exec_load_b(const exec_u16* __restrict__ x, exec_u64 ldx, exec_u32 ncols, exec_u32 K16,
                                            exec_u32 k, exec_u32 g, uint4 (&xa)[NT], uint4 (&xb)[NT]) {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
        const exec_u32 n = nt * 8u + g;
        xa[nt] = xb[nt] = make_uint4(0u, 0u, 0u, 0u);
        if (n < ncols && k < K16) {
            const uint4* xp = reinterpret_cast<const uint4*>(x + (exec_u64)n * ldx + k);
            xa[nt] = __ldg(xp);
            xb[nt] = __ldg(xp + 1);
        }
    }
}
