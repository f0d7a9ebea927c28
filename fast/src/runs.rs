//! Decoding a BF16 matrix a run of rows at a time, for writers that hash and store the weights as
//! they come: one small buffer (cache-sized) instead of one as large as the matrix, and each run
//! is still in the cache when the caller reads it (issue 15: decompression hashed and wrote a
//! 64 MB buffer that had gone through memory, and zeroed it first).

#[cfg(not(all(feature = "simd", target_arch = "x86_64")))]
use crate::decode::decode_row_block as decode_row_block_best;
use crate::decode::Tables;
use crate::kind::Bf16;
#[cfg(all(feature = "simd", target_arch = "x86_64"))]
use crate::simd::decode_row_block_best;
use nwc_reference::{check_structure, DecodeError, ElemType, Elements, EncodedMatrix, Geometry, Limits};
use rayon::prelude::*;

/// Why [`decode_bf16_runs`] stopped.
#[derive(Debug)]
pub enum RunError<E> {
    /// The matrix breaks a rule of spec 13: the same error as `decode_with_limits`.
    Decode(DecodeError),
    /// The matrix is not a BF16 one (its elements are fp8).
    NotBf16,
    /// The sink's own error.
    Sink(E),
}

/// Decodes the BF16 matrix `m` as [`crate::decode_with_limits`] does, but hands the weights to
/// `sink` in runs of whole row blocks (spec 7.1, 8.1), in order, each run about `run_bytes` of
/// output (at least one row block). The runs together are exactly `decode_with_limits`'s weights.
/// A broken lane is found only when its run is decoded, so the runs before it may have been handed
/// over already: the caller must treat its output as incomplete until this returns `Ok`.
pub fn decode_bf16_runs<E>(
    m: &EncodedMatrix,
    limits: &Limits,
    run_bytes: usize,
    mut sink: impl FnMut(&[u16]) -> Result<(), E>,
) -> Result<(), RunError<E>> {
    if m.mode.elem != ElemType::Bf16 {
        return Err(RunError::NotBf16);
    }
    let exp_of_rank = check_structure(m, limits).map_err(RunError::Decode)?;
    let g = Geometry::new(m.mode, m.shape).expect("checked by check_structure");
    let tables = Tables::new(&exp_of_rank, m.mode.elem);
    let n = m.shape.weights() as usize;
    let block = m.mode.layout.block_rows() as usize * m.shape.cols as usize; // weights per row block
    if n == 0 {
        return Ok(());
    }
    let per_run = (run_bytes / 2 / block).max(1); // row blocks per run
                                                  // Every position of a row block's rows is written by its decoding, so the buffer is reused
                                                  // without clearing it between runs.
    let mut buf = vec![0u16; (per_run * block).min(n)];
    let blocks = n.div_ceil(block);
    let mut rb0 = 0;
    while rb0 < blocks {
        let len = (per_run * block).min(n - rb0 * block);
        let out = &mut buf[..len];
        let ok =
            out.par_chunks_mut(block).enumerate().all(|(i, rows)| decode_row_block_best::<Bf16>((m, &g, &tables, rb0 + i, rows)).is_ok());
        if !ok {
            // As in `decode_with_limits`: the reference names the broken rule. Should it accept
            // the matrix, its weights are the answer (debug builds stop on the disagreement).
            let reference = nwc_reference::decode_with_limits(m, limits);
            debug_assert!(reference.is_err(), "nwc-fast rejected a matrix the reference accepts");
            let d = reference.map_err(RunError::Decode)?;
            let Elements::Bf16(w) = d.elements else { return Err(RunError::NotBf16) };
            for run in w[rb0 * block..].chunks(per_run * block) {
                sink(run).map_err(RunError::Sink)?;
            }
            return Ok(());
        }
        sink(out).map_err(RunError::Sink)?;
        rb0 += per_run;
    }
    Ok(())
}
