//! Spec 20.4-20.8, 20.12: building the execution layout of a BF16 matrix, with the canonical base
//! or with given bases, and transcoding a format-10 encoding (decode first, then encode).

use super::error::ExecEncodeError;
use super::{ExecGeometry, ExecMatrix, ESCAPE_CODE, MAX_BASE, MIN_BASE, WINDOW};
use crate::decode::decode_with_limits;
use crate::error::DecodeError;
use crate::geometry::{Limits, Shape};
use crate::matrix::{Elements, EncodedMatrix};
use crate::mode::ElemType;

/// Spec 20.6: the 8-bit exponent field of a BF16 word.
pub fn exponent(word: u16) -> u8 {
    ((word >> 7) & 0xFF) as u8
}

/// Spec 20.4: the sign-mantissa byte of a BF16 word.
fn sm_byte(word: u16) -> u8 {
    (((word >> 8) & 0x80) | (word & 0x7F)) as u8
}

/// Spec 20.8: the smallest base in 1..=242 whose window base..base+13 holds the most weights of
/// the row (1 for a row without a nonzero exponent).
pub fn canonical_base(row: &[u16]) -> u8 {
    let mut hist = [0u64; 256];
    for &w in row {
        hist[usize::from(exponent(w))] += 1;
    }
    let window = |b: usize| hist[b..b + usize::from(WINDOW)].iter().sum::<u64>();
    let (mut best, mut best_count) = (MIN_BASE, window(usize::from(MIN_BASE)));
    for b in MIN_BASE + 1..=MAX_BASE {
        let count = window(usize::from(b));
        // Strictly more: ties keep the smaller base.
        if count > best_count {
            (best, best_count) = (b, count);
        }
    }
    best
}

/// Spec 20.6: the code of exponent `e` under `base` (15 means the exponent goes to `esc`).
fn code_of(e: u8, base: u8) -> u8 {
    if e == 0 {
        0
    } else if e >= base && e - base < WINDOW {
        e - base + 1
    } else {
        ESCAPE_CODE
    }
}

fn check_input(shape: Shape, words: &[u16]) -> Result<ExecGeometry, ExecEncodeError> {
    let g = ExecGeometry::new(shape).map_err(|_| ExecEncodeError::Shape { rows: shape.rows, cols: shape.cols })?;
    if words.len() as u64 != shape.weights() {
        let (rows, cols) = (shape.rows, shape.cols);
        return Err(ExecEncodeError::InputLength { got: words.len() as u64, expected: shape.weights(), rows, cols });
    }
    Ok(g)
}

/// Spec 20.12.1: the canonical execution layout of a row-major M x K matrix of BF16 words.
pub fn encode_exec(shape: Shape, words: &[u16]) -> Result<ExecMatrix, ExecEncodeError> {
    check_input(shape, words)?;
    let k = shape.cols as usize;
    let bases: Vec<u8> = words.chunks_exact(k).map(canonical_base).collect();
    encode_exec_with_bases(shape, words, &bases)
}

/// Spec 20.11: the execution layout of the matrix under the given row bases (each in 1..=242).
/// With the canonical bases (spec 20.8) this is [`encode_exec`]; with others it is a valid,
/// non-canonical encoding of the same matrix.
pub fn encode_exec_with_bases(shape: Shape, words: &[u16], bases: &[u8]) -> Result<ExecMatrix, ExecEncodeError> {
    let g = check_input(shape, words)?;
    if bases.len() as u64 != shape.rows {
        let (rows, cols) = (shape.rows, shape.cols);
        return Err(ExecEncodeError::InputLength { got: bases.len() as u64, expected: rows, rows, cols });
    }
    if let Some(row) = bases.iter().position(|&b| !(MIN_BASE..=MAX_BASE).contains(&b)) {
        return Err(ExecEncodeError::Base { row: row as u64, got: bases[row] });
    }
    let (k, k16) = (shape.cols as usize, g.k16 as usize);
    let mut sm = vec![0u8; shape.rows as usize * k16];
    let mut codes = vec![0u8; shape.rows as usize * k16 / 2];
    let mut esc_start = Vec::with_capacity(g.tiles as usize + 1);
    let mut esc = Vec::new();
    esc_start.push(0u32);
    for (row, (w, &base)) in words.chunks_exact(k).zip(bases).enumerate() {
        for (col, &word) in w.iter().enumerate() {
            sm[row * k16 + col] = sm_byte(word);
            let e = exponent(word);
            let code = code_of(e, base);
            codes[row * k16 / 2 + col / 2] |= code << (4 * (col % 2));
            if code == ESCAPE_CODE {
                esc.push(e);
            }
            // Spec 20.7: close the tile after its last column (or the row's last column).
            if (col + 1) % super::TILE_COLS as usize == 0 || col + 1 == k {
                let len = u32::try_from(esc.len()).map_err(|_| ExecEncodeError::TooManyEscapes { escapes: esc.len() as u64 })?;
                esc_start.push(len);
            }
        }
    }
    Ok(ExecMatrix { shape, sm, codes, base: bases.to_vec(), esc_start, esc })
}

/// Spec 20.12.2: the canonical execution layout of the matrix a format-10 encoding carries, under
/// the default [`Limits`]. The encoding is decoded (and so validated, spec 13) first.
pub fn transcode(m: &EncodedMatrix) -> Result<ExecMatrix, ExecEncodeError> {
    transcode_with_limits(m, &Limits::default())
}

/// [`transcode`] under the given resource limits.
pub fn transcode_with_limits(m: &EncodedMatrix, limits: &Limits) -> Result<ExecMatrix, ExecEncodeError> {
    // Spec 20.12.3: refused before anything is decoded.
    if m.mode.elem == ElemType::Fp8E4m3 {
        return Err(ExecEncodeError::Fp8);
    }
    let decoded = decode_with_limits(m, limits).map_err(|e| match e {
        DecodeError::Limit(l) => ExecEncodeError::Limit(l),
        other => ExecEncodeError::Source(other),
    })?;
    match &decoded.elements {
        Elements::Bf16(words) => encode_exec(decoded.shape, words),
        Elements::Fp8(_) => Err(ExecEncodeError::Fp8),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_base_prefers_the_smallest_of_equal_windows() {
        // Exponents 127 (1.0) and 128 (2.0): every base 115..=127 covers both; 115 is smallest.
        assert_eq!(canonical_base(&[0x3F80, 0x4000]), 115);
        // Only zeros and subnormals: no window counts anything, base 1.
        assert_eq!(canonical_base(&[0x0000, 0x8000, 0x0001]), 1);
        // Exponent 255 (Inf/NaN) alone: reachable by base 242 only.
        assert_eq!(canonical_base(&[0x7F80]), 242);
        // 3 weights at exponent 200, 2 at 100: the window must hold 200.
        assert_eq!(canonical_base(&[0x6400, 0x6400, 0x6400, 0x3200, 0x3200]), 187);
    }

    #[test]
    fn codes_cover_zero_window_and_escapes() {
        assert_eq!(code_of(0, 1), 0);
        assert_eq!(code_of(1, 1), 1);
        assert_eq!(code_of(14, 1), 14);
        assert_eq!(code_of(15, 1), 15);
        assert_eq!(code_of(255, 242), 14);
        assert_eq!(code_of(5, 6), 15);
    }
}
