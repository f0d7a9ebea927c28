//! Bench-only launches (feature `bench`, kernels/bench/): the superseded "version 6" matvec and
//! "version 7" dequant that nwc-gpu-bench times beside the production kernels, and the timing
//! probes of `nwc-gpu-bench --ceiling` (docs/gpu-history.md, "Where the time goes").

use super::exact::Columns;
use super::fields::Table;
use super::{DeviceActivations, GpuMatrix};
use crate::kernels::{staged_warp_smem, EXACT_SMEM, EXACT_THREADS, PROBE_REP_SMEM, WARPS};
use crate::GpuError;
use cudarc::driver::{CudaSlice, DevicePtr, LaunchConfig, PushKernelArg};
use nwc_reference::{ElemType, Mode};

/// The timing probes of [`GpuMatrix::probe`]: the layout 0 exact matvec at batch 1 with stages
/// left out, and the memory floor.
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

impl GpuMatrix {
    /// "Version 6" (layout 0): min(8, CB) warps per CTA so no warp idles on narrow matrices, one
    /// staging buffer per warp, a resident grid; one column per launch.
    pub(super) fn staged_matvec(&self, c: &Columns) -> Result<(), GpuError> {
        let s = &self.gpu.stream;
        let name = format!("bench_matvec_v6_{}_{}", self.suffix(), c.xname);
        let threads = 32 * self.geo.col_blocks.min(u64::from(WARPS)) as u32;
        let smem = threads / 32 * staged_warp_smem(self.mode.elem == ElemType::Fp8E4m3);
        let grid = self.resident_grid(&name, threads, smem, self.geo.row_blocks)?;
        let cfg = LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: smem };
        let p = self.dev.ptrs(s);
        let mut b = s.launch_builder(self.gpu.function(&name)?);
        p.push_stream(&mut b, Table::Stored);
        b.arg(&p.scale).arg(&c.x).arg(&c.bias).arg(&c.y).arg(&c.out_bf16).arg(&self.geo);
        // SAFETY: the argument list matches NWC_MATVEC_V6 (kernels/bench/versions.cu); matrix
        // pointers are live allocations padded by the spec 9.5/9.6 slacks; c.x points at one
        // vector of Kp activations, c.y at M outputs of the kind out_bf16 says (matvec_raw's
        // contract); bias has M values or is null; the matrix passed the validity rules.
        unsafe { b.launch(cfg) }?;
        Ok(())
    }

    /// "Version 7" dequant (layout 0): the pair-table decoder, one warp per block.
    pub(super) fn dequant_pair_table(&self, out: &mut CudaSlice<u16>) -> Result<(), GpuError> {
        let name = if self.mode.elem == ElemType::Bf16 { "bench_dequant_v7_bf16_l0" } else { "bench_dequant_v7_fp8_l0" };
        self.dequant_launch(name, EXACT_THREADS, EXACT_SMEM, Table::Pairs, out)
    }

    /// Launches a timing probe on this matrix, which must be BF16 layout 0, with BF16 activations
    /// of batch 1. The probes compute nothing usable: they exist so `nwc-gpu-bench --ceiling` can
    /// time the exact layout 0 matvec with stages left out.
    pub fn probe(&self, probe: Probe, x: &DeviceActivations) -> Result<(), GpuError> {
        let s = &self.gpu.stream;
        if self.mode != Mode::BF16_L0 {
            return Err(GpuError::Unsupported("timing probes take BF16 layout 0 matrices"));
        }
        let DeviceActivations::Bf16 { buf, batch: 1, kp } = x else {
            return Err(GpuError::Unsupported("timing probes take one vector of BF16 activations"));
        };
        Self::check_len("padded activations", *kp, self.geo.kp as usize)?;
        let p = self.dev.ptrs(s);
        let name = match probe {
            Probe::Read => {
                let (na, nb) = ((self.dev.data.len() / 16) as u64, (self.dev.low.len() / 16) as u64);
                let cfg = LaunchConfig { grid_dim: (self.gpu.sm_count * 8, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
                let mut b = s.launch_builder(self.gpu.function("bench_probe_read")?);
                b.arg(&p.data).arg(&na).arg(&p.low).arg(&nb).arg(&p.partial);
                // SAFETY: bench_probe_read(a, na, b, nb, sink) reads na and nb 16-byte words of
                // `data` and `low` (floor of their byte lengths over 16; cudarc allocations are
                // 256-byte aligned) and may write one word of the partial scratch.
                unsafe { b.launch(cfg) }?;
                return Ok(());
            }
            Probe::Decode => "bench_probe_decode",
            Probe::DecodeClz => "bench_probe_decode_clz",
            Probe::Weights => "bench_probe_weights",
            Probe::Fma => "bench_probe_fma",
            Probe::DecodeFlat => "bench_probe_decode_flat",
            Probe::DecodeReg => "bench_probe_decode_reg",
            Probe::DecodeRep => "bench_probe_decode_rep",
        };
        let (x_ptr, _gx) = buf.device_ptr(s);
        let (null, zero) = (0u64, 0i32);
        let smem = if probe == Probe::DecodeRep { PROBE_REP_SMEM } else { EXACT_SMEM };
        let grid = self.warp_per_block_grid(name, EXACT_THREADS, smem)?;
        let cfg = LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (EXACT_THREADS, 1, 1), shared_mem_bytes: smem };
        let mut b = s.launch_builder(self.gpu.function(name)?);
        p.push_stream(&mut b, Table::Pairs);
        b.arg(&null).arg(&x_ptr).arg(&null).arg(&null).arg(&zero).arg(&self.geo).arg(&p.partial).arg(&p.count);
        // SAFETY: the argument list matches NWC_PROBE_STAGES in kernels/bench/probes.cu (the
        // exact layout 0 matvec's); the probes read what that matvec reads (matrix fields padded
        // by the spec 9.5/9.6 slacks, Kp activations, length checked above), write no output (y
        // and bias are null and unused), may write one partial of the scratch, and do not touch
        // the counters.
        unsafe { b.launch(cfg) }?;
        Ok(())
    }

    /// The dequant memory floor, a timing probe like [`GpuMatrix::probe`]: reads every stored byte
    /// of `data` and `low` once and writes `out` (M x K16 words, a dequant's output) once, both
    /// coalesced, with no decoding; what `out` then holds is meaningless.
    pub fn probe_read_write(&self, out: &mut CudaSlice<u16>) -> Result<(), GpuError> {
        let s = &self.gpu.stream;
        Self::check_len("dequant output", out.len(), (self.geo.rows * self.geo.k16) as usize)?;
        let p = self.dev.ptrs(s);
        let (out_ptr, _g) = out.device_ptr(s);
        let (na, nb, nout) = ((self.dev.data.len() / 16) as u64, (self.dev.low.len() / 16) as u64, (out.len() / 8) as u64);
        let cfg = LaunchConfig { grid_dim: (self.gpu.sm_count * 8, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        let mut b = s.launch_builder(self.gpu.function("bench_probe_read_write")?);
        b.arg(&p.data).arg(&na).arg(&p.low).arg(&nb).arg(&out_ptr).arg(&nout).arg(&p.partial);
        // SAFETY: bench_probe_read_write(a, na, b, nb, out, nout, sink) reads na and nb 16-byte
        // words of `data` and `low` (floor of their byte lengths over 16), writes nout =
        // floor(len / 8) 16-byte words of `out` (a live allocation of len u16 values, 256-byte
        // aligned), and may write one word of the partial scratch.
        unsafe { b.launch(cfg) }?;
        Ok(())
    }
}
