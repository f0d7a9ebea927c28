//! The GPU conformance runs: the golden corpus in `vectors/` (manifest schema of
//! conformance/src/manifest.rs) and a random sweep against the reference. Both count one pass or
//! one fail per matrix and end with the line `N passed, N failed`.

use crate::matrix::{GpuMatrix, OutputKind};
use crate::{Gpu, GpuError};
use nwc_reference::{decode, encode, DecodedMatrix, EncodedMatrix, FormatError, Geometry, Layout, Mode, Shape, Weights};
use nwc_testkit::gen::{Dist, Generator};
use rand::Rng;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// Passed and failed counts, with a line per failure.
#[derive(Default, Debug)]
pub struct Tally {
    pub passed: u64,
    pub failed: u64,
    pub failures: Vec<String>,
}

impl Tally {
    fn record(&mut self, id: &str, result: Result<(), String>) {
        match result {
            Ok(()) => self.passed += 1,
            Err(why) => {
                self.failed += 1;
                self.failures.push(format!("{id}: {why}"));
            }
        }
    }

    /// The summary line, exactly `N passed, N failed`.
    pub fn line(&self) -> String {
        format!("{} passed, {} failed", self.passed, self.failed)
    }
}

/// NaN equals any NaN (spec 15.4.6); everything else compares bit for bit.
pub fn same_f32(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

pub fn same_bf16(a: u16, b: u16) -> bool {
    let nan = |w: u16| w & 0x7F80 == 0x7F80 && w & 0x7F != 0;
    a == b || (nan(a) && nan(b))
}

fn first_diff<T: Copy + std::fmt::Debug>(what: &str, got: &[T], want: &[T], same: impl Fn(T, T) -> bool) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{what}: {} values, expected {}", got.len(), want.len()));
    }
    match (0..got.len()).find(|&i| !same(got[i], want[i])) {
        Some(i) => Err(format!("{what}: first difference at {i}: got {:?}, expected {:?}", got[i], want[i])),
        None => Ok(()),
    }
}

fn eq_u16(a: u16, b: u16) -> bool {
    a == b
}

fn round_bf16(x: &[f32]) -> (Vec<u16>, Vec<f32>) {
    let words: Vec<u16> = x.iter().map(|&v| half::bf16::from_f32(v).to_bits()).collect();
    let widened = words.iter().map(|&w| f32::from_bits(u32::from(w) << 16)).collect();
    (words, widened)
}

/// Spec 19, layout 1: the tensor-core matvec (version 9, `GpuMatrix::bounded`) on BF16
/// activations, f32 and BF16 outputs, each within the bound B of the canonical result (checked as
/// spec 19.6 says by `level2::check_matvec`). `g` is left as it was.
fn check_bounded(g: &mut GpuMatrix, dec: &DecodedMatrix, x: &[f32], batch: usize, bias: Option<&[f32]>) -> Result<(), String> {
    let (xb, xw) = round_bf16(x);
    let was = g.bounded;
    g.bounded = true;
    let run = || -> Result<(), String> {
        for kind in [OutputKind::F32, OutputKind::Bf16] {
            let got = g.matvec_xbf16(&xb, batch, bias, kind).map_err(|e| e.to_string())?;
            crate::level2::check_matvec(dec, &xw, batch, bias, &got, kind == OutputKind::Bf16)
                .map_err(|why| format!("bounded matvec ({kind:?} output, batch {batch}): {why}"))?;
        }
        Ok(())
    };
    let r = run();
    g.bounded = was;
    r
}

// --- the corpus -------------------------------------------------------------------------------

#[derive(Deserialize)]
struct Manifest {
    vectors: Vec<Vector>,
}

#[derive(Deserialize)]
struct Vector {
    id: String,
    kind: String,
    mode_code: u32,
    rows: u64,
    cols: u64,
    fields: BTreeMap<String, String>,
    expected_error: Option<String>,
    dequant: Option<String>,
    #[serde(default)]
    gathers: Vec<Gather>,
    #[serde(default)]
    matvecs: Vec<Matvec>,
}

#[derive(Deserialize)]
struct Gather {
    rows: Vec<u64>,
    output: String,
}

#[derive(Deserialize)]
struct Matvec {
    batch: u64,
    activations: String,
    bias: Option<String>,
    output_f32: String,
    output_bf16: String,
}

fn words32(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}
fn words16(b: &[u8]) -> Vec<u16> {
    b.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect()
}
fn floats(b: &[u8]) -> Vec<f32> {
    words32(b).into_iter().map(f32::from_bits).collect()
}

/// Builds the stored fields as the reference sees them; rule 13.1-13.3 errors come back named.
fn parse(v: &Vector, read: &dyn Fn(&str) -> Result<Vec<u8>, String>) -> Result<Result<EncodedMatrix, FormatError>, String> {
    let field = |name: &str| -> Result<Vec<u8>, String> {
        match v.fields.get(name) {
            Some(p) => read(p),
            None => Ok(Vec::new()),
        }
    };
    let mode = match Mode::from_code(v.mode_code) {
        Ok(m) => m,
        Err(e) => return Ok(Err(e)),
    };
    let shape = Shape::new(v.rows, v.cols);
    if let Err(e) = Geometry::new(mode, shape) {
        return Ok(Err(e));
    }
    let size = |name: &str, b: &[u8]| -> Result<(), FormatError> {
        if b.len() % 4 == 0 {
            return Ok(());
        }
        let field = match name {
            "bases" => nwc_reference::Field::Bases,
            "lut" => nwc_reference::Field::Lut,
            _ => nwc_reference::Field::Scale,
        };
        Err(FormatError::FieldSize { field, got: b.len() as u64, expected: "a multiple of 4 bytes".into() })
    };
    let (bases, lut) = (field("bases")?, field("lut")?);
    let scale = match v.fields.get("scale") {
        Some(_) => Some(field("scale")?),
        None => None,
    };
    for (name, b) in [("bases", &bases), ("lut", &lut)] {
        if let Err(e) = size(name, b) {
            return Ok(Err(e));
        }
    }
    if let Some(s) = &scale {
        if let Err(e) = size("scale", s) {
            return Ok(Err(e));
        }
    }
    Ok(Ok(EncodedMatrix {
        mode,
        shape,
        data: field("data")?,
        bases: words32(&bases),
        hdr: field("hdr")?,
        lut: words32(&lut),
        low: field("low")?,
        scale: scale.map(|s| floats(&s)),
    }))
}

fn check_vector(gpu: &Arc<Gpu>, v: &Vector, read: &dyn Fn(&str) -> Result<Vec<u8>, String>) -> Result<(), String> {
    let parsed = parse(v, read)?;
    let uploaded = parsed.map_err(nwc_reference::DecodeError::from).and_then(|m| match GpuMatrix::upload(gpu, &m) {
        Ok(g) => Ok(g),
        Err(GpuError::Invalid(e)) => Err(e),
        Err(other) => panic!("device failure: {other}"),
    });
    let expect_valid = v.kind == "canonical" || v.kind == "valid";
    let mut g = match (uploaded, expect_valid) {
        (Err(e), false) => {
            let rule = match &e {
                nwc_reference::DecodeError::Format(f) => f.rule(),
                _ => "limit",
            };
            return match v.expected_error.as_deref() {
                Some(want) if want == rule => Ok(()),
                want => Err(format!("rejected with rule {rule}, expected {want:?}")),
            };
        }
        (Ok(_), false) => return Err(format!("accepted, expected rejection by {:?}", v.expected_error)),
        (Err(e), true) => return Err(format!("valid vector rejected: {e}")),
        (Ok(g), true) => g,
    };
    let e = |e: GpuError| e.to_string();
    if let Some(p) = &v.dequant {
        first_diff("dequant", &g.dequant().map_err(e)?, &words16(&read(p)?), eq_u16)?;
    }
    for (i, c) in v.gathers.iter().enumerate() {
        first_diff(&format!("gather {i}"), &g.gather(&c.rows).map_err(e)?, &words16(&read(&c.output)?), eq_u16)?;
    }
    // Layout 1 also runs the bounded (tensor-core) matvec, checked against the reference's decode.
    let layout1 = if g.mode.layout == Layout::Fragment16 && !v.matvecs.is_empty() {
        Some(decode(&parse(v, read)?.map_err(|e| e.to_string())?).map_err(|e| e.to_string())?)
    } else {
        None
    };
    for (i, c) in v.matvecs.iter().enumerate() {
        let x = floats(&read(&c.activations)?);
        let bias = match &c.bias {
            Some(p) => Some(floats(&read(p)?)),
            None => None,
        };
        let batch = c.batch as usize;
        first_diff(&format!("matvec {i} f32"), &g.matvec(&x, batch, bias.as_deref()).map_err(e)?, &floats(&read(&c.output_f32)?), same_f32)?;
        first_diff(&format!("matvec {i} bf16"), &g.matvec_bf16(&x, batch, bias.as_deref()).map_err(e)?, &words16(&read(&c.output_bf16)?), same_bf16)?;
        if let Some(dec) = &layout1 {
            // The activations rounded to BF16 (spec 19.2); the canonical result is recomputed on them.
            check_bounded(&mut g, dec, &x, batch, bias.as_deref()).map_err(|d| format!("matvec {i}: {d}"))?;
        }
    }
    Ok(())
}

/// Runs every vector of `dir/manifest.json` on the GPU.
pub fn run_corpus(gpu: &Arc<Gpu>, dir: &Path) -> Result<Tally, String> {
    let text = std::fs::read_to_string(dir.join("manifest.json")).map_err(|e| format!("{}/manifest.json: {e}", dir.display()))?;
    let manifest: Manifest = serde_json::from_str(&text).map_err(|e| format!("manifest.json: {e}"))?;
    let read = |rel: &str| std::fs::read(dir.join(rel)).map_err(|e| format!("{rel}: {e}"));
    let mut tally = Tally::default();
    for v in &manifest.vectors {
        tally.record(&v.id, check_vector(gpu, v, &read));
    }
    Ok(tally)
}

// --- the random sweep -------------------------------------------------------------------------

/// One random matrix: encode with the reference, then compare GPU dequant, gather and matvec
/// (f32 and BF16 activations, f32 and BF16 outputs, with and without bias, batch 1, 3 or 7).
fn sweep_one(gpu: &Arc<Gpu>, gen: &mut Generator, i: usize, max_dim: u64) -> Result<String, String> {
    let mode = Mode::ALL[i % 4];
    let shape = gen.shape(i / 4, max_dim);
    let (dist, enc) = if mode.elem == nwc_reference::ElemType::Bf16 {
        let dist = Dist::BF16[(i / 4) % Dist::BF16.len()];
        let w = gen.bf16(dist, shape);
        (dist, encode(mode, shape, Weights::Bf16(&w)))
    } else {
        let dist = Dist::FP8[(i / 4) % Dist::FP8.len()];
        let w = gen.fp8(dist, shape);
        (dist, encode(mode, shape, Weights::Fp8(&w)))
    };
    let label = format!("#{i} {mode} {shape} {}", dist.name());
    let mut m = enc.map_err(|e| format!("{label}: encode: {e}"))?.matrix;
    if mode.elem == nwc_reference::ElemType::Fp8E4m3 && i % 8 < 4 {
        let rng = gen.rng();
        m.scale = Some((0..shape.rows).map(|_| 2f32.powf(rng.gen_range(-12.0..4.0))).collect());
    }
    let reference = decode(&m).map_err(|e| format!("{label}: reference decode: {e}"))?;
    let mut g = GpuMatrix::upload(gpu, &m).map_err(|e| format!("{label}: {e}"))?;
    let e = |e: GpuError| format!("{label}: {e}");
    first_diff("dequant", &g.dequant().map_err(e)?, &reference.dequant(), eq_u16).map_err(|d| format!("{label}: {d}"))?;
    let rng = gen.rng();
    let rows: Vec<u64> = (0..rng.gen_range(1..6)).map(|_| rng.gen_range(0..shape.rows)).collect();
    let want = reference.gather(&rows).map_err(|x| x.to_string())?;
    first_diff("gather", &g.gather(&rows).map_err(e)?, &want, eq_u16).map_err(|d| format!("{label}: {d}"))?;
    // Batch 3 and 7 reach the batched version 7 kernels (groups of 2 + 1 and 4 + 2 + 1 columns).
    let batch = match i % 10 {
        9 => 3,
        8 => 7,
        _ => 1,
    };
    let k = shape.cols as usize;
    let x: Vec<f32> = (0..batch * k).map(|_| rng.gen_range(-2.0f32..2.0) * 2f32.powi(rng.gen_range(-8..8))).collect();
    let bias: Option<Vec<f32>> = (i % 3 == 0).then(|| (0..shape.rows).map(|_| rng.gen_range(-1.0f32..1.0)).collect());
    let want = reference.matvec(&x, batch, bias.as_deref()).map_err(|x| x.to_string())?;
    first_diff("matvec f32", &g.matvec(&x, batch, bias.as_deref()).map_err(e)?, &want, same_f32).map_err(|d| format!("{label}: {d}"))?;
    let want16 = reference.matvec_bf16(&x, batch, bias.as_deref()).map_err(|x| x.to_string())?;
    first_diff("matvec bf16", &g.matvec_bf16(&x, batch, bias.as_deref()).map_err(e)?, &want16, same_bf16).map_err(|d| format!("{label}: {d}"))?;
    // BF16 activations are widened exactly (spec 15.4.1), so the reference runs on the widened values.
    let xb: Vec<u16> = x.iter().map(|&v| half::bf16::from_f32(v).to_bits()).collect();
    let xw: Vec<f32> = xb.iter().map(|&w| f32::from_bits(u32::from(w) << 16)).collect();
    let want = reference.matvec(&xw, batch, bias.as_deref()).map_err(|x| x.to_string())?;
    let got: Vec<f32> = g.matvec_xbf16(&xb, batch, bias.as_deref(), OutputKind::F32).map_err(e)?.into_iter().map(f32::from_bits).collect();
    first_diff("matvec x=bf16 f32", &got, &want, same_f32).map_err(|d| format!("{label}: {d}"))?;
    let want16 = reference.matvec_bf16(&xw, batch, bias.as_deref()).map_err(|x| x.to_string())?;
    let got16: Vec<u16> = g.matvec_xbf16(&xb, batch, bias.as_deref(), OutputKind::Bf16).map_err(e)?.into_iter().map(|w| w as u16).collect();
    first_diff("matvec x=bf16 bf16", &got16, &want16, same_bf16).map_err(|d| format!("{label}: {d}"))?;
    if mode.layout == Layout::Fragment16 {
        // The tensor-core kernels take 8 (up to 8 columns) or 16 columns per launch; 17 is 16 + 1.
        let batch = [1, 2, 8, 9, 16, 17][(i / 4) % 6];
        let x: Vec<f32> = (0..batch * k).map(|_| rng.gen_range(-2.0f32..2.0) * 2f32.powi(rng.gen_range(-8..8))).collect();
        check_bounded(&mut g, &reference, &x, batch, bias.as_deref()).map_err(|d| format!("{label}: {d}"))?;
    }
    Ok(label)
}

/// `count` random matrices (all four modes in turn, the generator's edge shapes first), each side
/// at most `max_dim`.
pub fn run_sweep(gpu: &Arc<Gpu>, seed: u64, count: usize, max_dim: u64) -> Tally {
    let mut gen = Generator::new(seed);
    let mut tally = Tally::default();
    for i in 0..count {
        let r = sweep_one(gpu, &mut gen, i, max_dim).map(|_| ());
        tally.record(&format!("sweep {i}"), r);
    }
    tally
}
