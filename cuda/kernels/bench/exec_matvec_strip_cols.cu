// Bench (session 36): the CTA strip kernel on two and on four columns per decode (`var-strip-c2`,
// `var-strip-c4`; ExecMatvecKernel::VarStripC2 / VarStripC4), the exact class at batches 2..4.
// The question it answers: whether a small batch on the CUDA cores beats the bounded strip kernel
// (tensor cores) where the one-column CTA kernel beats it by more than the extra columns cost.
// Session 35 measured a second column's cost on W1 (1.02-1.15x of the one-column time) and the
// lead per shape at N = 1 (exact against bounded: 2432x6912 11.77 / 13.79 us, 3072x9216 14.92 /
// 17.09, 2560x9728 14.09 / 15.77, 1000x3000 3.72 / 5.22), all on shapes where production runs the
// CTA kernel, not W1. Four columns aim at the launches that latency, not bandwidth, holds (small
// matrices under one round, 1000x3000: each warp runs one group), where more FMAs per weight cost
// little beside the launch and the loads.
// exec_strip_body with NC columns: each row's 16 weights per lane decoded once (exec_strip_row),
// NC chains of 16 FMAs and NC transposed trees per group, the lane's NC x 16 activations of the tile
// in registers for the unit, and NC x RB x CB tile partials in shared memory, summed per row and
// column after the CTA barrier. Each column's result is spec 20.15's (the same chain, tree and adds
// in the same order as the one-column kernel's), so runs are checked bit for bit against one
// production launch per column. S is always read from the argument (exec/variant.rs plans it by
// exec/strip.rs's rule with the partials of NC columns). ncols 1..NC; the columns past ncols
// compute the last one again and are not stored.

// Same argument list as EXEC_STRIP; NREG registers at most. Two columns: the second column's 16
// activations on top of the CTA kernel's 80 registers, held to 96 (21 resident warps per SM on
// the H200), where it spills 24 / 24 bytes outside the group loop (two local loads per unit, as
// the one-column kernel's at 80); unheld it takes 103 without spills (19 warps). Main path per
// group of 4 rows 494 SASS instructions (`_xbf16` 503; 128 FFMA) against the one-column kernel's
// 409 (`_slices` 416; 64 FFMA). Four columns: 128 registers without spills (16 warps; unheld
// 145), 673 instructions per group (`_xbf16` 672; 256 FFMA). As `bash cuda/sass.sh
// 'bench_exec_matvec_strip_c[24]' --bench` counts them.
#define BENCH_STRIP_COLS(NAME, NC, NREG, LATE, XT)                                                         \
    extern "C" __global__ void __maxnreg__(NREG)                                                           \
        NAME(EXEC_MATVEC_PARAMS(XT), exec_u32 RS, exec_u32 S, const exec_u8* __restrict__ flags) {       \
        exec_strip_body<0, LATE, 1, NC, XT>(sm, codes, base, esc_start, esc, M, K, x, ldx, ncols, bias, y, ldy, out_bf16, RS, S, flags); \
    }

BENCH_STRIP_COLS(bench_exec_matvec_strip_c2, 2, 96, 0, float)
BENCH_STRIP_COLS(bench_exec_matvec_strip_c2_release_end, 2, 96, 1, float)
BENCH_STRIP_COLS(bench_exec_matvec_strip_c2_xbf16, 2, 96, 0, exec_u16)
BENCH_STRIP_COLS(bench_exec_matvec_strip_c2_release_end_xbf16, 2, 96, 1, exec_u16)
BENCH_STRIP_COLS(bench_exec_matvec_strip_c4, 4, 128, 0, float)
BENCH_STRIP_COLS(bench_exec_matvec_strip_c4_release_end, 4, 128, 1, float)
BENCH_STRIP_COLS(bench_exec_matvec_strip_c4_xbf16, 4, 128, 0, exec_u16)
BENCH_STRIP_COLS(bench_exec_matvec_strip_c4_release_end_xbf16, 4, 128, 1, exec_u16)
