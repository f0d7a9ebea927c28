// Execution layout: batched matvec on tensor cores, bounded class (spec 19: any summation order,
// matrix-unit accumulation). mma.sync.m16n8k16, BF16 x BF16 -> f32.
//
// A = weights: a warp owns RG m-tiles of 16 rows (m0 + 16 rg + g and + 8 for lane 4 g + t).
// B = activations: NT n-tiles of 8 columns (column 8 nt + g for lane 4 g + t). The k order inside
// an instruction is free in the bounded class, so each thread feeds the 16 consecutive columns it
// loaded itself: in step s of tile cb, thread t holds columns k0 = 512 cb + 64 s + 16 t .. + 15 and
// the instruction's logical k 2t + {0,1} / 2t + 8 + {0,1} are its columns k0 + 4q + {0,1} / + {2,3}
// for k-step q, for A and B alike. Step s of a tile covers 64 consecutive columns per row, so the
// escape order inside the tile (row-major position order) is: earlier steps, then the quad's
// threads t = 0..3: a running count per row and a 4-lane prefix give each thread its offset.
//
// Warps of a CTA share the rows and split the tiles (cb = warp, warp + W, ...); their partial sums
// are added in warp order through shared memory (deterministic), then the bias; f32 or BF16 out.
// Activations: BF16 words (spec 19.2 domain), column n at x + n * ldx, zero-padded to K16,
// ldx a multiple of 8. Dynamic shared memory: W * RG * 16 * NT * 8 floats.

__device__ __forceinline__ void exec_mma16816(float (&d)[4], exec_u32 a0, exec_u32 a1, exec_u32 a2, exec_u32 a3,
                                              exec_u32 b0, exec_u32 b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

template <int RG, int NT>
__device__ __forceinline__ void exec_mma_body(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes,
                                              const exec_u8* __restrict__ base, const exec_u32* __restrict__ esc_start,
                                              const exec_u8* __restrict__ esc, exec_u32 M, exec_u32 K,
                                              const exec_u16* __restrict__ x, exec_u64 ldx, exec_u32 ncols,
                                              const float* __restrict__ bias, void* __restrict__ y, exec_u64 ldy,
                                              int out_bf16) {
    constexpr int ROWS = RG * 16, COLS = NT * 8;
    extern __shared__ float exec_red[];
    const exec_u32 K16 = (K + 15u) & ~15u;
    const exec_u32 CB = (K + 511u) >> 9;
    const exec_u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const exec_u32 g = lane >> 2, t = lane & 3u;
    const exec_u64 m0 = (exec_u64)blockIdx.x * ROWS;

    exec_u32 rbase[RG][2];
#pragma unroll
    for (int rg = 0; rg < RG; ++rg)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const exec_u64 m = m0 + 16 * rg + 8 * h + g;
            rbase[rg][h] = m < M ? (exec_u32)base[m] : 1u;
        }

    float acc[RG][NT][4];
#pragma unroll
    for (int rg = 0; rg < RG; ++rg)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int i = 0; i < 4; ++i) acc[rg][nt][i] = 0.0f;

    for (exec_u32 cb = warp; cb < CB; cb += nwarps) {
        exec_u32 rel[RG][2];  // escapes of this tile in earlier steps, per row (same in the quad)
#pragma unroll
        for (int rg = 0; rg < RG; ++rg) rel[rg][0] = rel[rg][1] = 0u;
        for (exec_u32 s = 0; s < 8u; ++s) {
            if (cb * 512u + 64u * s >= K16) break;  // warp-uniform
            const exec_u32 k0 = cb * 512u + 64u * s + 16u * t;
            uint4 sv[RG][2];
            uint2 cv[RG][2];
            bool plain = true;
#pragma unroll
            for (int rg = 0; rg < RG; ++rg)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const exec_u64 m = m0 + 16 * rg + 8 * h + g;
                    if (m < M && k0 < K16) {
                        sv[rg][h] = __ldg(reinterpret_cast<const uint4*>(sm + m * K16 + k0));
                        cv[rg][h] = exec_mask_pad(__ldg(reinterpret_cast<const uint2*>(codes + m * (K16 >> 1) + (k0 >> 1))), k0, K);
                    } else {
                        sv[rg][h] = make_uint4(0u, 0u, 0u, 0u);
                        cv[rg][h] = make_uint2(0x11111111u, 0x11111111u);
                    }
                    plain = plain && exec_plain16(cv[rg][h]);
                }
            exec_u32 w[RG][2][8];
            if (__all_sync(EXEC_FULL, plain)) {
#pragma unroll
                for (int rg = 0; rg < RG; ++rg)
#pragma unroll
                    for (int h = 0; h < 2; ++h) exec_pairs16_fast(cv[rg][h], sv[rg][h], exec_b2(rbase[rg][h]), w[rg][h]);
            } else {
#pragma unroll
                for (int rg = 0; rg < RG; ++rg)
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        const exec_u32 n = exec_count15(cv[rg][h].x) + exec_count15(cv[rg][h].y);
                        exec_u32 incl = n;
                        exec_u32 v = __shfl_up_sync(EXEC_FULL, incl, 1, 4);
                        if (t >= 1u) incl += v;
                        v = __shfl_up_sync(EXEC_FULL, incl, 2, 4);
                        if (t >= 2u) incl += v;
                        const exec_u32 total = __shfl_sync(EXEC_FULL, incl, 3, 4);
                        if (exec_plain16(cv[rg][h])) {
                            exec_pairs16_fast(cv[rg][h], sv[rg][h], exec_b2(rbase[rg][h]), w[rg][h]);
                        } else {
                            const exec_u64 m = m0 + 16 * rg + 8 * h + g;
                            const exec_u64 off = (exec_u64)esc_start[m * CB + cb] + rel[rg][h] + (incl - n);
                            exec_pairs16_general(cv[rg][h], sv[rg][h], rbase[rg][h], esc, off, w[rg][h]);
                        }
                        rel[rg][h] += total;
                    }
            }
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) {
                const exec_u32 n = nt * 8u + g;
                uint4 xa = make_uint4(0u, 0u, 0u, 0u), xb = xa;
                if (n < ncols && k0 < K16) {
                    const uint4* xp = reinterpret_cast<const uint4*>(x + (exec_u64)n * ldx + k0);
                    xa = __ldg(xp);
                    xb = __ldg(xp + 1);
                }
                const exec_u32 xv[8] = {xa.x, xa.y, xa.z, xa.w, xb.x, xb.y, xb.z, xb.w};
#pragma unroll
                for (int q = 0; q < 4; ++q)
#pragma unroll
                    for (int rg = 0; rg < RG; ++rg)
                        exec_mma16816(acc[rg][nt], w[rg][0][2 * q], w[rg][1][2 * q], w[rg][0][2 * q + 1],
                                      w[rg][1][2 * q + 1], xv[2 * q], xv[2 * q + 1]);
            }
        }
    }

    // acc[rg][nt]: {row g, col 2t}, {row g, col 2t + 1}, {row g + 8, col 2t}, {row g + 8, col 2t + 1}
    float* red = exec_red + (exec_u64)warp * ROWS * COLS;
#pragma unroll
    for (int rg = 0; rg < RG; ++rg)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const exec_u32 r = 16u * rg + g + 8u * (i >> 1);
                const exec_u32 col = 8u * nt + 2u * t + (i & 1);
                red[r * COLS + col] = acc[rg][nt][i];
            }
    __syncthreads();
    for (exec_u32 idx = threadIdx.x; idx < (exec_u32)(ROWS * COLS); idx += blockDim.x) {
        const exec_u32 r = idx / COLS, n = idx % COLS;
        const exec_u64 m = m0 + r;
        if (m >= M || n >= ncols) continue;
        float sum = 0.0f;
        for (exec_u32 wi = 0; wi < nwarps; ++wi) sum = __fadd_rn(sum, exec_red[(exec_u64)wi * ROWS * COLS + idx]);
        if (bias) sum = __fadd_rn(sum, bias[m]);
        if (out_bf16)
            reinterpret_cast<exec_u16*>(y)[n * ldy + m] = exec_bf16_rne(sum);
        else
            reinterpret_cast<float*>(y)[n * ldy + m] = sum;
    }
}

#define EXEC_MMA(NAME, RG, NT, MINB)                                                                        \
    extern "C" __global__ void __launch_bounds__(256, MINB)                                                 \
        NAME(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes, const exec_u8* __restrict__ base, \
             const exec_u32* __restrict__ esc_start, const exec_u8* __restrict__ esc, exec_u32 M, exec_u32 K,    \
             const exec_u16* __restrict__ x, exec_u64 ldx, exec_u32 ncols, const float* __restrict__ bias,       \
             void* __restrict__ y, exec_u64 ldy, int out_bf16) {                                                 \
        exec_mma_body<RG, NT>(sm, codes, base, esc_start, esc, M, K, x, ldx, ncols, bias, y, ldy, out_bf16);   \
    }

EXEC_MMA(exec_mma_r1n1, 1, 1, 1)
EXEC_MMA(exec_mma_r2n1, 2, 1, 1)
EXEC_MMA(exec_mma_r1n2, 1, 2, 1)
EXEC_MMA(exec_mma_r2n2, 2, 2, 1)
EXEC_MMA(exec_mma_r2n4, 2, 4, 1)
EXEC_MMA(exec_mma_r1n8, 1, 8, 1)
EXEC_MMA(exec_mma_r2n8, 2, 8, 1)
