// Execution layout: encode from BF16 on the GPU (spec 20.12, the canonical encoding:
// per-row canonical base, sm and code planes, per-tile escape counts, their prefix sum, escapes).
// Transcode from format 10 = the format-10 dequant kernel (BF16 out) + these kernels.
//
// Launch order (one stream):
//   1. exec_enc_stats   grid ceil(M / 8), 256 threads: base[m], esc_start[t + 1] = escapes of tile t
//   2. exec_enc_scan_a  grid ceil(T / 1024), 256 threads: per-block sums of esc_start[1..T]
//      exec_enc_scan_b  grid 1, 1024 threads: exclusive prefix of the block sums, total, overflow
//      exec_enc_scan_c  grid ceil(T / 1024), 256 threads: esc_start[1..T] inclusive prefix
//   3. exec_enc_emit    grid ceil(T / 8), 256 threads: sm, codes, esc bytes
// esc_start[0] must be 0 (the host clears it); scratch holds ceil(T / 1024) + 1 u64 (the last is
// the total E; the host rejects E > 2^32 - 1 before reading the escapes: exec-layout.md).
// Input: BF16 words, row m at w + m * ldw (ldw >= K).

__device__ __forceinline__ exec_u32 exec_enc_code(exec_u32 e, exec_u32 b) {
    if (e == 0u) return 0u;
    if (e >= b && e <= b + 13u) return e - b + 1u;
    return 15u;
}

extern "C" __global__ void __launch_bounds__(256)
    exec_enc_stats(const exec_u16* __restrict__ w, exec_u64 ldw, exec_u32 M, exec_u32 K,
                   exec_u8* __restrict__ base, exec_u32* __restrict__ esc_start) {
    __shared__ exec_u32 hist[8][256];
    const exec_u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const exec_u64 m = (exec_u64)blockIdx.x * 8u + warp;
    if (m >= M) return;  // warp-uniform; no CTA barrier below
    exec_u32* h = hist[warp];
#pragma unroll
    for (int i = 0; i < 8; ++i) h[lane + 32 * i] = 0u;
    __syncwarp();
    const exec_u16* row = w + m * ldw;
    for (exec_u32 k0 = 0; k0 < K; k0 += 32u) {
        const exec_u32 k = k0 + lane;
        const exec_u32 e = k < K ? ((exec_u32)row[k] >> 7) & 0xffu : 0x100u;
        const exec_u32 peers = __match_any_sync(EXEC_FULL, e);
        if (e < 0x100u && lane == (exec_u32)(__ffs(peers) - 1)) atomicAdd(&h[e], (exec_u32)__popc(peers));
    }
    __syncwarp();
    // canonical base: the smallest b in [1, 242] maximizing the count of exponents in [b, b + 13]
    exec_u64 best = 0;
    for (exec_u32 b = lane + 1u; b <= 242u; b += 32u) {
        exec_u64 cnt = 0;
#pragma unroll
        for (int i = 0; i < 14; ++i) cnt += h[b + i];
        const exec_u64 key = (cnt << 8) | (255u - b);
        best = key > best ? key : best;
    }
#pragma unroll
    for (int o = 16; o; o >>= 1) {
        const exec_u64 v = __shfl_xor_sync(EXEC_FULL, best, o);
        best = v > best ? v : best;
    }
    const exec_u32 b = 255u - (exec_u32)(best & 255u);
    if (lane == 0) base[m] = (exec_u8)b;
    const exec_u32 CB = (K + 511u) >> 9;
    for (exec_u32 cb = 0; cb < CB; ++cb) {
        exec_u32 n = 0;
#pragma unroll
        for (int i = 0; i < 16; ++i) {
            const exec_u32 k = cb * 512u + 32u * i + lane;
            if (k < K) n += exec_enc_code(((exec_u32)row[k] >> 7) & 0xffu, b) == 15u;
        }
#pragma unroll
        for (int o = 16; o; o >>= 1) n += __shfl_xor_sync(EXEC_FULL, n, o);
        if (lane == 0) esc_start[m * CB + cb + 1] = n;
    }
}

extern "C" __global__ void __launch_bounds__(256)
    exec_enc_scan_a(const exec_u32* __restrict__ esc_start, exec_u64 T, exec_u64* __restrict__ scratch) {
    __shared__ exec_u64 part[8];
    exec_u64 sum = 0;
    const exec_u64 i0 = (exec_u64)blockIdx.x * 1024u + threadIdx.x * 4u;
#pragma unroll
    for (int j = 0; j < 4; ++j)
        if (i0 + j < T) sum += esc_start[1 + i0 + j];
#pragma unroll
    for (int o = 16; o; o >>= 1) sum += __shfl_xor_sync(EXEC_FULL, sum, o);
    if ((threadIdx.x & 31u) == 0) part[threadIdx.x >> 5] = sum;
    __syncthreads();
    if (threadIdx.x == 0) {
        exec_u64 t = 0;
        for (int i = 0; i < 8; ++i) t += part[i];
        scratch[blockIdx.x] = t;
    }
}

// Exclusive prefix of scratch[0..nb) in place; scratch[nb] = total.
extern "C" __global__ void __launch_bounds__(1024) exec_enc_scan_b(exec_u64* __restrict__ scratch, exec_u64 nb) {
    __shared__ exec_u64 tot[1024];
    const exec_u64 per = (nb + 1023u) / 1024u;
    const exec_u64 a = threadIdx.x * per;
    exec_u64 s = 0;
    for (exec_u64 i = a; i < a + per && i < nb; ++i) s += scratch[i];
    tot[threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        exec_u64 run = 0;
        for (int i = 0; i < 1024; ++i) {
            const exec_u64 v = tot[i];
            tot[i] = run;
            run += v;
        }
        scratch[nb] = run;
    }
    __syncthreads();
    exec_u64 run = tot[threadIdx.x];
    for (exec_u64 i = a; i < a + per && i < nb; ++i) {
        const exec_u64 v = scratch[i];
        scratch[i] = run;
        run += v;
    }
}

extern "C" __global__ void __launch_bounds__(256)
    exec_enc_scan_c(exec_u32* __restrict__ esc_start, exec_u64 T, const exec_u64* __restrict__ scratch) {
    __shared__ exec_u64 part[8];
    const exec_u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const exec_u64 i0 = (exec_u64)blockIdx.x * 1024u + threadIdx.x * 4u;
    exec_u64 v[4];
    exec_u64 sum = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        v[j] = i0 + j < T ? esc_start[1 + i0 + j] : 0u;
        sum += v[j];
    }
    exec_u64 incl = sum;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const exec_u64 t = __shfl_up_sync(EXEC_FULL, incl, o);
        if (lane >= (exec_u32)o) incl += t;
    }
    if (lane == 31u) part[warp] = incl;
    __syncthreads();
    exec_u64 run = scratch[blockIdx.x] + incl - sum;
    for (exec_u32 i = 0; i < warp; ++i) run += part[i];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        run += v[j];
        if (i0 + j < T) esc_start[1 + i0 + j] = (exec_u32)run;  // E > 2^32 - 1 is rejected by the host
    }
}

extern "C" __global__ void __launch_bounds__(256)
    exec_enc_emit(const exec_u16* __restrict__ w, exec_u64 ldw, exec_u32 M, exec_u32 K,
                  const exec_u8* __restrict__ base, const exec_u32* __restrict__ esc_start,
                  exec_u8* __restrict__ sm, exec_u8* __restrict__ codes, exec_u8* __restrict__ esc) {
    const exec_u32 K16 = (K + 15u) & ~15u;
    const exec_u32 CB = (K + 511u) >> 9;
    const exec_u32 lane = threadIdx.x & 31u;
    const exec_u64 t = ((exec_u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (t >= (exec_u64)M * CB) return;  // warp-uniform
    const exec_u64 m = t / CB;
    const exec_u32 cb = (exec_u32)(t - m * CB);
    const exec_u32 k0 = cb * 512u + lane * 16u;
    const exec_u32 b = base[m];
    exec_u32 hw[8];
    const exec_u16* src = w + m * ldw + k0;
    if (k0 + 16u <= K && (ldw & 7u) == 0u) {
        const uint4 a = __ldg(reinterpret_cast<const uint4*>(src));
        const uint4 c = __ldg(reinterpret_cast<const uint4*>(src) + 1);
        hw[0] = a.x; hw[1] = a.y; hw[2] = a.z; hw[3] = a.w;
        hw[4] = c.x; hw[5] = c.y; hw[6] = c.z; hw[7] = c.w;
    } else {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const exec_u32 lo = k0 + 2u * j < K ? (exec_u32)src[2 * j] : 0u;
            const exec_u32 hi = k0 + 2u * j + 1u < K ? (exec_u32)src[2 * j + 1] : 0u;
            hw[j] = lo | (hi << 16);
        }
    }
    exec_u32 sb[4] = {0u, 0u, 0u, 0u}, cw[2] = {0u, 0u}, ebytes[16], n = 0;
#pragma unroll
    for (int j = 0; j < 16; ++j) {
        const exec_u32 h = (hw[j >> 1] >> (16 * (j & 1))) & 0xffffu;
        const exec_u32 e = (h >> 7) & 0xffu;
        const exec_u32 code = exec_enc_code(e, b);
        sb[j >> 2] |= (((h >> 8) & 0x80u) | (h & 0x7fu)) << (8 * (j & 3));
        cw[j >> 3] |= code << (4 * (j & 7));
        ebytes[j] = e;
        n += code == 15u;
    }
    if (k0 < K16) {
        *reinterpret_cast<uint4*>(sm + m * K16 + k0) = make_uint4(sb[0], sb[1], sb[2], sb[3]);
        *reinterpret_cast<uint2*>(codes + m * (K16 >> 1) + (k0 >> 1)) = make_uint2(cw[0], cw[1]);
    }
    if (__any_sync(EXEC_FULL, n != 0u)) {
        exec_u64 off = (exec_u64)esc_start[t] + exec_warp_excl(n, lane);
#pragma unroll
        for (int j = 0; j < 16; ++j)
            if (((cw[j >> 3] >> (4 * (j & 7))) & 15u) == 15u) esc[off++] = (exec_u8)ebytes[j];
    }
}
