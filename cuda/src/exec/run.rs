//! Matvec, dequant and gather on an execution-layout matrix: launch plans (pipeline depth,
//! warps per row group, persistent grid) and the host conveniences.

use super::{check_len, ExecActivations, ExecDequantKernel, ExecMatvecKernel, GpuExecMatrix};
use crate::kernels::{EXEC_STAGE, EXEC_THREADS};
use crate::{GpuError, OutputKind};
use cudarc::driver::{CudaSlice, DevicePtr, LaunchConfig, PushKernelArg};
use nwc_reference::ParamError;

/// Rows per item of the streaming kernels (EXEC3_R in the sources).
const ITEM_ROWS: u64 = 4;
/// [`ExecMatvecKernel::Exact`] runs the streaming kernel for one column when every resident warp
/// gets at least this many items (4 rows x 1 tile); below, the rows kernel. Measured on the H200
/// (docs/gpu.md, session 7, the lean kernel with tile flags, two calls): the stream kernel won
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
}

impl Tail {
    fn groups(self) -> Option<u32> {
        match self {
            Tail::Bare => None,
            Tail::Groups(g) | Tail::GroupsFlags(g) => Some(g),
        }
    }

    fn flags(self) -> bool {
        match self {
            Tail::Bare | Tail::Groups(_) => false,
            Tail::GroupsFlags(_) => true,
        }
    }
}

/// One launch: kernel, grid, threads, dynamic shared memory, the trailing arguments.
pub(super) struct Plan {
    pub name: &'static str,
    pub grid: u32,
    pub threads: u32,
    pub smem: u32,
    pub tail: Tail,
}

impl GpuExecMatrix {
    /// Warps per row group: the fewest rounds x tiles per warp over the resident warps
    /// (G = 1, 2, 4, 8, at most the tiles per row).
    pub(super) fn groups(&self, row_groups: u64, slots: u64) -> u32 {
        let mut best = (u64::MAX, 1u32);
        for g in [1u32, 2, 4, 8] {
            if u64::from(g) > self.col_tiles {
                break;
            }
            let cost = row_groups.div_ceil((slots / u64::from(g)).max(1)) * self.col_tiles.div_ceil(u64::from(g));
            if cost < best.0 {
                best = (cost, g);
            }
        }
        best.1
    }

    /// The plan of the exact streaming matvec for `nb` columns per decode, or None when its
    /// activations do not fit shared memory (the caller then takes fewer columns). `lean`: one
    /// column on the lean kernel where it applies (K16 % 32 == 0, x in shared memory).
    fn exact_plan(&self, nb: u64, lean: bool) -> Result<Option<Plan>, GpuError> {
        let optin = u64::from(self.gpu.smem_optin);
        let lean = lean && nb == 1 && self.k16 % 32 == 0;
        let warps = u64::from(EXEC_THREADS / 32);
        // the partial sums of w warps, G per row group (none at G = 1); the plans below size
        // them for all 16 warps (more than the 8 of an x-from-global CTA need), the one-round plan
        // for its own warps
        let pbuf = |w: u64, g: u64| {
            if g > 1 {
                (w / g) * 2 * ITEM_ROWS * nb * self.col_tiles * 4
            } else {
                0
            }
        };
        // (kernel, pipeline depth, x in shared memory, x bytes per column there, its trailing
        // arguments given G)
        let lean_x = self.col_tiles * 512 * 4;
        let x = self.k16 * 4;
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
        let row_groups = self.shape.rows.div_ceil(ITEM_ROWS);
        for &(name, depth, x_in_smem, x_col, tail) in candidates {
            let (threads, w) = if x_in_smem { (EXEC_THREADS, warps) } else { (EXEC_THREADS / 2, warps / 2) };
            // x and the stages of a CTA of w warps
            let base = |w: u64| nb * x_col + w * depth * u64::from(EXEC_STAGE);
            if base(w) + pbuf(warps, 8) > optin {
                continue;
            }
            let per_sm = u64::from(self.gpu.ctas_per_sm(name, threads, (base(w) + pbuf(warps, 2)) as u32)?);
            let slots = u64::from(self.gpu.sm_count) * per_sm * w;
            let g = u64::from(self.groups(row_groups, slots)).min(w);
            let sms = u64::from(self.gpu.sm_count);
            if lean && x_in_smem && per_sm == 1 && row_groups <= sms * w {
                // The lean kernel when one round of row groups fits the device at one warp per
                // group: s row groups per CTA (every SM gets one CTA) and each split over as many
                // warps as the CTA's 16 allow (G need not be a power of 2), so no warp waits for a
                // second round. Measured on the H200 against `groups()`'s plan (docs/gpu.md,
                // session 8): 2560x9728 -10 to -14% (G = 3 in CTAs of 15 warps instead of G = 8 in
                // 2.4 rounds), 6144x4096 -3 to -5% (12 warps at G = 1 instead of G = 4 in 2.9
                // rounds), the other shapes unchanged.
                let s = row_groups.div_ceil(sms);
                let g2 = (w / s).clamp(1, self.col_tiles);
                let w2 = g2 * s;
                let smem = base(w2) + pbuf(w2, g2);
                if smem <= optin {
                    let grid = row_groups.div_ceil(s);
                    return Ok(Some(Plan { name, grid: grid as u32, threads: 32 * w2 as u32, smem: smem as u32, tail: tail(g2 as u32) }));
                }
            }
            let grid = (sms * per_sm).min(row_groups.div_ceil(w / g)).max(1);
            return Ok(Some(Plan { name, grid: grid as u32, threads, smem: (base(w) + pbuf(warps, g)) as u32, tail: tail(g as u32) }));
        }
        Ok(None)
    }

    /// Spec 20.15 into `y` (batch x M outputs of `kind`): the exact class, or spec 19 with
    /// [`ExecMatvecKernel::Bounded`] and BF16 activations.
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
            (ExecActivations::Bf16 { .. }, _) => Err(GpuError::Unsupported("the exact execution-layout matvec takes f32 activations")),
        }
    }

    /// Bench: the kernel a one-column matvec launches with this matrix's kernel choice, and its
    /// threads per CTA.
    #[cfg(feature = "bench")]
    pub fn one_column_kernel(&self) -> Result<(&'static str, u32), GpuError> {
        let p = self.exact_launch_plan(self.matvec_kernel, 1)?.0;
        Ok((p.name, p.threads))
    }

    /// The exact kernel and how many columns it takes next (4, 2 or 1 per decode, as shared memory allows).
    fn exact_launch_plan(&self, k: ExecMatvecKernel, left: u64) -> Result<(Plan, u64), GpuError> {
        #[cfg(feature = "bench")]
        if left == 1 {
            if let Some(p) = self.variant_plan(k)? {
                return Ok((p, 1));
            }
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
            // a variant that does not apply runs what Exact runs
            #[cfg(feature = "bench")]
            ExecMatvecKernel::ProbeNoDecode
            | ExecMatvecKernel::ProbeLoads
            | ExecMatvecKernel::ProbeStream4x1
            | ExecMatvecKernel::ProbeStream2x2
            | ExecMatvecKernel::ProbeStream1x4
                if left == 1 =>
            {
                small()
            }
            ExecMatvecKernel::Exact if left == 1 => small(),
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

    fn exact_launch(&self, p: &Plan, x: u64, ncols: u32, bias: u64, out_bf16: i32, y: u64) -> Result<(), GpuError> {
        let s = &self.gpu.stream;
        let f = self.ptrs();
        let (m32, k32, ldx, ldy) = (self.shape.rows as u32, self.shape.cols as u32, self.k16, self.shape.rows);
        let cfg = LaunchConfig { grid_dim: (p.grid, 1, 1), block_dim: (p.threads, 1, 1), shared_mem_bytes: p.smem };
        let mut b = s.launch_builder(self.gpu.function(p.name)?);
        b.arg(&f.sm).arg(&f.codes).arg(&f.base).arg(&f.esc_start).arg(&f.esc).arg(&m32).arg(&k32).arg(&x).arg(&ldx).arg(&ncols);
        b.arg(&bias).arg(&y).arg(&ldy).arg(&out_bf16);
        let groups = p.tail.groups();
        if let Some(g) = &groups {
            b.arg(g);
        }
        let flags_guard = p.tail.flags().then(|| self.flags.device_ptr(s));
        if let Some((fp, _)) = &flags_guard {
            b.arg(fp);
        }
        // SAFETY: the argument list matches the entry point's, as its plan's tail says: EXEC_MATVEC
        // (exec_matvec_rows.cu, Tail::Bare), EXEC_MV3 (exec_matvec.cu, Tail::Groups) or EXEC_LEAN
        // and the bench probes on its list (Tail::GroupsFlags: G >= 1, then the tile flags, CB x M
        // rounded up to 4 bytes); the fields passed the spec 20.9 rules or came from the GPU
        // encode; x holds ncols vectors of K16 activations (matvec_raw checked the buffer), y
        // holds ncols x M outputs of the kind out_bf16 says (caller's contract), bias M values or
        // null; the plan's shared memory fits the device (exact_plan) and G divides the CTA's warps.
        unsafe { b.launch(cfg) }?;
        Ok(())
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
        if self.dequant_kernel == ExecDequantKernel::Rows && rows.is_none() {
            let items = nrows as u64 * self.col_tiles;
            let cfg = LaunchConfig { grid_dim: (items.div_ceil(16).max(1) as u32, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
            let mut b = s.launch_builder(self.gpu.function("exec_dequant_rows")?);
            b.arg(&f.sm)
                .arg(&f.codes)
                .arg(&f.base)
                .arg(&f.esc_start)
                .arg(&f.esc)
                .arg(&k32)
                .arg(&rows_ptr)
                .arg(&n32)
                .arg(&out_ptr)
                .arg(&ldo);
            // SAFETY: argument list of EXEC_DEQUANT (exec_dequant.cu); out holds nrows x K16 words.
            unsafe { b.launch(cfg) }?;
            return Ok(());
        }
        let name = "exec_dequant_d4";
        let smem = (EXEC_THREADS / 32) * 4 * EXEC_STAGE;
        let per_sm = u64::from(self.gpu.ctas_per_sm(name, EXEC_THREADS, smem)?);
        let row_groups = (nrows as u64).div_ceil(ITEM_ROWS);
        let w = u64::from(EXEC_THREADS / 32);
        let g = u64::from(self.groups(row_groups, u64::from(self.gpu.sm_count) * per_sm * w)).min(w);
        let grid = (u64::from(self.gpu.sm_count) * per_sm).min(row_groups.div_ceil(w / g)).max(1) as u32;
        let g32 = g as u32;
        let cfg = LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (EXEC_THREADS, 1, 1), shared_mem_bytes: smem };
        let mut b = s.launch_builder(self.gpu.function(name)?);
        b.arg(&f.sm)
            .arg(&f.codes)
            .arg(&f.base)
            .arg(&f.esc_start)
            .arg(&f.esc)
            .arg(&k32)
            .arg(&rows_ptr)
            .arg(&n32)
            .arg(&out_ptr)
            .arg(&ldo)
            .arg(&g32);
        // SAFETY: the argument list matches EXEC_DQ3 (kernels/exec_dequant.cu); rows (if any)
        // holds nrows indices < M (gather_into's contract), out nrows x K16 words (checked above).
        unsafe { b.launch(cfg) }?;
        Ok(())
    }

    /// Spec 20.14 into a device buffer of at least M x K16 words (pad columns 0).
    pub fn dequant_into(&self, out: &mut CudaSlice<u16>) -> Result<(), GpuError> {
        self.expand(None, self.shape.rows as usize, out)
    }

    /// Spec 20.14: the whole matrix as BF16 words, M rows of stride K16 (pad columns 0).
    pub fn dequant(&self) -> Result<Vec<u16>, GpuError> {
        let s = &self.gpu.stream;
        let mut out = s.alloc_zeros::<u16>(self.shape.rows as usize * self.row_stride())?;
        self.dequant_into(&mut out)?;
        Ok(s.clone_dtoh(&out)?)
    }

    /// Spec 20.14 gather: the given rows (any order, repeats allowed) as dequant rows.
    pub fn gather(&self, rows: &[u64]) -> Result<Vec<u16>, GpuError> {
        if let Some(&index) = rows.iter().find(|&&r| r >= self.shape.rows) {
            return Err(ParamError::RowIndex { index, rows: self.shape.rows }.into());
        }
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let s = &self.gpu.stream;
        let sel = s.clone_htod(&rows.iter().map(|&r| r as u32).collect::<Vec<_>>())?;
        let mut out = s.alloc_zeros::<u16>(rows.len() * self.row_stride())?;
        // SAFETY: every index was checked against M above (M <= 2^31, spec 3.2, so it fits a u32).
        unsafe { self.gather_into(&sel, &mut out) }?;
        Ok(s.clone_dtoh(&out)?)
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
    /// [`ExecMatvecKernel::Bounded`], activations that are all BF16 values run on tensor cores.
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
