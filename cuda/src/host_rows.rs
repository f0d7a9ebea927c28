//! The host conveniences of dequant and gather, shared by format 10's matrices (spec 15.2, 15.3)
//! and the execution layout's (spec 20.14): a device buffer of rows x K16 BF16 words filled by the
//! matrix's kernel, then copied back.

use crate::{Gpu, GpuError};
use cudarc::driver::{CudaSlice, DeviceRepr};
use nwc_reference::ParamError;

/// All `rows` rows of `stride` words through `into`, copied back.
pub(crate) fn dequant_to_host(
    gpu: &Gpu,
    rows: u64,
    stride: usize,
    into: impl FnOnce(&mut CudaSlice<u16>) -> Result<(), GpuError>,
) -> Result<Vec<u16>, GpuError> {
    let s = &gpu.stream;
    let mut out = s.alloc_zeros::<u16>(rows as usize * stride)?;
    into(&mut out)?;
    Ok(s.clone_dtoh(&out)?)
}

/// The rows `rows` names (any order, repeats allowed), each checked below `m` here, as the device
/// indices `index` makes of them, through `kernel` into `rows.len()` rows of `stride` words, copied
/// back.
pub(crate) fn gather_to_host<I: DeviceRepr>(
    gpu: &Gpu,
    rows: &[u64],
    m: u64,
    stride: usize,
    index: impl Fn(u64) -> I,
    kernel: impl FnOnce(&CudaSlice<I>, &mut CudaSlice<u16>) -> Result<(), GpuError>,
) -> Result<Vec<u16>, GpuError> {
    if let Some(&index) = rows.iter().find(|&&r| r >= m) {
        return Err(ParamError::RowIndex { index, rows: m }.into());
    }
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let s = &gpu.stream;
    let sel = s.clone_htod(&rows.iter().map(|&r| index(r)).collect::<Vec<I>>())?;
    let mut out = s.alloc_zeros::<u16>(rows.len() * stride)?;
    kernel(&sel, &mut out)?;
    Ok(s.clone_dtoh(&out)?)
}
