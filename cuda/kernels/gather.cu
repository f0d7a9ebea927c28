// Dequant and gather through one kernel (spec 15.2, 15.3), compiled after common.cu. Production
// runs it for gather of both layouts; dequant has faster kernels (dequant_l0.cu, dequant_l1.cu).

// ---------------------------------------------------------------------------------------------
// Dequant and gather (spec 15.2, 15.3): BF16 rows of stride K16. One warp per task; a task is a
// block (dequant: `sel` is null, every row of the block is written to its own row) or a pair
// (output row o, column block cb) (gather: source row sel[o], written to output row o).
// Pad columns K..K16-1 hold filler codes with zero raw parts, so they decode to the filler word.

template <int LAYOUT, bool FP8>
__device__ void expand(const u8* __restrict__ data, const u32* __restrict__ bases, const u8* __restrict__ hdr,
                       const u32* __restrict__ lut, const u8* __restrict__ low, const u64* __restrict__ sel,
                       u64 tasks, u16* __restrict__ out, Geo g) {
    __shared__ Tables t;
    load_tables(t, lut);
    const u32 warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int rows_per_block = LAYOUT == 0 ? 8 : 16;
    for (u64 task = (u64)blockIdx.x * NWC_WARPS + warp; task < tasks; task += (u64)gridDim.x * NWC_WARPS) {
        u64 rb, cb, want = ~0ull, out_row_of_want = 0;
        if (sel) {
            const u64 o = task / g.col_blocks;
            cb = task % g.col_blocks;
            want = sel[o];
            out_row_of_want = o;
            rb = want / rows_per_block;
        } else {
            rb = task / g.col_blocks;
            cb = task % g.col_blocks;
        }
        BitReader s = lane_reader(data, bases, hdr, rb * g.col_blocks + cb, lane);
        if (LAYOUT == 0) {
            const u64 col0 = 512 * cb + 16 * lane;
            const u64 stride = FP8 ? g.k16 / 2 : g.k16;
#pragma unroll 1
            for (int i = 0; i < 8; i++) {
                const u64 row = 8 * rb + i;
                const bool write = row < g.rows && col0 < g.k16 && (!sel || row == want);
                u32 r[4] = {0, 0, 0, 0};
                if (write) load_raw<FP8>(low + row * stride + (FP8 ? col0 / 2 : col0), r);
                u32 packed[8];
#pragma unroll
                for (int p = 0; p < 8; p++) {
                    u32 c0, c1;
                    read_pair<FP8>(s, t, c0, c1);
                    packed[p] = weight_word<FP8>(c0, raw_part<FP8>(r, 2 * p)) |
                                (weight_word<FP8>(c1, raw_part<FP8>(r, 2 * p + 1)) << 16);
                }
                if (write) {
                    const u64 orow = sel ? out_row_of_want : row;
                    uint4* dst = reinterpret_cast<uint4*>(out + orow * g.k16 + col0);
                    dst[0] = make_uint4(packed[0], packed[1], packed[2], packed[3]);
                    dst[1] = make_uint4(packed[4], packed[5], packed[6], packed[7]);
                }
            }
        } else {
            const u32 r8 = lane >> 2, q = lane & 3;
            const u64 row0 = 16 * rb + r8, row1 = row0 + 8;
            const bool w0 = row0 < g.rows && (!sel || row0 == want);
            const bool w1 = row1 < g.rows && (!sel || row1 == want);
            const u64 orow0 = sel ? out_row_of_want : row0, orow1 = sel ? out_row_of_want : row1;
            u64 chunks = g.super_chunks - 16 * cb;
            if (chunks > 16) chunks = 16;
#pragma unroll 1
            for (u64 sc = 16 * cb; sc < 16 * cb + chunks; sc++) {
                const u64 lane_start = (rb * g.super_chunks + sc) * 32 + lane;
                u32 r[4];
                load_raw<FP8>(low + lane_start * (FP8 ? 8 : 16), r);
                const u64 col0 = 32 * sc + 8 * q;
#pragma unroll
                for (int p = 0; p < 8; p++) {
                    u32 c0, c1;
                    read_pair<FP8>(s, t, c0, c1);
                    const u64 col = col0 + 2 * (p >> 1);
                    const u32 pair = weight_word<FP8>(c0, raw_part<FP8>(r, 2 * p)) |
                                     (weight_word<FP8>(c1, raw_part<FP8>(r, 2 * p + 1)) << 16);
                    const bool h = p & 1;
                    // col is even and K16 is even, so col < K16 means both columns are inside.
                    if ((h ? w1 : w0) && col < g.k16)
                        *reinterpret_cast<u32*>(out + (h ? orow1 : orow0) * g.k16 + col) = pair;
                }
            }
        }
    }
}

#define NWC_EXPAND(NAME, LAYOUT, FP8)                                                                          \
    extern "C" __global__ void __launch_bounds__(NWC_THREADS)                                                  \
        NAME(const u8* data, const u32* bases, const u8* hdr, const u32* lut, const u8* low, const u64* sel,   \
             u64 tasks, u16* out, Geo g) {                                                                     \
        expand<LAYOUT, FP8>(data, bases, hdr, lut, low, sel, tasks, out, g);                                   \
    }
NWC_EXPAND(nwc_gather_bf16_l0, 0, false)
NWC_EXPAND(nwc_gather_fp8_l0, 0, true)
NWC_EXPAND(nwc_gather_bf16_l1, 1, false)
NWC_EXPAND(nwc_gather_fp8_l1, 1, true)
