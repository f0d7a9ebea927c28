//! Activations in, outputs out: the public matvec entry points (device buffers and host
//! conveniences). The kernel that runs is the matrix's [`super::MatvecKernel`] (`exact.rs`).

use super::{DeviceActivations, GpuMatrix, OutputKind};
use crate::GpuError;
use cudarc::driver::{CudaSlice, DevicePtr};
use nwc_reference::ParamError;

impl GpuMatrix {
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
