//! `--profile`: launches of the format-10 kernels for Nsight Compute (`bash cuda/device-run.sh 0
//! ncu`), on the weights and kernels of the bench's format-10 rows (`format10.rs`).

use super::format10::{prepare, DEQUANTS, MATVECS};
use super::timing::gaussian_bf16;
use super::Res;
use cudarc::driver::CudaSlice;
use nwc_cuda::{Gpu, Probe};
use nwc_reference::bounded as level2;
use std::sync::Arc;

/// `--profile`: two launches of each matvec version and of each dequant on one shape of synthetic
/// BF16 (the profiler times and counts each launch itself), the layout 1 bounded matvec, the
/// timing probes.
pub fn format10(gpu: &Arc<Gpu>, m: u64, k: u64) -> Res<()> {
    let p = prepare(gpu, "profile".into(), m, k, gaussian_bf16((m * k) as usize, 1), false)?;
    let mut g = p.gm;
    let xd = g.activations_bf16(&p.x, 1)?;
    let mut y: CudaSlice<u16> = gpu.stream.alloc_zeros(m as usize)?;
    let mut deq: CudaSlice<u16> = gpu.stream.alloc_zeros((m * k) as usize)?;
    for (i, &(v, matvec)) in MATVECS.iter().enumerate() {
        g.set_matvec_kernel(matvec)?;
        let dequant = DEQUANTS.get(i).map(|d| d.1);
        for _ in 0..2 {
            g.matvec_into_bf16(&xd, None, &mut y)?;
        }
        gpu.stream.synchronize()?;
        let ok = gpu.stream.clone_dtoh(&y)? == p.expected;
        println!("profile: {v} matvec exact: {ok}");
        if let Some(d) = dequant {
            g.set_dequant_kernel(d)?;
            g.dequant_into(&mut deq)?;
        }
    }
    // Layout 1: the bounded matvec (checked against spec 19.4) and the dequant.
    let g1 = p.gm1;
    let xd1 = g1.activations_bf16(&p.x, 1)?;
    for _ in 0..2 {
        g1.matvec_into_bf16(&xd1, None, &mut y)?;
    }
    let got: Vec<u32> = gpu.stream.clone_dtoh(&y)?.into_iter().map(u32::from).collect();
    println!("profile: layout 1 bounded matvec within spec 19.4: {:?}", level2::check_outputs(&p.expect1, &got, true).map(|_| ()));
    g1.dequant_into(&mut deq)?;
    // The timing probes of the exact layout 0 matvec (docs/gpu-history.md, "Where the time goes").
    for probe in [Probe::Decode, Probe::DecodeFlat, Probe::DecodeReg, Probe::DecodeRep, Probe::DecodeClz, Probe::Weights, Probe::Fma] {
        for _ in 0..2 {
            g.probe(probe, &xd)?;
        }
    }
    gpu.stream.synchronize()?;
    Ok(())
}
