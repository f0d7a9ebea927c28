//! Spec 4: how one weight splits into a coded part and a raw part.

/// Spec 4.1: the high byte of a BF16 word (sign and 7 exponent bits): entropy-coded.
pub fn bf16_hi(word: u16) -> u8 {
    (word >> 8) as u8
}

/// Spec 4.1: the low byte of a BF16 word (last exponent bit and 7 mantissa bits): stored raw.
pub fn bf16_lo(word: u16) -> u8 {
    word as u8
}

/// Spec 4.1: the ranked symbol of a BF16 weight, its 7 exponent bits in the high byte.
pub fn bf16_symbol(word: u16) -> u8 {
    bf16_hi(word) & 0x7F
}

/// Number of FP8 symbols (spec 4.5).
pub const FP8_SYMBOLS: usize = 10;

/// Spec 4.5: the lookup-table byte of each FP8 symbol (the fp32 exponent field shifted right by one;
/// 0 for zero). Symbols 0..7 are normal exponent pairs, 8 the small subnormals, 9 zero.
pub const FP8_SYMBOL_BYTE: [u8; FP8_SYMBOLS] = [60, 61, 62, 63, 64, 65, 66, 67, 59, 0];

/// Spec 4.4, 4.5: an fp8 e4m3fn byte split into sign, symbol and raw nibble.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fp8Parts {
    pub sign: u8,
    pub symbol: u8,
    pub nibble: u8,
}

/// True for the two NaN encodings of e4m3fn, which format 10 cannot carry (spec 4.6).
pub fn fp8_is_nan(byte: u8) -> bool {
    byte & 0x7F == 0x7F
}

/// Spec 4.5: split a non-NaN fp8 byte. The nibble is the fp32 exponent's low bit followed by the
/// top three fp32 mantissa bits of the same value, so that `symbol byte << 8 | nibble << 4` is the
/// value as BF16.
pub fn fp8_split(byte: u8) -> Fp8Parts {
    let sign = byte >> 7;
    let e = (byte >> 3) & 0xF;
    let m = byte & 7;
    let (symbol, nibble) = match (e, m) {
        (0, 0) => (9, 0),
        (0, 1) => (8, 0),
        (0, 2) => (8, 8),
        (0, 3) => (8, 12),
        (0, m) => (0, (m - 4) << 1),
        (e, m) => (e >> 1, ((e & 1) << 3) | m),
    };
    Fp8Parts { sign, symbol, nibble }
}

/// Spec 4.7, 4.8 (rules 13.16 fp8-nibble, 13.17 fp8-nan): rebuild the fp8 byte from its parts, or `None`
/// if the nibble cannot occur with that symbol or the result would be NaN.
pub fn fp8_join(parts: Fp8Parts) -> Option<u8> {
    let Fp8Parts { sign, symbol, nibble } = parts;
    let magnitude = match symbol {
        9 if nibble == 0 => 0,
        8 => match nibble {
            0 => 1,
            8 => 2,
            12 => 3,
            _ => return None,
        },
        // Subnormals with m = 4..7 share symbol 0 with exponent 1; their nibble is even and < 8.
        0 if nibble < 8 => {
            if nibble & 1 != 0 {
                return None;
            }
            4 + (nibble >> 1)
        }
        0..=7 => {
            // symbol 0 reaches here only with nibble >= 8, i.e. exponent 1
            let e = (symbol << 1) | (nibble >> 3);
            (e << 3) | (nibble & 7)
        }
        _ => return None,
    };
    let byte = (sign << 7) | magnitude;
    if fp8_is_nan(byte) {
        return None;
    }
    Some(byte)
}

/// Spec 4.9 / 15.2: the exact value of an fp8 weight as a BF16 word, from its coded byte and nibble.
pub fn fp8_as_bf16(sign: u8, symbol_byte: u8, nibble: u8) -> u16 {
    (u16::from(sign) << 15) | (u16::from(symbol_byte) << 8) | (u16::from(nibble) << 4)
}

/// Spec 4.9: the BF16 word of an fp8 byte (exact; unscaled).
pub fn fp8_to_bf16(byte: u8) -> u16 {
    let p = fp8_split(byte);
    fp8_as_bf16(p.sign, FP8_SYMBOL_BYTE[p.symbol as usize], p.nibble)
}

/// The exact value of an fp8 e4m3fn byte as f32 (NaN for 0x7F/0xFF).
pub fn fp8_to_f32(byte: u8) -> f32 {
    if fp8_is_nan(byte) {
        return f32::NAN;
    }
    f32::from_bits(u32::from(fp8_to_bf16(byte)) << 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fp8_byte_splits_and_joins() {
        for b in 0..=255u8 {
            if fp8_is_nan(b) {
                continue;
            }
            assert_eq!(fp8_join(fp8_split(b)), Some(b), "byte {b:#04x}");
        }
    }

    #[test]
    fn fp8_values_match_the_e4m3fn_definition() {
        for b in 0..=255u8 {
            if fp8_is_nan(b) {
                continue;
            }
            let s = if b & 0x80 != 0 { -1.0f64 } else { 1.0 };
            let e = i32::from((b >> 3) & 0xF);
            let m = f64::from(b & 7);
            let v = if e == 0 { s * m / 8.0 * 2f64.powi(-6) } else { s * (1.0 + m / 8.0) * 2f64.powi(e - 7) };
            assert_eq!(f64::from(fp8_to_f32(b)), v, "byte {b:#04x}");
            if v == 0.0 {
                assert_eq!(fp8_to_f32(b).is_sign_negative(), b & 0x80 != 0);
            }
        }
    }

    #[test]
    fn invalid_fp8_parts_are_refused() {
        let join = |symbol, nibble| fp8_join(Fp8Parts { sign: 0, symbol, nibble });
        assert_eq!(join(0, 1), None);
        assert_eq!(join(8, 4), None);
        assert_eq!(join(9, 1), None);
        assert_eq!(join(7, 15), None, "e=15 m=7 is NaN");
        assert_eq!(join(10, 0), None);
        assert_eq!(join(7, 14), Some(0x7E));
    }
}
