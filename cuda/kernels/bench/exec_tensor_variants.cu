// Bench-only variant and probe of the bounded strip kernel (exec_tensor_strip.cu), timed beside it
// by `nwc-gpu-bench --exec-batch` (session 13):
// - bench_exec_tensor_strip_n2_xchunk: 16 columns with each chunk's activation fragments loaded
//   as its mma need them, as at 32 columns (checked against spec 19 by `--exec-sweep`);
// - bench_exec_tensor_strip_probe_raw_n*: the loaded words used as weights, no decode and no
//   patch (a ceiling probe, never compared), up to 16 columns;
// - bench_exec_tensor_strip_n{1,4}_ra: the patch list's range one item ahead (session 24).
EXEC_TCS(bench_exec_tensor_strip_n2_xchunk, 2, true)
EXEC_TCS_PROBE(bench_exec_tensor_strip_probe_raw_n1, 1, false, 1)
EXEC_TCS_PROBE(bench_exec_tensor_strip_probe_raw_n2, 2, false, 1)
// The production kernels at 8 and 32 columns with the patch list's range alone one item ahead
// (FA = 2; session 24, after the range and first entry ahead spilled at 8 columns), same bounds.
EXEC_TCS_FA(bench_exec_tensor_strip_n1_ra, 1, false, 0, __maxnreg__(80), 2)
EXEC_TCS_FA(bench_exec_tensor_strip_n4_ra, 4, true, 0, __launch_bounds__(512, 1), 2)
