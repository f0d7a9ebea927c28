//! The GPU against the reference on random matrices (all four modes in turn, the generator's edge
//! shapes first): dequant, gather and the exact matvec bit for bit (f32 and BF16 activations, f32
//! and BF16 outputs, with and without bias, batch 1, 3 or 7), and on layout 1 the bounded matvec
//! within the bound of spec 19 (batches 1 to 17, across the 8- and 16-column launches).

use nwc_cuda::{Gpu, GpuError, GpuMatrix, MatvecKernel, OutputKind};
use nwc_reference::bounded::check_matvec;
use nwc_reference::{decode, encode, DecodedMatrix, ElemType, Layout, Mode, Weights};
use nwc_testkit::gen::{Dist, Generator};
use rand::Rng;
use std::sync::Arc;

/// Passed and failed counts, with a line per failure.
#[derive(Default, Debug)]
pub struct Tally {
    pub passed: u64,
    pub failed: u64,
    pub failures: Vec<String>,
}

impl Tally {
    pub(crate) fn record(&mut self, id: &str, result: Result<(), String>) {
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
pub(super) fn same_f32(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

pub(super) fn same_bf16(a: u16, b: u16) -> bool {
    let nan = |w: u16| w & 0x7F80 == 0x7F80 && w & 0x7F != 0;
    a == b || (nan(a) && nan(b))
}

pub(super) fn first_diff<T: Copy + std::fmt::Debug>(what: &str, got: &[T], want: &[T], same: impl Fn(T, T) -> bool) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{what}: {} values, expected {}", got.len(), want.len()));
    }
    match (0..got.len()).find(|&i| !same(got[i], want[i])) {
        Some(i) => Err(format!("{what}: first difference at {i}: got {:?}, expected {:?}", got[i], want[i])),
        None => Ok(()),
    }
}

/// Spec 19 on layout 1: the bounded matvec on `x` rounded to BF16, f32 and BF16 outputs, each
/// within the bound B of the canonical result (checked as spec 19.6 says). `g` is left exact.
fn check_bounded(g: &mut GpuMatrix, dec: &DecodedMatrix, x: &[f32], batch: usize, bias: Option<&[f32]>) -> Result<(), String> {
    let xb: Vec<u16> = x.iter().map(|&v| half::bf16::from_f32(v).to_bits()).collect();
    let xw: Vec<f32> = xb.iter().map(|&w| f32::from_bits(u32::from(w) << 16)).collect();
    g.set_matvec_kernel(MatvecKernel::Bounded).map_err(|e| e.to_string())?;
    let run = |g: &GpuMatrix| -> Result<(), String> {
        for kind in [OutputKind::F32, OutputKind::Bf16] {
            let got = g.matvec_xbf16(&xb, batch, bias, kind).map_err(|e| e.to_string())?;
            check_matvec(dec, &xw, batch, bias, &got, kind == OutputKind::Bf16)
                .map_err(|why| format!("bounded matvec ({kind:?} output, batch {batch}): {why}"))?;
        }
        Ok(())
    };
    let r = run(g);
    g.set_matvec_kernel(MatvecKernel::Exact).map_err(|e| e.to_string())?;
    r
}

/// One random matrix: encode with the reference, then compare the GPU's results with it.
fn sweep_one(gpu: &Arc<Gpu>, gen: &mut Generator, i: usize, max_dim: u64) -> Result<(), String> {
    let mode = Mode::ALL[i % 4];
    let shape = gen.shape(i / 4, max_dim);
    let (dist, enc) = if mode.elem == ElemType::Bf16 {
        let dist = Dist::BF16[(i / 4) % Dist::BF16.len()];
        let w = gen.bf16(dist, shape);
        (dist, encode(mode, shape, Weights::Bf16(&w)))
    } else {
        let dist = Dist::FP8[(i / 4) % Dist::FP8.len()];
        let w = gen.fp8(dist, shape);
        (dist, encode(mode, shape, Weights::Fp8(&w)))
    };
    let label = format!("#{i} {mode} {shape} {}", dist.name());
    let tag = |d: String| format!("{label}: {d}");
    let mut m = enc.map_err(|e| tag(format!("encode: {e}")))?.matrix;
    if mode.elem == ElemType::Fp8E4m3 && i % 8 < 4 {
        let rng = gen.rng();
        m.scale = Some((0..shape.rows).map(|_| 2f32.powf(rng.gen_range(-12.0..4.0))).collect());
    }
    let reference = decode(&m).map_err(|e| tag(format!("reference decode: {e}")))?;
    let mut g = GpuMatrix::upload(gpu, &m).map_err(|e| tag(e.to_string()))?;
    let e = |e: GpuError| tag(e.to_string());
    first_diff("dequant", &g.dequant().map_err(e)?, &reference.dequant(), |a, b| a == b).map_err(tag)?;
    let rng = gen.rng();
    let rows: Vec<u64> = (0..rng.gen_range(1..6)).map(|_| rng.gen_range(0..shape.rows)).collect();
    let want = reference.gather(&rows).map_err(|x| x.to_string())?;
    first_diff("gather", &g.gather(&rows).map_err(e)?, &want, |a, b| a == b).map_err(tag)?;
    // Batch 3 and 7 reach the batched layout 0 kernels (groups of 2 + 1 and 4 + 2 + 1 columns).
    let batch = match i % 10 {
        9 => 3,
        8 => 7,
        _ => 1,
    };
    let k = shape.cols as usize;
    let x: Vec<f32> = (0..batch * k).map(|_| rng.gen_range(-2.0f32..2.0) * 2f32.powi(rng.gen_range(-8..8))).collect();
    let bias: Option<Vec<f32>> = (i % 3 == 0).then(|| (0..shape.rows).map(|_| rng.gen_range(-1.0f32..1.0)).collect());
    let bias = bias.as_deref();
    let want = reference.matvec(&x, batch, bias).map_err(|x| x.to_string())?;
    first_diff("matvec f32", &g.matvec(&x, batch, bias).map_err(e)?, &want, same_f32).map_err(tag)?;
    let want16 = reference.matvec_bf16(&x, batch, bias).map_err(|x| x.to_string())?;
    first_diff("matvec bf16", &g.matvec_bf16(&x, batch, bias).map_err(e)?, &want16, same_bf16).map_err(tag)?;
    // BF16 activations are widened exactly (spec 15.4.1), so the reference runs on the widened values.
    let xb: Vec<u16> = x.iter().map(|&v| half::bf16::from_f32(v).to_bits()).collect();
    let xw: Vec<f32> = xb.iter().map(|&w| f32::from_bits(u32::from(w) << 16)).collect();
    let want = reference.matvec(&xw, batch, bias).map_err(|x| x.to_string())?;
    let got: Vec<f32> = g.matvec_xbf16(&xb, batch, bias, OutputKind::F32).map_err(e)?.into_iter().map(f32::from_bits).collect();
    first_diff("matvec x=bf16 f32", &got, &want, same_f32).map_err(tag)?;
    let want16 = reference.matvec_bf16(&xw, batch, bias).map_err(|x| x.to_string())?;
    let got16: Vec<u16> = g.matvec_xbf16(&xb, batch, bias, OutputKind::Bf16).map_err(e)?.into_iter().map(|w| w as u16).collect();
    first_diff("matvec x=bf16 bf16", &got16, &want16, same_bf16).map_err(tag)?;
    if mode.layout == Layout::Fragment16 {
        // The bounded kernels take 8 (up to 8 columns) or 16 columns per launch; 17 is 16 + 1.
        let batch = [1, 2, 8, 9, 16, 17][(i / 4) % 6];
        let x: Vec<f32> = (0..batch * k).map(|_| rng.gen_range(-2.0f32..2.0) * 2f32.powi(rng.gen_range(-8..8))).collect();
        check_bounded(&mut g, &reference, &x, batch, bias).map_err(tag)?;
    }
    Ok(())
}

/// `count` random matrices from `seed`, each side at most `max_dim`.
pub fn run_sweep(gpu: &Arc<Gpu>, seed: u64, count: usize, max_dim: u64) -> Tally {
    let mut gen = Generator::new(seed);
    let mut tally = Tally::default();
    for i in 0..count {
        let r = sweep_one(gpu, &mut gen, i, max_dim);
        tally.record(&format!("sweep {i}"), r);
    }
    tally
}
