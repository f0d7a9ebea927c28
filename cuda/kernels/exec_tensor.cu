// Execution layout: batched matvec on tensor cores, bounded class (spec 19 applies unchanged to
// the execution layout, spec 20.15): mma.sync.m16n8k16 BF16 x BF16 -> f32, BF16 activations.
// A warp owns 16 rows (A operand: rows g and g + 8 of lane 4 g + t), 8 activation columns per
// n-tile (B operand: column g); the k order inside an instruction is free in the bounded class, so
// each thread feeds 16 consecutive columns it decoded itself (columns k0 + 4q + {0,1} and
// + {2,3} for k-step q, A and B alike). This file holds what the kernel families share; the
// families: the strip kernel (exec_tensor_strip.cu: items of 16 rows x 128 columns loaded straight
// into registers; up to 32 columns per decode) and the panel kernel (exec_tensor_panel.cu, the
// same items through a cp.async stage, 8 or 16 row groups per CTA sharing activations staged in
// shared memory; 64); with `bench`, the stream kernel (bench/exec_tensor_stream.cu: the items
// through a stage, one row group per CTA; 16 columns until session 13) and the step kernel
// (bench/exec_tensor_step.cu, 16 x 64; 32 until session 13). Escapes: every pair is decoded by the
// fast path, then the pairs holding a code 0 or 15 are rewritten: from the derived patch list in
// the strip, stream and panel kernels, by exec_patch_pairs in the step kernel (escape order inside
// a tile: the items, then the threads t, then the thread's columns).

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
// one is fixed), then the bias, then the output conversion (BF16 by RNE, spec 15.4.6). With PART,
// a split launch's unit: the warp-order sum goes to part[split][n][m] instead (f32, no bias), for
// exec_tensor_panel_sum.
template <int ROWS, int COLS, bool PART = false>
__device__ __forceinline__ void exec_tc_rowgroup_out(const float* red, exec_u64 row0, exec_u32 M, exec_u32 ncols,
                                                     exec_u32 nwarps, const float* __restrict__ bias, void* __restrict__ y,
                                                     exec_u64 ldy, int out_bf16, float* __restrict__ part = nullptr,
                                                     exec_u32 split = 0) {
    __syncthreads();
    for (exec_u32 idx = threadIdx.x; idx < (exec_u32)(ROWS * COLS); idx += blockDim.x) {
        const exec_u32 r = idx / COLS, n = idx % COLS;
        const exec_u64 m = row0 + r;
        if (m >= M || n >= ncols) continue;
        float sum = 0.0f;
        for (exec_u32 wi = 0; wi < nwarps; ++wi) sum = __fadd_rn(sum, red[(exec_u64)wi * ROWS * COLS + idx]);
        if constexpr (PART) {
            part[((exec_u64)split * ncols + n) * M + m] = sum;
            continue;
        }
        exec_output(sum, m, n, ldy, bias, y, out_bf16);
    }
    // red may be reused after a row group's outputs; a split unit's are the kernel's last step
    if constexpr (!PART) __syncthreads();
}

// A split launch whose `splits` CTAs of a row group form one thread-block cluster (sm_90; the
// cluster rank is the split, blockIdx.x % splits): each CTA adds its warps' partial sums in warp
// order into warp 0's block of red, the cluster synchronises (release / acquire: the blocks are
// visible to every CTA of the cluster), then each CTA adds a 1 / splits share of the row group's
// ROWS x COLS sums over the splits in split order, reading the other CTAs' blocks through
// distributed shared memory (mapa, ld.shared::cluster), then the bias and the output conversion:
// the same additions in the same order as a split unit's part[] and exec_tensor_panel_sum, with no
// partial-sum buffer and no second kernel. A second cluster barrier keeps every CTA's shared
// memory alive until the others have read it.
#if __CUDA_ARCH__ >= 900
__device__ __forceinline__ void exec_cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// The f32 at p (this CTA's shared memory) in the shared memory of the cluster's CTA `rank`.
__device__ __forceinline__ float exec_ld_cluster(const float* p, exec_u32 rank) {
    const exec_u32 a = (exec_u32)__cvta_generic_to_shared(p);
    exec_u32 r;
    float v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(r) : "memory");
    return v;
}
template <int ROWS, int COLS>
__device__ __forceinline__ void exec_tc_cluster_out(float* red, exec_u64 row0, exec_u32 M, exec_u32 ncols, exec_u32 nwarps,
                                                    const float* __restrict__ bias, void* __restrict__ y, exec_u64 ldy,
                                                    int out_bf16, exec_u32 rank, exec_u32 splits) {
    __syncthreads();
    for (exec_u32 idx = threadIdx.x; idx < (exec_u32)(ROWS * COLS); idx += blockDim.x) {
        float sum = 0.0f;
        for (exec_u32 wi = 0; wi < nwarps; ++wi) sum = __fadd_rn(sum, red[(exec_u64)wi * ROWS * COLS + idx]);
        red[idx] = sum;  // this thread alone reads and writes element idx
    }
    exec_cluster_sync();
    for (exec_u32 idx = rank * blockDim.x + threadIdx.x; idx < (exec_u32)(ROWS * COLS); idx += splits * blockDim.x) {
        const exec_u32 r = idx / COLS, n = idx % COLS;
        const exec_u64 m = row0 + r;
        if (m >= M || n >= ncols) continue;
        float sum = 0.0f;
        for (exec_u32 s = 0; s < splits; ++s) sum = __fadd_rn(sum, exec_ld_cluster(red + idx, s));
        exec_output(sum, m, n, ldy, bias, y, out_bf16);
    }
    exec_cluster_sync();
}
#endif

// A warp's mma.m16n8 accumulators (NT n-tiles, the C-fragment layout: thread (g, t) holds rows g
// and g + 8, columns 2t and 2t + 1 of each n-tile) stored as rows row0.. of its partial-sum block
// rw (COLS floats per row), for exec_tc_rowgroup_out.
template <int NT, int COLS>
__device__ __forceinline__ void exec_tc_store_acc(float* rw, const float (&acc)[NT][4], exec_u32 row0, exec_u32 g, exec_u32 t) {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) rw[(row0 + g + 8u * (i >> 1)) * COLS + 8u * nt + 2u * t + (i & 1)] = acc[nt][i];
}

// The 4 mma k-steps over 16 consecutive columns of this thread (k permuted per thread, spec 19),
// for NT n-tiles: A = its pairs of rows g and g + 8 (w0, w1), B = the same 16 columns of
// activation column g of n-tile nt (xa[nt]: columns 0..7, xb[nt]: 8..15). The k-step is the outer
// loop, so consecutive mma instructions (asm volatile: issued in this order) write different
// accumulators and need not wait for each other's results (session 11: the n-tile outer loop
// chained 4 dependent mma per n-tile).
// Half hf of it: k-steps 2 hf and 2 hf + 1, with v[nt] = xa[nt] (hf = 0) or xb[nt] (hf = 1).
template <int NT>
__device__ __forceinline__ void exec_tc_mma8(float (&acc)[NT][4], const exec_u32 (&w0)[8], const exec_u32 (&w1)[8],
                                             const uint4 (&v)[NT], int hf) {
#pragma unroll
    for (int q = 2 * hf; q < 2 * hf + 2; ++q)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
            exec_mma16816(acc[nt], w0[2 * q], w1[2 * q], w0[2 * q + 1], w1[2 * q + 1], q & 1 ? v[nt].z : v[nt].x,
                          q & 1 ? v[nt].w : v[nt].y);
}

template <int NT>
__device__ __forceinline__ void exec_tc_mma16(float (&acc)[NT][4], const exec_u32 (&w0)[8], const exec_u32 (&w1)[8],
                                              const uint4 (&xa)[NT], const uint4 (&xb)[NT]) {
    exec_tc_mma8<NT>(acc, w0, w1, xa, 0);
    exec_tc_mma8<NT>(acc, w0, w1, xb, 1);
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

// ---- batched, bounded (spec 19), streaming: an item is 16 rows x 128 columns of one tile; lane
// (g, t) owns rows g and g + 8 and the 32 columns 32 t .. 32 t + 31 of the item (two chunks of 16,
// each fed to 4 mma k-steps with the k order permuted per thread, A and B alike). Compared with
// the step kernel (64-column items): half the items, copies and bookkeeping per weight, no pad
// masking (a pad weight, code 0 and sm 0, decodes to a finite value that meets x = 0 unless its
// pair is listed), and the codes 0 and 15 by the patch list (below). CTAs of W warps
// (exec/tensor.rs `stream_plan`) are persistent over 16-row groups; the warps take a row group's
// items round-robin and add their partial sums in warp order through shared memory (session 10
// measured equal item ranges per warp with a cross-CTA reduction instead: slower, docs/gpu.md). Stage: sm [16][128], codes [16][64], the
// item's patch-list range (2 words, 64 bytes reserved). ----
#define EXEC_TC_CODES 2048
#define EXEC_TC_ESC 3072
#define EXEC_TC_STAGE 3136

// The row pointers of a 16-row group for exec_tc_copy_item: lane L copies 16 bytes of sm rows
// (L >> 3) + 4 i (i < 4) at (L & 7) * 16 and, in a whole item (16 rows, 128 columns, K16 % 32 == 0
// so code rows are 16-byte aligned), 16 bytes of code rows (L >> 2) + 8 i (i < 2) at (L & 3) * 16,
// without predicates; other items copy 8 bytes of code rows (L >> 3) + 4 i at (L & 7) * 8 beside
// each sm piece. Row pointers are set once per row group (64-bit: M * K16 < 2^41, spec 20.16) and
// an item adds its column and a stride of 4 sm rows (session 9: +8-10% against 8 copies a lane
// whose 64-bit addresses came from row, tile and item).
struct ExecTcRows {
    const exec_u8* ps;  // sm row (L >> 3)
    const exec_u8* pc;  // code row (L >> 2), 16-byte pieces
    const exec_u8* pe;  // code row (L >> 3), 8-byte pieces
    exec_u32 valid;     // rows of the group below M
};

__device__ __forceinline__ ExecTcRows exec_tc_rows(const exec_u8* sm, const exec_u8* codes, exec_u64 row0, exec_u32 M,
                                                   exec_u32 K16, exec_u32 lane) {
    ExecTcRows r;
    r.valid = row0 < M ? (exec_u32)min((exec_u64)16, (exec_u64)M - row0) : 0u;
    r.ps = sm + (row0 + (lane >> 3)) * K16 + (lane & 7u) * 16u;
    r.pc = codes + (row0 + (lane >> 2)) * (K16 >> 1) + (lane & 3u) * 16u;
    r.pe = codes + (row0 + (lane >> 3)) * (K16 >> 1) + (lane & 7u) * 8u;
    return r;
}

// One item (16 rows x 128 columns from column off) into the stage at shared address sd: sm
// [16][128], codes [16][64] at EXEC_TC_CODES, and the item's patch-list range (off[i], off[i + 1],
// from pitem) at EXEC_TC_ESC.
__device__ __forceinline__ void exec_tc_copy_item(exec_u32 sd, const ExecTcRows& r, exec_u32 off, exec_u32 K16,
                                                  exec_u32 lane, const exec_u32* pitem) {
    const exec_u64 rs = 4ull * K16;  // 4 sm rows = 8 code rows, in bytes
    const exec_u32 dsm = sd + (lane >> 3) * 128u + (lane & 7u) * 16u;
    const exec_u8* s0 = r.ps + off;
    if (r.valid == 16u && off + 128u <= K16 && (K16 & 31u) == 0u) {  // warp-uniform: a whole item, 16-byte code rows
        const exec_u32 dcd = sd + EXEC_TC_CODES + (lane >> 2) * 64u + (lane & 3u) * 16u;
        const exec_u8* c0 = r.pc + (off >> 1);
#pragma unroll
        for (exec_u32 i = 0; i < 4; ++i) exec_cp16(dsm + i * 512u, s0 + i * rs);
#pragma unroll
        for (exec_u32 i = 0; i < 2; ++i) exec_cp16(dcd + i * 512u, c0 + i * rs);
    } else {  // code rows as 8-byte pieces, mapped like the sm rows
        const exec_u32 dcd = sd + EXEC_TC_CODES + (lane >> 3) * 64u + (lane & 7u) * 8u;
        const exec_u8* c0 = r.pe + (off >> 1);
        const bool lv = off + (lane & 7u) * 16u < K16;
#pragma unroll
        for (exec_u32 i = 0; i < 4; ++i)
            if (lv && (lane >> 3) + 4u * i < r.valid) {
                exec_cp16(dsm + i * 512u, s0 + i * rs);
                exec_cp8(dcd + i * 256u, c0 + i * (rs >> 1));
            }
    }
    if (lane < 2u) exec_cp4(sd + EXEC_TC_ESC + lane * 4u, pitem + lane);
}

// Item columns of a row group (items of 128 columns): 4 per tile, none past K16 in a short last
// tile; the host's exec::tensor::item_columns. A macro, not a function: as an inline function it
// changed the SASS of 12 kernels (session 14).
#define EXEC_ITEM_COLUMNS(K16, CB) (4u * ((CB) - 1) + (((K16) - ((CB) - 1) * 512u + 127u) >> 7))

// Rows g and g + 8 of the 16-row group gr: below M (rv) and their bases (1 for a row past M).
__device__ __forceinline__ void exec_tc_row_bases(const exec_u8* __restrict__ base, exec_u64 gr, exec_u32 M, exec_u32 g,
                                                  bool (&rv)[2], exec_u32 (&rbase)[2]) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const exec_u64 m = gr * 16 + 8 * h + g;
        rv[h] = m < M;
        rbase[h] = rv[h] ? (exec_u32)__ldg(base + m) : 1u;
    }
}

// How the 64 pairs of an item row are spread over the 4 threads t of the row (each thread decodes
// two chunks j of 16 columns): EXEC_TC_SPAN, thread t owns columns 32 t .. 32 t + 31 (chunk j =
// 32 t + 16 j: the stream and panel kernels, whose lanes read the stage); EXEC_TC_INTERLEAVE,
// chunk j = 64 j + 16 t (the strip kernel, exec_tensor_strip.cu: each of its loads straight from
// global memory covers 64 contiguous sm bytes and 32 code bytes of a row).
#define EXEC_TC_SPAN 0
#define EXEC_TC_INTERLEAVE 1

// The item-relative pair index of pair p of chunk j of thread t (MAP above).
template <int MAP>
__device__ __forceinline__ exec_u32 exec_tc_pair(exec_u32 t, exec_u32 j, exec_u32 p) {
    return MAP == EXEC_TC_SPAN ? 16u * t + 8u * j + p : 32u * j + 8u * t + p;
}

// The activation fragments of an item (columns c0 .. c0 + 127) for lane (g, t): column n = 8 nt +
// g, chunk j of the MAP above at xv[nt][2 j], xv[nt][2 j + 1] (8 activations each; zero past ncols
// or K16).
template <int NT, int MAP>
__device__ __forceinline__ void exec_tc_load_frags(const exec_u16* __restrict__ x, exec_u64 ldx, exec_u32 ncols, exec_u32 K16,
                                                   exec_u32 c0, exec_u32 g, exec_u32 t, uint4 (&xv)[NT][4]) {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
        const exec_u32 n = nt * 8u + g;
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            const exec_u32 kc = MAP == EXEC_TC_SPAN ? c0 + 32u * t + 16u * j : c0 + 64u * j + 16u * t;
            xv[nt][2 * j] = xv[nt][2 * j + 1] = make_uint4(0u, 0u, 0u, 0u);
            if (n < ncols && kc < K16) {
                const uint4* xp = reinterpret_cast<const uint4*>(x + (exec_u64)n * ldx + kc);
                xv[nt][2 * j] = __ldg(xp);
                xv[nt][2 * j + 1] = __ldg(xp + 1);
            }
        }
    }
}

// One item of a warp (16 rows x 128 columns), its words already loaded: lane (g, t) decodes rows
// g and g + 8 (rv: below M, rbase: their bases) from sv[h][j] / cv[h][j] (row 8 h + g, chunk j of
// the MAP above; rows past M and chunks past K16 hold sm 0 and code 1, a finite weight that meets
// x = 0) and hands each chunk's pairs w[h][p] (row 8 h + g, pair exec_tc_pair<MAP>(t, j, p) of
// the item) to use(j, w). Codes 0 and 15: every pair is decoded by the fast path, then the pairs of
// the item's patch list (exec_derived.cu: the entries range.x .. range.y) are overwritten, so a
// clean item runs no code test, vote or escape count (session 10: +4% against the per-item vote,
// prefix and exec_patch_pairs of session 9). A dense item's list holds each row's escape offset at
// the item instead; the item then takes exec_patch_pairs after a prefix over the row's lanes (in
// column order: the chunks' counts in MAP's order). PROBE (bench only,
// kernels/bench/exec_tensor_stream.cu): 1 = the loaded words as weights (no decode, no patch);
// production instantiates PROBE = 0 only. GIVEN (session 24, the strip kernel at 16 columns): the
// caller loaded the item's first entry (given; anything where the range is empty) ahead of the item.
template <int PROBE, int MAP, bool GIVEN = false, class Use>
__device__ __forceinline__ void exec_tc_decode(const uint4 (&sv)[2][2], const uint2 (&cv)[2][2], const bool (&rv)[2],
                                               const exec_u32 (&rbase)[2], uint2 range, exec_u32 g, exec_u32 t,
                                               exec_u32 lane, const exec_u8* __restrict__ esc,
                                               const uint2* __restrict__ pent, Use use, uint2 given = make_uint2(0u, 0u)) {
    // the item's entries (warp-uniform range); the first is loaded before the decode
    const uint2 first = GIVEN ? given : (PROBE != 1 && range.x != range.y ? __ldg(pent + range.x) : make_uint2(0u, 0u));
    // a dense item (exec_derived.cu): one entry per row, its escape offset at the item
    const bool dense = PROBE != 1 && range.x != range.y && (first.x & EXEC_PLIST_DENSE) != 0u;
    const bool listed = PROBE != 1 && range.x != range.y && !dense;
    exec_u32 eoff[2][2] = {{0u, 0u}, {0u, 0u}};  // E <= 2^32 - 1 (spec 20.2)
    if (dense) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const exec_u32 n0 = exec_count15(cv[h][0].x) + exec_count15(cv[h][0].y);
            const exec_u32 n1 = exec_count15(cv[h][1].x) + exec_count15(cv[h][1].y);
            exec_u32 item_rel = 0u;
            // the row's escape offset at the item: exec_tc_esc_offset reads lane t = 0's only
            const exec_u32 tr = rv[h] && t == 0u ? __ldg(pent + range.x + 8 * h + g).y : 0u;
            if (MAP == EXEC_TC_SPAN) {
                eoff[h][0] = exec_tc_esc_offset(n0 + n1, t, tr, item_rel);
                eoff[h][1] = eoff[h][0] + n0;
            } else {  // every thread's chunk 0, then every thread's chunk 1
                eoff[h][0] = exec_tc_esc_offset(n0, t, tr, item_rel);
                eoff[h][1] = exec_tc_esc_offset(n1, t, tr, item_rel);
            }
        }
    }
#pragma unroll
    for (int j = 0; j < 2; ++j) {
        exec_u32 w[2][8];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            if (PROBE == 1) {
                const uint4 a = sv[h][j];
                const uint2 c = cv[h][j];
                const exec_u32 raw[8] = {a.x, a.y, a.z, a.w, c.x, c.y, a.x ^ c.y, a.w ^ c.x};
#pragma unroll
                for (int p = 0; p < 8; ++p) w[h][p] = raw[p];
            } else {
                exec_pairs16_fast(cv[h][j], sv[h][j], exec_b2(rbase[h]), w[h]);
                if (dense && !exec_plain16(cv[h][j]))
                    exec_patch_pairs(cv[h][j], sv[h][j], rbase[h], esc, eoff[h][j], w[h]);
            }
        }
        if (listed) {
            // entry pos = r << 6 | q: row r = 8 h + g, pair q = exec_tc_pair<MAP>(t, j, p)
#pragma unroll 1
            for (exec_u32 e = range.x; e < range.y; ++e) {
                const uint2 en = e == range.x ? first : __ldg(pent + e);
                const exec_u32 r = en.x >> 6, q = en.x & 63u;
                const exec_u32 qj = MAP == EXEC_TC_SPAN ? (q >> 3) & 1u : q >> 5;
                const exec_u32 qt = MAP == EXEC_TC_SPAN ? q >> 4 : (q >> 3) & 3u;
                // one bit per word of w (h * 8 + p), set in the owner lane only: a
                // select per word keeps w in registers (an indexed store would not)
                const exec_u32 mine = qj == (exec_u32)j && ((r & 7u) << 2 | qt) == lane ? 1u << ((r >> 3) * 8u + (q & 7u)) : 0u;
#pragma unroll
                for (int h = 0; h < 2; ++h)
#pragma unroll
                    for (int p = 0; p < 8; ++p) w[h][p] = (mine >> (h * 8 + p)) & 1u ? en.y : w[h][p];
            }
        }
        use((exec_u32)j, w);
    }
}

// One staged item of a warp (16 rows x 128 columns at stage sd, EXEC_TC_SPAN): lane (g, t) reads
// rows g and g + 8, columns kc .. kc + 31 (kc = the item's column + 32 t) and the item's patch-list
// range from the stage, then exec_tc_decode.
template <int PROBE, class Use>
__device__ __forceinline__ void exec_tc_item(const exec_u8* sd, const bool (&rv)[2], const exec_u32 (&rbase)[2], exec_u32 kc,
                                             exec_u32 K16, exec_u32 g, exec_u32 t, exec_u32 lane,
                                             const exec_u8* __restrict__ esc, const uint2* __restrict__ pent, Use use) {
    uint4 sv[2][2];
    uint2 cv[2][2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const exec_u32 row = 8 * h + g;
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            sv[h][j] = make_uint4(0u, 0u, 0u, 0u);
            cv[h][j] = make_uint2(0x11111111u, 0x11111111u);  // no weight: code 1, sm 0, x 0
            if (rv[h] && kc + 16u * j < K16) {
                sv[h][j] = *reinterpret_cast<const uint4*>(sd + row * 128 + 32 * t + 16 * j);
                cv[h][j] = *reinterpret_cast<const uint2*>(sd + EXEC_TC_CODES + row * 64 + 16 * t + 8 * j);
            }
        }
    }
    const uint2 range = *reinterpret_cast<const uint2*>(sd + EXEC_TC_ESC);
    exec_tc_decode<PROBE, EXEC_TC_SPAN>(sv, cv, rv, rbase, range, g, t, lane, esc, pent, use);
}
