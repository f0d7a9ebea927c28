//! Spec 3: shapes, hard limits and the sizes derived from them.

use crate::error::{FormatError, LimitError};
use crate::mode::{ElemType, Layout, Mode};

/// Spec 3.2: hard limits of the format. A shape outside them is not a format-10 matrix.
pub mod hard {
    /// Most rows (the 0.10.1 library wraps its 32-bit padded row count near 2^32).
    pub const MAX_ROWS: u64 = 1 << 31;
    /// Most columns, so that K rounded up to 512 still fits in a u32.
    pub const MAX_COLS: u64 = (1 << 31) - 512;
    /// Most weights in one matrix.
    pub const MAX_WEIGHTS: u64 = 1 << 40;
    /// Most bytes of the `data` field (align8(end) + 64), so every block offset fits in a u32.
    pub const MAX_DATA_LEN: u64 = u32::MAX as u64;
}

/// Columns per column block (spec 3.4, 3.5).
pub const BLOCK_COLS: u64 = 512;
/// Lanes per block, one header byte each (spec 7.2, 8.2, 9.1).
pub const LANES: usize = 32;
/// Bytes of read-ahead slack after the 8-aligned stream end (spec 9.4, 9.5).
pub const TAIL_SLACK: u64 = 64;
/// Bytes of raw-plane slack a stored `low` field may carry (spec 9.6).
pub const RAW_SLACK: u64 = 512;
/// Entries of the lookup table (spec 10.1).
pub const LUT_ENTRIES: usize = 4096;

/// Rows and columns of a row-major weight matrix (spec 3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shape {
    pub rows: u64,
    pub cols: u64,
}

impl Shape {
    pub fn new(rows: u64, cols: u64) -> Shape {
        Shape { rows, cols }
    }

    /// Number of weights M*K (callers check the hard limits first).
    pub fn weights(self) -> u64 {
        self.rows * self.cols
    }

    /// Spec 3.2: both dimensions at least 1 and within the hard limits, and M*K too.
    pub fn within_hard_limits(self) -> bool {
        let Shape { rows, cols } = self;
        rows != 0
            && cols != 0
            && rows <= hard::MAX_ROWS
            && cols <= hard::MAX_COLS
            && rows.checked_mul(cols).is_some_and(|n| n <= hard::MAX_WEIGHTS)
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}", self.rows, self.cols)
    }
}

/// Resource limits an implementation imposes on top of the hard limits (spec 3.3).
/// Exceeding them is a [`LimitError`], never a format error: the file may be fine, this
/// process just refuses to spend that much.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_rows: u64,
    pub max_cols: u64,
    pub max_weights: u64,
    /// Largest single allocation sized by the input, in bytes.
    pub max_alloc_bytes: u64,
}

impl Default for Limits {
    /// Defaults: the hard row/column limits, 2^34 weights (a 32 GiB BF16 matrix) and
    /// 2^36 bytes per allocation.
    fn default() -> Limits {
        Limits { max_rows: hard::MAX_ROWS, max_cols: hard::MAX_COLS, max_weights: 1 << 34, max_alloc_bytes: 1 << 36 }
    }
}

impl Limits {
    /// No limits beyond the format's own.
    pub fn unlimited() -> Limits {
        Limits { max_rows: u64::MAX, max_cols: u64::MAX, max_weights: u64::MAX, max_alloc_bytes: u64::MAX }
    }

    /// Checks the shape against these limits.
    pub fn check_shape(&self, shape: Shape) -> Result<(), LimitError> {
        if shape.rows > self.max_rows {
            return Err(LimitError::Rows { got: shape.rows, limit: self.max_rows });
        }
        if shape.cols > self.max_cols {
            return Err(LimitError::Cols { got: shape.cols, limit: self.max_cols });
        }
        let n = shape.rows.saturating_mul(shape.cols);
        if n > self.max_weights {
            return Err(LimitError::Weights { got: n, limit: self.max_weights });
        }
        Ok(())
    }

    /// Checks an allocation of `bytes` sized by the input.
    pub fn check_alloc(&self, what: &'static str, bytes: u64) -> Result<(), LimitError> {
        if bytes > self.max_alloc_bytes {
            return Err(LimitError::Allocation { what, got: bytes, limit: self.max_alloc_bytes });
        }
        Ok(())
    }
}

fn round_up(x: u64, to: u64) -> u64 {
    x.div_ceil(to) * to
}

/// Spec 3.4 - 3.6: every size derived from a shape and a mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub mode: Mode,
    pub shape: Shape,
    /// K rounded up to 16: the row stride of the layout-0 raw plane and of dequant output.
    pub k16: u64,
    /// K rounded up to 32: columns coded in layout 1.
    pub k32: u64,
    /// K rounded up to 512.
    pub kp: u64,
    /// Column blocks, Kp / 512.
    pub col_blocks: u64,
    /// Rows rounded up to the block height (Mp = 8 in layout 0, M16 in layout 1).
    pub padded_rows: u64,
    /// Row blocks, padded_rows / block height.
    pub row_blocks: u64,
    /// 32-column super-chunks, K32 / 32 (layout 1).
    pub super_chunks: u64,
    /// Blocks, row_blocks * col_blocks.
    pub blocks: u64,
    /// Bytes of the raw plane without slack.
    pub n_low: u64,
}

impl Geometry {
    /// Spec 3.2 (rule 13.2 shape-range) and 3.4 - 3.6.
    pub fn new(mode: Mode, shape: Shape) -> Result<Geometry, FormatError> {
        let Shape { rows, cols } = shape;
        if !shape.within_hard_limits() {
            return Err(FormatError::ShapeRange { rows, cols });
        }
        let k16 = round_up(cols, 16);
        let k32 = round_up(cols, 32);
        let kp = round_up(cols, BLOCK_COLS);
        let height = mode.layout.block_rows();
        let padded_rows = round_up(rows, height);
        let row_blocks = padded_rows / height;
        let col_blocks = kp / BLOCK_COLS;
        let n_low_bf16 = match mode.layout {
            Layout::Rows8 => rows * k16,
            Layout::Fragment16 => padded_rows * k32,
        };
        let n_low = match mode.elem {
            ElemType::Bf16 => n_low_bf16,
            ElemType::Fp8E4m3 => n_low_bf16 / 2,
        };
        Ok(Geometry {
            mode,
            shape,
            k16,
            k32,
            kp,
            col_blocks,
            padded_rows,
            row_blocks,
            super_chunks: k32 / 32,
            blocks: row_blocks * col_blocks,
            n_low,
        })
    }

    /// Codes in each lane of block `b` (spec 7.3: 128; spec 8.3: 16 per super-chunk of the block).
    pub fn codes_per_lane(&self, block: u64) -> usize {
        match self.mode.layout {
            Layout::Rows8 => 128,
            Layout::Fragment16 => 16 * self.chunks_in_block(block % self.col_blocks) as usize,
        }
    }

    /// Layout 1: super-chunks coded in column block `cb` (spec 8.1).
    pub fn chunks_in_block(&self, cb: u64) -> u64 {
        (self.super_chunks - 16 * cb).min(16)
    }

    /// Spec 6.6: the most 32-bit words a lane stream of this mode can need.
    pub fn max_lane_words(&self) -> u8 {
        match (self.mode.elem, self.mode.layout) {
            (ElemType::Bf16, Layout::Rows8) => 96,
            (ElemType::Fp8E4m3, Layout::Rows8) => 44,
            (ElemType::Bf16, Layout::Fragment16) => 192,
            (ElemType::Fp8E4m3, Layout::Fragment16) => 88,
        }
    }
}
