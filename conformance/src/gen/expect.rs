//! Expected results of canonical and valid vectors (spec 15): dequant, row gathers and matvecs in
//! the canonical accumulation order, all computed by the reference from the decoded matrix.

use super::writer::{le_f32, le_f64, le_u16, Writer};
use crate::manifest::{GatherCase, MatvecCase, Vector};
use nwc_reference::DecodedMatrix;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::io;

/// An activation set with an optional bias, `batch` vectors of K values.
pub struct MatvecInput {
    pub batch: usize,
    pub x: Vec<f32>,
    pub bias: Option<Vec<f32>>,
}

fn rng_for(seed: u64, what: u64, n: u64, case: u64) -> ChaCha8Rng {
    // Keyed by size, not by vector: vectors of equal K share activations (and their files).
    ChaCha8Rng::seed_from_u64(seed ^ what.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ n.rotate_left(24) ^ (case << 56))
}

/// A value spread over several binades, with some exact zeros and negative zeros; `bf16` rounds
/// it to a BF16-representable f32 (activations a BF16 caller would pass, widened exactly).
fn activation(rng: &mut ChaCha8Rng, bf16: bool) -> f32 {
    let v = match rng.gen_range(0..32) {
        0 => 0.0,
        1 => -0.0,
        _ => {
            let m: f32 = rng.gen_range(-1.0..1.0);
            m * 2f32.powi(rng.gen_range(-8..4))
        }
    };
    if bf16 {
        // Round to the nearest BF16 (ties to even); the values here are finite and far from overflow.
        let bits = v.to_bits();
        f32::from_bits((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF_0000)
    } else {
        v
    }
}

/// The four standard matvec cases of a K x M matrix: batch 1 and 3, with and without bias, f32
/// activations with full mantissas and BF16-exact ones.
pub fn standard_inputs(seed: u64, rows: u64, cols: u64) -> Vec<MatvecInput> {
    let cases = [(1usize, false, false), (3, true, true), (1, true, true), (3, false, false)];
    cases
        .iter()
        .enumerate()
        .map(|(i, &(batch, bias, bf16))| {
            let mut rng = rng_for(seed, 1, cols, i as u64);
            let x = (0..batch as u64 * cols).map(|_| activation(&mut rng, bf16)).collect();
            let bias = bias.then(|| {
                let mut rng = rng_for(seed, 2, rows, i as u64);
                (0..rows).map(|_| activation(&mut rng, true)).collect()
            });
            MatvecInput { batch, x, bias }
        })
        .collect()
}

/// Row sets for gathers: the first row, the last row repeated around row 0, a middle row twice,
/// and the empty list (spec 15.3).
pub fn gather_sets(rows: u64) -> Vec<Vec<u64>> {
    let last = rows - 1;
    let mut sets = vec![vec![0], vec![last, 0, last]];
    if rows > 2 {
        sets.push(vec![rows / 2, 1, rows / 2]);
    }
    sets.push(Vec::new());
    sets
}

fn quiet_nan(v: f32) -> f32 {
    if v.is_nan() {
        f32::from_bits(0x7FC0_0000)
    } else {
        v
    }
}

fn quiet_nan16(b: u16) -> u16 {
    if b & 0x7FFF > 0x7F80 {
        0x7FC0
    } else {
        b
    }
}

/// Writes the dequant and the gathers of [`gather_sets`] of a matrix of `rows` rows into `v`.
pub fn put_dequant_gathers(
    w: &mut Writer,
    v: &mut Vector,
    rows: u64,
    dequant: &[u16],
    gather: impl Fn(&[u64]) -> Vec<u16>,
) -> io::Result<()> {
    v.dequant = Some(w.put(v, "dequant", &le_u16(dequant))?);
    for (i, rows) in gather_sets(rows).into_iter().enumerate() {
        let output = w.put(v, &format!("gather{i}"), &le_u16(&gather(&rows)))?;
        v.gathers.push(GatherCase { rows, output });
    }
    Ok(())
}

/// Writes matvec case `i` of `v`: its activations and bias, the f32 and BF16 outputs `y` and
/// `y16`, and (activations and bias inside the BF16 domain) spec 19's bound of each output on
/// `d`. NaN payloads and signs depend on the hardware and the optimizer, and spec 15.4.6 makes
/// every NaN match every NaN: NaN outputs are stored as one quiet NaN (0x7FC00000, 0x7FC0) so the
/// files are reproducible.
pub fn put_matvec_case(
    w: &mut Writer,
    v: &mut Vector,
    i: usize,
    input: &MatvecInput,
    y: &[f32],
    y16: &[u16],
    d: &DecodedMatrix,
) -> io::Result<()> {
    let y: Vec<f32> = y.iter().copied().map(quiet_nan).collect();
    let y16: Vec<u16> = y16.iter().copied().map(quiet_nan16).collect();
    let activations = w.put(v, &format!("mv{i}-x"), &le_f32(&input.x))?;
    let bias = match input.bias.as_deref() {
        Some(b) => Some(w.put(v, &format!("mv{i}-bias"), &le_f32(b))?),
        None => None,
    };
    let output_f32 = w.put(v, &format!("mv{i}-y-f32"), &le_f32(&y))?;
    let output_bf16 = w.put(v, &format!("mv{i}-y-bf16"), &le_u16(&y16))?;
    let bf16_exact = |v: &f32| v.to_bits() & 0xFFFF == 0;
    let bound = if input.x.iter().chain(input.bias.iter().flatten()).all(bf16_exact) {
        let b: Vec<f64> = nwc_reference::bounded::expected(d, &input.x, input.batch, input.bias.as_deref())
            .expect("sizes match")
            .into_iter()
            .map(|(_, b)| b.unwrap_or(f64::NAN))
            .collect();
        Some(w.put(v, &format!("mv{i}-bound"), &le_f64(&b))?)
    } else {
        None
    };
    v.matvecs.push(MatvecCase { batch: input.batch as u64, activations, bias, output_f32, output_bf16, bound });
    Ok(())
}

/// Writes dequant, gathers and matvecs of `d` into `v` (NaN outputs quiet: [`put_matvec_case`]).
pub fn write_results(w: &mut Writer, v: &mut Vector, d: &DecodedMatrix, inputs: &[MatvecInput]) -> io::Result<()> {
    put_dequant_gathers(w, v, d.shape.rows, &d.dequant(), |rows| d.gather(rows).expect("rows are in range"))?;
    for (i, input) in inputs.iter().enumerate() {
        let bias = input.bias.as_deref();
        let y = d.matvec(&input.x, input.batch, bias).expect("sizes match");
        let y16 = d.matvec_bf16(&input.x, input.batch, bias).expect("sizes match");
        put_matvec_case(w, v, i, input, &y, &y16, d)?;
    }
    if v.matvecs.iter().any(|c| c.bound.is_some()) {
        v.clauses.extend(["19", "19.1", "19.2", "19.3", "19.4", "19.5", "19.6"].map(str::to_owned));
        v.clauses.sort_by_key(|id| super::coverage::clause_key(id));
        v.clauses.dedup();
    }
    Ok(())
}
