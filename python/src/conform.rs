//! The conformance suite (spec 14) for encoders written in Python: the corpus reader and judges of
//! `nwc-conformance`, with the encoder either a command (the protocol of conformance/README.md,
//! run exactly as `nwc-conform encoder` runs it) or a Python callable judged in-process.

use crate::errors::value_error;
use nwc_conformance::corpus::Corpus;
use nwc_conformance::fields::{RawFields, EXP_OF_RANK, STORED_FIELDS};
use nwc_conformance::manifest::{Kind, Vector};
use nwc_conformance::report::{Report, Verdict};
use nwc_conformance::run::encoder::{canonical, verdict};
use nwc_conformance::run::{fail, input, judge_all, Judgement, Tool};
use nwc_reference::{Geometry, Mode, Shape};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn load(corpus: &Path) -> PyResult<Corpus> {
    Corpus::load(corpus).map_err(|e| value_error(e.to_string()))
}

/// `nwc-conform encoder -- PROGRAM ARGS...`: returns the report as JSON text.
#[pyfunction]
pub fn run_command(
    py: Python<'_>,
    corpus: PathBuf,
    program: String,
    args: Vec<String>,
    timeout_s: f64,
    work_dir: PathBuf,
) -> PyResult<String> {
    let corpus = load(&corpus)?;
    let tool = Tool {
        program,
        args,
        timeout: Duration::from_secs_f64(timeout_s.max(0.001)),
        work_dir,
        keep_work: false,
        // The protocol's default: FP8 vectors with scales pass them as `--scales FILE` (spec 14.1).
        scales: nwc_conformance::run::Scales::Passed,
    };
    Ok(py.allow_threads(|| nwc_conformance::run::encoder::run(&corpus, &tool).to_json()))
}

/// Judges `encoder(input: bytes, elem: str, layout: int, rows: int, cols: int) -> dict[str, bytes]`
/// (the Python side adapts the user's callable to this) on every canonical and valid vector:
/// CANONICAL, VALID or FAIL exactly as the command runner judges (spec 14.1-14.3).
#[pyfunction]
pub fn run_callable(py: Python<'_>, corpus: PathBuf, encoder: Py<PyAny>, name: String) -> PyResult<String> {
    let corpus = load(&corpus)?;
    let results = judge_all(&corpus, |_, v| match v.kind {
        Kind::Invalid | Kind::Malformed => (Verdict::Skipped, None),
        Kind::Canonical | Kind::Valid => judge(py, &corpus, &encoder, v).unwrap_or_else(fail),
    });
    Ok(Report::new("encoder", vec![name], &corpus, results).to_json())
}

fn judge(py: Python<'_>, corpus: &Corpus, encoder: &Py<PyAny>, v: &Vector) -> Result<Judgement, String> {
    let input = input(corpus, v)?;
    let mode = Mode::from_code(v.mode_code).map_err(|e| format!("{:?} vector with {e}", v.kind))?;
    let g = Geometry::new(mode, Shape::new(v.rows, v.cols)).map_err(|e| format!("{:?} vector with {e}", v.kind))?;
    // The callable takes no scales, so the reference's own are expected (spec 11.4).
    let expected = canonical(corpus, v, &input, false)?;
    let call = encoder.call1(py, (PyBytes::new(py, &input), mode.elem.name(), mode.layout.number(), v.rows, v.cols));
    let out = match call {
        Ok(out) => out,
        Err(e) => return Ok(fail(format!("the encoder raised {e}"))),
    };
    let dict = out.downcast_bound::<PyDict>(py).map_err(|_| "the encoder adapter returned no dict".to_owned())?;
    let mut got = RawFields::new();
    for name in STORED_FIELDS.iter().chain([&EXP_OF_RANK]) {
        if let Ok(Some(b)) = dict.get_item(name) {
            if let Ok(bytes) = b.extract::<Vec<u8>>() {
                got.insert((*name).to_owned(), bytes);
            }
        }
    }
    Ok(verdict(&g, v, &expected, &got, &input))
}
