//! What the two decoded representations share (format 10, spec 15.2-15.4; the execution layout,
//! spec 20.14-20.15): the dequant row stride, dequant and gather row by row, the matvec argument
//! checks and the BF16 rounding of its result.

use crate::error::ParamError;
use crate::geometry::Shape;

/// Spec 15.2, 20.14: the row stride of dequant and gather output, K rounded up to 16.
pub(crate) fn row_stride(shape: Shape) -> u64 {
    shape.cols.div_ceil(16) * 16
}

/// Spec 15.2, 20.14: the whole matrix, M rows of stride K16; `push_row` appends one row.
pub(crate) fn dequant(shape: Shape, push_row: impl Fn(u64, &mut Vec<u16>)) -> Vec<u16> {
    let mut out = Vec::with_capacity((shape.rows * row_stride(shape)) as usize);
    for row in 0..shape.rows {
        push_row(row, &mut out);
    }
    out
}

/// Spec 15.3, 20.14: the given rows (in the given order, repeats allowed) as dequant rows.
pub(crate) fn gather(shape: Shape, rows: &[u64], push_row: impl Fn(u64, &mut Vec<u16>)) -> Result<Vec<u16>, ParamError> {
    if let Some(&index) = rows.iter().find(|&&r| r >= shape.rows) {
        return Err(ParamError::RowIndex { index, rows: shape.rows });
    }
    let mut out = Vec::with_capacity(rows.len() * row_stride(shape) as usize);
    for &row in rows {
        push_row(row, &mut out);
    }
    Ok(out)
}

/// Spec 15.4, 20.15: a matvec takes a non-empty batch of K-value activation vectors, one after
/// the other, and M bias values if any.
pub(crate) fn check_matvec_args(shape: Shape, x: &[f32], batch: usize, bias: Option<&[f32]>) -> Result<(), ParamError> {
    let (m, k) = (shape.rows as usize, shape.cols as usize);
    if batch == 0 {
        return Err(ParamError::EmptyBatch);
    }
    if x.len() != batch * k {
        return Err(ParamError::Length { what: "activations", got: x.len() as u64, expected: (batch * k) as u64 });
    }
    if let Some(b) = bias.filter(|b| b.len() != m) {
        return Err(ParamError::Length { what: "bias", got: b.len() as u64, expected: m as u64 });
    }
    Ok(())
}

/// Spec 15.4.6, 20.15: a matvec result rounded to BF16 (round to nearest, ties to even).
pub(crate) fn round_to_bf16(y: Vec<f32>) -> Vec<u16> {
    y.into_iter().map(|v| half::bf16::from_f32(v).to_bits()).collect()
}
