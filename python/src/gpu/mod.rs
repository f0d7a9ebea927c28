//! nwc-cuda kernels on memory torch owns, on torch's stream: the thin, replaceable layer between
//! `nwc.torch` and the `nwc-cuda` API. `f10` holds format-10 matrices (`CudaMatrix`), `exec` the
//! execution layout (`CudaExecMatrix`, spec 20). This file is the wheel's only `unsafe` code:
//! borrowing torch's stream and buffers, uploading our own encoder's output without decoding it
//! again, and the device-side gathers.
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
use nwc_cuda::exec::{ExecActivations, GpuExecMatrix};
use nwc_cuda::{DeviceActivations, Gpu, GpuError, GpuMatrix};
use nwc_reference::EncodedMatrix;
use pyo3::prelude::*;
use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

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

/// What a lent torch buffer is held as during a call, and how it is given back: leaked, never
/// freed (the memory stays torch's).
trait TakeBack {
    fn take_back(self);
}

impl<T> TakeBack for CudaSlice<T> {
    fn take_back(self) {
        let _ = self.leak();
    }
}

impl TakeBack for DeviceActivations {
    fn take_back(self) {
        match self {
            DeviceActivations::Bf16 { buf, .. } => buf.take_back(),
            DeviceActivations::F32 { buf, .. } => buf.take_back(),
        }
    }
}

impl TakeBack for ExecActivations {
    fn take_back(self) {
        match self {
            ExecActivations::Bf16 { buf, .. } => buf.take_back(),
            ExecActivations::F32 { buf, .. } => buf.take_back(),
        }
    }
}

/// Torch memory lent to nwc-cuda for one call (a slice, or activations built on one); given back
/// on drop.
struct Lent<A: TakeBack>(Option<A>);

impl<A: TakeBack> Lent<A> {
    /// The value itself, for a caller that builds another lent value on it.
    fn take(mut self) -> A {
        self.0.take().expect("lent until dropped")
    }
}

impl<A: TakeBack> Deref for Lent<A> {
    type Target = A;
    fn deref(&self) -> &A {
        self.0.as_ref().expect("lent until dropped")
    }
}

impl<A: TakeBack> DerefMut for Lent<A> {
    fn deref_mut(&mut self) -> &mut A {
        self.0.as_mut().expect("lent until dropped")
    }
}

impl<A: TakeBack> Drop for Lent<A> {
    fn drop(&mut self) {
        if let Some(a) = self.0.take() {
            a.take_back();
        }
    }
}

/// `len` elements of `T` at the torch pointer `ptr` (the module contract), lent on `gpu`'s stream.
fn lend<T: DeviceRepr>(gpu: &Gpu, ptr: u64, len: usize) -> Lent<CudaSlice<T>> {
    // SAFETY: `ptr` is the data_ptr() of a live CUDA tensor of at least `len` elements of T on
    // this device (the module contract); the slice is leaked on drop, so it never frees torch's
    // memory, and with event tracking off (Gpu::get) cudarc records nothing on it.
    Lent(Some(unsafe { gpu.stream.upgrade_device_ptr::<T>(ptr, len) }))
}

/// Like [`lend`]; None for the null pointer (an absent bias).
fn lend_opt<T: DeviceRepr>(gpu: &Gpu, ptr: u64, len: usize) -> Option<Lent<CudaSlice<T>>> {
    (ptr != 0).then(|| lend(gpu, ptr, len))
}

/// Format-10 activations: `batch` BF16 vectors of `kp` words at `ptr`.
fn lend_activations(gpu: &Gpu, ptr: u64, batch: usize, kp: usize) -> Lent<DeviceActivations> {
    Lent(Some(DeviceActivations::Bf16 { buf: lend::<u16>(gpu, ptr, batch * kp).take(), batch, kp }))
}

/// Execution-layout activations: `batch` vectors of `k16` values at `ptr`, f32 for the exact
/// kernels or BF16 for the tensor-core ones.
fn lend_exec_activations(gpu: &Gpu, ptr: u64, bf16: bool, batch: usize, k16: usize) -> Lent<ExecActivations> {
    Lent(Some(if bf16 {
        ExecActivations::Bf16 { buf: lend::<u16>(gpu, ptr, batch * k16).take(), batch }
    } else {
        ExecActivations::F32 { buf: lend::<f32>(gpu, ptr, batch * k16).take(), batch }
    }))
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
fn gather_rows(m: &GpuMatrix, ids: &CudaSlice<u64>, out: &mut CudaSlice<u16>) -> Result<(), GpuError> {
    // SAFETY: nwc.torch checks on the device that every id is in 0..M before it launches this
    // (torch._assert_async on the same stream, ahead of this kernel; a failed assert stops the
    // context before the gather runs), as F.embedding does for its table.
    unsafe { m.gather_into(ids, out) }
}

/// Spec 20.14 gather on the device: rows `ids` (token ids lent from torch as int32, converted
/// there after the check) into `out`.
fn gather_exec_rows(m: &GpuExecMatrix, ids: &CudaSlice<u32>, out: &mut CudaSlice<u16>) -> Result<(), GpuError> {
    // SAFETY: nwc.torch checks on the device that every id is in 0..M before it launches this
    // (torch._assert_async on the same stream, on the ids as given, before their conversion to
    // int32; a failed assert stops the context before the gather runs), as for format 10.
    unsafe { m.gather_into(ids, out) }
}

/// What the two matrix kinds share for [`Resident`].
trait Matrix: Send {
    fn gpu(&self) -> &Arc<Gpu>;
    fn on_stream<R>(&mut self, view: &Arc<Gpu>, work: impl FnOnce(&Self) -> R) -> Result<R, GpuError>;
}

impl Matrix for GpuMatrix {
    fn gpu(&self) -> &Arc<Gpu> {
        GpuMatrix::gpu(self)
    }
    fn on_stream<R>(&mut self, view: &Arc<Gpu>, work: impl FnOnce(&Self) -> R) -> Result<R, GpuError> {
        GpuMatrix::on_stream(self, view, work)
    }
}

impl Matrix for GpuExecMatrix {
    fn gpu(&self) -> &Arc<Gpu> {
        GpuExecMatrix::gpu(self)
    }
    fn on_stream<R>(&mut self, view: &Arc<Gpu>, work: impl FnOnce(&Self) -> R) -> Result<R, GpuError> {
        GpuExecMatrix::on_stream(self, view, work)
    }
}

/// A matrix as a pyclass holds it: locked for each call, whose launches go to torch's stream;
/// its memory goes back to the driver only after the work torch queued on it.
struct Resident<M: Matrix> {
    m: Mutex<M>,
    device: usize,
    /// The stream of the last call (u64::MAX: none yet).
    last: AtomicU64,
}

impl<M: Matrix> Resident<M> {
    /// `m` was uploaded or made on nwc-cuda's own stream: wait for it, so torch's stream finds the
    /// fields complete.
    fn new(m: M, device: usize) -> PyResult<Resident<M>> {
        m.gpu().stream.synchronize().map_err(|e| gpu_error(e.into()))?;
        Ok(Resident { m: Mutex::new(m), device, last: AtomicU64::new(u64::MAX) })
    }

    fn lock(&self) -> MutexGuard<'_, M> {
        self.m.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `prepare` (a kernel choice), then `work` with every launch on torch's `stream`.
    fn run<T>(&self, stream: usize, prepare: impl FnOnce(&mut M), work: impl FnOnce(&M, &Gpu) -> Result<T, GpuError>) -> PyResult<T> {
        let v = view(self.device, stream)?;
        self.last.store(stream as u64, Ordering::Relaxed);
        let mut m = self.lock();
        prepare(&mut m);
        m.on_stream(&v, |m| work(m, &v)).and_then(|r| r).map_err(gpu_error)
    }
}

impl<M: Matrix> Drop for Resident<M> {
    /// The fields are freed on nwc-cuda's own stream, which is not ordered after torch's: wait
    /// for the device first (unless the last stream is capturing a graph, where waiting is not
    /// allowed; a graph must not outlive the layers it captured).
    fn drop(&mut self) {
        let last = *self.last.get_mut();
        if last == u64::MAX {
            return;
        }
        // SAFETY: `last` was torch's current stream in an earlier call (alive, see `view`).
        let status = unsafe { cudarc::driver::result::stream::is_capturing(last as usize as CUstream) };
        if matches!(status, Ok(CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)) {
            let gpu = self.lock().gpu().clone();
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
