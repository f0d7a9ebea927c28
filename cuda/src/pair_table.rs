//! The version 7 kernels' two-code table (kernels/nwc_v7.cu), built once per matrix on the host
//! and copied into each CTA's shared memory, instead of every CTA computing it (measured on the
//! H200: the per-CTA build cost about 2 us of a 25 us matvec, docs/gpu-history.md).
//!
//! Entry for the 12-bit window p (spec 10.1): when two complete codes fit the window,
//! `len | byte0 << 8 | byte1 << 16 | len << 24` with `len` the length of both codes (the kernel
//! shifts by the low 5 bits and adds `entry >> 24` to its bit position; byte 0 below 0x80 also
//! serves as the zero byte of a byte permute); otherwise bit 31 set (`SLOW`). Then exp_of_rank
//! (spec 10.6 recovery from the stored table) as 16 words.

use nwc_reference::{lut::recover_exp_of_rank, ElemType};

/// Bit 31: the window does not hold two complete codes.
pub const SLOW: u32 = 1 << 31;
/// Words of the table: 4096 entries, then exp_of_rank[0..16].
pub const WORDS: usize = 4096 + 16;

/// The table for a matrix whose stored lookup table is `lut` (validated: rule lut-mismatch).
pub fn build(elem: ElemType, lut: &[u32]) -> Vec<u32> {
    let ranks = recover_exp_of_rank(lut);
    let rank_limit = if elem == ElemType::Fp8E4m3 { 10 } else { 15 }; // spec 6
                                                                      // One complete code at the top of `v` (left-aligned, `avail` real bits): (length, coded byte).
    let code = |v: u32, avail: u32| -> Option<(u32, u32)> {
        let z = v.leading_zeros();
        if z >= rank_limit || z + 2 > avail {
            return None;
        }
        let sign = (v >> (30 - z)) & 1;
        Some((z + 2, sign << 7 | u32::from(ranks[z as usize])))
    };
    let mut table: Vec<u32> = (0..4096u32)
        .map(|p| {
            let v = p << 20;
            let Some((len0, b0)) = code(v, 12) else { return SLOW };
            let Some((len1, b1)) = code(v << len0, 12 - len0) else { return SLOW };
            let len = len0 + len1;
            len | b0 << 8 | b1 << 16 | len << 24
        })
        .collect();
    table.extend(ranks.iter().map(|&r| u32::from(r)));
    table.push(0);
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use nwc_reference::lut::build_lut;

    /// Every fast entry agrees with the format's own table (spec 10.1: a two-code entry there is
    /// `len0 + len1 | byte0 << 8 | byte1 << 16` with bits 24..31 zero), and every other entry is
    /// SLOW, for BF16 and FP8 and several rank orders.
    #[test]
    fn agrees_with_the_stored_table() {
        for elem in [ElemType::Bf16, ElemType::Fp8E4m3] {
            for seed in 0..8u8 {
                let mut eor = [0u8; 16];
                for (r, e) in eor.iter_mut().enumerate() {
                    *e = if elem == ElemType::Fp8E4m3 && r >= 10 { 0 } else { ((r as u32 * 37 + u32::from(seed) * 11) & 0x7F) as u8 };
                }
                let lut = build_lut(elem, &eor);
                let ours = build(elem, &lut);
                assert_eq!(ours.len(), WORDS);
                for p in 0..4096 {
                    let stored = lut[p];
                    let two_codes = stored >> 24 == 0 && p > 1;
                    if two_codes {
                        assert_eq!(ours[p] & 0x00FF_FFFF, stored, "pattern {p:#x}");
                        assert_eq!(ours[p] >> 24, stored & 0xFF, "pattern {p:#x}");
                    } else {
                        assert_eq!(ours[p], SLOW, "pattern {p:#x}");
                    }
                }
                let ranks: Vec<u32> = recover_exp_of_rank(&lut).iter().map(|&r| u32::from(r)).collect();
                assert_eq!(&ours[4096..4111], &ranks[..]);
            }
        }
    }
}
