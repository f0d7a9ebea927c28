//! Bench: launch plans of the one-column kernels' ceiling probes (the lean and the strip kernel's,
//! kernels/bench/exec_matvec_variants.cu), of the strip kernel forced to one launch shape, and the
//! production plan without its CTAs per SM capped (session 25), without the two-warp rule of
//! exec/pair.rs (session 29), with row slices tied to the warps (production until session 29), the
//! CTA kernel at every shape and W1 without its variant that loads ahead (session 30), and the
//! CTA kernel's plans on two and four columns per decode (session 36). The
//! equal-share kernel of session 22 (`VarStripEven`, measured slower) is in git history (before
//! session 24's removal), as are the cap by a small shared memory carve-out and the whole
//! carve-out alone (session 25).

use super::plan::{Plan, Tail};
use super::release::{strip_entry, Release, StripEntry};
use super::strip::{SliceRule, StripShape, UnitRows, PRODUCTION_SLICES};
use super::{ExecMatvecKernel, GpuExecMatrix, TileFlagRule};
use crate::kernels::EXEC_STAGE;
use crate::GpuError;

/// Bench: a launch shape the CTA strip kernel can be forced to (`--exec-strip-plans W:RS[:S]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ForcedStrip {
    /// Warps per CTA.
    pub warps: u64,
    /// Rows per unit.
    pub rows: u64,
    /// Row slices per CTA; None: max(1, W / CB).
    pub slices: Option<u64>,
}

/// Bench: checks a forced launch shape of the CTA strip kernel: W in 1..=16 (the kernel's 512
/// threads at most), RS a positive multiple of 4 (its groups), S (where given) at least 1.
pub fn check_strip_plan(f: ForcedStrip) -> Result<(), GpuError> {
    if !(1..=super::strip::MAX_WARPS).contains(&f.warps) || f.rows == 0 || f.rows % 4 != 0 || f.slices == Some(0) {
        return Err(GpuError::Unsupported("a forced strip plan needs 1..=16 warps, rows a positive multiple of 4 and at least one slice"));
    }
    Ok(())
}

/// Bench: a forced warp count of the bounded strip kernel (`--exec-tc-warps`,
/// `GpuExecMatrix::force_tc_strip_warps`): 1 up to the plan's most warps per CTA (the kernel's
/// launch bounds).
pub fn check_tc_strip_warps(w: u64) -> Result<(), GpuError> {
    if !(1..=super::tensor_strip::MAX_WARPS).contains(&w) {
        return Err(GpuError::Unsupported("a forced warp count of the bounded strip kernel needs 1..=16 warps"));
    }
    Ok(())
}

impl GpuExecMatrix {
    /// Bench: the tile flags remade under `rule` (every constructor makes them under
    /// [`TileFlagRule::SharedByte`]); the results are the same under every rule.
    pub fn set_tile_flag_rule(&mut self, rule: TileFlagRule) -> Result<(), GpuError> {
        super::derived::tile_flags(
            &self.gpu,
            self.shape,
            self.col_tiles,
            &self.codes,
            &self.esc_start,
            &self.esc,
            rule,
            &mut self.derived.flags,
        )
    }

    /// Bench: [`ExecMatvecKernel::VarStripCta`] launches CTAs of W warps with units of RS rows
    /// and S slices (`plan`, checked by [`check_strip_plan`]) instead of its plan's; None goes back
    /// to the plan.
    pub fn force_strip_plan(&mut self, plan: Option<ForcedStrip>) -> Result<(), GpuError> {
        if let Some(p) = plan {
            check_strip_plan(p)?;
        }
        self.strip_force = plan;
        Ok(())
    }

    /// Bench: the bounded strip kernel launches CTAs of `warps` warps (checked by
    /// [`check_tc_strip_warps`]; at most the split's item columns) instead of its plan's; None
    /// goes back to the plan.
    pub fn force_tc_strip_warps(&mut self, warps: Option<u64>) -> Result<(), GpuError> {
        if let Some(w) = warps {
            check_tc_strip_warps(w)?;
        }
        self.tc_strip_force = warps;
        Ok(())
    }
}

impl GpuExecMatrix {
    /// Bench: the plan of a one-column variant or probe, or None where it does not apply (the lean
    /// probes: K16 % 32 != 0 or x does not fit; the strip kernel's: its tile partials do not fit;
    /// not a variant or probe).
    pub(super) fn variant_plan(&self, k: ExecMatvecKernel) -> Result<Option<Plan>, GpuError> {
        match k {
            ExecMatvecKernel::ProbeStripNoDecode => {
                return self.strip_choice("bench_exec_probe_strip_w1_nodecode", "bench_exec_probe_strip_nodecode", PRODUCTION_SLICES)
            }
            ExecMatvecKernel::VarStripCta => {
                return match self.strip_force {
                    Some(f) => {
                        let shape = self.per_warps(f.warps, f.rows);
                        let shape = StripShape { slices: f.slices.unwrap_or(shape.slices), ..shape };
                        Ok(self.strip_plan_with("exec_matvec_strip", shape))
                    }
                    None => self.strip_plan("exec_matvec_strip", UnitRows::OneRound, PRODUCTION_SLICES),
                }
            }
            ExecMatvecKernel::VarStripW1 => return Ok(Some(self.strip_w1_plan("exec_matvec_strip_w1"))),
            ExecMatvecKernel::VarStripUncapped => {
                return match self.production_choice(PRODUCTION_SLICES)? {
                    Some(p) => Ok(Some(self.with_release(p, None)?)),
                    None => Ok(None),
                }
            }
            ExecMatvecKernel::VarStripNoPairRule => {
                return match self.production_choice(PRODUCTION_SLICES)? {
                    Some(p) => Ok(Some(self.spread_release(p)?)),
                    None => Ok(None),
                }
            }
            ExecMatvecKernel::VarStripPerWarpSlices => {
                return match self.production_choice(SliceRule::PerWarps)? {
                    Some(p) => Ok(Some(self.one_column_launch(p)?)),
                    None => Ok(None),
                }
            }
            ExecMatvecKernel::VarStripNoW1 => {
                return match self.strip_plan("exec_matvec_strip", UnitRows::OneRound, SliceRule::Free)? {
                    Some(p) => Ok(Some(self.one_column_launch(p)?)),
                    None => Ok(None),
                }
            }
            ExecMatvecKernel::VarStripW1Plain => {
                return match self.one_column_plan()? {
                    Some(p) if strip_entry(p.name) == Some(StripEntry::W1Ahead) => {
                        Ok(Some(self.with_release(Plan { name: "exec_matvec_strip_w1", ..p }, None)?))
                    }
                    p => Ok(p),
                }
            }
            // one column: production's plan (more: `strip_cols_launch`)
            ExecMatvecKernel::VarStripC2 | ExecMatvecKernel::VarStripC4 => return self.one_column_plan(),
            ExecMatvecKernel::VarStripReleaseStart | ExecMatvecKernel::VarStripReleaseEnd => {
                let release = if k == ExecMatvecKernel::VarStripReleaseStart { Release::Start } else { Release::End };
                return match self.production_choice(PRODUCTION_SLICES)? {
                    Some(p) => Ok(Some(self.capped(self.with_release(p, Some(release))?)?)),
                    None => Ok(None),
                };
            }
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
}

/// Bench: the columns per decode of the CTA strip kernel on several columns
/// (kernels/bench/exec_matvec_strip_cols.cu): its entry points hold that many columns' tile
/// partials and activations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StripCols {
    Two,
    Four,
}

impl StripCols {
    /// The activation columns per decode.
    pub fn columns(self) -> u64 {
        match self {
            StripCols::Two => 2,
            StripCols::Four => 4,
        }
    }

    /// The entry point that releases the next kernel at its CTAs' start (f32 activations).
    pub(super) fn entry(self) -> &'static str {
        match self {
            StripCols::Two => "bench_exec_matvec_strip_c2",
            StripCols::Four => "bench_exec_matvec_strip_c4",
        }
    }

    /// The entry point that releases the next kernel after its units (f32 activations).
    pub(super) fn entry_release_end(self) -> &'static str {
        match self {
            StripCols::Two => "bench_exec_matvec_strip_c2_release_end",
            StripCols::Four => "bench_exec_matvec_strip_c4_release_end",
        }
    }
}

/// Bench: a launch of the CTA strip kernel on several columns as `--exec-batch` prints it
/// ([`GpuExecMatrix::strip_cols_plan_info`]).
#[derive(Clone, Copy, Debug)]
pub struct StripColsPlanInfo {
    pub warps: u32,
    /// Rows per unit.
    pub rows: u32,
    /// Row slices per CTA.
    pub slices: u32,
    pub grid: u32,
    /// CTAs the device holds at once at this launch (its registers and shared memory).
    pub resident: u64,
    /// The next kernel is released at the CTAs' start (else after their units).
    pub release_start: bool,
}

impl GpuExecMatrix {
    /// Bench: the launch of the CTA strip kernel on `cols` columns per decode; None where its
    /// tile partials do not fit.
    pub fn strip_cols_plan_info(&self, cols: StripCols) -> Result<Option<StripColsPlanInfo>, GpuError> {
        let Some(p) = self.strip_cols_plan(cols)? else {
            return Ok(None);
        };
        let Tail::Strip { rows, slices } = p.tail else {
            return Err(GpuError::Unsupported("the strip plan on several columns has no strip tail"));
        };
        Ok(Some(StripColsPlanInfo {
            warps: p.threads / 32,
            rows,
            slices,
            grid: p.grid,
            resident: self.resident_ctas(&p)?,
            release_start: p.name == cols.entry(),
        }))
    }

    /// Bench: the plan of the CTA strip kernel on `cols` columns per decode (a launch of
    /// [`ExecMatvecKernel::VarStripC2`] or [`ExecMatvecKernel::VarStripC4`]): the CTA kernel's
    /// one-round plan by production's rules (`strip::strip_launch`, [`UnitRows::OneRound`],
    /// [`PRODUCTION_SLICES`]) at this kernel's occupancy and with its tile partials per CTA,
    /// spread and released as production's one-column launches (`spread_release`; exec/pair.rs's
    /// two-warp rule, measured on the one-column kernel only, is not applied); at every shape,
    /// W1's domain included. None where no shape's partials fit shared memory.
    pub(super) fn strip_cols_plan(&self, cols: StripCols) -> Result<Option<Plan>, GpuError> {
        match self.strip_plan(cols.entry(), UnitRows::OneRound, PRODUCTION_SLICES)? {
            Some(p) => Ok(Some(self.spread_release(p)?)),
            None => Ok(None),
        }
    }

    /// Bench: the launch of [`ExecMatvecKernel::VarStripC2`] or [`ExecMatvecKernel::VarStripC4`]
    /// for the next `left` (at least 2) columns, and how many it takes: 4 on the four-column kernel
    /// where `k` is `VarStripC4` and at least 3 are left (3 computes its last column twice), else
    /// 2 on the two-column kernel; None where its partials do not fit.
    pub(super) fn strip_cols_launch(&self, k: ExecMatvecKernel, left: u64) -> Result<Option<(Plan, u64)>, GpuError> {
        let cols = if k == ExecMatvecKernel::VarStripC4 && left >= 3 { StripCols::Four } else { StripCols::Two };
        Ok(self.strip_cols_plan(cols)?.map(|p| (p, cols.columns().min(left))))
    }
}
