//! Spec 20.9, 20.10, 20.13: the validity rules of the execution layout, checked in their total
//! order, and decoding. Nothing is returned unless every rule holds.

use super::encode::canonical_base;
use super::error::{ExecDecodeError, ExecField, ExecFormatError};
use super::semantics::ExecDecoded;
use super::{ExecGeometry, ExecMatrix, ESCAPE_CODE, MAX_BASE, MIN_BASE, TILE_COLS, WINDOW};
use crate::geometry::{Limits, Shape};

/// Spec 20.9.1, 20.9.2: the shape and the byte lengths of the four fields whose size the shape
/// fixes, in the order of spec 20.10, then the fields as an [`ExecMatrix`]. A missing field is
/// an empty slice. `esc` is taken as it is: its length is rule 20.9.8's business.
pub fn parse_le_fields(
    shape: Shape,
    sm: &[u8],
    codes: &[u8],
    base: &[u8],
    esc_start: &[u8],
    esc: &[u8],
) -> Result<ExecMatrix, ExecFormatError> {
    let g = ExecGeometry::new(shape)?;
    for (field, bytes) in [(ExecField::Sm, sm), (ExecField::Codes, codes), (ExecField::Base, base), (ExecField::EscStart, esc_start)] {
        let expected = g.field_bytes(field).expect("fixed-size field");
        if bytes.len() as u64 != expected {
            return Err(ExecFormatError::FieldSize { field, got: bytes.len() as u64, expected });
        }
    }
    Ok(ExecMatrix {
        shape,
        sm: sm.to_vec(),
        codes: codes.to_vec(),
        base: base.to_vec(),
        esc_start: esc_start.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
        esc: esc.to_vec(),
    })
}

/// Checks every rule of spec 20.9 under the default [`Limits`].
pub fn validate_exec(m: &ExecMatrix) -> Result<(), ExecDecodeError> {
    decode_exec(m).map(|_| ())
}

/// Validates and decodes under the default [`Limits`].
pub fn decode_exec(m: &ExecMatrix) -> Result<ExecDecoded, ExecDecodeError> {
    decode_exec_with_limits(m, &Limits::default())
}

/// Validates (spec 20.10: the rules in their total order, the first broken one reported) and
/// decodes (spec 20.13). The limits are checked after the shape and before any field is read.
pub fn decode_exec_with_limits(m: &ExecMatrix, limits: &Limits) -> Result<ExecDecoded, ExecDecodeError> {
    let g = ExecGeometry::new(m.shape)?; // 20.9.1
    limits.check_shape(m.shape)?;
    limits.check_alloc("decoded weights", 2 * m.shape.weights())?;
    check_sizes(m, &g)?; // 20.9.2
    check_bases(m)?; // 20.9.3
    check_pads(m, &g)?; // 20.9.4, 20.9.5
    check_esc_start(m, &g)?; // 20.9.6 - 20.9.8
    check_counts(m, &g)?; // 20.9.9
    let words = decode_words(m, &g)?; // 20.9.10
    Ok(ExecDecoded { shape: m.shape, words })
}

/// A valid execution layout whose base differs from the canonical one (spec 20.8) in some row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NonCanonical {
    pub row: u64,
    pub base: u8,
    pub canonical: u8,
}

/// Spec 20.11: Ok(None) when `m` is the canonical execution layout of the matrix it carries,
/// Ok(Some(first row with another base)) when it is valid but not canonical.
pub fn check_canonical(m: &ExecMatrix) -> Result<Option<NonCanonical>, ExecDecodeError> {
    let d = decode_exec(m)?;
    Ok(non_canonical(m, &d))
}

/// Spec 20.11 on a layout already decoded (`d` from `m`): the first row whose base is not the
/// canonical base of its weights (spec 20.8), if any.
pub fn non_canonical(m: &ExecMatrix, d: &ExecDecoded) -> Option<NonCanonical> {
    let k = m.shape.cols as usize;
    d.words.chunks_exact(k).zip(&m.base).enumerate().find_map(|(row, (w, &base))| {
        let canonical = canonical_base(w);
        (canonical != base).then_some(NonCanonical { row: row as u64, base, canonical })
    })
}

/// Rule 20.9.2 for an [`ExecMatrix`] (`esc_start` counted in bytes, 4 per entry).
fn check_sizes(m: &ExecMatrix, g: &ExecGeometry) -> Result<(), ExecFormatError> {
    let lengths = [
        (ExecField::Sm, m.sm.len() as u64),
        (ExecField::Codes, m.codes.len() as u64),
        (ExecField::Base, m.base.len() as u64),
        (ExecField::EscStart, 4 * m.esc_start.len() as u64),
    ];
    for (field, got) in lengths {
        let expected = g.field_bytes(field).expect("fixed-size field");
        if got != expected {
            return Err(ExecFormatError::FieldSize { field, got, expected });
        }
    }
    Ok(())
}

/// Rule 20.9.3, rows ascending.
fn check_bases(m: &ExecMatrix) -> Result<(), ExecFormatError> {
    match m.base.iter().position(|b| !(MIN_BASE..=MAX_BASE).contains(b)) {
        Some(row) => Err(ExecFormatError::BaseRange { row: row as u64, got: m.base[row] }),
        None => Ok(()),
    }
}

/// Rules 20.9.4 (every sm pad, row-major) then 20.9.5 (every pad code, row-major).
fn check_pads(m: &ExecMatrix, g: &ExecGeometry) -> Result<(), ExecFormatError> {
    let (rows, k, k16) = (m.shape.rows, m.shape.cols, g.k16);
    for row in 0..rows {
        for col in k..k16 {
            let offset = row * k16 + col;
            let got = m.sm[offset as usize];
            if got != 0 {
                return Err(ExecFormatError::SmPadding { row, col, offset, got });
            }
        }
    }
    for row in 0..rows {
        for col in k..k16 {
            let got = m.code(k16, row, col);
            if got != 0 {
                let offset = row * (k16 / 2) + col / 2;
                return Err(ExecFormatError::CodePadding { row, col, offset, got });
            }
        }
    }
    Ok(())
}

/// Rules 20.9.6 - 20.9.8.
fn check_esc_start(m: &ExecMatrix, g: &ExecGeometry) -> Result<(), ExecFormatError> {
    if m.esc_start[0] != 0 {
        return Err(ExecFormatError::EscStartFirst { got: m.esc_start[0] });
    }
    if let Some(t) = (1..m.esc_start.len()).find(|&t| m.esc_start[t] < m.esc_start[t - 1]) {
        let (got, previous) = (m.esc_start[t], m.esc_start[t - 1]);
        return Err(ExecFormatError::EscStartOrder { entry: t as u64, got, previous });
    }
    let last = m.esc_start[g.tiles as usize];
    if u64::from(last) != m.esc.len() as u64 {
        return Err(ExecFormatError::EscLength { entry: g.tiles, last, got: m.esc.len() as u64 });
    }
    Ok(())
}

/// Columns [first, end) of tile `cb` of a row (spec 20.2).
fn tile_cols(k: u64, cb: u64) -> std::ops::Range<u64> {
    TILE_COLS * cb..(TILE_COLS * (cb + 1)).min(k)
}

/// Rule 20.9.9, tiles ascending.
fn check_counts(m: &ExecMatrix, g: &ExecGeometry) -> Result<(), ExecFormatError> {
    let k = m.shape.cols;
    for tile in 0..g.tiles {
        let (row, cb) = (tile / g.col_tiles, tile % g.col_tiles);
        let codes = tile_cols(k, cb).filter(|&col| m.code(g.k16, row, col) == ESCAPE_CODE).count() as u64;
        let counted = u64::from(m.esc_start[tile as usize + 1] - m.esc_start[tile as usize]);
        if codes != counted {
            return Err(ExecFormatError::EscCount { tile, row, col: TILE_COLS * cb, codes, counted });
        }
    }
    Ok(())
}

/// Spec 20.13 with rule 20.9.10 (esc bytes in order): the BF16 words, row-major M x K.
fn decode_words(m: &ExecMatrix, g: &ExecGeometry) -> Result<Vec<u16>, ExecFormatError> {
    let (rows, k) = (m.shape.rows, m.shape.cols);
    let mut words = Vec::with_capacity((rows * k) as usize);
    // Rule 20.9.9 holds, so the escapes of the tiles follow each other from esc[0]: one cursor.
    let mut next_esc = 0usize;
    for row in 0..rows {
        let base = m.base[row as usize];
        for col in 0..k {
            let code = m.code(g.k16, row, col);
            let e = match code {
                0 => 0,
                ESCAPE_CODE => {
                    let (offset, got) = (next_esc as u64, m.esc[next_esc]);
                    next_esc += 1;
                    let why = if got == 0 {
                        Some("is 0, which has code 0".to_owned())
                    } else if got >= base && got - base < WINDOW {
                        Some(format!("is inside the window {base}..={} of its row, which has code {}", base + 13, got - base + 1))
                    } else {
                        None
                    };
                    if let Some(why) = why {
                        return Err(ExecFormatError::EscapeInWindow { offset, row, col, got, why });
                    }
                    got
                }
                c => base + (c - 1), // at most 242 + 13 = 255
            };
            let s = u16::from(m.sm[(row * g.k16 + col) as usize]);
            words.push(((s & 0x80) << 8) | (u16::from(e) << 7) | (s & 0x7F));
        }
    }
    Ok(words)
}
