//! Format-10 matrices resident on a GPU (`CudaMatrix`): uploaded after validation (spec 13), or
//! encoded and uploaded in one call; the exact or bounded matvec, dequant and gather on torch's
//! buffers and stream (the contract of `super`).

use super::{gather_rows, lend, lend_activations, lend_opt, upload_own_encoding, Resident};
use crate::codec::layout_of;
use crate::errors::{decode_error, encode_error, gpu_error, quantize_error, value_error};
use numpy::{IntoPyArray, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use nwc_conformance::fields::{parse, RawFields, STORED_FIELDS};
use nwc_cuda::{Gpu, GpuError, GpuMatrix, MatvecKernel};
use nwc_reference::{quantize_fp8, ElemType, Geometry, Mode, Shape, Weights};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// One encoded matrix resident on a GPU.
#[pyclass(frozen, module = "nwc._native")]
pub struct CudaMatrix {
    r: Resident<GpuMatrix>,
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

fn parse_kernel(name: &str) -> PyResult<MatvecKernel> {
    name.parse().map_err(|e: GpuError| value_error(e.to_string()))
}

impl CudaMatrix {
    fn wrap(m: GpuMatrix, device: usize) -> PyResult<CudaMatrix> {
        let g = Geometry::new(m.mode, m.shape).map_err(|e| value_error(e.to_string()))?;
        Ok(CudaMatrix {
            stored_bytes: m.stored_bytes,
            r: Resident::new(m, device)?,
            rows: g.shape.rows,
            cols: g.shape.cols,
            k16: g.k16,
            kp: g.kp,
        })
    }
}

#[pymethods]
impl CudaMatrix {
    /// Validates the stored fields (every rule of spec 13) and uploads them to `device`: for
    /// matrices read from files or given by the caller. `matvec_kernel`: "exact" (spec 15.4, the
    /// default) or "bounded" (spec 19, layout 1 only).
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
        let kernel = parse_kernel(matvec_kernel)?;
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
        let m = py
            .allow_threads(|| {
                let gpu = Gpu::get(device)?;
                let mut m = GpuMatrix::upload(&gpu, &em)?;
                m.set_matvec_kernel(kernel)?;
                Ok(m)
            })
            .map_err(|e| match e {
                GpuError::Invalid(d) => decode_error(py, &d),
                other => gpu_error(other),
            })?;
        CudaMatrix::wrap(m, device)
    }

    /// Encodes rows x cols BF16 words (spec 4-10; with `fp8`, quantized to fp8 e4m3 with one
    /// scale per row first, spec 11) and uploads the result in the same call, without decoding
    /// it again (our encoder's output is valid by construction). Returns the matrix and the row
    /// scales (fp8) or None. The GIL is released throughout.
    #[staticmethod]
    #[pyo3(signature = (device, words, layout, fp8 = false, matvec_kernel = "exact"))]
    fn encode<'py>(
        py: Python<'py>,
        device: usize,
        words: PyReadonlyArray2<'py, u16>,
        layout: u8,
        fp8: bool,
        matvec_kernel: &str,
    ) -> PyResult<(CudaMatrix, Option<Bound<'py, PyAny>>)> {
        let layout = layout_of(layout)?;
        let kernel = parse_kernel(matvec_kernel)?;
        let shape = Shape::new(words.shape()[0] as u64, words.shape()[1] as u64);
        let slice = words.as_slice().map_err(|_| value_error("the weights must be C-contiguous"))?;
        enum Failed {
            Quantize(nwc_reference::QuantizeError),
            Encode(nwc_reference::EncodeError),
            Gpu(GpuError),
        }
        let result = py.allow_threads(|| {
            let (enc, scale) = if fp8 {
                let (bytes, scales) = quantize_fp8(slice, shape).map_err(Failed::Quantize)?;
                let mode = Mode { elem: ElemType::Fp8E4m3, layout };
                (nwc_fast::encode(mode, shape, Weights::Fp8(&bytes)).map_err(Failed::Encode)?, Some(scales))
            } else {
                let mode = Mode { elem: ElemType::Bf16, layout };
                (nwc_fast::encode(mode, shape, Weights::Bf16(slice)).map_err(Failed::Encode)?, None)
            };
            let mut matrix = enc.matrix;
            matrix.scale = scale.clone();
            let gpu = Gpu::get(device).map_err(Failed::Gpu)?;
            let mut m = upload_own_encoding(&gpu, &matrix).map_err(Failed::Gpu)?;
            m.set_matvec_kernel(kernel).map_err(Failed::Gpu)?;
            Ok((m, scale))
        });
        let (m, scale) = result.map_err(|e| match e {
            Failed::Quantize(q) => quantize_error(py, &q),
            Failed::Encode(q) => encode_error(py, &q),
            Failed::Gpu(g) => gpu_error(g),
        })?;
        Ok((CudaMatrix::wrap(m, device)?, scale.map(|s| s.into_pyarray(py).into_any())))
    }

    /// Spec 15.4 (spec 19 with the bounded kernel): `y[b] = W x[b] (+ bias)` for `batch` BF16
    /// vectors at `x` (batch x kp words, zero-padded from cols to kp), into `y` (batch x rows BF16
    /// words); `bias` is 0 or `rows` f32 values.
    fn matvec_bf16(&self, py: Python<'_>, x: u64, batch: usize, y: u64, bias: u64, stream: usize) -> PyResult<()> {
        if batch == 0 {
            return Err(value_error("matvec (spec 15.4): batch must be at least 1"));
        }
        let (kp, rows) = (self.kp as usize, self.rows as usize);
        py.allow_threads(|| {
            self.r.run(
                stream,
                |_| {},
                |m, g| {
                    let act = lend_activations(g, x, batch, kp);
                    let bs = lend_opt::<f32>(g, bias, rows);
                    m.matvec_into_bf16(&act, bs.as_deref(), &mut lend::<u16>(g, y, batch * rows))
                },
            )
        })
    }

    /// Spec 15.2: the whole matrix as BF16 into `out` (rows x k16 words, row stride k16).
    fn dequant(&self, py: Python<'_>, out: u64, stream: usize) -> PyResult<()> {
        let len = self.rows as usize * self.k16 as usize;
        py.allow_threads(|| self.r.run(stream, |_| {}, |m, g| m.dequant_into(&mut lend::<u16>(g, out, len))))
    }

    /// Spec 15.3: the rows named by `n` int64 ids at `ids` (each checked to be in 0..rows on the
    /// device by the caller, before this launch) into `out` (n x k16 BF16 words).
    fn gather(&self, py: Python<'_>, ids: u64, n: usize, out: u64, stream: usize) -> PyResult<()> {
        if n == 0 {
            return Ok(());
        }
        let k16 = self.k16 as usize;
        py.allow_threads(|| self.r.run(stream, |_| {}, |m, g| gather_rows(m, &lend::<u64>(g, ids, n), &mut lend::<u16>(g, out, n * k16))))
    }

    /// Spec 20.12: the execution layout of this matrix, transcoded on the GPU (BF16 only).
    fn transcode(&self, py: Python<'_>) -> PyResult<super::exec::CudaExecMatrix> {
        let e = py.allow_threads(|| nwc_cuda::exec::GpuExecMatrix::transcode(&self.r.lock())).map_err(gpu_error)?;
        super::exec::CudaExecMatrix::wrap(e, self.r.device)
    }

    /// The device ordinal the matrix lives on.
    #[getter]
    fn device(&self) -> usize {
        self.r.device
    }

    /// The matvec kernel: "exact" (spec 15.4) or "bounded" (spec 19, layout 1).
    #[getter]
    fn matvec_kernel(&self) -> &'static str {
        self.r.lock().matvec_kernel().name()
    }
}
