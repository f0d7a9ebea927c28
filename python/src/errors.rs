//! Rust errors -> Python exceptions. The exception classes live in `nwc/errors.py` (so they are
//! plain Python classes users can subclass and pickle); this module calls its factories with the
//! rule name, spec clause, byte offset and field that the reference decoder's errors carry, so a
//! Python caller sees the same rule names as the `nwc` command prints.

use nwc_container::ContainerError;
use nwc_reference::exec::{ExecDecodeError, ExecEncodeError, ExecFormatError};
use nwc_reference::{DecodeError, EncodeError, FormatError, QuantizeError};
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The field a broken rule was found in and the byte offset into it, where the error says
/// (the same attribution as the CLI's `rule_file`; offsets of u32 fields are byte offsets).
fn field_and_offset(e: &FormatError) -> (&'static str, Option<u64>) {
    use FormatError::*;
    match e {
        ModeCode { .. } | ShapeRange { .. } => ("summary", None),
        DataLength { .. } => ("hdr", None),
        FieldSize { field, .. } => (field.name(), None),
        DataTooShort { got, .. } => ("data", Some(*got)),
        OffsetFirstNonZero { .. } => ("bases", Some(0)),
        OffsetMisaligned { block, .. } | OffsetMismatch { block, .. } => ("bases", Some(4 * block)),
        LaneLengthRange { offset, .. } => ("hdr", Some(*offset)),
        LaneOverlong { block, lane, .. } => ("hdr", Some(32 * block + *lane as u64)),
        RankTable { .. } => ("lut", None),
        LutMismatch { entry, .. } => ("lut", Some(4 * *entry as u64)),
        LaneTruncated { offset, .. } | StreamPadding { offset, .. } | Fp8Rank { offset, .. } | Bf16Escape { offset, .. } => {
            ("data", Some(*offset))
        }
        FillerCode { .. } => ("data", None),
        Fp8Nibble { offset, .. } | Fp8Nan { offset, .. } | RawPadding { offset, .. } => ("low", Some(*offset)),
        ScaleValue { row, .. } => ("scale", Some(4 * row)),
        // FormatError may grow variants; the rule name still comes from the error itself.
        _ => ("", None),
    }
}

fn errors_module(py: Python<'_>) -> PyResult<Bound<'_, PyModule>> {
    py.import("nwc.errors")
}

/// Builds `nwc.FormatError` (the subclass for its rule) for a broken validity rule of spec 13.
/// `context` adds attributes (e.g. `file`, `matrix`) and is prefixed to the message.
pub fn format_error(py: Python<'_>, e: &FormatError, context: Option<&Bound<'_, PyDict>>, prefix: &str) -> PyErr {
    let (field, offset) = field_and_offset(e);
    let build = || -> PyResult<PyErr> {
        let kwargs = PyDict::new(py);
        kwargs.set_item("rule", e.rule())?;
        kwargs.set_item("clause", e.clause())?;
        kwargs.set_item("offset", offset)?;
        kwargs.set_item("field", if field.is_empty() { None } else { Some(field) })?;
        if let Some(c) = context {
            kwargs.update(c.as_mapping())?;
        }
        let err = errors_module(py)?.getattr("format_error")?.call((format!("{prefix}{e}"),), Some(&kwargs))?;
        Ok(PyErr::from_value(err))
    };
    build().unwrap_or_else(|err| err)
}

/// An error class of nwc.errors by name, raised with `message`.
fn named(py: Python<'_>, class: &str, message: String) -> PyErr {
    match errors_module(py).and_then(|m| m.getattr(class)) {
        Ok(cls) => PyErr::from_type(cls.downcast_into().expect("nwc.errors classes are types"), message),
        Err(e) => e,
    }
}

/// A broken rule of spec 20.9 (the execution layout) as its `nwc.FormatError` subclass, with
/// the field and byte offset spec 20.10 locates it at; a limit refusal as `nwc.LimitError`.
pub fn exec_decode_error(py: Python<'_>, e: &ExecDecodeError) -> PyErr {
    let f = match e {
        ExecDecodeError::Format(f) => f,
        ExecDecodeError::Limit(l) => return named(py, "LimitError", l.to_string()),
        other => return named(py, "NwcError", other.to_string()),
    };
    let build = || -> PyResult<PyErr> {
        let kwargs = PyDict::new(py);
        kwargs.set_item("rule", f.rule())?;
        kwargs.set_item("clause", f.clause())?;
        // For a field size the reference's "offset" is the length found; the message says it.
        let offset = if matches!(f, ExecFormatError::FieldSize { .. }) { None } else { f.offset() };
        kwargs.set_item("offset", offset)?;
        kwargs.set_item("field", f.field().map(|x| x.name()).unwrap_or("summary"))?;
        let err = errors_module(py)?.getattr("format_error")?.call((f.to_string(),), Some(&kwargs))?;
        Ok(PyErr::from_value(err))
    };
    build().unwrap_or_else(|err| err)
}

/// Building an execution layout failed (spec 20.12): a broken rule of the format-10 source as
/// its FormatError, anything else (FP8, the shape, too many escapes) as `nwc.EncodeError`.
pub fn exec_encode_error(py: Python<'_>, e: ExecEncodeError) -> PyErr {
    match e {
        ExecEncodeError::Source(d) => decode_error(py, &d),
        ExecEncodeError::Limit(l) => named(py, "LimitError", l.to_string()),
        other => named(py, "EncodeError", other.to_string()),
    }
}

pub fn decode_error(py: Python<'_>, e: &DecodeError) -> PyErr {
    match e {
        DecodeError::Format(f) => format_error(py, f, None, ""),
        DecodeError::Limit(l) => named(py, "LimitError", l.to_string()),
        other => named(py, "NwcError", other.to_string()),
    }
}

pub fn encode_error(py: Python<'_>, e: &EncodeError) -> PyErr {
    match e {
        EncodeError::Limit(l) => named(py, "LimitError", l.to_string()),
        other => named(py, "EncodeError", other.to_string()),
    }
}

pub fn quantize_error(py: Python<'_>, e: &QuantizeError) -> PyErr {
    named(py, "EncodeError", e.to_string())
}

/// Checkpoint errors: a broken matrix is a FormatError (with `file`, `matrix`, `tensors`), a bad
/// call a UsageError, an I/O failure an OSError, anything else about the files a CheckpointError.
pub fn container_error(py: Python<'_>, e: ContainerError) -> PyErr {
    match &e {
        ContainerError::Matrix { file, id, names, source } => match source {
            DecodeError::Format(f) => {
                let ctx = PyDict::new(py);
                let filled = ctx
                    .set_item("file", file.display().to_string())
                    .and_then(|_| ctx.set_item("matrix", *id))
                    .and_then(|_| ctx.set_item("tensors", names.as_str()));
                if let Err(err) = filled {
                    return err;
                }
                format_error(py, f, Some(&ctx), &format!("{}: matrix `nwc/{id}` ({names}): ", file.display()))
            }
            _ => named(py, "LimitError", e.to_string()),
        },
        ContainerError::Usage(_) => named(py, "UsageError", e.to_string()),
        ContainerError::Io { .. } | ContainerError::Write { .. } => PyOSError::new_err(e.to_string()),
        _ => named(py, "CheckpointError", e.to_string()),
    }
}

/// A value the caller passed is unusable (ValueError, not one of the format's rules).
pub fn value_error(message: impl Into<String>) -> PyErr {
    PyValueError::new_err(message.into())
}

pub fn gpu_error(e: nwc_cuda::GpuError) -> PyErr {
    match e {
        nwc_cuda::GpuError::Param(p) => PyValueError::new_err(p.to_string()),
        other => PyRuntimeError::new_err(other.to_string()),
    }
}
