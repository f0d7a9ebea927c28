//! Synthetic models for the container tests.
#![allow(dead_code)]

use nwc_container::model::{write_safetensors, Tensor};
use nwc_reference::Shape;
use nwc_testkit::gen::{Dist, Generator};
use safetensors::Dtype;
use std::collections::BTreeMap;
use std::path::Path;

pub fn bf16_tensor(gen: &mut Generator, name: &str, rows: usize, cols: usize, dist: Dist) -> Tensor {
    let words = gen.bf16(dist, Shape::new(rows as u64, cols as u64));
    Tensor { name: name.into(), dtype: Dtype::BF16, shape: vec![rows, cols], data: words.iter().flat_map(|w| w.to_le_bytes()).collect() }
}

pub fn f32_tensor(gen: &mut Generator, name: &str, shape: Vec<usize>) -> Tensor {
    let n: usize = shape.iter().product();
    let words = gen.bf16(Dist::Gaussian { log2_sigma: -5 }, Shape::new(1, n as u64));
    // Full-precision F32 values (not BF16-representable) so the cast is really lossy.
    let data = words
        .iter()
        .enumerate()
        .flat_map(|(i, &w)| (f32::from_bits(u32::from(w) << 16 | (i as u32).wrapping_mul(2654435761) >> 16)).to_le_bytes())
        .collect();
    Tensor { name: name.into(), dtype: Dtype::F32, shape, data }
}

/// A small sharded "model": two shards with an index, BF16 matrices (one with escapes, one
/// ragged), a tied embedding and lm_head with identical bytes, F32 matrices and vectors, an I64
/// buffer, config and tokenizer files.
pub fn sharded_model(dir: &Path) -> Vec<Tensor> {
    let mut gen = Generator::new(17);
    std::fs::create_dir_all(dir).unwrap();
    let embed = bf16_tensor(&mut gen, "model.embed_tokens.weight", 100, 64, Dist::Gaussian { log2_sigma: -6 });
    let mut lm_head = embed.clone();
    lm_head.name = "lm_head.weight".into();
    let shard1 = vec![
        embed,
        bf16_tensor(&mut gen, "model.layers.0.self_attn.q_proj.weight", 64, 64, Dist::RowScaled { binades: 12 }),
        bf16_tensor(&mut gen, "model.layers.0.self_attn.k_proj.weight", 13, 64, Dist::HeavyTail),
        f32_tensor(&mut gen, "model.layers.0.self_attn.k_proj.bias", vec![13]),
    ];
    let shard2 = vec![
        bf16_tensor(&mut gen, "model.layers.0.mlp.up_proj.weight", 37, 530, Dist::Gaussian { log2_sigma: -7 }),
        f32_tensor(&mut gen, "model.layers.0.mlp.down_proj.weight", vec![24, 37]),
        f32_tensor(&mut gen, "model.norm.weight", vec![64]),
        Tensor {
            name: "model.position_ids".into(),
            dtype: Dtype::I64,
            shape: vec![1, 4],
            data: (0..4i64).flat_map(|i| i.to_le_bytes()).collect(),
        },
        lm_head,
    ];
    let meta: BTreeMap<String, String> = [("format".to_string(), "pt".to_string())].into_iter().collect();
    let mut map = serde_json::Map::new();
    for (file, tensors) in [("model-00001-of-00002.safetensors", &shard1), ("model-00002-of-00002.safetensors", &shard2)] {
        let refs: Vec<&Tensor> = tensors.iter().collect();
        write_safetensors(&dir.join(file), &refs, Some(&meta)).unwrap();
        for t in tensors.iter() {
            map.insert(t.name.clone(), serde_json::Value::String(file.into()));
        }
    }
    let index = serde_json::json!({"metadata": {"total_size": 12345}, "weight_map": map});
    std::fs::write(dir.join("model.safetensors.index.json"), serde_json::to_string_pretty(&index).unwrap()).unwrap();
    std::fs::write(dir.join("config.json"), r#"{"tie_word_embeddings": true, "hidden_size": 64}"#).unwrap();
    std::fs::write(dir.join("tokenizer.json"), r#"{"model": "toy"}"#).unwrap();
    shard1.into_iter().chain(shard2).collect()
}

/// All tensors of a model folder or file, sorted by name.
pub fn all_tensors(path: &Path) -> Vec<Tensor> {
    let m = nwc_container::model::read_model(path).unwrap();
    let mut v: Vec<Tensor> = m
        .tensors()
        .map(|(f, t)| Tensor { name: t.name.clone(), dtype: t.dtype, shape: t.shape.clone(), data: f.bytes(t).to_vec() })
        .collect();
    v.sort_by(|a, b| a.name.cmp(&b.name));
    v
}

pub fn no_progress(_: u64) {}
