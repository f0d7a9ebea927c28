//! Spec 15: what a decoder computes from a valid matrix: dequant, row gather and the matvec in
//! the canonical accumulation order.

use crate::element::fp8_to_bf16;
use crate::error::ParamError;
use crate::geometry::{Geometry, BLOCK_COLS};
use crate::matrix::{DecodedMatrix, Elements};
use crate::mode::Layout;
use crate::rows;

impl DecodedMatrix {
    /// Spec 15.2: the value every pad column K..K16-1 of dequant output holds: the filler code
    /// (rank 0, sign 0) with a zero raw part.
    #[inline]
    pub fn filler_word(&self) -> u16 {
        u16::from(self.exp_of_rank[0]) << 8
    }

    /// The weight at (row, col) as a BF16 word (FP8: exact and unscaled, spec 15.2).
    #[inline]
    pub fn bf16_word(&self, row: u64, col: u64) -> u16 {
        let i = (row * self.shape.cols + col) as usize;
        match &self.elements {
            Elements::Bf16(w) => w[i],
            Elements::Fp8(b) => fp8_to_bf16(b[i]),
        }
    }

    /// Row stride of dequant and gather output: K rounded up to 16 (spec 15.2).
    pub fn row_stride(&self) -> u64 {
        rows::row_stride(self.shape)
    }

    fn push_row(&self, row: u64, out: &mut Vec<u16>) {
        out.extend((0..self.shape.cols).map(|col| self.bf16_word(row, col)));
        out.extend((self.shape.cols..self.row_stride()).map(|_| self.filler_word()));
    }

    /// Spec 15.2: the whole matrix as BF16, M rows of stride K16.
    pub fn dequant(&self) -> Vec<u16> {
        rows::dequant(self.shape, |row, out| self.push_row(row, out))
    }

    /// Spec 15.3: the given rows (in the given order, repeats allowed) as dequant rows.
    pub fn gather(&self, rows: &[u64]) -> Result<Vec<u16>, ParamError> {
        rows::gather(self.shape, rows, |row, out| self.push_row(row, out))
    }

    /// Spec 15.4: y = scale * (W x) + bias in the canonical accumulation order, f32 output.
    /// `x` holds `batch` activation vectors of K values each, one after the other; the result
    /// holds `batch` vectors of M values. `bias` has M values.
    pub fn matvec(&self, x: &[f32], batch: usize, bias: Option<&[f32]>) -> Result<Vec<f32>, ParamError> {
        let (m, k) = (self.shape.rows as usize, self.shape.cols as usize);
        rows::check_matvec_args(self.shape, x, batch, bias)?;
        // Spec 15.4.2: every weight widened exactly to f32 (FP8 unscaled).
        let widen = |word: u16| f32::from_bits(u32::from(word) << 16);
        let weights: Vec<f32> = match &self.elements {
            Elements::Bf16(words) => words.iter().map(|&w| widen(w)).collect(),
            Elements::Fp8(bytes) => bytes.iter().map(|&b| widen(fp8_to_bf16(b))).collect(),
        };
        let g = Geometry::new(self.mode, self.shape).expect("a decoded matrix has a valid shape");
        let mut y = Vec::with_capacity(batch * m);
        // Spec 15.4.7: each activation vector of the batch on its own.
        for xs in x.chunks_exact(k) {
            for row in 0..m {
                let w = &weights[row * k..(row + 1) * k];
                // Spec 15.4.5: block partials summed over column blocks in ascending order from +0.
                let mut sum = 0.0f32;
                for cb in 0..g.col_blocks {
                    sum += block_partial(&g, cb, w, xs);
                }
                // Spec 15.4.6: scale (scaled FP8) as one multiply, then the bias as a separate add;
                // an unscaled FP8 encoding has no multiply (spec 11.6).
                let mut t = sum;
                if let Some(scale) = &self.scale {
                    t *= scale[row];
                }
                if let Some(b) = bias {
                    t += b[row];
                }
                y.push(t);
            }
        }
        Ok(y)
    }

    /// Spec 15.4.6: the matvec rounded to BF16 (round to nearest, ties to even).
    pub fn matvec_bf16(&self, x: &[f32], batch: usize, bias: Option<&[f32]>) -> Result<Vec<u16>, ParamError> {
        Ok(rows::round_to_bf16(self.matvec(x, batch, bias)?))
    }
}

/// Spec 15.4.3: one lane's partial for one row: fused multiply-adds over the lane's columns of
/// that row in stream order, from +0. Columns past K are fillers and contribute nothing.
fn lane_partial(cols: impl Iterator<Item = u64>, w: &[f32], x: &[f32]) -> f32 {
    let k = w.len() as u64;
    cols.filter(|&c| c < k).fold(0.0f32, |acc, c| w[c as usize].mul_add(x[c as usize], acc))
}

/// Spec 15.4.4: the halving tree over the lanes that own a row: v[i] += v[i + s] for s = n/2, ..., 1.
fn halving_tree(v: &mut [f32]) -> f32 {
    let mut n = v.len();
    while n > 1 {
        n /= 2;
        for i in 0..n {
            v[i] += v[i + n];
        }
    }
    v[0]
}

/// Spec 15.4.3-15.4.4: the partial of block (row's block, cb) for one row.
fn block_partial(g: &Geometry, cb: u64, w: &[f32], x: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 32];
    let owners = match g.mode.layout {
        // Layout 0: all 32 lanes own the row, 16 columns each.
        Layout::Rows8 => {
            for (lane, partial) in lanes.iter_mut().enumerate() {
                let first = BLOCK_COLS * cb + 16 * lane as u64;
                *partial = lane_partial(first..first + 16, w, x);
            }
            32
        }
        // Layout 1: the 4 lanes q = 0..3 of the row's r8 own it, 8 columns per super-chunk.
        Layout::Fragment16 => {
            for (q, partial) in lanes.iter_mut().take(4).enumerate() {
                let q = q as u64;
                let chunks = 16 * cb..16 * cb + g.chunks_in_block(cb);
                *partial = lane_partial(chunks.flat_map(|s| (32 * s + 8 * q)..(32 * s + 8 * q + 8)), w, x);
            }
            4
        }
    };
    halving_tree(&mut lanes[..owners])
}
