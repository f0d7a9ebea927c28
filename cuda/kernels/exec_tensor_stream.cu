// Execution layout: the stream kernel of the bounded batched matvec on tensor cores (spec 19,
// 20.15), 1..16 columns per decode; operand mapping and k permutation of exec_tensor.cu (whose
// helpers it uses).
//
// Items: 16 rows x 128 columns of one tile, item i = (gr * CB + cb) * 4 + sub (row group gr,
// tile cb, quarter sub; items past K16 in a short last tile are empty and skipped). Lane (g, t)
// owns rows g and g + 8 and the 32 columns 32 t .. 32 t + 31 of the item (two chunks of 16, each
// fed to 4 mma k-steps with the k order permuted per thread, A and B alike).
//
// Work split (session 10): the I items are cut into T equal contiguous ranges, one per warp of
// the grid (T <= I: the host sizes the grid; I < 2^30 by spec 20.16), warp w taking the q + 1 items
// from (q + 1) w if w < r, else the q items from q w + r (q = I / T, r = I % T), so
// every warp has the same work whatever the shape (before, a CTA owned whole row groups: 6144x4096
// left 27% of the warps idle in its last round, 2560x9728 ran 160 row groups on 132 SMs). A warp
// keeps one accumulator per row group; a row group inside one warp's range is written directly,
// one that crosses ranges is reduced: each contributing warp stores its partial sums in a scratch
// slot (2 per warp: slot 0 for the row group its range starts in, 1 for a later one; a range has at
// most one split row group of each kind), counts itself with one atomic per row group, and the warp
// that counts last adds the contributors' partials in ascending warp order (spec 19: any fixed
// order) and sets the counter back to zero for the next launch. No CTA barrier anywhere: warps are
// independent. The host gives every warp at least 4 items where the matrix has them.
//
// Codes 0 and 15: every pair is decoded by the fast path, then the pairs of the item's patch list
// (exec_derived.cu; its offsets arrive with the stage) are overwritten, so a clean item runs no
// code test, vote or escape count; a dense item's list holds each row's escape offset instead,
// and the item takes the per-pair patch (exec_patch_pairs) after a prefix over the row's lanes.
//
// Stage per item: sm [16][128], codes [16][64], the item's list range (2 words).
#define EXEC_TC_CODES 2048
#define EXEC_TC_ESC 3072
#define EXEC_TC_STAGE 3088

// The first (normalized) item of a range and the cursor that walks it: i, and its (gr, cb, sub).
struct ExecTcCursor {
    exec_u32 i, gr, cb, sub;
};

// PROBE (bench only, kernels/bench/exec_tensor_probes.cu): 1 = the stage words as weights (no
// decode, no patch), 2 = decode without mma; production instantiates PROBE = 0 only.
template <int NT, int D, int PROBE = 0>
__device__ __forceinline__ void exec_tc_body(EXEC_MATVEC_PARAMS(exec_u16), const exec_u32* __restrict__ poff,
                                             const uint2* __restrict__ pent, float* __restrict__ part,
                                             exec_u32* __restrict__ count) {
    constexpr int COLS = NT * 8;
    extern __shared__ __align__(16) exec_u8 exec_stage[];
    const exec_u32 K16 = (K + 15u) & ~15u;
    const exec_u32 CB = (K + 511u) >> 9;
    const exec_u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const exec_u32 g = lane >> 2, t = lane & 3u;
    const exec_u64 ngroups = ((exec_u64)M + 15) / 16;
    const exec_u32 st = exec_sa(exec_stage) + warp * (D * EXEC_TC_STAGE);
    const exec_u8* sb = exec_stage + (exec_u64)warp * D * EXEC_TC_STAGE;
    // items of a row group, the last non-empty one's index within it
    const exec_u32 per_group = 4u * CB;
    const exec_u32 last_in_group = 4u * (CB - 1) + ((K16 - (CB - 1) * 512u + 127u) >> 7) - 1;
    const exec_u32 I = (exec_u32)ngroups * per_group;
    const exec_u32 T = gridDim.x * nwarps, tw = blockIdx.x * nwarps + warp;
    const exec_u32 q = I / T, r = I % T;  // u32 divisions, once
    auto range_start = [&](exec_u32 w) { return q * w + min(w, r); };
    auto owner = [&](exec_u32 i) { return i < (q + 1) * r ? i / (q + 1) : r + (i - (q + 1) * r) / q; };
    const exec_u32 i0 = range_start(tw), i1 = range_start(tw + 1);

    auto normalize = [&](ExecTcCursor& c) {  // an empty item (past K16) -> the next row group
        if (c.cb * 512u + c.sub * 128u >= K16) {
            c.i += 4u - c.sub;
            c.sub = 0;
            c.cb = 0;
            ++c.gr;
        }
    };
    auto advance = [&](ExecTcCursor& c) {
        ++c.i;
        if (++c.sub == 4u) {
            c.sub = 0;
            if (++c.cb == CB) {
                c.cb = 0;
                ++c.gr;
            }
        }
        normalize(c);
    };
    ExecTcCursor first;
    first.i = i0;
    first.gr = i0 / per_group;
    first.cb = (i0 - first.gr * per_group) >> 2;
    first.sub = i0 & 3u;
    normalize(first);

    // issue side: the same item sequence as the compute loop.
    // Lane L copies 16 bytes of sm rows (L >> 3) + 4 i (i < 4) at (L & 7) * 16
    // and, in a whole item (16 rows, 128 columns, K16 % 32 == 0 so code rows are 16-byte aligned),
    // 16 bytes of code rows (L >> 2) + 8 i (i < 2) at (L & 3) * 16, without predicates; other items
    // copy 8 bytes of code rows (L >> 3) + 4 i at (L & 7) * 8 beside each sm piece. Addresses: row
    // pointers set once per row group (64-bit: M * K16 < 2^41, spec 20.16), plus the item's column
    // and a stride of 4 sm rows (session 9: +8-10% against 8 copies a lane whose 64-bit addresses
    // came from row, tile and item).
    ExecTcCursor ic = first;
    exec_u32 istage = 0, ivalid = 0, igr = ~0u;
    const exec_u8* ps = sm;
    const exec_u8* pc = codes;  // code row (L >> 2), 16-byte pieces
    const exec_u8* pe = codes;  // code row (L >> 3), 8-byte pieces
    const exec_u64 rs = 4ull * K16;  // 4 sm rows = 8 code rows, in bytes
    auto issue = [&]() {
        if (ic.i < i1) {
            if (ic.gr != igr) {
                igr = ic.gr;
                const exec_u64 row0 = (exec_u64)igr * 16;
                ivalid = (exec_u32)min((exec_u64)16, (exec_u64)M - row0);
                ps = sm + (row0 + (lane >> 3)) * K16 + (lane & 7u) * 16u;
                pc = codes + (row0 + (lane >> 2)) * (K16 >> 1) + (lane & 3u) * 16u;
                pe = codes + (row0 + (lane >> 3)) * (K16 >> 1) + (lane & 7u) * 8u;
            }
            const exec_u32 sd = st + istage * EXEC_TC_STAGE;
            const exec_u32 off = ic.cb * 512u + ic.sub * 128u;
            const exec_u32 dsm = sd + (lane >> 3) * 128u + (lane & 7u) * 16u;
            const exec_u8* s0 = ps + off;
            if (ivalid == 16u && off + 128u <= K16 && (K16 & 31u) == 0u) {  // warp-uniform: a whole item, 16-byte code rows
                const exec_u32 dcd = sd + EXEC_TC_CODES + (lane >> 2) * 64u + (lane & 3u) * 16u;
                const exec_u8* c0 = pc + (off >> 1);
#pragma unroll
                for (exec_u32 i = 0; i < 4; ++i) exec_cp16(dsm + i * 512u, s0 + i * rs);
#pragma unroll
                for (exec_u32 i = 0; i < 2; ++i) exec_cp16(dcd + i * 512u, c0 + i * rs);
            } else {  // code rows as 8-byte pieces, mapped like the sm rows
                const exec_u32 dcd = sd + EXEC_TC_CODES + (lane >> 3) * 64u + (lane & 7u) * 8u;
                const exec_u8* c0 = pe + (off >> 1);
                const bool lv = off + (lane & 7u) * 16u < K16;
#pragma unroll
                for (exec_u32 i = 0; i < 4; ++i)
                    if (lv && (lane >> 3) + 4u * i < ivalid) {
                        exec_cp16(dsm + i * 512u, s0 + i * rs);
                        exec_cp8(dcd + i * 256u, c0 + i * (rs >> 1));
                    }
            }
            if (lane < 2u) exec_cp4(sd + EXEC_TC_ESC + lane * 4u, poff + ic.i + lane);  // the item's list range
            advance(ic);
        }
        istage = istage + 1 == (exec_u32)D ? 0u : istage + 1;
        exec_cp_commit();
    };
#pragma unroll
    for (int d = 0; d < D - 1; ++d) issue();

    // A row group's sums: written directly when the whole group is in this warp's range, else
    // through the scratch and the last contributor (above). Thread (g, t) holds rows g, g + 8 and
    // columns 8 nt + 2 t + {0, 1} (the mma C fragment).
    float acc[NT][4];
    auto flush = [&](exec_u32 gr) {
        const exec_u32 g0 = gr * per_group, gl = g0 + last_in_group;
        const exec_u64 row0 = (exec_u64)gr * 16;
        bool write = true;
        if (!(i0 <= g0 && i1 > gl)) {
            const exec_u32 tlo = owner(g0), thi = owner(gl);
            auto slot = [&](exec_u32 w) { return part + (exec_u64)(2 * w + (range_start(w) < g0 ? 1u : 0u)) * (16u * COLS); };
            // thread (g, t): rows g and g + 8 of columns 8 nt + 2 t, + 1: two float2 per n-tile
            auto at = [&](int nt, int hh) { return (g + 8u * hh) * COLS + 8u * nt + 2u * t; };
            float* mine = slot(tw);
#pragma unroll
            for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                for (int hh = 0; hh < 2; ++hh)
                    *reinterpret_cast<float2*>(mine + at(nt, hh)) = make_float2(acc[nt][2 * hh], acc[nt][2 * hh + 1]);
            __threadfence();
            __syncwarp();
            exec_u32 before = 0;
            if (lane == 0u) before = atomicAdd(count + gr, 1u);
            before = __shfl_sync(EXEC_FULL, before, 0);
            write = before == thi - tlo;
            if (write) {
                __threadfence();
                // the contributors in ascending order, RB at a time: their loads are in flight
                // together (one L2 round trip per RB contributors, not per value)
                constexpr int RB = 8 / NT;
                float sum[NT][4];
                for (exec_u32 w0 = tlo; w0 <= thi; w0 += RB) {
                    float2 v[RB][NT][2];
#pragma unroll
                    for (int qq = 0; qq < RB; ++qq) {
                        const exec_u32 w = w0 + qq;
                        const float* sp = slot(w);
#pragma unroll
                        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                            for (int hh = 0; hh < 2; ++hh) {
                                v[qq][nt][hh] = make_float2(acc[nt][2 * hh], acc[nt][2 * hh + 1]);
                                if (w <= thi && w != tw) v[qq][nt][hh] = __ldcg(reinterpret_cast<const float2*>(sp + at(nt, hh)));
                            }
                    }
#pragma unroll
                    for (int qq = 0; qq < RB; ++qq) {
                        if (w0 + qq > thi) break;
#pragma unroll
                        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                            for (int hh = 0; hh < 2; ++hh) {
                                const float lo = v[qq][nt][hh].x, hi = v[qq][nt][hh].y;
                                const bool head = w0 + qq == tlo;
                                sum[nt][2 * hh] = head ? lo : __fadd_rn(sum[nt][2 * hh], lo);
                                sum[nt][2 * hh + 1] = head ? hi : __fadd_rn(sum[nt][2 * hh + 1], hi);
                            }
                    }
                }
#pragma unroll
                for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                    for (int i = 0; i < 4; ++i) acc[nt][i] = sum[nt][i];
                if (lane == 0u) count[gr] = 0u;  // ready for the next launch (kernel boundaries order it)
            }
        }
        if (write) {
#pragma unroll
            for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const exec_u64 m = row0 + g + 8u * (i >> 1);
                    const exec_u32 n = 8u * nt + 2u * t + (i & 1);
                    if (m >= M || n >= ncols) continue;
                    float sum = acc[nt][i];
                    if (bias) sum = __fadd_rn(sum, bias[m]);
                    if (out_bf16)
                        reinterpret_cast<exec_u16*>(y)[n * ldy + m] = exec_bf16_rne(sum);
                    else
                        reinterpret_cast<float*>(y)[n * ldy + m] = sum;
                }
        }
    };

    exec_u32 cstage = 0;
    ExecTcCursor c = first;
    exec_u32 rbase[2] = {1u, 1u};
    bool rv[2] = {false, false};
    exec_u32 cur;
    while (c.i < i1) {  // one row group per pass: its items, then its flush
        cur = c.gr;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const exec_u64 m = (exec_u64)cur * 16 + 8 * h + g;
            rv[h] = m < M;
            rbase[h] = rv[h] ? (exec_u32)__ldg(base + m) : 1u;
        }
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int i = 0; i < 4; ++i) acc[nt][i] = 0.0f;
        do {
            const exec_u32 kc = c.cb * 512u + c.sub * 128u + 32u * t;
            uint4 xv[NT][4];
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) {
                const exec_u32 n = nt * 8u + g;
#pragma unroll
                for (int j = 0; j < 2; ++j) {
                    xv[nt][2 * j] = xv[nt][2 * j + 1] = make_uint4(0u, 0u, 0u, 0u);
                    if (n < ncols && kc + 16u * j < K16) {
                        const uint4* xp = reinterpret_cast<const uint4*>(x + (exec_u64)n * ldx + kc + 16u * j);
                        xv[nt][2 * j] = __ldg(xp);
                        xv[nt][2 * j + 1] = __ldg(xp + 1);
                    }
                }
            }
            // Lanes read stage bytes other lanes copied: every lane is done with the
            // stage this issue refills, and after the wait every lane's copies have landed.
            __syncwarp();
            issue();
            exec_cp_wait<D - 1>();
            __syncwarp();
            const exec_u8* sd = sb + cstage * EXEC_TC_STAGE;
            cstage = cstage + 1 == (exec_u32)D ? 0u : cstage + 1;
            uint4 sv[2][2];
            uint2 cv[2][2];
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const exec_u32 row = 8 * h + g;
#pragma unroll
                for (int j = 0; j < 2; ++j) {
                    sv[h][j] = make_uint4(0u, 0u, 0u, 0u);
                    cv[h][j] = make_uint2(0x11111111u, 0x11111111u);  // no weight: code 1, sm 0, x 0
                    if (rv[h] && kc + 16u * j < K16) {
                        sv[h][j] = *reinterpret_cast<const uint4*>(sd + row * 128 + 32 * t + 16 * j);
                        cv[h][j] = *reinterpret_cast<const uint2*>(sd + EXEC_TC_CODES + row * 64 + 16 * t + 8 * j);
                    }
                }
            }
            // the item's entries (warp-uniform range); the first is loaded before the decode
            const uint2 range = *reinterpret_cast<const uint2*>(sd + EXEC_TC_ESC);
            const uint2 e0 = PROBE != 1 && range.x != range.y ? __ldg(pent + range.x) : make_uint2(0u, 0u);
            // a dense item (exec_derived.cu): one entry per row, its escape offset at the item
            const bool dense = PROBE != 1 && range.x != range.y && (e0.x & EXEC_PLIST_DENSE) != 0u;
            const bool listed = PROBE != 1 && range.x != range.y && !dense;
            exec_u32 eoff[2] = {0u, 0u};  // E <= 2^32 - 1 (spec 20.2)
            exec_u32 n0[2] = {0u, 0u};
            if (dense) {
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    n0[h] = exec_count15(cv[h][0].x) + exec_count15(cv[h][0].y);
                    const exec_u32 n = n0[h] + exec_count15(cv[h][1].x) + exec_count15(cv[h][1].y);
                    exec_u32 item_rel = 0u;
                    const exec_u32 tr = rv[h] ? __ldg(pent + range.x + 8 * h + g).y : 0u;
                    eoff[h] = exec_tc_esc_offset(n, t, tr, item_rel);
                }
            }
#pragma unroll
            for (int j = 0; j < 2; ++j) {
                exec_u32 w[2][8];
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    if (PROBE == 1) {
                        const uint4 a = sv[h][j];
                        const uint2 cw = cv[h][j];
                        const exec_u32 raw[8] = {a.x, a.y, a.z, a.w, cw.x, cw.y, a.x ^ cw.y, a.w ^ cw.x};
#pragma unroll
                        for (int p = 0; p < 8; ++p) w[h][p] = raw[p];
                    } else {
                        exec_pairs16_fast(cv[h][j], sv[h][j], exec_b2(rbase[h]), w[h]);
                        if (dense && !exec_plain16(cv[h][j]))
                            exec_patch_pairs(cv[h][j], sv[h][j], rbase[h], esc, eoff[h] + (j ? n0[h] : 0u), w[h]);
                    }
                }
                if (listed) {
                    // entry pos = r << 6 | q: row r = 8 h + g, pair q of the item = 16 t + 8 j + p
#pragma unroll 1
                    for (exec_u32 e = range.x; e < range.y; ++e) {
                        const uint2 en = e == range.x ? e0 : __ldg(pent + e);
                        const exec_u32 r = en.x >> 6, q = en.x & 63u;
                        // one bit per word of w (h * 8 + p), set in the owner lane only: a
                        // select per word keeps w in registers (an indexed store would not)
                        const exec_u32 mine = ((q >> 3) & 1u) == (exec_u32)j && ((r & 7u) << 2 | (q >> 4)) == lane
                                                  ? 1u << ((r >> 3) * 8u + (q & 7u))
                                                  : 0u;
#pragma unroll
                        for (int h = 0; h < 2; ++h)
#pragma unroll
                            for (int p = 0; p < 8; ++p) w[h][p] = (mine >> (h * 8 + p)) & 1u ? en.y : w[h][p];
                    }
                }
#pragma unroll
                for (int nt = 0; nt < NT; ++nt) {
                    if (PROBE == 2) {
                        // Probe 2, no mma: the decoded words and the activations folded by XOR.
                        exec_u32 f = xv[nt][2 * j].x ^ xv[nt][2 * j + 1].w;
#pragma unroll
                        for (int p = 0; p < 8; ++p) f ^= w[0][p] ^ w[1][p];
                        acc[nt][0] = __uint_as_float(__float_as_uint(acc[nt][0]) ^ f);
                    } else {
                        exec_tc_mma16(acc[nt], w[0], w[1], xv[nt][2 * j], xv[nt][2 * j + 1]);
                    }
                }
            }
            advance(c);
        } while (c.i < i1 && c.gr == cur);
        flush(cur);
    }
    exec_cp_wait<0>();
}

// Parameters: EXEC_MATVEC_PARAMS, the patch list's offsets and entries (exec_derived.cu), the
// reduction scratch (2 slots of 16 x 8 NT floats per warp of the grid) and one counter per row
// group (zero before the launch, left zero).
#define EXEC_TC_PROBE(NAME, NT, D, MINB, PROBE)                                                             \
    extern "C" __global__ void __launch_bounds__(256, MINB)                                                 \
        NAME(EXEC_MATVEC_PARAMS(exec_u16), const exec_u32* __restrict__ poff, const uint2* __restrict__ pent, \
             float* __restrict__ part, exec_u32* __restrict__ count) {                                       \
        exec_tc_body<NT, D, PROBE>(sm, codes, base, esc_start, esc, M, K, x, ldx, ncols, bias, y, ldy, out_bf16, \
                                   poff, pent, part, count);                                                 \
    }
#define EXEC_TC(NAME, NT, D, MINB) EXEC_TC_PROBE(NAME, NT, D, MINB, 0)

EXEC_TC(exec_tensor_stream_n1, 1, 4, 2)
EXEC_TC(exec_tensor_stream_n2, 2, 4, 2)
