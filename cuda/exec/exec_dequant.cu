// Execution layout: dequant and gather (bit-identical BF16 words).
//
// Output: row i of `out` (stride ldo words, ldo >= K16 and a multiple of 8) holds row rows[i]
// (gather) or row i (dequant, rows == nullptr) decoded over K16 columns; pad columns K..K16-1 are
// +0.0 (sm 0, code 0). A warp decodes one (output row, tile) item with the canonical lane mapping
// (so the escape order inside the tile is the warp's lane order) and writes each lane's 16 words
// with two 16-byte stores. U items per warp are loaded before the first is decoded.

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
    exec_u32 b[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const exec_u64 it = first + u;
        const exec_u64 i = it / CB;
        const exec_u32 cb = (exec_u32)(it - i * CB);
        const exec_u32 k0 = cb * 512u + lane * 16u;
        s[u] = make_uint4(0u, 0u, 0u, 0u);
        c[u] = make_uint2(0x11111111u, 0x11111111u);
        b[u] = 1u;
        if (it < items) {
            const exec_u64 row = rows ? (exec_u64)rows[i] : i;
            b[u] = base[row];
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
        const exec_u64 row = rows ? (exec_u64)rows[i] : i;
        exec_u32 w[8];
        exec_decode_lane(c[u], s[u], b[u], lane, esc_start, row * CB + cb, esc, w);
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

EXEC_DEQUANT(exec_dequant_u2, 2, false)
EXEC_DEQUANT(exec_dequant_u4, 4, false)
EXEC_DEQUANT(exec_dequant_u4s, 4, true)
EXEC_DEQUANT(exec_dequant_u8s, 8, true)
