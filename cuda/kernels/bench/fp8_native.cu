// A speed baseline for nwc-gpu-bench, compiled after nwc.cu (kernels.rs concatenates the files).

// ---------------------------------------------------------------------------------------------
// Baseline for the benchmark only (not part of the format): a plain fp8 e4m3 weight-only matvec,
// y[r] = bf16(scale[r] * sum_k w[r][k] x[k]), w stored 1 byte per weight with row stride K16,
// x BF16 padded with zeros to a multiple of 512. One warp per row, 16-byte loads, two chunks in
// flight. Not bit-exact with anything: it is the speed an uncompressed fp8 weight would give.

__device__ __forceinline__ void fp8x4_to_f32(u32 w, float (&f)[4]) {
#if __CUDA_ARCH__ >= 890
    u32 h01, h23;
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h01) : "h"((unsigned short)(w & 0xFFFF)));
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h23) : "h"((unsigned short)(w >> 16)));
    asm("cvt.f32.f16 %0, %1;" : "=f"(f[0]) : "h"((unsigned short)(h01 & 0xFFFF)));
    asm("cvt.f32.f16 %0, %1;" : "=f"(f[1]) : "h"((unsigned short)(h01 >> 16)));
    asm("cvt.f32.f16 %0, %1;" : "=f"(f[2]) : "h"((unsigned short)(h23 & 0xFFFF)));
    asm("cvt.f32.f16 %0, %1;" : "=f"(f[3]) : "h"((unsigned short)(h23 >> 16)));
#else
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const u32 b = (w >> (8 * j)) & 0xFF;
        // magnitude bits into an f32 with exponent bias 127 instead of 7, then 2^120 (exact)
        const float m = __uint_as_float((b & 0x7F) << 20) * 1.329227995784916e36f;
        f[j] = (b & 0x80) ? -m : m;
    }
#endif
}

extern "C" __global__ void __launch_bounds__(NWC_THREADS)
    bench_fp8_native_matvec(const u8* __restrict__ w, const float* __restrict__ scale, const u16* __restrict__ x,
                      u16* __restrict__ y, u64 rows, u64 k16) {
    const u32 warps = blockDim.x >> 5, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const u64 chunks = k16 / 16; // 16 weights per chunk
    for (u64 r = (u64)blockIdx.x * warps + warp; r < rows; r += (u64)gridDim.x * warps) {
        const uint4* row = reinterpret_cast<const uint4*>(w + r * k16);
        float acc = 0.0f;
        for (u64 c = lane; c < chunks; c += 64) {
            const bool two = c + 32 < chunks;
            const uint4 a = __ldg(row + c);
            uint4 b = make_uint4(0, 0, 0, 0);
            if (two) b = __ldg(row + c + 32);
            float xa[16], xb[16];
            load_x8<true>(x, 16 * c, *reinterpret_cast<float(*)[8]>(&xa[0]));
            load_x8<true>(x, 16 * c + 8, *reinterpret_cast<float(*)[8]>(&xa[8]));
            if (two) {
                load_x8<true>(x, 16 * (c + 32), *reinterpret_cast<float(*)[8]>(&xb[0]));
                load_x8<true>(x, 16 * (c + 32) + 8, *reinterpret_cast<float(*)[8]>(&xb[8]));
            }
            const u32 aw[4] = {a.x, a.y, a.z, a.w}, bw[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
            for (int j = 0; j < 4; j++) {
                float f[4];
                fp8x4_to_f32(aw[j], f);
#pragma unroll
                for (int k = 0; k < 4; k++) acc = __fmaf_rn(f[k], xa[4 * j + k], acc);
            }
            if (two) {
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    float f[4];
                    fp8x4_to_f32(bw[j], f);
#pragma unroll
                    for (int k = 0; k < 4; k++) acc = __fmaf_rn(f[k], xb[4 * j + k], acc);
                }
            }
        }
#pragma unroll
        for (int d = 16; d >= 1; d >>= 1) acc = acc + __shfl_xor_sync(0xffffffffu, acc, d);
        if (lane == 0) y[r] = bf16_rne(acc * scale[r]);
    }
}
