//! nwc-cuda kernels on memory torch owns, on torch's stream: the thin, replaceable layer between
//! `nwc.torch` and the `nwc-cuda` API. `f10` holds format-10 matrices (`CudaMatrix`), `exec` the
//! execution layout (`CudaExecMatrix`, spec 20). This file is the wheel's only `unsafe` code:
//! borrowing torch's stream and buffers, uploading our own encoder's output without decoding it
//! again, and the device-side gather.
//!
//! Context: cudarc's `CudaContext::new` retains the device's primary context, the one torch uses,
//! so pointers from torch are valid here. Stream: every launch of a call is issued on the stream
//! the caller names (`torch.cuda.current_stream().cuda_stream`) through a view of the device on
//! that stream (`Gpu::with_borrowed_stream`), so it is ordered with torch's work exactly as a
//! torch kernel would be, and captured when that stream captures a CUDA graph. Nothing is
//! allocated, copied or synchronised per call. Torch's buffers are lent to nwc-cuda as
//! `CudaSlice`s for the call and taken back (`leak`) before it returns, so nwc-cuda never frees
//! them.
//!
//! The contract of every method that takes pointers (nwc._native is private: only nwc.torch calls
//! it): each pointer is a `tensor.data_ptr()` of a CUDA tensor on the matrix's device that the
//! caller holds, of the size the method names, and the stream is torch's current stream there.

mod exec;
mod f10;

use crate::errors::gpu_error;
use cudarc::driver::sys::{CUstream, CUstreamCaptureStatus};
use cudarc::driver::{CudaSlice, DeviceRepr};
use nwc_cuda::exec::ExecActivations;
use nwc_cuda::{DeviceActivations, Gpu, GpuError, GpuMatrix};
use nwc_reference::EncodedMatrix;
use pyo3::prelude::*;
use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Views of each device on each stream a caller has named, by (device, stream handle), created once.
type Views = HashMap<(usize, usize), Arc<Gpu>>;
static VIEWS: OnceLock<Mutex<Views>> = OnceLock::new();

/// Device `device` issuing on the raw stream handle `stream` (torch's current stream there).
fn view(device: usize, stream: usize) -> PyResult<Arc<Gpu>> {
    let views = VIEWS.get_or_init(|| Mutex::new(HashMap::new()));
    let mut views = views.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(v) = views.get(&(device, stream)) {
        return Ok(v.clone());
    }
    let gpu = Gpu::get(device).map_err(gpu_error)?;
    // SAFETY: `stream` is torch's current stream on `device` (the module contract), created in
    // the primary context Gpu::get retains. Torch never destroys the streams of its pools, and a
    // view is only used while a caller names its stream as current again, when it is alive.
    let v = Arc::new(unsafe { gpu.with_borrowed_stream(stream as CUstream) });
    views.insert((device, stream), v.clone());
    Ok(v)
}

/// A torch buffer lent to nwc-cuda as a `CudaSlice` for one call; taken back (never freed) on drop.
struct Lent<T>(Option<CudaSlice<T>>);

impl<T> Deref for Lent<T> {
    type Target = CudaSlice<T>;
    fn deref(&self) -> &CudaSlice<T> {
        self.0.as_ref().expect("lent until dropped")
    }
}

impl<T> DerefMut for Lent<T> {
    fn deref_mut(&mut self) -> &mut CudaSlice<T> {
        self.0.as_mut().expect("lent until dropped")
    }
}

impl<T> Lent<T> {
    /// The slice itself, for a caller that keeps it in a structure and takes it back there.
    fn take(mut self) -> CudaSlice<T> {
        self.0.take().expect("lent until dropped")
    }
}

impl<T> Drop for Lent<T> {
    fn drop(&mut self) {
        if let Some(s) = self.0.take() {
            s.leak();
        }
    }
}

/// `len` elements of `T` at the torch pointer `ptr` (the module contract), lent on `gpu`'s stream.
fn lend<T: DeviceRepr>(gpu: &Gpu, ptr: u64, len: usize) -> Lent<T> {
    // SAFETY: `ptr` is the data_ptr() of a live CUDA tensor of at least `len` elements of T on
    // this device (the module contract); the slice is leaked on drop, so it never frees torch's
    // memory, and with event tracking off (Gpu::get) cudarc records nothing on it.
    Lent(Some(unsafe { gpu.stream.upgrade_device_ptr::<T>(ptr, len) }))
}

/// Like [`lend`]; None for the null pointer (an absent bias).
fn lend_opt<T: DeviceRepr>(gpu: &Gpu, ptr: u64, len: usize) -> Option<Lent<T>> {
    (ptr != 0).then(|| lend(gpu, ptr, len))
}

/// Torch activations lent as a format-10 `DeviceActivations` (BF16, batch x kp words) for one
/// call; taken back on drop.
struct LentActivations(Option<DeviceActivations>);

impl LentActivations {
    fn bf16(gpu: &Gpu, ptr: u64, batch: usize, kp: usize) -> LentActivations {
        let buf = lend::<u16>(gpu, ptr, batch * kp).take();
        LentActivations(Some(DeviceActivations::Bf16 { buf, batch, kp }))
    }
}

impl Deref for LentActivations {
    type Target = DeviceActivations;
    fn deref(&self) -> &DeviceActivations {
        self.0.as_ref().expect("lent until dropped")
    }
}

impl Drop for LentActivations {
    fn drop(&mut self) {
        match self.0.take() {
            Some(DeviceActivations::Bf16 { buf, .. }) => {
                let _ = buf.leak();
            }
            Some(DeviceActivations::F32 { buf, .. }) => {
                let _ = buf.leak();
            }
            None => {}
        }
    }
}

/// Torch activations lent as `ExecActivations` (batch x K16 values, f32 for the exact kernels,
/// BF16 for the tensor-core ones) for one call; taken back on drop.
struct LentExecActivations(Option<ExecActivations>);

impl LentExecActivations {
    fn new(gpu: &Gpu, ptr: u64, bf16: bool, batch: usize, k16: usize) -> LentExecActivations {
        let a = if bf16 {
            ExecActivations::Bf16 { buf: lend::<u16>(gpu, ptr, batch * k16).take(), batch }
        } else {
            ExecActivations::F32 { buf: lend::<f32>(gpu, ptr, batch * k16).take(), batch }
        };
        LentExecActivations(Some(a))
    }
}

impl Deref for LentExecActivations {
    type Target = ExecActivations;
    fn deref(&self) -> &ExecActivations {
        self.0.as_ref().expect("lent until dropped")
    }
}

impl Drop for LentExecActivations {
    fn drop(&mut self) {
        match self.0.take() {
            Some(ExecActivations::Bf16 { buf, .. }) => {
                let _ = buf.leak();
            }
            Some(ExecActivations::F32 { buf, .. }) => {
                let _ = buf.leak();
            }
            None => {}
        }
    }
}

/// Uploads a matrix our own encoder (nwc-fast, byte-identical to the reference's canonical
/// encoder) has just produced in this call, without the spec 13 decode `GpuMatrix::upload` runs:
/// nwc.torch's convert and from_linear encode and upload in one native call, so the fields
/// never leave this process between the two.
fn upload_own_encoding(gpu: &Arc<Gpu>, m: &EncodedMatrix) -> Result<GpuMatrix, GpuError> {
    // SAFETY: `m` is the unchanged output of nwc_fast::encode (the only caller, f10::encode),
    // which satisfies every rule of spec 13 by construction.
    unsafe { GpuMatrix::upload_unvalidated(gpu, m) }
}

/// Spec 15.3 on the device: rows `ids` (int64 token ids lent from torch) into `out`.
fn gather_rows(m: &GpuMatrix, ids: &Lent<u64>, out: &mut Lent<u16>) -> Result<(), GpuError> {
    // SAFETY: nwc.torch checks on the device that every id is in 0..M before it launches this
    // (torch._assert_async on the same stream, ahead of this kernel; a failed assert stops the
    // context before the gather runs), as F.embedding does for its table.
    unsafe { m.gather_into(ids, out) }
}

/// The stream a matrix was last used on (u64::MAX: none yet), so that its memory goes back to
/// the driver only after the work torch queued on it.
struct LastStream(AtomicU64);

impl LastStream {
    fn new() -> LastStream {
        LastStream(AtomicU64::new(u64::MAX))
    }

    fn set(&self, stream: usize) {
        self.0.store(stream as u64, Ordering::Relaxed);
    }

    /// Called when a matrix is dropped: its fields are freed on nwc-cuda's own stream, which is
    /// not ordered after torch's, so wait for the device (unless the last stream is capturing a
    /// graph, where waiting is not allowed; a graph must not outlive the layers it captured).
    fn settle(&self, gpu: &Gpu) {
        let last = self.0.load(Ordering::Relaxed);
        if last == u64::MAX {
            return;
        }
        // SAFETY: `last` was torch's current stream in an earlier call (alive, see `view`).
        let status = unsafe { cudarc::driver::result::stream::is_capturing(last as usize as CUstream) };
        if matches!(status, Ok(CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)) {
            let _ = gpu.ctx.bind_to_thread().and_then(|_| gpu.ctx.synchronize());
        }
    }
}

/// True when a CUDA driver and at least one device are present (without touching torch).
#[pyfunction]
pub fn cuda_available() -> bool {
    Gpu::present()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<f10::CudaMatrix>()?;
    m.add_class::<exec::CudaExecMatrix>()?;
    m.add_function(wrap_pyfunction!(cuda_available, m)?)?;
    Ok(())
}
