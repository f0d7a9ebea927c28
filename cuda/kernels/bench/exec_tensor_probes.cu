// Bench-only ceiling probes of the bounded stream kernel (exec_tensor.cu, up to 8 columns per
// decode), timed beside it by `nwc-gpu-bench --exec-batch` (docs/gpu-history.md, session 8); not a
// matvec, never compared:
// - bench_exec_tensor_probe_raw_n1: the stage words as weights (no decode, no escape offsets,
//   no patch), so copies, stage reads, activations, mma and the row-group reduction are timed alone;
// - bench_exec_tensor_probe_nomma_n1: the decode and the patch list without mma (the words and the
//   activations folded by XOR).
EXEC_TC_PROBE(bench_exec_tensor_probe_raw_n1, 1, 4, 1, 1)
EXEC_TC_PROBE(bench_exec_tensor_probe_nomma_n1, 1, 4, 1, 2)

