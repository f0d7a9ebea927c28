// Bench-only variant and probe of the bounded strip kernel (exec_tensor_strip.cu), timed beside it
// by `nwc-gpu-bench --exec-batch` (session 13):
// - bench_exec_tensor_strip_n2_xchunk: 16 columns with each chunk's activation fragments loaded
//   as its mma need them, as at 32 columns (checked against spec 19 by `--exec-sweep`);
// - bench_exec_tensor_strip_probe_raw_n*: the loaded words used as weights, no decode and no
//   patch (a ceiling probe, never compared), up to 16 columns.
EXEC_TCS_BENCH(bench_exec_tensor_strip_n2_xchunk, 2, true, 0)
EXEC_TCS_BENCH(bench_exec_tensor_strip_probe_raw_n1, 1, false, 1)
EXEC_TCS_BENCH(bench_exec_tensor_strip_probe_raw_n2, 2, false, 1)
