//! Spec 10: the 4096-entry decoder lookup table, and reading exp_of_rank back out of it.

use crate::geometry::LUT_ENTRIES;
use crate::mode::ElemType;
use std::cell::RefCell;
use std::rc::Rc;

const WINDOW: usize = 12;
/// Spec 10.3: the flag of an entry that holds fewer than two complete codes.
pub const PARTIAL: u32 = 1 << 30;

/// One complete code found in a window (spec 10.2): its length in bits, rank and sign bit.
#[derive(Clone, Copy, Debug)]
struct WindowCode {
    len: u8,
    rank: u8,
    sign: u8,
}

/// Spec 10.2: the complete codes at the start of one 12-bit window (at most two).
#[derive(Clone, Copy, Debug)]
struct WindowCodes {
    codes: [WindowCode; 2],
    count: u8,
}

/// Bit `i` of a window, counted from its first (most significant) bit.
const fn window_bit(pattern: usize, i: usize) -> u8 {
    ((pattern >> (WINDOW - 1 - i)) & 1) as u8
}

/// Spec 10.2: parses up to two complete codes greedily from the start of the 12-bit window
/// `pattern`, for an element type with rank limit R.
const fn parse_window(pattern: usize, rank_limit: usize) -> WindowCodes {
    const NONE: WindowCode = WindowCode { len: 0, rank: 0, sign: 0 };
    let mut found = WindowCodes { codes: [NONE; 2], count: 0 };
    let mut pos = 0;
    while found.count < 2 {
        let mut zeros = 0;
        while pos + zeros < WINDOW && window_bit(pattern, pos + zeros) == 0 {
            zeros += 1;
        }
        let complete = zeros < rank_limit && pos + zeros + 2 <= WINDOW;
        if !complete {
            break;
        }
        let sign = window_bit(pattern, pos + zeros + 1);
        found.codes[found.count as usize] = WindowCode { len: zeros as u8 + 2, rank: zeros as u8, sign };
        found.count += 1;
        pos += zeros + 2;
    }
    found
}

/// The parse of every window for an element type with rank limit R. It does not depend on
/// exp_of_rank, so it is made at compile time; a table only fills in the bytes.
const fn parse_all_windows(rank_limit: usize) -> [WindowCodes; LUT_ENTRIES] {
    let mut all = [parse_window(0, rank_limit); LUT_ENTRIES];
    let mut pattern = 1;
    while pattern < LUT_ENTRIES {
        all[pattern] = parse_window(pattern, rank_limit);
        pattern += 1;
    }
    all
}

static BF16_WINDOWS: [WindowCodes; LUT_ENTRIES] = parse_all_windows(ElemType::Bf16.rank_limit());
static FP8_WINDOWS: [WindowCodes; LUT_ENTRIES] = parse_all_windows(ElemType::Fp8E4m3.rank_limit());

/// Spec 10.2: the byte a complete code stands for: its sign bit, then its 7-bit symbol.
fn code_byte(code: WindowCode, exp_of_rank: &[u8; 16]) -> u32 {
    (u32::from(code.sign) << 7) | u32::from(exp_of_rank[usize::from(code.rank)] & 0x7F)
}

/// Spec 10.3, 10.4: entry `pattern` of the table, from the parse of its window.
fn entry(pattern: usize, found: &WindowCodes, exp_of_rank: &[u8; 16]) -> u32 {
    // Spec 10.4: entries 0 and 1 can never start with a complete code, so they carry ranks 11..14.
    let e = |r: usize| u32::from(exp_of_rank[r] & 0x7F);
    match pattern {
        0 => return PARTIAL | (e(11) << 8) | (e(12) << 16),
        1 => return PARTIAL | (e(13) << 8) | (e(14) << 16),
        _ => {}
    }
    let [first, second] = found.codes;
    match found.count {
        // Spec 10.3.
        2 => u32::from(first.len + second.len) | (code_byte(first, exp_of_rank) << 8) | (code_byte(second, exp_of_rank) << 16),
        1 => PARTIAL | (1 << 24) | u32::from(first.len) | (code_byte(first, exp_of_rank) << 8),
        _ => PARTIAL,
    }
}

/// Spec 10.1-10.4: builds the table from exp_of_rank (only ranks 0..14 are used).
pub fn build_lut(elem: ElemType, exp_of_rank: &[u8; 16]) -> Vec<u32> {
    shared_lut(elem, exp_of_rank).to_vec()
}

/// The table of [`build_lut`], shared. A round trip needs the same table several times (the
/// encoder stores it, every decode checks the stored one against it, rule 13.10), so the table
/// last asked for on this thread is kept and handed out again when both the element type and
/// all 16 bytes of exp_of_rank match.
pub(crate) fn shared_lut(elem: ElemType, exp_of_rank: &[u8; 16]) -> Rc<[u32]> {
    type Kept = Option<(ElemType, [u8; 16], Rc<[u32]>)>;
    thread_local! {
        static LAST: RefCell<Kept> = const { RefCell::new(None) };
    }
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        if let Some((e, ranks, lut)) = last.as_ref() {
            if *e == elem && ranks == exp_of_rank {
                return Rc::clone(lut);
            }
        }
        *last = None; // freed before the new table is made: one table at a time
        let windows = match elem {
            ElemType::Bf16 => &BF16_WINDOWS,
            ElemType::Fp8E4m3 => &FP8_WINDOWS,
        };
        let lut: Rc<[u32]> = windows.iter().enumerate().map(|(pattern, found)| entry(pattern, found, exp_of_rank)).collect();
        *last = Some((elem, *exp_of_rank, Rc::clone(&lut)));
        lut
    })
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
