//! Tests of the GGUF reader (`gguf.rs`): files built here, then read back and broken.

use super::*;

/// Builds a GGUF v3 file: `meta` as (key, u32 value), tensors as (name, dims, type, data).
pub(crate) fn build(meta: &[(&str, u32)], tensors: &[(&str, Vec<u64>, u32, Vec<u8>)]) -> Vec<u8> {
    let s = |out: &mut Vec<u8>, x: &str| {
        out.extend((x.len() as u64).to_le_bytes());
        out.extend(x.as_bytes());
    };
    let mut out = b"GGUF".to_vec();
    out.extend(3u32.to_le_bytes());
    out.extend((tensors.len() as u64).to_le_bytes());
    out.extend((meta.len() as u64 + 2).to_le_bytes());
    s(&mut out, "general.architecture");
    out.extend(META_STRING.to_le_bytes());
    s(&mut out, "llama");
    // An array of strings, which the reader must skip.
    s(&mut out, "tokenizer.ggml.tokens");
    out.extend(META_ARRAY.to_le_bytes());
    out.extend(META_STRING.to_le_bytes());
    out.extend(2u64.to_le_bytes());
    s(&mut out, "a");
    s(&mut out, "bc");
    for (k, v) in meta {
        s(&mut out, k);
        out.extend(4u32.to_le_bytes());
        out.extend(v.to_le_bytes());
    }
    let mut offset = 0u64;
    for (name, dims, t, data) in tensors {
        s(&mut out, name);
        out.extend((dims.len() as u32).to_le_bytes());
        dims.iter().for_each(|d| out.extend(d.to_le_bytes()));
        out.extend(t.to_le_bytes());
        out.extend(offset.to_le_bytes());
        offset += (data.len() as u64).div_ceil(32) * 32;
    }
    out.resize(out.len().div_ceil(32) * 32, 0);
    for (_, _, _, data) in tensors {
        out.extend(data);
        out.resize(out.len().div_ceil(32) * 32, 0);
    }
    out
}

fn f16(v: f32) -> [u8; 2] {
    half::f16::from_f32(v).to_le_bytes()
}

fn sample() -> Vec<u8> {
    // Q4_1, one row of 32: d = 0.5, m = -1, nibbles 0..15 then 15..0 (low nibble j, high 15 - j).
    let mut q41 = [f16(0.5), f16(-1.0)].concat();
    q41.extend((0..16u8).map(|j| j | ((15 - j) << 4)));
    // Q8_0, two rows of 32: d = 0.25, q = -16..16 and 100 - j.
    let mut q80 = f16(0.25).to_vec();
    q80.extend((0..32).map(|j| (j as i8 - 16) as u8));
    q80.extend(f16(0.25));
    q80.extend((0..32).map(|j| (100 - j) as u8));
    let f32s: Vec<u8> = [1.5f32, -2.0, 3.0e-3].iter().flat_map(|v| v.to_le_bytes()).collect();
    build(
        &[("llama.block_count", 30)],
        &[("q41", vec![32, 1], GGML_Q4_1, q41), ("q80", vec![32, 2], GGML_Q8_0, q80), ("norm", vec![3], GGML_F32, f32s)],
    )
}

#[test]
fn dequantizes_q4_1_q8_0_and_f32() {
    let g = Gguf::parse(sample()).unwrap();
    assert_eq!(g.ints["llama.block_count"], 30);
    assert_eq!(g.strings["general.architecture"], "llama");
    let q41 = g.f32_values("q41").unwrap();
    let expected: Vec<f32> = (0..16).chain((0..16).rev()).map(|n| n as f32 * 0.5 - 1.0).collect();
    assert_eq!(q41, expected);
    let m = g.bf16_matrix("q80").unwrap();
    assert_eq!((m.shape.rows, m.shape.cols), (2, 32));
    assert_eq!(half::bf16::from_bits(m.words[0]).to_f32(), -4.0);
    assert_eq!(half::bf16::from_bits(m.words[32 + 31]).to_f32(), 69.0 * 0.25);
    assert_eq!(g.f32_values("norm").unwrap(), vec![1.5, -2.0, 3.0e-3]);
    assert!(g.bf16_matrix("norm").unwrap_err().what.contains("1 dimensions"));
}

#[test]
fn every_truncation_gives_a_named_error() {
    let full = sample();
    for len in 0..full.len() {
        let cut = full[..len].to_vec();
        let e = match Gguf::parse(cut) {
            Err(e) => e,
            // Cutting only trailing padding of the last tensor still leaves a whole file.
            Ok(g) => {
                assert!(len >= full.len() - 32 + 12, "length {len} parsed");
                assert!(g.f32_values("norm").is_ok());
                continue;
            }
        };
        assert!(e.offset <= len as u64 || e.what.contains("past the end"), "{len}: {e}");
        assert!(e.what.contains("truncated") || e.what.contains("past the end") || e.what.contains("magic"), "{len}: {e}");
    }
}

#[test]
fn hostile_headers_are_refused() {
    let mut bad = sample();
    bad[4] = 2;
    assert!(Gguf::parse(bad).unwrap_err().what.contains("version 2"));
    let mut huge = sample();
    huge[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(Gguf::parse(huge).unwrap_err().what.contains("limit"));
    let unknown = build(&[], &[("x", vec![32, 1], 12, vec![0; 32])]);
    let g = Gguf::parse(unknown).unwrap();
    assert!(g.f32_values("x").unwrap_err().what.contains("ggml type 12"));
    let ragged = build(&[], &[("x", vec![31, 1], GGML_Q8_0, vec![0; 34])]);
    assert!(Gguf::parse(ragged).unwrap_err().what.contains("multiple of the block"));
    let past = build(&[], &[("x", vec![32, 4], GGML_Q8_0, vec![0; 34])]);
    assert!(Gguf::parse(past).unwrap_err().what.contains("past the end"));
}
