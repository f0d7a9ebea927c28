// Bench-only ceiling probes of the bounded stream kernel (exec_tensor.cu, up to 8 columns per
// decode), timed beside it by `nwc-gpu-bench --exec-batch` (docs/gpu.md, session 8); not a
// matvec, never compared:
// - bench_exec_tensor_probe_raw_n1: the stage words as weights (no decode, no escape offsets,
//   no patch), so copies, stage reads, activations, mma and the row-group reduction are timed alone;
// - bench_exec_tensor_probe_nomma_n1: the decode and the patch list without mma (the words and the
//   activations folded by XOR).
EXEC_TC_PROBE(bench_exec_tensor_probe_raw_n1, 1, 4, 2, 1, EXEC_TC_LIST)
EXEC_TC_PROBE(bench_exec_tensor_probe_nomma_n1, 1, 4, 2, 2, EXEC_TC_LIST)
// The stream kernel of session 9 (codes tested per item, a warp vote, escape offsets by prefix,
// exec_patch_pairs), timed beside the patch-list kernel that replaced it (docs/gpu.md, session 10).
EXEC_TC_PROBE(bench_exec_tensor_vote_n1, 1, 4, 2, 0, EXEC_TC_VOTE)
EXEC_TC_PROBE(bench_exec_tensor_vote_n2, 2, 4, 2, 0, EXEC_TC_VOTE)

