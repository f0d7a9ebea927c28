//! Element conversions between safetensors dtypes, BF16 words and decoded matrices
//! (spec 17.3, 17.8).

use nwc_reference::element::fp8_to_f32;
use nwc_reference::{quantize_fp8, DecodedMatrix, Elements, Shape};
use safetensors::Dtype;

/// The tensor's values as BF16 words: BF16 as stored, F32/F16 rounded to nearest even
/// (the lossy `cast-bf16` step). `None` for other dtypes.
pub fn to_bf16_words(dtype: Dtype, data: &[u8]) -> Option<Vec<u16>> {
    let c2 = |c: &[u8]| [c[0], c[1]];
    Some(match dtype {
        Dtype::BF16 => data.chunks_exact(2).map(|c| u16::from_le_bytes(c2(c))).collect(),
        Dtype::F32 => data.chunks_exact(4).map(|c| half::bf16::from_f32(f32::from_le_bytes([c[0], c[1], c[2], c[3]])).to_bits()).collect(),
        Dtype::F16 => {
            data.chunks_exact(2).map(|c| half::bf16::from_f32(half::f16::from_bits(u16::from_le_bytes(c2(c))).to_f32()).to_bits()).collect()
        }
        _ => return None,
    })
}

/// BF16 words as bytes of `dtype` (BF16: as is; F32: exact widening; F16: rounded).
pub fn from_bf16_words(words: &[u16], dtype: Dtype) -> Vec<u8> {
    let f = |w: u16| half::bf16::from_bits(w).to_f32();
    match dtype {
        Dtype::F32 => words.iter().flat_map(|&w| f(w).to_le_bytes()).collect(),
        Dtype::F16 => words.iter().flat_map(|&w| half::f16::from_f32(f(w)).to_bits().to_le_bytes()).collect(),
        _ => words.iter().flat_map(|w| w.to_le_bytes()).collect(),
    }
}

/// Spec 17.8: fp8 weights with per-row scales to BF16: fl_bf16(fl_f32(value * scale[row])).
/// Without scales the fp8 values are taken unscaled (exact).
pub fn fp8_to_bf16_scaled(bytes: &[u8], scale: Option<&[f32]>, shape: Shape) -> Vec<u16> {
    let k = shape.cols as usize;
    bytes
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            let s = scale.map_or(1.0, |s| s[i / k]);
            half::bf16::from_f32(fp8_to_f32(b) * s).to_bits()
        })
        .collect()
}

/// The BF16 words a decoded matrix stands for (spec 17.8).
pub fn decoded_bf16(d: &DecodedMatrix) -> Vec<u16> {
    match &d.elements {
        Elements::Bf16(w) => w.clone(),
        Elements::Fp8(b) => fp8_to_bf16_scaled(b, d.scale.as_deref(), d.shape),
    }
}

/// Spec 17.3: the bytes decompression must give for a tensor compressed with the given lossy
/// steps, computed from the original tensor without encoding. Errors name the failing weight.
pub fn expected_output(dtype: Dtype, dims: &[usize], data: &[u8], lossy: &[String]) -> Result<Vec<u8>, String> {
    let words = to_bf16_words(dtype, data).ok_or_else(|| format!("dtype {dtype:?} cannot be compressed"))?;
    let words = if lossy.iter().any(|s| s == "fp8") {
        let shape = Shape::new(dims[0] as u64, dims[1] as u64);
        let (q, scale) = quantize_fp8(&words, shape).map_err(|e| e.to_string())?;
        fp8_to_bf16_scaled(&q, Some(&scale), shape)
    } else {
        words
    };
    Ok(from_bf16_words(&words, dtype))
}
