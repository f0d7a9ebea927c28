//! An encoded matrix on the device, and the three operations of spec 15 on it.

use crate::gpu::Gpu;
use crate::kernels::{v2_warp_smem, THREADS, V7_MAX_COLUMNS, V7_SMEM, V7_THREADS, V9_MAX_COLUMNS, V9_SMEM, V9_THREADS, WARPS};
use crate::GpuError;
use cudarc::driver::{CudaSlice, DevicePtr, DeviceRepr, LaunchConfig, PushKernelArg};
use nwc_reference::geometry::{RAW_SLACK, TAIL_SLACK};
use nwc_reference::{decode, ElemType, EncodedMatrix, Geometry, Layout, Mode, ParamError, Shape};
use std::sync::Arc;

/// Sizes the kernels need; the same field order as `struct Geo` in kernels/nwc.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct Geo {
    rows: u64,
    cols: u64,
    k16: u64,
    kp: u64,
    col_blocks: u64,
    row_blocks: u64,
    super_chunks: u64,
    /// Bit 0: version 2 without prefetch overlap (kernel_version 3, for timing only).
    flags: u64,
}

// SAFETY: plain-old-data of eight u64, laid out exactly like the kernels' `struct Geo`.
unsafe impl DeviceRepr for Geo {}

/// What the matvec writes: f32, or f32 rounded to BF16 (nearest even, spec 15.4.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputKind {
    F32,
    Bf16,
}

/// Activations on the device, `batch` vectors each padded with zeros from K to Kp (a multiple of
/// 512), so every lane can load its columns with aligned vector loads (spec 15.4.2: pad columns
/// meet weight 0).
pub enum DeviceActivations {
    F32 { buf: CudaSlice<f32>, batch: usize, kp: usize },
    Bf16 { buf: CudaSlice<u16>, batch: usize, kp: usize },
}

impl DeviceActivations {
    pub fn batch(&self) -> usize {
        match self {
            DeviceActivations::F32 { batch, .. } | DeviceActivations::Bf16 { batch, .. } => *batch,
        }
    }
}

/// The timing probes of [`GpuMatrix::probe`]: version 7's batch-1 matvec with stages left out,
/// and the memory floor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// Read every stored byte of `data` and `low` once, coalesced: what any decoder has to move.
    Read,
    /// Stage the streams and decode every code with the pair table; nothing else.
    Decode,
    /// The same with a table-free decoder (count leading zeros, exp_of_rank in 16 words).
    DecodeClz,
    /// Decode, and load the raw bytes and assemble every weight.
    Weights,
    /// Decode, weights, activations and the fma chains; no row sums, partials or outputs.
    Fma,
    /// Decode only as one flat loop of 32 quads per lane (no row structure).
    DecodeFlat,
    /// The same with the stream words kept in registers (one shared load per crossed word
    /// instead of two per quad).
    DecodeReg,
    /// The same with a conflict-free 8-bit pair table kept once per lane's bank (32 KB), falling
    /// back to the 12-bit table for pairs longer than 8 bits.
    DecodeRep,
}

/// A validated encoded matrix resident on one GPU.
pub struct GpuMatrix {
    gpu: Arc<Gpu>,
    pub mode: Mode,
    pub shape: Shape,
    geo: Geo,
    data: CudaSlice<u8>,
    bases: CudaSlice<u32>,
    hdr: CudaSlice<u8>,
    lut: CudaSlice<u32>,
    low: CudaSlice<u8>,
    scale: Option<CudaSlice<f32>>,
    /// Version 7 and 9 matvec scratch: block partials (layout 0: 8 per block and column, up to
    /// V7_MAX_COLUMNS columns per launch; layout 1: 16 per block and column, up to
    /// V9_MAX_COLUMNS), and one counter per row block that
    /// the kernel leaves at zero (spec 15.4.5 order is kept by the last warp of each row block).
    /// Every launch of this matrix runs on the one stream of its `Gpu`, so launches never share
    /// the scratch concurrently.
    partial: CudaSlice<f32>,
    count: CudaSlice<u32>,
    /// Version 7's two-code table and exp_of_rank (`crate::pair_table`).
    pairs: CudaSlice<u32>,
    /// Bytes of the stored fields a matvec reads (data up to the stream end, bases, hdr, low,
    /// scale): the numerator of "compressed bytes per second".
    pub stored_bytes: u64,
    /// Which kernels layout 0 uses: 7 (default: version 7, docs/gpu.md), 6 (version 2 kernels with
    /// one copy buffer per warp), 2 (version 2 with two buffers), 3 (version 2 waiting for each
    /// block's copy before decoding it; timing only) or 1 (the first version), the older ones kept
    /// for side-by-side timing.
    /// `NWC_KERNEL=N` at upload picks one. All are bit-exact; layout 1 runs version 1 (exact)
    /// unless `bounded` is set.
    pub kernel_version: u8,
    /// Spec 19: when set, a layout 1 matvec with BF16 activations runs on tensor cores (version 9,
    /// `kernels/nwc_mma.cu`): each output within the bound B of spec 19.3 of the canonical one
    /// instead of bit-identical to it, decoding unchanged. No effect on layout 0, on f32
    /// activations (outside the domain of spec 19.2) or on dequant and gather. Default false;
    /// `NWC_MATVEC_CLASS=bounded` at upload sets it.
    pub bounded: bool,
    /// Version 7 only: a batch's columns go through the batched kernels in groups of up to
    /// V7_MAX_COLUMNS (each weight decoded once per group) instead of one launch per column.
    /// Default true; `NWC_BATCH_FUSED=0` at upload turns it off (same results either way).
    pub fused_batch: bool,
    /// Which kernels layout 0 dequant uses: 6 (default: measured faster than 7 on 6 of the 8
    /// bench shapes, docs/results.md), 7, 2 or 1. `NWC_DEQUANT_KERNEL=N` at upload picks one.
    /// Layout 1 dequant runs version 9 (exact) unless this is 1.
    pub dequant_version: u8,
}

fn pad_to(mut v: Vec<u8>, len: usize) -> Vec<u8> {
    if v.len() < len {
        v.resize(len, 0);
    }
    v
}

impl GpuMatrix {
    /// Validates `m` with every rule of spec 13 (the reference decoder) and uploads it. Nothing
    /// reaches the device unless the matrix is valid.
    pub fn upload(gpu: &Arc<Gpu>, m: &EncodedMatrix) -> Result<GpuMatrix, GpuError> {
        decode(m)?;
        Self::upload_validated(gpu, m)
    }

    /// Like [`GpuMatrix::upload`], also returning the host decode the validation produced (saves
    /// a second decode when the caller wants reference results too).
    pub fn upload_and_decode(gpu: &Arc<Gpu>, m: &EncodedMatrix) -> Result<(GpuMatrix, nwc_reference::DecodedMatrix), GpuError> {
        let decoded = decode(m)?;
        Ok((Self::upload_validated(gpu, m)?, decoded))
    }

    /// Uploads a matrix the caller has just validated with `nwc_reference::decode` (the bench uses
    /// this to avoid decoding a 600-million-weight matrix twice). Private to the crate so no
    /// outside caller can skip validation.
    pub(crate) fn upload_validated(gpu: &Arc<Gpu>, m: &EncodedMatrix) -> Result<GpuMatrix, GpuError> {
        let g = Geometry::new(m.mode, m.shape).map_err(|e| GpuError::Invalid(e.into()))?;
        let s = &gpu.stream;
        let stream_end: u64 = u64::from(*m.bases.last().expect("validated: at least one block"))
            + m.hdr[m.hdr.len() - 32..].iter().map(|&w| 4 * u64::from(w)).sum::<u64>();
        // Spec 9.3/9.4 slacks, so over-reads documented in kernels/nwc.cu stay in bounds.
        let data_len = (stream_end.div_ceil(8) * 8 + TAIL_SLACK) as usize;
        let data = s.clone_htod(&pad_to(m.data[..data_len.min(m.data.len())].to_vec(), data_len))?;
        let low = s.clone_htod(&pad_to(m.low[..(g.n_low as usize).min(m.low.len())].to_vec(), (g.n_low + RAW_SLACK) as usize))?;
        let scale = match &m.scale {
            Some(v) => Some(s.clone_htod(v)?),
            None => None,
        };
        let (partial, count) = Self::scratch(gpu, &g, m.mode.layout)?;
        let pairs = s.clone_htod(&crate::pair_table::build(m.mode.elem, &m.lut))?;
        let stored_bytes = stream_end
            + 4 * m.bases.len() as u64
            + m.hdr.len() as u64
            + g.n_low
            + 4 * m.scale.as_ref().map_or(0, |v| v.len() as u64);
        Ok(GpuMatrix {
            gpu: gpu.clone(),
            mode: m.mode,
            shape: m.shape,
            geo: Geo {
                rows: g.shape.rows,
                cols: g.shape.cols,
                k16: g.k16,
                kp: g.kp,
                col_blocks: g.col_blocks,
                row_blocks: g.row_blocks,
                super_chunks: g.super_chunks,
                flags: 0,
            },
            data,
            bases: s.clone_htod(&m.bases)?,
            hdr: s.clone_htod(&m.hdr)?,
            lut: s.clone_htod(&m.lut)?,
            low,
            scale,
            partial,
            count,
            pairs,
            stored_bytes,
            kernel_version: match std::env::var("NWC_KERNEL").as_deref() {
                Ok("1") => 1,
                Ok("2") => 2,
                Ok("3") => 3,
                Ok("6") => 6,
                _ => 7,
            },
            fused_batch: std::env::var("NWC_BATCH_FUSED").as_deref() != Ok("0"),
            bounded: std::env::var("NWC_MATVEC_CLASS").as_deref() == Ok("bounded"),
            dequant_version: match std::env::var("NWC_DEQUANT_KERNEL").as_deref() {
                Ok("1") => 1,
                Ok("2") => 2,
                Ok("7") => 7,
                _ => 6,
            },
        })
    }

    /// Version 7 matvec scratch for geometry `g` (zeroed counters).
    fn scratch(gpu: &Arc<Gpu>, g: &Geometry, layout: Layout) -> Result<(CudaSlice<f32>, CudaSlice<u32>), GpuError> {
        let s = &gpu.stream;
        let blocks = (g.row_blocks * g.col_blocks) as usize;
        let per_block = match layout {
            Layout::Rows8 => 8 * V7_MAX_COLUMNS,
            Layout::Fragment16 => 16 * V9_MAX_COLUMNS,
        };
        Ok((s.alloc_zeros(per_block * blocks.max(1))?, s.alloc_zeros((g.row_blocks as usize).max(1))?))
    }

    /// A second device copy of the same matrix (benchmarks rotate copies past the L2 cache).
    pub fn try_clone(&self) -> Result<GpuMatrix, GpuError> {
        let s = &self.gpu.stream;
        Ok(GpuMatrix {
            gpu: self.gpu.clone(),
            mode: self.mode,
            shape: self.shape,
            geo: self.geo,
            data: s.clone_dtod(&self.data)?,
            bases: s.clone_dtod(&self.bases)?,
            hdr: s.clone_dtod(&self.hdr)?,
            lut: s.clone_dtod(&self.lut)?,
            low: s.clone_dtod(&self.low)?,
            scale: match &self.scale {
                Some(v) => Some(s.clone_dtod(v)?),
                None => None,
            },
            partial: s.alloc_zeros(self.partial.len())?,
            count: s.alloc_zeros(self.count.len())?,
            pairs: s.clone_dtod(&self.pairs)?,
            stored_bytes: self.stored_bytes,
            kernel_version: self.kernel_version,
            fused_batch: self.fused_batch,
            bounded: self.bounded,
            dequant_version: self.dequant_version,
        })
    }

    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// Row stride of dequant and gather output: K rounded up to 16 (spec 15.2).
    pub fn row_stride(&self) -> usize {
        self.geo.k16 as usize
    }

    fn suffix(&self) -> &'static str {
        match (self.mode.elem, self.mode.layout) {
            (ElemType::Bf16, Layout::Rows8) => "bf16_l0",
            (ElemType::Fp8E4m3, Layout::Rows8) => "fp8_l0",
            (ElemType::Bf16, Layout::Fragment16) => "bf16_l1",
            (ElemType::Fp8E4m3, Layout::Fragment16) => "fp8_l1",
        }
    }

    fn grid(&self, ctas: u64) -> u32 {
        // A grid-stride loop covers the rest; 8 CTAs of 256 threads fill one SM.
        ctas.clamp(1, u64::from(self.gpu.sm_count) * 8) as u32
    }

    /// True when this matrix runs the version 2 kernels (layout 0 only).
    fn v2(&self) -> bool {
        (2..=6).contains(&self.kernel_version) && self.mode.layout == Layout::Rows8
    }

    /// True when this matrix runs the version 7 kernels (layout 0 only).
    fn v7(&self) -> bool {
        self.kernel_version == 7 && self.mode.layout == Layout::Rows8
    }

    /// Geo flags of the timing-only variant: bit 0 = version 3 (no copy overlap).
    fn flags(&self) -> u64 {
        u64::from(self.kernel_version == 3)
    }

    /// Version 7 grid: as many 16-warp CTAs as fit at once, at most one warp per block.
    fn v7_grid(&self, name: &str) -> Result<u32, GpuError> {
        self.warp_per_block_grid(name, V7_THREADS, V7_SMEM)
    }

    /// A resident grid of CTAs of `threads` threads and `smem` bytes whose warps each take one
    /// block at a time (dequant 2/6/7, versions 7 and 9, the probes): at most one warp per block.
    fn warp_per_block_grid(&self, name: &str, threads: u32, smem: u32) -> Result<u32, GpuError> {
        let blocks = self.geo.row_blocks * self.geo.col_blocks;
        self.resident_grid(name, threads, smem, blocks.div_ceil(u64::from(threads / 32)))
    }

    /// Dynamic shared memory of a version 2 CTA of `threads` threads.
    fn v2_smem(&self, threads: u32, version: u8) -> u32 {
        let double = threads / 32 * v2_warp_smem(self.mode.elem == ElemType::Fp8E4m3);
        // Version 6 keeps one copy buffer per warp instead of two.
        if version == 6 { double / 2 } else { double }
    }

    /// A persistent grid: as many CTAs of `threads` as fit on the device at once, at most `ctas`.
    fn resident_grid(&self, name: &str, threads: u32, smem: u32, ctas: u64) -> Result<u32, GpuError> {
        let per_sm = self.gpu.ctas_per_sm(name, threads, smem)?;
        Ok(ctas.clamp(1, u64::from(self.gpu.sm_count) * u64::from(per_sm)) as u32)
    }

    /// Spec 15.2, versions 2, 6 and 7 (layout 0): one warp per block.
    fn dequant2(&self, out: &mut CudaSlice<u16>) -> Result<(), GpuError> {
        let s = &self.gpu.stream;
        let v = match self.dequant_version.max(2) {
            3 => 2,
            v => v,
        };
        let name = if self.mode.elem == ElemType::Bf16 { format!("nwc_dequant{v}_bf16_l0") } else { format!("nwc_dequant{v}_fp8_l0") };
        let name = name.as_str();
        let (threads, smem, grid) = if v == 7 {
            (V7_THREADS, V7_SMEM, self.v7_grid(name)?)
        } else {
            let smem = self.v2_smem(THREADS, v);
            (THREADS, smem, self.warp_per_block_grid(name, THREADS, smem)?)
        };
        let (data, _g1) = self.data.device_ptr(s);
        let (bases, _g2) = self.bases.device_ptr(s);
        let (hdr, _g3) = self.hdr.device_ptr(s);
        // Version 7 takes its own table (crate::pair_table) where version 2 takes the stored one.
        let (lut, _g4) = if v == 7 { self.pairs.device_ptr(s) } else { self.lut.device_ptr(s) };
        let (low, _g5) = self.low.device_ptr(s);
        let (out_ptr, _g6) = out.device_ptr(s);
        let geo = Geo { flags: u64::from(self.dequant_version == 3), ..self.geo };
        let cfg = LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: smem };
        let mut b = s.launch_builder(self.gpu.function(name));
        b.arg(&data).arg(&bases).arg(&hdr).arg(&lut).arg(&low).arg(&out_ptr).arg(&geo);
        // SAFETY: the argument list matches NWC_DEQUANT2 in kernels/nwc_v2.cu and NWC_DEQUANT7 in kernels/nwc_v7.cu; every pointer is a live
        // allocation of this matrix (data and low padded by the spec 9.3/9.4 slacks); `out` holds
        // M * K16 words (asserted by the caller); the matrix passed the validity rules on upload.
        unsafe { b.launch(cfg) }?;
        Ok(())
    }

    /// Version 9 grid: as many 16-warp CTAs as fit at once, at most one warp per block.
    fn v9_grid(&self, name: &str) -> Result<u32, GpuError> {
        self.warp_per_block_grid(name, V9_THREADS, V9_SMEM)
    }

    /// Spec 15.2, version 9 (layout 1, exact): one warp per block.
    fn dequant9(&self, out: &mut CudaSlice<u16>) -> Result<(), GpuError> {
        let s = &self.gpu.stream;
        let name = if self.mode.elem == ElemType::Bf16 { "nwc_dequant9_bf16_l1" } else { "nwc_dequant9_fp8_l1" };
        let grid = self.v9_grid(name)?;
        let (data, _g1) = self.data.device_ptr(s);
        let (bases, _g2) = self.bases.device_ptr(s);
        let (hdr, _g3) = self.hdr.device_ptr(s);
        let (pairs, _g4) = self.pairs.device_ptr(s);
        let (low, _g5) = self.low.device_ptr(s);
        let (out_ptr, _g6) = out.device_ptr(s);
        let cfg = LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (V9_THREADS, 1, 1), shared_mem_bytes: V9_SMEM };
        let mut b = s.launch_builder(self.gpu.function(name));
        b.arg(&data).arg(&bases).arg(&hdr).arg(&pairs).arg(&low).arg(&out_ptr).arg(&self.geo);
        // SAFETY: the argument list matches NWC_DEQUANT9 in kernels/nwc_mma.cu; every pointer is a
        // live allocation of this matrix (data padded by the spec 9.3 slack; the kernel reads raw
        // bytes only inside the block's super-chunks); `out` holds M * K16 words (asserted by the
        // caller, `expand`); the matrix passed the validity rules on upload.
        unsafe { b.launch(cfg) }?;
        Ok(())
    }

    /// Spec 19, version 9: the bounded matvec of a layout 1 matrix on BF16 activations, columns
    /// in groups of up to V9_MAX_COLUMNS (8 per mma tile).
    fn matvec9(&self, x: u64, kp: u64, batch: usize, bias: Option<&CudaSlice<f32>>, out_bf16: i32, y: u64) -> Result<(), GpuError> {
        let s = &self.gpu.stream;
        let m = self.geo.rows;
        let fp8 = self.mode.elem == ElemType::Fp8E4m3;
        let (data, _g1) = self.data.device_ptr(s);
        let (bases, _g2) = self.bases.device_ptr(s);
        let (hdr, _g3) = self.hdr.device_ptr(s);
        let (pairs, _g4) = self.pairs.device_ptr(s);
        let (low, _g5) = self.low.device_ptr(s);
        let scale = self.scale.as_ref().map_or(0u64, |v| v.device_ptr(s).0);
        let (partial, _g6) = self.partial.device_ptr(s);
        let (count, _g7) = self.count.device_ptr(s);
        let bias_ptr = bias.map_or(0u64, |v| v.device_ptr(s).0);
        let y_elem: u64 = if out_bf16 != 0 { 2 } else { 4 };
        for col in (0..batch).step_by(V9_MAX_COLUMNS) {
            let n = (batch - col).min(V9_MAX_COLUMNS);
            let name = match (fp8, n > 8) {
                (false, false) => "nwc_matvec9_bf16_l1",
                (false, true) => "nwc_matvec9x16_bf16_l1",
                (true, false) => "nwc_matvec9_fp8_l1",
                (true, true) => "nwc_matvec9x16_fp8_l1",
            };
            let cfg = LaunchConfig { grid_dim: (self.v9_grid(name)?, 1, 1), block_dim: (V9_THREADS, 1, 1), shared_mem_bytes: V9_SMEM };
            let x_ptr = x + col as u64 * kp * 2;
            let y_ptr = y + col as u64 * m * y_elem;
            let n32 = n as u32;
            let mut b = s.launch_builder(self.gpu.function(name));
            b.arg(&data).arg(&bases).arg(&hdr).arg(&pairs).arg(&low).arg(&scale).arg(&x_ptr).arg(&bias_ptr).arg(&y_ptr).arg(&out_bf16);
            b.arg(&self.geo).arg(&partial).arg(&count).arg(&n32);
            // SAFETY: the argument list matches NWC_MATVEC9 in kernels/nwc_mma.cu; matrix pointers
            // are live allocations (data padded by the spec 9.3 slack); the scratch holds 16
            // floats per block and column for V9_MAX_COLUMNS columns and one zeroed counter per
            // row block; x_ptr points at n <= 16 BF16 vectors of Kp values (columns col.. of the
            // caller's batch x Kp buffer, length checked by matvec_raw); bias has M values or is
            // null; y_ptr has n x M outputs of the kind out_bf16 says (matvec_raw's contract).
            unsafe { b.launch(cfg) }?;
        }
        Ok(())
    }

    /// Spec 15.2 (sel = None) or 15.3: writes rows of stride K16 into `out`.
    fn expand(&self, sel: Option<&CudaSlice<u64>>, out_rows: usize, out: &mut CudaSlice<u16>) -> Result<(), GpuError> {
        let needed = out_rows * self.row_stride();
        assert!(out.len() >= needed, "output buffer too small: {} < {needed}", out.len());
        let s = &self.gpu.stream;
        let tasks: u64 = match sel {
            None => self.geo.row_blocks * self.geo.col_blocks,
            Some(_) => out_rows as u64 * self.geo.col_blocks,
        };
        if tasks == 0 {
            return Ok(());
        }
        if sel.is_none() && self.dequant_version >= 2 && self.mode.layout == Layout::Rows8 {
            return self.dequant2(out);
        }
        if sel.is_none() && self.dequant_version != 1 && self.mode.layout == Layout::Fragment16 {
            return self.dequant9(out);
        }
        let f = self.gpu.function(match self.suffix() {
            "bf16_l0" => "nwc_expand_bf16_l0",
            "fp8_l0" => "nwc_expand_fp8_l0",
            "bf16_l1" => "nwc_expand_bf16_l1",
            _ => "nwc_expand_fp8_l1",
        });
        let (data, _g1) = self.data.device_ptr(s);
        let (bases, _g2) = self.bases.device_ptr(s);
        let (hdr, _g3) = self.hdr.device_ptr(s);
        let (lut, _g4) = self.lut.device_ptr(s);
        let (low, _g5) = self.low.device_ptr(s);
        let sel_ptr = match sel {
            Some(v) => v.device_ptr(s).0,
            None => 0u64,
        };
        let (out_ptr, _g6) = out.device_ptr(s);
        let geo = Geo { flags: u64::from(self.kernel_version == 3), ..self.geo };
        let cfg = LaunchConfig { grid_dim: (self.grid(tasks.div_ceil(u64::from(WARPS))), 1, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 };
        let mut b = s.launch_builder(f);
        b.arg(&data).arg(&bases).arg(&hdr).arg(&lut).arg(&low).arg(&sel_ptr).arg(&tasks).arg(&out_ptr).arg(&geo);
        // SAFETY: the argument list matches NWC_EXPAND in kernels/nwc.cu; every pointer is a live
        // allocation of this matrix (data and low padded by the spec 9.3/9.4 slacks), `sel` holds
        // out_rows indices each < M (checked by the caller) and `out` holds out_rows * K16 words
        // (asserted above); the matrix passed the reference's validity rules before upload.
        unsafe { b.launch(cfg) }?;
        Ok(())
    }

    /// Spec 15.2 into a device buffer of at least M x K16 words.
    pub fn dequant_into(&self, out: &mut CudaSlice<u16>) -> Result<(), GpuError> {
        self.expand(None, self.shape.rows as usize, out)
    }

    /// Spec 15.2: the whole matrix as BF16 words, M rows of stride K16.
    pub fn dequant(&self) -> Result<Vec<u16>, GpuError> {
        let s = &self.gpu.stream;
        let mut out = s.alloc_zeros::<u16>((self.shape.rows as usize) * self.row_stride())?;
        self.dequant_into(&mut out)?;
        Ok(s.clone_dtoh(&out)?)
    }

    /// Spec 15.3: the given rows (any order, repeats allowed) as dequant rows.
    pub fn gather(&self, rows: &[u64]) -> Result<Vec<u16>, GpuError> {
        if let Some(&index) = rows.iter().find(|&&r| r >= self.shape.rows) {
            return Err(ParamError::RowIndex { index, rows: self.shape.rows }.into());
        }
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let s = &self.gpu.stream;
        let sel = s.clone_htod(rows)?;
        let mut out = s.alloc_zeros::<u16>(rows.len() * self.row_stride())?;
        self.expand(Some(&sel), rows.len(), &mut out)?;
        Ok(s.clone_dtoh(&out)?)
    }

    fn check_len(what: &'static str, got: usize, expected: usize) -> Result<(), GpuError> {
        if got != expected {
            return Err(ParamError::Length { what, got: got as u64, expected: expected as u64 }.into());
        }
        Ok(())
    }

    /// Uploads `batch` f32 activation vectors of K values each, zero-padded to Kp.
    pub fn activations_f32(&self, x: &[f32], batch: usize) -> Result<DeviceActivations, GpuError> {
        let (k, kp) = (self.geo.cols as usize, self.geo.kp as usize);
        if batch == 0 {
            return Err(ParamError::EmptyBatch.into());
        }
        Self::check_len("activations", x.len(), batch * k)?;
        let mut padded = vec![0f32; batch * kp];
        for (dst, src) in padded.chunks_exact_mut(kp).zip(x.chunks_exact(k)) {
            dst[..k].copy_from_slice(src);
        }
        Ok(DeviceActivations::F32 { buf: self.gpu.stream.clone_htod(&padded)?, batch, kp })
    }

    /// Uploads `batch` BF16 activation vectors (raw words), zero-padded to Kp.
    pub fn activations_bf16(&self, x: &[u16], batch: usize) -> Result<DeviceActivations, GpuError> {
        let (k, kp) = (self.geo.cols as usize, self.geo.kp as usize);
        if batch == 0 {
            return Err(ParamError::EmptyBatch.into());
        }
        Self::check_len("activations", x.len(), batch * k)?;
        let mut padded = vec![0u16; batch * kp];
        for (dst, src) in padded.chunks_exact_mut(kp).zip(x.chunks_exact(k)) {
            dst[..k].copy_from_slice(src);
        }
        Ok(DeviceActivations::Bf16 { buf: self.gpu.stream.clone_htod(&padded)?, batch, kp })
    }

    /// Spec 15.4: y = scale * (W x) + bias for every vector of `x`, written to `y` (batch x M
    /// elements of `kind`: f32 or BF16 words). Batch > 1: version 7 decodes once per group of up to
    /// 4 columns (`fused_batch`), other versions launch once per column; each column follows the
    /// batch-1 canonical order either way, so the result is exact (spec 15.4.7).
    /// A layout 1 matrix with `bounded` set and BF16 activations runs version 9 on tensor cores
    /// instead, up to 16 columns per decode, each output within the bound of spec 19.
    fn matvec_raw(
        &self,
        x: &DeviceActivations,
        bias: Option<&CudaSlice<f32>>,
        kind: OutputKind,
        y: u64,
    ) -> Result<(), GpuError> {
        let s = &self.gpu.stream;
        let m = self.geo.rows;
        if let Some(b) = bias {
            Self::check_len("bias", b.len(), m as usize)?;
        }
        let (x_base, x_elem, kp, batch, xname) = match x {
            DeviceActivations::F32 { buf, batch, kp } => (buf.device_ptr(s).0, 4u64, *kp, *batch, "xf32"),
            DeviceActivations::Bf16 { buf, batch, kp } => (buf.device_ptr(s).0, 2u64, *kp, *batch, "xbf16"),
        };
        Self::check_len("padded activations", kp, self.geo.kp as usize)?;
        if self.bounded && self.mode.layout == Layout::Fragment16 && x_elem == 2 {
            return self.matvec9(x_base, kp as u64, batch, bias, i32::from(kind == OutputKind::Bf16), y);
        }
        let (v2, v7) = (self.v2(), self.v7());
        // Launches: (first column, columns). Version 7 with `fused_batch` decodes each weight once
        // for up to V7_MAX_COLUMNS columns (groups of 4, then 2, then 1); otherwise one launch per
        // column. Either way each column is the exact batch-1 computation (spec 15.4.7).
        let mut groups = Vec::new();
        let mut col = 0usize;
        while col < batch {
            let n = if v7 && self.fused_batch { [4, 2, 1].into_iter().find(|&n| n <= batch - col).unwrap_or(1) } else { 1 };
            groups.push((col as u64, n));
            col += n;
        }
        let (data, _g1) = self.data.device_ptr(s);
        let (bases, _g2) = self.bases.device_ptr(s);
        let (hdr, _g3) = self.hdr.device_ptr(s);
        let (lut, _g4) = if v7 { self.pairs.device_ptr(s) } else { self.lut.device_ptr(s) };
        let (low, _g5) = self.low.device_ptr(s);
        let scale = self.scale.as_ref().map_or(0u64, |v| v.device_ptr(s).0);
        let (partial, _g6) = self.partial.device_ptr(s);
        let (count, _g7) = self.count.device_ptr(s);
        let bias_ptr = bias.map_or(0u64, |v| v.device_ptr(s).0);
        let out_bf16: i32 = i32::from(kind == OutputKind::Bf16);
        let y_elem: u64 = if kind == OutputKind::Bf16 { 2 } else { 4 };
        let geo = Geo { flags: self.flags(), ..self.geo };
        for (col, n) in groups {
            let name = match (v2, v7, self.kernel_version, n) {
                (_, true, _, 1) => format!("nwc_matvec7_{}_{xname}", self.suffix()),
                (_, true, _, n) => format!("nwc_matvec7x{n}_{}_{xname}", self.suffix()),
                (false, _, _, _) => format!("nwc_matvec_{}_{xname}", self.suffix()),
                (true, _, 6, _) => format!("nwc_matvec6_{}_{xname}", self.suffix()),
                (true, _, _, _) => format!("nwc_matvec2_{}_{xname}", self.suffix()),
            };
            let f = self.gpu.function(&name);
            // Version 2: min(8, CB) warps per CTA so no warp idles on narrow matrices, and a resident grid.
            let (threads, grid, smem) = if v7 {
                (V7_THREADS, self.v7_grid(&name)?, V7_SMEM)
            } else if v2 {
                let threads = 32 * self.geo.col_blocks.min(u64::from(WARPS)) as u32;
                let smem = self.v2_smem(threads, self.kernel_version);
                (threads, self.resident_grid(&name, threads, smem, self.geo.row_blocks)?, smem)
            } else {
                (THREADS, self.grid(self.geo.row_blocks), 0)
            };
            let cfg = LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: smem };
            let x_ptr = x_base + col * kp as u64 * x_elem;
            let y_ptr = y + col * m * y_elem;
            let mut b = s.launch_builder(f);
            b.arg(&data).arg(&bases).arg(&hdr).arg(&lut).arg(&low).arg(&scale).arg(&x_ptr).arg(&bias_ptr).arg(&y_ptr).arg(&out_bf16).arg(&geo);
            if v7 {
                b.arg(&partial).arg(&count);
            }
            // SAFETY: the argument list matches NWC_MATVEC (kernels/nwc.cu), NWC_MATVEC2 (kernels/nwc_v2.cu) and NWC_MATVEC7
            // (kernels/nwc_v7.cu, which also takes the scratch: 8 floats per block and column for up to V7_MAX_COLUMNS
            // columns, one zeroed counter per row block); matrix pointers are live allocations padded by the spec 9.3/9.4
            // slacks; x_ptr points at `n` vectors of Kp activations (vectors col.. of a batch x Kp buffer, length checked
            // above, col + n <= batch); bias has M values or is null; the caller of matvec_raw guarantees `y` holds
            // batch x M outputs of `kind` (the safe wrappers below allocate exactly that), so y_ptr has n x M of them;
            // the matrix passed the validity rules.
            unsafe { b.launch(cfg) }?;
        }
        Ok(())
    }

    /// Launches a timing probe (docs/gpu.md, "Where the time goes") on this matrix, which must be
    /// BF16 layout 0, with BF16 activations of batch 1. The probes compute nothing usable: they
    /// exist so `nwc-gpu-bench --ceiling` can time version 7's matvec with stages left out.
    pub fn probe(&self, probe: Probe, x: &DeviceActivations) -> Result<(), GpuError> {
        let s = &self.gpu.stream;
        if self.mode != Mode::BF16_L0 {
            return Err(GpuError::Unsupported("timing probes take BF16 layout 0 matrices"));
        }
        let DeviceActivations::Bf16 { buf, batch: 1, kp } = x else {
            return Err(GpuError::Unsupported("timing probes take one vector of BF16 activations"));
        };
        Self::check_len("padded activations", *kp, self.geo.kp as usize)?;
        let (data, _g1) = self.data.device_ptr(s);
        let (low, _g5) = self.low.device_ptr(s);
        let (partial, _g6) = self.partial.device_ptr(s);
        let name = match probe {
            Probe::Read => {
                let f = self.gpu.function(crate::kernels::PROBE_READ_KERNEL);
                let (na, nb) = ((self.data.len() / 16) as u64, (self.low.len() / 16) as u64);
                let cfg = LaunchConfig { grid_dim: (self.gpu.sm_count * 8, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
                let mut b = s.launch_builder(f);
                b.arg(&data).arg(&na).arg(&low).arg(&nb).arg(&partial);
                // SAFETY: nwc_probe_read(a, na, b, nb, sink) reads na and nb 16-byte words of `data` and
                // `low` (floor of their byte lengths over 16; cudarc allocations are 256-byte aligned)
                // and may write one word of the partial scratch.
                unsafe { b.launch(cfg) }?;
                return Ok(());
            }
            Probe::Decode => "nwc_probe7_decode",
            Probe::DecodeClz => "nwc_probe7_decode_clz",
            Probe::Weights => "nwc_probe7_weights",
            Probe::Fma => "nwc_probe7_fma",
            Probe::DecodeFlat => "nwc_probe7_decode_flat",
            Probe::DecodeReg => "nwc_probe7_decode_reg",
            Probe::DecodeRep => crate::kernels::PROBE_REP_KERNEL,
        };
        let (bases, _g2) = self.bases.device_ptr(s);
        let (hdr, _g3) = self.hdr.device_ptr(s);
        let (pairs, _g4) = self.pairs.device_ptr(s);
        let (count, _g7) = self.count.device_ptr(s);
        let (x_ptr, _g8) = buf.device_ptr(s);
        let (null, zero) = (0u64, 0i32);
        let smem = if probe == Probe::DecodeRep { crate::kernels::PROBE_REP_SMEM } else { V7_SMEM };
        let grid = self.warp_per_block_grid(name, V7_THREADS, smem)?;
        let cfg = LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (V7_THREADS, 1, 1), shared_mem_bytes: smem };
        let mut b = s.launch_builder(self.gpu.function(name));
        b.arg(&data).arg(&bases).arg(&hdr).arg(&pairs).arg(&low).arg(&null).arg(&x_ptr).arg(&null).arg(&null).arg(&zero).arg(&self.geo);
        b.arg(&partial).arg(&count);
        // SAFETY: the argument list matches NWC_PROBE7 in kernels/nwc_v7.cu (NWC_MATVEC7's); the
        // probes read what version 7 reads (matrix fields padded by the spec 9.3/9.4 slacks, Kp
        // activations, length checked above), write no output (y and bias are null and unused), may
        // write one partial of the scratch, and do not touch the counters.
        unsafe { b.launch(cfg) }?;
        Ok(())
    }

    /// The dequant memory floor, a timing probe like [`GpuMatrix::probe`]: reads every stored byte
    /// of `data` and `low` once and writes `out` (M x K16 words, a dequant's output) once, both
    /// coalesced, with no decoding; what `out` then holds is meaningless.
    pub fn probe_read_write(&self, out: &mut CudaSlice<u16>) -> Result<(), GpuError> {
        let s = &self.gpu.stream;
        Self::check_len("dequant output", out.len(), (self.geo.rows * self.geo.k16) as usize)?;
        let (data, _g1) = self.data.device_ptr(s);
        let (low, _g2) = self.low.device_ptr(s);
        let (partial, _g3) = self.partial.device_ptr(s);
        let (out_ptr, _g4) = out.device_ptr(s);
        let (na, nb, nout) = ((self.data.len() / 16) as u64, (self.low.len() / 16) as u64, (out.len() / 8) as u64);
        let cfg = LaunchConfig { grid_dim: (self.gpu.sm_count * 8, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        let mut b = s.launch_builder(self.gpu.function(crate::kernels::PROBE_READ_WRITE_KERNEL));
        b.arg(&data).arg(&na).arg(&low).arg(&nb).arg(&out_ptr).arg(&nout).arg(&partial);
        // SAFETY: nwc_probe_read_write(a, na, b, nb, out, nout, sink) reads na and nb 16-byte words
        // of `data` and `low` (floor of their byte lengths over 16), writes nout = floor(len / 8)
        // 16-byte words of `out` (a live allocation of len u16 values, 256-byte aligned), and may
        // write one word of the partial scratch.
        unsafe { b.launch(cfg) }?;
        Ok(())
    }

    /// Spec 15.4 into a caller's f32 buffer of batch x M values (no allocation: for timing).
    pub fn matvec_into_f32(&self, x: &DeviceActivations, bias: Option<&CudaSlice<f32>>, y: &mut CudaSlice<f32>) -> Result<(), GpuError> {
        Self::check_len("output", y.len(), x.batch() * self.geo.rows as usize)?;
        let s = &self.gpu.stream;
        self.matvec_raw(x, bias, OutputKind::F32, y.device_ptr(s).0)
    }

    /// Spec 15.4 into a caller's BF16 buffer of batch x M words.
    pub fn matvec_into_bf16(&self, x: &DeviceActivations, bias: Option<&CudaSlice<f32>>, y: &mut CudaSlice<u16>) -> Result<(), GpuError> {
        Self::check_len("output", y.len(), x.batch() * self.geo.rows as usize)?;
        let s = &self.gpu.stream;
        self.matvec_raw(x, bias, OutputKind::Bf16, y.device_ptr(s).0)
    }

    /// Spec 15.4 (or spec 19 when `bounded` applies) into a new device buffer of batch x M f32 values.
    pub fn matvec_device(&self, x: &DeviceActivations, bias: Option<&CudaSlice<f32>>) -> Result<CudaSlice<f32>, GpuError> {
        let s = &self.gpu.stream;
        let y = s.alloc_zeros::<f32>(x.batch() * self.geo.rows as usize)?;
        self.matvec_raw(x, bias, OutputKind::F32, y.device_ptr(s).0)?;
        Ok(y)
    }

    /// Spec 15.4 (or spec 19 when `bounded` applies) into a new device buffer of batch x M BF16 words.
    pub fn matvec_device_bf16(&self, x: &DeviceActivations, bias: Option<&CudaSlice<f32>>) -> Result<CudaSlice<u16>, GpuError> {
        let s = &self.gpu.stream;
        let y = s.alloc_zeros::<u16>(x.batch() * self.geo.rows as usize)?;
        self.matvec_raw(x, bias, OutputKind::Bf16, y.device_ptr(s).0)?;
        Ok(y)
    }

    fn upload_bias(&self, bias: Option<&[f32]>) -> Result<Option<CudaSlice<f32>>, GpuError> {
        match bias {
            Some(b) => {
                Self::check_len("bias", b.len(), self.geo.rows as usize)?;
                Ok(Some(self.gpu.stream.clone_htod(b)?))
            }
            None => Ok(None),
        }
    }

    /// Host convenience: f32 activations in, f32 outputs out (same contract as
    /// `DecodedMatrix::matvec`).
    pub fn matvec(&self, x: &[f32], batch: usize, bias: Option<&[f32]>) -> Result<Vec<f32>, GpuError> {
        let xd = self.activations_f32(x, batch)?;
        let b = self.upload_bias(bias)?;
        let y = self.matvec_device(&xd, b.as_ref())?;
        Ok(self.gpu.stream.clone_dtoh(&y)?)
    }

    /// Host convenience: f32 activations in, BF16 outputs out (`DecodedMatrix::matvec_bf16`).
    pub fn matvec_bf16(&self, x: &[f32], batch: usize, bias: Option<&[f32]>) -> Result<Vec<u16>, GpuError> {
        let xd = self.activations_f32(x, batch)?;
        let b = self.upload_bias(bias)?;
        let y = self.matvec_device_bf16(&xd, b.as_ref())?;
        Ok(self.gpu.stream.clone_dtoh(&y)?)
    }

    /// Host convenience: BF16 activations (raw words) in, f32 or BF16 outputs (as f32 bits or
    /// BF16 words widened into u32) out.
    pub fn matvec_xbf16(&self, x: &[u16], batch: usize, bias: Option<&[f32]>, kind: OutputKind) -> Result<Vec<u32>, GpuError> {
        let xd = self.activations_bf16(x, batch)?;
        let b = self.upload_bias(bias)?;
        Ok(match kind {
            OutputKind::F32 => self.gpu.stream.clone_dtoh(&self.matvec_device(&xd, b.as_ref())?)?.into_iter().map(f32::to_bits).collect(),
            OutputKind::Bf16 => self.gpu.stream.clone_dtoh(&self.matvec_device_bf16(&xd, b.as_ref())?)?.into_iter().map(u32::from).collect(),
        })
    }
}
