//! Dequant (spec 15.2) and gather (spec 15.3): BF16 rows of stride K16. Dequant runs the kernel
//! of the matrix's layout (kernels/dequant_l0.cu, kernels/dequant_l1.cu); gather runs
//! kernels/gather.cu.

use super::fields::Table;
use super::{DequantKernel, GpuMatrix};
use crate::host_rows::{dequant_to_host, gather_to_host};
use crate::kernels::{staged_warp_smem, BOUNDED_SMEM, BOUNDED_THREADS, THREADS, WARPS};
use crate::GpuError;
use cudarc::driver::{CudaSlice, DevicePtr, LaunchConfig, PushKernelArg};
use nwc_reference::{ElemType, Layout, ParamError};

impl GpuMatrix {
    /// Spec 15.2 into a device buffer of at least M x K16 words.
    pub fn dequant_into(&self, out: &mut CudaSlice<u16>) -> Result<(), GpuError> {
        let rows = self.shape.rows as usize;
        if out.len() < rows * self.row_stride() {
            return Err(
                ParamError::Length { what: "dequant output", got: out.len() as u64, expected: (rows * self.row_stride()) as u64 }.into()
            );
        }
        if self.geo.row_blocks * self.geo.col_blocks == 0 {
            return Ok(());
        }
        match (self.dequant_kernel, self.mode.layout) {
            (DequantKernel::ByLayout, Layout::Rows8) => self.dequant_staged(out),
            (DequantKernel::ByLayout, Layout::Fragment16) => self.dequant_fragment(out),
            #[cfg(feature = "bench")]
            (DequantKernel::Gather, _) => self.gather_kernel(None, rows, out),
            #[cfg(feature = "bench")]
            (DequantKernel::PairTable, _) => self.dequant_pair_table(out),
        }
    }

    /// Spec 15.2: the whole matrix as BF16 words, M rows of stride K16.
    pub fn dequant(&self) -> Result<Vec<u16>, GpuError> {
        dequant_to_host(&self.gpu, self.shape.rows, self.row_stride(), |out| self.dequant_into(out))
    }

    /// Spec 15.3: the given rows (any order, repeats allowed) as dequant rows.
    pub fn gather(&self, rows: &[u64]) -> Result<Vec<u16>, GpuError> {
        gather_to_host(
            &self.gpu,
            rows,
            self.shape.rows,
            self.row_stride(),
            |r| r,
            |sel, out| self.gather_kernel(Some(sel), rows.len(), out),
        )
    }

    /// The gather kernel: the rows `sel` names (each < M, checked by the caller), or every block
    /// when `sel` is None (a dequant), into `out` (at least out_rows x K16 words, checked).
    pub(super) fn gather_kernel(&self, sel: Option<&CudaSlice<u64>>, out_rows: usize, out: &mut CudaSlice<u16>) -> Result<(), GpuError> {
        if out.len() < out_rows * self.row_stride() {
            return Err(ParamError::Length {
                what: "gather output",
                got: out.len() as u64,
                expected: (out_rows * self.row_stride()) as u64,
            }
            .into());
        }
        let s = &self.gpu.stream;
        let tasks: u64 = match sel {
            None => self.geo.row_blocks * self.geo.col_blocks,
            Some(_) => out_rows as u64 * self.geo.col_blocks,
        };
        if tasks == 0 {
            return Ok(());
        }
        let name = format!("nwc_gather_{}", self.suffix());
        let sel_guard = sel.map(|v| v.device_ptr(s));
        let sel_ptr = sel_guard.as_ref().map_or(0, |(p, _)| *p);
        let (out_ptr, _g) = out.device_ptr(s);
        let cfg =
            LaunchConfig { grid_dim: (self.grid(tasks.div_ceil(u64::from(WARPS))), 1, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 };
        let p = self.dev.ptrs(s);
        let mut b = s.launch_builder(self.gpu.function(&name)?);
        p.push_stream(&mut b, Table::Stored);
        b.arg(&sel_ptr).arg(&tasks).arg(&out_ptr).arg(&self.geo);
        // SAFETY: the argument list matches NWC_EXPAND in kernels/gather.cu; every pointer is a
        // live allocation of this matrix (data and low padded by the spec 9.5/9.6 slacks), `sel`
        // holds out_rows indices each < M (checked by the caller) and `out` holds out_rows * K16
        // words (checked above); the matrix passed the reference's validity rules before upload.
        unsafe { b.launch(cfg) }?;
        Ok(())
    }

    /// Layout 0: the staged-reader dequant, one warp per block, one buffer per warp.
    fn dequant_staged(&self, out: &mut CudaSlice<u16>) -> Result<(), GpuError> {
        let name = if self.mode.elem == ElemType::Bf16 { "nwc_dequant_bf16_l0" } else { "nwc_dequant_fp8_l0" };
        let smem = WARPS * staged_warp_smem(self.mode.elem == ElemType::Fp8E4m3);
        self.dequant_launch(name, THREADS, smem, Table::Stored, out)
    }

    /// Layout 1: the fragment decoder of the bounded matvec, written out exactly.
    fn dequant_fragment(&self, out: &mut CudaSlice<u16>) -> Result<(), GpuError> {
        let name = if self.mode.elem == ElemType::Bf16 { "nwc_dequant_bf16_l1" } else { "nwc_dequant_fp8_l1" };
        self.dequant_launch(name, BOUNDED_THREADS, BOUNDED_SMEM, Table::Pairs, out)
    }

    /// A one-warp-per-block dequant kernel `(data, bases, hdr, table, low, out, geo)` on a
    /// resident grid of `threads`-thread CTAs with `smem` bytes of dynamic shared memory.
    pub(super) fn dequant_launch(
        &self,
        name: &str,
        threads: u32,
        smem: u32,
        table: Table,
        out: &mut CudaSlice<u16>,
    ) -> Result<(), GpuError> {
        let s = &self.gpu.stream;
        let grid = self.warp_per_block_grid(name, threads, smem)?;
        let (out_ptr, _g) = out.device_ptr(s);
        let cfg = LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: smem };
        let p = self.dev.ptrs(s);
        let mut b = s.launch_builder(self.gpu.function(name)?);
        p.push_stream(&mut b, table);
        b.arg(&out_ptr).arg(&self.geo);
        // SAFETY: the argument list matches NWC_DEQUANT_STAGED (kernels/dequant_l0.cu, stored
        // table) and NWC_DEQUANT_ENTRY (kernels/pair_decode.cu, pair table); every pointer is a
        // live allocation of this matrix (data and low padded by the spec 9.5/9.6 slacks); `out`
        // holds M * K16 words (checked by dequant_into); the matrix passed the validity rules.
        unsafe { b.launch(cfg) }?;
        Ok(())
    }
}
