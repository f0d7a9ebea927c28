//! Execution-layout rows of the bench (spec 20): the same weights as the format-10 row, transcoded
//! on the GPU from the format-10 matrix (timed: format-10 dequant + GPU encode), then the exact
//! matvec kernels (every output checked against the reference's BF16 matvec), dequant (checked
//! against the weights), VRAM bytes per weight. The batches are `exec_batch.rs`.

use super::timing::{gaussian_bf16, rotation, time_us};
use super::Res;
use cudarc::cublas::CudaBlas;
use cudarc::driver::CudaSlice;
use nwc_cuda::exec::{DependentLaunch, ExecMatvecKernel, GpuExecMatrix};
use nwc_cuda::{Gpu, GpuMatrix};
use nwc_reference::{encode, Mode, Shape, Weights};
use std::sync::Arc;

/// Exact execution-layout matvec kernels timed side by side (production first), each with how its
/// launches follow the one before (`exact-serial`: production without programmatic dependent
/// launch).
pub const MATVECS: [(&str, ExecMatvecKernel, DependentLaunch); 6] = [
    ("exact", ExecMatvecKernel::Exact, DependentLaunch::Programmatic),
    ("exact-serial", ExecMatvecKernel::Exact, DependentLaunch::Serial),
    ("stream", ExecMatvecKernel::Stream, DependentLaunch::Programmatic),
    ("rows", ExecMatvecKernel::Rows, DependentLaunch::Programmatic),
    ("stream-generic", ExecMatvecKernel::StreamGeneric, DependentLaunch::Programmatic),
    ("rows-noes", ExecMatvecKernel::RowsNoPrefetch, DependentLaunch::Programmatic),
];
/// Dequant kernels timed side by side (production first).
pub const DEQUANTS: [(&str, nwc_cuda::exec::ExecDequantKernel); 2] =
    [("rows", nwc_cuda::exec::ExecDequantKernel::Rows), ("stream", nwc_cuda::exec::ExecDequantKernel::Stream)];

pub struct ExecRow {
    /// Matvec microseconds per entry of MATVECS (NaN when an output differed from the reference).
    pub us: Vec<f64>,
    /// Dequant microseconds per entry of DEQUANTS (NaN when not exact).
    pub dequant_us: Vec<f64>,
    /// Transcode (format-10 dequant + encode) and encode-only wall microseconds (medians of 5).
    pub transcode_us: f64,
    pub encode_us: f64,
    pub stored: u64,
    pub escapes: u64,
}

fn wall_us(gpu: &Arc<Gpu>, f: &mut dyn FnMut() -> Res<()>) -> Res<f64> {
    f()?;
    gpu.stream.synchronize()?;
    let mut t = Vec::new();
    for _ in 0..5 {
        let t0 = std::time::Instant::now();
        f()?;
        gpu.stream.synchronize()?;
        t.push(t0.elapsed().as_secs_f64() * 1e6);
    }
    t.sort_by(f64::total_cmp);
    Ok(t[2])
}

/// The execution-layout measurements of one BF16 row (`gm`: its format-10 layout 0 matrix,
/// `expected`: the reference's BF16 matvec of `x`).
pub fn measure(gpu: &Arc<Gpu>, gm: &GpuMatrix, words: &[u16], x: &[u16], expected: &[u16]) -> Res<ExecRow> {
    let s = &gpu.stream;
    let (m, k) = (gm.shape.rows, gm.shape.cols);
    let transcode_us = wall_us(gpu, &mut || {
        GpuExecMatrix::transcode(gm)?;
        Ok(())
    })?;
    let wdev = s.clone_htod(words)?;
    let encode_us = wall_us(gpu, &mut || {
        GpuExecMatrix::encode_device(gpu, gm.shape, &wdev, k)?;
        Ok(())
    })?;
    drop(wdev);
    let e0 = GpuExecMatrix::transcode(gm)?;
    let stored = e0.stored_bytes();
    let escapes = e0.escapes();
    let mut mats = rotation(stored, e0, |m| m.try_clone())?;
    let copies = mats.len();
    let xf: Vec<f32> = x.iter().map(|&w| f32::from_bits(u32::from(w) << 16)).collect();
    let xd = mats[0].activations_f32(&xf, 1)?;
    let mut y16: CudaSlice<u16> = s.alloc_zeros(m as usize)?;
    let mut us = Vec::new();
    for &(label, kernel, order) in &MATVECS {
        for e in mats.iter_mut() {
            e.set_matvec_kernel(kernel);
            e.set_dependent_launch(order);
        }
        s.memset_zeros(&mut y16)?;
        let t = time_us(gpu, &mut |i| Ok(mats[i % copies].matvec_into_bf16(&xd, None, &mut y16)?))?;
        let got = s.clone_dtoh(&y16)?;
        let bad = got.iter().zip(expected).filter(|(a, b)| a != b).count();
        if bad > 0 {
            println!("MISMATCH exec {label} matvec {m}x{k}: {bad} rows differ from the reference");
        }
        us.push(if bad == 0 { t } else { f64::NAN });
    }
    let k16 = mats[0].row_stride();
    let mut deq: CudaSlice<u16> = s.alloc_zeros(m as usize * k16)?;
    let mut dequant_us = Vec::new();
    for &(label, kernel) in &DEQUANTS {
        for e in mats.iter_mut() {
            e.set_dequant_kernel(kernel);
        }
        s.memset_zeros(&mut deq)?;
        let t = time_us(gpu, &mut |i| Ok(mats[i % copies].dequant_into(&mut deq)?))?;
        let out = s.clone_dtoh(&deq)?;
        let exact = (0..m as usize).all(|r| out[r * k16..][..k as usize] == words[r * k as usize..][..k as usize])
            && (0..m as usize).all(|r| out[r * k16 + k as usize..(r + 1) * k16].iter().all(|&w| w == 0));
        if !exact {
            println!("MISMATCH exec {label} dequant {m}x{k}: differs from the weights");
        }
        dequant_us.push(if exact { t } else { f64::NAN });
    }
    Ok(ExecRow { us, dequant_us, transcode_us, encode_us, stored, escapes })
}

/// The execution-layout table: per BF16 row, batch-1 times and ratios against cuBLAS (and the
/// format-10 production kernel), dequant TB/s of BF16 output, transcode GB/s (BF16 bytes per
/// second), VRAM bytes per weight; then geomeans per source.
/// One BF16 bench row as the report needs it.
pub struct Reported<'a> {
    pub label: &'a str,
    pub m: u64,
    pub k: u64,
    pub cublas_us: f64,
    /// The format-10 production matvec and its stored bytes.
    pub f10_us: f64,
    pub f10_stored: u64,
    pub e: &'a ExecRow,
}

pub fn report(rows: &[Reported]) {
    if rows.is_empty() {
        return;
    }
    println!("\nexecution layout (spec 20), batch 1, BF16 activations and outputs:");
    let mut head = format!("{:<48} | {:>9} | {:>8} |", "matrix", "cuBLAS us", "f10 us");
    for (v, _, _) in &MATVECS {
        head += &format!(" {:>9} {:>6} |", format!("{v} us"), "/cB");
    }
    for (v, _) in &DEQUANTS {
        head += &format!(" {:>9}", format!("deq {v}"));
    }
    head += &format!(" | {:>9} {:>9} | {:>6} {:>6} {:>8}", "transc GB/s", "enc GB/s", "B/w", "f10B/w", "esc/w");
    println!("{head}");
    for r in rows {
        let (label, m, k, cb, f10, f10_stored, e) = (r.label, r.m, r.k, r.cublas_us, r.f10_us, r.f10_stored, r.e);
        let mut line = format!("{label:<48} | {cb:9.2} | {f10:8.2} |");
        for &t in &e.us {
            line += &format!(" {t:9.2} {:5.2}x |", cb / t);
        }
        let k16 = k.div_ceil(16) * 16;
        for &t in &e.dequant_us {
            line += &format!(" {:9.2}", (m * k16 * 2) as f64 / t / 1e6);
        }
        let w = (m * k) as f64;
        line += &format!(
            " | {:11.0} {:9.0} | {:6.4} {:6.4} {:8.2e}",
            2.0 * w / e.transcode_us / 1e3,
            2.0 * w / e.encode_us / 1e3,
            e.stored as f64 / w,
            f10_stored as f64 / w,
            e.escapes as f64 / w
        );
        println!("{line}");
    }
    for kind in ["synthetic", "real"] {
        let sel: Vec<&Reported> = rows.iter().filter(|r| r.label.starts_with(kind)).collect();
        if sel.is_empty() {
            continue;
        }
        let geo = |f: &dyn Fn(&Reported) -> f64| (sel.iter().map(|r| f(r).ln()).sum::<f64>() / sel.len() as f64).exp();
        let per: Vec<String> =
            MATVECS.iter().enumerate().map(|(i, (v, _, _))| format!("{v} {:.3}x", geo(&|r| r.cublas_us / r.e.us[i]))).collect();
        println!(
            "exec geomean vs cuBLAS, {kind}: {} over {} shapes (format-10 production: {:.3}x); min over shapes >= 4096x4096: {:.3}x",
            per.join(", "),
            sel.len(),
            geo(&|r| r.cublas_us / r.f10_us),
            sel.iter().filter(|r| r.m * r.k >= 4096 * 4096).map(|r| r.cublas_us / r.e.us[0]).fold(f64::INFINITY, f64::min)
        );
    }
}

/// `--exec`: per BF16 job (label, M, K, weights), cuBLAS, the production format-10 exact matvec
/// (whose output is the expected one: spec 20.15 makes the two bit-identical, and the
/// conformance run checks the format-10 kernel against the reference) and the execution layout
/// rows; host preparation (format-10 encode and validation) in parallel. No layout 1, no FP8.
pub fn run_rows(gpu: &Arc<Gpu>, blas: &CudaBlas, jobs: Vec<(String, u64, u64, Vec<u16>)>) -> Res<()> {
    let t0 = std::time::Instant::now();
    let prepared: Vec<(String, u64, u64, Vec<u16>, GpuMatrix)> = std::thread::scope(|scope| {
        let handles: Vec<_> = jobs
            .into_iter()
            .map(|(label, m, k, words)| {
                let g = gpu.clone();
                scope.spawn(move || -> Result<_, String> {
                    let enc = encode(Mode::BF16_L0, Shape::new(m, k), Weights::Bf16(&words)).map_err(|e| e.to_string())?.matrix;
                    let gm = GpuMatrix::upload(&g, &enc).map_err(|e| e.to_string())?;
                    Ok((label, m, k, words, gm))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("prepare thread panicked")).collect::<Result<Vec<_>, String>>()
    })?;
    println!("host preparation (format-10 encode, validate, upload) took {:.1} s", t0.elapsed().as_secs_f64());
    let mut rows: Vec<(String, u64, u64, f64, f64, u64, ExecRow)> = Vec::new();
    for (label, m, k, words, gm) in prepared {
        let s = &gpu.stream;
        let x: Vec<u16> = gaussian_bf16(k as usize, 7)
            .iter()
            .map(|&w| half::bf16::from_f32(half::bf16::from_bits(w).to_f32() * 50.0).to_bits())
            .collect();
        let cublas_us = super::timing::cublas_matvec_us(gpu, blas, &words, &x, m, k)?;
        let mats = rotation(gm.stored_bytes, gm, |m| m.try_clone())?;
        let copies = mats.len();
        let xd = mats[0].activations_bf16(&x, 1)?;
        let mut y16: CudaSlice<u16> = s.alloc_zeros(m as usize)?;
        let f10_us = time_us(gpu, &mut |i| Ok(mats[i % copies].matvec_into_bf16(&xd, None, &mut y16)?))?;
        let expected = s.clone_dtoh(&y16)?;
        let mut mats = mats;
        for g in mats.iter_mut() {
            g.set_dependent_launch(DependentLaunch::Serial);
        }
        s.memset_zeros(&mut y16)?;
        let f10_serial_us = time_us(gpu, &mut |i| Ok(mats[i % copies].matvec_into_bf16(&xd, None, &mut y16)?))?;
        if s.clone_dtoh(&y16)? != expected {
            println!("MISMATCH format 10 {m}x{k}: serial launches differ from programmatic ones");
        }
        let f10_stored = mats[0].stored_bytes;
        let e = measure(gpu, &mats[0], &words, &x, &expected)?;
        drop(mats);
        let per: Vec<String> = MATVECS.iter().zip(&e.us).skip(1).map(|((v, _, _), t)| format!("{v} {t:8.2}")).collect();
        println!(
            "{label:<48} cuBLAS {cublas_us:8.2} us | format 10 {f10_us:8.2} (serial {f10_serial_us:8.2}) | exec {:8.2} ({:.3}x) {}",
            e.us[0],
            cublas_us / e.us[0],
            per.join(" ")
        );
        rows.push((label, m, k, cublas_us, f10_us, f10_stored, e));
    }
    let reported: Vec<Reported> =
        rows.iter().map(|r| Reported { label: &r.0, m: r.1, k: r.2, cublas_us: r.3, f10_us: r.4, f10_stored: r.5, e: &r.6 }).collect();
    report(&reported);
    Ok(())
}
