//! Timing and inputs shared by the bench's parts: CUDA-graph medians, cuBLAS, synthetic and real
//! weights.

use super::{Res, L2_BYTES, LAUNCHES_PER_GRAPH};
use cudarc::cublas::{sys::cublasOperation_t, CudaBlas, Gemm, GemmConfig};
use cudarc::driver::sys::{CUevent_flags, CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::CudaSlice;
use nwc_cuda::Gpu;
use std::sync::Arc;

/// Milliseconds of untimed graph replays before each measurement (at least one replay).
const WARM_MS: f64 = 5.0;

/// Median microseconds per launch of `launch(i)` (i rotates copies), from CUDA-graph replays.
pub fn time_us(gpu: &Arc<Gpu>, launch: &mut dyn FnMut(usize) -> Res<()>) -> Res<f64> {
    let s = &gpu.stream;
    // Warm-up, every launch of the graph once and eagerly: module loads, cuBLAS heuristics,
    // caches, and what each matrix copy keeps from its first launch (its plans), so that nothing
    // is made inside the capture: an allocation there fails, or becomes a memory node between two
    // kernels that loses their programmatic edge (session 35).
    for i in 0..LAUNCHES_PER_GRAPH {
        launch(i)?;
    }
    s.synchronize()?;
    s.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
    for i in 0..LAUNCHES_PER_GRAPH {
        launch(i)?;
    }
    let graph = s.end_capture(CUgraphInstantiate_flags(0))?.ok_or("empty graph")?;
    // Replays for at least WARM_MS before the timed ones: after host work (a reference, an upload)
    // the first kernel timed read up to 15% slow (1000x3000, docs/results.md, session 13).
    let warm = std::time::Instant::now();
    loop {
        graph.launch()?;
        s.synchronize()?;
        if warm.elapsed().as_secs_f64() * 1e3 >= WARM_MS {
            break;
        }
    }
    let (a, b) = (gpu.ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?, gpu.ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?);
    let mut times = Vec::new();
    for _ in 0..25 {
        a.record(s)?;
        graph.launch()?;
        b.record(s)?;
        b.synchronize()?;
        times.push(f64::from(a.elapsed_ms(&b)?) * 1e3 / LAUNCHES_PER_GRAPH as f64);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// cuBLAS Y (M x N) = W X for row-major W (M x K, i.e. K x M column-major, transposed) and N
/// activation columns of K values, all BF16.
pub fn gemm_config(m: u64, n: u64, k: u64) -> GemmConfig<half::bf16> {
    GemmConfig {
        transa: cublasOperation_t::CUBLAS_OP_T,
        transb: cublasOperation_t::CUBLAS_OP_N,
        m: m as i32,
        n: n as i32,
        k: k as i32,
        alpha: half::bf16::ONE,
        lda: k as i32,
        ldb: k as i32,
        beta: half::bf16::ZERO,
        ldc: m as i32,
    }
}

/// cuBLAS BF16 GEMM Y (M x N) = W X on copies of the row-major W (M x K) that together exceed 3x
/// the L2, rotated between launches.
pub struct DenseGemm {
    w: Vec<CudaSlice<half::bf16>>,
    m: u64,
    k: u64,
}

impl DenseGemm {
    pub fn new(gpu: &Arc<Gpu>, words: &[u16], m: u64, k: u64) -> Res<DenseGemm> {
        let copies = (3 * L2_BYTES / (m * k * 2) + 1).clamp(1, 8) as usize;
        let host: Vec<half::bf16> = words.iter().map(|&w| half::bf16::from_bits(w)).collect();
        let w = (0..copies).map(|_| gpu.stream.clone_htod(&host)).collect::<Result<_, _>>()?;
        Ok(DenseGemm { w, m, k })
    }

    /// Median microseconds of Y = W X for the `n` columns of `xs` (BF16 words, K per column).
    pub fn time_us(&self, gpu: &Arc<Gpu>, blas: &CudaBlas, xs: &[u16], n: usize) -> Res<f64> {
        let s = &gpu.stream;
        let x_dev: CudaSlice<half::bf16> = s.clone_htod(&xs.iter().map(|&w| half::bf16::from_bits(w)).collect::<Vec<_>>())?;
        let mut y_dev: CudaSlice<half::bf16> = s.alloc_zeros(self.m as usize * n)?;
        let cfg = gemm_config(self.m, n as u64, self.k);
        let copies = self.w.len();
        time_us(gpu, &mut |i| {
            // SAFETY: A holds M*K elements (lda = K), B holds K*N (ldb = K), C holds M*N, as cfg says.
            unsafe { blas.gemm(cfg, &self.w[i % copies], &x_dev, &mut y_dev) }?;
            Ok(())
        })
    }
}

/// cuBLAS batch-1 BF16 matvec y (M) = W (M x K, row-major = K x M column-major, transposed) x:
/// median microseconds, rotating copies of W that together exceed 3x the L2.
pub fn cublas_matvec_us(gpu: &Arc<Gpu>, blas: &CudaBlas, words: &[u16], x: &[u16], m: u64, k: u64) -> Res<f64> {
    DenseGemm::new(gpu, words, m, k)?.time_us(gpu, blas, x, 1)
}

pub fn gaussian_bf16(n: usize, seed: u64) -> Vec<u16> {
    // Box-Muller on a xorshift stream: N(0, 0.02) rounded to BF16, deterministic.
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    };
    (0..n)
        .map(|_| {
            let (u, v) = (next(), next());
            let g = (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos();
            half::bf16::from_f32((0.02 * g) as f32).to_bits()
        })
        .collect()
}

/// Real weights: a raw little-endian BF16 file (.bf16, made by cuda/real-weights.py from
/// MiniLM's safetensors) or every 2-D F32 tensor of a .safetensors file rounded to BF16.
pub fn real_pool(path: &str) -> Res<Vec<u16>> {
    let bytes = std::fs::read(path)?;
    if !path.ends_with(".safetensors") {
        return Ok(bytes.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect());
    }
    let n = u64::from_le_bytes(bytes[..8].try_into()?) as usize;
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n])?;
    let body = &bytes[8 + n..];
    let mut pool = Vec::new();
    for (name, t) in header.as_object().ok_or("bad header")? {
        if name == "__metadata__" || t["dtype"] != "F32" || t["shape"].as_array().map_or(0, |s| s.len()) != 2 {
            continue;
        }
        let off = t["data_offsets"].as_array().ok_or("offsets")?;
        let (a, b) = (off[0].as_u64().ok_or("offset")? as usize, off[1].as_u64().ok_or("offset")? as usize);
        pool.extend(body[a..b].chunks_exact(4).map(|c| half::bf16::from_f32(f32::from_le_bytes([c[0], c[1], c[2], c[3]])).to_bits()));
    }
    Ok(pool)
}

pub fn tile(pool: &[u16], n: usize) -> Vec<u16> {
    pool.iter().copied().cycle().take(n).collect()
}

/// Copies of a matrix that together exceed 3x the L2 (at most 8), so launches that rotate among
/// them read their weights from HBM: `first` of `bytes` in VRAM, `clone` makes another copy.
pub fn rotation<T, E>(bytes: u64, first: T, clone: impl Fn(&T) -> Result<T, E>) -> Result<Vec<T>, E> {
    let copies = (3 * L2_BYTES / bytes + 1).clamp(1, 8) as usize;
    let mut all = vec![first];
    for _ in 1..copies {
        let next = clone(&all[0])?;
        all.push(next);
    }
    Ok(all)
}
