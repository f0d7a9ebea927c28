//! Data derived at load from a matrix's fields, not part of the layout (spec 20.3): the tile
//! flags of the lean and strip exact kernels and the patch list of the bounded kernels' items
//! (strip, panel; kernels/exec_derived.cu has both layouts). Every `GpuExecMatrix` constructor makes them on the
//! device from the validated or GPU-encoded fields; `stored_bytes` counts them.

use super::encode::inclusive_scan;
use crate::gpu::Gpu;
use crate::GpuError;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut, LaunchConfig, PushKernelArg};
use nwc_reference::exec::ExecGeometry;
use nwc_reference::Shape;
use std::sync::Arc;

/// Items of the bounded kernels per row group and tile (128 of a tile's 512 columns each).
const ITEMS_PER_TILE: u64 = 4;
/// Rows of a row group (an item's rows).
const GROUP_ROWS: u64 = 16;

pub(super) struct Derived {
    /// One byte per tile, laid out [cb][M rounded up to 4]: 0 where the tile's columns k < K hold
    /// no code 0 or 15, else the escape byte that all its code-15 weights share where they share
    /// one and it is at least 2, or 2 where it has code 0 and no code 15, else 1
    /// (`exec_tile_flags`). The lean and strip kernels find
    /// the tiles that need more than the fast decode without testing every code; the strip
    /// kernels patch a tile whose escapes share one byte without its escape offset or a load of esc.
    pub flags: CudaSlice<u8>,
    /// Patch list offsets: item i's entries are `ent[off[i] .. off[i + 1])` (I + 1 words).
    pub plist_off: CudaSlice<u32>,
    /// Patch list entries, two words each (position, BF16 pair word); at least one allocated.
    pub plist_ent: CudaSlice<u32>,
    plist_entries: u64,
}

fn grid_cfg(threads: u64) -> LaunchConfig {
    LaunchConfig { grid_dim: (threads.div_ceil(256).clamp(1, 4096) as u32, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 }
}

/// Which tiles the tile flags give an escape byte (kernel argument `rule` of `exec_tile_flags`).
/// Every rule gives the same products; they differ in which rows take the escape prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TileFlagRule {
    /// None: every flagged tile is 1 (before session 23; bench only).
    Plain = 0,
    /// A tile with exactly one code-15 weight (sessions 23-25; bench only).
    LoneByte = 1,
    /// A tile whose code-15 weights all share one escape byte (production, session 26).
    SharedByte = 2,
}

/// `exec_tile_flags` into `flags` (CB x roundup(M, 4) bytes) under `rule` (production:
/// [`TileFlagRule::SharedByte`]; others from `GpuExecMatrix::set_tile_flag_rule`).
#[allow(clippy::too_many_arguments)]
pub(super) fn tile_flags(
    gpu: &Arc<Gpu>,
    shape: Shape,
    col_tiles: u64,
    codes: &CudaSlice<u8>,
    esc_start: &CudaSlice<u32>,
    esc: &CudaSlice<u8>,
    rule: TileFlagRule,
    flags: &mut CudaSlice<u8>,
) -> Result<(), GpuError> {
    let s = &gpu.stream;
    let (m32, k32, rule) = (shape.rows as u32, shape.cols as u32, rule as i32);
    let (pc, _gc) = codes.device_ptr(s);
    let (pes, _ges) = esc_start.device_ptr(s);
    let (pesc, _gesc) = esc.device_ptr(s);
    let (pf, _gf) = flags.device_ptr_mut(s);
    let mut b = s.launch_builder(gpu.function("exec_tile_flags")?);
    b.arg(&pc).arg(&pes).arg(&pesc).arg(&m32).arg(&k32).arg(&rule).arg(&pf);
    // SAFETY: argument list of exec_tile_flags (exec_derived.cu); codes holds M x K16 / 2 bytes
    // and esc_start M x CB + 1 words into the E bytes of esc (validated or GPU-encoded; esc is
    // read only at the n15 >= 1 escapes of a tile's code-15 weights, esc_start[t] .. + n15 <= E); flags holds
    // CB x roundup(M, 4) bytes; the kernel strides over tiles, one warp each.
    unsafe { b.launch(grid_cfg(shape.rows * col_tiles * 32)) }?;
    Ok(())
}

impl Derived {
    /// Both derived structures of a matrix whose fields (already on `gpu`) are valid (spec 20.9).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        gpu: &Arc<Gpu>,
        g: &ExecGeometry,
        sm: &CudaSlice<u8>,
        codes: &CudaSlice<u8>,
        base: &CudaSlice<u8>,
        esc_start: &CudaSlice<u32>,
        esc: &CudaSlice<u8>,
    ) -> Result<Derived, GpuError> {
        let s = &gpu.stream;
        let (m, cb) = (g.shape.rows, g.col_tiles);
        let (m32, k32) = (m as u32, g.shape.cols as u32);
        let tiles = m * cb;
        let mut flags = s.alloc_zeros::<u8>((cb * m.div_ceil(4) * 4) as usize)?;
        let items = m.div_ceil(GROUP_ROWS) * cb * ITEMS_PER_TILE;
        let n = items * GROUP_ROWS;
        let cnt = s.alloc_zeros::<u32>((n + 1) as usize)?;
        let dense = s.alloc_zeros::<u8>(items as usize)?;
        tile_flags(gpu, g.shape, cb, codes, esc_start, esc, TileFlagRule::SharedByte, &mut flags)?;
        {
            let (pc, _gc) = codes.device_ptr(s);
            let (pn, _gn) = cnt.device_ptr(s);
            let (pd, _gd) = dense.device_ptr(s);
            // SAFETY (two launches): argument lists of exec_plist_count and exec_plist_dense
            // (exec_derived.cu); codes holds M x K16 / 2 bytes (validated or GPU-encoded), cnt
            // 16 I + 1 words and dense I bytes for the I items; the kernels stride over tiles (one
            // warp each) or items.
            unsafe {
                let mut b = s.launch_builder(gpu.function("exec_plist_count")?);
                b.arg(&pc).arg(&m32).arg(&k32).arg(&pn);
                b.launch(grid_cfg(tiles * 32))?;
                let mut b = s.launch_builder(gpu.function("exec_plist_dense")?);
                b.arg(&m32).arg(&k32).arg(&pn).arg(&pd);
                b.launch(grid_cfg(items))?;
            }
        }
        // At most 16 entries per item once dense items are capped, so at most M x K16 / 128 < 2^34
        // (spec 20.16): the u32 offsets hold the lists of all but matrices past 2^39 weights, and
        // the scan's total (u64) says which.
        let entries = inclusive_scan(gpu, &cnt, n)?;
        if entries > u64::from(u32::MAX) {
            return Err(GpuError::DerivedTooLarge { what: "bounded kernel's patch list", got: entries, limit: u64::from(u32::MAX) });
        }
        let plist_ent = s.alloc_zeros::<u32>((2 * entries.max(1)) as usize)?;
        let plist_off = s.alloc_zeros::<u32>((items + 1) as usize)?;
        {
            let (psm, _g0) = sm.device_ptr(s);
            let (pc, _g1) = codes.device_ptr(s);
            let (pb, _g2) = base.device_ptr(s);
            let (pes, _g3) = esc_start.device_ptr(s);
            let (pesc, _g4) = esc.device_ptr(s);
            let (pn, _g5) = cnt.device_ptr(s);
            let (pd, _g6) = dense.device_ptr(s);
            let (pe, _g7) = plist_ent.device_ptr(s);
            let (po, _g8) = plist_off.device_ptr(s);
            let mut b = s.launch_builder(gpu.function("exec_plist_emit")?);
            b.arg(&psm).arg(&pc).arg(&pb).arg(&pes).arg(&pesc).arg(&m32).arg(&k32).arg(&pn).arg(&pd).arg(&pe).arg(&po);
            // SAFETY: argument list of exec_plist_emit (exec_derived.cu); the five fields are
            // valid (esc holds the E bytes esc_start points into), cnt is the scanned count of
            // `entries` entries, ent holds 2 x entries words, off I + 1 words.
            unsafe { b.launch(grid_cfg(tiles * 32)) }?;
        }
        Ok(Derived { flags, plist_off, plist_ent, plist_entries: entries })
    }

    pub fn try_clone(&self, s: &Arc<CudaStream>) -> Result<Derived, GpuError> {
        Ok(Derived {
            flags: s.clone_dtod(&self.flags)?,
            plist_off: s.clone_dtod(&self.plist_off)?,
            plist_ent: s.clone_dtod(&self.plist_ent)?,
            plist_entries: self.plist_entries,
        })
    }

    /// VRAM bytes: the tile flags, the list's offsets and its entries (8 bytes each).
    pub fn bytes(&self) -> u64 {
        self.flags.len() as u64 + 4 * self.plist_off.len() as u64 + 8 * self.plist_entries
    }

    /// Entries of the patch list (listed pairs, plus one per row of each dense item).
    pub fn plist_entries(&self) -> u64 {
        self.plist_entries
    }
}
