//! # nwc-cuda
//!
//! NWC format 10 on CUDA GPUs through `cudarc`: upload an encoded matrix (validated on the host by
//! the reference decoder first, so no malformed stream reaches a kernel), dequant to BF16
//! (spec 15.2), gather rows (spec 15.3) and the fused matvec `y = scale * (W x) + bias` in the
//! canonical accumulation order (spec 15.4), bit-exact with `nwc-reference`. Layout 1 matrices
//! can instead run the bounded matvec on tensor cores ([`MatvecKernel::Bounded`]): decoding stays
//! exact and each output is within the bound of spec 19 (`nwc_reference::bounded`) of the
//! canonical one.
//!
//! On compute capability 9.0 and later the exact matvecs and the bounded strip kernel are launched
//! programmatically ([`DependentLaunch`]): a launch may start while the kernel before it on the
//! stream finishes, and waits for that kernel before it touches anything another kernel may write.
//!
//! Kernels live in `kernels/*.cu`, one file per role ([`kernels`]), and are compiled by NVRTC at
//! run time for the device's architecture, once per process and device ([`Gpu::get`]). The
//! `bench` feature adds the superseded versions, timing probes and the fp8 baseline that
//! `nwc-gpu-bench` measures; production builds never compile them.

pub mod exec;
#[cfg(feature = "bench")]
pub mod fp8_native;
pub mod gpu;
mod host_rows;
pub mod kernels;
mod launch;
pub mod matrix;
pub mod pair_table;

pub use gpu::Gpu;
pub use launch::DependentLaunch;
#[cfg(feature = "bench")]
pub use matrix::Probe;
pub use matrix::{DequantKernel, DeviceActivations, GpuMatrix, MatvecKernel, OutputKind};

/// Everything that can go wrong on the GPU path.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// No driver library, no device, or the driver refused to initialise.
    #[error("no CUDA device: {0}")]
    NoDevice(String),
    #[error("CUDA driver error: {0}")]
    Driver(#[from] cudarc::driver::DriverError),
    /// NVRTC is missing or rejected the kernel source (the log is included).
    #[error("NVRTC could not compile kernels/*.cu: {0}")]
    Compile(String),
    /// The host-side validation (spec 13) rejected the matrix; it never reached the device.
    #[error("matrix rejected before upload: {0}")]
    Invalid(#[from] nwc_reference::DecodeError),
    /// The host-side validation (spec 20.9) rejected an execution-layout matrix.
    #[error("execution-layout matrix rejected before upload: {0}")]
    ExecInvalid(#[from] nwc_reference::exec::ExecDecodeError),
    /// No execution layout for this matrix (FP8, too many escapes: spec 20.12).
    #[error("no execution layout: {0}")]
    ExecEncode(nwc_reference::exec::ExecEncodeError),
    /// A bad argument (row index, activation length, empty batch).
    #[error(transparent)]
    Param(#[from] nwc_reference::ParamError),
    /// A kernel choice that has no kernel for this matrix (e.g. the bounded matvec on layout 0).
    #[error("the {kernel} kernel does not run on {mode} matrices")]
    KernelMismatch { kernel: String, mode: nwc_reference::Mode },
    /// A kernel name that names no choice (a command-line flag or environment variable).
    #[error("unknown {what} kernel {got:?} (choose one of: {choices})")]
    UnknownKernel { what: &'static str, got: String, choices: String },
    /// An entry point this build did not load (a bench kernel without the `bench` feature).
    #[error("kernel {0} is not loaded by this build")]
    MissingKernel(String),
    /// An operation this matrix or these arguments do not support (timing probes: BF16 layout 0,
    /// one vector of BF16 activations).
    #[error("not supported: {0}")]
    Unsupported(&'static str),
    /// Data derived at load does not fit its index type (the bounded kernel's patch list holds
    /// at most 2^32 - 1 entries; kernels/exec_derived.cu).
    #[error("the {what} of this matrix needs {got} entries, more than {limit}")]
    DerivedTooLarge { what: &'static str, got: u64, limit: u64 },
}

/// The exact line a test that needs a device prints when there is none (it then counts as skipped).
pub const SKIP_NO_DEVICE: &str = "skipped: no CUDA device";
