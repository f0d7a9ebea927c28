//! `nwc._native`: the Rust side of the Python package `nwc` (python/nwc/). Each module wraps one
//! engine of the workspace and nothing more: `codec` (nwc-fast, one matrix), `exec` (the execution layout on the CPU, the reference), `model` (nwc-container,
//! checkpoints), `conform` (nwc-conformance), `gpu` (nwc-cuda kernels on torch's tensors). Errors
//! become the Python exceptions of nwc/errors.py with the rule names of spec 13.

mod codec;
mod conform;
mod errors;
mod exec;
mod gpu;
mod model;

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("FORMAT_VERSION", nwc_reference::FORMAT_VERSION)?;
    m.add("RULES", nwc_reference::FormatError::RULES.to_vec())?;
    m.add("EXEC_RULES", nwc_reference::exec::ExecFormatError::RULES.to_vec())?;
    m.add_function(wrap_pyfunction!(codec::geometry, m)?)?;
    m.add_function(wrap_pyfunction!(codec::encode_bf16, m)?)?;
    m.add_function(wrap_pyfunction!(codec::encode_fp8, m)?)?;
    m.add_function(wrap_pyfunction!(codec::validate, m)?)?;
    m.add_function(wrap_pyfunction!(codec::decode, m)?)?;
    m.add_function(wrap_pyfunction!(exec::exec_encode, m)?)?;
    m.add_function(wrap_pyfunction!(exec::exec_transcode, m)?)?;
    m.add_function(wrap_pyfunction!(exec::exec_decode, m)?)?;
    m.add_function(wrap_pyfunction!(model::compress, m)?)?;
    m.add_function(wrap_pyfunction!(model::decompress, m)?)?;
    m.add_function(wrap_pyfunction!(model::verify, m)?)?;
    m.add_function(wrap_pyfunction!(model::inspect, m)?)?;
    m.add_function(wrap_pyfunction!(conform::run_command, m)?)?;
    m.add_function(wrap_pyfunction!(conform::run_callable, m)?)?;
    gpu::register(m)?;
    Ok(())
}
