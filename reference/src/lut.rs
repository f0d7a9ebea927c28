//! Spec 10: the 4096-entry decoder lookup table, and reading exp_of_rank back out of it.

use crate::geometry::LUT_ENTRIES;
use crate::mode::ElemType;

const WINDOW: usize = 12;
/// Spec 10.3: the flag of an entry that holds fewer than two complete codes.
pub const PARTIAL: u32 = 1 << 30;

/// Spec 10.2: the byte a complete code stands for: its sign bit, then its 7-bit symbol.
fn code_byte(sign: u32, exp_of_rank: &[u8; 16], rank: usize) -> u32 {
    (sign << 7) | u32::from(exp_of_rank[rank] & 0x7F)
}

/// Spec 10.1-10.4: builds the table from exp_of_rank (only ranks 0..14 are used).
pub fn build_lut(elem: ElemType, exp_of_rank: &[u8; 16]) -> Vec<u32> {
    let rank_limit = elem.rank_limit();
    let mut lut = vec![0u32; LUT_ENTRIES];
    for (pattern, entry) in lut.iter_mut().enumerate() {
        let bit = |i: usize| ((pattern >> (WINDOW - 1 - i)) & 1) as u32;
        // Spec 10.2: parse up to two complete codes greedily from the start of the 12-bit window.
        let mut codes: Vec<(u32, u32)> = Vec::with_capacity(2); // (length, byte)
        let mut pos = 0;
        while codes.len() < 2 {
            let zeros = (pos..WINDOW).take_while(|&i| bit(i) == 0).count();
            let complete = zeros < rank_limit && pos + zeros + 2 <= WINDOW;
            if !complete {
                break;
            }
            let sign = bit(pos + zeros + 1);
            codes.push((zeros as u32 + 2, code_byte(sign, exp_of_rank, zeros)));
            pos += zeros + 2;
        }
        *entry = match codes[..] {
            // Spec 10.3.
            [(len0, byte0), (len1, byte1)] => (len0 + len1) | (byte0 << 8) | (byte1 << 16),
            [(len0, byte0)] => PARTIAL | (1 << 24) | len0 | (byte0 << 8),
            _ => PARTIAL,
        };
    }
    // Spec 10.4: entries 0 and 1 can never start with a complete code, so they carry ranks 11..14.
    let e = |r: usize| u32::from(exp_of_rank[r] & 0x7F);
    lut[0] = PARTIAL | (e(11) << 8) | (e(12) << 16);
    lut[1] = PARTIAL | (e(13) << 8) | (e(14) << 16);
    lut
}

/// Spec 10.6: exp_of_rank for ranks 0..14, read back from a table. Rank r <= 10 is byte 1 of entry
/// 1 << (11 - r) (the pattern "r zeros, a one, sign 0"); ranks 11..14 are bytes 1 and 2 of
/// entries 0 and 1. Rank 15 is not recoverable and never needed (it is always escaped).
pub fn recover_exp_of_rank(lut: &[u32]) -> [u8; 15] {
    let byte = |entry: u32, i: u32| (entry >> (8 * i)) as u8;
    let mut out = [0u8; 15];
    for (r, slot) in out.iter_mut().enumerate().take(11) {
        *slot = byte(lut[1 << (11 - r)], 1);
    }
    out[11] = byte(lut[0], 1);
    out[12] = byte(lut[0], 2);
    out[13] = byte(lut[1], 1);
    out[14] = byte(lut[1], 2);
    out
}

/// Widens 15 recovered ranks to the 16-entry form the builder takes (rank 15 unused).
pub fn widen(ranks: &[u8; 15]) -> [u8; 16] {
    let mut out = [0u8; 16];
    out[..15].copy_from_slice(ranks);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovery_inverts_building() {
        let e: [u8; 16] = [60, 10, 20, 5, 70, 0, 6, 7, 8, 9, 1, 11, 12, 13, 14, 15];
        let lut = build_lut(ElemType::Bf16, &e);
        assert_eq!(&recover_exp_of_rank(&lut)[..], &e[..15]);
    }

    #[test]
    fn known_entries() {
        let e: [u8; 16] = core::array::from_fn(|i| 100 + i as u8);
        let lut = build_lut(ElemType::Bf16, &e);
        // 11 0000000001 x: rank 0 sign 1 (len 2), then rank... 10 zeros need 12 bits: incomplete.
        assert_eq!(lut[0b1100_0000_0001], PARTIAL | (1 << 24) | 2 | ((0x80 | 100) << 8));
        // 10 10 ...: two rank-0 codes with sign 0.
        assert_eq!(lut[0b1010_0000_0000], 4 | (100 << 8) | (100 << 16));
        // 01 1 001 0 ...: rank 1 sign 1, then rank 2 sign 0.
        assert_eq!(lut[0b0110_0100_0000], 7 | ((0x80 | 101) << 8) | (102 << 16));
        let fp8 = build_lut(ElemType::Fp8E4m3, &[64, 63, 0, 60, 61, 65, 66, 67, 59, 62, 0, 0, 0, 0, 0, 0]);
        assert_eq!(fp8[2], PARTIAL);
        assert_eq!(fp8[3], PARTIAL);
        assert_eq!(fp8[0], PARTIAL);
        assert_eq!(fp8[1], PARTIAL);
    }
}
