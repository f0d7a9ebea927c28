//! The encoder's per-matrix tables (spec 5, 6.1, 6.2): the exponent histogram (counted in
//! parallel), the canonical ranking and exp_of_rank, and the codebook of code words and raw parts
//! per input byte, with the BF16 pair table that codes two weights per look-up. `encode` builds it
//! once per matrix and codes the row blocks with it.

use crate::bits::{pack, pair_code, Packed, PairCode, PAIR_ESCAPE};
use nwc_reference::element::{bf16_symbol, fp8_split, FP8_SYMBOLS, FP8_SYMBOL_BYTE};
use nwc_reference::ranking::{exchange_order, CODED_RANKS};
use nwc_reference::Weights;
use rayon::prelude::*;

/// Counts `key(value)` with eight interleaved tables: consecutive equal keys (the common case in
/// weights) would otherwise wait on each other's increment. `values` has at most 2^32 entries.
fn count8<T: Copy>(values: &[T], key: impl Fn(T) -> u8) -> [u64; 256] {
    const WAYS: usize = 8;
    let mut h = [[0u32; 256]; WAYS];
    let mut groups = values.chunks_exact(WAYS);
    for g in &mut groups {
        for j in 0..WAYS {
            h[j][key(g[j]) as usize] += 1;
        }
    }
    for &v in groups.remainder() {
        h[0][key(v) as usize] += 1;
    }
    let mut total = [0u64; 256];
    for t in &h {
        for (s, &n) in total.iter_mut().zip(t) {
            *s += u64::from(n);
        }
    }
    total
}

/// Per-input-byte code words and raw parts for one matrix (spec 5.4, 6.1, 6.2).
pub(crate) struct Codebook {
    /// BF16: indexed by the high byte. FP8: indexed by the fp8 byte.
    pub(crate) code: [Packed; 256],
    /// FP8 only: the raw nibble of each fp8 byte (spec 4.5).
    pub(crate) nibble: [u8; 256],
    /// BF16 only: the codes of two consecutive weights, indexed by their high bytes (the first
    /// weight's in the low byte of the index).
    pairs: Option<Box<[PairCode; 1 << 16]>>,
}

impl Codebook {
    /// The pair table of a BF16 codebook (built for every one).
    #[inline(always)]
    pub(crate) fn bf16_pairs(&self) -> &[PairCode; 1 << 16] {
        self.pairs.as_deref().expect("a BF16 codebook has its pair table")
    }
}

/// The [`PairCode`] of every pair of BF16 high bytes: 256 KB, written once per matrix by vector
/// code (at 256 x 4096 weights, all of `encode` outside the histogram and the row blocks counts
/// 0.06 instructions per weight). A matrix uses few of the entries (its weights have a handful of
/// common exponents), so those fit in the L1 cache.
fn pair_table(code: &[Packed; 256]) -> Box<[PairCode; 1 << 16]> {
    let is_escape = |c: Packed| c & 31 > 16; // spec 6.2: 24 bits; rank codes have at most 16
    let mut table = Vec::with_capacity(1 << 16); // not zeroed first: each entry is written once
    for &second in code {
        table.extend(code.iter().map(|&first| if is_escape(first) || is_escape(second) { PAIR_ESCAPE } else { pair_code(first, second) }));
    }
    table.into_boxed_slice().try_into().expect("2^16 entries")
}

/// Spec 5.1 - 5.3: histogram (in parallel), exchange-sort ranking, exp_of_rank, codebook, escapes.
pub(crate) fn rank_and_codebook(weights: Weights<'_>) -> ([u8; 16], Codebook, u64) {
    const CHUNK: usize = 1 << 16;
    let mut code = [0; 256];
    let mut nibble = [0u8; 256];
    let mut exp_of_rank = [0u8; 16];
    let mut escapes = 0;
    match weights {
        Weights::Bf16(words) => {
            let hist = words
                .par_chunks(CHUNK)
                .map(|c| {
                    // Count whole high bytes (no masking in the hot loop), then fold the sign away
                    // (spec 5.1: the symbol is the exponent).
                    let h = count8(c, |v| (v >> 8) as u8);
                    let mut out = [0u64; 128];
                    for (hi, n) in h.into_iter().enumerate() {
                        out[usize::from(bf16_symbol((hi as u16) << 8))] += n;
                    }
                    out
                })
                .reduce(
                    || [0u64; 128],
                    |mut a, b| {
                        a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                        a
                    },
                );
            let order = exchange_order(&hist);
            let mut rank_of = [0u32; 128];
            for (rank, &sym) in order.iter().enumerate() {
                rank_of[sym] = rank as u32;
                if rank < 16 {
                    exp_of_rank[rank] = sym as u8;
                }
                if rank >= CODED_RANKS {
                    escapes += hist[sym];
                }
            }
            for hi in 0..256u32 {
                let rank = rank_of[(hi & 0x7F) as usize];
                code[hi as usize] = if (rank as usize) < CODED_RANKS {
                    pack(0b10 | (hi >> 7), rank + 2) // spec 6.1
                } else {
                    pack(0x100 | hi, 24) // spec 6.2
                };
            }
        }
        Weights::Fp8(bytes) => {
            let byte_hist = bytes.par_chunks(CHUNK).map(|c| count8(c, |b| b)).reduce(
                || [0u64; 256],
                |mut a, b| {
                    a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                    a
                },
            );
            // Spec 5.1: fold byte counts into symbol counts.
            let mut hist = [0u64; FP8_SYMBOLS];
            for (b, &count) in byte_hist.iter().enumerate() {
                hist[fp8_split(b as u8).symbol as usize] += count;
            }
            let order = exchange_order(&hist);
            let mut rank_of = [0u32; FP8_SYMBOLS];
            for (rank, &sym) in order.iter().enumerate() {
                rank_of[sym] = rank as u32;
                exp_of_rank[rank] = FP8_SYMBOL_BYTE[sym];
            }
            for b in 0..=255u8 {
                let p = fp8_split(b);
                code[b as usize] = pack(0b10 | u32::from(p.sign), rank_of[p.symbol as usize] + 2);
                nibble[b as usize] = p.nibble;
            }
        }
    }
    let pairs = matches!(weights, Weights::Bf16(_)).then(|| pair_table(&code));
    (exp_of_rank, Codebook { code, nibble, pairs }, escapes)
}
