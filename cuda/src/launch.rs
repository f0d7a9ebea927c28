//! Programmatic dependent launch (PDL, sm_90+) of the exact matvec kernels (the execution
//! layout's one-column strip kernels, format 10's layout 0 kernel) and the bounded strip kernel.
//!
//! A kernel launched with the driver's programmatic-serialization attribute may start while the
//! kernel before it on the stream is still running, once every CTA of that kernel has called
//! `griddepcontrol.launch_dependents` (or exited). These kernels touch only their matrix's own
//! fields (which no kernel writes while the matrix lives) before they wait (`griddepcontrol.wait`)
//! for the kernel before them to finish: activations, bias, outputs and scratch come after. So
//! the results are the same; only the time between two kernels changes. Measured in docs/gpu.md
//! ("Session 21").

use cudarc::driver::{sys, CudaFunction, CudaStream, DriverError, LaunchConfig};
use std::ffi::c_void;

/// How a matvec launch is ordered after the kernel before it on the stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DependentLaunch {
    /// The plain order: the kernel starts when the one before it has finished.
    Serial,
    /// Programmatic dependent launch where the kernel waits for its predecessor itself and the
    /// device has it (compute capability 9.0 and later); elsewhere `Serial`. The default.
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

/// A pointer to one kernel argument, for [`launch_params`]'s parameter array.
pub(crate) fn param<T>(v: &T) -> *mut c_void {
    v as *const T as *mut c_void
}

/// The launch attributes of [`launch_params`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LaunchAttrs {
    /// The programmatic-serialization attribute: the kernel may start while the one before it on
    /// the stream finishes.
    pub programmatic: bool,
    /// CTAs per thread-block cluster along x (1: no cluster attribute).
    pub cluster: u32,
}

impl LaunchAttrs {
    /// No cluster; programmatic where `programmatic`.
    pub(crate) fn plain(programmatic: bool) -> LaunchAttrs {
        LaunchAttrs { programmatic, cluster: 1 }
    }
}

/// The launch attribute of thread-block clusters of `x` CTAs along x (for launches and for the
/// driver's cluster occupancy, `Gpu::clusters_resident`).
pub(crate) fn cluster_attr(x: u32) -> sys::CUlaunchAttribute {
    // SAFETY: a plain C struct and union of integers, for which all-zero is valid.
    let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim = sys::CUlaunchAttributeValue_union__bindgen_ty_1 { x, y: 1, z: 1 };
    attr
}

/// Launches `func` on `stream` with the arguments `params` points at: with the
/// programmatic-serialization attribute where `attrs.programmatic`, else a plain launch (no
/// attribute: the kernel starts when the one before it on the stream has finished), and in
/// clusters of `attrs.cluster` CTAs along x where that is above 1. The matvec launches that may
/// be programmatic take this one path either way, so each lists its arguments once.
///
/// # Safety
/// As `LaunchArgs::launch`: `params` must point at the entry point's arguments in number, order
/// and type, alive for the call (the driver copies them before it returns); every device pointer
/// among them must be valid for what the kernel does with it; where `attrs.programmatic`, the
/// kernel must wait (`griddepcontrol.wait`) before it reads memory an earlier kernel may write or
/// writes memory an earlier kernel may touch; where `attrs.cluster` is above 1, the grid's x must
/// be a multiple of it and the kernel written for clusters of that size.
pub(crate) unsafe fn launch_params(
    stream: &CudaStream,
    func: &CudaFunction,
    cfg: LaunchConfig,
    params: &mut [*mut c_void],
    attrs: LaunchAttrs,
) -> Result<(), DriverError> {
    stream.context().bind_to_thread()?;
    // SAFETY: plain C structs and unions of integers and pointers, for which all-zero is valid.
    let mut list: [sys::CUlaunchAttribute; 2] = unsafe { std::mem::zeroed() };
    let mut n = 0usize;
    if attrs.programmatic {
        list[n].id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        list[n].value.programmaticStreamSerializationAllowed = 1;
        n += 1;
    }
    if attrs.cluster > 1 {
        list[n] = cluster_attr(attrs.cluster);
        n += 1;
    }
    let config = sys::CUlaunchConfig {
        gridDimX: cfg.grid_dim.0,
        gridDimY: cfg.grid_dim.1,
        gridDimZ: cfg.grid_dim.2,
        blockDimX: cfg.block_dim.0,
        blockDimY: cfg.block_dim.1,
        blockDimZ: cfg.block_dim.2,
        sharedMemBytes: cfg.shared_mem_bytes,
        hStream: stream.cu_stream(),
        attrs: if n > 0 { list.as_mut_ptr() } else { std::ptr::null_mut() },
        numAttrs: n as u32,
    };
    // SAFETY: `config` and `list` outlive the call; the rest is the caller's contract.
    unsafe { sys::cuLaunchKernelEx(&config, func.cu_function(), params.as_mut_ptr(), std::ptr::null_mut()) }.result()
}

impl DependentLaunch {
    /// True where this order and the device make a launch programmatic.
    pub(crate) fn programmatic_on(self, gpu: &crate::Gpu) -> bool {
        self == DependentLaunch::Programmatic && gpu.compute_capability.0 >= 9
    }
}
