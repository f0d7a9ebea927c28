//! Damaged execution layouts made from fuzz bytes (target `exec_mutated`, and the rule census
//! that replays its corpus): a small BF16 matrix (`crate::matrices`) encoded with its canonical
//! bases or with bases the input picks, then up to five damages to the fields or the declared
//! shape, optionally with `esc_start` recounted from the damaged codes.

use crate::exec_rules::{code_at, shape_in_range, Fields};
use crate::fuzz_limits;
use crate::input::Input;
use crate::matrices::{read_spec, Plain};
use nwc_reference::exec::{
    canonical_base, decode_exec_with_limits, encode_exec_with_bases, parse_le_fields,
    ExecDecodeError, ExecDecoded, ExecMatrix,
};
use nwc_reference::Shape;

/// One case: the matrix, its encoding, and the damaged fields and shape a reader is given.
pub struct ExecCase<'a> {
    /// The matrix's BF16 words, row-major.
    pub words: Vec<u16>,
    /// Its shape, and its encoding's fields under the chosen bases.
    pub shape: Shape,
    pub original: Fields,
    /// Whether the chosen bases are the canonical ones (spec 20.8).
    pub canonical: bool,
    /// The declared shape and the fields after the damages.
    pub damaged_shape: Shape,
    pub damaged: Fields,
    /// The rest of the input, for the checks that draw activations from it.
    pub rest: Input<'a>,
}

impl ExecCase<'_> {
    /// Whether the damages left the fields and the shape as they were.
    pub fn undamaged(&self) -> bool {
        self.damaged_shape == self.shape && self.damaged == self.original
    }
}

/// Reads the fields as a reader of stored fields does (`parse_le_fields`, then
/// `decode_exec_with_limits` under the fuzz limits): what the target checks and the rule census
/// counts.
pub fn read(shape: Shape, f: &Fields) -> Result<(ExecMatrix, ExecDecoded), ExecDecodeError> {
    parse_le_fields(shape, &f[0], &f[1], &f[2], &f[3], &f[4])
        .map_err(ExecDecodeError::from)
        .and_then(|m| decode_exec_with_limits(&m, &fuzz_limits()).map(|d| (m, d)))
}

/// Reads a case from fuzz bytes.
pub fn exec_case(data: &[u8]) -> ExecCase<'_> {
    let mut input = Input::new(data);
    let spec = read_spec(&mut input);
    let shape = spec.shape;
    let words = words(spec.weights);
    let b = bases(&mut input, &words, shape);
    let canonical = words
        .chunks_exact(shape.cols as usize)
        .zip(&b)
        .all(|(row, &x)| canonical_base(row) == x);
    let exec =
        encode_exec_with_bases(shape, &words, &b).expect("a small matrix with valid bases encodes");
    let original: Fields = exec.to_le_fields().map(|(_, bytes)| bytes);
    let (mut damaged_shape, mut damaged) = (shape, original.clone());
    let k16 = shape.cols.div_ceil(16) * 16;
    for _ in 0..input.below(6) {
        damage(&mut input, &mut damaged, &mut damaged_shape, k16);
    }
    if input.u8() & 1 == 1 {
        recount(&mut damaged, damaged_shape);
    }
    ExecCase {
        words,
        shape,
        original,
        canonical,
        damaged_shape,
        damaged,
        rest: input,
    }
}

/// The matrix's words: BF16 weights as they are; fp8 bytes (the two fp8 modes of `read_spec`)
/// widened so their exponent fields spread over the whole range.
fn words(weights: Plain) -> Vec<u16> {
    match weights {
        Plain::Bf16(w) => w,
        Plain::Fp8(b) => b.into_iter().map(|x| u16::from(x) * 0x0101).collect(),
    }
}

/// The bases: canonical, one row moved off its canonical base, or every row's from the input.
fn bases(input: &mut Input, w: &[u16], shape: Shape) -> Vec<u8> {
    let k = shape.cols as usize;
    let mut b: Vec<u8> = w.chunks_exact(k).map(canonical_base).collect();
    match input.u8() % 4 {
        0 | 1 => {}
        2 => {
            let row = input.below(b.len());
            b[row] = 1 + input.u8() % 242;
        }
        _ => b.iter_mut().for_each(|x| *x = 1 + input.u8() % 242),
    }
    b
}

/// One damage, chosen by the input. Byte positions wrap around the field's length.
fn damage(input: &mut Input, f: &mut Fields, shape: &mut Shape, k16: u64) {
    let which = input.below(6);
    let (op, pos, value) = (input.u8() % 8, input.u16() as usize, input.u8());
    if which == 5 {
        // The declared shape: one dimension moved a little, to 0, or far out of range.
        let far = [0, 1 << 31, (1 << 31) + 1, (1 << 31) - 511, 1 << 40];
        let d = u64::from(value % 17);
        let (rows, cols) = (shape.rows, shape.cols);
        *shape = match op {
            0 => Shape::new(rows + 1, cols),
            1 => Shape::new(rows.saturating_sub(1), cols),
            2 => Shape::new(rows, cols + d),
            3 => Shape::new(rows, cols.saturating_sub(d)),
            4 => Shape::new(far[pos % far.len()], cols),
            5 => Shape::new(rows, far[pos % far.len()]),
            _ => Shape::new(cols, rows),
        };
        return;
    }
    let field = &mut f[which];
    let n = field.len();
    match op {
        // A byte flipped or set.
        0 | 1 if n > 0 => {
            let at = pos % n;
            if op == 0 {
                field[at] ^= value | 1;
            } else {
                field[at] = value;
            }
        }
        // A code set to the escape, to 0 or to a value (codes); an entry set (esc_start).
        2 | 3 if which == 1 && n > 0 => {
            let col = pos % (2 * n);
            let code = if op == 2 {
                [15, 0][usize::from(value & 1)]
            } else {
                value & 15
            };
            let shift = 4 * (col % 2);
            field[col / 2] = (field[col / 2] & !(15 << shift)) | (code << shift);
        }
        2 | 3 if which == 3 && n >= 4 => {
            let at = 4 * (pos % (n / 4));
            let old = u32::from_le_bytes(field[at..at + 4].try_into().expect("4 bytes"));
            let new = match op {
                2 => old.wrapping_add(u32::from(value % 3)).wrapping_sub(1),
                _ => u32::from(value) << (8 * (pos % 4)),
            };
            field[at..at + 4].copy_from_slice(&new.to_le_bytes());
        }
        // A byte removed or inserted (an escape lost or added, in esc).
        4 if n > 0 => {
            field.remove(pos % n);
        }
        5 => field.insert(pos % (n + 1), value),
        // Cut short, or removed (a missing field has length 0, 20.9.2).
        6 => field.truncate(if value & 1 == 0 { pos % (n + 1) } else { 0 }),
        // Grown by 1..16 bytes; for sm, by a whole row's worth sometimes.
        _ => {
            let extra = if which == 0 && value & 1 == 1 {
                k16 as usize
            } else {
                1 + usize::from(value % 16)
            };
            field.extend(std::iter::repeat_n(value, extra));
        }
    }
}

/// Rewrites `esc_start` from the codes (20.7), when the sizes allow: damage then reaches the
/// rules after 20.9.9 (an escape in the window, or accepted fields that carry another matrix).
fn recount(f: &mut Fields, shape: Shape) {
    let (rows, cols) = (shape.rows, shape.cols);
    if !shape_in_range(rows, cols) {
        return;
    }
    let (k16, col_tiles) = (cols.div_ceil(16) * 16, cols.div_ceil(512));
    if f[1].len() as u64 != rows * k16 / 2 || f[3].len() as u64 != 4 * (rows * col_tiles + 1) {
        return;
    }
    let mut entries = vec![0u32];
    for row in 0..rows {
        for cb in 0..col_tiles {
            let escapes = (512 * cb..(512 * cb + 512).min(cols))
                .filter(|&c| code_at(&f[1], k16, row, c) == 15)
                .count() as u32;
            entries.push(entries.last().expect("starts with 0") + escapes);
        }
    }
    f[3] = entries.iter().flat_map(|e| e.to_le_bytes()).collect();
}
