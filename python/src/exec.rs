//! The execution layout (spec 20) on the CPU, on numpy arrays: the canonical transcode from BF16
//! (20.12.1) and from a format-10 matrix (20.12.2, FP8 refused: 20.12.3), validation in the order
//! of 20.10 and decode (20.13), through the reference (`nwc_reference::exec`) with the GIL
//! released. Broken rules become `nwc.FormatError` subclasses named after the rules of 20.9.

use crate::codec::decoded;
use crate::errors::{exec_decode_error, exec_encode_error, value_error};
use numpy::{IntoPyArray, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use nwc_reference::exec::{decode_exec, encode_exec, parse_le_fields, ExecEncodeError, ExecField, ExecMatrix};
use nwc_reference::{ElemType, Mode, Shape};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The fields as a dict of numpy arrays (moved, not copied): `esc_start` as uint32, the others
/// as uint8.
fn fields_dict(py: Python<'_>, m: ExecMatrix) -> PyResult<Bound<'_, PyDict>> {
    let ExecMatrix { sm, codes, base, esc_start, esc, .. } = m;
    let d = PyDict::new(py);
    d.set_item("sm", sm.into_pyarray(py))?;
    d.set_item("codes", codes.into_pyarray(py))?;
    d.set_item("base", base.into_pyarray(py))?;
    d.set_item("esc_start", esc_start.into_pyarray(py))?;
    d.set_item("esc", esc.into_pyarray(py))?;
    Ok(d)
}

/// Spec 20.12.1: the canonical execution layout of a rows x cols matrix of BF16 words.
#[pyfunction]
pub fn exec_encode<'py>(py: Python<'py>, words: PyReadonlyArray2<'py, u16>) -> PyResult<Bound<'py, PyDict>> {
    let shape = Shape::new(words.shape()[0] as u64, words.shape()[1] as u64);
    let slice = words.as_slice().map_err(|_| value_error("the weights must be C-contiguous"))?;
    let m = py.allow_threads(|| encode_exec(shape, slice)).map_err(|e| exec_encode_error(py, e))?;
    fields_dict(py, m)
}

/// Spec 20.12.2: the canonical execution layout of the matrix a format-10 encoding carries,
/// after every rule of chapter 13 (decoded by nwc-fast); FP8 is refused first (20.12.3).
#[pyfunction]
pub fn exec_transcode<'py>(
    py: Python<'py>,
    mode_code: u32,
    rows: u64,
    cols: u64,
    fields: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyDict>> {
    // Spec 20.12.3: refused from the mode code alone, before chapter 13 is checked.
    if Mode::from_code(mode_code).is_ok_and(|m| m.elem == ElemType::Fp8E4m3) {
        return Err(exec_encode_error(py, ExecEncodeError::Fp8));
    }
    let d = decoded(py, mode_code, rows, cols, fields)?;
    let nwc_reference::Elements::Bf16(words) = d.elements else {
        return Err(exec_encode_error(py, ExecEncodeError::Fp8));
    };
    let exec = py.allow_threads(|| encode_exec(d.shape, &words)).map_err(|e| exec_encode_error(py, e))?;
    fields_dict(py, exec)
}

/// One field's bytes from the dict (a missing one is empty: spec 20.9.2).
fn field_bytes<'py>(fields: &Bound<'py, PyDict>, field: ExecField) -> PyResult<Option<PyReadonlyArray1<'py, u8>>> {
    match fields.get_item(field.name())? {
        Some(v) if !v.is_none() => {
            let name = field.name();
            Ok(Some(v.extract().map_err(|_| value_error(format!("field `{name}` must be a 1-D uint8 array of its bytes")))?))
        }
        _ => Ok(None),
    }
}

/// Spec 20.10 and 20.13: checks every rule of 20.9 in order, then decodes; returns the rows x
/// cols matrix of BF16 words. `fields` holds each field's little-endian bytes.
#[pyfunction]
pub fn exec_decode<'py>(py: Python<'py>, rows: u64, cols: u64, fields: &Bound<'py, PyDict>) -> PyResult<Bound<'py, PyAny>> {
    let held = ExecField::ALL.into_iter().map(|f| field_bytes(fields, f)).collect::<PyResult<Vec<_>>>()?;
    let bytes: Vec<&[u8]> = held
        .iter()
        .map(|a| a.as_ref().map_or(Ok(&[][..]), |a| a.as_slice()))
        .collect::<Result<_, _>>()
        .map_err(|_| value_error("fields must be contiguous"))?;
    let shape = Shape::new(rows, cols);
    let decoded = py
        .allow_threads(|| {
            parse_le_fields(shape, bytes[0], bytes[1], bytes[2], bytes[3], bytes[4]).map_err(Into::into).and_then(|m| decode_exec(&m))
        })
        .map_err(|e| exec_decode_error(py, &e))?;
    Ok(decoded.words.into_pyarray(py).reshape([rows as usize, cols as usize])?.into_any())
}
