//! Launch plans of the exact execution-layout matvec kernels: which kernel, its pipeline depth,
//! warps per row group and persistent grid for a matrix and a column count, and the launch with
//! the arguments its entry point declares. `run` dispatches to it; `variant` (bench) builds the
//! plans of the lean kernel's ceiling probes on the same types.

use super::{ExecMatvecKernel, GpuExecMatrix, MatvecArgs};
use crate::kernels::{EXEC_STAGE, EXEC_THREADS};
use crate::launch::{launch_params, param, LaunchAttrs};
use crate::GpuError;
use cudarc::driver::{DevicePtr, LaunchConfig};

/// Rows per item of the streaming kernels (EXEC3_R in the sources).
pub(super) const ITEM_ROWS: u64 = 4;
/// [`ExecMatvecKernel::Exact`] runs the streaming kernel for one column when every resident warp
/// gets at least this many items (4 rows x 1 tile); below, the rows kernel. Measured on the H200
/// (docs/gpu-history.md, session 7, the lean kernel with tile flags, two calls): the stream kernel won
/// with 5.8 items per warp and more (2560x9728 by 3-8%, 6144x4096 by 0-3%; 11.5 to 144 items:
/// 4-31%, session 6) and lost with 3.9 or fewer (4096x4096 by 0-8%, 1000x3000 by 45%): its
/// pipeline of 4 items needs several items per warp to fill, while the rows kernel's short CTAs
/// start all loads at once. (Session 6's lean kernel, without the flags, lost at 5.8 too: the
/// rule was 10.)
const STREAM_MIN_ITEMS: u64 = 5;

/// What an exact matvec kernel takes after `EXEC_MATVEC_PARAMS` (kernels/exec_common.cu), as
/// its entry point declares it; set where each plan is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Tail {
    /// `EXEC_MATVEC` (exec_matvec_rows.cu): nothing more.
    Bare,
    /// `EXEC_MV3` (exec_matvec.cu): G, the warps per row group.
    Groups(u32),
    /// `EXEC_LEAN` (exec_matvec_lean.cu) and the bench probes built on its argument list: G, then
    /// the tile flags.
    GroupsFlags(u32),
    /// `EXEC_STRIP` and `EXEC_STRIP_W1` (exec_matvec_strip.cu, exec_matvec_strip_w1.cu): RS, the
    /// rows per unit, S, the row slices per CTA, then the tile flags.
    Strip { rows: u32, slices: u32 },
}

impl Tail {
    fn groups(self) -> Option<u32> {
        match self {
            Tail::Bare => None,
            Tail::Groups(g) | Tail::GroupsFlags(g) | Tail::Strip { rows: g, .. } => Some(g),
        }
    }

    fn slices(self) -> Option<u32> {
        match self {
            Tail::Strip { slices, .. } => Some(slices),
            Tail::Bare | Tail::Groups(_) | Tail::GroupsFlags(_) => None,
        }
    }

    fn flags(self) -> bool {
        match self {
            Tail::Bare | Tail::Groups(_) => false,
            Tail::GroupsFlags(_) | Tail::Strip { .. } => true,
        }
    }

    /// The entry points that wait for the kernel before them (`grid_dependency_wait`) before they read
    /// the activations or store anything, and so may be launched programmatically (`launch`):
    /// the strip kernels and their probes.
    fn waits(self) -> bool {
        match self {
            Tail::Strip { .. } => true,
            Tail::Bare | Tail::Groups(_) | Tail::GroupsFlags(_) => false,
        }
    }
}

/// One launch: kernel, grid, threads, dynamic shared memory, the trailing arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Plan {
    pub name: &'static str,
    pub grid: u32,
    pub threads: u32,
    pub smem: u32,
    pub tail: Tail,
}

/// Warps per row group for `col_tiles` tiles per row: the fewest rounds x tiles per warp over the
/// resident warps (G = 1, 2, 4, 8, at most the tiles per row).
pub(super) fn groups(row_groups: u64, slots: u64, col_tiles: u64) -> u32 {
    let mut best = (u64::MAX, 1u32);
    for g in [1u32, 2, 4, 8] {
        if u64::from(g) > col_tiles {
            break;
        }
        let cost = row_groups.div_ceil((slots / u64::from(g)).max(1)) * col_tiles.div_ceil(u64::from(g));
        if cost < best.0 {
            best = (cost, g);
        }
    }
    best.1
}

/// What an exact streaming plan depends on: the matrix (M, K16, CB) and the device (SMs, the
/// opt-in shared memory of a CTA).
#[derive(Clone, Copy, Debug)]
pub(super) struct StreamGeometry {
    pub rows: u64,
    pub k16: u64,
    pub col_tiles: u64,
    pub sms: u64,
    pub optin: u64,
}

/// The plan of the exact streaming matvec for `nb` columns per decode, or None when its
/// activations do not fit shared memory (the caller then takes fewer columns). `lean`: one column
/// on the lean kernel where it applies (K16 % 32 == 0, x in shared memory). `per_sm(kernel,
/// threads, shared memory)`: resident CTAs per SM. A candidate whose shared memory at its G
/// exceeds the opt-in is passed over for the next (shallower) one.
pub(super) fn stream_plan(
    geo: StreamGeometry,
    nb: u64,
    lean: bool,
    mut per_sm: impl FnMut(&'static str, u32, u32) -> Result<u32, GpuError>,
) -> Result<Option<Plan>, GpuError> {
    let StreamGeometry { rows, k16, col_tiles, sms, optin } = geo;
    let lean = lean && nb == 1 && k16 % 32 == 0;
    let warps = u64::from(EXEC_THREADS / 32);
    // the partial sums of w warps, G per row group (none at G = 1): largest at G = 2
    let pbuf = |w: u64, g: u64| {
        if g > 1 {
            (w / g) * 2 * ITEM_ROWS * nb * col_tiles * 4
        } else {
            0
        }
    };
    // (kernel, pipeline depth, x in shared memory, x bytes per column there, its trailing
    // arguments given G)
    let lean_x = col_tiles * 512 * 4;
    let x = k16 * 4;
    type Candidate = (&'static str, u64, bool, u64, fn(u32) -> Tail);
    let lean_list: [Candidate; 4] = [
        ("exec_matvec_lean_d4", 4, true, lean_x, Tail::GroupsFlags),
        ("exec_matvec_lean_d3", 3, true, lean_x, Tail::GroupsFlags),
        ("exec_matvec_lean_d2", 2, true, lean_x, Tail::GroupsFlags),
        ("exec_matvec_c1_xg", 4, false, 0, Tail::Groups),
    ];
    let generic: [Candidate; 4] = [
        ("exec_matvec_c1_d4", 4, true, x, Tail::Groups),
        ("exec_matvec_c1_d3", 3, true, x, Tail::Groups),
        ("exec_matvec_c1_d2", 2, true, x, Tail::Groups),
        ("exec_matvec_c1_xg", 4, false, 0, Tail::Groups),
    ];
    let c2: [Candidate; 1] = [("exec_matvec_c2_d2", 2, true, x, Tail::Groups)];
    let c4: [Candidate; 1] = [("exec_matvec_c4_d2", 2, true, x, Tail::Groups)];
    let candidates: &[Candidate] = match nb {
        1 if lean => &lean_list,
        1 => &generic,
        2 => &c2,
        _ => &c4,
    };
    let row_groups = rows.div_ceil(ITEM_ROWS);
    for &(name, depth, x_in_smem, x_col, tail) in candidates {
        let (threads, w) = if x_in_smem { (EXEC_THREADS, warps) } else { (EXEC_THREADS / 2, warps / 2) };
        // x and the stages of a CTA of w warps
        let base = |w: u64| nb * x_col + w * depth * u64::from(EXEC_STAGE);
        if base(w) + pbuf(warps, 8) > optin {
            continue;
        }
        // occupancy as if G = 2 (the largest partial sums), at most the opt-in
        let per_sm = u64::from(per_sm(name, threads, (base(w) + pbuf(warps, 2)).min(optin) as u32)?);
        let slots = sms * per_sm * w;
        let g = u64::from(groups(row_groups, slots, col_tiles)).min(w);
        if lean && x_in_smem && per_sm == 1 && row_groups <= sms * w {
            // The lean kernel when one round of row groups fits the device at one warp per
            // group: s row groups per CTA (every SM gets one CTA) and each split over as many
            // warps as the CTA's 16 allow (G need not be a power of 2), so no warp waits for a
            // second round. Measured on the H200 against `groups()`'s plan (docs/gpu.md,
            // session 8): 2560x9728 -10 to -14% (G = 3 in CTAs of 15 warps instead of G = 8 in
            // 2.4 rounds), 6144x4096 -3 to -5% (12 warps at G = 1 instead of G = 4 in 2.9
            // rounds), the other shapes unchanged.
            let s = row_groups.div_ceil(sms);
            let g2 = (w / s).clamp(1, col_tiles);
            let w2 = g2 * s;
            let smem = base(w2) + pbuf(w2, g2);
            if smem <= optin {
                let grid = row_groups.div_ceil(s);
                return Ok(Some(Plan { name, grid: grid as u32, threads: 32 * w2 as u32, smem: smem as u32, tail: tail(g2 as u32) }));
            }
        }
        // Session 16: this took the smem of G = 8 for granted, and launched lean_d4 at 4096x8192
        // with 233,472 bytes (G = 4) against the H200's 232,448 (CUDA_ERROR_INVALID_VALUE).
        let smem = base(w) + pbuf(warps, g);
        if smem > optin {
            continue;
        }
        let grid = (sms * per_sm).min(row_groups.div_ceil(w / g)).max(1);
        return Ok(Some(Plan { name, grid: grid as u32, threads, smem: smem as u32, tail: tail(g as u32) }));
    }
    Ok(None)
}

impl GpuExecMatrix {
    /// Warps per row group of this matrix ([`groups`]).
    pub(super) fn groups(&self, row_groups: u64, slots: u64) -> u32 {
        groups(row_groups, slots, self.col_tiles)
    }

    /// [`stream_plan`] for this matrix on its device.
    fn exact_plan(&self, nb: u64, lean: bool) -> Result<Option<Plan>, GpuError> {
        let geo = StreamGeometry {
            rows: self.shape.rows,
            k16: self.k16,
            col_tiles: self.col_tiles,
            sms: u64::from(self.gpu.sm_count),
            optin: u64::from(self.gpu.smem_optin),
        };
        stream_plan(geo, nb, lean, |name, threads, smem| self.gpu.ctas_per_sm(name, threads, smem))
    }

    /// Bench: the kernel a one-column matvec launches with this matrix's kernel choice, and its
    /// threads per CTA.
    #[cfg(feature = "bench")]
    pub fn one_column_kernel(&self) -> Result<(&'static str, u32), GpuError> {
        let p = self.exact_launch_plan(self.matvec_kernel, 1)?.0;
        Ok((p.name, p.threads))
    }

    /// Bench: the strip kernels' rows per unit and row slices per CTA of the one-column launch
    /// (None for the other kernels).
    #[cfg(feature = "bench")]
    pub fn one_column_strip_rows(&self) -> Result<Option<(u32, u32)>, GpuError> {
        let p = self.exact_launch_plan(self.matvec_kernel, 1)?.0;
        Ok(match p.tail {
            Tail::Strip { rows, slices } => Some((rows, slices)),
            Tail::Bare | Tail::Groups(_) | Tail::GroupsFlags(_) => None,
        })
    }

    /// Bench: the one-column launch's CTAs over the CTAs the device holds at once (its rounds).
    #[cfg(feature = "bench")]
    pub fn one_column_rounds(&self) -> Result<f64, GpuError> {
        let p = self.exact_launch_plan(self.matvec_kernel, 1)?.0;
        Ok(f64::from(p.grid) / self.resident_ctas(&p)? as f64)
    }

    /// The exact kernel and how many columns it takes next (4, 2 or 1 per decode, as shared memory allows).
    pub(super) fn exact_launch_plan(&self, k: ExecMatvecKernel, left: u64) -> Result<(Plan, u64), GpuError> {
        #[cfg(feature = "bench")]
        if left == 1 {
            if let Some(p) = self.variant_plan(k)? {
                return Ok((p, 1));
            }
        }
        // Bench: several columns per launch on the CTA kernel on several columns where its
        // partials fit, else one column at a time
        #[cfg(feature = "bench")]
        if matches!(k, ExecMatvecKernel::VarStripC2 | ExecMatvecKernel::VarStripC4) && left > 1 {
            return match self.strip_cols_launch(k, left)? {
                Some(launch) => Ok(launch),
                None => self.exact_launch_plan(k, 1),
            };
        }
        // One column: the strip kernel, the default where it fits (exec/strip.rs), its plan kept
        // with the matrix.
        if left == 1 && matches!(k, ExecMatvecKernel::Exact | ExecMatvecKernel::Strip) {
            if let Some(p) = self.one_column_plan()? {
                return Ok((p, 1));
            }
        }
        if k == ExecMatvecKernel::Strip {
            if left > 1 {
                // one column per launch
                return self.exact_launch_plan(k, 1);
            }
            return Err(GpuError::Unsupported("the strip kernel's tile partials do not fit shared memory at this K"));
        }
        // Too few items per resident warp for the stream pipeline (STREAM_MIN_ITEMS).
        let small = || {
            let slots = u64::from(self.gpu.sm_count) * u64::from(EXEC_THREADS / 32);
            self.shape.rows.div_ceil(ITEM_ROWS) * self.col_tiles < STREAM_MIN_ITEMS * slots
        };
        let rows = match k {
            ExecMatvecKernel::Rows => true,
            #[cfg(feature = "bench")]
            ExecMatvecKernel::RowsNoPrefetch => true,
            // a lean probe whose plan does not apply runs what Exact runs where the strip kernel
            // does not fit
            k if (k == ExecMatvecKernel::Exact || k.is_lean_probe()) && left == 1 => small(),
            _ => false,
        };
        if rows {
            let threads = 32 * self.col_tiles.div_ceil(2).clamp(1, 8) as u32;
            let grid = self.shape.rows.div_ceil(2).min(u64::from(u32::MAX / 2)) as u32;
            let smem = (2 * self.col_tiles * 4) as u32;
            #[cfg(feature = "bench")]
            let name = if k == ExecMatvecKernel::RowsNoPrefetch { "exec_matvec_rows_noprefetch" } else { "exec_matvec_rows" };
            #[cfg(not(feature = "bench"))]
            let name = "exec_matvec_rows";
            return Ok((Plan { name, grid, threads, smem, tail: Tail::Bare }, 1));
        }
        #[cfg(feature = "bench")]
        let lean = k != ExecMatvecKernel::StreamGeneric;
        #[cfg(not(feature = "bench"))]
        let lean = true;
        for nb in [4u64, 2, 1] {
            if nb > left && nb > 1 {
                continue;
            }
            if let Some(p) = self.exact_plan(nb, lean)? {
                return Ok((p, nb.min(left)));
            }
        }
        Err(GpuError::Unsupported("no exact execution-layout kernel fits this K"))
    }

    pub(super) fn exact_launch(&self, p: &Plan, x: u64, ncols: u32, bias: u64, out_bf16: i32, y: u64) -> Result<(), GpuError> {
        let s = &self.gpu.stream;
        let f = self.ptrs();
        let (m32, k32, ldx, ldy) = (self.shape.rows as u32, self.shape.cols as u32, self.k16, self.shape.rows);
        let cfg = LaunchConfig { grid_dim: (p.grid, 1, 1), block_dim: (p.threads, 1, 1), shared_mem_bytes: p.smem };
        let a = MatvecArgs { m: m32, k: k32, x, ldx, ncols, bias, y, ldy, out_bf16 };
        let mut params = f.matvec_params(&a);
        let groups = p.tail.groups();
        if let Some(g) = &groups {
            params.push(param(g));
        }
        let slices = p.tail.slices();
        if let Some(s) = &slices {
            params.push(param(s));
        }
        let flags_guard = p.tail.flags().then(|| self.derived.flags.device_ptr(s));
        if let Some((fp, _)) = &flags_guard {
            params.push(param(fp));
        }
        let programmatic = p.tail.waits() && self.dependent_launch.programmatic_on(&self.gpu);
        // SAFETY: the argument list matches the entry point's, as its plan's tail says, each value
        // of the type it declares and alive for the call: EXEC_MATVEC (exec_matvec_rows.cu,
        // Tail::Bare), EXEC_MV3 (exec_matvec.cu, Tail::Groups), EXEC_LEAN and the bench probes on
        // its list (Tail::GroupsFlags: G >= 1, then the tile flags, CB x M rounded up to 4 bytes)
        // or EXEC_STRIP, EXEC_STRIP_W1 and their probes (Tail::Strip: RS a multiple of 4, S >= 1
        // and, on the CTA kernel's entry points that derive S (not `_slices`), equal to max(1,
        // W / CB) (strip_plan_with), then the tile flags; the CTA kernel's shared memory RS x S x
        // CB f32 per column per decode (strip::strip_columns: 2 or 4 for the bench's kernel on
        // several columns, launched on ncols <= 2 or 4 columns of x and y), the one-warp
        // kernel's none, a capped plan (spread::capped) more, within the kernel's allowance); the
        // fields passed the spec 20.9 rules or came from the GPU encode; x
        // holds ncols vectors of K16 activations, f32, or BF16 for the strip kernels' `_xbf16` entry
        // points (matvec_raw checked the buffer and chose the entry point by its type), y holds ncols x M
        // outputs of the kind out_bf16 says (caller's contract), bias M values or null; the plan's
        // shared memory fits the device (exact_plan, strip_plan) and G divides the CTA's warps.
        // Programmatic only where the tail says the kernel waits (Tail::waits: exec_strip_body and
        // exec_strip_w1_body wait for the kernel before them before they read x or bias or touch
        // y, and read only the matrix's fields before).
        unsafe { launch_params(s, self.gpu.function(p.name)?, cfg, &mut params, LaunchAttrs::plain(programmatic)) }?;
        Ok(())
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
