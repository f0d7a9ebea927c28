// Bench only: the step kernel (kernels/exec_tensor_step.cu) at 9..16 columns per decode, where
// the stream kernel of exec_tensor.cu replaced it (docs/gpu.md, "Execution layout").

EXEC_MMAS(bench_exec_tensor_step_n2, 1, 2, 4, 2)
