//! Bench: launch plans of the lean one-column kernel's variants and ceiling probes
//! (kernels/bench/exec_matvec_variants.cu), and the tensor maps through which the TMA variant
//! ([`ExecMatvecKernel::VarTma`]) reads the sm and code planes.

use super::run::{Plan, Tail};
use super::{ExecMatvecKernel, GpuExecMatrix};
use crate::kernels::{EXEC_STAGE, EXEC_TMA_STAGE};
use crate::GpuError;
use cudarc::driver::sys;
use cudarc::driver::DeviceRepr;

/// One `CUtensorMap` passed by value (`const __grid_constant__ ExecTmap` in the source: 128
/// opaque bytes, 64-byte aligned).
#[repr(C, align(64))]
#[derive(Clone, Copy)]
pub(super) struct TensorMapArg([u64; 16]);

const _: () = assert!(std::mem::size_of::<TensorMapArg>() == 128);
// The TMA variant's stage holds lean's and starts every stage (and its code rows, 2048 bytes in)
// on a 128-byte boundary: the source's EXEC_TMA_STAGE (3200).
const _: () = assert!(EXEC_TMA_STAGE == 3200 && EXEC_TMA_STAGE >= EXEC_STAGE && EXEC_TMA_STAGE % 128 == 0);

// SAFETY: 128 plain bytes with the size and alignment of the kernel's ExecTmap parameter, copied
// by value into the launch's parameter buffer; cuTensorMapEncodeTiled wrote them, and the only
// address inside is a device address of a plane that outlives the launch (exact_launch holds the
// matrix's pointer guards until the launch is enqueued).
unsafe impl DeviceRepr for TensorMapArg {}

/// Items of 4 rows: a box is 4 rows of the plane.
const BOX_ROWS: u32 = 4;

/// True for a device with the TMA engine (sm_90 and later): `Gpu::arch` is `sm_XY`.
fn has_tma(arch: &str) -> bool {
    arch.strip_prefix("sm_")
        .and_then(|v| v.trim_end_matches(|c: char| c.is_ascii_alphabetic()).parse::<u32>().ok())
        .is_some_and(|v| v >= 90)
}

/// A plane of `rows` rows of `row_bytes` bytes at device address `ptr`, seen as a 2D tensor of
/// u32 with boxes of `box_words` x [`BOX_ROWS`]. cuTensorMapEncodeTiled's rules (CUDA driver API,
/// tensor map management): the map 64-byte aligned in host memory (`CUtensorMap` is), the address
/// 16-byte aligned (a device allocation), the row stride a multiple of 16 below 2^40 (K16 and
/// K16 / 2 with K16 % 32 == 0), box dimensions 1..=256 with `box_words` * 4 a multiple of 16; a
/// box may reach past the tensor (M < 4, K16 < 512): those parts read as zeros (OOB fill none).
fn encode(ptr: u64, rows: u64, row_bytes: u64, box_words: u32) -> Result<TensorMapArg, GpuError> {
    let mut map = sys::CUtensorMap { opaque: [0; 16] };
    let dims: [u64; 2] = [row_bytes / 4, rows];
    let strides: [u64; 1] = [row_bytes];
    let boxes: [u32; 2] = [box_words, BOX_ROWS];
    let steps: [u32; 2] = [1, 1];
    // SAFETY: `map` is a writable CUtensorMap; the arrays hold rank 2 dims and element strides
    // and rank - 1 byte strides, as the driver reads them; ptr is a live device allocation (the
    // driver only encodes it, nothing is read here).
    unsafe {
        sys::cuTensorMapEncodeTiled(
            &mut map,
            sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT32,
            2,
            ptr as *mut std::ffi::c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            steps.as_ptr(),
            sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
            sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    }
    .result()?;
    Ok(TensorMapArg(map.opaque))
}

impl GpuExecMatrix {
    /// The tensor maps of the TMA variant for the sm plane at `sm` (u32 [M][K16 / 4], box
    /// {128, 4}: 4 rows x one 512-column tile) and the code plane at `codes` (u32 [M][K16 / 8],
    /// box {64, 4}); needs K16 % 32 == 0 (code rows of a multiple of 16 bytes). Encoded per
    /// launch: a host call of microseconds, captured with the launch in the bench's graphs.
    pub(super) fn tensor_maps(&self, sm: u64, codes: u64) -> Result<(TensorMapArg, TensorMapArg), GpuError> {
        let m = self.shape.rows;
        Ok((encode(sm, m, self.k16, 128)?, encode(codes, m, self.k16 / 2, 64)?))
    }

    /// Bench: the plan of a lean variant or probe for one column, or None where it does not
    /// apply (K16 % 32 != 0, x does not fit, no TMA on this device, not a variant).
    pub(super) fn variant_plan(&self, k: ExecMatvecKernel) -> Result<Option<Plan>, GpuError> {
        type Kernels = &'static [(&'static str, u64)];
        // (rows per item, (kernel, depth) in order of preference, warps per CTA in order, stage
        // bytes, trailing arguments)
        let probe = |kernels: Kernels| (4u64, kernels, &[16u64][..], u64::from(EXEC_STAGE), Tail::GroupsFlags as fn(u32) -> Tail);
        let (r, kernels, warp_list, stage, tail) = match k {
            ExecMatvecKernel::ProbeNoDecode => probe(&[("bench_exec_probe_nodecode_d4", 4)]),
            ExecMatvecKernel::ProbeLoads => probe(&[("bench_exec_probe_loads_d4", 4)]),
            ExecMatvecKernel::ProbeStream4x1 => probe(&[("bench_exec_probe_stream4x1_d4", 4)]),
            ExecMatvecKernel::ProbeStream2x2 => probe(&[("bench_exec_probe_stream2x2_d4", 4)]),
            ExecMatvecKernel::ProbeStream1x4 => probe(&[("bench_exec_probe_stream1x4_d4", 4)]),
            // the stage's mbarrier lies in its tail: no shared memory beyond the stages
            ExecMatvecKernel::VarTma if has_tma(self.gpu.arch) => (
                4,
                &[("bench_exec_tma_d4", 4), ("bench_exec_tma_d3", 3), ("bench_exec_tma_d2", 2)][..],
                &[16u64][..],
                u64::from(EXEC_TMA_STAGE),
                Tail::GroupsFlagsMaps as fn(u32) -> Tail,
            ),
            _ => return Ok(None),
        };
        if self.k16 % 32 != 0 {
            return Ok(None);
        }
        let optin = u64::from(self.gpu.smem_optin);
        let x = self.col_tiles * 512 * 4;
        let row_groups = self.shape.rows.div_ceil(r);
        for &w in warp_list {
            for &(name, depth) in kernels {
                let base = x + w * depth * stage;
                // one CTA per SM (launch bounds and shared memory); G divides the CTA's warps
                let mut g = u64::from(self.groups(row_groups, u64::from(self.gpu.sm_count) * w)).min(w);
                while w % g != 0 {
                    g /= 2;
                }
                let smem = base + if g > 1 { (w / g) * 2 * r * self.col_tiles * 4 } else { 0 };
                if smem > optin {
                    continue;
                }
                let per_sm = u64::from(self.gpu.ctas_per_sm(name, 32 * w as u32, smem as u32)?);
                let grid = (u64::from(self.gpu.sm_count) * per_sm).min(row_groups.div_ceil(w / g)).max(1);
                return Ok(Some(Plan { name, grid: grid as u32, threads: 32 * w as u32, smem: smem as u32, tail: tail(g as u32) }));
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::has_tma;

    #[test]
    fn tma_needs_sm_90() {
        assert!(has_tma("sm_90") && has_tma("sm_90a") && has_tma("sm_100") && has_tma("sm_120"));
        assert!(!has_tma("sm_80") && !has_tma("sm_89") && !has_tma("compute_90") && !has_tma("sm_"));
    }
}
