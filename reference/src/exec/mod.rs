//! Spec 20: the execution layout, a second representation of a BF16 matrix made for GPU matvec:
//! a raw sign-mantissa byte per weight, a fixed-width 4-bit exponent code per weight relative to a
//! per-row window base, and the exponents that fall outside the window kept out of line per tile.
//!
//! It is a pure function of the BF16 matrix ([`encode_exec`]); [`transcode`] derives it from a
//! format-10 encoding by decoding that first, so every encoding of a matrix transcodes to the same
//! bytes. [`decode_exec`] checks every rule of spec 20.9 in the order of spec 20.10 before it
//! returns anything, and the decoded matrix answers dequant, gather and matvec (spec 20.13-20.15).
//!
//! ```
//! use nwc_reference::exec::{decode_exec, encode_exec};
//! use nwc_reference::Shape;
//! let words = [0x3F80u16, 0x4000, 0xBF00]; // [1.0, 2.0, -0.5]
//! let m = encode_exec(Shape::new(1, 3), &words).unwrap();
//! assert_eq!(m.base, [115]); // the smallest base whose window holds exponents 126..=128
//! assert_eq!(decode_exec(&m).unwrap().words, words);
//! ```

mod encode;
pub mod error;
mod semantics;
mod validate;

pub use encode::{canonical_base, encode_exec, encode_exec_with_bases, exponent, transcode, transcode_with_limits};
pub use error::{ExecDecodeError, ExecEncodeError, ExecField, ExecFormatError};
pub use semantics::ExecDecoded;
pub use validate::{check_canonical, decode_exec, decode_exec_with_limits, non_canonical, parse_le_fields, validate_exec, NonCanonical};

use crate::geometry::Shape;

/// Columns per tile (spec 20.2): a tile is one row's slice of 512 columns.
pub const TILE_COLS: u64 = 512;
/// Spec 20.6: codes 1..14 cover the 14 exponents base..base+13.
pub const WINDOW: u8 = 14;
/// Spec 20.6: the code of an exponent kept in `esc`.
pub const ESCAPE_CODE: u8 = 15;
/// Spec 20.6: the largest base, so that base + 13 <= 255.
pub const MAX_BASE: u8 = 242;
/// Spec 20.6: the smallest base (exponent 0 always has code 0).
pub const MIN_BASE: u8 = 1;

/// Spec 20.2: the sizes derived from a shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExecGeometry {
    pub shape: Shape,
    /// K rounded up to 16: the row stride of `sm` (bytes) and of `codes` (codes, two per byte).
    pub k16: u64,
    /// Tiles per row, ceil(K / 512).
    pub col_tiles: u64,
    /// Tiles of the matrix, M x col_tiles.
    pub tiles: u64,
}

impl ExecGeometry {
    /// Spec 20.2 (the limits of spec 3.2; rule 20.9.1 exec-shape-range).
    pub fn new(shape: Shape) -> Result<ExecGeometry, ExecFormatError> {
        let Shape { rows, cols } = shape;
        if !shape.within_hard_limits() {
            return Err(ExecFormatError::ShapeRange { rows, cols });
        }
        let col_tiles = cols.div_ceil(TILE_COLS);
        Ok(ExecGeometry { shape, k16: cols.div_ceil(16) * 16, col_tiles, tiles: rows * col_tiles })
    }

    /// Spec 20.3: the length in bytes of each field except `esc` (whose length is `esc_start[T]`).
    pub fn field_bytes(&self, field: ExecField) -> Option<u64> {
        let m = self.shape.rows;
        match field {
            ExecField::Sm => Some(m * self.k16),
            ExecField::Codes => Some(m * self.k16 / 2),
            ExecField::Base => Some(m),
            ExecField::EscStart => Some(4 * (self.tiles + 1)),
            ExecField::Esc => None,
        }
    }

    /// The tile holding (row, col): t = row * CB + col / 512 (spec 20.7).
    pub fn tile(&self, row: u64, col: u64) -> u64 {
        row * self.col_tiles + col / TILE_COLS
    }
}

/// The stored fields of one execution layout (spec 20.3) and its shape (metadata, spec 20.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecMatrix {
    pub shape: Shape,
    /// Sign bit and 7 mantissa bits of every weight, M x K16, pads 0 (spec 20.4).
    pub sm: Vec<u8>,
    /// 4-bit codes, two per byte (even column in bits 0..3), M x K16 / 2, pads 0 (spec 20.5).
    pub codes: Vec<u8>,
    /// Window base of each row, 1..=242 (spec 20.6).
    pub base: Vec<u8>,
    /// T + 1 offsets into `esc`, one per tile plus the end (spec 20.7).
    pub esc_start: Vec<u32>,
    /// The exponents of the escaped weights, in row-major position order (spec 20.7).
    pub esc: Vec<u8>,
}

impl ExecMatrix {
    /// The 4-bit code at (row, col), col < K16 (spec 20.5). Callers check the field sizes first.
    pub fn code(&self, k16: u64, row: u64, col: u64) -> u8 {
        let byte = self.codes[(row * (k16 / 2) + col / 2) as usize];
        if col % 2 == 0 {
            byte & 0x0F
        } else {
            byte >> 4
        }
    }

    /// The stored size in bytes (spec 20.18): all five fields, esc_start as 4 bytes an entry.
    pub fn stored_bytes(&self) -> u64 {
        (self.sm.len() + self.codes.len() + self.base.len() + 4 * self.esc_start.len() + self.esc.len()) as u64
    }

    /// The fields as little-endian bytes, in the order of spec 20.3 (what the corpus stores).
    pub fn to_le_fields(&self) -> [(ExecField, Vec<u8>); 5] {
        let esc_start = self.esc_start.iter().flat_map(|v| v.to_le_bytes()).collect();
        [
            (ExecField::Sm, self.sm.clone()),
            (ExecField::Codes, self.codes.clone()),
            (ExecField::Base, self.base.clone()),
            (ExecField::EscStart, esc_start),
            (ExecField::Esc, self.esc.clone()),
        ]
    }
}
