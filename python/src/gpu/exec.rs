//! Execution-layout matrices (spec 20) resident on a GPU (`CudaExecMatrix`): made on the GPU by
//! the transcode from format 10 or the canonical encode of BF16 weights already there (spec
//! 20.12: the same bytes); the exact matvec (spec 20.15), the tensor-core matvec (spec 19),
//! dequant and gather (spec 20.14) on torch's buffers and stream (the contract of `super`).

use super::{gather_exec_rows, lend, lend_exec_activations, lend_opt, view, Resident};
use crate::errors::{gpu_error, value_error};
use numpy::IntoPyArray;
use nwc_cuda::exec::{ExecMatvecKernel, GpuExecMatrix};
use nwc_cuda::Gpu;
use nwc_reference::Shape;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// One execution-layout matrix resident on a GPU.
#[pyclass(frozen, module = "nwc._native")]
pub struct CudaExecMatrix {
    r: Resident<GpuExecMatrix>,
    #[pyo3(get)]
    rows: u64,
    #[pyo3(get)]
    cols: u64,
    /// Spec 20.2: the row stride of activations and dequant output (K rounded up to 16).
    #[pyo3(get)]
    k16: u64,
    /// VRAM bytes of the matrix: the five stored fields (spec 20.18) and the data derived at load,
    /// the tile flags and the patch list (`nwc_cuda::exec::GpuExecMatrix::stored_bytes`).
    #[pyo3(get)]
    stored_bytes: u64,
    /// Escaped weights (spec 20.6).
    #[pyo3(get)]
    escapes: u64,
}

impl CudaExecMatrix {
    pub(super) fn wrap(m: GpuExecMatrix, device: usize) -> PyResult<CudaExecMatrix> {
        Ok(CudaExecMatrix {
            rows: m.shape.rows,
            cols: m.shape.cols,
            k16: m.row_stride() as u64,
            stored_bytes: m.stored_bytes(),
            escapes: m.escapes(),
            r: Resident::new(m, device)?,
        })
    }
}

#[pymethods]
impl CudaExecMatrix {
    /// Spec 20.12: the canonical execution layout of the rows x cols BF16 weights at `words`
    /// (a torch tensor on `device`, rows of stride `ld` >= cols words), encoded on the GPU. Waits
    /// for torch's `stream` first (the weights may still be being written there); the encode
    /// itself runs on nwc-cuda's stream and is complete when this returns.
    #[staticmethod]
    fn encode_device(py: Python<'_>, device: usize, words: u64, rows: u64, cols: u64, ld: u64, stream: usize) -> PyResult<CudaExecMatrix> {
        if ld < cols || rows == 0 || cols == 0 {
            return Err(value_error(format!("execution layout: {rows} x {cols} weights with row stride {ld}")));
        }
        let v = view(device, stream)?;
        let e = py
            .allow_threads(|| {
                v.stream.synchronize()?;
                let gpu = Gpu::get(device)?;
                let len = ((rows - 1) * ld + cols) as usize;
                let w = lend::<u16>(&gpu, words, len);
                GpuExecMatrix::encode_device(&gpu, Shape::new(rows, cols), &w, ld)
            })
            .map_err(gpu_error)?;
        CudaExecMatrix::wrap(e, device)
    }

    /// `y[b] = W x[b] (+ bias)` for `batch` vectors at `x` (batch x k16 values, zero-padded from
    /// cols; BF16 words where `bf16`, else f32), into `y` (batch x rows BF16 words); `bias` is 0
    /// or `rows` f32 values. Spec 20.15 exact class, on BF16 activations their f32 values (one
    /// vector: the strip kernel widens them as it loads; more: widened first), or with
    /// `tensor_cores` spec 19 bounded class (BF16 activations only).
    #[allow(clippy::too_many_arguments)] // the launch's pointers and sizes, as torch passes them
    fn matvec(
        &self,
        py: Python<'_>,
        x: u64,
        bf16: bool,
        tensor_cores: bool,
        batch: usize,
        y: u64,
        bias: u64,
        stream: usize,
    ) -> PyResult<()> {
        if batch == 0 {
            return Err(value_error("matvec (spec 20.15): batch must be at least 1"));
        }
        if tensor_cores && !bf16 {
            return Err(value_error("matvec (spec 19): the tensor-core matvec takes BF16 activations"));
        }
        let (k16, rows) = (self.k16 as usize, self.rows as usize);
        let kernel = if tensor_cores { ExecMatvecKernel::Bounded } else { ExecMatvecKernel::Exact };
        py.allow_threads(|| {
            self.r.run(
                stream,
                |m| m.set_matvec_kernel(kernel),
                |m, g| {
                    let act = lend_exec_activations(g, x, bf16, batch, k16);
                    let bs = lend_opt::<f32>(g, bias, rows);
                    m.matvec_into_bf16(&act, bs.as_deref(), &mut lend::<u16>(g, y, batch * rows))
                },
            )
        })
    }

    /// Spec 20.14 gather: the rows named by `n` int32 ids at `ids` (each checked to be in
    /// 0..rows on the device by the caller, before this launch) into `out` (n x k16 BF16 words).
    fn gather(&self, py: Python<'_>, ids: u64, n: usize, out: u64, stream: usize) -> PyResult<()> {
        if n == 0 {
            return Ok(());
        }
        let k16 = self.k16 as usize;
        py.allow_threads(|| {
            self.r.run(stream, |_| {}, |m, g| gather_exec_rows(m, &lend::<u32>(g, ids, n), &mut lend::<u16>(g, out, n * k16)))
        })
    }

    /// Spec 20.14: the whole matrix as BF16 into `out` (rows x k16 words, row stride k16).
    fn dequant(&self, py: Python<'_>, out: u64, stream: usize) -> PyResult<()> {
        let len = self.rows as usize * self.k16 as usize;
        py.allow_threads(|| self.r.run(stream, |_| {}, |m, g| m.dequant_into(&mut lend::<u16>(g, out, len))))
    }

    /// The device ordinal the matrix lives on.
    #[getter]
    fn device(&self) -> usize {
        self.r.device
    }

    /// The five stored fields as numpy arrays (a copy to the host: tests compare encodings).
    fn download<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let e = py.allow_threads(|| self.r.lock().download()).map_err(gpu_error)?;
        let d = PyDict::new(py);
        d.set_item("sm", e.sm.into_pyarray(py))?;
        d.set_item("codes", e.codes.into_pyarray(py))?;
        d.set_item("base", e.base.into_pyarray(py))?;
        d.set_item("esc_start", e.esc_start.into_pyarray(py))?;
        d.set_item("esc", e.esc.into_pyarray(py))?;
        Ok(d)
    }
}
