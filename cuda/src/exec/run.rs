//! Matvec, dequant and gather on an execution-layout matrix: the matvec dispatch (exact plans in
//! `plan`, tensor cores in `tensor`), the dequant and gather launches, and the host conveniences.

use super::plan::{Plan, ITEM_ROWS};
use super::release::bf16_entry;
use super::{check_len, ExecActivations, ExecDequantKernel, GpuExecMatrix};
use crate::host_rows::{dequant_to_host, gather_to_host};
use crate::kernels::{EXEC_STAGE, EXEC_THREADS};
use crate::{GpuError, OutputKind};
use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut, LaunchConfig, PushKernelArg};
use nwc_reference::ParamError;

impl GpuExecMatrix {
    /// Spec 20.15 into `y` (batch x M outputs of `kind`): the exact class (on f32 activations, or
    /// on BF16 ones, which are their f32 values), or spec 19 with
    /// [`ExecMatvecKernel::Bounded`](super::ExecMatvecKernel::Bounded) and BF16 activations.
    pub fn matvec_raw(&self, x: &ExecActivations, bias: Option<&CudaSlice<f32>>, kind: OutputKind, y: u64) -> Result<(), GpuError> {
        let s = &self.gpu.stream;
        let m = self.shape.rows;
        if let Some(b) = bias {
            check_len("bias", b.len(), m as usize)?;
        }
        let bias_guard = bias.map(|v| v.device_ptr(s));
        let bias_ptr = bias_guard.as_ref().map_or(0, |(p, _)| *p);
        let out_bf16 = i32::from(kind == OutputKind::Bf16);
        let y_elem: u64 = if kind == OutputKind::Bf16 { 2 } else { 4 };
        match (x, self.matvec_kernel) {
            (ExecActivations::Bf16 { buf, batch }, k) if !k.is_exact() => {
                check_len("padded activations", buf.len(), batch * self.k16 as usize)?;
                let (xp, _g) = buf.device_ptr(s);
                self.tensor_matvec(k, xp, *batch, bias_ptr, out_bf16, y, y_elem)
            }
            (ExecActivations::F32 { buf, batch }, k) => {
                check_len("padded activations", buf.len(), batch * self.k16 as usize)?;
                let (xp, _g) = buf.device_ptr(s);
                let mut col = 0usize;
                while col < *batch {
                    let left = (batch - col) as u64;
                    let (plan, n) = self.exact_launch_plan(k, left)?;
                    self.exact_launch(&plan, xp + col as u64 * self.k16 * 4, n as u32, bias_ptr, out_bf16, y + col as u64 * m * y_elem)?;
                    col += n as usize;
                }
                Ok(())
            }
            (ExecActivations::Bf16 { buf, batch }, k) => {
                // the exact class on BF16 activations: their f32 values, exactly (spec 20.15 is
                // defined on f32; a BF16 value is one). Where every launch has a `_xbf16` entry
                // point (the strip kernels' one column, the bench's CTA kernel on several
                // columns) it widens them as it loads; otherwise they are widened into f32 first.
                // Production batches of more than one column go straight to the widening: their
                // plans are the stream kernels', which have no BF16 entry point, and would be
                // chosen twice.
                check_len("padded activations", buf.len(), batch * self.k16 as usize)?;
                let mut launches = Vec::new();
                let mut col = 0usize;
                while col < *batch && (*batch == 1 || k.batches_on_strip()) {
                    let (plan, n) = self.exact_launch_plan(k, (batch - col) as u64)?;
                    match bf16_entry(plan.name) {
                        Some(name) => launches.push((Plan { name, ..plan }, col, n)),
                        None => break,
                    }
                    col += n as usize;
                }
                if col >= *batch && !launches.is_empty() {
                    let (xp, _g) = buf.device_ptr(s);
                    for (plan, col, n) in launches {
                        let (x_col, y_col) = (xp + col as u64 * self.k16 * 2, y + col as u64 * m * y_elem);
                        self.exact_launch(&plan, x_col, n as u32, bias_ptr, out_bf16, y_col)?;
                    }
                    return Ok(());
                }
                let wide = ExecActivations::F32 { buf: self.widen_bf16(buf)?, batch: *batch };
                self.matvec_raw(&wide, bias, kind, y)
            }
        }
    }

    /// BF16 activations widened to f32 (`exec_widen_bf16`), in a buffer of the stream's
    /// allocator (freed in stream order after the matvec that reads it).
    fn widen_bf16(&self, x: &CudaSlice<u16>) -> Result<CudaSlice<f32>, GpuError> {
        let s = &self.gpu.stream;
        let n = x.len();
        // SAFETY: exec_widen_bf16 writes every element before any later kernel reads it (stream
        // order).
        let mut out = unsafe { s.alloc::<f32>(n) }?;
        if n == 0 {
            return Ok(out);
        }
        let (xp, gx) = x.device_ptr(s);
        let (op, go) = out.device_ptr_mut(s);
        let n64 = n as u64;
        let cfg = LaunchConfig { grid_dim: (n64.div_ceil(256) as u32, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        let mut b = s.launch_builder(self.gpu.function("exec_widen_bf16")?);
        b.arg(&xp).arg(&op).arg(&n64);
        // SAFETY: matches exec_widen_bf16(const u16*, float*, u64): n words in, n floats out.
        unsafe { b.launch(cfg) }?;
        drop((gx, go));
        Ok(out)
    }

    /// Spec 20.14 dequant (or gather of `rows`, each < M) into `out`, rows of stride K16.
    fn expand(&self, rows: Option<&CudaSlice<u32>>, nrows: usize, out: &mut CudaSlice<u16>) -> Result<(), GpuError> {
        if out.len() < nrows * self.row_stride() {
            return Err(
                ParamError::Length { what: "dequant output", got: out.len() as u64, expected: (nrows * self.row_stride()) as u64 }.into()
            );
        }
        if nrows == 0 {
            return Ok(());
        }
        let s = &self.gpu.stream;
        let f = self.ptrs();
        let rows_guard = rows.map(|r| r.device_ptr(s));
        let rows_ptr = rows_guard.as_ref().map_or(0, |(p, _)| *p);
        let (out_ptr, _go) = out.device_ptr(s);
        let (k32, n32, ldo) = (self.shape.cols as u32, nrows as u32, self.k16);
        // The rows kernel (dequant only) takes the argument list of EXEC_DEQUANT; the item
        // pipeline (gather, and dequant by name) the same list and its warps per row group.
        let (name, cfg, groups) = if self.dequant_kernel == ExecDequantKernel::Rows && rows.is_none() {
            let items = nrows as u64 * self.col_tiles;
            let grid = items.div_ceil(16).max(1) as u32;
            ("exec_dequant_rows", LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 }, None)
        } else {
            let name = "exec_dequant_d4";
            let smem = (EXEC_THREADS / 32) * 4 * EXEC_STAGE;
            let per_sm = u64::from(self.gpu.ctas_per_sm(name, EXEC_THREADS, smem)?);
            let row_groups = (nrows as u64).div_ceil(ITEM_ROWS);
            let w = u64::from(EXEC_THREADS / 32);
            let g = u64::from(self.groups(row_groups, u64::from(self.gpu.sm_count) * per_sm * w)).min(w);
            let grid = (u64::from(self.gpu.sm_count) * per_sm).min(row_groups.div_ceil(w / g)).max(1) as u32;
            (name, LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (EXEC_THREADS, 1, 1), shared_mem_bytes: smem }, Some(g as u32))
        };
        let mut b = s.launch_builder(self.gpu.function(name)?);
        b.arg(&f.sm).arg(&f.codes).arg(&f.base).arg(&f.esc_start).arg(&f.esc).arg(&k32).arg(&rows_ptr).arg(&n32).arg(&out_ptr).arg(&ldo);
        if let Some(g) = &groups {
            b.arg(g);
        }
        // SAFETY: the argument lists of EXEC_DEQUANT and EXEC_DQ3 (kernels/exec_dequant.cu); rows
        // (if any) holds nrows indices < M (gather_into's contract), out nrows x K16 words
        // (checked above).
        unsafe { b.launch(cfg) }?;
        Ok(())
    }

    /// Spec 20.14 into a device buffer of at least M x K16 words (pad columns 0).
    pub fn dequant_into(&self, out: &mut CudaSlice<u16>) -> Result<(), GpuError> {
        self.expand(None, self.shape.rows as usize, out)
    }

    /// Spec 20.14: the whole matrix as BF16 words, M rows of stride K16 (pad columns 0).
    pub fn dequant(&self) -> Result<Vec<u16>, GpuError> {
        dequant_to_host(&self.gpu, self.shape.rows, self.row_stride(), |out| self.dequant_into(out))
    }

    /// Spec 20.14 gather: the given rows (any order, repeats allowed) as dequant rows.
    pub fn gather(&self, rows: &[u64]) -> Result<Vec<u16>, GpuError> {
        // SAFETY: gather_to_host checks every index against M before the kernel runs (M <= 2^31,
        // spec 3.2, so each fits a u32).
        gather_to_host(&self.gpu, rows, self.shape.rows, self.row_stride(), |r| r as u32, |sel, out| unsafe { self.gather_into(sel, out) })
    }

    /// Spec 20.14 gather on the device: the rows `rows` names (any order, repeats allowed) into
    /// `out` (at least `rows.len()` x K16 words, row stride K16, pad columns 0), with no host
    /// round trip, so a framework can capture it in a CUDA graph (the execution layout's
    /// counterpart of [`crate::GpuMatrix::gather_into`]). Indices are u32, the kernel's: every
    /// row index fits one (M <= 2^31, spec 3.2). [`GpuExecMatrix::gather`] runs through here, so
    /// the conformance checks of gather cover this path.
    ///
    /// # Safety
    /// Every index in `rows` must be below M: the kernel reads the fields of the rows it is
    /// given, and an index is not checked on the device. ([`GpuExecMatrix::gather`] checks
    /// indices given on the host.)
    pub unsafe fn gather_into(&self, rows: &CudaSlice<u32>, out: &mut CudaSlice<u16>) -> Result<(), GpuError> {
        if rows.is_empty() {
            return Ok(());
        }
        if u32::try_from(rows.len()).is_err() {
            // the kernel counts rows in a u32: refuse rather than write a partial output
            return Err(GpuError::Unsupported("execution-layout gather: at most 2^32 - 1 rows per call"));
        }
        self.expand(Some(rows), rows.len(), out)
    }

    /// Spec 20.15 into a caller's BF16 buffer of batch x M words (no allocation: for timing).
    pub fn matvec_into_bf16(&self, x: &ExecActivations, bias: Option<&CudaSlice<f32>>, y: &mut CudaSlice<u16>) -> Result<(), GpuError> {
        check_len("output", y.len(), x.batch() * self.shape.rows as usize)?;
        let (yp, _g) = y.device_ptr(&self.gpu.stream);
        self.matvec_raw(x, bias, OutputKind::Bf16, yp)
    }

    /// Spec 20.15 into a caller's f32 buffer of batch x M values.
    pub fn matvec_into_f32(&self, x: &ExecActivations, bias: Option<&CudaSlice<f32>>, y: &mut CudaSlice<f32>) -> Result<(), GpuError> {
        check_len("output", y.len(), x.batch() * self.shape.rows as usize)?;
        let (yp, _g) = y.device_ptr(&self.gpu.stream);
        self.matvec_raw(x, bias, OutputKind::F32, yp)
    }

    fn upload_bias(&self, bias: Option<&[f32]>) -> Result<Option<CudaSlice<f32>>, GpuError> {
        match bias {
            Some(b) => {
                check_len("bias", b.len(), self.shape.rows as usize)?;
                Ok(Some(self.gpu.stream.clone_htod(b)?))
            }
            None => Ok(None),
        }
    }

    fn run_host<T: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits + Default + Clone>(
        &self,
        x: &ExecActivations,
        bias: Option<&[f32]>,
        kind: OutputKind,
    ) -> Result<Vec<T>, GpuError> {
        let s = &self.gpu.stream;
        let b = self.upload_bias(bias)?;
        let y = s.alloc_zeros::<T>(x.batch() * self.shape.rows as usize)?;
        {
            let (yp, _g) = y.device_ptr(s);
            self.matvec_raw(x, b.as_ref(), kind, yp)?;
        }
        Ok(s.clone_dtoh(&y)?)
    }

    /// Host convenience: f32 activations in, f32 outputs out (`ExecDecoded::matvec`). With
    /// [`ExecMatvecKernel::Bounded`](super::ExecMatvecKernel::Bounded), activations that are all BF16 values run on tensor cores.
    pub fn matvec(&self, x: &[f32], batch: usize, bias: Option<&[f32]>) -> Result<Vec<f32>, GpuError> {
        let xd = self.activations_for(x, batch)?;
        self.run_host::<f32>(&xd, bias, OutputKind::F32)
    }

    /// Host convenience: f32 activations in, BF16 outputs out (`ExecDecoded::matvec_bf16`).
    pub fn matvec_bf16(&self, x: &[f32], batch: usize, bias: Option<&[f32]>) -> Result<Vec<u16>, GpuError> {
        let xd = self.activations_for(x, batch)?;
        self.run_host::<u16>(&xd, bias, OutputKind::Bf16)
    }

    /// f32 activations for the exact kernels; BF16 words for the bounded kernel when every value
    /// is a BF16 value (spec 19.2 domain), f32 otherwise (the exact class, as format 10 does).
    fn activations_for(&self, x: &[f32], batch: usize) -> Result<ExecActivations, GpuError> {
        if !self.matvec_kernel.is_exact() && x.iter().all(|v| v.to_bits() & 0xffff == 0) {
            let words: Vec<u16> = x.iter().map(|v| (v.to_bits() >> 16) as u16).collect();
            return self.activations_bf16(&words, batch);
        }
        self.activations_f32(x, batch)
    }
}
