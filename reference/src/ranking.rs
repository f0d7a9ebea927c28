//! Spec 5: the symbol histogram and the frequency ranking with its exact tie rule.

use crate::element::{bf16_symbol, fp8_split, FP8_SYMBOLS, FP8_SYMBOL_BYTE};

/// Ranks that get a short code; rank 15 and beyond are escaped (spec 5.4, 6.2).
pub const CODED_RANKS: usize = 15;

/// Spec 5.1: counts of the 7-bit exponent over the real BF16 weights (sign ignored, fillers absent).
pub fn bf16_histogram(words: &[u16]) -> [u64; 128] {
    let mut hist = [0u64; 128];
    for &w in words {
        hist[bf16_symbol(w) as usize] += 1;
    }
    hist
}

/// Spec 5.1: counts of the ten FP8 symbols over the real weights (caller has rejected NaN).
pub fn fp8_histogram(bytes: &[u8]) -> [u64; FP8_SYMBOLS] {
    let mut hist = [0u64; FP8_SYMBOLS];
    for &b in bytes {
        hist[fp8_split(b).symbol as usize] += 1;
    }
    hist
}

/// Spec 5.2: the exchange sort. Start from the identity order; for each position a, every later
/// position b whose count is strictly greater than the count now at a is swapped into a. Ties keep
/// whatever order the swaps left, which is NOT the order a stable sort gives; encoders that want
/// canonical output must follow this exactly.
pub fn exchange_order(hist: &[u64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..hist.len()).collect();
    // Swaps only permute the positions from a on, so this counts the non-zero counts among them.
    // Once none is left no count is strictly greater than another and nothing moves any more (a
    // matrix uses few of the 128 exponents, so this ends most of the quadratic scan early).
    let mut nonzero_left = hist.iter().filter(|&&c| c != 0).count();
    for a in 0..hist.len() {
        if nonzero_left == 0 {
            break;
        }
        for b in a + 1..hist.len() {
            if hist[order[b]] > hist[order[a]] {
                order.swap(a, b);
            }
        }
        if hist[order[a]] != 0 {
            nonzero_left -= 1;
        }
    }
    order
}

/// Spec 5.3: the ranking of one matrix: which symbol each rank stands for and back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ranking {
    /// `exp_of_rank[r]`: BF16: the 7-bit exponent of rank r; FP8: the symbol byte of rank r (spec 5.3),
    /// 0 for r >= 10.
    pub exp_of_rank: [u8; 16],
    /// Spec 5.4: rank of each symbol (BF16: index = 7-bit exponent; FP8: index = symbol 0..9).
    pub rank_of_symbol: Vec<u8>,
}

impl Ranking {
    fn from_order(order: &[usize], symbol_byte: impl Fn(usize) -> u8) -> Ranking {
        let mut exp_of_rank = [0u8; 16];
        let mut rank_of_symbol = vec![0u8; order.len()];
        for (rank, &symbol) in order.iter().enumerate() {
            rank_of_symbol[symbol] = rank as u8;
            if rank < 16 {
                exp_of_rank[rank] = symbol_byte(symbol);
            }
        }
        Ranking { exp_of_rank, rank_of_symbol }
    }

    /// Spec 5.1-5.3: ranking of BF16 weights.
    pub fn bf16(words: &[u16]) -> Ranking {
        Ranking::from_order(&exchange_order(&bf16_histogram(words)), |s| s as u8)
    }

    /// Spec 5.1-5.3: ranking of FP8 weights; exp_of_rank holds symbol bytes (SYMB of spec 4.5).
    pub fn fp8(bytes: &[u8]) -> Ranking {
        Ranking::from_order(&exchange_order(&fp8_histogram(bytes)), |s| FP8_SYMBOL_BYTE[s])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_follow_the_exchange_sort_not_a_stable_sort() {
        let mut hist = [0u64; 128];
        hist[60] = 5;
        hist[10] = 3;
        hist[20] = 3;
        hist[5] = 3;
        hist[70] = 1;
        let order = exchange_order(&hist);
        assert_eq!(&order[..16], &[60, 10, 20, 5, 70, 0, 6, 7, 8, 9, 1, 11, 12, 13, 14, 15]);
    }

    #[test]
    fn single_weight_and_all_zero() {
        let words = [60u16 << 8];
        assert_eq!(Ranking::bf16(&words).exp_of_rank, [60, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);
        let zeros = [0u16; 7];
        let r = Ranking::bf16(&zeros);
        assert_eq!(r.exp_of_rank, core::array::from_fn(|i| i as u8));
    }

    #[test]
    fn fp8_example() {
        let mut hist = [0u64; 10];
        hist[3] = 2;
        hist[4] = 3;
        hist[9] = 1;
        let order = exchange_order(&hist);
        assert_eq!(order, vec![4, 3, 9, 0, 1, 5, 6, 7, 8, 2]);
        let r = Ranking::from_order(&order, |s| FP8_SYMBOL_BYTE[s]);
        assert_eq!(r.exp_of_rank, [64, 63, 0, 60, 61, 65, 66, 67, 59, 62, 0, 0, 0, 0, 0, 0]);
    }
}
