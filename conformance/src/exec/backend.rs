//! Engines of the execution layout (spec 20) behind a trait, so the same corpus checks run on the
//! reference and on a GPU. Loading differs from format 10 ([`crate::backend`]: stored fields,
//! and a transcoder to judge); a loaded matrix answers format 10's four [`Loaded`] queries.

use crate::backend::{check_outputs_class, reference_loaded, Backend, Loaded, MatvecClass};
use crate::corpus::Corpus;
use crate::manifest::Vector;
use nwc_reference::exec::{decode_exec, transcode, ExecDecoded, ExecMatrix};
use nwc_reference::{EncodedMatrix, Mode};
use std::cell::RefCell;

/// An implementation of the execution layout. Every matrix it is given has passed the reference's
/// checks first (spec 20.16: nothing runs on fields that break a rule).
pub trait ExecBackend {
    /// Short name used in reports, e.g. "reference" or "gpu".
    fn name(&self) -> &str;
    /// Loads an execution layout from its stored fields (spec 20.3), already validated.
    fn load(&self, m: &ExecMatrix) -> Result<Box<dyn ExecLoaded + '_>, String>;
    /// Spec 20.12.2: the execution layout of a BF16 format-10 encoding (already validated). The
    /// runner compares the result with the vector's fields byte for byte.
    fn transcode(&self, m: &EncodedMatrix) -> Result<ExecMatrix, String>;
}

/// One loaded execution layout (spec 20.14, 20.15): the format-10 [`Loaded`] queries. Dequant and
/// gather give BF16 words with row stride K16 (pad columns 0x0000); `x` holds `batch` activation
/// vectors of K values each.
pub use crate::backend::Loaded as ExecLoaded;

/// The reference's execution layout as a backend.
pub struct ReferenceExecBackend;

struct ReferenceExecLoaded(ExecDecoded);

impl ExecBackend for ReferenceExecBackend {
    fn name(&self) -> &str {
        "reference"
    }

    fn load(&self, m: &ExecMatrix) -> Result<Box<dyn ExecLoaded + '_>, String> {
        Ok(Box::new(ReferenceExecLoaded(decode_exec(m).map_err(|e| e.to_string())?)))
    }

    fn transcode(&self, m: &EncodedMatrix) -> Result<ExecMatrix, String> {
        transcode(m).map_err(|e| e.to_string())
    }
}

reference_loaded!(ReferenceExecLoaded);

/// Presents one loaded execution layout as a format-10 [`Backend`] for exactly one `load`, so the
/// output checks of [`check_outputs_class`] (same files, same comparisons, spec 19 bounds) serve
/// both representations without changing the format-10 traits.
struct OneShot<'a> {
    name: String,
    loaded: RefCell<Option<Box<dyn ExecLoaded + 'a>>>,
}

impl Backend for OneShot<'_> {
    fn name(&self) -> &str {
        &self.name
    }
    fn load(&self, _: &EncodedMatrix) -> Result<Box<dyn Loaded + '_>, String> {
        Ok(self.loaded.borrow_mut().take().ok_or("the execution layout was loaded once already")?)
    }
}

/// Loads `m` on `backend` and checks every dequant, gather and matvec case of `vector` (spec 20.14,
/// 20.15; bounded class: spec 19). Returns the number of cases checked.
pub fn check_exec_outputs(
    backend: &dyn ExecBackend,
    corpus: &Corpus,
    vector: &Vector,
    m: &ExecMatrix,
    class: MatvecClass,
) -> Result<usize, String> {
    let loaded = backend.load(m).map_err(|e| format!("{} cannot load the execution layout: {e}", backend.name()))?;
    let shim = OneShot { name: backend.name().to_owned(), loaded: RefCell::new(Some(loaded)) };
    // Only the shape of this stand-in is read (row stride and row count of the outputs).
    let stand_in = EncodedMatrix {
        mode: Mode::BF16_L0,
        shape: m.shape,
        data: Vec::new(),
        bases: Vec::new(),
        hdr: Vec::new(),
        lut: Vec::new(),
        low: Vec::new(),
        scale: None,
    };
    check_outputs_class(&shim, corpus, vector, &stand_in, class)
}
