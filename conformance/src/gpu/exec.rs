//! The GPU's execution layout (spec 20, crate nwc-cuda's `exec`) as an [`ExecBackend`]: the exec
//! vectors of the corpus through the shared reader (`exec::run_exec_backend`), with the exact
//! matvec (bit-identical) or the tensor-core one (bounded class, spec 19), and the transcode from
//! format 10 on the device compared byte for byte; then a random sweep (`run_exec_sweep`).

use super::sweep::{first_diff, same_bf16, same_f32, Tally};
use crate::exec::{ExecBackend, ExecLoaded};
use nwc_cuda::exec::{ExecMatvecKernel, GpuExecMatrix};
use nwc_cuda::{Gpu, GpuError, GpuMatrix};
use nwc_reference::bounded::check_matvec;
use nwc_reference::exec::{decode_exec, encode_exec, ExecMatrix};
use nwc_reference::{decode, encode, EncodedMatrix, Mode, Weights};
use nwc_testkit::gen::{Dist, Generator};
use rand::Rng;
use std::sync::Arc;

/// The GPU with an execution-layout matvec kernel choice.
pub struct GpuExecBackend {
    pub gpu: Arc<Gpu>,
    pub matvec: ExecMatvecKernel,
}

struct GpuExecLoaded {
    m: GpuExecMatrix,
}

fn err(e: GpuError) -> String {
    e.to_string()
}

impl GpuExecBackend {
    pub fn new(gpu: Arc<Gpu>, matvec: ExecMatvecKernel) -> GpuExecBackend {
        GpuExecBackend { gpu, matvec }
    }
}

impl ExecBackend for GpuExecBackend {
    fn name(&self) -> &str {
        if self.matvec.is_exact() {
            "gpu-exec"
        } else {
            "gpu-exec-bounded"
        }
    }

    fn load(&self, m: &ExecMatrix) -> Result<Box<dyn ExecLoaded + '_>, String> {
        let mut g = GpuExecMatrix::upload(&self.gpu, m).map_err(err)?;
        g.set_matvec_kernel(self.matvec);
        Ok(Box::new(GpuExecLoaded { m: g }))
    }

    fn transcode(&self, m: &EncodedMatrix) -> Result<ExecMatrix, String> {
        let g = GpuMatrix::upload(&self.gpu, m).map_err(err)?;
        GpuExecMatrix::transcode(&g).map_err(err)?.download().map_err(err)
    }
}

impl ExecLoaded for GpuExecLoaded {
    fn dequant(&mut self) -> Result<Vec<u16>, String> {
        self.m.dequant().map_err(err)
    }
    fn gather(&mut self, rows: &[u64]) -> Result<Vec<u16>, String> {
        self.m.gather(rows).map_err(err)
    }
    fn matvec(&mut self, x: &[f32], batch: usize, bias: Option<&[f32]>) -> Result<Vec<f32>, String> {
        self.m.matvec(x, batch, bias).map_err(err)
    }
    fn matvec_bf16(&mut self, x: &[f32], batch: usize, bias: Option<&[f32]>) -> Result<Vec<u16>, String> {
        self.m.matvec_bf16(x, batch, bias).map_err(err)
    }
}

/// One random BF16 matrix: the GPU encode and transcode against the reference encode (byte for
/// byte), dequant, gather and the exact matvec bit for bit (batches 1, 3, 7, 9: the 4-, 2- and
/// 1-column kernels; f32 and BF16 outputs; bias on every third), the tensor-core matvec within the
/// bound (batches 1 to 65, across the 8- to 64-column launches).
fn sweep_one(gpu: &Arc<Gpu>, gen: &mut Generator, i: usize, max_dim: u64) -> Result<(), String> {
    let shape = gen.shape(i, max_dim);
    let dist = Dist::BF16[i % Dist::BF16.len()];
    let words = gen.bf16(dist, shape);
    let label = format!("exec #{i} {shape} {}", dist.name());
    let tag = |d: String| format!("{label}: {d}");
    let want = encode_exec(shape, &words).map_err(|e| tag(format!("reference encode: {e}")))?;
    let got = GpuExecMatrix::from_bf16(gpu, shape, &words).map_err(|e| tag(e.to_string()))?.download().map_err(|e| tag(e.to_string()))?;
    if got != want {
        return Err(tag(crate::exec::run::first_exec_difference(&want, &got).unwrap_or_else(|| "GPU encode differs".into())));
    }
    let f10 = encode(Mode::BF16_L0, shape, Weights::Bf16(&words)).map_err(|e| tag(format!("encode: {e}")))?.matrix;
    let g10 = GpuMatrix::upload(gpu, &f10).map_err(|e| tag(e.to_string()))?;
    let tr = GpuExecMatrix::transcode(&g10).map_err(|e| tag(e.to_string()))?.download().map_err(|e| tag(e.to_string()))?;
    if tr != want {
        return Err(tag(crate::exec::run::first_exec_difference(&want, &tr).unwrap_or_else(|| "GPU transcode differs".into())));
    }
    let reference = decode_exec(&want).map_err(|e| tag(format!("reference decode: {e}")))?;
    let mut g = GpuExecMatrix::upload(gpu, &want).map_err(|e| tag(e.to_string()))?;
    let e = |e: GpuError| tag(e.to_string());
    first_diff("dequant", &g.dequant().map_err(e)?, &reference.dequant(), |a, b| a == b).map_err(tag)?;
    let rng = gen.rng();
    let rows: Vec<u64> = (0..rng.gen_range(1..9)).map(|_| rng.gen_range(0..shape.rows)).collect();
    let want_rows = reference.gather(&rows).map_err(|x| x.to_string())?;
    first_diff("gather", &g.gather(&rows).map_err(e)?, &want_rows, |a, b| a == b).map_err(tag)?;
    let batch = [1, 1, 3, 7, 9][i % 5];
    let k = shape.cols as usize;
    let x: Vec<f32> = (0..batch * k).map(|_| rng.gen_range(-2.0f32..2.0) * 2f32.powi(rng.gen_range(-8..8))).collect();
    let bias: Option<Vec<f32>> = (i % 3 == 0).then(|| (0..shape.rows).map(|_| rng.gen_range(-1.0f32..1.0)).collect());
    let bias = bias.as_deref();
    let want_y = reference.matvec(&x, batch, bias).map_err(|x| x.to_string())?;
    first_diff("matvec f32", &g.matvec(&x, batch, bias).map_err(e)?, &want_y, same_f32).map_err(tag)?;
    let want16 = reference.matvec_bf16(&x, batch, bias).map_err(|x| x.to_string())?;
    first_diff("matvec bf16", &g.matvec_bf16(&x, batch, bias).map_err(e)?, &want16, same_bf16).map_err(tag)?;
    // Bounded (spec 19): BF16 activations, checked against the bound with the format-10 decode of
    // the same matrix (spec 20.15: the same canonical results).
    let batch = [1, 2, 8, 9, 16, 17, 33, 64, 65][i % 9];
    let xb: Vec<f32> =
        (0..batch * k).map(|_| half::bf16::from_f32(rng.gen_range(-2.0f32..2.0) * 2f32.powi(rng.gen_range(-8..8))).to_f32()).collect();
    let dec10 = decode(&f10).map_err(|e| tag(e.to_string()))?;
    g.set_matvec_kernel(ExecMatvecKernel::Bounded);
    let got: Vec<u32> = g.matvec(&xb, batch, bias).map_err(e)?.into_iter().map(f32::to_bits).collect();
    check_matvec(&dec10, &xb, batch, bias, &got, false).map_err(|why| tag(format!("bounded matvec (batch {batch}): {why}")))?;
    let got16: Vec<u32> = g.matvec_bf16(&xb, batch, bias).map_err(e)?.into_iter().map(u32::from).collect();
    check_matvec(&dec10, &xb, batch, bias, &got16, true).map_err(|why| tag(format!("bounded matvec bf16 (batch {batch}): {why}")))?;
    Ok(())
}

/// `count` random BF16 matrices from `seed`, each side at most `max_dim`.
pub fn run_exec_sweep(gpu: &Arc<Gpu>, seed: u64, count: usize, max_dim: u64) -> Tally {
    let mut gen = Generator::new(seed ^ 0xE8EC);
    let mut tally = Tally::default();
    for i in 0..count {
        let r = sweep_one(gpu, &mut gen, i, max_dim);
        tally.record(&format!("exec sweep {i}"), r);
    }
    tally
}
