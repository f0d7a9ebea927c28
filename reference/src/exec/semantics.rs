//! Spec 20.13-20.15: what a decoder computes from a valid execution layout: the BF16 matrix,
//! dequant and gather (pad columns +0.0), and the matvec in the canonical accumulation order of
//! spec 15.4 for format-10 layout 0 (so both representations of a matrix give the same bits).

use super::TILE_COLS;
use crate::error::ParamError;
use crate::geometry::Shape;
use crate::rows;

/// Lanes per tile and columns per lane in the canonical order (spec 20.15.2 = spec 15.4.3, layout 0).
const LANES: u64 = 32;
const LANE_COLS: u64 = 16;

/// A valid execution layout, decoded (spec 20.13): the M x K matrix of BF16 words, row-major.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecDecoded {
    pub shape: Shape,
    pub words: Vec<u16>,
}

impl ExecDecoded {
    /// Row stride of dequant and gather output: K rounded up to 16 (spec 20.14).
    pub fn row_stride(&self) -> u64 {
        rows::row_stride(self.shape)
    }

    fn push_row(&self, row: u64, out: &mut Vec<u16>) {
        let k = self.shape.cols as usize;
        out.extend_from_slice(&self.words[row as usize * k..(row as usize + 1) * k]);
        // Spec 20.14: a pad position has sm byte 0 and code 0, so it decodes to +0.0.
        out.extend((self.shape.cols..self.row_stride()).map(|_| 0u16));
    }

    /// Spec 20.14: the whole matrix as BF16, M rows of stride K16, pad columns 0x0000.
    pub fn dequant(&self) -> Vec<u16> {
        rows::dequant(self.shape, |row, out| self.push_row(row, out))
    }

    /// Spec 20.14: the given rows (in the given order, repeats allowed) as dequant rows.
    pub fn gather(&self, rows: &[u64]) -> Result<Vec<u16>, ParamError> {
        rows::gather(self.shape, rows, |row, out| self.push_row(row, out))
    }

    /// Spec 20.15: y = W x + bias in the canonical accumulation order, f32 output. `x` holds
    /// `batch` activation vectors of K values each; the result `batch` vectors of M values.
    pub fn matvec(&self, x: &[f32], batch: usize, bias: Option<&[f32]>) -> Result<Vec<f32>, ParamError> {
        let (m, k) = (self.shape.rows as usize, self.shape.cols as usize);
        rows::check_matvec_args(self.shape, x, batch, bias)?;
        let mut y = Vec::with_capacity(batch * m);
        // Spec 15.4.7: each activation vector on its own.
        for xs in x.chunks_exact(k) {
            for row in 0..m {
                let w = &self.words[row * k..(row + 1) * k];
                let mut t = row_sum(w, xs);
                // Spec 15.4.6 (BF16: no scale): the bias is one separate add.
                if let Some(b) = bias {
                    t += b[row];
                }
                y.push(t);
            }
        }
        Ok(y)
    }

    /// Spec 20.15: the matvec rounded to BF16 (nearest, ties to even).
    pub fn matvec_bf16(&self, x: &[f32], batch: usize, bias: Option<&[f32]>) -> Result<Vec<u16>, ParamError> {
        Ok(rows::round_to_bf16(self.matvec(x, batch, bias)?))
    }
}

/// Spec 20.15.2 (= 15.4.3-15.4.5 for layout 0): lane L of tile cb holds an fma chain over columns
/// 512 cb + 16 L + j, j ascending, from +0.0; the 32 lanes are summed by the halving tree 16, 8,
/// 4, 2, 1; the tile partials are added from +0.0 in tile order.
fn row_sum(w: &[u16], x: &[f32]) -> f32 {
    let k = w.len() as u64;
    let mut sum = 0.0f32;
    for cb in 0..k.div_ceil(TILE_COLS) {
        let mut lanes = [0.0f32; LANES as usize];
        for (lane, acc) in lanes.iter_mut().enumerate() {
            let first = TILE_COLS * cb + LANE_COLS * lane as u64;
            for col in (first..first + LANE_COLS).filter(|&c| c < k) {
                let weight = f32::from_bits(u32::from(w[col as usize]) << 16);
                *acc = weight.mul_add(x[col as usize], *acc);
            }
        }
        let mut n = LANES as usize;
        while n > 1 {
            n /= 2;
            for i in 0..n {
                lanes[i] += lanes[i + n];
            }
        }
        sum += lanes[0];
    }
    sum
}
