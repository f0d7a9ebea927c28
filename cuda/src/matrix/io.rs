//! Activations in, outputs out: the public matvec entry points (device buffers and host
//! conveniences), and the entry points for a caller that owns the stream and the buffers (a
//! framework: [`GpuMatrix::on_stream`], [`GpuMatrix::gather_into`]). The kernel that runs is the
//! matrix's [`super::MatvecKernel`] (`exact.rs`).

use super::{DeviceActivations, GpuMatrix, OutputKind};
use crate::gpu::{Gpu, Resident};
use crate::GpuError;
use cudarc::driver::{CudaSlice, DevicePtr};
use nwc_reference::{EncodedMatrix, ParamError};
use std::sync::Arc;

impl Resident for GpuMatrix {
    fn device_slot(&mut self) -> &mut Arc<Gpu> {
        &mut self.gpu
    }
}

impl GpuMatrix {
    /// Uploads the output of an NWC encoder without decoding it again: the spec 13 validation
    /// of [`GpuMatrix::upload`] is skipped, so loading a model just encoded in this process costs
    /// one encode and one copy instead of an encode, a full decode and a copy.
    ///
    /// # Safety
    /// `m` must satisfy every rule of spec 13, because the kernels rely on them to stay within
    /// the fields: true of what `nwc_reference::encode` or `nwc_fast::encode` returned (the
    /// canonical encoding, spec 4-12), passed on unchanged. Anything read from a file or another
    /// process goes through [`GpuMatrix::upload`].
    pub unsafe fn upload_unvalidated(gpu: &Arc<Gpu>, m: &EncodedMatrix) -> Result<GpuMatrix, GpuError> {
        Self::upload_validated(gpu, m)
    }

    /// Runs `work` with every operation of this matrix issued through `gpu`, a view of the same
    /// device on another stream ([`Gpu::with_borrowed_stream`]: torch's current stream), then
    /// goes back to the matrix's own stream. The device fields stay where they are: nothing is
    /// copied. [`GpuError::Unsupported`] when `gpu` is another device.
    pub fn on_stream<R>(&mut self, gpu: &Arc<Gpu>, work: impl FnOnce(&Self) -> R) -> Result<R, GpuError> {
        crate::gpu::on_view(self, gpu, work)
    }

    /// Spec 15.3 on the device: the rows `rows` names (any order, repeats allowed) into `out`
    /// (at least `rows.len()` x K16 words, row stride K16), with no host round trip, so a
    /// framework can capture it in a CUDA graph.
    ///
    /// # Safety
    /// Every index in `rows` must be below M: the kernel reads the blocks of the rows it is
    /// given, and an index is not checked on the device. ([`GpuMatrix::gather`] checks indices
    /// given on the host.)
    pub unsafe fn gather_into(&self, rows: &CudaSlice<u64>, out: &mut CudaSlice<u16>) -> Result<(), GpuError> {
        if rows.is_empty() {
            return Ok(());
        }
        self.gather_kernel(Some(rows), rows.len(), out)
    }

    /// Uploads `batch` f32 activation vectors of K values each, zero-padded to Kp.
    pub fn activations_f32(&self, x: &[f32], batch: usize) -> Result<DeviceActivations, GpuError> {
        let padded = self.pad(x, batch)?;
        Ok(DeviceActivations::F32 { buf: self.gpu.stream.clone_htod(&padded)?, batch, kp: self.geo.kp as usize })
    }

    /// Uploads `batch` BF16 activation vectors (raw words), zero-padded to Kp.
    pub fn activations_bf16(&self, x: &[u16], batch: usize) -> Result<DeviceActivations, GpuError> {
        let padded = self.pad(x, batch)?;
        Ok(DeviceActivations::Bf16 { buf: self.gpu.stream.clone_htod(&padded)?, batch, kp: self.geo.kp as usize })
    }

    /// `batch` vectors of K values, each zero-padded to Kp (spec 15.4.2: pad columns meet weight 0).
    fn pad<T: Copy + Default>(&self, x: &[T], batch: usize) -> Result<Vec<T>, GpuError> {
        let (k, kp) = (self.geo.cols as usize, self.geo.kp as usize);
        if batch == 0 {
            return Err(ParamError::EmptyBatch.into());
        }
        Self::check_len("activations", x.len(), batch * k)?;
        let mut padded = vec![T::default(); batch * kp];
        for (dst, src) in padded.chunks_exact_mut(kp).zip(x.chunks_exact(k)) {
            dst[..k].copy_from_slice(src);
        }
        Ok(padded)
    }

    /// Spec 15.4 into a caller's f32 buffer of batch x M values (no allocation: for timing).
    pub fn matvec_into_f32(&self, x: &DeviceActivations, bias: Option<&CudaSlice<f32>>, y: &mut CudaSlice<f32>) -> Result<(), GpuError> {
        Self::check_len("output", y.len(), x.batch() * self.geo.rows as usize)?;
        let s = &self.gpu.stream;
        let (yp, _g) = y.device_ptr(s);
        self.matvec_raw(x, bias, OutputKind::F32, yp)
    }

    /// Spec 15.4 into a caller's BF16 buffer of batch x M words.
    pub fn matvec_into_bf16(&self, x: &DeviceActivations, bias: Option<&CudaSlice<f32>>, y: &mut CudaSlice<u16>) -> Result<(), GpuError> {
        Self::check_len("output", y.len(), x.batch() * self.geo.rows as usize)?;
        let s = &self.gpu.stream;
        let (yp, _g) = y.device_ptr(s);
        self.matvec_raw(x, bias, OutputKind::Bf16, yp)
    }

    /// Spec 15.4 (spec 19 with the bounded kernel) into a new device buffer of batch x M f32 values.
    pub fn matvec_device(&self, x: &DeviceActivations, bias: Option<&CudaSlice<f32>>) -> Result<CudaSlice<f32>, GpuError> {
        let mut y = self.gpu.stream.alloc_zeros::<f32>(x.batch() * self.geo.rows as usize)?;
        self.matvec_into_f32(x, bias, &mut y)?;
        Ok(y)
    }

    /// Spec 15.4 (spec 19 with the bounded kernel) into a new device buffer of batch x M BF16 words.
    pub fn matvec_device_bf16(&self, x: &DeviceActivations, bias: Option<&CudaSlice<f32>>) -> Result<CudaSlice<u16>, GpuError> {
        let mut y = self.gpu.stream.alloc_zeros::<u16>(x.batch() * self.geo.rows as usize)?;
        self.matvec_into_bf16(x, bias, &mut y)?;
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
        let s = &self.gpu.stream;
        Ok(match kind {
            OutputKind::F32 => s.clone_dtoh(&self.matvec_device(&xd, b.as_ref())?)?.into_iter().map(f32::to_bits).collect(),
            OutputKind::Bf16 => s.clone_dtoh(&self.matvec_device_bf16(&xd, b.as_ref())?)?.into_iter().map(u32::from).collect(),
        })
    }
}
