// Bench-only variant and probe of the bounded strip kernel (exec_tensor_strip.cu), timed beside it
// by `nwc-gpu-bench --exec-batch` (session 13):
// - bench_exec_tensor_strip_n2_xchunk: 16 columns with each chunk's activation fragments loaded
//   as its mma need them, as at 32 columns (checked against spec 19 by `--exec-sweep`);
// - bench_exec_tensor_strip_probe_raw_n*: the loaded words used as weights, no decode and no
//   patch (a ceiling probe, never compared), up to 16 columns.
EXEC_TCS(bench_exec_tensor_strip_n2_xchunk, 2, true)
EXEC_TCS_PROBE(bench_exec_tensor_strip_probe_raw_n1, 1, false, 1)
EXEC_TCS_PROBE(bench_exec_tensor_strip_probe_raw_n2, 2, false, 1)
// Session 18, the activation fragments' sectors (docs/gpu.md, "Session 18"):
// - bench_exec_tensor_strip_s8_n*: the strip kernel with the EXEC_TC_SPLIT8 map (each thread's
//   chunk as two runs of 8 columns, so a warp's fragment load uses whole 32-byte sectors; twice
//   the weight loads, 8 and 4 bytes each), 8 to 64 columns (64: fragments 4 n-tiles at a time);
// - bench_exec_tensor_strip_n8: the production map at 64 columns, to set beside the panel kernel.
// At 64 columns CTAs of at most 8 warps, so that a thread may hold up to 255 registers (the
// accumulators alone take 32).
EXEC_TCS_MAP(bench_exec_tensor_strip_s8_n1, 1, false, 0, EXEC_TC_SPLIT8, 512)
EXEC_TCS_MAP(bench_exec_tensor_strip_s8_n2, 2, false, 0, EXEC_TC_SPLIT8, 512)
EXEC_TCS_MAP(bench_exec_tensor_strip_s8_n4, 4, true, 0, EXEC_TC_SPLIT8, 512)
EXEC_TCS_MAP(bench_exec_tensor_strip_s8_n8, 8, true, 0, EXEC_TC_SPLIT8, 256)
EXEC_TCS_MAP(bench_exec_tensor_strip_n8, 8, true, 0, EXEC_TC_INTERLEAVE, 256)
