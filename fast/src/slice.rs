//! Spec 18: tensor-parallel slicing. The rows [r0, r1) of an encoded matrix become a standalone
//! encoded matrix without re-encoding: whole row blocks are cut out of `bases`, `hdr`, `data`,
//! `low` and `scale`, and the table is kept. The slice is valid (spec 13) but in general not
//! canonical (spec 14): its ranking is the whole matrix's, not the one its own rows would give.

use nwc_reference::geometry::{LANES, RAW_SLACK, TAIL_SLACK};
use nwc_reference::{check_structure, DecodeError, ElemType, EncodedMatrix, Geometry, Layout, Limits, Shape};

/// Why a row range cannot be sliced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SliceError {
    /// Spec 18.1: r0 < r1 <= M, r0 a multiple of the block height, r1 too unless it is M.
    Range { r0: u64, r1: u64, rows: u64, block_rows: u64 },
    /// The source matrix breaks a structural rule (spec 13.2 - 13.10, 13.19).
    Source(DecodeError),
}

impl std::fmt::Display for SliceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SliceError::Range { r0, r1, rows, block_rows } => write!(
                f,
                "slice-range (spec 18.1): rows [{r0}, {r1}) of a {rows}-row matrix: need r0 < r1 <= {rows}, \
                 r0 a multiple of {block_rows} and r1 a multiple of {block_rows} or equal to {rows}"
            ),
            SliceError::Source(e) => write!(f, "slice source: {e}"),
        }
    }
}

impl std::error::Error for SliceError {}

fn align8(x: usize) -> usize {
    x.div_ceil(8) * 8
}

/// Spec 18.2: the rows [r0, r1) of `m` as a standalone encoded matrix (valid, not canonical).
/// The structural rules of `m` are checked first; lane streams are copied as they are, so a
/// source with broken lanes gives a slice that fails validation the same way.
pub fn slice_rows(m: &EncodedMatrix, r0: u64, r1: u64) -> Result<EncodedMatrix, SliceError> {
    check_structure(m, &Limits::unlimited()).map_err(SliceError::Source)?;
    let g = Geometry::new(m.mode, m.shape).expect("checked");
    let h = m.mode.layout.block_rows();
    let rows = m.shape.rows;
    if !(r0 < r1 && r1 <= rows && r0 % h == 0 && (r1 % h == 0 || r1 == rows)) {
        return Err(SliceError::Range { r0, r1, rows, block_rows: h });
    }
    let cb = g.col_blocks as usize;
    let (b0, b1) = ((r0 / h) as usize * cb, (r1.div_ceil(h)) as usize * cb);
    // Spec 9.2, 9.3: the blocks b0..b1 are contiguous in `data`; the first starts 8-aligned, so
    // shifting every offset by bases[b0] keeps them 8-aligned and back to back.
    let first = m.bases[b0] as usize;
    let last_len: usize = m.hdr[(b1 - 1) * LANES..b1 * LANES].iter().map(|&w| 4 * usize::from(w)).sum();
    let end = m.bases[b1 - 1] as usize + last_len;
    let mut data = m.data[first..end].to_vec();
    data.resize(align8(data.len()) + TAIL_SLACK as usize, 0); // spec 9.4, 9.5 (read-ahead slack)
    let bases = m.bases[b0..b1].iter().map(|&b| b - first as u32).collect();
    let hdr = m.hdr[b0 * LANES..b1 * LANES].to_vec();
    // Spec 7.5 / 8.5: the raw plane of the slice is a contiguous run of the source's.
    let halve = |x: u64| if m.mode.elem == ElemType::Fp8E4m3 { x / 2 } else { x };
    let (lo, hi) = match m.mode.layout {
        Layout::Rows8 => (halve(r0 * g.k16), halve(r1 * g.k16)),
        Layout::Fragment16 => (halve(r0 * g.k32), halve(r1.div_ceil(16) * 16 * g.k32)),
    };
    let mut low = m.low[lo as usize..hi as usize].to_vec();
    if m.low.len() as u64 == g.n_low + RAW_SLACK {
        low.resize(low.len() + RAW_SLACK as usize, 0); // keep the source's slack convention
    }
    let scale = m.scale.as_ref().map(|s| s[r0 as usize..r1 as usize].to_vec());
    Ok(EncodedMatrix { mode: m.mode, shape: Shape::new(r1 - r0, m.shape.cols), data, bases, hdr, lut: m.lut.clone(), low, scale })
}
