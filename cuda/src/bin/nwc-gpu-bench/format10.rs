//! The format-10 rows of the bench: every matvec and dequant kernel of a format-10 matrix (layout 0,
//! and the same weights in layout 1 on the bounded matvec) beside cuBLAS, FP8 beside the
//! uncompressed fp8 baseline, and the execution layout of the same weights (`exec`). `--profile`'s
//! launches of the same kernels are in `profile.rs`.

use super::timing::{cublas_matvec_us, gaussian_bf16, real_pool, tile, time_us};
use super::{exec, Res, L2_BYTES, SHAPES};
use cudarc::cublas::CudaBlas;
use cudarc::driver::CudaSlice;
use nwc_cuda::fp8_native::Fp8Native;
use nwc_cuda::{DequantKernel, Gpu, GpuMatrix, MatvecKernel};
use nwc_reference::bounded as level2;
use nwc_reference::{encode, Mode, Shape, Weights};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Matvec kernels timed side by side (label, kernel); the last is the production one. History:
/// codewise = version 1, staged = version 6, exact = version 7 (docs/gpu-history.md).
pub(super) const MATVECS: [(&str, MatvecKernel); 3] =
    [("codewise", MatvecKernel::Codewise), ("staged", MatvecKernel::Staged), ("exact", MatvecKernel::Exact)];
/// Dequant kernels timed side by side; `staged` (version 6) is the production one of layout 0,
/// gather = version 1, pairs = version 7.
pub(super) const DEQUANTS: [(&str, DequantKernel); 3] =
    [("gather", DequantKernel::Gather), ("staged", DequantKernel::ByLayout), ("pairs", DequantKernel::PairTable)];
/// `--production`: only the production kernels (and no fp8 baseline).
pub static PRODUCTION_ONLY: AtomicBool = AtomicBool::new(false);

fn matvecs() -> &'static [(&'static str, MatvecKernel)] {
    if PRODUCTION_ONLY.load(Ordering::Relaxed) {
        &MATVECS[MATVECS.len() - 1..]
    } else {
        &MATVECS
    }
}

fn dequants() -> &'static [(&'static str, DequantKernel)] {
    if PRODUCTION_ONLY.load(Ordering::Relaxed) {
        &DEQUANTS[1..2]
    } else {
        &DEQUANTS
    }
}

struct Row {
    label: String,
    cublas_us: f64,
    /// Matvec microseconds per entry of matvecs() (NaN when the output was not exact).
    us: Vec<f64>,
    stored: u64,
    /// Dequant microseconds per entry of dequants() (NaN when the output was not exact).
    dequant_us: Vec<f64>,
    /// The uncompressed fp8 baseline (FP8 rows only) and its relative L2 distance from our output.
    native_us: Option<(f64, f64)>,
    /// Layout 1: bounded matvec (NaN when an output broke spec 19.4) and exact dequant
    /// (NaN when not exact) microseconds.
    l1_us: f64,
    l1_dequant_us: f64,
    m: u64,
    k: u64,
    /// The execution layout of the same weights (BF16 rows).
    exec: Option<exec::ExecRow>,
}

impl Row {
    /// The production (exact) matvec time.
    fn ours_us(&self) -> f64 {
        self.us[self.us.len() - 1]
    }
}

/// Host work done in parallel before any timing: encode, validate, reference output, upload.
pub(super) struct Prepared {
    label: String,
    m: u64,
    k: u64,
    words: Vec<u16>,
    pub(super) gm: GpuMatrix,
    pub(super) expected: Vec<u16>,
    pub(super) x: Vec<u16>,
    /// FP8 rows: the quantized weights and scales, for the uncompressed baseline.
    fp8: Option<(Vec<u8>, Vec<f32>)>,
    /// The same weights in layout 1 (bounded matvec), and per output the canonical result
    /// and bound B (spec 19.3) its matvec is checked against.
    pub(super) gm1: GpuMatrix,
    pub(super) expect1: Vec<(f32, Option<f64>)>,
}

pub(super) fn prepare(gpu: &Arc<Gpu>, label: String, m: u64, k: u64, words: Vec<u16>, fp8: bool) -> Res<Prepared> {
    let shape = Shape::new(m, k);
    let t0 = std::time::Instant::now();
    let mut fp8_plain = None;
    let (mut enc, mut enc1) = if fp8 {
        let (q, scales) = nwc_reference::quantize_fp8(&words, shape)?;
        let mut e = encode(Mode::FP8_L0, shape, Weights::Fp8(&q))?.matrix;
        e.scale = Some(scales.clone());
        let mut e1 = encode(Mode::FP8_L1, shape, Weights::Fp8(&q))?.matrix;
        e1.scale = Some(scales.clone());
        fp8_plain = Some((q, scales));
        (e, e1)
    } else {
        (encode(Mode::BF16_L0, shape, Weights::Bf16(&words))?.matrix, encode(Mode::BF16_L1, shape, Weights::Bf16(&words))?.matrix)
    };
    let t_enc = t0.elapsed().as_secs_f64();
    let (gm, dec) = GpuMatrix::upload_and_decode(gpu, &enc)?;
    enc.data = Vec::new();
    let x: Vec<u16> =
        gaussian_bf16(k as usize, 7).iter().map(|&w| half::bf16::from_f32(half::bf16::from_bits(w).to_f32() * 50.0).to_bits()).collect();
    let xf: Vec<f32> = x.iter().map(|&w| f32::from_bits(u32::from(w) << 16)).collect();
    let expected = dec.matvec_bf16(&xf, 1, None)?;
    drop(dec);
    let (mut gm1, dec1) = GpuMatrix::upload_and_decode(gpu, &enc1)?;
    enc1.data = Vec::new();
    gm1.set_matvec_kernel(MatvecKernel::Bounded)?;
    let expect1 = level2::expected(&dec1, &xf, 1, None)?;
    eprintln!("  prepared {label}: encode {t_enc:.1} s, total {:.1} s", t0.elapsed().as_secs_f64());
    Ok(Prepared { label, m, k, words, gm, expected, x, fp8: fp8_plain, gm1, expect1 })
}

fn bench(gpu: &Arc<Gpu>, blas: &CudaBlas, p: Prepared) -> Res<Row> {
    let s = &gpu.stream;
    let (m, k) = (p.m, p.k);
    let cublas_us = cublas_matvec_us(gpu, blas, &p.words, &p.x, m, k)?;
    let stored = p.gm.stored_bytes;
    let copies = (3 * L2_BYTES / stored + 1).clamp(1, 8) as usize;
    let mut mats = vec![p.gm];
    for _ in 1..copies {
        mats.push(mats[0].try_clone()?);
    }
    let xd = mats[0].activations_bf16(&p.x, 1)?;
    let mut mats = mats;
    let mut y16: CudaSlice<u16> = s.alloc_zeros(m as usize)?;
    // Every timed kernel's output (all M rows) must equal the reference's BF16 matvec.
    let mut timed = |(label, kernel): (&str, MatvecKernel), mats: &mut Vec<GpuMatrix>| -> Res<f64> {
        for g in mats.iter_mut() {
            g.set_matvec_kernel(kernel)?;
        }
        s.memset_zeros(&mut y16)?;
        let us = time_us(gpu, &mut |i| Ok(mats[i % copies].matvec_into_bf16(&xd, None, &mut y16)?))?;
        let got = s.clone_dtoh(&y16)?;
        let bad = (0..m as usize).filter(|&r| got[r] != p.expected[r]).count();
        if bad > 0 {
            // Reported, and the time not used: the run goes on so other versions still get timed.
            println!("MISMATCH {} ({label} matvec): {bad} rows differ from the reference", p.label);
            return Ok(f64::NAN);
        }
        Ok(us)
    };
    let us: Vec<f64> = matvecs().iter().map(|&v| timed(v, &mut mats)).collect::<Res<_>>()?;
    let k16 = k.div_ceil(16) * 16;
    let mut deq: CudaSlice<u16> = s.alloc_zeros((m * k16) as usize)?;
    // Every dequant must equal the original weights (BF16) or the first kernel's output, which the
    // conformance run checks against the reference (FP8).
    let mut first: Option<Vec<u16>> = None;
    let mut dequant_us = Vec::new();
    for &(v, kernel) in dequants() {
        for g in mats.iter_mut() {
            g.set_dequant_kernel(kernel)?;
        }
        s.memset_zeros(&mut deq)?;
        let t = time_us(gpu, &mut |i| Ok(mats[i % copies].dequant_into(&mut deq)?))?;
        let out = s.clone_dtoh(&deq)?;
        let exact = match (&p.fp8, &first) {
            (None, _) => (0..m as usize).all(|r| out[r * k16 as usize..][..k as usize] == p.words[r * k as usize..][..k as usize]),
            (Some(_), Some(f)) => &out == f,
            (Some(_), None) => true,
        };
        if !exact {
            println!("MISMATCH {}: {v} dequant differs from the expected weights", p.label);
        }
        dequant_us.push(if exact { t } else { f64::NAN });
        first.get_or_insert(out);
    }
    // Layout 1: the bounded matvec, every output checked against spec 19.4, and the
    // exact dequant, checked like the others.
    let copies1 = (3 * L2_BYTES / p.gm1.stored_bytes + 1).clamp(1, 8) as usize;
    let mut mats1 = vec![p.gm1];
    for _ in 1..copies1 {
        mats1.push(mats1[0].try_clone()?);
    }
    let xd1 = mats1[0].activations_bf16(&p.x, 1)?;
    s.memset_zeros(&mut y16)?;
    let t = time_us(gpu, &mut |i| Ok(mats1[i % copies1].matvec_into_bf16(&xd1, None, &mut y16)?))?;
    let got: Vec<u32> = s.clone_dtoh(&y16)?.into_iter().map(u32::from).collect();
    let l1_us = match level2::check_outputs(&p.expect1, &got, true) {
        Ok(c) if c.within > 0 => t,
        Ok(_) => {
            println!("MISMATCH {}: layout 1 bounded matvec: no output inside the spec 19.2 domain", p.label);
            f64::NAN
        }
        Err(why) => {
            println!("MISMATCH {}: layout 1 bounded matvec: {why}", p.label);
            f64::NAN
        }
    };
    s.memset_zeros(&mut deq)?;
    let t = time_us(gpu, &mut |i| Ok(mats1[i % copies1].dequant_into(&mut deq)?))?;
    let out = s.clone_dtoh(&deq)?;
    let l1_dequant_us = if first.as_ref() == Some(&out) {
        t
    } else {
        println!("MISMATCH {}: layout 1 dequant differs from layout 0's", p.label);
        f64::NAN
    };
    drop(mats1);
    drop(deq);
    let native_us = match &p.fp8 {
        _ if PRODUCTION_ONLY.load(Ordering::Relaxed) => None,
        None => None,
        Some((q, scales)) => {
            let copies = (3 * L2_BYTES / (m * k16) + 1).clamp(1, 8) as usize;
            let mut nat = vec![Fp8Native::upload(gpu, q, scales, m, k)?];
            for _ in 1..copies {
                nat.push(nat[0].try_clone()?);
            }
            let xb = match &xd {
                nwc_cuda::DeviceActivations::Bf16 { buf, .. } => buf,
                _ => unreachable!("bench activations are BF16"),
            };
            let t = time_us(gpu, &mut |i| Ok(nat[i % copies].matvec_into_bf16(xb, &mut y16)?))?;
            let got = s.clone_dtoh(&y16)?;
            let f = |w: u16| f64::from(f32::from_bits(u32::from(w) << 16));
            let (mut num, mut den) = (0f64, 0f64);
            for (&g, &e) in got.iter().zip(&p.expected) {
                num += (f(g) - f(e)).powi(2);
                den += f(e).powi(2);
            }
            let rel = (num / den.max(1e-300)).sqrt();
            if rel.is_nan() || rel >= 1e-2 {
                return Err(format!("{}: fp8 baseline relative error {rel:e} against the reference", p.label).into());
            }
            Some((t, rel))
        }
    };
    let exec = if p.fp8.is_none() {
        mats[0].set_dequant_kernel(DequantKernel::ByLayout)?;
        Some(exec::measure(gpu, &mats[0], &p.words, &p.x, &p.expected)?)
    } else {
        None
    };
    Ok(Row { label: p.label, cublas_us, us, stored, dequant_us, native_us, l1_us, l1_dequant_us, m, k, exec })
}

/// The bench's table: every shape (up to 60 M weights with `quick`) x (synthetic BF16, synthetic FP8,
/// real BF16 from `real`); `exec_only`: the execution layout's rows (spec 20) beside cuBLAS and the
/// production format-10 kernels, BF16 only.
pub fn run(gpu: &Arc<Gpu>, blas: &CudaBlas, real: Option<&str>, quick: bool, exec_only: bool) -> Res<()> {
    let mut sources: Vec<(&str, Option<Vec<u16>>)> = vec![("synthetic N(0,0.02)", None)];
    if let Some(p) = real {
        sources.push(("real MiniLM-L6 tiled", Some(real_pool(p)?)));
    }
    // Jobs: every shape x (synthetic BF16, synthetic FP8, real BF16); host work in parallel.
    let mut jobs: Vec<(String, u64, u64, Vec<u16>, bool)> = Vec::new();
    for (i, &(name, m, k)) in SHAPES.iter().enumerate() {
        if quick && m * k > 60_000_000 {
            continue;
        }
        let n = (m * k) as usize;
        for (_, pool) in &sources {
            let words = match pool {
                None => gaussian_bf16(n, i as u64 + 1),
                Some(p) => tile(p, n),
            };
            if pool.is_none() && !exec_only {
                jobs.push((format!("{:<10} {name:<17} {m:>6}x{k:<5} fp8 ", "synthetic"), m, k, words.clone(), true));
            }
            let src = if pool.is_none() { "synthetic" } else { "real" };
            jobs.push((format!("{src:<10} {name:<17} {m:>6}x{k:<5} bf16"), m, k, words, false));
        }
    }
    if exec_only {
        let jobs = jobs.into_iter().filter(|j| !j.4).map(|(l, m, k, w, _)| (l, m, k, w)).collect();
        return exec::run_rows(gpu, blas, jobs);
    }
    let t0 = std::time::Instant::now();
    let prepared: Vec<Prepared> = std::thread::scope(|scope| {
        let handles: Vec<_> = jobs
            .into_iter()
            .map(|(l, m, k, w, f)| {
                let g = gpu.clone();
                scope.spawn(move || prepare(&g, l, m, k, w, f).map_err(|e| e.to_string()))
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("prepare thread panicked")).collect::<Result<Vec<_>, String>>()
    })?;
    println!("host preparation (encode, validate, reference matvec, upload) took {:.1} s", t0.elapsed().as_secs_f64());
    let mut rows = Vec::new();
    let mut head = format!("{:<48} | {:>9} |", "matrix", "cuBLAS us");
    for (v, _) in matvecs() {
        head += &format!(" {:>8} {:>6} |", format!("{v} us"), "/cB");
    }
    head += &format!(" {:>6} | {:>9} {:>6} |", "GB/s", "fp8nat us", "nat/v");
    head += &format!(" {:>8} {:>6} {:>6} |", "L1mma us", "L1/cB", "nat/L1");
    for (v, _) in dequants() {
        head += &format!(" {:>8}", format!("{v}GB/s"));
    }
    head += &format!(" {:>8}", "deqL1GB/s");
    println!("{head} | ratio");
    for p in prepared {
        let r = bench(gpu, blas, p)?;
        let deq_bytes = (r.m * r.k.div_ceil(16) * 16 * 2) as f64;
        let (nat, vs_nat) = match r.native_us {
            Some((us, _)) => (format!("{us:9.2}"), format!("{:5.2}x", us / r.ours_us())),
            None => ("-".into(), "-".into()),
        };
        let mut line = format!("{:<48} | {:9.2} |", r.label, r.cublas_us);
        for &t in &r.us {
            line += &format!(" {t:8.2} {:5.2}x |", r.cublas_us / t);
        }
        line += &format!(" {:6.0} | {nat:>9} {vs_nat:>6} |", r.stored as f64 / r.ours_us() / 1e3);
        let nat_l1 = r.native_us.map_or("-".to_string(), |(us, _)| format!("{:5.2}x", us / r.l1_us));
        line += &format!(" {:8.2} {:5.2}x {nat_l1:>6} |", r.l1_us, r.cublas_us / r.l1_us);
        for &t in r.dequant_us.iter().chain([&r.l1_dequant_us]) {
            line += &format!(" {:8.0}", deq_bytes / t / 1e3);
        }
        println!("{line} | {:.4}", r.stored as f64 / (r.m * r.k * 2) as f64);
        if let Some((_, rel)) = r.native_us {
            println!("    fp8 baseline relative L2 distance from the exact result: {rel:.2e}");
        }
        rows.push(r);
    }
    let reported: Vec<exec::Reported> = rows
        .iter()
        .filter_map(|r| {
            r.exec.as_ref().map(|e| exec::Reported {
                label: &r.label,
                m: r.m,
                k: r.k,
                cublas_us: r.cublas_us,
                f10_us: r.ours_us(),
                f10_stored: r.stored,
                e,
            })
        })
        .collect();
    exec::report(&reported);
    for kind in ["synthetic", "real"] {
        for elem in ["bf16", "fp8 "] {
            let sel: Vec<&Row> = rows.iter().filter(|r| r.label.starts_with(kind) && r.label.ends_with(elem)).collect();
            if !sel.is_empty() {
                let geo = |f: &dyn Fn(&Row) -> f64| (sel.iter().map(|r| f(r).ln()).sum::<f64>() / sel.len() as f64).exp();
                let per_version: Vec<String> =
                    matvecs().iter().enumerate().map(|(i, (v, _))| format!("{v} {:.3}x", geo(&|r| r.cublas_us / r.us[i]))).collect();
                println!(
                    "geomean speed vs cuBLAS, {kind} {elem}: {} over {} shapes (production: exact)",
                    per_version.join(", "),
                    sel.len()
                );
                let head: Vec<&&Row> = sel
                    .iter()
                    .filter(|r| [(6144, 4096), (4096, 4096), (24576, 4096), (4096, 12288), (151936, 4096)].contains(&(r.m, r.k)))
                    .collect();
                println!(
                    "  layout 1 bounded matvec (tensor cores, spec 19): {:.3}x over {} shapes",
                    geo(&|r| r.cublas_us / r.l1_us),
                    sel.len()
                );
                if head.len() == 5 {
                    let g = (head.iter().map(|r| (r.cublas_us / r.ours_us()).ln()).sum::<f64>() / 5.0).exp();
                    let g1 = (head.iter().map(|r| (r.cublas_us / r.l1_us).ln()).sum::<f64>() / 5.0).exp();
                    println!("  issue-7 geomean (5 headline shapes), {kind} {elem}: {g:.3}x (layout 1 bounded: {g1:.3}x)");
                }
                if elem == "fp8 " && !PRODUCTION_ONLY.load(Ordering::Relaxed) {
                    let g = geo(&|r| r.native_us.map_or(1.0, |(us, _)| us / r.ours_us()));
                    let g1 = geo(&|r| r.native_us.map_or(1.0, |(us, _)| us / r.l1_us));
                    println!("  fused FP8 (exact matvec) vs uncompressed fp8 baseline: {g:.3}x (geomean); layout 1 bounded: {g1:.3}x");
                }
            }
        }
    }
    Ok(())
}
