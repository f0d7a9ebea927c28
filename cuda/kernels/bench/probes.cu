// Timing probes of nwc-gpu-bench --ceiling and --profile (cargo feature `bench`; docs/gpu-history.md,
// "Where the time goes"). Compiled after every production file. Their outputs mean nothing.

// A table-free decoder, for the STAGE_DECODE_CLZ probe: each code from counting zeros in a 64-bit
// window held in two registers (a quad is at most 64 bits unless it holds an escape), with
// exp_of_rank from 16 words of shared memory that a warp reads without bank conflicts. Shorter
// dependent chain than quad_pairs (no table load in it), about twice the instructions.
template <>
struct ProbeDecoder<STAGE_DECODE_CLZ> {
    template <bool FP8, bool STAGED>
    static __device__ __forceinline__ void quad(const u32* words, u32& pos, u32& ea, u32& eb) {
        u32 hi, lo;
        stream_window<STAGED>(words, pos, hi, lo);
        u32 c[4], zmax = 0, p = pos;
    #pragma unroll
        for (int j = 0; j < 4; j++) {
            const u32 z = __clz(hi);
            zmax = max(zmax, z);
            c[j] = (((hi << z) >> 23) & 0x80) | pair_eor[z & 15];
            const u32 len = z + 2;
            hi = __funnelshift_l(lo, hi, len);
            lo = lo << len;
            p += len;
        }
        ea = (c[0] << 8) | (c[1] << 16);
        eb = (c[2] << 8) | (c[3] << 16);
        if (zmax >= (FP8 ? 10u : 15u)) p = quad_slow<FP8, STAGED>(words, pos, ea, eb);
        pos = p;
    }
};

// The timing probes (BF16 weights, BF16 activations, batch 1; same launch as the matvec).
#define NWC_PROBE_STAGES(NAME, STAGES)                                                                               \
    extern "C" __global__ void __launch_bounds__(EXACT_THREADS, 2)                                                 \
        NAME(const u8* data, const u32* bases, const u8* hdr, const u32* pairs, const u8* low, const float* scale, \
             const void* x, const float* bias, void* y, int out_bf16, Geo g, float* partial, u32* count) {     \
        exact_matvec_l0<false, true, 1, STAGES>(data, bases, hdr, pairs, low, scale, x, bias, y, out_bf16, g, partial, count); \
    }
NWC_PROBE_STAGES(bench_probe_decode, STAGE_DECODE)
NWC_PROBE_STAGES(bench_probe_weights, STAGE_WEIGHTS)
NWC_PROBE_STAGES(bench_probe_fma, STAGE_FMA)
NWC_PROBE_STAGES(bench_probe_decode_clz, STAGE_DECODE_CLZ)

// The memory floor: every 16-byte word of `a` and then of `b` read once, coalesced (grid-stride),
// folded into a value that is stored only if it hits a constant (so only the reads cost time).
extern "C" __global__ void bench_probe_read(const uint4* __restrict__ a, u64 na, const uint4* __restrict__ b, u64 nb, u32* sink) {
    u32 acc = 0;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < na + nb; i += (u64)gridDim.x * blockDim.x) {
        const uint4 w = i < na ? __ldcs(a + i) : __ldcs(b + (i - na));
        acc ^= w.x ^ w.y ^ w.z ^ w.w;
    }
    if (acc == 0x9E3779B9u) sink[0] = acc;
}

// The dequant memory floor: `bench_probe_read`'s reads, plus `nout` 16-byte words written to `out`
// (a dequant's output), coalesced, independent of the reads.
extern "C" __global__ void bench_probe_read_write(const uint4* __restrict__ a, u64 na, const uint4* __restrict__ b, u64 nb,
                                                uint4* __restrict__ out, u64 nout, u32* sink) {
    u32 acc = 0;
    const u64 n = max(na + nb, nout);
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        if (i < na + nb) {
            const uint4 w = i < na ? __ldcs(a + i) : __ldcs(b + (i - na));
            acc ^= w.x ^ w.y ^ w.z ^ w.w;
        }
        if (i < nout) out[i] = make_uint4((u32)i, (u32)i, (u32)i, (u32)i);
    }
    if (acc == 0x9E3779B9u) sink[0] = acc;
}
// Timing probes (docs/gpu-history.md, "Where the time goes"): version 7's block loop and staging, then
// only the decode of each lane's 128 codes in one flat loop, with the stream read by quad_pairs (two
// shared loads per quad; READER false) or by quad_frag (stream words kept in registers; true).
// (`pair`: the look-up quad_frag uses.)
template <bool READER, bool STAGED, class Pair = PairTable>
__device__ __forceinline__ u32 probe_quads(const u32* words, u32 pos, Pair pair = Pair()) {
    u32 probe = 0;
    FragReader rd = frag_reader<STAGED>(words, pos);
#pragma unroll 4
    for (u32 i = 0; i < 32; i++) {
        u32 ea, eb;
        if (READER) quad_frag<false, STAGED>(words, rd, ea, eb, pair);
        else quad_pairs<false, STAGED>(words, pos, ea, eb);
        probe ^= ea ^ eb;
    }
    return probe;
}

template <bool READER>
__device__ void probe_decode_loop(const u8* __restrict__ data, const u32* __restrict__ bases, const u8* __restrict__ hdr,
                              const u32* __restrict__ pairs, const Geo& g, float* __restrict__ partial) {
    extern __shared__ __align__(16) u8 exact_dyn[];
    auto work = [&](u32 b, u32, u32, const u8* buf, LaneStart st) {
        const u32 probe = st.staged ? probe_quads<READER, true>(reinterpret_cast<const u32*>(buf), st.pos)
                                    : probe_quads<READER, false>(reinterpret_cast<const u32*>(data + st.start16), st.pos);
        if (probe == 0x9E3779B9u) partial[b] = 1.0f; // a store the compiler cannot drop
    };
    warp_block_loop<EXACT_STAGE>(exact_dyn, data, bases, hdr, pairs, g, [](u32, u32) {}, work);
}

#define NWC_PROBE_DECODE(NAME, READER)                                                                         \
    extern "C" __global__ void __launch_bounds__(EXACT_THREADS, 2)                                                 \
        NAME(const u8* data, const u32* bases, const u8* hdr, const u32* pairs, const u8* low, const float* scale, \
             const void* x, const float* bias, void* y, int out_bf16, Geo g, float* partial, u32* count) {     \
        probe_decode_loop<READER>(data, bases, hdr, pairs, g, partial);                                            \
    }
NWC_PROBE_DECODE(bench_probe_decode_flat, false)
NWC_PROBE_DECODE(bench_probe_decode_reg, true)

// Timing probe "rep": a pair table without bank conflicts. The first 8 bits of the window index
// a 256-entry table of the pairs that fit in 8 bits, kept 32 times over so that lane L reads
// its copy from bank L (entry i of lane L at word 32 i + L: 32 KB). About 96% of the pairs of
// normal-like weights fit (docs/gpu-history.md); a lane whose pair does not reads version 7's 12-bit table
// instead (a predicated load, no branch), and the rare quad neither can decode takes the slow path.
// Stream words are kept in registers as in quad_frag.
#define PROBE_REP_STAGE 1792
#define PROBE_REP_BYTES (256 * 32 * 4)

__device__ __forceinline__ u32 pair_rep(u32 rep, u32 tab12, u32 w, u32 lane) {
    u32 e;
    asm volatile("ld.shared.u32 %0, [%1];" : "=r"(e) : "r"(rep + (((w >> 24) * 32 + lane) << 2)));
    asm volatile("{ .reg .pred p; setp.lt.s32 p, %0, 0; @p ld.shared.u32 %0, [%1]; }" : "+r"(e) : "r"(tab12 + ((w >> 20) << 2)));
    return e;
}

// pair_rep as quad_frag's look-up.
struct PairRep {
    u32 rep, tab12, lane;
    __device__ __forceinline__ u32 operator()(u32 w) const { return pair_rep(rep, tab12, w, lane); }
};

extern "C" __global__ void __launch_bounds__(EXACT_THREADS, 2)
    bench_probe_decode_rep(const u8* data, const u32* bases, const u8* hdr, const u32* pairs, const u8* low, const float* scale,
                          const void* x, const float* bias, void* y, int out_bf16, Geo g, float* partial, u32* count) {
    extern __shared__ __align__(16) u8 probe_rep_dyn[];
    u32* rep_tab = reinterpret_cast<u32*>(probe_rep_dyn);
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const u32 rep = smem_u32(rep_tab), tab12 = smem_u32(pair_tab);
    auto setup = [&] {
        copy_pair_table(pairs);
        for (u32 i = threadIdx.x; i < 256 * 32; i += blockDim.x) {
            const u32 e = pair_tab[(i >> 5) << 4]; // the pair of pattern i / 32 followed by four zeros
            rep_tab[i] = (int)e >= 0 && (e >> 24) <= 8 ? e : PAIR_SLOW;
        }
        __syncthreads();
    };
    auto work = [&](u32 b, u32, u32, const u8* buf, LaneStart st) {
        const PairRep pair = {rep, tab12, lane};
        const u32 probe = st.staged ? probe_quads<true, true>(reinterpret_cast<const u32*>(buf), st.pos, pair)
                                    : probe_quads<true, false>(reinterpret_cast<const u32*>(data + st.start16), st.pos, pair);
        if (probe == 0x9E3779B9u) partial[b] = 1.0f; // a store the compiler cannot drop
    };
    block_loop<PROBE_REP_STAGE>(probe_rep_dyn + PROBE_REP_BYTES + warp * 2 * PROBE_REP_STAGE, blockIdx.x * warps + warp, gridDim.x * warps,
                             data, bases, hdr, g, lane, [](u32, u32) {}, setup, work);
}
