// Bench only, a ceiling probe (not a matvec): what a warpgroup-MMA kernel (wgmma, sm_90a) could
// reach on the execution layout's batches, before any decode. Compiled on its own for sm_90a by
// nwc-gpu-bench (`--exec-wgmma-probe`, wgmma_probe.rs), never with the other kernels (sm_90).
//
// A CTA of WG warpgroups takes WG x 64 rows and one of S ranges of R columns (R a multiple of
// 128): it copies the range's activations (N columns, BF16) once into shared memory as wgmma's
// no-swizzle K-major B operand, then each warp streams its 16 rows x 128 columns per step straight
// into registers (per lane rows g and g + 8: 32 sm bytes and 16 code bytes each, the execution
// layout's bytes per weight) and, with the loaded words as the A fragments (no decode), issues 8
// wgmma m64nNk16 per step, A from registers, B from shared memory. The partial sums of each range
// go to part[s][n][m]; exec_wgmma_probe_sum adds the ranges in order into BF16. Two schedules
// (PIPE, below): the first call of session 20 timed PIPE = 0 alone.
// The weights' addresses assume rows of Kp bytes (Kp a multiple of 128) in `sm` and Kp / 2 in
// `codes`; the activations have Kp BF16 words per column.

typedef unsigned int wgp_u32;
typedef unsigned long long wgp_u64;

__device__ __forceinline__ uint4 wgp_ldg(const unsigned char* p) {
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}

// Shared-memory matrix descriptor (no swizzle): start address, the byte distance between core
// matrices adjacent in K (LBO) and in N (SBO), each in units of 16 bytes.
__device__ __forceinline__ wgp_u64 wgp_desc(wgp_u32 saddr, wgp_u32 lbo, wgp_u32 sbo) {
    return (wgp_u64)((saddr >> 4) & 0x3fffu) | ((wgp_u64)((lbo >> 4) & 0x3fffu) << 16) | ((wgp_u64)((sbo >> 4) & 0x3fffu) << 32);
}

#define WGP_D2 "{%0, %1, %2, %3, %4, %5, %6, %7}"
#define WGP_D4 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}"
#define WGP_D8                                                                                              \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, " \
    "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define WGP_O4(d, i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])

template <int NT>
__device__ __forceinline__ void wgp_mma(float (&d)[NT * 4], const wgp_u32 (&a)[4], wgp_u64 desc);

template <>
__device__ __forceinline__ void wgp_mma<2>(float (&d)[8], const wgp_u32 (&a)[4], wgp_u64 desc) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 " WGP_D2 ", {%8, %9, %10, %11}, %12, 1, 1, 1, 0;"
                 : WGP_O4(d, 0), WGP_O4(d, 4)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
}

template <>
__device__ __forceinline__ void wgp_mma<4>(float (&d)[16], const wgp_u32 (&a)[4], wgp_u64 desc) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 " WGP_D4 ", {%16, %17, %18, %19}, %20, 1, 1, 1, 0;"
                 : WGP_O4(d, 0), WGP_O4(d, 4), WGP_O4(d, 8), WGP_O4(d, 12)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
}

template <>
__device__ __forceinline__ void wgp_mma<8>(float (&d)[32], const wgp_u32 (&a)[4], wgp_u64 desc) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " WGP_D8 ", {%32, %33, %34, %35}, %36, 1, 1, 1, 0;"
                 : WGP_O4(d, 0), WGP_O4(d, 4), WGP_O4(d, 8), WGP_O4(d, 12), WGP_O4(d, 16), WGP_O4(d, 20), WGP_O4(d, 24),
                   WGP_O4(d, 28)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
}

// The 24 words a lane loads for one step (rows g and g + 8: 32 sm bytes and 16 code bytes each).
struct WgpWords {
    uint4 v[6];
};

__device__ __forceinline__ void wgp_load(WgpWords& w, const unsigned char* pa, const unsigned char* pb, const unsigned char* qa,
                                         const unsigned char* qb, wgp_u32 kk) {
    w.v[0] = wgp_ldg(pa + kk);
    w.v[1] = wgp_ldg(pa + kk + 16u);
    w.v[2] = wgp_ldg(qa + (kk >> 1));
    w.v[3] = wgp_ldg(pb + kk);
    w.v[4] = wgp_ldg(pb + kk + 16u);
    w.v[5] = wgp_ldg(qb + (kk >> 1));
}

// PIPE 0: load, then the step's wgmma, waited for before the next load. PIPE 1: the first step's
// words requested before the activations are staged, and each next step's before this step's
// wgmma are waited for, so a warp keeps one step of weights in flight during the tensor work.
template <int NT, int WG, int PIPE>
__device__ __forceinline__ void wgp_body(const unsigned char* __restrict__ sm, const unsigned char* __restrict__ codes,
                                         const unsigned short* __restrict__ x, wgp_u32 M, wgp_u32 Kp, wgp_u32 R,
                                         float* __restrict__ part) {
    extern __shared__ __align__(128) unsigned char wgp_xs[];  // NT x (R / 8) core matrices of 128 bytes
    const wgp_u32 N = NT * 8, s = blockIdx.y, k0 = s * R, kr = min(R, Kp - k0), kb = R / 8;
    const wgp_u32 lane = threadIdx.x & 31u, warp = (threadIdx.x >> 5) & 3u, wg = threadIdx.x >> 7;
    const wgp_u32 g = lane >> 2, t = lane & 3u;
    const wgp_u32 row0 = (blockIdx.x * WG + wg) * 64u + warp * 16u;
    const wgp_u32 ra = min(row0 + g, M - 1u), rb = min(row0 + g + 8u, M - 1u);  // rows past M: discarded
    const unsigned char* pa = sm + (wgp_u64)ra * Kp + k0 + t * 32u;
    const unsigned char* pb = sm + (wgp_u64)rb * Kp + k0 + t * 32u;
    const unsigned char* qa = codes + (wgp_u64)ra * (Kp >> 1) + (k0 >> 1) + t * 16u;
    const unsigned char* qb = codes + (wgp_u64)rb * (Kp >> 1) + (k0 >> 1) + t * 16u;
    WgpWords next;
    if (PIPE) wgp_load(next, pa, pb, qa, qb, 0u);
    // Activations of the range: core matrix (n / 8, k / 8), row n % 8 holds x[n][k .. k + 8).
    for (wgp_u32 i = threadIdx.x; i < N * (kr / 8); i += blockDim.x) {
        const wgp_u32 n = i / (kr / 8), c = i % (kr / 8);
        const uint4 v = *reinterpret_cast<const uint4*>(x + (wgp_u64)n * Kp + k0 + c * 8u);
        *reinterpret_cast<uint4*>(wgp_xs + ((n >> 3) * kb + c) * 128u + (n & 7u) * 16u) = v;
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    const wgp_u32 xs0 = (wgp_u32)__cvta_generic_to_shared(wgp_xs);
    float d[NT * 4];
#pragma unroll
    for (int i = 0; i < NT * 4; ++i) d[i] = 0.0f;
    for (wgp_u32 kk = 0; kk < kr; kk += 128u) {
        WgpWords cur;
        if (PIPE) {
            cur = next;
            if (kk + 128u < kr) wgp_load(next, pa, pb, qa, qb, kk + 128u);
            asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");  // the last step's A is free
        } else {
            wgp_load(cur, pa, pb, qa, qb, kk);
        }
        wgp_u32 w[24];
#pragma unroll
        for (int i = 0; i < 6; ++i) {
            w[4 * i] = cur.v[i].x;
            w[4 * i + 1] = cur.v[i].y;
            w[4 * i + 2] = cur.v[i].z;
            w[4 * i + 3] = cur.v[i].w;
        }
        wgp_u32 a[8][4];
#pragma unroll
        for (int j = 0; j < 8; ++j) {
#pragma unroll
            for (int q = 0; q < 4; ++q) a[j][q] = j < 6 ? w[4 * j + q] : w[4 * j + q - 24] ^ w[4 * j + q - 16];
        }
        // k16 step j of this step: core matrices (0, (kk + 16 j) / 8) and the next in K; the
        // descriptors made before the first wgmma, so no register of an issued one's A is reused
        wgp_u64 desc[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) desc[j] = wgp_desc(xs0 + ((kk >> 3) + 2u * j) * 128u, 128u, kb * 128u);
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int j = 0; j < 8; ++j) wgp_mma<NT>(d, a[j], desc[j]);
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        if (!PIPE) asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    // D fragment: d[4 j + h] is row g + 8 (h >> 1), column 8 j + 2 t + (h & 1)
#pragma unroll
    for (int j = 0; j < NT; ++j) {
#pragma unroll
        for (int h = 0; h < 4; ++h) {
            const wgp_u32 m = row0 + g + 8u * (h >> 1), n = 8u * j + 2u * t + (h & 1);
            if (m < M) part[((wgp_u64)s * N + n) * M + m] = d[4 * j + h];
        }
    }
}

#define WGP_KERNEL(NT, WG, PIPE)                                                                                     \
    extern "C" __global__ void __launch_bounds__(128 * WG, 1)                                                      \
        bench_exec_wgmma_probe_n##NT##_wg##WG##_p##PIPE(const unsigned char* __restrict__ sm,                     \
                                                        const unsigned char* __restrict__ codes,                  \
                                                        const unsigned short* __restrict__ x, wgp_u32 M, wgp_u32 Kp, \
                                                        wgp_u32 R, float* __restrict__ part) {                     \
        wgp_body<NT, WG, PIPE>(sm, codes, x, M, Kp, R, part);                                                         \
    }

WGP_KERNEL(2, 2, 0)
WGP_KERNEL(4, 2, 0)
WGP_KERNEL(8, 2, 0)
WGP_KERNEL(2, 4, 0)
WGP_KERNEL(4, 4, 0)
WGP_KERNEL(8, 4, 0)
WGP_KERNEL(2, 2, 1)
WGP_KERNEL(4, 2, 1)
WGP_KERNEL(8, 2, 1)
WGP_KERNEL(2, 4, 1)
WGP_KERNEL(4, 4, 1)
WGP_KERNEL(8, 4, 1)

// The ranges' partial sums added in range order, rounded to BF16 (round to nearest even).
extern "C" __global__ void bench_exec_wgmma_probe_sum(const float* __restrict__ part, wgp_u32 M, wgp_u32 N, wgp_u32 S,
                                                      unsigned short* __restrict__ y) {
    const wgp_u64 i = (wgp_u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (wgp_u64)M * N) return;
    float acc = 0.0f;
    for (wgp_u32 s = 0; s < S; ++s) acc = __fadd_rn(acc, part[(wgp_u64)s * M * N + i]);
    const wgp_u32 b = __float_as_uint(acc);
    y[i] = (unsigned short)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}
