// NWC format 10 GPU kernels, version 8 (issue 7): the layout 0 matvec of version 7 with two
// independent decode chains per thread. Compiled after nwc_v7.cu (one translation unit), whose
// decoder, staging and row trees it reuses; results are the same bits (spec 15.4).
//
// Why: version 7 issues about 0.46 instructions per scheduler and cycle with 6.9 warps per
// scheduler, each waiting ~15 cycles per instruction on its own serial chain (docs/gpu.md). A warp
// here takes a pair of blocks, rows 8 (2 rp) .. 8 (2 rp) + 15 of column block cb, and each lane
// decodes its lane of both blocks in step: two chains per thread that the scheduler can
// interleave, sharing the activations of cb. One CTA of 24 warps per SM (80 registers), each
// warp with two buffers per block (the pair being decoded and the next pair being staged).

#define V8_WARPS 20
#define V8_THREADS (32 * V8_WARPS)
#define V8_STAGE 2176 // bytes per block and buffer: 4096 codes at <= 4.2 bits

// Pair p: blocks (2 rp, cb) and (2 rp + 1, cb), rp = p / CB, cb = p % CB; the second exists
// unless the first is in the last row block.
struct Pair8 {
    u32 rb, cb, a, b;
    bool has_b;
};

__device__ __forceinline__ Pair8 pair8(u32 p, const Geo& g) {
    const u32 cbs = (u32)g.col_blocks;
    Pair8 r;
    r.rb = 2 * (p / cbs);
    r.cb = p % cbs;
    r.a = r.rb * cbs + r.cb;
    r.b = r.a + cbs;
    r.has_b = r.rb + 1 < g.row_blocks;
    return r;
}

// Four codes of each of two chains: both fast paths first (straight-line code the scheduler can
// interleave), then each chain's rare slow path.
template <bool FP8, bool STAGED>
__device__ __forceinline__ void quad8(const u32* wa, u32& pa, u32& ea, u32& eb, const u32* wb, u32& pb, u32& fa, u32& fb) {
    u32 hia, loa, hib, lob;
    window7<STAGED>(wa, pa, hia, loa);
    window7<STAGED>(wb, pb, hib, lob);
    ea = v7_tab[hia >> 20];
    fa = v7_tab[hib >> 20];
    const u32 h2a = __funnelshift_l(loa, hia, ea);
    const u32 h2b = __funnelshift_l(lob, hib, fa);
    eb = v7_tab[h2a >> 20];
    fb = v7_tab[h2b >> 20];
    u32 na = pa + (ea >> 24) + (eb >> 24);
    u32 nb = pb + (fa >> 24) + (fb >> 24);
    if ((int)(ea | eb) < 0) na = slow7<FP8, STAGED>(wa, pa, ea, eb);
    if ((int)(fa | fb) < 0) nb = slow7<FP8, STAGED>(wb, pb, fa, fb);
    pa = na;
    pb = nb;
}

// Spec 15.4.3-15.4.4 for rows 2i, 2i + 1 of both blocks (row_pair7 with two chains): v[0] is
// block a's result (lane 0: row 2i, lane 16: row 2i + 1), v[1] block b's.
template <bool FP8, bool STAGED, class X>
__device__ __forceinline__ void row_pairs8(const u32* wa, u32& pa, const u32 (&qa)[2][4], const u32* wb, u32& pb,
                                           const u32 (&qb)[2][4], const X& xs, u32 lane, float (&v)[2]) {
    float acc[2][2]; // [block][row]
#pragma unroll
    for (int h = 0; h < 2; h++) {
        u32 q[2][4];
#pragma unroll
        for (int j = 0; j < 4; j++) {
            q[0][j] = qa[h][j];
            q[1][j] = qb[h][j];
        }
        if (FP8) {
            nibbles7(q[0]);
            nibbles7(q[1]);
        }
        float a0 = 0.0f, a1 = 0.0f;
#pragma unroll
        for (int d = 0; d < 4; d++) {
            u32 ea, eb, fa, fb;
            quad8<FP8, STAGED>(wa, pa, ea, eb, wb, pb, fa, fb);
            a0 = __fmaf_rn(weight7(ea, q[0][d], 0, 1), xs.get(0, 4 * d), a0);
            a1 = __fmaf_rn(weight7(fa, q[1][d], 0, 1), xs.get(0, 4 * d), a1);
            a0 = __fmaf_rn(weight7(ea, q[0][d], 1, 2), xs.get(0, 4 * d + 1), a0);
            a1 = __fmaf_rn(weight7(fa, q[1][d], 1, 2), xs.get(0, 4 * d + 1), a1);
            a0 = __fmaf_rn(weight7(eb, q[0][d], 2, 1), xs.get(0, 4 * d + 2), a0);
            a1 = __fmaf_rn(weight7(fb, q[1][d], 2, 1), xs.get(0, 4 * d + 2), a1);
            a0 = __fmaf_rn(weight7(eb, q[0][d], 3, 2), xs.get(0, 4 * d + 3), a0);
            a1 = __fmaf_rn(weight7(fb, q[1][d], 3, 2), xs.get(0, 4 * d + 3), a1);
        }
        acc[0][h] = a0;
        acc[1][h] = a1;
    }
    const bool upper = lane >= 16;
#pragma unroll
    for (int k = 0; k < 2; k++) {
        const float keep = upper ? acc[k][1] : acc[k][0];
        const float give = upper ? acc[k][0] : acc[k][1];
        float t = keep + __shfl_xor_sync(0xffffffffu, give, 16);
#pragma unroll
        for (int d = 8; d >= 1; d >>= 1) t = t + __shfl_xor_sync(0xffffffffu, t, d);
        v[k] = t;
    }
}

// The pair loop: warp gw of tw takes pairs p = gw, gw + tw, ...; while it decodes pair p from one
// set of two buffers, pair p + tw is staged into the other set and its raw rows requested into L2.
template <bool FP8, class Work>
__device__ __forceinline__ void pairs8(u8* mybuf, const u8* __restrict__ data, const u32* __restrict__ bases,
                                       const u8* __restrict__ hdr, const u8* __restrict__ low, const u32* __restrict__ pairs,
                                       const Geo& g, Work work) {
    const u32 warp = threadIdx.x >> 5, lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    const u32 gw = blockIdx.x * warps + warp, tw = gridDim.x * warps;
    const u32 np = (u32)((g.row_blocks + 1) / 2 * g.col_blocks); // < 2^32 (spec 3 hard limits)
    auto stage = [&](u32 p, u32 set, Start7& sa, Start7& sb) {
        const Pair8 pr = pair8(p, g);
        u8* buf = mybuf + 2 * set * V8_STAGE;
        sa = stage7<V8_STAGE>(buf, data, lane, hdr[(u64)pr.a * 32 + lane], bases[pr.a]);
        prefetch_raw7<FP8>(low, g, pr.rb, pr.cb, lane);
        if (pr.has_b) {
            sb = stage7<V8_STAGE>(buf + V8_STAGE, data, lane, hdr[(u64)pr.b * 32 + lane], bases[pr.b]);
            prefetch_raw7<FP8>(low, g, pr.rb + 1, pr.cb, lane);
        }
    };
    u32 p = gw;
    Start7 ca = {0, false, 0}, cb = {0, false, 0};
    if (p < np) stage(p, 0, ca, cb);
    cp_commit();
    copy_tables7(pairs); // every thread of the CTA (it has a barrier)
    if (p >= np) return;
    for (u32 n = 0;; n++) {
        const u32 pn = p + tw;
        const bool next = pn < np && pn > p;
        Start7 na = {0, false, 0}, nb = {0, false, 0};
        if (next) stage(pn, (n + 1) & 1, na, nb);
        cp_commit();
        cp_wait<1>(); // pair p's streams have landed
        __syncwarp();
        u8* buf = mybuf + 2 * (n & 1) * V8_STAGE;
        work(pair8(p, g), buf, buf + V8_STAGE, ca, cb);
        __syncwarp(); // every lane is done with this set before step n + 1 refills it
        if (!next) break;
        p = pn;
        ca = na;
        cb = nb;
    }
    cp_wait<0>();
}

// Spec 15.4 for one activation column (batch 1; the host launches once per column), version 8.
// Same scratch as version 7 (8 floats per block, one counter per row block).
template <bool FP8, bool XBF16>
__device__ void matvec8(const u8* __restrict__ data, const u32* __restrict__ bases, const u8* __restrict__ hdr,
                        const u32* __restrict__ pairs, const u8* __restrict__ low, const float* __restrict__ scale,
                        const void* x, const float* __restrict__ bias, void* y, int out_bf16, Geo g,
                        float* __restrict__ partial, u32* __restrict__ count) {
    extern __shared__ __align__(16) u8 v8_dyn[];
    const u32 lane = threadIdx.x & 31;
    const u32 cbs = (u32)g.col_blocks;
    const u64 stride = FP8 ? g.k16 / 2 : g.k16;
    // Block k of the pair (k = 0: rows 8 rb.., k = 1: the next row block): its row sums to the
    // output (one column block) or to the scratch, then the last-arriver sum of version 7.
    auto finish = [&](u32 b, u32 rb, u32 nrows) {
        if (cbs == 1) return;
        if ((lane & 15) == 0) __threadfence();
        __syncwarp();
        u32 old = 0;
        if (lane == 0) old = atomicAdd(count + rb, 1u);
        old = __shfl_sync(0xffffffffu, old, 0);
        if (old == cbs - 1) {
            __threadfence();
            const u32 r = lane;
            if (r < nrows) {
                const float* src = partial + (u64)rb * cbs * 8 + r;
                float sum = 0.0f;
                for (u32 c = 0; c < cbs; c++) sum = sum + __ldcg(src + 8ull * c);
                output7(sum, 8ull * rb + r, scale, bias, y, out_bf16);
            }
            if (lane == 0) count[rb] = 0;
        }
        (void)b;
    };
    auto work = [&](Pair8 pr, const u8* bufa, const u8* bufb, Start7 sa, Start7 sb) {
        const u64 col0 = 512ull * pr.cb + 16 * lane;
        const bool lane_in = col0 < g.k16;
        typename XKind<XBF16, 1>::T xs;
        xs.load(x, g.kp, col0);
        const u32 na = (u32)min(8ull, g.rows - 8ull * pr.rb);
        const u32 nb = pr.has_b ? (u32)min(8ull, g.rows - 8ull * (pr.rb + 1)) : 0;
        const u8* rowa = low + 8ull * pr.rb * stride + (FP8 ? col0 / 2 : col0);
        const u8* rowb = rowa + 8 * stride;
        // Both streams staged, or both read from `data` (one template instance each way).
        const bool staged = sa.staged && (!pr.has_b || sb.staged);
        const u32* wa = staged ? reinterpret_cast<const u32*>(bufa) : reinterpret_cast<const u32*>(data + sa.start16);
        const u32* wb = staged ? reinterpret_cast<const u32*>(bufb) : reinterpret_cast<const u32*>(data + sb.start16);
        u32 pa = sa.pos, pb = sb.pos;
        if (!pr.has_b) { // decode block a twice rather than branch per quad: b's chain shadows a's
            wb = wa;
            pb = pa;
        }
        u32 qa[2][4], qb[2][4];
        raw7<FP8>(rowa, lane_in, qa[0]);
        raw7<FP8>(rowa + stride, lane_in && na > 1, qa[1]);
        raw7<FP8>(rowb, lane_in && nb > 0, qb[0]);
        raw7<FP8>(rowb + stride, lane_in && nb > 1, qb[1]);
#pragma unroll 1
        for (u32 i = 0; i < 4; i++) {
            rowa += 2 * stride;
            rowb += 2 * stride;
            u32 xa[2][4], xb[2][4]; // the next two raw rows of each block, one pair ahead
            raw7<FP8>(rowa, lane_in && 2 * i + 2 < na, xa[0]);
            raw7<FP8>(rowa + stride, lane_in && 2 * i + 3 < na, xa[1]);
            raw7<FP8>(rowb, lane_in && 2 * i + 2 < nb, xb[0]);
            raw7<FP8>(rowb + stride, lane_in && 2 * i + 3 < nb, xb[1]);
            float v[2];
            if (staged) row_pairs8<FP8, true>(wa, pa, qa, wb, pb, qb, xs, lane, v);
            else row_pairs8<FP8, false>(wa, pa, qa, wb, pb, qb, xs, lane, v);
            const u32 r = 2 * i + (lane >> 4);
            if ((lane & 15) == 0) {
                if (r < na) {
                    if (cbs == 1) output7(0.0f + v[0], 8ull * pr.rb + r, scale, bias, y, out_bf16);
                    else partial[(u64)pr.a * 8 + r] = v[0];
                }
                if (r < nb) {
                    if (cbs == 1) output7(0.0f + v[1], 8ull * (pr.rb + 1) + r, scale, bias, y, out_bf16);
                    else partial[(u64)pr.b * 8 + r] = v[1];
                }
            }
#pragma unroll
            for (int h = 0; h < 2; h++)
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    qa[h][j] = xa[h][j];
                    qb[h][j] = xb[h][j];
                }
        }
        finish(pr.a, pr.rb, na);
        if (pr.has_b) finish(pr.b, pr.rb + 1, nb);
    };
    pairs8<FP8>(v8_dyn + (threadIdx.x >> 5) * 4 * V8_STAGE, data, bases, hdr, low, pairs, g, work);
}

#define NWC_MATVEC8(NAME, FP8, XBF16)                                                                          \
    extern "C" __global__ void __launch_bounds__(V8_THREADS, 1)                                                 \
        NAME(const u8* data, const u32* bases, const u8* hdr, const u32* pairs, const u8* low, const float* scale, \
             const void* x, const float* bias, void* y, int out_bf16, Geo g, float* partial, u32* count) {     \
        matvec8<FP8, XBF16>(data, bases, hdr, pairs, low, scale, x, bias, y, out_bf16, g, partial, count);     \
    }
NWC_MATVEC8(nwc_matvec8_bf16_l0_xf32, false, false)
NWC_MATVEC8(nwc_matvec8_bf16_l0_xbf16, false, true)
NWC_MATVEC8(nwc_matvec8_fp8_l0_xf32, true, false)
NWC_MATVEC8(nwc_matvec8_fp8_l0_xbf16, true, true)
