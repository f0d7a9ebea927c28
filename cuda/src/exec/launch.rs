//! Programmatic dependent launch (PDL, sm_90+) for the one-column strip kernels.
//!
//! A kernel launched with the driver's programmatic-serialization attribute may start while the
//! kernel before it on the stream is still running, once every CTA of that kernel has called
//! `griddepcontrol.launch_dependents` (or exited). The strip kernels ask L2 for the first rows of
//! their weights, then wait (`exec_pdl_wait`, kernels/exec_common.cu) for the kernel before them
//! to finish before they read the activations or store anything, so the result is the same; only
//! the time between two kernels changes. Measured in docs/gpu.md ("Session 21").

use cudarc::driver::{sys, CudaFunction, CudaStream, DriverError, LaunchConfig};
use std::ffi::c_void;

/// How an execution-layout matvec launch is ordered after the kernel before it on the stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DependentLaunch {
    /// The plain order: the kernel starts when the one before it has finished.
    Serial,
    /// Programmatic dependent launch where the kernel waits for its predecessor itself (the
    /// strip kernels) and the device has it (compute capability 9.0 and later); elsewhere
    /// `Serial`. The default.
    #[default]
    Programmatic,
}

impl DependentLaunch {
    /// Every choice, by the name the bench's flags take.
    pub const ALL: [(&'static str, DependentLaunch); 2] =
        [("serial", DependentLaunch::Serial), ("programmatic", DependentLaunch::Programmatic)];

    /// The choice `name` names; an unknown name is an error listing the choices.
    pub fn parse(name: &str) -> Result<DependentLaunch, crate::GpuError> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|&(_, d)| d).ok_or_else(|| crate::GpuError::UnknownKernel {
            what: "dependent-launch",
            got: name.to_owned(),
            choices: Self::ALL.map(|(n, _)| n).join(", "),
        })
    }
}

/// One kernel argument, by value, in the width the entry point declares.
#[derive(Clone, Copy, Debug)]
pub(super) enum Arg {
    U64(u64),
    U32(u32),
    I32(i32),
}

/// Launches `func` on `stream` with the programmatic-serialization attribute.
///
/// # Safety
/// As `LaunchArgs::launch`: `args` must match the entry point's parameters in number, order and
/// width, every pointer among them must be valid for what the kernel does with it, and the kernel
/// must wait (`griddepcontrol.wait`) before it reads memory an earlier kernel may write or writes
/// memory an earlier kernel may touch.
pub(super) unsafe fn launch_programmatic(
    stream: &CudaStream,
    func: &CudaFunction,
    cfg: LaunchConfig,
    args: &[Arg],
) -> Result<(), DriverError> {
    stream.context().bind_to_thread()?;
    let mut values = args.to_vec();
    let mut params: Vec<*mut c_void> = values
        .iter_mut()
        .map(|a| match a {
            Arg::U64(v) => v as *mut u64 as *mut c_void,
            Arg::U32(v) => v as *mut u32 as *mut c_void,
            Arg::I32(v) => v as *mut i32 as *mut c_void,
        })
        .collect();
    // SAFETY: a plain C struct and union of integers and pointers, for which all-zero is valid.
    let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    let config = sys::CUlaunchConfig {
        gridDimX: cfg.grid_dim.0,
        gridDimY: cfg.grid_dim.1,
        gridDimZ: cfg.grid_dim.2,
        blockDimX: cfg.block_dim.0,
        blockDimY: cfg.block_dim.1,
        blockDimZ: cfg.block_dim.2,
        sharedMemBytes: cfg.shared_mem_bytes,
        hStream: stream.cu_stream(),
        attrs: &mut attr,
        numAttrs: 1,
    };
    // SAFETY: `config` and `attr` outlive the call; `params` points at `values`, which outlive it
    // too (the driver copies the arguments before it returns); the rest is the caller's contract.
    unsafe { sys::cuLaunchKernelEx(&config, func.cu_function(), params.as_mut_ptr(), std::ptr::null_mut()) }.result()
}
