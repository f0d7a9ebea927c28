//! Spec 17.3 - 17.7: original model -> NWC checkpoint.

use super::convert::{fp8_to_bf16_scaled, from_bf16_words, to_bf16_words};
use super::Progress;
use crate::checkpoint::{accounted_bytes, checkpoint_metadata, matrix_tensors};
use crate::config::{Extras, FileRecord, ModuleEntry, NwcConfig, TensorRecord, WeightEntry, CONFIG_FILE};
use crate::error::{ContainerError, Result};
use crate::model::{read_model, sha256_hex, write_safetensors, StagedDir, Tensor, INDEX_FILE};
use crate::policy::{Decision, Policy};
use nwc_reference::{quantize_fp8, ElemType, EncodedMatrix, Layout, Mode, Shape, Weights};
use rayon::prelude::*;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::path::Path;

#[derive(Clone, Debug)]
pub struct CompressOptions {
    pub policy: Policy,
    /// BF16 (lossless) or FP8 e4m3 with per-row scales (lossy, spec 11).
    pub elem: ElemType,
    pub layout: Layout,
    /// Split the checkpoint into shards of about this many bytes (spec 17.1); `None`: one file.
    pub shard_bytes: Option<u64>,
    pub base_model: Option<String>,
}

impl Default for CompressOptions {
    fn default() -> Self {
        CompressOptions { policy: Policy::default(), elem: ElemType::Bf16, layout: Layout::Rows8, shard_bytes: None, base_model: None }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct CompressSummary {
    pub matrices: usize,
    pub tensors_compressed: usize,
    pub tensors_copied: usize,
    pub bytes_in: u64,
    pub bytes_out: u64,
}

/// One distinct matrix to encode and the tensors it stands for.
struct Unique {
    first: usize,
    decision: Decision,
}

pub fn compress(input: &Path, output: &Path, opts: &CompressOptions, progress: Progress) -> Result<CompressSummary> {
    let model = read_model(input)?;
    let staged = StagedDir::new(output, &[input])?;
    let all: Vec<(&str, &Tensor)> = model.tensors().map(|(f, t)| (f.name.as_str(), t)).collect();
    if let Some((_, t)) = all.iter().find(|(_, t)| t.name.starts_with("nwc/")) {
        return Err(ContainerError::Unsupported {
            file: input.to_path_buf(),
            msg: format!("tensor `{}` uses the reserved prefix nwc/", t.name),
        });
    }
    let digests: Vec<String> = all.par_iter().map(|(_, t)| sha256_hex(&t.data)).collect();

    // Spec 17.5: tensors with identical dtype, shape and bytes (a tied embedding and lm_head)
    // share one matrix id; ids follow the original tensor order.
    let mut uniques: Vec<Unique> = Vec::new();
    let mut by_key: HashMap<(String, Vec<usize>, &str), u64> = HashMap::new();
    let mut matrix_of: Vec<Option<u64>> = vec![None; all.len()];
    for (i, (_, t)) in all.iter().enumerate() {
        let decision = opts.policy.decide(&t.name, t.dtype, &t.shape);
        if decision == Decision::Copy {
            continue;
        }
        let key = (format!("{:?}", t.dtype), t.shape.clone(), digests[i].as_str());
        let id = *by_key.entry(key).or_insert_with(|| {
            uniques.push(Unique { first: i, decision });
            uniques.len() as u64 - 1
        });
        matrix_of[i] = Some(id);
    }

    let fp8 = opts.elem == ElemType::Fp8E4m3;
    let encoded: Vec<EncodedMatrix> = uniques
        .par_iter()
        .map(|u| {
            let t = all[u.first].1;
            let m = encode_tensor(t, Mode { elem: opts.elem, layout: opts.layout })?;
            progress(t.data.len() as u64);
            Ok(m)
        })
        .collect::<Result<_>>()?;

    // Records (spec 17.6), with the digest decompression must reproduce.
    let lossy_of = |i: usize| -> Vec<String> {
        let mut steps = Vec::new();
        if let Some(id) = matrix_of[i] {
            if uniques[id as usize].decision == Decision::CastBf16 {
                steps.push("cast-bf16".to_string());
            }
            if fp8 {
                steps.push("fp8".to_string());
            }
        }
        steps
    };
    let records: Vec<TensorRecord> = all
        .par_iter()
        .enumerate()
        .map(|(i, (file, t))| {
            let lossy = lossy_of(i);
            let decoded_sha256 = if lossy.is_empty() {
                digests[i].clone()
            } else {
                // Same arithmetic as decoding the stored matrix (spec 17.8).
                let m = &encoded[matrix_of[i].expect("lossy implies compressed") as usize];
                let words = match (&m.scale, fp8) {
                    (Some(_), true) => {
                        let q = nwc_fast::decode(m).map_err(|e| ContainerError::Encode { tensor: t.name.clone(), msg: e.to_string() })?;
                        super::convert::decoded_bf16(&q)
                    }
                    _ => to_bf16_words(t).expect("compressed tensors convert"),
                };
                sha256_hex(&from_bf16_words(&words, t.dtype))
            };
            Ok(TensorRecord {
                name: t.name.clone(),
                dtype: dtype_name(t.dtype),
                shape: t.shape.iter().map(|&d| d as u64).collect(),
                file: file.to_string(),
                sha256: digests[i].clone(),
                matrix: matrix_of[i],
                lossy,
                decoded_sha256,
            })
        })
        .collect::<Result<_>>()?;

    // Spec 17.4, 17.5: weights and modules.
    let mut weights = Vec::new();
    let mut modules = Vec::new();
    for (id, m) in encoded.iter().enumerate() {
        weights.push(WeightEntry {
            id: id as u64,
            out: m.shape.rows,
            inp: m.shape.cols,
            block: 4096,
            bytes: Some(accounted_bytes(m)),
            elem: m.mode.elem.name().to_string(),
            layout: u64::from(m.mode.layout.number()),
            other: Map::new(),
        });
        for (_, (_, t)) in all.iter().enumerate().filter(|(i, _)| matrix_of[*i] == Some(id as u64)) {
            modules.push(module_entry(&t.name, id as u64, &all));
        }
    }
    let bytes_nwc: u64 = weights.iter().filter_map(|w| w.bytes).sum();
    let bytes_bf16: u64 = encoded.iter().map(|m| 2 * m.shape.rows * m.shape.cols).sum();
    let config = NwcConfig {
        nwc_checkpoint: Some(1),
        library_version: u64::from(nwc_reference::FORMAT_VERSION),
        base_model: opts.base_model.clone(),
        weights,
        modules,
        bytes_nwc: Some(bytes_nwc),
        bytes_bf16: Some(bytes_bf16),
        nwc_rs: Some(Extras {
            format: 1,
            tensors: records,
            files: model.files.iter().map(|f| FileRecord { name: f.name.clone(), metadata: f.metadata.clone() }).collect(),
            index: model.index.clone(),
        }),
        other: Map::new(),
    };

    // Stored tensors: every matrix's fields, then every copied tensor unchanged.
    let mut stored: Vec<Tensor> = encoded.iter().enumerate().flat_map(|(id, m)| matrix_tensors(id as u64, m)).collect();
    stored.extend(all.iter().enumerate().filter(|(i, _)| matrix_of[*i].is_none()).map(|(_, (_, t))| (*t).clone()));
    let bytes_out = write_shards(&staged.tmp, &stored, opts.shard_bytes)?;
    for f in &model.other_files {
        let (from, to) = (model.root.join(f), staged.tmp.join(f));
        std::fs::copy(&from, &to).map_err(ContainerError::io(&from))?;
    }
    let cfg_path = staged.tmp.join(CONFIG_FILE);
    std::fs::write(&cfg_path, config.to_json()).map_err(ContainerError::write(&cfg_path))?;
    staged.commit()?;
    Ok(CompressSummary {
        matrices: encoded.len(),
        tensors_compressed: matrix_of.iter().filter(|m| m.is_some()).count(),
        tensors_copied: matrix_of.iter().filter(|m| m.is_none()).count(),
        bytes_in: all.iter().map(|(_, t)| t.data.len() as u64).sum(),
        bytes_out,
    })
}

pub fn dtype_name(d: safetensors::Dtype) -> String {
    serde_json::to_value(d).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_else(|| format!("{d:?}"))
}

/// Encodes one tensor in `mode` with the fast encoder (spec 17.3: cast to BF16 first where the
/// policy says so; FP8 quantizes with per-row scales, spec 11).
fn encode_tensor(t: &Tensor, mode: Mode) -> Result<EncodedMatrix> {
    let err = |msg: String| ContainerError::Encode { tensor: t.name.clone(), msg };
    let words = to_bf16_words(t).ok_or_else(|| err(format!("dtype {:?}", t.dtype)))?;
    let shape = Shape::new(t.shape[0] as u64, t.shape[1] as u64);
    match mode.elem {
        ElemType::Bf16 => Ok(nwc_fast::encode(mode, shape, Weights::Bf16(&words)).map_err(|e| err(e.to_string()))?.matrix),
        ElemType::Fp8E4m3 => {
            let (q, scale) = quantize_fp8(&words, shape).map_err(|e| err(e.to_string()))?;
            let mut m = nwc_fast::encode(mode, shape, Weights::Fp8(&q)).map_err(|e| err(e.to_string()))?.matrix;
            debug_assert_eq!(fp8_to_bf16_scaled(&q, Some(&scale), shape).len(), words.len());
            m.scale = Some(scale);
            Ok(m)
        }
    }
}

/// Spec 17.5: the module entry of a compressed tensor, from its name: `<path>.weight`; a last
/// path component containing "embed" makes an embedding, the rest linears (with `<path>.bias` if the model has it).
fn module_entry(name: &str, id: u64, all: &[(&str, &Tensor)]) -> ModuleEntry {
    let path = name.strip_suffix(".weight").unwrap_or(name).to_string();
    let embedding = path.rsplit('.').next().is_some_and(|last| last.contains("embed"));
    let bias_name = format!("{path}.bias");
    let has_bias = all.iter().any(|(_, t)| t.name == bias_name);
    let mut e = ModuleEntry {
        path,
        kind: if embedding { "embedding" } else { "linear" }.into(),
        weight: id,
        bias: None,
        padding_idx: None,
        names: None,
        sizes: None,
        other: Map::new(),
    };
    if embedding {
        e.padding_idx = Some(Value::Null);
    } else {
        e.bias = Some(has_bias.then_some(bias_name));
    }
    e
}

/// Spec 17.1: one `model.safetensors`, or shards `model-0000i-of-0000n.safetensors` of about
/// `shard_bytes` each plus an index. Returns the bytes written.
pub(crate) fn write_shards(dir: &Path, tensors: &[Tensor], shard_bytes: Option<u64>) -> Result<u64> {
    let meta = checkpoint_metadata();
    let mut groups: Vec<Vec<&Tensor>> = vec![Vec::new()];
    let mut size = 0u64;
    for t in tensors {
        let limit = shard_bytes.unwrap_or(u64::MAX);
        if size > 0 && size + t.data.len() as u64 > limit {
            groups.push(Vec::new());
            size = 0;
        }
        size += t.data.len() as u64;
        groups.last_mut().expect("non-empty").push(t);
    }
    let mut total = 0;
    if groups.len() == 1 {
        let path = dir.join("model.safetensors");
        write_safetensors(&path, &groups[0], Some(&meta))?;
        return Ok(std::fs::metadata(&path).map_err(ContainerError::io(&path))?.len());
    }
    let n = groups.len();
    let mut weight_map = Map::new();
    for (i, g) in groups.iter().enumerate() {
        let name = format!("model-{:05}-of-{:05}.safetensors", i + 1, n);
        let path = dir.join(&name);
        write_safetensors(&path, g, Some(&meta))?;
        total += std::fs::metadata(&path).map_err(ContainerError::io(&path))?.len();
        for t in g {
            weight_map.insert(t.name.clone(), Value::String(name.clone()));
        }
    }
    let data_bytes: u64 = tensors.iter().map(|t| t.data.len() as u64).sum();
    let index = json!({ "metadata": { "total_size": data_bytes }, "weight_map": weight_map });
    let path = dir.join(INDEX_FILE);
    std::fs::write(&path, serde_json::to_string_pretty(&index).expect("json")).map_err(ContainerError::write(&path))?;
    Ok(total)
}
