//! Spec 17.8 for the 0.10.1 library's checkpoints (no `nwc_rs` records): the tensors the module
//! list stands for, built in memory (these checkpoints hold small models; our own checkpoints go
//! through the streaming path of `export`).

use super::convert::{decoded_bf16, from_bf16_words};
use super::Progress;
use crate::checkpoint::Checkpoint;
use crate::config::CONFIG_FILE;
use crate::error::{ContainerError, Result};
use crate::model::Tensor;
use nwc_reference::DecodedMatrix;
use rayon::prelude::*;
use safetensors::Dtype;
use std::collections::{BTreeMap, HashMap};

/// The output files of a checkpoint: (file name, metadata, tensors in order).
pub(super) type OutputFiles = Vec<(String, Option<BTreeMap<String, String>>, Vec<Tensor>)>;

/// Validates (spec 13, fast decoder) and decodes every matrix, in parallel.
pub(super) fn decode_all(ck: &Checkpoint, progress: Progress) -> Result<HashMap<u64, DecodedMatrix>> {
    let entries = ck.entries()?;
    entries
        .par_iter()
        .map(|e| {
            let d = ck.decoded_matrix(e)?;
            progress(2 * e.out * e.inp);
            Ok((e.id, d))
        })
        .collect()
}

/// Spec 17.8 for checkpoints without our records (the 0.10.1 library's): matrices become BF16
/// tensors `<path>.weight` from the module list; fused groups are split by rows (`sizes`) into
/// `<path>.<name>.weight`, their bias `nwc/fused/<path>.bias` likewise; with a tied embedding
/// (`tie_word_embeddings` in config.json) only the embedding is written; every other tensor is
/// copied. One `model.safetensors`.
pub(super) fn export_peer(ck: &Checkpoint, decoded: &HashMap<u64, DecodedMatrix>) -> Result<OutputFiles> {
    let cfg = ck.dir.join(CONFIG_FILE);
    let bad = |tensor: &str, msg: String| ContainerError::Tensor { file: cfg.clone(), tensor: tensor.to_string(), msg };
    let tied = std::fs::read_to_string(ck.dir.join("config.json"))
        .ok()
        .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
        .and_then(|v| v.get("tie_word_embeddings").and_then(|b| b.as_bool()))
        .unwrap_or(false);
    let embedding_ids: Vec<u64> = ck.config.modules.iter().filter(|m| m.kind == "embedding").map(|m| m.weight).collect();
    let bf16 = |words: &[u16], name: String, rows: usize, cols: usize| Tensor {
        name,
        dtype: Dtype::BF16,
        shape: vec![rows, cols],
        data: from_bf16_words(words, Dtype::BF16),
    };
    let mut out = Vec::new();
    for name in &ck.order {
        if !name.starts_with("nwc/") {
            out.push(ck.tensor(name).expect("listed tensors exist"));
        }
    }
    for m in &ck.config.modules {
        let d = decoded.get(&m.weight).ok_or_else(|| bad(&m.path, format!("matrix id {} has no weights entry", m.weight)))?;
        let (rows, cols) = (d.shape.rows as usize, d.shape.cols as usize);
        let words = decoded_bf16(d);
        match m.kind.as_str() {
            "linear" if tied && embedding_ids.contains(&m.weight) => {}
            "linear" | "embedding" => out.push(bf16(&words, format!("{}.weight", m.path), rows, cols)),
            "fused" => {
                let (names, sizes) = match (&m.names, &m.sizes) {
                    (Some(n), Some(s)) if n.len() == s.len() && s.iter().sum::<u64>() == rows as u64 => (n, s),
                    _ => return Err(bad(&m.path, "fused module: `names` and `sizes` must match the matrix rows".into())),
                };
                let bias = ck.tensor(&format!("nwc/fused/{}.bias", m.path));
                let mut row = 0usize;
                for (part, &size) in names.iter().zip(sizes) {
                    let size = size as usize;
                    out.push(bf16(&words[row * cols..(row + size) * cols], format!("{}.{part}.weight", m.path), size, cols));
                    if let Some(b) = &bias {
                        let width = b.data.len() / rows.max(1);
                        if b.shape != [rows] || width == 0 {
                            return Err(bad(&m.path, "fused bias does not have one value per row".into()));
                        }
                        let data = b.data[row * width..(row + size) * width].to_vec();
                        out.push(Tensor { name: format!("{}.{part}.bias", m.path), dtype: b.dtype, shape: vec![size], data });
                    }
                    row += size;
                }
            }
            other => return Err(ContainerError::Unsupported { file: cfg.clone(), msg: format!("module kind `{other}` ({})", m.path) }),
        }
    }
    let meta = Some([("format".to_string(), "pt".to_string())].into_iter().collect());
    Ok(vec![("model.safetensors".into(), meta, out)])
}
