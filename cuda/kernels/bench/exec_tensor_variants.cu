// Bench-only variant of the bounded strip kernel (exec_tensor_strip.cu), checked against spec 19 by
// `nwc-gpu-bench --exec-sweep` and timed beside it by `--exec-batch` (session 13): 16 columns with
// each chunk's activation fragments loaded as its mma need them, as at 32 columns.
EXEC_TCS(bench_exec_tensor_strip_n2_xchunk, 2, true)
