// Execution layout, bench: the panel kernel (exec_tensor_panel.cu) with 2 row groups per warp
// (panels of 16 row groups, 3 stages of 66 KB): each activation fragment read from shared memory
// feeds 2 mma, and a CTA barrier covers twice the weights.
EXEC_PN(bench_exec_tensor_panel_rg2_n8, 8, 3, 2)
