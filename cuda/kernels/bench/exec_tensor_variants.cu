// Bench-only variant and probe of the bounded strip kernel (exec_tensor_strip.cu), timed beside it
// by `nwc-gpu-bench --exec-batch` (session 13):
// - bench_exec_tensor_strip_n2_xchunk: 16 columns with each chunk's activation fragments loaded
//   as its mma need them, as at 32 columns (checked against spec 19 by `--exec-sweep`);
// - bench_exec_tensor_strip_probe_raw_n*: the loaded words used as weights, no decode and no
//   patch (a ceiling probe, never compared), up to 16 columns.
EXEC_TCS(bench_exec_tensor_strip_n2_xchunk, 2, true)
EXEC_TCS_PROBE(bench_exec_tensor_strip_probe_raw_n1, 1, false, 1)
EXEC_TCS_PROBE(bench_exec_tensor_strip_probe_raw_n2, 2, false, 1)
// - bench_exec_tensor_strip_cluster_n*: the production kernels at 8, 16 and 32 columns, a split
//   launch's CTAs of a row group in one thread-block cluster that adds the splits through
//   distributed shared memory (exec_tc_cluster_out; session 28), no partial-sum buffer and no
//   summing kernel, so that a split launch may be programmatic too.
EXEC_TCS_FULL(bench_exec_tensor_strip_cluster_n1, 1, false, 0, __maxnreg__(80), false, true)
EXEC_TCS_FULL(bench_exec_tensor_strip_cluster_n2, 2, false, 0, __launch_bounds__(512, 1), true, true)
EXEC_TCS_FULL(bench_exec_tensor_strip_cluster_n4, 4, true, 0, __launch_bounds__(512, 1), false, true)
