//! One matrix at a time: encode (spec 4-11), decode (spec 15.1), validate (spec 13) and the
//! geometry of spec 3, on numpy arrays. The multi-core `nwc-fast` codec does the work (its output
//! is byte-identical to the reference's), with the GIL released. Input arrays are read in place
//! (the Python side hands over C-contiguous views, copying only when the caller's array is not);
//! the encoder's output vectors become numpy arrays without a copy.

use crate::errors::{decode_error, encode_error, format_error, quantize_error, value_error};
use numpy::{IntoPyArray, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use nwc_conformance::fields::{parse, RawFields, STORED_FIELDS};
use nwc_reference::{quantize_fp8, DecodedMatrix, Elements, EncodedMatrix, Encoding, Geometry, Layout, Mode, Shape, Weights};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Spec 2.1: the layout field (0 or 1); anything else is the caller's error.
pub fn layout_of(layout: u8) -> PyResult<Layout> {
    match layout {
        0 => Ok(Layout::Rows8),
        1 => Ok(Layout::Fragment16),
        n => Err(value_error(format!("layout must be 0 (8-row blocks, spec 7) or 1 (16-row mma fragments, spec 8), not {n}"))),
    }
}

/// Spec 2.3 and 3.2: the mode code and shape, checked (rules 13.1 mode-code, 13.2 shape-range).
fn checked_geometry(py: Python<'_>, mode_code: u32, rows: u64, cols: u64) -> PyResult<Geometry> {
    let mode = Mode::from_code(mode_code).map_err(|e| format_error(py, &e, None, ""))?;
    Geometry::new(mode, Shape::new(rows, cols)).map_err(|e| format_error(py, &e, None, ""))
}

/// Spec 3: the derived sizes of a matrix (blocks, raw plane, padded widths), for size checks.
#[pyfunction]
pub fn geometry<'py>(py: Python<'py>, mode_code: u32, rows: u64, cols: u64) -> PyResult<Bound<'py, PyDict>> {
    let g = checked_geometry(py, mode_code, rows, cols)?;
    let d = PyDict::new(py);
    d.set_item("blocks", g.blocks)?;
    d.set_item("row_blocks", g.row_blocks)?;
    d.set_item("col_blocks", g.col_blocks)?;
    d.set_item("n_low", g.n_low)?;
    d.set_item("k16", g.k16)?;
    d.set_item("kp", g.kp)?;
    Ok(d)
}

/// The encoder's result as a dict of numpy arrays (moved, not copied) and numbers.
fn encoding_dict<'py>(py: Python<'py>, enc: Encoding, scale: Option<Vec<f32>>) -> PyResult<Bound<'py, PyDict>> {
    let Encoding { matrix, exp_of_rank, stream_end, escapes } = enc;
    let EncodedMatrix { mode, data, bases, hdr, lut, low, .. } = matrix;
    let d = PyDict::new(py);
    d.set_item("mode", mode.code())?;
    d.set_item("data", data.into_pyarray(py))?;
    d.set_item("bases", bases.into_pyarray(py))?;
    d.set_item("hdr", hdr.into_pyarray(py))?;
    d.set_item("lut", lut.into_pyarray(py))?;
    d.set_item("low", low.into_pyarray(py))?;
    d.set_item("scale", scale.map(|s| s.into_pyarray(py)))?;
    d.set_item("exp_of_rank", exp_of_rank.to_vec().into_pyarray(py))?;
    d.set_item("stream_end", stream_end)?;
    d.set_item("escapes", escapes)?;
    Ok(d)
}

/// Encodes a rows x cols matrix of BF16 words (spec 4.1); with `fp8`, first quantizes it to fp8
/// e4m3 with one scale per row (spec 11), then encodes the fp8 bytes (spec 4.5).
#[pyfunction]
pub fn encode_bf16<'py>(py: Python<'py>, words: PyReadonlyArray2<'py, u16>, layout: u8, fp8: bool) -> PyResult<Bound<'py, PyDict>> {
    let layout = layout_of(layout)?;
    let (rows, cols) = (words.shape()[0] as u64, words.shape()[1] as u64);
    let shape = Shape::new(rows, cols);
    let slice = words.as_slice().map_err(|_| value_error("the weights must be C-contiguous"))?;
    let result = py.allow_threads(|| {
        if !fp8 {
            let mode = Mode { elem: nwc_reference::ElemType::Bf16, layout };
            return Ok(nwc_fast::encode(mode, shape, Weights::Bf16(slice)).map(|e| (e, None)));
        }
        let (bytes, scales) = quantize_fp8(slice, shape)?;
        let mode = Mode { elem: nwc_reference::ElemType::Fp8E4m3, layout };
        Ok(nwc_fast::encode(mode, shape, Weights::Fp8(&bytes)).map(|e| (e, Some(scales))))
    });
    let (enc, scale) = result.map_err(|e| quantize_error(py, &e))?.map_err(|e| encode_error(py, &e))?;
    encoding_dict(py, enc, scale)
}

/// Encodes a rows x cols matrix of fp8 e4m3fn bytes as they are, without scales (spec 4.5).
#[pyfunction]
pub fn encode_fp8<'py>(py: Python<'py>, bytes: PyReadonlyArray2<'py, u8>, layout: u8) -> PyResult<Bound<'py, PyDict>> {
    let layout = layout_of(layout)?;
    let shape = Shape::new(bytes.shape()[0] as u64, bytes.shape()[1] as u64);
    let slice = bytes.as_slice().map_err(|_| value_error("the weights must be C-contiguous"))?;
    let mode = Mode { elem: nwc_reference::ElemType::Fp8E4m3, layout };
    let enc = py.allow_threads(|| nwc_fast::encode(mode, shape, Weights::Fp8(slice))).map_err(|e| encode_error(py, &e))?;
    encoding_dict(py, enc, None)
}

/// The stored fields as the reference's EncodedMatrix: rules 13.1, 13.2 and the byte-level part
/// of 13.3 are checked here (a missing field counts as empty and fails its size rule).
fn matrix_of(py: Python<'_>, mode_code: u32, rows: u64, cols: u64, fields: &Bound<'_, PyDict>) -> PyResult<EncodedMatrix> {
    let mut raw = RawFields::new();
    for name in STORED_FIELDS {
        if let Some(v) = fields.get_item(name)? {
            if v.is_none() {
                continue;
            }
            let arr: PyReadonlyArray1<u8> = v.extract().map_err(|_| value_error(format!("field `{name}` must be a 1-D uint8 array")))?;
            let bytes = arr.as_slice().map_err(|_| value_error(format!("field `{name}` must be contiguous")))?;
            raw.insert(name.to_owned(), bytes.to_vec());
        }
    }
    parse(mode_code, rows, cols, &raw).map_err(|e| format_error(py, &e, None, ""))
}

/// Checks every validity rule of spec 13 (the whole stream is decoded, spec 13.21).
#[pyfunction]
pub fn validate(py: Python<'_>, mode_code: u32, rows: u64, cols: u64, fields: &Bound<'_, PyDict>) -> PyResult<()> {
    decoded(py, mode_code, rows, cols, fields).map(|_| ())
}

/// The stored fields checked by every rule of spec 13 and decoded (spec 15.1) by nwc-fast, with
/// the GIL released.
pub fn decoded(py: Python<'_>, mode_code: u32, rows: u64, cols: u64, fields: &Bound<'_, PyDict>) -> PyResult<DecodedMatrix> {
    let m = matrix_of(py, mode_code, rows, cols, fields)?;
    py.allow_threads(|| nwc_fast::decode(&m)).map_err(|e| decode_error(py, &e))
}

/// Spec 15.1: validates and decodes; returns (weights as a rows x cols uint16 (BF16) or uint8
/// (fp8) array, exp_of_rank of ranks 0..14).
#[pyfunction]
pub fn decode<'py>(
    py: Python<'py>,
    mode_code: u32,
    rows: u64,
    cols: u64,
    fields: &Bound<'py, PyDict>,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let d = decoded(py, mode_code, rows, cols, fields)?;
    let dims = [rows as usize, cols as usize];
    let weights = match d.elements {
        Elements::Bf16(w) => w.into_pyarray(py).reshape(dims)?.into_any(),
        Elements::Fp8(b) => b.into_pyarray(py).reshape(dims)?.into_any(),
    };
    Ok((weights, d.exp_of_rank.to_vec().into_pyarray(py).into_any()))
}
