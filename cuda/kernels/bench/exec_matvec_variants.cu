// Bench-only ceiling probes of the one-column exact matvec (docs/gpu.md, "session 7"): not
// exact, never compared, timed by `nwc-gpu-bench --exec-variants`.
// - bench_exec_probe_nodecode_d4 / _loads_d4: the production lean kernel (exec_matvec_lean.cu)
//   with the stage words used as weights (no decode) / with neither decode nor fma, so the rest
//   (copies, x, stage reads, tree, loop) is timed alone;
// - bench_exec_probe_stream*: the copy pipeline alone, for three item shapes;
// - bench_exec_tma_d*: the lean kernel whose sm and code rows arrive by Hopper TMA (exact, compared
//   by the sweep; ExecMatvecKernel::VarTma), at the end of this file.

EXEC_LEAN(bench_exec_probe_nodecode_d4, 4, 1)
EXEC_LEAN(bench_exec_probe_loads_d4, 4, 2)

// Streaming probes (not a matvec; never compared): how fast the lean kernel's copy pipeline reads
// the sm and code planes when an item (4 pieces of one tile-row each: 512 sm bytes and 256 code
// bytes) is RR rows x TT consecutive tiles. Same persistent grid, 16 warps and 4 stages of cp.async
// as lean, no x, no decode: each warp XORs its stage words and writes one word per warp to y.
template <int RR, int TT>
__device__ __forceinline__ void exec_probe_stream_body(const exec_u8* __restrict__ sm, const exec_u8* __restrict__ codes,
                                                       exec_u32 M, exec_u32 K, void* __restrict__ y) {
    constexpr exec_u32 D = 4, STAGE = 3072;
    extern __shared__ __align__(16) exec_u8 exec_stage[];
    const exec_u32 K16 = (K + 15u) & ~15u, CB = (K + 511u) >> 9;
    const exec_u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const exec_u32 gw = blockIdx.x * nwarps + warp, GW = gridDim.x * nwarps;
    const exec_u32 nrg = (M + RR - 1) / RR, ntg = (CB + TT - 1) / TT;
    const exec_u32 nitems = gw < nrg ? ((nrg - gw + GW - 1) / GW) * ntg : 0u;
    const exec_u32 st = exec_sa(exec_stage) + warp * (D * STAGE);
    const exec_u8* stg = exec_stage + warp * (D * STAGE);
    exec_u32 irg = gw, itg = 0, issued = 0;
    auto issue = [&]() {
        if (issued < nitems) {
            const exec_u32 sd = st + (issued % D) * STAGE;
#pragma unroll
            for (int p = 0; p < 4; ++p) {
                const exec_u32 row = irg * RR + p / TT, tile = itg * TT + p % TT;
                if (row < M && tile < CB) {
                    if (tile * 512u + lane * 16u < K16) exec_cp16(sd + p * 512u + lane * 16u, sm + (exec_u64)row * K16 + tile * 512u + lane * 16u);
                    if (tile * 512u + lane * 16u < K16)
                        exec_cp8(sd + 2048u + p * 256u + lane * 8u, codes + (exec_u64)row * (K16 >> 1) + tile * 256u + lane * 8u);
                }
            }
            if (++itg == ntg) {
                itg = 0;
                irg += GW;
            }
        }
        ++issued;
        exec_cp_commit();
    };
#pragma unroll
    for (int d = 0; d < (int)D - 1; ++d) issue();
    exec_u32 acc = 0;
    for (exec_u32 j = 0; j < nitems; ++j) {
        issue();
        exec_cp_wait<D - 1>();
        const exec_u8* sd = stg + (j % D) * STAGE;
#pragma unroll
        for (int p = 0; p < 4; ++p) {
            const uint4 s = *reinterpret_cast<const uint4*>(sd + p * 512u + lane * 16u);
            const uint2 c = *reinterpret_cast<const uint2*>(sd + 2048u + p * 256u + lane * 8u);
            acc ^= s.x ^ s.y ^ s.z ^ s.w ^ c.x ^ c.y;
        }
    }
    exec_cp_wait<0>();
    acc = __reduce_xor_sync(EXEC_FULL, acc);
    if (lane == 0u && gw < M) reinterpret_cast<exec_u16*>(y)[gw] = (exec_u16)acc;
}

// Same argument list as EXEC_FLAGS (most unused).
#define EXEC_PROBE_STREAM(NAME, RR, TT)                                                                      \
    extern "C" __global__ void __launch_bounds__(512, 1)                                                     \
        NAME(EXEC_MATVEC_PARAMS(float), exec_u32 G, const exec_u8* __restrict__ flags) {                 \
        exec_probe_stream_body<RR, TT>(sm, codes, M, K, y);                                                  \
    }

EXEC_PROBE_STREAM(bench_exec_probe_stream4x1_d4, 4, 1)
EXEC_PROBE_STREAM(bench_exec_probe_stream2x2_d4, 2, 2)
EXEC_PROBE_STREAM(bench_exec_probe_stream1x4_d4, 1, 4)

// ---- var-tma: the lean kernel with its sm and code rows brought by the TMA engine (sm_90) ----
// The lean kernel spends 6 cp.async per lane and item, their running pointers and, in SASS, 3
// padding instructions per cp.async group on bringing the 4 sm rows and 4 code rows (~45 of its
// ~480 instructions per full item; docs/gpu.md, session 8). Here one lane of each warp
// (elect.sync, so ptxas issues the copies without a loop over the active lanes) issues, per item,
// one mbarrier.arrive.expect_tx and two 2D tensor copies of the planes seen as u32 matrices: the
// sm plane [M][K16 / 4] (row stride K16 bytes), box {128 words, 4 rows} = the 4 sm rows of the
// tile; the code plane [M][K16 / 8] (row stride K16 / 2, a multiple of 16 because K16 % 32 == 0),
// box {64, 4} = the 4 code rows. A box lands row after row, which is the lean stage layout (sm row
// r at r * 512, code row r at 2048 + r * 256), so exec_lean_body's consumer, small pieces (escape
// offsets, base, flags: still 4-byte cp.async) and compute run unchanged: bit-identical to lean by
// construction.
// Rows >= M and columns >= K16 of a box lie outside the tensor: TMA fills them with zeros (tensor
// map OOB fill NONE; PTX ISA, tensor copies' out-of-bound access) and counts the whole box
// towards complete_tx, so every item expects the same EXEC_TMA_BYTES; the consumer masks those
// rows and lanes as lean does. (Were only in-bound bytes counted, a partial item's phase would
// never complete and exec_mbar_wait would trap after EXEC_TMA_WAIT_NS: an error, not a hang.)
// Phases: stage s's barrier (count 1) completes one phase per item issued into it; stages are
// consumed in order, so the parity the consumer waits for flips each time it wraps past stage
// D - 1. The issuing lane re-arms a stage only after __syncwarp, i.e. after every lane finished
// reading the item it held (D items before), so no phase is skipped or reused early. Every issued
// item is consumed before the warp exits, so no copy is in flight at exit.
// Host: GpuExecMatrix::tensor_maps (exec/variant.rs) encodes the two maps (UINT32, no interleave,
// no swizzle, L2 promotion 256 B, OOB fill none); they arrive as __grid_constant__ parameters.

// EXEC3_STAGE rounded up to 128 bytes: every stage, and its code rows at +2048, start 128-byte
// aligned, as a tensor copy's shared-memory destination must.
#define EXEC_TMA_STAGE 3200u
// The stage's mbarrier: the 8 free bytes of lean's 32-byte tail (after offsets, base and flags).
#define EXEC_TMA_BAR (EXEC3_R * 768u + 24u)
// Bytes of an item's two boxes (4 x 512 sm + 4 x 256 code bytes), out-of-bounds parts included.
#define EXEC_TMA_BYTES (EXEC3_R * 768u)
// A wait that outlives this (1 s; a stage's copies take microseconds) means a lost completion: trap
// (the launch fails with an error) instead of hanging the device.
#define EXEC_TMA_WAIT_NS 1000000000ull

// A CUtensorMap by value (cuda.h is not included here): 128 opaque bytes, 64-byte aligned.
struct __align__(64) ExecTmap {
    exec_u64 opaque[16];
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ void exec_mbar_init(exec_u32 bar) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void exec_mbar_expect(exec_u32 bar, exec_u32 bytes) {
    asm volatile("{\n\t.reg .b64 state;\n\tmbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n}" ::"r"(bar), "r"(bytes)
                 : "memory");
}
// True once the phase of this parity has completed (acquire: the copies' bytes are visible).
__device__ __forceinline__ bool exec_mbar_test(exec_u32 bar, exec_u32 parity) {
    exec_u32 done;
    asm volatile(
        "{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;\n}"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
    return done != 0u;
}
__device__ __forceinline__ exec_u64 exec_globaltimer() {
    exec_u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
// Bounded by construction: try_wait returns at completion or after a hardware time limit, and the
// loop gives up (trap) after EXEC_TMA_WAIT_NS; the first test usually succeeds (D - 1 items ahead).
__device__ __forceinline__ void exec_mbar_wait(exec_u32 bar, exec_u32 parity) {
    if (exec_mbar_test(bar, parity)) return;
    const exec_u64 t0 = exec_globaltimer();
    while (!exec_mbar_test(bar, parity))
        if (exec_globaltimer() - t0 > EXEC_TMA_WAIT_NS) __trap();
}
// One 2D box at (c0 words, c1 rows) of `map` into shared address dst, completing on bar.
__device__ __forceinline__ void exec_tma2d(exec_u32 dst, const ExecTmap* map, exec_u32 c0, exec_u32 c1, exec_u32 bar) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
        "l"(reinterpret_cast<exec_u64>(map)), "r"(c0), "r"(c1), "r"(bar)
        : "memory");
}

// One lane of the converged warp (elect.sync): the issuing lane, known to ptxas as exactly one.
__device__ __forceinline__ bool exec_elect() {
    exec_u32 one;
    asm volatile("{\n\t.reg .pred p;\n\t.reg .b32 r;\n\telect.sync r|p, 0xffffffff;\n\tselp.u32 %0, 1, 0, p;\n}" : "=r"(one));
    return one != 0u;
}

// exec_lean_body's Feed for var-tma (D stages per warp).
template <int D>
struct ExecTmaFeed {
    enum : exec_u32 { PER_LANE = 0, STAGE = EXEC_TMA_STAGE };
    const ExecTmap* tm_sm;
    const ExecTmap* tm_codes;
    exec_u32 st;      // the warp's first stage (shared address)
    exec_u32 parity;  // of the phase the consumer waits for next (flips when the stages wrap)

    __device__ __forceinline__ void start(exec_u32 st0, exec_u32 lane) {
        st = st0;
        parity = 0u;
        if ((st0 & 127u) != 0u) __trap();  // dynamic shared memory not 128-byte aligned: refuse
        if (lane == 0u) {
#pragma unroll
            for (int s = 0; s < D; ++s) exec_mbar_init(st + (exec_u32)s * STAGE + EXEC_TMA_BAR);
            // the inits visible to the tensor copies' completions (async proxy) before any issue
            asm volatile("fence.mbarrier_init.release.cluster;\n\tfence.proxy.async.shared::cta;" ::: "memory");
        }
        __syncwarp();
    }
    // Item at tile icb of rows row0..row0 + 3 into stage sd.
    __device__ __forceinline__ void rows(exec_u32 sd, exec_u32, exec_u32 icb, exec_u32 row0) {
        __syncwarp();  // every lane has read the item this stage held (D items before)
        if (exec_elect()) {
            const exec_u32 bar = sd + EXEC_TMA_BAR;
            exec_mbar_expect(bar, EXEC_TMA_BYTES);
            exec_tma2d(sd, tm_sm, icb * 128u, row0, bar);
            exec_tma2d(sd + EXEC3_R * 512u, tm_codes, icb * 64u, row0, bar);
        }
    }
    // Stages are consumed in order 0, 1, ..., D - 1, 0, ...: the parity flips after the last.
    __device__ __forceinline__ void ready(exec_u32 cstage) {
        exec_mbar_wait(st + cstage * STAGE + EXEC_TMA_BAR, parity);
        if (cstage == (exec_u32)D - 1u) parity ^= 1u;
    }
};
#endif

// Lean's arguments, then the two tensor maps. Below sm_90 (no TMA) the entry points exist but trap.
#define EXEC_TMA(NAME, D)                                                                                     \
    extern "C" __global__ void __launch_bounds__(512, 1)                                                      \
        NAME(EXEC_MATVEC_PARAMS(float), exec_u32 G, const exec_u8* __restrict__ flags,                      \
             const __grid_constant__ ExecTmap tm_sm, const __grid_constant__ ExecTmap tm_codes) {             \
        EXEC_TMA_BODY(D)                                                                                      \
    }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define EXEC_TMA_BODY(D)                                                                                       \
    ExecTmaFeed<D> feed{&tm_sm, &tm_codes, 0u, 0u};                                                           \
    exec_lean_body<D, 0>(sm, codes, base, esc_start, esc, M, K, x, ncols, bias, y, out_bf16, G, flags, feed);
#else
#define EXEC_TMA_BODY(D) __trap();
#endif

EXEC_TMA(bench_exec_tma_d4, 4)
EXEC_TMA(bench_exec_tma_d3, 3)
EXEC_TMA(bench_exec_tma_d2, 2)
