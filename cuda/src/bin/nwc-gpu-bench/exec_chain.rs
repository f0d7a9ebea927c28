//! `--exec-sweep`'s dependent chains (programmatic launches back to back, each matvec's output
//! the next one's input) and its check that split bounded launches add their splits in clusters
//! bit for bit as the summing kernel does; run by exec_check.rs's sweep at full size.

use super::exec_check::{activations, as_decoded, widen};
use super::timing::gaussian_bf16;
use super::Res;
use cudarc::driver::CudaSlice;
use nwc_cuda::exec::{ExecActivations, ExecMatvecKernel, GpuExecMatrix};
use nwc_cuda::{DeviceActivations, Gpu, GpuMatrix};
use nwc_reference::bounded as level2;
use nwc_reference::exec::{decode_exec, encode_exec};
use nwc_reference::{encode, Mode, Shape, Weights};
use std::sync::Arc;

/// The sweep's largest matrix at or above which it also runs the dependent chains ([`chain`]).
pub(super) const CHAIN_MIN_WEIGHTS: u64 = 2_000_000;

/// Dependent launches (programmatic on Hopper, `nwc_cuda::DependentLaunch`): chains of matvecs
/// back to back with no host synchronisation, each one's output the next one's activations, so
/// a kernel that read its activations before the one before it had finished them, or wrote its
/// output while the one before still read it, would differ. Exact chains (the execution layout's
/// one-column kernels on square matrices of the rows, CTA strip and W1 shapes, ping-pong between
/// two buffers; format 10's layout 0 kernel likewise) against the reference's chain bit for bit;
/// bounded chains (tensor cores, 8 or 16 columns, a buffer per step; split launches added in a
/// cluster and by the summing kernel) each step against spec 19.6 for the input it read. Returns the number of
/// chains that failed.
pub(super) fn chain(gpu: &Arc<Gpu>) -> Res<usize> {
    let mut failed = 0;
    for (i, k) in [1008u64, 4096, 8192].into_iter().enumerate() {
        failed += usize::from(!exec_chain(gpu, k, i as u64)?);
    }
    failed += usize::from(!format10_chain(gpu)?);
    failed += usize::from(!bounded_chain(gpu, &[(2048, 2048)], 4, 8, ExecMatvecKernel::Bounded)?);
    failed += usize::from(!bounded_chain(gpu, &[(2560, 9728), (9728, 2560)], 4, 8, ExecMatvecKernel::Bounded)?);
    failed += usize::from(!bounded_chain(gpu, &[(2560, 9728), (9728, 2560)], 4, 8, ExecMatvecKernel::VarTcStripSumKernel)?);
    failed += usize::from(!bounded_chain(gpu, &[(2304, 8192), (8192, 2304)], 2, 16, ExecMatvecKernel::Bounded)?);
    for (m, k) in [(2560u64, 9728u64), (2304, 8192)] {
        failed += usize::from(!cluster_matches(gpu, m, k)?);
    }
    Ok(failed)
}

/// A split launch's splits added inside a thread-block cluster (production where the cluster plan
/// is its own, session 29; the bench's `var-tc-strip-cluster` always, session 28) against the
/// partial sums and exec_tensor_panel_sum (`var-tc-strip-sum-kernel`) on an `m` x `k` matrix that
/// splits its items: production on its own plan, then the cluster variant with both held to 4
/// warps per CTA (its plan counts resident clusters and may take another W, which partitions the
/// items otherwise): the same additions in the same order, so bit for bit, at 1..32 columns per
/// decode.
fn cluster_matches(gpu: &Arc<Gpu>, m: u64, k: u64) -> Res<bool> {
    let shape = Shape::new(m, k);
    let words = gaussian_bf16((m * k) as usize, 3300 + m);
    let mut e = GpuExecMatrix::upload(gpu, &encode_exec(shape, &words)?)?;
    let mut bad = Vec::new();
    for (variant, warps) in [(ExecMatvecKernel::Bounded, None), (ExecMatvecKernel::VarTcStripCluster, Some(4))] {
        e.force_tc_strip_warps(warps)?;
        for nb in [1usize, 8, 13, 16, 27, 32] {
            let xs = gaussian_bf16(k as usize * nb, 97 + nb as u64);
            let xd = e.activations_bf16(&xs, nb)?;
            let mut run = |kernel| -> Res<Vec<u16>> {
                e.set_matvec_kernel(kernel);
                let mut y: CudaSlice<u16> = gpu.stream.alloc_zeros(m as usize * nb)?;
                e.matvec_into_bf16(&xd, None, &mut y)?;
                Ok(gpu.stream.clone_dtoh(&y)?)
            };
            let (want, got) = (run(ExecMatvecKernel::VarTcStripSumKernel)?, run(variant)?);
            let differ = want.iter().zip(&got).filter(|(a, b)| a != b).count();
            if differ > 0 {
                bad.push(format!("{}, {nb} columns: {differ} outputs differ", variant.name()));
            }
        }
    }
    let verdict = if bad.is_empty() { "bit for bit".to_owned() } else { bad.join("; ") };
    println!("bounded split {m}x{k}, production and var-tc-strip-cluster against the summing kernel, 1..32 columns: {verdict}");
    Ok(bad.is_empty())
}

/// Ping-pong between two activation buffers `bufs` (each step reads one and writes the other's
/// buffer, `out` of the buffer's f32 slice); returns the index of the last one written.
fn ping_pong<A>(
    bufs: &mut [A; 2],
    steps: usize,
    out: impl Fn(&mut A) -> Res<&mut CudaSlice<f32>>,
    mut step: impl FnMut(&A, &mut CudaSlice<f32>) -> Res<()>,
) -> Res<usize> {
    for n in 0..steps {
        let [a, b] = bufs;
        if n % 2 == 0 {
            step(a, out(b)?)?;
        } else {
            step(b, out(a)?)?;
        }
    }
    Ok(steps % 2)
}

fn exec_f32(a: &mut ExecActivations) -> Res<&mut CudaSlice<f32>> {
    match a {
        ExecActivations::F32 { buf, .. } => Ok(buf),
        ExecActivations::Bf16 { .. } => Err("chain: f32 activations expected".into()),
    }
}

fn f10_f32(a: &mut DeviceActivations) -> Res<&mut CudaSlice<f32>> {
    match a {
        DeviceActivations::F32 { buf, .. } => Ok(buf),
        DeviceActivations::Bf16 { .. } => Err("chain: f32 activations expected".into()),
    }
}

fn report_exact(what: String, got: &[f32], want: &[f32]) -> bool {
    let bad = got.iter().zip(want).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
    println!("{what}: 8 dependent matvecs, {bad} outputs differ");
    bad == 0
}

fn exec_chain(gpu: &Arc<Gpu>, k: u64, seed: u64) -> Res<bool> {
    let s = &gpu.stream;
    let shape = Shape::new(k, k);
    let words = gaussian_bf16((k * k) as usize, 3000 + seed);
    let reference = decode_exec(&encode_exec(shape, &words)?)?;
    let e = GpuExecMatrix::upload(gpu, &encode_exec(shape, &words)?)?;
    let (kernel, threads) = e.one_column_kernel()?;
    let x0 = activations(k, 90 + seed);
    let mut bufs = [e.activations_f32(&x0, 1)?, ExecActivations::F32 { buf: s.alloc_zeros(k as usize)?, batch: 1 }];
    let last = ping_pong(&mut bufs, 8, exec_f32, |src, dst| Ok(e.matvec_into_f32(src, None, dst)?))?;
    let last = exec_f32(&mut bufs[last])?;
    let mut want = x0;
    for _ in 0..8 {
        want = reference.matvec(&want, 1, None)?;
    }
    Ok(report_exact(format!("exec-chain {k}x{k} ({kernel}, {} warps)", threads / 32), &s.clone_dtoh(last)?, &want))
}

/// Format 10's layout 0 exact kernel: 4096x4096 (Kp = K = M, so an output is the next input).
fn format10_chain(gpu: &Arc<Gpu>) -> Res<bool> {
    let s = &gpu.stream;
    let k = 4096u64;
    let words = gaussian_bf16((k * k) as usize, 3100);
    let enc = encode(Mode::BF16_L0, Shape::new(k, k), Weights::Bf16(&words))?.matrix;
    let (g, dec) = GpuMatrix::upload_and_decode(gpu, &enc)?;
    let x0 = activations(k, 95);
    let first = g.activations_f32(&x0, 1)?;
    let kp = match &first {
        DeviceActivations::F32 { kp, .. } | DeviceActivations::Bf16 { kp, .. } => *kp,
    };
    if kp as u64 != k {
        return Err(format!("chain: Kp {kp} for K {k}").into());
    }
    let mut bufs = [first, DeviceActivations::F32 { buf: s.alloc_zeros(k as usize)?, batch: 1, kp }];
    let last = ping_pong(&mut bufs, 8, f10_f32, |src, dst| Ok(g.matvec_into_f32(src, None, dst)?))?;
    let last = f10_f32(&mut bufs[last])?;
    let mut want = x0;
    for _ in 0..8 {
        want = dec.matvec(&want, 1, None)?;
    }
    Ok(report_exact(format!("format-10 chain {k}x{k}"), &s.clone_dtoh(last)?, &want))
}

/// The bounded (tensor-core) matvec on `nb` BF16 columns through the matrices `shapes` (M x K) in
/// turn, each one's K the one before's M (the last's M the first's K), `steps` steps, a buffer per
/// step; each step's outputs against spec 19.6 for the inputs it read (read back at the end).
/// 2048x2048 runs the one-split strip kernel; 2560x9728 splits its items in 3 (on the H200 summed
/// inside a cluster by production, by exec_tensor_panel_sum with `kernel` = the bench's
/// `var-tc-strip-sum-kernel`), with 9728x2560 to bring its outputs back to 9728 activations;
/// 2304x8192 at 16 columns in 7 splits, one wave, where the least splits (5) would take two
/// (session 32; the summing kernel on the H200).
fn bounded_chain(gpu: &Arc<Gpu>, shapes: &[(u64, u64)], steps: usize, nb: usize, kernel: ExecMatvecKernel) -> Res<bool> {
    let s = &gpu.stream;
    let mut mats = Vec::with_capacity(shapes.len());
    for (i, &(m, k)) in shapes.iter().enumerate() {
        let shape = Shape::new(m, k);
        let words = gaussian_bf16((m * k) as usize, 3200 + i as u64);
        let enc = encode_exec(shape, &words)?;
        let reference = decode_exec(&enc)?;
        let mut e = GpuExecMatrix::upload(gpu, &enc)?;
        e.set_matvec_kernel(kernel);
        mats.push((e, as_decoded(shape, &reference.words)));
    }
    let x0 = gaussian_bf16(shapes[0].1 as usize * nb, 96);
    let mut acts = vec![mats[0].0.activations_bf16(&x0, nb)?];
    for n in 0..steps {
        let (m, k) = shapes[n % shapes.len()];
        let len = match &acts[n] {
            ExecActivations::Bf16 { buf, .. } => buf.len(),
            ExecActivations::F32 { buf, .. } => buf.len(),
        };
        if k as usize * nb != len {
            return Err(format!("bounded chain: step {n} ({m}x{k}) does not take the step before's outputs").into());
        }
        acts.push(ExecActivations::Bf16 { buf: s.alloc_zeros(m as usize * nb)?, batch: nb });
    }
    for n in 0..steps {
        let (done, rest) = acts.split_at_mut(n + 1);
        let ExecActivations::Bf16 { buf: out, .. } = &mut rest[0] else { return Err("chain: BF16 activations expected".into()) };
        mats[n % shapes.len()].0.matvec_into_bf16(&done[n], None, out)?;
    }
    let words_of = |a: &ExecActivations| -> Res<Vec<u16>> {
        match a {
            ExecActivations::Bf16 { buf, .. } => Ok(s.clone_dtoh(buf)?),
            ExecActivations::F32 { .. } => Err("chain: BF16 activations expected".into()),
        }
    };
    let mut bad = Vec::new();
    for n in 0..steps {
        let dec = &mats[n % shapes.len()].1;
        let xw = widen(&words_of(&acts[n])?);
        let got: Vec<u32> = words_of(&acts[n + 1])?.into_iter().map(u32::from).collect();
        if let Err(why) = level2::check_outputs(&level2::expected(dec, &xw, nb, None)?, &got, true) {
            bad.push(format!("step {n}: {why}"));
        }
    }
    let names: Vec<String> = shapes.iter().map(|(m, k)| format!("{m}x{k}")).collect();
    println!(
        "bounded chain {} ({}), {nb} columns: {steps} dependent matvecs, {} steps outside spec 19.6 {}",
        names.join(" / "),
        kernel.name(),
        bad.len(),
        bad.join("; ")
    );
    Ok(bad.is_empty())
}
