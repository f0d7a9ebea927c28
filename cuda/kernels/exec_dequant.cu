// Execution layout: dequant and gather (spec 20.14), bit-identical BF16 words, rows of stride
// ldo >= K16 (pad columns 0). The item stream of exec_matvec.cu without x: (4 rows, tile) items
// through a D-stage cp.async pipeline, G warps per row group splitting the tiles, 16-byte
// streaming stores. Gather passes the list of rows (each < M, checked by the host).

// ---- dequant / gather, version 3: the same stream of (4-row group, tile) items, G warps per row
// group splitting the tiles (no reduction), output rows written with 16-byte streaming stores ----
template <int D>
__device__ __forceinline__ void exec_dq3_body(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes,
                                              const exec_u8* __restrict__ base, const exec_u32* __restrict__ esc_start,
                                              const exec_u8* __restrict__ esc, exec_u32 K,
                                              const exec_u32* __restrict__ rows, exec_u32 nrows,
                                              exec_u16* __restrict__ out, exec_u64 ldo, exec_u32 G) {
    constexpr int R = EXEC3_R;
    static_assert((D & (D - 1)) == 0, "stage index uses & (D - 1)");
    extern __shared__ __align__(16) exec_u8 exec_stage[];
    const exec_u32 K16 = (K + 15u) & ~15u;
    const exec_u32 CB = (K + 511u) >> 9;
    const exec_u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const exec_u32 q = warp % G, grp = warp / G, ngrp = nwarps / G;
    const exec_u64 gi = (exec_u64)blockIdx.x * ngrp + grp, GG = (exec_u64)gridDim.x * ngrp;
    const exec_u64 nrg = ((exec_u64)nrows + R - 1) / R;
    if (gi >= nrg) return;
    const exec_u32 lo = (exec_u32)((exec_u64)q * CB / G), hi = (exec_u32)((exec_u64)(q + 1) * CB / G);
    const exec_u64 nitems = ((nrg - gi + GG - 1) / GG) * (hi - lo);
    const exec_u32 st = exec_sa(exec_stage) + warp * (D * EXEC3_STAGE);

    exec_u64 irg = gi, issued = 0;
    exec_u32 icb = lo, ivalid = 0;
    exec_u64 srow[R];
    auto rowgroup = [&]() {
        const exec_u64 i0 = irg * R;
        ivalid = i0 < nrows ? (exec_u32)min((exec_u64)R, (exec_u64)nrows - i0) : 0u;
#pragma unroll
        for (int r = 0; r < R; ++r) srow[r] = (exec_u32)r < ivalid ? (rows ? (exec_u64)rows[i0 + r] : i0 + r) : 0u;
    };
    rowgroup();
    auto issue = [&]() {
        if (issued < nitems) {
            const exec_u32 sd = st + (exec_u32)(issued & (D - 1)) * EXEC3_STAGE;
            const exec_u32 k0 = icb * 512u + lane * 16u;
            if (k0 < K16) {
#pragma unroll
                for (int r = 0; r < R; ++r)
                    if ((exec_u32)r < ivalid) {
                        exec_cp16(sd + r * 512 + lane * 16, sm + srow[r] * K16 + k0);
                        exec_cp8(sd + R * 512 + r * 256 + lane * 8, codes + srow[r] * (K16 >> 1) + (k0 >> 1));
                    }
            }
            if (lane < ivalid) {
                exec_u64 myrow = srow[0];
#pragma unroll
                for (int r = 1; r < R; ++r)
                    if (lane == (exec_u32)r) myrow = srow[r];
                exec_cp4(sd + R * 768 + lane * 4, esc_start + myrow * CB + icb);
                exec_cp4(sd + R * 768 + 16 + lane * 4, base + (myrow & ~3ull));
            }
            if (++icb == hi) {
                icb = lo;
                irg += GG;
                rowgroup();
            }
        }
        ++issued;
        exec_cp_commit();
    };
#pragma unroll
    for (int d = 0; d < D - 1; ++d) issue();

    exec_u64 rg = gi;
    exec_u32 cb = lo;
    for (exec_u64 j = 0; j < nitems; ++j) {
        issue();
        const exec_u32 k0 = cb * 512u + lane * 16u;
        const bool active = k0 < K16;
        const exec_u64 i0 = rg * R;
        const exec_u32 valid = i0 < nrows ? (exec_u32)min((exec_u64)R, (exec_u64)nrows - i0) : 0u;
        exec_cp_wait<D - 1>();
        const exec_u8* sd = exec_stage + (exec_u64)warp * (D * EXEC3_STAGE) + (j & (D - 1)) * EXEC3_STAGE;
        exec_u32 e0 = 0u, bw = 0u;
        if (lane < valid) {
            e0 = *reinterpret_cast<const exec_u32*>(sd + R * 768 + lane * 4);
            exec_u64 myrow = rows ? (exec_u64)rows[i0 + lane] : i0 + lane;
            bw = (*reinterpret_cast<const exec_u32*>(sd + R * 768 + 16 + lane * 4) >> (8 * (exec_u32)(myrow & 3ull))) & 0xffu;
        }
#pragma unroll
        for (int r = 0; r < R; ++r) {
            if ((exec_u32)r >= valid) break;  // warp-uniform
            uint4 s = make_uint4(0u, 0u, 0u, 0u);
            uint2 c = make_uint2(0x11111111u, 0x11111111u);
            if (active) {
                s = *reinterpret_cast<const uint4*>(sd + r * 512 + lane * 16);
                c = *reinterpret_cast<const uint2*>(sd + R * 512 + r * 256 + lane * 8);
            }
            const exec_u32 rb = __shfl_sync(EXEC_FULL, bw, r);
            exec_u32 w[8];
            exec_decode_lane_with(c, s, rb, lane, [&]() { return __shfl_sync(EXEC_FULL, e0, r); }, esc, w);
            if (active) {
                uint4* o = reinterpret_cast<uint4*>(out + (i0 + r) * ldo + k0);
                __stcs(o, make_uint4(w[0], w[1], w[2], w[3]));
                __stcs(o + 1, make_uint4(w[4], w[5], w[6], w[7]));
            }
        }
        if (++cb == hi) {
            cb = lo;
            rg += GG;
        }
    }
    exec_cp_wait<0>();
}

#define EXEC_DQ3(NAME, D, THREADS)                                                                         \
    extern "C" __global__ void __launch_bounds__(THREADS, 1)                                              \
        NAME(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes, const exec_u8* __restrict__ base, \
             const exec_u32* __restrict__ esc_start, const exec_u8* __restrict__ esc, exec_u32 K,            \
             const exec_u32* __restrict__ rows, exec_u32 nrows, exec_u16* __restrict__ out, exec_u64 ldo,    \
             exec_u32 G) {                                                                                \
        exec_dq3_body<D>(sm, codes, base, esc_start, esc, K, rows, nrows, out, ldo, G);                     \
    }

EXEC_DQ3(exec_dequant_d4, 4, 512)

// ---- the "rows" dequant (version 1): a warp loads two (row, tile) items, then decodes and stores
// them; short-lived warps. Kept as a production choice (ExecDequantKernel::Rows). ----
template <int U, bool STREAM>
__device__ __forceinline__ void exec_dequant_body(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes,
                                                  const exec_u8* __restrict__ base,
                                                  const exec_u32* __restrict__ esc_start,
                                                  const exec_u8* __restrict__ esc, exec_u32 K,
                                                  const exec_u32* __restrict__ rows, exec_u32 nrows,
                                                  exec_u16* __restrict__ out, exec_u64 ldo) {
    const exec_u32 K16 = (K + 15u) & ~15u;
    const exec_u32 CB = (K + 511u) >> 9;
    const exec_u32 lane = threadIdx.x & 31u;
    const exec_u64 items = (exec_u64)nrows * CB;
    const exec_u64 warp_id = ((exec_u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const exec_u64 first = warp_id * U;
    if (first >= items) return;  // warp-uniform

    uint4 s[U];
    uint2 c[U];
    exec_u32 b[U], e0[U];  // e0: the tile's escape offset, loaded with the batch (one dependent load less)
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const exec_u64 it = first + u;
        const exec_u64 i = it / CB;
        const exec_u32 cb = (exec_u32)(it - i * CB);
        const exec_u32 k0 = cb * 512u + lane * 16u;
        s[u] = make_uint4(0u, 0u, 0u, 0u);
        c[u] = make_uint2(0x11111111u, 0x11111111u);
        b[u] = 1u;
        e0[u] = 0u;
        if (it < items) {
            const exec_u64 row = rows ? (exec_u64)rows[i] : i;
            b[u] = base[row];
            e0[u] = __ldg(esc_start + row * CB + cb);
            if (k0 < K16) {
                s[u] = __ldg(reinterpret_cast<const uint4*>(sm + row * K16 + k0));
                c[u] = __ldg(reinterpret_cast<const uint2*>(codes + row * (K16 >> 1) + (k0 >> 1)));
            }
        }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const exec_u64 it = first + u;
        if (it >= items) break;  // warp-uniform
        const exec_u64 i = it / CB;
        const exec_u32 cb = (exec_u32)(it - i * CB);
        const exec_u32 k0 = cb * 512u + lane * 16u;
        exec_u32 w[8];
        exec_decode_lane_s(c[u], s[u], b[u], lane, e0[u], esc, w);
        if (k0 < K16) {
            uint4* o = reinterpret_cast<uint4*>(out + i * ldo + k0);
            const uint4 lo = make_uint4(w[0], w[1], w[2], w[3]);
            const uint4 hi = make_uint4(w[4], w[5], w[6], w[7]);
            if (STREAM) {
                __stcs(o, lo);
                __stcs(o + 1, hi);
            } else {
                o[0] = lo;
                o[1] = hi;
            }
        }
    }
}

#define EXEC_DEQUANT(NAME, U, STREAM)                                                                     \
    extern "C" __global__ void __launch_bounds__(256)                                                    \
        NAME(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes, const exec_u8* __restrict__ base, \
             const exec_u32* __restrict__ esc_start, const exec_u8* __restrict__ esc, exec_u32 K,            \
             const exec_u32* __restrict__ rows, exec_u32 nrows, exec_u16* __restrict__ out, exec_u64 ldo) {  \
        exec_dequant_body<U, STREAM>(sm, codes, base, esc_start, esc, K, rows, nrows, out, ldo);            \
    }

EXEC_DEQUANT(exec_dequant_rows, 2, false)
