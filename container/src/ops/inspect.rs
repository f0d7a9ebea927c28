//! Per-matrix statistics of a checkpoint: shape, mode, size ratio, entropy of the coded part,
//! escapes.

use crate::checkpoint::{accounted_bytes, Checkpoint};
use crate::error::Result;
use nwc_reference::element::fp8_split;
use nwc_reference::{Elements, Mode, Shape};
use rayon::prelude::*;
use std::path::Path;

#[derive(Clone, Debug, PartialEq)]
pub struct MatrixStats {
    pub id: u64,
    pub names: String,
    pub shape: Shape,
    pub mode: Mode,
    /// Spec 17.4 `bytes` (stored fields, without the two slacks).
    pub bytes: u64,
    /// bytes / (2 M K): relative to the same matrix in BF16.
    pub ratio: f64,
    /// Shannon entropy in bits of the coded part of each weight: the BF16 high byte (sign and
    /// exponent), or the fp8 sign and symbol (spec 4).
    pub entropy_bits: f64,
    /// Weights coded as escapes (spec 6.2).
    pub escapes: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Inspection {
    pub matrices: Vec<MatrixStats>,
    /// Tensors stored unchanged and their bytes.
    pub copied_tensors: usize,
    pub copied_bytes: u64,
    pub library_version: u64,
}

fn entropy(hist: &[u64]) -> f64 {
    let n: u64 = hist.iter().sum();
    hist.iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f64 / n as f64;
            -p * p.log2()
        })
        .sum()
}

pub fn inspect(input: &Path) -> Result<Inspection> {
    let ck = Checkpoint::open(input)?;
    let matrices = ck
        .entries()?
        .par_iter()
        .map(|e| {
            let m = ck.matrix(e)?;
            let d = ck.decode(e, &m)?;
            let mut hist = vec![0u64; 256];
            let mut escapes = 0;
            match &d.elements {
                Elements::Bf16(words) => {
                    let coded = &d.exp_of_rank[..];
                    for &w in words {
                        hist[usize::from(w >> 8)] += 1;
                    }
                    for (hi, &c) in hist.iter().enumerate() {
                        if !coded.contains(&((hi & 0x7F) as u8)) {
                            escapes += c;
                        }
                    }
                }
                Elements::Fp8(bytes) => {
                    for &b in bytes {
                        let p = fp8_split(b);
                        hist[usize::from(p.sign) * 16 + usize::from(p.symbol)] += 1;
                    }
                }
            }
            let bytes = accounted_bytes(&m);
            Ok(MatrixStats {
                id: e.id,
                names: ck.names_of(e.id),
                shape: m.shape,
                mode: m.mode,
                bytes,
                ratio: bytes as f64 / (2 * m.shape.rows * m.shape.cols) as f64,
                entropy_bits: entropy(&hist),
                escapes,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let copied: Vec<_> = ck.order.iter().filter(|n| !n.starts_with("nwc/")).filter_map(|n| ck.get(n)).collect();
    Ok(Inspection {
        matrices,
        copied_tensors: copied.len(),
        copied_bytes: copied.iter().map(|(_, t)| t.len() as u64).sum(),
        library_version: ck.config.library_version,
    })
}
