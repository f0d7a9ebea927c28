//! `nwc-gpu-bench --ceiling`: where the exact layout 0 matvec's (version 7's) batch-1 time goes (docs/gpu-history.md, "Where the time
//! goes"). In one run, per shape: cuBLAS, the memory floor (one coalesced read of every stored
//! byte), version 7 with its later stages left out (decode only with the pair table, decode only
//! with the table-free decoder, + weights, + fma chains) and the whole matvec (checked exact);
//! then dequant (the production staged kernel and the pair-table one, versions 6 and 7, checked exact) against its memory floor; with
//! NWC_CEILING_CURVE set, also the whole matvec and the decode probe against the number of blocks
//! at K = 4096, which says when a round of resident warps stops costing one block's latency.

use super::timing::{cublas_matvec_us, gaussian_bf16, rotation, time_us};
use super::Res;
use cudarc::cublas::CudaBlas;
use cudarc::driver::CudaSlice;
use nwc_cuda::{DequantKernel, Gpu, GpuMatrix, Probe};
use nwc_reference::{encode, Mode, Shape, Weights};
use std::sync::Arc;

const PROBES: [(Probe, &str); 8] = [
    (Probe::Read, "read"),
    (Probe::Decode, "decode"),
    (Probe::DecodeFlat, "dec-flat"),
    (Probe::DecodeReg, "dec-reg"),
    (Probe::DecodeRep, "dec-rep8"),
    (Probe::DecodeClz, "dec-clz"),
    (Probe::Weights, "+weights"),
    (Probe::Fma, "+fma"),
];

/// One shape: microseconds of cuBLAS, of each probe, and of the whole exact matvec.
struct Timing {
    cublas: f64,
    probes: Vec<f64>,
    full: f64,
    stored: u64,
    exact: bool,
    /// The dequant memory floor, a device-to-device copy of the output's size, and dequant
    /// versions 6 and 7 (NaN when not exact), when asked.
    dequant: Option<(f64, f64, [f64; 2])>,
}

fn time_shape(gpu: &Arc<Gpu>, blas: &CudaBlas, m: u64, k: u64, probes: &[Probe], with_dequant: bool) -> Res<Timing> {
    let s = &gpu.stream;
    let words = gaussian_bf16((m * k) as usize, m ^ (k << 20));
    let x: Vec<u16> = gaussian_bf16(k as usize, 7);
    let cublas = cublas_matvec_us(gpu, blas, &words, &x, m, k)?;
    let enc = encode(Mode::BF16_L0, Shape::new(m, k), Weights::Bf16(&words))?.matrix;
    let (g0, dec) = GpuMatrix::upload_and_decode(gpu, &enc)?;
    let xf: Vec<f32> = x.iter().map(|&w| f32::from_bits(u32::from(w) << 16)).collect();
    let expected = dec.matvec_bf16(&xf, 1, None)?;
    drop((dec, enc));
    let mut mats = rotation(g0.stored_bytes, g0, |m| m.try_clone())?;
    let copies = mats.len();
    let xd = mats[0].activations_bf16(&x, 1)?;
    let mut times = Vec::new();
    for &p in probes {
        times.push(time_us(gpu, &mut |i| Ok(mats[i % copies].probe(p, &xd)?))?);
    }
    let mut y: CudaSlice<u16> = s.alloc_zeros(m as usize)?;
    let full = time_us(gpu, &mut |i| Ok(mats[i % copies].matvec_into_bf16(&xd, None, &mut y)?))?;
    let exact = s.clone_dtoh(&y)? == expected;
    let mut dequant = None;
    if with_dequant && k % 16 == 0 {
        let mut out: CudaSlice<u16> = s.alloc_zeros((m * k) as usize)?;
        let floor = time_us(gpu, &mut |i| Ok(mats[i % copies].probe_read_write(&mut out)?))?;
        let mut copy: CudaSlice<u16> = s.alloc_zeros((m * k) as usize)?;
        let copy_us = time_us(gpu, &mut |_| Ok(s.memcpy_dtod(&out, &mut copy)?))?;
        drop(copy);
        let mut deq = [0.0; 2];
        for (slot, kernel) in deq.iter_mut().zip([DequantKernel::ByLayout, DequantKernel::PairTable]) {
            for g in mats.iter_mut() {
                g.set_dequant_kernel(kernel)?;
            }
            s.memset_zeros(&mut out)?;
            let us = time_us(gpu, &mut |i| Ok(mats[i % copies].dequant_into(&mut out)?))?;
            *slot = if s.clone_dtoh(&out)? == words { us } else { f64::NAN };
        }
        dequant = Some((floor, copy_us, deq));
    }
    Ok(Timing { cublas, probes: times, full, stored: mats[0].stored_bytes, exact, dequant })
}

pub fn bench_ceiling(gpu: &Arc<Gpu>, blas: &CudaBlas) -> Res<()> {
    println!(
        "where the exact layout 0 matvec's time goes: synthetic N(0,0.02) BF16, BF16 activations, batch 1 (us, and / cuBLAS in brackets)"
    );
    let mut head = format!("{:>12} | {:>6} | {:>9} |", "shape", "blocks", "cuBLAS");
    for (_, name) in PROBES {
        head += &format!(" {name:>15} |");
    }
    println!("{head} {:>15} | read TB/s | decode TB/s", "whole exact");
    let all: Vec<Probe> = PROBES.iter().map(|p| p.0).collect();
    let mut dequants = Vec::new();
    let mut shapes = vec![(6144u64, 4096u64), (4096, 4096), (24576, 4096), (4096, 12288), (19456, 2560)];
    if std::env::var_os("NWC_CEILING_LM_HEAD").is_some() {
        shapes.push((151936, 4096)); // about 100 s more of host preparation
    }
    for (m, k) in shapes {
        let t = time_shape(gpu, blas, m, k, &all, true)?;
        dequants.push((m, k, t.dequant));
        let mut line = format!("{:>12} | {:>6} | {:9.2} |", format!("{m}x{k}"), m.div_ceil(8) * k.div_ceil(512), t.cublas);
        for &us in &t.probes {
            line += &format!(" {us:7.2} ({:5.2}x) |", t.cublas / us);
        }
        let tb = |us: f64| t.stored as f64 / us / 1e6;
        line += &format!(" {:7.2} ({:5.2}x) |", t.full, t.cublas / t.full);
        line += &format!(" {:9.2} | {:11.2}", tb(t.probes[0]), tb(t.probes[1]));
        if !t.exact {
            line += "  MISMATCH: exact matvec output differs from the reference";
        }
        println!("{line}");
    }
    println!("dequant to BF16 against its memory floor (one coalesced read of the stored bytes and one write of the output, no decoding); GB/s of BF16 output:");
    println!(
        "{:>12} | {:>19} | {:>24} | {:>19} | {:>19} | {:>14}",
        "shape", "floor us (GB/s)", "copy of the output us", "dequant v6", "dequant v7", "2.4 TB/s is us"
    );
    for (m, k, d) in dequants {
        let Some((floor, copy, [v6, v7])) = d else { continue };
        let out = (m * k * 2) as f64;
        let gbs = |us: f64| out / us / 1e3;
        println!(
            "{:>12} | {floor:8.2} ({:7.0}) | {copy:8.2} ({:5.2} TB/s r+w) | {v6:8.2} ({:7.0}) | {v7:8.2} ({:7.0}) | {:14.2}",
            format!("{m}x{k}"),
            gbs(floor),
            2.0 * out / copy / 1e6,
            gbs(v6),
            gbs(v7),
            out / 2.4e6
        );
    }
    if std::env::var_os("NWC_CEILING_CURVE").is_none() {
        return Ok(());
    }
    println!("against the number of blocks (K = 4096, one block = 8 rows x 512 columns; us per 1000 blocks in brackets):");
    println!("{:>8} | {:>6} | {:>9} | {:>17} | {:>17}", "M", "blocks", "cuBLAS", "decode probe", "whole v7");
    for m in [128u64, 512, 1056, 2112, 4224, 6336, 8448, 16896, 33792] {
        let t = time_shape(gpu, blas, m, 4096, &[Probe::Decode], false)?;
        let blocks = m.div_ceil(8) * 8;
        let per = |us: f64| us * 1000.0 / blocks as f64;
        let tag = if t.exact { "" } else { "  MISMATCH: exact matvec output differs from the reference" };
        println!(
            "{m:>8} | {blocks:>6} | {:9.2} | {:7.2} ({:6.2}) | {:7.2} ({:6.2}){tag}",
            t.cublas,
            t.probes[0],
            per(t.probes[0]),
            t.full,
            per(t.full)
        );
    }
    Ok(())
}
