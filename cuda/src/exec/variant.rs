//! Bench: launch plans of the lean one-column kernel's ceiling probes
//! (kernels/bench/exec_matvec_variants.cu) and of the strip kernel (kernels/bench/exec_matvec_strip.cu).

use super::plan::{Plan, Tail};
use super::{ExecMatvecKernel, GpuExecMatrix};
use crate::kernels::EXEC_STAGE;
use crate::GpuError;

impl GpuExecMatrix {
    /// Bench: the plan of a lean variant or probe for one column, or None where it does not
    /// apply (K16 % 32 != 0, x does not fit, not a probe).
    pub(super) fn variant_plan(&self, k: ExecMatvecKernel) -> Result<Option<Plan>, GpuError> {
        match k {
            ExecMatvecKernel::VarStrip => return self.strip_plan("bench_exec_strip", false, 2).map(Some),
            ExecMatvecKernel::VarStripLong => return self.strip_plan("bench_exec_strip", false, 1).map(Some),
            ExecMatvecKernel::VarStripXs => return self.strip_plan("bench_exec_strip_xs", true, 2).map(Some),
            ExecMatvecKernel::ProbeStripNoDecode => return self.strip_plan("bench_exec_strip_nodecode", false, 2).map(Some),
            _ => {}
        }
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

    /// The strip kernel's plan. Warps per CTA W and row slices: up to 8 tiles per row, every tile
    /// of ceil(8 / CB) slices gets a warp (W = 8..15); more tiles, W = ceil(CB / ceil(CB / 8)) warps
    /// take ceil(CB / 8) tiles each, one slice. Rows per unit RS: the largest of 32, 16, 8 that gives
    /// at least `per_warp` units per resident warp (4 otherwise), so that every warp has work.
    /// `xs`: the kernel stages the activations in shared memory (CB x 2 KB before the partials).
    fn strip_plan(&self, name: &'static str, xs: bool, per_warp: u64) -> Result<Plan, GpuError> {
        let cb = self.col_tiles;
        let (w, slices) = if cb <= 8 { (cb * 8u64.div_ceil(cb), 8u64.div_ceil(cb)) } else { (cb.div_ceil(cb.div_ceil(8)), 1) };
        let smem_for = |rs: u64| if xs { cb * 2048 } else { 0 } + rs * slices * cb * 4;
        let mut rs = 4u64;
        for cand in [32u64, 16, 8] {
            let per_sm = u64::from(self.gpu.ctas_per_sm(name, 32 * w as u32, smem_for(cand) as u32)?);
            let slots = u64::from(self.gpu.sm_count) * per_sm * w;
            if self.shape.rows.div_ceil(cand) * cb >= per_warp * slots {
                rs = cand;
                break;
            }
        }
        let smem = smem_for(rs);
        if smem > u64::from(self.gpu.smem_optin) {
            return Err(GpuError::Unsupported("strip kernel: the tile partials do not fit shared memory"));
        }
        let grid = self.shape.rows.div_ceil(rs * slices);
        Ok(Plan { name, grid: grid as u32, threads: 32 * w as u32, smem: smem as u32, tail: Tail::RowsFlags(rs as u32) })
    }
}
