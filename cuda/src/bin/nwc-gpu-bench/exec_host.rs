//! `--exec-host`: the host's cost of a one-column exact matvec on the execution layout, for callers
//! that launch eagerly (no CUDA graph: `nwc.torch` in eager PyTorch). Per shape: the production
//! plan search alone (`GpuExecMatrix::one_column_plan_uncached`, what every launch paid before the
//! plan was kept with the matrix), then eager launches back to back with the kept plan and with
//! the search added before each (the launch path before session 20), and the CUDA-graph time of
//! the same launch for comparison. Times are wall clock on the host: enqueue per launch, and per
//! launch until the stream is idle.

use super::timing::{gaussian_bf16, time_us};
use super::Res;
use cudarc::driver::CudaSlice;
use nwc_cuda::exec::GpuExecMatrix;
use nwc_cuda::Gpu;
use nwc_reference::Shape;
use std::sync::Arc;
use std::time::Instant;

/// Launches (or plan searches) per timed run, few enough that the launch queue never fills (a
/// full queue makes an enqueue wait for the GPU: session 20's first call ran 2000 and measured the
/// GPU on the large shapes); the median of `RUNS` runs is reported.
const LAUNCHES: usize = 200;
const RUNS: usize = 15;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Median over `RUNS` of (enqueue us, until-idle us) per launch of `LAUNCHES` eager launches.
fn eager(gpu: &Arc<Gpu>, launch: &mut dyn FnMut() -> Res<()>) -> Res<(f64, f64)> {
    let s = &gpu.stream;
    for _ in 0..50 {
        launch()?;
    }
    s.synchronize()?;
    let (mut enq, mut total) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let t = Instant::now();
        for _ in 0..LAUNCHES {
            launch()?;
        }
        let queued = t.elapsed().as_secs_f64();
        s.synchronize()?;
        let done = t.elapsed().as_secs_f64();
        enq.push(queued * 1e6 / LAUNCHES as f64);
        total.push(done * 1e6 / LAUNCHES as f64);
    }
    Ok((median(enq), median(total)))
}

/// `--exec-host` on `shapes` (synthetic N(0, 0.02) weights; the plan does not depend on them).
pub fn run(gpu: &Arc<Gpu>, shapes: &[(&str, u64, u64)]) -> Res<()> {
    let s = &gpu.stream;
    println!("exec host cost per one-column launch (us; eager = no CUDA graph, {LAUNCHES} launches, median of {RUNS} runs)");
    for &(name, m, k) in shapes {
        let words = gaussian_bf16((m * k) as usize, 11);
        let e = GpuExecMatrix::from_bf16(gpu, Shape::new(m, k), &words)?;
        drop(words);
        let x: Vec<f32> = gaussian_bf16(k as usize, 7).iter().map(|&w| f32::from_bits(u32::from(w) << 16)).collect();
        let xd = e.activations_f32(&x, 1)?;
        let mut y16: CudaSlice<u16> = s.alloc_zeros(m as usize)?;
        let choice = e.one_column_plan_uncached()?;
        // the kept plan is the one the search gives (`one_column_kernel` reads the kept one)
        e.matvec_into_bf16(&xd, None, &mut y16)?;
        let kept = e.one_column_kernel()?;
        if choice != Some(kept) {
            return Err(format!("{m}x{k}: the kept plan runs {kept:?}, the search gives {choice:?}").into());
        }
        let search = median(
            (0..RUNS)
                .map(|_| {
                    let t = Instant::now();
                    for _ in 0..LAUNCHES {
                        std::hint::black_box(e.one_column_plan_uncached()?);
                    }
                    Ok(t.elapsed().as_secs_f64() * 1e6 / LAUNCHES as f64)
                })
                .collect::<Res<Vec<f64>>>()?,
        );
        let (kept_enq, kept_total) = eager(gpu, &mut || Ok(e.matvec_into_bf16(&xd, None, &mut y16)?))?;
        let (search_enq, search_total) = eager(gpu, &mut || {
            std::hint::black_box(e.one_column_plan_uncached()?);
            Ok(e.matvec_into_bf16(&xd, None, &mut y16)?)
        })?;
        let graph = time_us(gpu, &mut |_| Ok(e.matvec_into_bf16(&xd, None, &mut y16)?))?;
        let (kernel, warps) = choice.map_or(("(none)", 0), |(n, t)| (n, t / 32));
        println!(
            "{name:<17} {m:>6}x{k:<5} {kernel}/{warps}w: plan search {search:5.2} | eager enqueue {kept_enq:5.2} (with search {search_enq:5.2}) | eager until idle {kept_total:6.2} (with search {search_total:6.2}) | graph {graph:6.2}"
        );
    }
    Ok(())
}
