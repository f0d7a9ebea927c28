//! Whole checkpoints (spec 17) through `nwc-container`, the engine of `nwc compress`,
//! `decompress`, `verify` and `inspect`: the same code, called with the GIL released, reporting
//! progress to an optional Python callable.

use crate::codec::layout_of;
use crate::errors::{container_error, value_error};
use nwc_container::{CompressOptions, Policy};
use nwc_reference::ElemType;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Calls `callback(done_bytes)` from whichever worker finished a piece of work, taking the GIL for
/// the call. The first exception the callback raises is kept and raised when the operation ends
/// (the operation itself runs to completion: outputs appear only when complete, or not at all).
struct Reporter {
    callback: Option<Py<PyAny>>,
    done: AtomicU64,
    error: Mutex<Option<PyErr>>,
}

impl Reporter {
    fn new(callback: Option<Py<PyAny>>) -> Reporter {
        Reporter { callback, done: AtomicU64::new(0), error: Mutex::new(None) }
    }

    fn report(&self, bytes: u64) {
        let Some(cb) = &self.callback else { return };
        Python::with_gil(|py| {
            // Counted under the GIL, which orders the callbacks too: the callable sees a
            // non-decreasing total even when workers finish at once (counted before taking the
            // GIL, a worker could report a smaller total after another's larger one).
            let done = self.done.fetch_add(bytes, Ordering::Relaxed) + bytes;
            if let Err(e) = cb.call1(py, (done,)) {
                let mut slot = self.error.lock().unwrap_or_else(|p| p.into_inner());
                slot.get_or_insert(e);
            }
        });
    }

    fn finish(self) -> PyResult<()> {
        match self.error.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Runs `work` on a pool of `threads` workers (all cores when None), without the GIL.
fn pooled<T: Send>(py: Python<'_>, threads: Option<usize>, work: impl FnOnce() -> T + Send) -> PyResult<T> {
    let pool = match threads {
        Some(0) => return Err(value_error("threads must be at least 1")),
        Some(n) => Some(rayon::ThreadPoolBuilder::new().num_threads(n).build().map_err(|e| value_error(e.to_string()))?),
        None => None,
    };
    Ok(py.allow_threads(|| match pool {
        Some(p) => p.install(work),
        None => work(),
    }))
}

/// Spec 17: original model (a .safetensors file, or a folder of shards with an index) -> new
/// checkpoint folder `dst` (must not exist). Returns the summary counts.
#[pyfunction]
#[pyo3(signature = (src, dst, elem, layout, include, exclude, cast_bf16, shard_size_mb, threads, progress))]
#[allow(clippy::too_many_arguments)]
pub fn compress<'py>(
    py: Python<'py>,
    src: PathBuf,
    dst: PathBuf,
    elem: &str,
    layout: u8,
    include: Vec<String>,
    exclude: Vec<String>,
    cast_bf16: bool,
    shard_size_mb: Option<u64>,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let elem = match elem {
        "bf16" => ElemType::Bf16,
        "fp8" => ElemType::Fp8E4m3,
        other => return Err(value_error(format!("elem must be \"bf16\" (lossless) or \"fp8\" (spec 11, lossy), not {other:?}"))),
    };
    let opts = CompressOptions {
        policy: Policy { include, exclude, cast_bf16 },
        elem,
        layout: layout_of(layout)?,
        shard_bytes: shard_size_mb.map(|mb| mb.max(1) * 1_000_000),
        base_model: None,
    };
    let reporter = Reporter::new(progress);
    let result = pooled(py, threads, || nwc_container::compress(&src, &dst, &opts, &|n| reporter.report(n)))?;
    reporter.finish()?;
    let s = result.map_err(|e| container_error(py, e))?;
    let d = PyDict::new(py);
    d.set_item("matrices", s.matrices)?;
    d.set_item("tensors_compressed", s.tensors_compressed)?;
    d.set_item("tensors_copied", s.tensors_copied)?;
    d.set_item("bytes_in", s.bytes_in)?;
    d.set_item("bytes_out", s.bytes_out)?;
    Ok(d)
}

/// Spec 17.7: checkpoint -> the original model files, tensor for tensor, in a new folder.
#[pyfunction]
#[pyo3(signature = (src, dst, threads, progress))]
pub fn decompress(py: Python<'_>, src: PathBuf, dst: PathBuf, threads: Option<usize>, progress: Option<Py<PyAny>>) -> PyResult<()> {
    let reporter = Reporter::new(progress);
    let result = pooled(py, threads, || nwc_container::decompress(&src, &dst, &|n| reporter.report(n)))?;
    reporter.finish()?;
    result.map_err(|e| container_error(py, e))
}

/// Validates every matrix (spec 13) and every recorded digest; with `against`, compares the
/// decoded model with the original bit for bit. A broken matrix raises its FormatError; digest or
/// content mismatches are returned in the report's `mismatches`.
#[pyfunction]
#[pyo3(signature = (src, against, threads, progress))]
pub fn verify<'py>(
    py: Python<'py>,
    src: PathBuf,
    against: Option<PathBuf>,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let reporter = Reporter::new(progress);
    let result = pooled(py, threads, || nwc_container::verify(&src, against.as_deref(), &|n| reporter.report(n)))?;
    reporter.finish()?;
    let r = result.map_err(|e| container_error(py, e))?;
    let d = PyDict::new(py);
    d.set_item("matrices", r.matrices)?;
    d.set_item("tensors", r.tensors)?;
    d.set_item("compared", r.compared)?;
    d.set_item("mismatches", r.mismatches)?;
    Ok(d)
}

/// One row per compressed matrix (id, tensors, rows, cols, elem, layout, bytes, ratio,
/// entropy_bits, escapes), plus the checkpoint's totals.
#[pyfunction]
pub fn inspect<'py>(py: Python<'py>, src: PathBuf) -> PyResult<(Vec<Bound<'py, PyDict>>, Bound<'py, PyDict>)> {
    let ins = py.allow_threads(|| nwc_container::inspect(&src)).map_err(|e| container_error(py, e))?;
    let mut rows = Vec::with_capacity(ins.matrices.len());
    for m in &ins.matrices {
        let d = PyDict::new(py);
        d.set_item("id", m.id)?;
        d.set_item("tensors", m.names.as_str())?;
        d.set_item("rows", m.shape.rows)?;
        d.set_item("cols", m.shape.cols)?;
        d.set_item("elem", m.mode.elem.name())?;
        d.set_item("layout", m.mode.layout.number())?;
        d.set_item("bytes", m.bytes)?;
        d.set_item("ratio", m.ratio)?;
        d.set_item("entropy_bits", m.entropy_bits)?;
        d.set_item("escapes", m.escapes)?;
        rows.push(d);
    }
    let totals = PyDict::new(py);
    totals.set_item("copied_tensors", ins.copied_tensors)?;
    totals.set_item("copied_bytes", ins.copied_bytes)?;
    totals.set_item("library_version", ins.library_version)?;
    Ok((rows, totals))
}
