//! The GPU (crate nwc-cuda) as a [`Backend`]: `nwc-conform gpu` runs the corpus through the same
//! reader and checks as every other engine (`run::reference::run_backend_class`), once with the
//! exact matvec and once with the bounded one where the layout has it, then a random sweep
//! against the reference (`sweep`).

pub mod sweep;

use crate::backend::{Backend, Loaded};
use nwc_cuda::{Gpu, GpuError, GpuMatrix, MatvecKernel, OutputKind};
use nwc_reference::{EncodedMatrix, Layout};
use std::sync::Arc;

/// The GPU with a matvec kernel choice: [`MatvecKernel::Exact`], or [`MatvecKernel::Bounded`],
/// which runs on layout 1 matrices with BF16 activations (spec 19.2) and exact elsewhere (an
/// exact result is within every bound).
pub struct GpuBackend {
    pub gpu: Arc<Gpu>,
    pub matvec: MatvecKernel,
}

struct GpuLoaded {
    m: GpuMatrix,
}

fn err(e: GpuError) -> String {
    e.to_string()
}

impl GpuBackend {
    pub fn new(gpu: Arc<Gpu>, matvec: MatvecKernel) -> GpuBackend {
        GpuBackend { gpu, matvec }
    }
}

impl Backend for GpuBackend {
    fn name(&self) -> &str {
        match self.matvec {
            MatvecKernel::Exact => "gpu",
            MatvecKernel::Bounded => "gpu-bounded",
            #[allow(unreachable_patterns)] // bench-only kernels when nwc-cuda/bench is on
            _ => "gpu-bench",
        }
    }

    fn load(&self, m: &EncodedMatrix) -> Result<Box<dyn Loaded + '_>, String> {
        let mut g = GpuMatrix::upload(&self.gpu, m).map_err(err)?;
        let kernel = match self.matvec {
            MatvecKernel::Bounded if m.mode.layout != Layout::Fragment16 => MatvecKernel::Exact,
            k => k,
        };
        g.set_matvec_kernel(kernel).map_err(err)?;
        Ok(Box::new(GpuLoaded { m: g }))
    }
}

/// `x` as BF16 words when every value is one exactly (the domain of the bounded kernel).
fn as_bf16(x: &[f32]) -> Option<Vec<u16>> {
    x.iter().map(|&v| (v.to_bits() & 0xFFFF == 0).then_some((v.to_bits() >> 16) as u16)).collect()
}

impl GpuLoaded {
    /// The bounded kernel takes BF16 activations; other activations run the exact kernel.
    fn bf16_input(&self, x: &[f32]) -> Option<Vec<u16>> {
        (self.m.matvec_kernel() == MatvecKernel::Bounded).then(|| as_bf16(x)).flatten()
    }
}

impl Loaded for GpuLoaded {
    fn dequant(&mut self) -> Result<Vec<u16>, String> {
        self.m.dequant().map_err(err)
    }
    fn gather(&mut self, rows: &[u64]) -> Result<Vec<u16>, String> {
        self.m.gather(rows).map_err(err)
    }
    fn matvec(&mut self, x: &[f32], batch: usize, bias: Option<&[f32]>) -> Result<Vec<f32>, String> {
        match self.bf16_input(x) {
            Some(xb) => Ok(self.m.matvec_xbf16(&xb, batch, bias, OutputKind::F32).map_err(err)?.into_iter().map(f32::from_bits).collect()),
            None => self.m.matvec(x, batch, bias).map_err(err),
        }
    }
    fn matvec_bf16(&mut self, x: &[f32], batch: usize, bias: Option<&[f32]>) -> Result<Vec<u16>, String> {
        match self.bf16_input(x) {
            Some(xb) => Ok(self.m.matvec_xbf16(&xb, batch, bias, OutputKind::Bf16).map_err(err)?.into_iter().map(|w| w as u16).collect()),
            None => self.m.matvec_bf16(x, batch, bias).map_err(err),
        }
    }
}
