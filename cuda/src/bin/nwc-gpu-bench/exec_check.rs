//! Execution-layout kernels outside the timed table: `--exec-profile` (a few launches of every
//! exact matvec and dequant kernel, for Nsight Compute: `device-run.sh ncu-exec`) and
//! `--exec-sweep N` (random shapes and weights, every exact one-column kernel and the dequant
//! kernels against the reference, bit for bit; small enough to run under compute-sanitizer; its
//! dependent chains are in exec_chain.rs).

use super::exec_chain::{chain, CHAIN_MIN_WEIGHTS};
use super::timing::gaussian_bf16;
use super::Res;
use cudarc::driver::CudaSlice;
use nwc_cuda::exec::{ExecDequantKernel, ExecMatvecKernel, GpuExecMatrix};
use nwc_cuda::Gpu;
use nwc_reference::bounded as level2;
use nwc_reference::exec::{decode_exec, encode_exec};
use nwc_reference::{DecodedMatrix, Elements, Mode, Shape};
use std::sync::Arc;

/// The strip kernel's bench variants (exact class): checked here, timed by `--exec-variants`.
pub const STRIP_VARIANTS: [ExecMatvecKernel; 9] = [
    ExecMatvecKernel::VarStripCta,
    ExecMatvecKernel::VarStripW1,
    ExecMatvecKernel::VarStripReleaseStart,
    ExecMatvecKernel::VarStripReleaseEnd,
    ExecMatvecKernel::VarStripUncapped,
    ExecMatvecKernel::VarStripNoPairRule,
    ExecMatvecKernel::VarStripPerWarpSlices,
    ExecMatvecKernel::VarStripNoW1,
    ExecMatvecKernel::VarStripW1Plain,
];

/// The CTA strip kernel on two and on four columns per decode (bench, exact class): checked here
/// on batches, timed by `--exec-batch --exec-kernels var-strip-c2,var-strip-c4`.
const C2: ExecMatvecKernel = ExecMatvecKernel::VarStripC2;
const C4: ExecMatvecKernel = ExecMatvecKernel::VarStripC4;

/// The exact one-column kernels compared (production default first), then [`STRIP_VARIANTS`].
const EXACT: [ExecMatvecKernel; 5] = [
    ExecMatvecKernel::Exact,
    ExecMatvecKernel::Stream,
    ExecMatvecKernel::StreamGeneric,
    ExecMatvecKernel::Rows,
    ExecMatvecKernel::RowsNoPrefetch,
];

fn exact_kernels() -> impl Iterator<Item = ExecMatvecKernel> {
    EXACT.into_iter().chain(STRIP_VARIANTS)
}

/// BF16 words as their f32 values (exact).
pub(super) fn widen(words: &[u16]) -> Vec<f32> {
    words.iter().map(|&w| f32::from_bits(u32::from(w) << 16)).collect()
}

/// The BF16 weights of an execution-layout matrix as spec 19's reference (`level2::expected`)
/// takes a matrix.
pub(super) fn as_decoded(shape: Shape, words: &[u16]) -> DecodedMatrix {
    DecodedMatrix { mode: Mode::BF16_L0, shape, exp_of_rank: [0; 15], elements: Elements::Bf16(words.to_vec()), scale: None }
}

pub(super) fn activations(k: u64, seed: u64) -> Vec<f32> {
    gaussian_bf16(k as usize, seed).iter().map(|&w| f32::from_bits(u32::from(w) << 16) * 50.0).collect()
}

/// `--exec-profile`: one launch of each exact kernel and of each dequant kernel per shape
/// (synthetic BF16), outputs compared between the kernels, then one production bounded matvec at
/// 8, 16 and 32 columns (a split launch, in clusters or with the summing kernel, where the
/// shape's plan splits: for Nsight Compute and the sanitizers, which the sweep's small shapes never
/// split) and one each of the CTA strip kernel on two and on four columns (bench, session 36: the
/// columns' tile partials in shared memory, for racecheck).
pub fn profile(gpu: &Arc<Gpu>, shapes: &[(u64, u64)]) -> Res<()> {
    let s = &gpu.stream;
    for &(m, k) in shapes {
        let words = gaussian_bf16((m * k) as usize, 1);
        let mut e = GpuExecMatrix::from_bf16(gpu, Shape::new(m, k), &words)?;
        let xd = e.activations_f32(&activations(k, 7), 1)?;
        let mut y: CudaSlice<u16> = s.alloc_zeros(m as usize)?;
        let mut first: Option<Vec<u16>> = None;
        for kernel in exact_kernels() {
            e.set_matvec_kernel(kernel);
            e.matvec_into_bf16(&xd, None, &mut y)?;
            let got = s.clone_dtoh(&y)?;
            let same = first.get_or_insert_with(|| got.clone()) == &got;
            println!("exec-profile {m}x{k}: {} matvec equal to exact: {same}", kernel.name());
        }
        let mut deq: CudaSlice<u16> = s.alloc_zeros(m as usize * e.row_stride())?;
        for kernel in ExecDequantKernel::ALL {
            e.set_dequant_kernel(*kernel);
            e.dequant_into(&mut deq)?;
        }
        for (kernel, nbs) in [(ExecMatvecKernel::Bounded, &[8usize, 16, 32][..]), (C2, &[2]), (C4, &[4])] {
            e.set_matvec_kernel(kernel);
            for &nb in nbs {
                let xb = e.activations_bf16(&gaussian_bf16(k as usize * nb, 40 + nb as u64), nb)?;
                let mut yb: CudaSlice<u16> = s.alloc_zeros(m as usize * nb)?;
                e.matvec_into_bf16(&xb, None, &mut yb)?;
            }
        }
        s.synchronize()?;
        println!("exec-profile {m}x{k}: bounded matvec at 8, 16 and 32 columns, the strip kernel on 2 and 4 columns launched");
    }
    Ok(())
}

/// xorshift64: deterministic shapes and weights.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn same_bf16(a: u16, b: u16) -> bool {
    let nan = |w: u16| w & 0x7F80 == 0x7F80 && w & 0x7F != 0;
    a == b || (nan(a) && nan(b))
}

/// `--exec-sweep N[:W]`: N random shapes (up to W weights, default 8 M; K up to 60000 so that the x-from-global
/// and the 3-stage plans run too) and four weight kinds, each within the first 4 shapes (Gaussian;
/// with 1/8 zeros; with 2% wide outliers, many escapes per tile, or on odd shapes 0.25% outliers
/// of one exponent, escapes that share a byte; raw random words, escapes everywhere): every exact kernel of
/// [`EXACT`] and [`STRIP_VARIANTS`] and both dequant kernels against the reference; the bounded
/// (tensor-core) matvec on 1, 3, 8 or 13 BF16 columns against spec 19's bound; then, where W is at
/// least 2 M, the dependent chains ([`chain`]).
pub fn sweep(gpu: &Arc<Gpu>, count: usize, max_weights: u64) -> Res<()> {
    let s = &gpu.stream;
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let mut failed = 0usize;
    for i in 0..count {
        let k = match i % 4 {
            0 => 1 + rng.below(600),
            1 => 1 + rng.below(5000),
            2 => 4096 + 16 * rng.below(4),
            _ => 1 + rng.below(60000),
        };
        let m = 1 + rng.below((max_weights / k).clamp(1, 6000));
        let n = (m * k) as usize;
        // every kind within the first 4 shapes, each with every K range over 16
        let kind = (i + i / 4) % 4;
        // kind 2 on odd shapes: sparser outliers, all of one exponent (158), so that tiles hold
        // several escapes that share one byte (the tile flags' shared escape byte, session 26)
        let shared = i % 2 == 1;
        let mut words = gaussian_bf16(n, 1000 + i as u64);
        for w in words.iter_mut() {
            match kind {
                1 if rng.below(8) == 0 => *w = 0,
                2 if shared && rng.below(400) == 0 => *w = (rng.next() >> 16) as u16 & 0x807F | 158 << 7,
                2 if !shared && rng.below(50) == 0 => *w = (rng.next() >> 16) as u16 & 0x7F7F,
                3 => *w = (rng.next() >> 16) as u16,
                _ => {}
            }
        }
        let shape = Shape::new(m, k);
        let label = format!("exec-sweep #{i} {m}x{k} kind {kind}");
        let want = encode_exec(shape, &words)?;
        let reference = decode_exec(&want)?;
        let x = activations(k, 50 + i as u64);
        let want_y = reference.matvec_bf16(&x, 1, None)?;
        let mut e = GpuExecMatrix::upload(gpu, &want)?;
        let mut bad = Vec::new();
        for kernel in exact_kernels() {
            e.set_matvec_kernel(kernel);
            let got = e.matvec_bf16(&x, 1, None)?;
            if let Some(r) = (0..m as usize).find(|&r| !same_bf16(got[r], want_y[r])) {
                bad.push(format!("{} row {r}: {:#06x} != {:#06x}", kernel.name(), got[r], want_y[r]));
            }
        }
        // the exact class on BF16 activations, bit for bit against the reference on their f32
        // values: one column (the strip kernels' `_xbf16` entry points) and three (widened
        // first); the CTA kernel on several columns (bench) on 2 and 3 or 5 columns, and on 4 and 3
        // or 7 (its `_xbf16` entry points, a last column on production's), and on their f32
        // values (its f32 entry points)
        let (odd, four) = ([3usize, 5][i % 2], [3usize, 7][i % 2]);
        let runs = [(ExecMatvecKernel::Exact, 1usize), (ExecMatvecKernel::Exact, 3), (C2, 2), (C2, odd), (C4, 4), (C4, four)];
        for (kernel, nb) in runs {
            e.set_matvec_kernel(kernel);
            let xs = gaussian_bf16(k as usize * nb, 60 + i as u64);
            let xw = widen(&xs);
            let want_b = reference.matvec_bf16(&xw, nb, None)?;
            let mut y: CudaSlice<u16> = s.alloc_zeros(m as usize * nb)?;
            e.matvec_into_bf16(&e.activations_bf16(&xs, nb)?, None, &mut y)?;
            let mut got = vec![("BF16", s.clone_dtoh(&y)?)];
            if kernel != ExecMatvecKernel::Exact {
                got.push(("f32", e.matvec_bf16(&xw, nb, None)?));
            }
            for (on, got) in got {
                if let Some(r) = (0..got.len()).find(|&r| !same_bf16(got[r], want_b[r])) {
                    let name = kernel.name();
                    bad.push(format!("{name} on {on} activations, {nb} columns, output {r}: {:#06x} != {:#06x}", got[r], want_b[r]));
                }
            }
        }
        // spec 19.6 on batches of BF16 activations (outputs outside spec 19.2's domain skipped):
        // the production choice on up to 32 columns (the strip kernel) and on 33..64 (the panel
        // kernel), the stream kernel, the strip kernel held to one split, its variant that loads
        // activations per chunk, the step kernel, the panel kernel held to 1 and to 2 row groups per warp on 33..64
        let wide = [20usize, 33, 64, 47][i % 4];
        let mut runs = vec![
            (ExecMatvecKernel::Bounded, [1usize, 3, 8, 13][i % 4]),
            (ExecMatvecKernel::Bounded, wide),
            (ExecMatvecKernel::BoundedStream, [2usize, 16, 5, 9][i % 4]),
            (ExecMatvecKernel::VarTcStripNoSplit, [16usize, 1, 27, 12][i % 4]),
            (ExecMatvecKernel::VarTcStripXChunk, [12usize, 16, 9, 10][i % 4]),
            (ExecMatvecKernel::VarTcStripCluster, [5usize, 32, 16, 8][i % 4]),
            (ExecMatvecKernel::VarTcStripSumKernel, [8usize, 1, 32, 16][i % 4]),
            (ExecMatvecKernel::VarTcStripReleaseEnd, [8usize, 16, 3, 32][i % 4]),
            (ExecMatvecKernel::VarTcStripLeastSplits, [16usize, 4, 8, 32][i % 4]),
            (ExecMatvecKernel::BoundedStep, [24usize, 32, 17, 30][i % 4]),
            (ExecMatvecKernel::BoundedPanelRg1, [64usize, 47, 40, 33][i % 4]),
            (ExecMatvecKernel::BoundedPanelRg2, [40usize, 33, 64, 47][i % 4]),
        ];
        if super::WGMMA.load(std::sync::atomic::Ordering::Relaxed) {
            runs.push((ExecMatvecKernel::BoundedWgmma, [16usize, 40, 64, 7][i % 4]));
            runs.push((ExecMatvecKernel::BoundedWgmma, [29usize, 2, 11, 50][i % 4]));
        }
        let dec = as_decoded(shape, &reference.words);
        for (kernel, nb) in runs {
            let xs = gaussian_bf16(k as usize * nb, 70 + i as u64);
            let xw = widen(&xs);
            let expected = level2::expected(&dec, &xw, nb, None)?;
            let mut y: CudaSlice<u16> = s.alloc_zeros(m as usize * nb)?;
            e.set_matvec_kernel(kernel);
            let xd = e.activations_bf16(&xs, nb)?;
            e.matvec_into_bf16(&xd, None, &mut y)?;
            let got: Vec<u32> = s.clone_dtoh(&y)?.into_iter().map(u32::from).collect();
            if let Err(why) = level2::check_outputs(&expected, &got, true) {
                bad.push(format!("{} on {nb} columns: {why}", kernel.name()));
            }
        }
        let deq_want = reference.dequant();
        let mut deq: CudaSlice<u16> = s.alloc_zeros(m as usize * e.row_stride())?;
        for kernel in ExecDequantKernel::ALL {
            e.set_dequant_kernel(*kernel);
            e.dequant_into(&mut deq)?;
            if s.clone_dtoh(&deq)? != deq_want {
                bad.push(format!("dequant {}", kernel.name()));
            }
        }
        if bad.is_empty() {
            continue;
        }
        failed += 1;
        if failed <= 5 {
            println!("FAIL {label} (escapes {}): {}", e.escapes(), bad.join("; "));
        }
    }
    println!("exec-sweep: {}/{count} passed", count - failed);
    // The chains (up to 8192x8192, 8 launches each) only where the sweep itself is full size: the
    // sanitizer steps run small sweeps (`device-run.sh`: up to 1 M weights) within their timeouts.
    if max_weights >= CHAIN_MIN_WEIGHTS {
        failed += chain(gpu)?;
    }
    if failed > 0 {
        return Err(format!("exec-sweep: {failed} failed").into());
    }
    Ok(())
}
