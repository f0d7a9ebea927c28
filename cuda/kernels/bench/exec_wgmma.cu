// Bench only: the bounded batched matvec (spec 19, 20.15) with warpgroup MMA (wgmma, sm_90a),
// `ExecMatvecKernel::BoundedWgmma`. Compiled after the production sources, on its own for sm_90a
// (`Gpu` loads it on first use, bench builds only); its ceiling without decode is
// bench/exec_wgmma_probe.cu's.
//
// A CTA of WG warpgroups takes WG x 64 rows (warp w of warpgroup v: row group (panel x WG + v) x 4
// + w, 16 rows) and one of `splits` ranges of item columns (128 columns each). It stages the
// range's activations once in shared memory as wgmma's B operand (no swizzle, K-major core
// matrices of 8 columns x 8 k), in the k order of the strip kernel's decode (exec_tensor.cu,
// EXEC_TC_INTERLEAVE: k-step q of chunk j pairs the thread's columns 64 j + 16 t + 4 q + {0, 1}
// with k = 2 t + {0, 1} and + {2, 3} with k = 2 t + 8 + {0, 1}; spec 19 lets the k order inside
// an instruction be any, A and B alike). Then each warp loads its item's words straight into
// registers, decodes them with exec_tc_decode (patch list included) into 8 A fragments and the
// warpgroup issues 8 wgmma m64nNk16 (A from registers, B from shared memory); the next item's
// words are requested before this item's wgmma are waited for. The ranges' f32 partial sums are
// added in split order by exec_tensor_panel_sum, as the strip kernel's.

__device__ __forceinline__ exec_u64 exec_wg_desc(exec_u32 saddr, exec_u32 sbo) {
    // start address, LBO (the next core matrix in K: 128 bytes), SBO (the next 8 columns), in 16 B
    return (exec_u64)((saddr >> 4) & 0x3fffu) | ((exec_u64)(128u >> 4) << 16) | ((exec_u64)((sbo >> 4) & 0x3fffu) << 32);
}

#define EXEC_WG_O4(d, i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])

template <int NT>
__device__ __forceinline__ void exec_wg_mma(float (&d)[NT * 4], const exec_u32 (&a)[4], exec_u64 desc);

template <>
__device__ __forceinline__ void exec_wg_mma<2>(float (&d)[8], const exec_u32 (&a)[4], exec_u64 desc) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, %12, 1, 1, 1, 0;"
                 : EXEC_WG_O4(d, 0), EXEC_WG_O4(d, 4)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
}

template <>
__device__ __forceinline__ void exec_wg_mma<4>(float (&d)[16], const exec_u32 (&a)[4], exec_u64 desc) {
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, "
        "%14, %15}, {%16, %17, %18, %19}, %20, 1, 1, 1, 0;"
        : EXEC_WG_O4(d, 0), EXEC_WG_O4(d, 4), EXEC_WG_O4(d, 8), EXEC_WG_O4(d, 12)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
}

template <>
__device__ __forceinline__ void exec_wg_mma<8>(float (&d)[32], const exec_u32 (&a)[4], exec_u64 desc) {
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, "
        "%14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, "
        "%36, 1, 1, 1, 0;"
        : EXEC_WG_O4(d, 0), EXEC_WG_O4(d, 4), EXEC_WG_O4(d, 8), EXEC_WG_O4(d, 12), EXEC_WG_O4(d, 16), EXEC_WG_O4(d, 20),
          EXEC_WG_O4(d, 24), EXEC_WG_O4(d, 28)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
}

// The words of one item of a warp: rows g and g + 8, chunks j (exec_tensor_strip.cu's loads).
struct ExecWgWords {
    uint4 sv[2][2];
    uint2 cv[2][2];
};

__device__ __forceinline__ void exec_wg_load(ExecWgWords& w, const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes,
                                             exec_u64 gr, exec_u32 M, exec_u32 K16, exec_u32 c0, exec_u32 g, exec_u32 t,
                                             const bool (&rv)[2]) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const exec_u64 m = gr * 16 + 8 * h + g;
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            const exec_u32 kc = c0 + 64u * j + 16u * t;
            w.sv[h][j] = make_uint4(0u, 0u, 0u, 0u);
            w.cv[h][j] = make_uint2(0x11111111u, 0x11111111u);  // no weight: code 1, sm 0
            if (rv[h] && kc < K16) {
                w.sv[h][j] = exec_ldg_nc16(sm + m * K16 + kc);
                w.cv[h][j] = exec_ldg_nc8(codes + m * (K16 >> 1) + (kc >> 1));
            }
        }
    }
}

template <int NT, int WG>
__device__ __forceinline__ void exec_wg_body(EXEC_MATVEC_PARAMS(exec_u16), const exec_u32* __restrict__ poff,
                                             const uint2* __restrict__ pent, float* __restrict__ part, exec_u32 splits) {
    extern __shared__ __align__(128) exec_u8 exec_wg_xs[];
    const exec_u32 K16 = (K + 15u) & ~15u, CB = (K + 511u) >> 9, nitg = EXEC_ITEM_COLUMNS(K16, CB);
    const exec_u32 panel = blockIdx.x / splits, split = blockIdx.x % splits;
    const exec_u32 per = (nitg + splits - 1) / splits, i0 = split * per, i1 = min(nitg, i0 + per);
    const exec_u32 N = NT * 8, kb = per * 16;  // k8 blocks of the staged range
    const exec_u32 lane = threadIdx.x & 31u, warp = (threadIdx.x >> 5) & 3u, wg = threadIdx.x >> 7;
    const exec_u32 g = lane >> 2, t = lane & 3u;
    const exec_u64 gr = ((exec_u64)panel * WG + wg) * 4 + warp;
    const exec_u64 groups = (M + 15u) / 16u;
    bool rv[2];
    exec_u32 rbase[2];
    exec_tc_row_bases(base, gr, M, g, rv, rbase);
    ExecWgWords next;
    if (i0 < i1) exec_wg_load(next, sm, codes, gr, M, K16, i0 * 128u, g, t, rv);
    // The range's activations: task (n, item, chunk j) loads the 64 columns c0 + 64 j .. of
    // column n (thread-chunk t: 2 x 8) and writes the 8 core-matrix rows of k-steps (j, q), half
    // e: row n % 8 of core matrix (n / 8, ((item x 8) + 4 j + q) x 2 + e) = words 2 q + e of the 4
    // thread-chunks.
    const exec_u32 nitems = i1 > i0 ? i1 - i0 : 0u;
    for (exec_u32 task = threadIdx.x; task < N * nitems * 2u; task += blockDim.x) {
        const exec_u32 n = task / (nitems * 2u), il = (task / 2u) % nitems, j = task & 1u;
        const exec_u32 c0 = (i0 + il) * 128u + 64u * j;
        exec_u32 c[4][8];
#pragma unroll
        for (int tt = 0; tt < 4; ++tt)
#pragma unroll
            for (int u = 0; u < 2; ++u) {
                const exec_u32 kc = c0 + 16u * tt + 8u * u;
                uint4 v = make_uint4(0u, 0u, 0u, 0u);
                if (n < ncols && kc < K16) v = __ldg(reinterpret_cast<const uint4*>(x + (exec_u64)n * ldx + kc));
                c[tt][4 * u] = v.x;
                c[tt][4 * u + 1] = v.y;
                c[tt][4 * u + 2] = v.z;
                c[tt][4 * u + 3] = v.w;
            }
#pragma unroll
        for (int q = 0; q < 4; ++q)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const exec_u32 blk = (il * 8u + 4u * j + q) * 2u + e;
                *reinterpret_cast<uint4*>(exec_wg_xs + ((n >> 3) * kb + blk) * 128u + (n & 7u) * 16u) =
                    make_uint4(c[0][2 * q + e], c[1][2 * q + e], c[2][2 * q + e], c[3][2 * q + e]);
            }
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    const exec_u32 xs0 = exec_sa(exec_wg_xs);
    const exec_u32* prow = poff + gr * CB * 4;  // the row group's item offsets
    float d[NT * 4];
#pragma unroll
    for (int i = 0; i < NT * 4; ++i) d[i] = 0.0f;
    for (exec_u32 it = i0; it < i1; ++it) {
        const ExecWgWords cur = next;
        if (it + 1u < i1) exec_wg_load(next, sm, codes, gr, M, K16, (it + 1u) * 128u, g, t, rv);
        const uint2 range = gr < groups ? make_uint2(__ldg(prow + it), __ldg(prow + it + 1)) : make_uint2(0u, 0u);
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");  // the last item's A is free
        exec_u32 a[8][4];
        exec_tc_decode<0, EXEC_TC_INTERLEAVE>(cur.sv, cur.cv, rv, rbase, range, g, t, lane, esc, pent,
                                              [&](exec_u32 j, const exec_u32 (&w)[2][8]) {
#pragma unroll
                                                  for (int q = 0; q < 4; ++q) {
                                                      a[4 * j + q][0] = w[0][2 * q];
                                                      a[4 * j + q][1] = w[1][2 * q];
                                                      a[4 * j + q][2] = w[0][2 * q + 1];
                                                      a[4 * j + q][3] = w[1][2 * q + 1];
                                                  }
                                              });
        exec_u64 desc[8];
#pragma unroll
        for (int b = 0; b < 8; ++b) desc[b] = exec_wg_desc(xs0 + ((it - i0) * 16u + 2u * b) * 128u, kb * 128u);
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int b = 0; b < 8; ++b) exec_wg_mma<NT>(d, a[b], desc[b]);
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    // d[4 j + h]: row g + 8 (h >> 1) of the warp's 16, column 8 j + 2 t + (h & 1)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int h = 0; h < 4; ++h) {
            const exec_u64 m = gr * 16 + g + 8 * (h >> 1);
            const exec_u32 n = 8u * j + 2u * t + (h & 1);
            if (m >= M || n >= ncols) continue;
            float sum = d[4 * j + h];
            if (splits > 1) {
                part[((exec_u64)split * ncols + n) * M + m] = sum;
                continue;
            }
            exec_output(sum, m, n, ldy, bias, y, out_bf16);
        }
}

// The argument list of EXEC_TCS (exec_tensor_strip.cu); grid = panels x splits.
#define EXEC_WG(NT, WG)                                                                                               \
    extern "C" __global__ void __launch_bounds__(128 * WG, 1)                                                       \
        bench_exec_wgmma_n##NT##_wg##WG(EXEC_MATVEC_PARAMS(exec_u16), const exec_u32* __restrict__ poff,             \
                                        const uint2* __restrict__ pent, float* __restrict__ part, exec_u32 splits) { \
        exec_wg_body<NT, WG>(sm, codes, base, esc_start, esc, M, K, x, ldx, ncols, bias, y, ldy, out_bf16, poff, pent, \
                             part, splits);                                                                          \
    }

EXEC_WG(2, 2)
EXEC_WG(4, 2)
EXEC_WG(8, 2)
EXEC_WG(2, 4)
EXEC_WG(4, 4)
EXEC_WG(8, 4)
