//! Spec 11.2: quantizing BF16 weights to fp8 e4m3fn with per-row scales, as the 0.10.1 library does.

use crate::error::QuantizeError;
use crate::geometry::Shape;

/// Largest finite e4m3fn magnitude.
pub const FP8_MAX: f32 = 448.0;
/// Floor of a row's absolute maximum, so an all-zero row gets a usable scale (EPS of spec 11.1).
pub const ABSMAX_FLOOR: f32 = 1e-12;

/// Spec 11.2: f32 to e4m3fn, round to nearest, ties to even. `v` must be finite with |v| <= 448
/// (the caller clamps), so the result never overflows.
pub fn f32_to_fp8_rne(v: f32) -> u8 {
    let sign = if v.is_sign_negative() { 0x80u8 } else { 0 };
    let a = v.abs();
    if a == 0.0 {
        return sign;
    }
    // Exponent of the binade holding `a`, at least -6 (the subnormal binade shares its quantum).
    let e = if a < 2f32.powi(-6) { -6 } else { ((a.to_bits() >> 23) as i32) - 127 };
    // Three mantissa bits: the quantum is 2^(e-3); a / quantum is exact in f64.
    let quantum = 2f64.powi(e - 3);
    let n = (f64::from(a) / quantum).round_ties_even() as u32; // 0..=16
    let magnitude = if n == 0 {
        0
    } else if e == -6 && n < 8 {
        n as u8 // subnormal: exponent field 0, mantissa n
    } else if n == 16 {
        ((e + 1 + 7) as u8) << 3 // rounded up into the next binade, mantissa 0
    } else {
        (((e + 7) as u8) << 3) | (n - 8) as u8
    };
    sign | magnitude
}

/// Spec 11.1, 11.2: per row, scale = max(absmax(row), 1e-12) / 448 in f32, and each weight becomes
/// e4m3fn(clamp(w / scale, -448, 448)) (a true division, rounded to nearest even).
/// Returns the fp8 matrix and the M scales. NaN or infinite weights are refused (spec 11.3).
pub fn quantize_fp8(words: &[u16], shape: Shape) -> Result<(Vec<u8>, Vec<f32>), QuantizeError> {
    let (rows, cols) = (shape.rows, shape.cols);
    let expected = rows.saturating_mul(cols);
    if words.len() as u64 != expected {
        return Err(QuantizeError::InputLength { got: words.len() as u64, expected, rows, cols });
    }
    if cols == 0 {
        return Ok((Vec::new(), vec![ABSMAX_FLOOR / FP8_MAX; rows as usize]));
    }
    let mut q = Vec::with_capacity(words.len());
    let mut scales = Vec::with_capacity(rows as usize);
    for (row, chunk) in words.chunks_exact(cols as usize).enumerate() {
        let values: Vec<f32> = chunk.iter().map(|&w| f32::from_bits(u32::from(w) << 16)).collect();
        if let Some(col) = values.iter().position(|v| !v.is_finite()) {
            return Err(QuantizeError::NotFinite { row: row as u64, col: col as u64, bits: chunk[col] });
        }
        let absmax = values.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let scale = absmax.max(ABSMAX_FLOOR) / FP8_MAX;
        q.extend(values.iter().map(|&v| f32_to_fp8_rne((v / scale).clamp(-FP8_MAX, FP8_MAX))));
        scales.push(scale);
    }
    Ok((q, scales))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::element::fp8_to_f32;

    #[test]
    fn every_representable_value_maps_to_itself() {
        for b in 0..=255u8 {
            if b & 0x7F == 0x7F {
                continue;
            }
            assert_eq!(f32_to_fp8_rne(fp8_to_f32(b)), b, "{b:#04x}");
        }
    }

    #[test]
    fn ties_go_to_even() {
        // 1.0 = 0x38, next is 1.125 = 0x39; the midpoint 1.0625 rounds to the even 0x38.
        assert_eq!(f32_to_fp8_rne(1.0625), 0x38);
        // 1.125 .. 1.25: the midpoint 1.1875 rounds to the even 1.25 = 0x3A.
        assert_eq!(f32_to_fp8_rne(1.1875), 0x3A);
        // Subnormal quantum 2^-9: 1.5 * 2^-9 rounds to 2 * 2^-9.
        assert_eq!(f32_to_fp8_rne(1.5 * 2f32.powi(-9)), 0x02);
        // Largest subnormal 7 * 2^-9 and a bit more rounds up to the smallest normal.
        assert_eq!(f32_to_fp8_rne(7.5 * 2f32.powi(-9)), 0x08);
        assert_eq!(f32_to_fp8_rne(-448.0), 0xFE);
        assert_eq!(f32_to_fp8_rne(-0.0), 0x80);
        // Below half the smallest subnormal: zero.
        assert_eq!(f32_to_fp8_rne(2f32.powi(-11)), 0x00);
    }

    #[test]
    fn rows_are_scaled_by_their_absmax() {
        let w: Vec<u16> = [1.0f32, -2.0, 0.5, 0.0, 0.0, 0.0].iter().map(|v| half::bf16::from_f32(*v).to_bits()).collect();
        let (q, s) = quantize_fp8(&w, Shape::new(2, 3)).unwrap();
        assert_eq!(s[0], 2.0 / 448.0);
        assert_eq!(q[1], 0xFE); // -448
        assert_eq!(s[1], 1e-12 / 448.0);
        assert_eq!(&q[3..], &[0, 0, 0]);
    }
}
