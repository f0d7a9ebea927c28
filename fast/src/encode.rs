//! The fast encoder: the same canonical output as `nwc_reference::encode` (spec 14), computed
//! row block by row block in parallel.

#[cfg(not(all(feature = "simd", target_arch = "x86_64")))]
use self::encode_row_block as encode_row_block_best;
use crate::bits::{BitWriter, Packed, PairCode, FILLER, PAIR_ESCAPE};
use crate::codebook::{rank_and_codebook, Codebook};
#[cfg(all(feature = "simd", target_arch = "x86_64"))]
use crate::simd::encode_row_block_best;
use nwc_reference::element::fp8_is_nan;
use nwc_reference::geometry::{hard, LANES, TAIL_SLACK};
use nwc_reference::{build_lut, ElemType, EncodeError, EncodedMatrix, Encoding, Geometry, Layout, Mode, Shape, Weights};
use rayon::prelude::*;

fn align8(x: usize) -> usize {
    x.div_ceil(8) * 8
}

/// Encodes little-endian input bytes (2 per BF16 weight, 1 per fp8 weight), like
/// `nwc_reference::encode_le_bytes`.
pub fn encode_le_bytes(mode: Mode, shape: Shape, input: &[u8]) -> Result<Encoding, EncodeError> {
    let expected = shape.rows.saturating_mul(shape.cols).saturating_mul(mode.elem.input_bytes() as u64);
    if input.len() as u64 != expected {
        let (rows, cols, elem) = (shape.rows, shape.cols, mode.elem.name());
        return Err(EncodeError::InputLength { got: input.len() as u64, expected, rows, cols, elem });
    }
    match mode.elem {
        ElemType::Bf16 => {
            let words: Vec<u16> = input.par_chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
            encode(mode, shape, Weights::Bf16(&words))
        }
        ElemType::Fp8E4m3 => encode(mode, shape, Weights::Fp8(input)),
    }
}

/// The streams of one row block: its column blocks back to back, each starting at an offset that
/// is 8-aligned relative to the row block's start (spec 9.3). Row blocks start 8-aligned too, so
/// relative alignment equals absolute alignment.
pub(crate) struct RowBlockStreams {
    data: Vec<u8>,
    bases: Vec<usize>,
    hdr: Vec<u8>,
}

/// Encodes a matrix; the result equals `nwc_reference::encode` byte for byte.
pub fn encode(mode: Mode, shape: Shape, weights: Weights<'_>) -> Result<Encoding, EncodeError> {
    encode_observed(mode, shape, weights, u64::MAX, |_, _| {})
}

/// [`encode`], coding the row blocks in runs of about `run_rows` rows (at least one row block)
/// and calling `observe(r0, r1)` once for each run's rows `r0..r1`, in order, while the next run
/// is being coded: a caller that hashes its input row by row reads each run while it is still in
/// the cache (issue 15). The result is the same as [`encode`]'s whatever `run_rows`.
pub fn encode_observed(
    mode: Mode,
    shape: Shape,
    weights: Weights<'_>,
    run_rows: u64,
    mut observe: impl FnMut(u64, u64) + Send,
) -> Result<Encoding, EncodeError> {
    let g = Geometry::new(mode, shape).map_err(|_| EncodeError::Shape { rows: shape.rows, cols: shape.cols })?;
    let n = shape.weights();
    let (elem, len) = match weights {
        Weights::Bf16(w) => (ElemType::Bf16, w.len()),
        Weights::Fp8(b) => (ElemType::Fp8E4m3, b.len()),
    };
    if elem != mode.elem || len as u64 != n {
        return Err(EncodeError::InputLength {
            got: len as u64 * elem.input_bytes() as u64,
            expected: n * mode.elem.input_bytes() as u64,
            rows: shape.rows,
            cols: shape.cols,
            elem: mode.elem.name(),
        });
    }
    if let Weights::Fp8(bytes) = weights {
        // Spec 4.6: no code for fp8 NaN.
        const CHUNK: usize = 1 << 16;
        if let Some(chunk) = bytes.par_chunks(CHUNK).position_first(|c| c.iter().any(|&b| fp8_is_nan(b))) {
            let index = chunk * CHUNK + bytes[chunk * CHUNK..].iter().position(|&b| fp8_is_nan(b)).expect("found above");
            return Err(EncodeError::Fp8Nan { index: index as u64, byte: bytes[index] });
        }
    }
    let (exp_of_rank, book, escapes) = rank_and_codebook(weights);

    // Each row block owns a contiguous run of the raw plane (spec 7.5, 7.6, 8.5, 8.6).
    let height = mode.layout.block_rows() as usize;
    let plane_row = match mode.layout {
        Layout::Rows8 => g.k16,
        Layout::Fragment16 => g.k32,
    } as usize
        / if mode.elem == ElemType::Fp8E4m3 { 2 } else { 1 };
    // vec! of zeros maps fresh zero pages; the row-block tasks touch them first, in parallel.
    let mut low = vec![0u8; g.n_low as usize];
    let mut blocks: Vec<&mut [u8]> = low.chunks_mut(height * plane_row).collect();
    let per_run = usize::try_from(run_rows / height as u64).unwrap_or(usize::MAX).max(1);
    let mut parts: Vec<RowBlockStreams> = Vec::with_capacity(blocks.len());
    let mut observed: Option<(u64, u64)> = None; // the run coded last, not yet observed
    for (i, run) in blocks.chunks_mut(per_run).enumerate() {
        let first = i * per_run;
        let rows = ((first * height) as u64, (((first + run.len()) * height) as u64).min(shape.rows));
        let (coded, ()) = rayon::join(
            || {
                run.par_iter_mut()
                    .enumerate()
                    .map(|(j, low_rows)| encode_row_block_best((&g, weights, &book, first + j, low_rows)))
                    .collect::<Vec<_>>()
            },
            || {
                if let Some((r0, r1)) = observed {
                    observe(r0, r1);
                }
            },
        );
        parts.extend(coded);
        observed = Some(rows);
    }
    if let Some((r0, r1)) = observed {
        observe(r0, r1);
    }

    // Spec 9.3: prefix sum of the row blocks' lengths, each started at the next multiple of 8.
    let mut starts = Vec::with_capacity(parts.len());
    let mut end = 0usize;
    for p in &parts {
        let start = align8(end);
        starts.push(start);
        end = start + p.data.len();
    }
    let data_len = align8(end) as u64 + TAIL_SLACK;
    if data_len > hard::MAX_DATA_LEN {
        return Err(EncodeError::StreamTooLarge { bytes: data_len });
    }
    let mut data = vec![0u8; data_len as usize];
    let mut bases = Vec::with_capacity(g.blocks as usize);
    let mut hdr = Vec::with_capacity(g.blocks as usize * LANES);
    // Cut `data` into each row block's destination (gaps stay zero) and copy them in parallel.
    let mut dests = Vec::with_capacity(parts.len());
    let mut rest = data.as_mut_slice();
    let mut at = 0;
    for (p, &start) in parts.iter().zip(&starts) {
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(start - at);
        let (dest, tail) = tail.split_at_mut(p.data.len());
        dests.push(dest);
        rest = tail;
        at = start + p.data.len();
        bases.extend(p.bases.iter().map(|&b| (start + b) as u32));
        hdr.extend_from_slice(&p.hdr);
    }
    dests.into_par_iter().zip(parts.par_iter()).for_each(|(d, p)| d.copy_from_slice(&p.data));
    let lut = build_lut(mode.elem, &exp_of_rank);
    let matrix = EncodedMatrix { mode, shape, data, bases, hdr, lut, low, scale: None };
    Ok(Encoding { matrix, exp_of_rank, stream_end: end as u64, escapes })
}

/// The arguments of [`encode_row_block`]: geometry, weights, codebook, row block, its rows of the
/// raw plane.
pub(crate) type EncodeArgs<'a> = (&'a Geometry, Weights<'a>, &'a Codebook, usize, &'a mut [u8]);

/// Encodes row block `rb`, whose rows of the raw plane are `low_rows`.
#[inline(always)] // also into the `simd` feature's build for newer processors
pub(crate) fn encode_row_block((g, weights, book, rb, low_rows): EncodeArgs<'_>) -> RowBlockStreams {
    let cb_count = g.col_blocks as usize;
    let (m, k) = (g.shape.rows as usize, g.shape.cols as usize);
    // A block of 4096 weights codes to about 1.5 KB at 3 bits per weight.
    let mut out = RowBlockStreams {
        data: Vec::with_capacity(cb_count * 1600),
        bases: Vec::with_capacity(cb_count),
        hdr: Vec::with_capacity(cb_count * LANES),
    };
    if let (Layout::Rows8, Weights::Bf16(x)) = (g.mode.layout, weights) {
        // Spec 7.5: the raw plane of layout 0 BF16 is the low bytes, row-major with stride K16;
        // a plain copy, done apart from the coding so that it vectorizes.
        let k16 = g.k16 as usize;
        for (i, dst) in low_rows.chunks_exact_mut(k16).enumerate() {
            let src = &x[(8 * rb + i) * k..(8 * rb + i + 1) * k];
            dst[..k].iter_mut().zip(src).for_each(|(d, &v)| *d = v as u8);
        }
    }
    let mut words = [0u8; 4 * 256]; // the lane writers' buffer
    for cb in 0..cb_count {
        out.data.resize(align8(out.data.len()), 0);
        out.bases.push(out.data.len());
        for lane in 0..LANES {
            let mut w = BitWriter::new(&mut words);
            match (g.mode.layout, weights) {
                (Layout::Rows8, Weights::Bf16(x)) if whole_lane_l0(g, rb, cb, lane) => {
                    // The common case: 8 rows of 16 weights, no filler (spec 7.2).
                    let pairs = book.bf16_pairs();
                    let rows = &x[8 * rb * k + 512 * cb + 16 * lane..];
                    for i in 0..8 {
                        push_sixteen_bf16(&mut w, rows[i * k..][..16].try_into().expect("16"), pairs, &book.code);
                    }
                }
                (Layout::Rows8, Weights::Bf16(x)) => lane_l0(g, rb, cb, lane, &mut w, |_, row, col, real, w| {
                    let seg = &x[row * k + col..row * k + col + real];
                    let c = |v: u16| book.code[usize::from(v >> 8)];
                    if let Ok(full) = <&[u16; 16]>::try_from(seg) {
                        push_sixteen_bf16(w, full, book.bf16_pairs(), &book.code);
                        return;
                    }
                    let mut quads = seg.chunks_exact(4);
                    for q in &mut quads {
                        w.push4([c(q[0]), c(q[1]), c(q[2]), c(q[3])]);
                    }
                    for &v in quads.remainder() {
                        w.push(c(v));
                    }
                }),
                (Layout::Rows8, Weights::Fp8(x)) => lane_l0(g, rb, cb, lane, &mut w, |i, row, col, real, w| {
                    // Spec 7.6: the lane's 16 columns are one nibble group (8 bytes) of the row.
                    let group = i * (g.k16 as usize / 2) + col / 2;
                    let seg = &x[row * k + col..row * k + col + real];
                    let mut nib = [0u8; 16];
                    for (n, &v) in nib.iter_mut().zip(seg) {
                        *n = book.nibble[v as usize];
                    }
                    low_rows[group..group + 8].copy_from_slice(&pack_nibbles(&nib));
                    let c = |v: u8| book.code[v as usize];
                    let mut quads = seg.chunks_exact(4);
                    for q in &mut quads {
                        w.push4([c(q[0]), c(q[1]), c(q[2]), c(q[3])]);
                    }
                    for &v in quads.remainder() {
                        w.push(c(v));
                    }
                }),
                (Layout::Fragment16, Weights::Bf16(x)) => lane_l1(
                    g,
                    rb,
                    cb,
                    lane,
                    &mut w,
                    low_rows,
                    |low_rows, row, col, slot, t| {
                        let v = x[row * k + col];
                        low_rows[slot * 16 + t] = v as u8; // spec 8.5
                        book.code[usize::from(v >> 8)]
                    },
                    |low_rows, ra, rb2, c0, slot, w| {
                        let (a, b) = (&x[ra * k + c0..ra * k + c0 + 8], &x[rb2 * k + c0..rb2 * k + c0 + 8]);
                        // Spec 8.2: per pair of columns, two of row a, then two of row b.
                        let v: [u16; 16] = std::array::from_fn(|t| [a, b][(t >> 1) & 1][2 * (t >> 2) + (t & 1)]);
                        for (d, &x) in low_rows[slot * 16..slot * 16 + 16].iter_mut().zip(&v) {
                            *d = x as u8; // spec 8.5
                        }
                        push_sixteen_bf16(w, &v, book.bf16_pairs(), &book.code);
                    },
                ),
                (Layout::Fragment16, Weights::Fp8(x)) => lane_l1(
                    g,
                    rb,
                    cb,
                    lane,
                    &mut w,
                    low_rows,
                    |low_rows, row, col, slot, t| {
                        let v = x[row * k + col] as usize;
                        put_nibble(low_rows, slot * 8, t, book.nibble[v]); // spec 8.6
                        book.code[v]
                    },
                    |low_rows, ra, rb2, c0, slot, w| {
                        let (a, b) = (&x[ra * k + c0..ra * k + c0 + 8], &x[rb2 * k + c0..rb2 * k + c0 + 8]);
                        let mut nib = [0u8; 16];
                        for p in 0..4 {
                            let v = [a[2 * p], a[2 * p + 1], b[2 * p], b[2 * p + 1]];
                            for (n, x) in nib[4 * p..4 * p + 4].iter_mut().zip(v) {
                                *n = book.nibble[x as usize];
                            }
                            w.push4(v.map(|x| book.code[x as usize]));
                        }
                        low_rows[slot * 8..slot * 8 + 8].copy_from_slice(&pack_nibbles(&nib));
                    },
                ),
            }
            out.hdr.push(w.finish(&mut out.data) as u8);
        }
    }
    let _ = m;
    out
}

/// Spec 6.1, 6.2: the codes of 16 BF16 weights, two per look-up of `pairs`; when one of them is
/// an escape (rare), one by one from `code`.
#[inline(always)]
fn push_sixteen_bf16(w: &mut BitWriter, seg: &[u16; 16], pairs: &[PairCode; 1 << 16], code: &[Packed; 256]) {
    let pair = |j: usize| pairs[usize::from(seg[2 * j] >> 8) | usize::from(seg[2 * j + 1] & 0xFF00)];
    let e: [PairCode; 8] = std::array::from_fn(pair);
    if e.iter().fold(0, |any, &x| any | x) & PAIR_ESCAPE == 0 {
        // Spelled out: a loop here is not always unrolled, and then its entries go through memory.
        w.push_pairs(e[0], e[1]);
        w.push_pairs(e[2], e[3]);
        w.push_pairs(e[4], e[5]);
        w.push_pairs(e[6], e[7]);
    } else {
        let c = |v: u16| code[usize::from(v >> 8)];
        for q in seg.chunks_exact(4) {
            w.push4([c(q[0]), c(q[1]), c(q[2]), c(q[3])]);
        }
    }
}

/// Spec 7.6: 16 nibbles in stream order as their 8 bytes: byte j = nib[j] | nib[j + 4] << 4 and
/// byte 4 + j = nib[8 + j] | nib[12 + j] << 4 (j = 0..3).
#[inline(always)]
fn pack_nibbles(nib: &[u8; 16]) -> [u8; 8] {
    let mut out = [0u8; 8];
    for j in 0..4 {
        out[j] = nib[j] | nib[j + 4] << 4;
        out[4 + j] = nib[8 + j] | nib[12 + j] << 4;
    }
    out
}

/// Spec 7.6: nibble `t` of a group of 16 goes to byte (t & 3) + 4 (t >> 3), high half if t & 4.
#[inline(always)]
fn put_nibble(low: &mut [u8], group: usize, t: usize, nibble: u8) {
    let byte = group + (t & 3) + 4 * (t >> 3);
    low[byte] |= if t & 4 != 0 { nibble << 4 } else { nibble };
}

/// Whether lane `lane` of block (rb, cb) in layout 0 has 8 rows of 16 weights (no filler).
#[inline(always)]
fn whole_lane_l0(g: &Geometry, rb: usize, cb: usize, lane: usize) -> bool {
    8 * rb + 8 <= g.shape.rows as usize && 512 * cb + 16 * lane + 16 <= g.shape.cols as usize
}

/// Spec 7.2, 7.3: lane L of block (rb, cb) in layout 0: 8 rows of 16 columns, row by row.
/// `code(i, row, col0, real, w)` codes the `real` weights of row `row` (block row i) from column
/// `col0` on and stores their raw parts; the rest of the 16 are fillers.
#[inline(always)]
fn lane_l0(
    g: &Geometry,
    rb: usize,
    cb: usize,
    lane: usize,
    w: &mut BitWriter,
    mut code: impl FnMut(usize, usize, usize, usize, &mut BitWriter),
) {
    let m = g.shape.rows as usize;
    let col0 = 512 * cb + 16 * lane;
    let real_cols = (g.shape.cols as usize).saturating_sub(col0).min(16);
    for i in 0..8 {
        let row = 8 * rb + i;
        if row >= m || real_cols == 0 {
            w.push_sixteen_fillers(); // spec 6.3
            continue;
        }
        code(i, row, col0, real_cols, w);
        for _ in real_cols..16 {
            w.push(FILLER);
        }
    }
}

/// Spec 8.2, 8.3: lane L = 4 r8 + q of block (rg, cb) in layout 1: per super-chunk, 16 weights in
/// mma A-fragment order. `code(row, col, slot, t)` codes one real weight: `slot` is the lane's raw
/// slot index relative to the row block (super-chunk * 32 + lane), `t` the position inside the
/// super-chunk. `full(row_a, row_b, c0, slot, w)` codes a whole chunk whose 16 weights are all
/// real: columns c0..c0+7 of rows row_a and row_b.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn lane_l1(
    g: &Geometry,
    rg: usize,
    cb: usize,
    lane: usize,
    w: &mut BitWriter,
    low: &mut [u8],
    mut code: impl FnMut(&mut [u8], usize, usize, usize, usize) -> Packed,
    mut full: impl FnMut(&mut [u8], usize, usize, usize, usize, &mut BitWriter),
) {
    let (m, k) = (g.shape.rows as usize, g.shape.cols as usize);
    let (r8, q) = (lane >> 2, lane & 3);
    let row_top = 16 * rg + r8;
    let first = 16 * cb;
    for s in first..first + g.chunks_in_block(cb as u64) as usize {
        let c0 = 32 * s + 8 * q;
        let slot = s * 32 + lane;
        if row_top + 8 < m && c0 + 8 <= k {
            full(low, row_top, row_top + 8, c0, slot, w);
            continue;
        }
        for t in 0..16 {
            let j = 2 * (t >> 2) + (t & 1);
            let row = row_top + 8 * ((t >> 1) & 1);
            let col = c0 + j;
            if row < m && col < k {
                w.push(code(low, row, col, slot, t));
            } else {
                w.push(FILLER);
            }
        }
    }
}
