//! nwc-cuda kernels on memory torch owns. The thin, replaceable layer between `nwc.torch` and
//! the `nwc-cuda` API: every function takes raw device pointers (`tensor.data_ptr()`) and the raw
//! handle of torch's current stream (`torch.cuda.current_stream().cuda_stream`).
//!
//! Context: cudarc's `CudaContext::new` retains the device's primary context, the one torch uses,
//! so pointers from torch are valid here. Stream: nwc-cuda issues all its work on the one stream
//! of its `Gpu`; each call here joins that stream to torch's with two events (torch's stream ->
//! ours before the launch, ours -> torch's after it), so the work is ordered exactly as if it ran
//! on torch's stream, and a CUDA graph capture of torch's stream captures it too (a captured
//! stream's event pulls the other stream into the capture). Nothing is allocated per call.
//! Torch's buffers are lent to nwc-cuda as `CudaSlice`s for the call and taken back (`leak`)
//! before it returns, so nwc-cuda never frees them.

use crate::errors::{decode_error, gpu_error, value_error};
use cudarc::driver::sys::{CUevent_flags, CUevent_wait_flags, CUstream};
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream};
use numpy::PyReadonlyArray1;
use nwc_conformance::fields::{parse, RawFields, STORED_FIELDS};
use nwc_cuda::{DeviceActivations, Gpu, GpuMatrix, MatvecKernel};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// One encoded matrix resident on a GPU (validated on the host before upload, spec 13).
#[pyclass(frozen, module = "nwc._native")]
pub struct CudaMatrix {
    m: GpuMatrix,
    device: usize,
    #[pyo3(get)]
    rows: u64,
    #[pyo3(get)]
    cols: u64,
    /// Spec 3.4: the dequant row stride (K rounded up to 16).
    #[pyo3(get)]
    k16: u64,
    /// Spec 15.4.2: the activation stride the matvec reads (K rounded up to 512).
    #[pyo3(get)]
    kp: u64,
    /// Bytes of the stored fields resident on the device for this matrix.
    #[pyo3(get)]
    stored_bytes: u64,
}

/// The two events of a device's stream join, created once per device.
struct Join {
    before: CudaEvent,
    after: CudaEvent,
}

static JOINS: OnceLock<Mutex<HashMap<usize, Arc<Join>>>> = OnceLock::new();

fn join_of(gpu: &Arc<Gpu>, device: usize) -> PyResult<Arc<Join>> {
    let map = JOINS.get_or_init(|| Mutex::new(HashMap::new()));
    let mut map = map.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(j) = map.get(&device) {
        return Ok(j.clone());
    }
    let flags = Some(CUevent_flags::CU_EVENT_DISABLE_TIMING);
    let new = |_| gpu.ctx.new_event(flags).map_err(|e| gpu_error(e.into()));
    let j = Arc::new(Join { before: new(0)?, after: new(1)? });
    map.insert(device, j.clone());
    Ok(j)
}

/// Runs `work` on nwc-cuda's stream, ordered after everything issued so far on `torch_stream`
/// and before anything issued on it later.
fn joined<T>(gpu: &Arc<Gpu>, device: usize, torch_stream: usize, work: impl FnOnce(&Arc<CudaStream>) -> PyResult<T>) -> PyResult<T> {
    let j = join_of(gpu, device)?;
    let theirs = torch_stream as CUstream;
    let ours = gpu.stream.cu_stream();
    let wait = CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT;
    let driver = |r: Result<(), cudarc::driver::DriverError>| r.map_err(|e| gpu_error(e.into()));
    gpu.ctx.bind_to_thread().map_err(|e| gpu_error(e.into()))?;
    // SAFETY: both events live as long as the process (JOINS); `theirs` is torch's live stream
    // handle in the same primary context (the caller passes torch.cuda.current_stream()), `ours`
    // is the Gpu's stream, which lives as long as the Gpu.
    unsafe {
        driver(cudarc::driver::result::event::record(j.before.cu_event(), theirs))?;
        driver(cudarc::driver::result::stream::wait_event(ours, j.before.cu_event(), wait))?;
    }
    let out = work(&gpu.stream);
    // SAFETY: as above. Joined back even when the launch failed, so torch's stream never runs
    // ahead of work that was issued.
    unsafe {
        driver(cudarc::driver::result::event::record(j.after.cu_event(), ours))?;
        driver(cudarc::driver::result::stream::wait_event(theirs, j.after.cu_event(), wait))?;
    }
    out
}

#[pymethods]
impl CudaMatrix {
    /// Validates the stored fields (every rule of spec 13) and uploads them to `device`.
    /// `matvec_kernel`: "exact" (spec 15.4, the default) or "bounded" (spec 19, layout 1 only).
    #[new]
    #[pyo3(signature = (device, mode_code, rows, cols, fields, matvec_kernel = "exact"))]
    fn new(
        py: Python<'_>,
        device: usize,
        mode_code: u32,
        rows: u64,
        cols: u64,
        fields: &Bound<'_, PyDict>,
        matvec_kernel: &str,
    ) -> PyResult<CudaMatrix> {
        let kernel: MatvecKernel = matvec_kernel.parse().map_err(|e: nwc_cuda::GpuError| value_error(e.to_string()))?;
        let mut raw = RawFields::new();
        for name in STORED_FIELDS {
            if let Some(v) = fields.get_item(name)? {
                if v.is_none() {
                    continue;
                }
                let arr: PyReadonlyArray1<u8> =
                    v.extract().map_err(|_| value_error(format!("field `{name}` must be a 1-D uint8 array")))?;
                let bytes = arr.as_slice().map_err(|_| value_error(format!("field `{name}` must be contiguous")))?;
                raw.insert(name.to_owned(), bytes.to_vec());
            }
        }
        let em = parse(mode_code, rows, cols, &raw).map_err(|e| crate::errors::format_error(py, &e, None, ""))?;
        let g = nwc_reference::Geometry::new(em.mode, em.shape).map_err(|e| crate::errors::format_error(py, &e, None, ""))?;
        let m = py
            .allow_threads(|| {
                let gpu = Gpu::get(device)?;
                let mut m = GpuMatrix::upload(&gpu, &em)?;
                m.set_matvec_kernel(kernel)?;
                Ok(m)
            })
            .map_err(|e| match e {
                nwc_cuda::GpuError::Invalid(d) => decode_error(py, &d),
                other => gpu_error(other),
            })?;
        let stored_bytes = m.stored_bytes;
        Ok(CudaMatrix { m, device, rows, cols, k16: g.k16, kp: g.kp, stored_bytes })
    }

    /// Spec 15.4, in the canonical accumulation order (bit-exact with the reference):
    /// `y[b] = W x[b] (+ bias)` for `batch` BF16 vectors at `x` (batch x kp words, zero-padded from
    /// cols to kp), into `y` (batch x rows BF16 words); `bias` is 0 or `rows` f32 values.
    fn matvec_bf16(&self, x: u64, batch: usize, y: u64, bias: u64, stream: usize) -> PyResult<()> {
        if batch == 0 {
            return Err(value_error("matvec (spec 15.4): batch must be at least 1"));
        }
        let gpu = self.m.gpu().clone();
        let (kp, rows) = (self.kp as usize, self.rows as usize);
        joined(&gpu, self.device, stream, |s| {
            // SAFETY: the caller (nwc.torch) passes tensors it holds of exactly these sizes: x has
            // batch x kp BF16 words, y batch x rows, bias rows f32 values (or is 0); they are live
            // in torch's caching allocator until torch's stream, which waits for this work, reuses
            // them. Each lent slice is taken back with `leak` so nwc-cuda never frees torch memory.
            unsafe {
                let act = DeviceActivations::Bf16 { buf: s.upgrade_device_ptr::<u16>(x, batch * kp), batch, kp };
                let mut ys = s.upgrade_device_ptr::<u16>(y, batch * rows);
                let bs = (bias != 0).then(|| s.upgrade_device_ptr::<f32>(bias, rows));
                let r = self.m.matvec_into_bf16(&act, bs.as_ref(), &mut ys);
                ys.leak();
                bs.map(CudaSlice::leak);
                if let DeviceActivations::Bf16 { buf, .. } = act {
                    buf.leak();
                }
                r
            }
            .map_err(gpu_error)
        })
    }

    /// Spec 15.2: the whole matrix as BF16 into `out` (rows x k16 words, row stride k16).
    fn dequant(&self, out: u64, stream: usize) -> PyResult<()> {
        let gpu = self.m.gpu().clone();
        let len = self.rows as usize * self.k16 as usize;
        joined(&gpu, self.device, stream, |s| {
            // SAFETY: `out` is a tensor the caller holds of rows x k16 BF16 words (lent as in
            // matvec_bf16, and taken back the same way).
            unsafe {
                let mut o = s.upgrade_device_ptr::<u16>(out, len);
                let r = self.m.dequant_into(&mut o);
                o.leak();
                r
            }
            .map_err(gpu_error)
        })
    }

    /// The matvec kernel: "exact" (spec 15.4) or "bounded" (spec 19, layout 1).
    #[getter]
    fn matvec_kernel(&self) -> &'static str {
        self.m.matvec_kernel().name()
    }
}

/// True when a CUDA driver and at least one device are present (without touching torch).
#[pyfunction]
pub fn cuda_available() -> bool {
    Gpu::present()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<CudaMatrix>()?;
    m.add_function(wrap_pyfunction!(cuda_available, m)?)?;
    Ok(())
}
