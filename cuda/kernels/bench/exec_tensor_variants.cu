// Bench-only variant and probe of the bounded strip kernel (exec_tensor_strip.cu), timed beside it
// by `nwc-gpu-bench --exec-batch` (session 13):
// - bench_exec_tensor_strip_n2_xchunk: 16 columns with each chunk's activation fragments loaded
//   as its mma need them, as at 32 columns (checked against spec 19 by `--exec-sweep`);
// - bench_exec_tensor_strip_probe_raw_n*: the loaded words used as weights, no decode and no
//   patch (a ceiling probe, never compared), up to 16 columns.
EXEC_TCS(bench_exec_tensor_strip_n2_xchunk, 2, true)
EXEC_TCS_PROBE(bench_exec_tensor_strip_probe_raw_n1, 1, false, 1)
EXEC_TCS_PROBE(bench_exec_tensor_strip_probe_raw_n2, 2, false, 1)

// bench_exec_tensor_strip_n{1,2}_r{80,96}: the production kernel held to 80 or 96 registers
// (session 23): 24 or 20 resident warps per SM against 93 registers' 20 and 123's 16.
#define EXEC_TCS_REGS(NAME, NT, REGS)                                                                                   \
    extern "C" __global__ void __maxnreg__(REGS)                                                                         \
        NAME(EXEC_MATVEC_PARAMS(exec_u16), const exec_u32* __restrict__ poff, const uint2* __restrict__ pent,           \
             float* __restrict__ part, exec_u32 splits) {                                                              \
        exec_tcs_body<NT, false, 0>(sm, codes, base, esc_start, esc, M, K, x, ldx, ncols, bias, y, ldy, out_bf16, poff, pent, \
                                    part, splits);                                                                     \
    }
EXEC_TCS_REGS(bench_exec_tensor_strip_n1_r80, 1, 80)
EXEC_TCS_REGS(bench_exec_tensor_strip_n1_r72, 1, 72)
EXEC_TCS_REGS(bench_exec_tensor_strip_n2_r96, 2, 96)
EXEC_TCS_REGS(bench_exec_tensor_strip_n2_r80, 2, 80)
