//! `nwc demo`: the bundled real weight matrix (data/README.md) through all four modes with the
//! reference codec: sizes, ratios, round-trip checks and throughput, measured in this run.

use crate::error::{CliError, EXIT_IO};
use crate::store::sha256_hex;
use nwc_reference::{
    decode, encode, quantize_fp8, ElemType, Elements, Encoding, Mode, Shape, Weights,
};
use std::time::{Duration, Instant};

/// encoder.layer.0.intermediate.dense.weight of all-MiniLM-L6-v2, F32 rounded to BF16 (data/README.md).
const SAMPLE: &[u8] = include_bytes!("../../data/minilm-l0-intermediate.bf16");
const SAMPLE_SHA256: &str = "e7effaca944e529cd14a1cd14b17ae3484167c9463e74ecdfda077c516a21fde";
const SAMPLE_NAME: &str = "all-MiniLM-L6-v2 encoder.layer.0.intermediate.dense.weight";
const SAMPLE_SHAPE: Shape = Shape {
    rows: 1536,
    cols: 384,
};

/// The fastest of `reps` runs of `f`, and its last result.
fn best_of<T>(reps: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut last = None;
    for _ in 0..reps.max(1) {
        let t = Instant::now();
        let r = f();
        best = best.min(t.elapsed());
        last = Some(r);
    }
    (best, last.expect("at least one run"))
}

fn mb_per_s(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64().max(1e-9)
}

fn failure(message: String) -> CliError {
    CliError {
        exit: EXIT_IO,
        message,
        file: None,
    }
}

/// Bytes of every stored field (spec 12), scales included.
fn stored_bytes(enc: &Encoding, scales: Option<&[f32]>) -> usize {
    let m = &enc.matrix;
    m.data.len()
        + 4 * m.bases.len()
        + m.hdr.len()
        + 4 * m.lut.len()
        + m.low.len()
        + scales.map_or(0, |s| 4 * s.len())
}

/// Spec 11.2: each fp8 value is the weight divided by its row scale, rounded to e4m3 (3 mantissa
/// bits), so dequant * scale is within half a step: 2^-4 relative, or 2^-10 * scale near zero.
/// Returns the largest error as a fraction of the row's absmax (448 * scale).
fn check_fp8_dequant(
    words: &[u16],
    dequant: &[u16],
    stride: usize,
    scales: &[f32],
) -> Result<f64, CliError> {
    let cols = SAMPLE_SHAPE.cols as usize;
    let mut worst = 0f64;
    for (row, &s) in scales.iter().enumerate() {
        for col in 0..cols {
            let w = f64::from(f32::from_bits(u32::from(words[row * cols + col]) << 16));
            let q = f64::from(f32::from_bits(u32::from(dequant[row * stride + col]) << 16));
            let err = (q * f64::from(s) - w).abs();
            let bound = (w.abs() * 2f64.powi(-4)).max(2f64.powi(-10) * f64::from(s)) * (1.0 + 1e-6);
            if err > bound {
                return Err(failure(format!("fp8 row {row} column {col}: dequant*scale is off by {err:e}, more than {bound:e}")));
            }
            worst = worst.max(err / (448.0 * f64::from(s)));
        }
    }
    Ok(worst)
}

pub fn run(reps: usize) -> Result<(), CliError> {
    let digest = sha256_hex(SAMPLE);
    if digest != SAMPLE_SHA256 {
        return Err(CliError::rejected(format!(
            "bundled sample has sha256 {digest}, expected {SAMPLE_SHA256} (data/README.md)"
        )));
    }
    let words: Vec<u16> = SAMPLE
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    let shape = SAMPLE_SHAPE;
    let n = shape.weights() as usize;
    println!(
        "nwc demo: {SAMPLE_NAME}, {} x {} BF16 ({} bytes, sha256 {}... ok)",
        shape.rows,
        shape.cols,
        SAMPLE.len(),
        &digest[..16]
    );
    let build = if cfg!(debug_assertions) {
        "DEBUG build, timings not meaningful"
    } else {
        "release build"
    };
    println!(
        "codecs: nwc-reference (written for clarity, not speed, one thread) and nwc-fast ({} threads), best of {reps} runs, {build}",
        rayon::current_num_threads()
    );
    println!(
        "throughput: MB/s of BF16 input ({} bytes) per second\n",
        SAMPLE.len()
    );

    let (t_quant, quantized) = best_of(reps, || quantize_fp8(&words, shape));
    let (fp8, scales) =
        quantized.map_err(|e| CliError::rejected(format!("bundled sample: {e}")))?;
    println!(
        "fp8 modes quantize the sample first (spec 11.2, per-row scales): {:.1} MB/s\n",
        mb_per_s(SAMPLE.len(), t_quant)
    );

    println!(
        "{:<13} {:>12} {:>8} {:>9} {:>8} {:>9} {:>9} {:>9} {:>9}  round trip",
        "mode",
        "stored bytes",
        "vs BF16",
        "vs input",
        "escapes",
        "ref enc",
        "ref dec",
        "fast enc",
        "fast dec"
    );
    for mode in Mode::ALL {
        let (weights, mode_scales) = match mode.elem {
            ElemType::Bf16 => (Weights::Bf16(&words), None),
            ElemType::Fp8E4m3 => (Weights::Fp8(&fp8), Some(scales.as_slice())),
        };
        let (t_enc, enc) = best_of(reps, || encode(mode, shape, weights));
        let mut enc = enc.map_err(|e| failure(format!("{mode}: encode failed: {e}")))?;
        enc.matrix.scale = mode_scales.map(<[f32]>::to_vec);
        let (t_dec, dec) = best_of(reps, || decode(&enc.matrix));
        let dec =
            dec.map_err(|e| failure(format!("{mode}: decoding our own encoding failed: {e}")))?;
        // The fast codec must be byte-identical to the reference (its own tests and fuzzing check
        // that in general; the demo checks it on real weights).
        let (t_fenc, fenc) = best_of(reps, || nwc_fast::encode(mode, shape, weights));
        let mut fenc = fenc.map_err(|e| failure(format!("{mode}: fast encode failed: {e}")))?;
        fenc.matrix.scale = enc.matrix.scale.clone();
        if fenc.matrix != enc.matrix {
            return Err(failure(format!(
                "{mode}: the fast encoder differs from the reference"
            )));
        }
        let (t_fdec, fdec) = best_of(reps, || nwc_fast::decode(&enc.matrix));
        if fdec.map_err(|e| failure(format!("{mode}: fast decode failed: {e}")))? != dec {
            return Err(failure(format!(
                "{mode}: the fast decoder differs from the reference"
            )));
        }
        let exact = match (&dec.elements, weights) {
            (Elements::Bf16(got), Weights::Bf16(want)) => got == want,
            (Elements::Fp8(got), Weights::Fp8(want)) => got == want,
            _ => false,
        };
        if !exact {
            return Err(failure(format!("{mode}: round trip is not bit-exact")));
        }
        let mut check = "bit-exact".to_string();
        if let Some(s) = mode_scales {
            let worst = check_fp8_dequant(&words, &dec.dequant(), dec.row_stride() as usize, s)?;
            check += &format!(
                ", dequant*scale within half an e4m3 step (max {:.2}% of row absmax)",
                100.0 * worst
            );
        }
        let stored = stored_bytes(&enc, mode_scales);
        let input = n * mode.elem.input_bytes();
        println!(
            "{:<13} {:>12} {:>8.4} {:>9.4} {:>8} {:>9.1} {:>9.1} {:>9.1} {:>9.1}  {check}",
            mode.to_string(),
            stored,
            stored as f64 / (2 * n) as f64,
            stored as f64 / input as f64,
            enc.escapes,
            mb_per_s(SAMPLE.len(), t_enc),
            mb_per_s(SAMPLE.len(), t_dec),
            mb_per_s(SAMPLE.len(), t_fenc),
            mb_per_s(SAMPLE.len(), t_fdec),
        );
    }
    println!("\nenc/dec: MB/s of BF16 input; fast = nwc-fast, byte-identical to the reference (checked above)");
    println!("stored bytes: every field (data, bases, hdr, lut, low, and the fp8 scales)");
    println!("vs input: BF16 for bf16 modes, the fp8 matrix for fp8 modes");
    println!("layout 0 codes each row in 512-column blocks (spec 7), so K = 384 carries 128 filler codes per row; layout 1 pads K to 32 (spec 8)");
    Ok(())
}
