//! What a decoder computes from a valid encoding (spec 15.2 - 15.4), behind a trait so the same
//! checks run on the reference and on other implementations (the CUDA crate plugs its kernels in
//! here to provide `nwc-conform gpu`).

use crate::corpus::Corpus;
use crate::manifest::Vector;
use nwc_reference::{decode, DecodedMatrix, EncodedMatrix};

/// An implementation of the decode-side operations. `load` is called once per vector with an
/// encoding the reference has already validated; the returned handle answers the queries.
pub trait Backend {
    /// Short name used in reports, e.g. "reference" or "gpu".
    fn name(&self) -> &str;
    fn load(&self, m: &EncodedMatrix) -> Result<Box<dyn Loaded + '_>, String>;
}

/// One loaded matrix. Shapes and units follow `DecodedMatrix` (spec 15): dequant and gather give
/// BF16 words with row stride K16; `x` holds `batch` activation vectors of K values each.
pub trait Loaded {
    fn dequant(&mut self) -> Result<Vec<u16>, String>;
    fn gather(&mut self, rows: &[u64]) -> Result<Vec<u16>, String>;
    fn matvec(&mut self, x: &[f32], batch: usize, bias: Option<&[f32]>) -> Result<Vec<f32>, String>;
    fn matvec_bf16(&mut self, x: &[f32], batch: usize, bias: Option<&[f32]>) -> Result<Vec<u16>, String>;
}

/// The reference codec as a backend.
pub struct ReferenceBackend;

struct ReferenceLoaded(DecodedMatrix);

impl Backend for ReferenceBackend {
    fn name(&self) -> &str {
        "reference"
    }

    fn load(&self, m: &EncodedMatrix) -> Result<Box<dyn Loaded + '_>, String> {
        Ok(Box::new(ReferenceLoaded(decode(m).map_err(|e| e.to_string())?)))
    }
}

/// `Loaded` for a wrapper around a reference matrix type (format 10's `DecodedMatrix`, the
/// execution layout's `ExecDecoded`): both answer the four queries with the same signatures.
macro_rules! reference_loaded {
    ($wrapper:ty) => {
        impl $crate::backend::Loaded for $wrapper {
            fn dequant(&mut self) -> Result<Vec<u16>, String> {
                Ok(self.0.dequant())
            }
            fn gather(&mut self, rows: &[u64]) -> Result<Vec<u16>, String> {
                self.0.gather(rows).map_err(|e| e.to_string())
            }
            fn matvec(&mut self, x: &[f32], batch: usize, bias: Option<&[f32]>) -> Result<Vec<f32>, String> {
                self.0.matvec(x, batch, bias).map_err(|e| e.to_string())
            }
            fn matvec_bf16(&mut self, x: &[f32], batch: usize, bias: Option<&[f32]>) -> Result<Vec<u16>, String> {
                self.0.matvec_bf16(x, batch, bias).map_err(|e| e.to_string())
            }
        }
    };
}
pub(crate) use reference_loaded;

reference_loaded!(ReferenceLoaded);

fn u16s(bytes: &[u8]) -> Vec<u16> {
    bytes.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect()
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

fn bf16_is_nan(w: u16) -> bool {
    w & 0x7F80 == 0x7F80 && w & 0x007F != 0
}

/// Compares bit patterns; `nan_equal` makes any NaN equal any NaN (spec 15.4.5, matvec only).
fn first_mismatch<T: Copy + PartialEq + std::fmt::LowerHex>(
    what: &str,
    expected: &[T],
    got: &[T],
    is_nan: impl Fn(T) -> bool,
    (outer, inner, per_outer): (&str, &str, u64),
) -> Result<(), String> {
    if expected.len() != got.len() {
        return Err(format!("{what}: {} values, expected {}", got.len(), expected.len()));
    }
    match (0..expected.len()).find(|&i| expected[i] != got[i] && !(is_nan(expected[i]) && is_nan(got[i]))) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{what}[{i}] ({outer} {}, {inner} {}): expected {:#x}, got {:#x}",
            i as u64 / per_outer,
            i as u64 % per_outer,
            expected[i],
            got[i]
        )),
    }
}

/// Which matvec results an implementation promises: the canonical bits (spec 15.4, the exact
/// class) or results within the bound of spec 19 (the bounded class, e.g. tensor cores).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MatvecClass {
    #[default]
    Exact,
    /// Spec 19: an output of a matvec case that carries a `bound` file passes when it is within B
    /// of the canonical result (spec 19.4, checked as spec 19.6 says); outputs outside the domain
    /// (B is NaN) and cases without bounds (f32 activations) must still be canonical (spec 19.1:
    /// an implementation that documents other results there is judged by its own tests).
    Bounded,
}

/// Runs every dequant, gather and matvec case of `vector` on `backend` and compares bit for bit.
/// Returns the number of cases checked.
pub fn check_outputs(backend: &dyn Backend, corpus: &Corpus, vector: &Vector, m: &EncodedMatrix) -> Result<usize, String> {
    check_outputs_class(backend, corpus, vector, m, MatvecClass::Exact)
}

fn f64s(bytes: &[u8]) -> Vec<f64> {
    bytes.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes"))).collect()
}

/// Spec 19.4 per output where the case has bounds; elsewhere the expected bits `exact` (f32 bits
/// or BF16 words; any NaN matches any NaN). `canonical` is the f32 result.
fn first_outside_bound(
    what: &str,
    (canonical, exact): (&[f32], &[u32]),
    bounds: &[f64],
    got: &[u32],
    bf16: bool,
    rows: u64,
) -> Result<(), String> {
    if got.len() != canonical.len() || bounds.len() != canonical.len() || exact.len() != canonical.len() {
        return Err(format!("{what}: {} values, expected {} (and {} bounds)", got.len(), canonical.len(), bounds.len()));
    }
    let is_nan = |w: u32| if bf16 { bf16_is_nan(w as u16) } else { f32::from_bits(w).is_nan() };
    for i in 0..got.len() {
        let (y_c, b, g) = (canonical[i], bounds[i], got[i]);
        let ok = if b.is_nan() {
            // Outside the domain of spec 19.2: the canonical bits.
            g == exact[i] || (is_nan(g) && is_nan(exact[i]))
        } else if bf16 {
            nwc_reference::bounded::check_bf16(g as u16, y_c, b)
        } else {
            nwc_reference::bounded::check_f32(f32::from_bits(g), y_c, b)
        };
        if !ok {
            let shown = if bf16 { f32::from_bits(g << 16) } else { f32::from_bits(g) };
            return Err(format!(
                "{what}[{i}] (batch {}, row {}): got {shown:e}, canonical {y_c:e}, bound {b:e} (spec 19.4)",
                i as u64 / rows,
                i as u64 % rows
            ));
        }
    }
    Ok(())
}

/// [`check_outputs`] for an implementation of `class`.
pub fn check_outputs_class(
    backend: &dyn Backend,
    corpus: &Corpus,
    vector: &Vector,
    m: &EncodedMatrix,
    class: MatvecClass,
) -> Result<usize, String> {
    let mut loaded = backend.load(m).map_err(|e| format!("{} cannot load the encoding: {e}", backend.name()))?;
    let stride = m.shape.cols.div_ceil(16) * 16;
    let no_nan = |_| false;
    let mut cases = 0;
    if let Some(path) = &vector.dequant {
        let expected = u16s(&corpus.read(vector, path)?);
        first_mismatch("dequant", &expected, &loaded.dequant()?, no_nan, ("row", "column", stride))?;
        cases += 1;
    }
    for (i, case) in vector.gathers.iter().enumerate() {
        let expected = u16s(&corpus.read(vector, &case.output)?);
        first_mismatch(&format!("gather {i}"), &expected, &loaded.gather(&case.rows)?, no_nan, ("row", "column", stride))?;
        cases += 1;
    }
    for (i, case) in vector.matvecs.iter().enumerate() {
        let x = f32s(&corpus.read(vector, &case.activations)?);
        let bias = case.bias.as_ref().map(|p| corpus.read(vector, p).map(|b| f32s(&b))).transpose()?;
        let batch = usize::try_from(case.batch).map_err(|_| format!("matvec {i}: batch {} too large", case.batch))?;
        let rows = m.shape.rows;
        if let (MatvecClass::Bounded, Some(path)) = (class, &case.bound) {
            let bounds = f64s(&corpus.read(vector, path)?);
            let canonical = f32s(&corpus.read(vector, &case.output_f32)?);
            let bits: Vec<u32> = canonical.iter().map(|v| v.to_bits()).collect();
            let words: Vec<u32> = u16s(&corpus.read(vector, &case.output_bf16)?).into_iter().map(u32::from).collect();
            let got: Vec<u32> = loaded.matvec(&x, batch, bias.as_deref())?.iter().map(|v| v.to_bits()).collect();
            first_outside_bound(&format!("matvec {i} f32 output"), (&canonical, &bits), &bounds, &got, false, rows)?;
            let got: Vec<u32> = loaded.matvec_bf16(&x, batch, bias.as_deref())?.into_iter().map(u32::from).collect();
            first_outside_bound(&format!("matvec {i} bf16 output"), (&canonical, &words), &bounds, &got, true, rows)?;
            cases += 1;
            continue;
        }
        let expected: Vec<u32> = f32s(&corpus.read(vector, &case.output_f32)?).iter().map(|v| v.to_bits()).collect();
        let got: Vec<u32> = loaded.matvec(&x, batch, bias.as_deref())?.iter().map(|v| v.to_bits()).collect();
        let f32_nan = |w: u32| f32::from_bits(w).is_nan();
        first_mismatch(&format!("matvec {i} f32 output"), &expected, &got, f32_nan, ("batch", "row", rows))?;
        let expected = u16s(&corpus.read(vector, &case.output_bf16)?);
        let got = loaded.matvec_bf16(&x, batch, bias.as_deref())?;
        first_mismatch(&format!("matvec {i} bf16 output"), &expected, &got, bf16_is_nan, ("batch", "row", rows))?;
        cases += 1;
    }
    Ok(cases)
}
