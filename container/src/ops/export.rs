//! Spec 17.8: checkpoint -> model files, and `verify`.

use super::convert::{decoded_bf16, expected_output, from_bf16_words};
use super::Progress;
use crate::checkpoint::Checkpoint;
use crate::config::CONFIG_FILE;
use crate::error::{ContainerError, Result};
use crate::model::{read_model, sha256_hex, write_safetensors, StagedDir, Tensor, INDEX_FILE};
use nwc_reference::DecodedMatrix;
use rayon::prelude::*;
use safetensors::Dtype;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// The output files of a checkpoint: (file name, metadata, tensors in order).
type OutputFiles = Vec<(String, Option<BTreeMap<String, String>>, Vec<Tensor>)>;

/// Validates (spec 13, fast decoder) and decodes every matrix, in parallel.
fn decode_all(ck: &Checkpoint, progress: Progress) -> Result<HashMap<u64, DecodedMatrix>> {
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

fn parse_dtype(s: &str) -> Option<Dtype> {
    serde_json::from_value(serde_json::Value::String(s.to_string())).ok()
}

/// Spec 17.8: every tensor of the model the checkpoint stands for, grouped into files.
fn export(ck: &Checkpoint, decoded: &HashMap<u64, DecodedMatrix>) -> Result<OutputFiles> {
    let cfg = ck.dir.join(CONFIG_FILE);
    let bad = |tensor: &str, msg: String| ContainerError::Tensor { file: cfg.clone(), tensor: tensor.to_string(), msg };
    let matrix = |id: u64, name: &str| decoded.get(&id).ok_or_else(|| bad(name, format!("matrix id {id} has no weights entry")));
    let Some(extras) = &ck.config.nwc_rs else {
        return export_peer(ck, decoded);
    };
    let mut files: OutputFiles = extras.files.iter().map(|f| (f.name.clone(), f.metadata.clone(), Vec::new())).collect();
    for r in &extras.tensors {
        let dtype = parse_dtype(&r.dtype).ok_or_else(|| bad(&r.name, format!("unknown dtype {}", r.dtype)))?;
        let shape: Vec<usize> = r.shape.iter().map(|&d| d as usize).collect();
        let data = match r.matrix {
            None => {
                let (file, t) = ck.tensors.get(&r.name).ok_or_else(|| bad(&r.name, "missing from the checkpoint".into()))?;
                if t.dtype != dtype || t.shape != shape {
                    return Err(ContainerError::Tensor {
                        file: file.clone(),
                        tensor: r.name.clone(),
                        msg: "dtype or shape differs from nwc_config.json".into(),
                    });
                }
                t.data.clone()
            }
            Some(id) => {
                if !matches!(dtype, Dtype::BF16 | Dtype::F32 | Dtype::F16) {
                    return Err(bad(&r.name, format!("a compressed tensor cannot have dtype {}", r.dtype)));
                }
                let d = matrix(id, &r.name)?;
                if shape != [d.shape.rows as usize, d.shape.cols as usize] {
                    return Err(bad(&r.name, format!("shape {shape:?} but matrix {id} is {}", d.shape)));
                }
                from_bf16_words(&decoded_bf16(d), dtype)
            }
        };
        let file = files.iter_mut().find(|f| f.0 == r.file).ok_or_else(|| bad(&r.name, format!("file `{}` is not listed", r.file)))?;
        file.2.push(Tensor { name: r.name.clone(), dtype, shape, data });
    }
    Ok(files)
}

/// Spec 17.8 for checkpoints without our records (the 0.10.1 library's): matrices become BF16
/// tensors `<path>.weight` from the module list; fused groups are split by rows (`sizes`) into
/// `<path>.<name>.weight`, their bias `nwc/fused/<path>.bias` likewise; with a tied embedding
/// (`tie_word_embeddings` in config.json) only the embedding is written; every other tensor is
/// copied. One `model.safetensors`.
fn export_peer(ck: &Checkpoint, decoded: &HashMap<u64, DecodedMatrix>) -> Result<OutputFiles> {
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
            out.push(ck.tensors[name].1.clone());
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
                let bias = ck.tensors.get(&format!("nwc/fused/{}.bias", m.path)).map(|(_, t)| t);
                let mut row = 0usize;
                for (part, &size) in names.iter().zip(sizes) {
                    let size = size as usize;
                    out.push(bf16(&words[row * cols..(row + size) * cols], format!("{}.{part}.weight", m.path), size, cols));
                    if let Some(b) = bias {
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

/// Spec 17.8: writes the model a checkpoint stands for into a new folder `output`.
pub fn decompress(input: &Path, output: &Path, progress: Progress) -> Result<()> {
    let ck = Checkpoint::open(input)?;
    let staged = StagedDir::new(output, &[input])?;
    let decoded = decode_all(&ck, progress)?;
    let files = export(&ck, &decoded)?;
    // Never hand out silently altered data: every tensor must match its recorded digest.
    if let Some(x) = &ck.config.nwc_rs {
        let by_name: HashMap<&str, &Tensor> = files.iter().flat_map(|f| f.2.iter().map(|t| (t.name.as_str(), t))).collect();
        for r in &x.tensors {
            if sha256_hex(&by_name[r.name.as_str()].data) != r.decoded_sha256 {
                return Err(ContainerError::Tensor {
                    file: ck.dir.join(CONFIG_FILE),
                    tensor: r.name.clone(),
                    msg: "decompressed bytes do not match the recorded SHA-256".into(),
                });
            }
        }
    }
    for (name, meta, tensors) in &files {
        let refs: Vec<&Tensor> = tensors.iter().collect();
        write_safetensors(&staged.tmp.join(name), &refs, meta.as_ref())?;
    }
    if let Some(index) = ck.config.nwc_rs.as_ref().and_then(|x| x.index.as_ref()) {
        let path = staged.tmp.join(INDEX_FILE);
        std::fs::write(&path, serde_json::to_string_pretty(index).expect("json")).map_err(ContainerError::write(&path))?;
    }
    for f in &ck.other_files {
        let from = ck.dir.join(f);
        std::fs::copy(&from, staged.tmp.join(f)).map_err(ContainerError::io(&from))?;
    }
    staged.commit()
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct VerifyReport {
    pub matrices: usize,
    pub tensors: usize,
    /// Tensors compared bit for bit against the original model.
    pub compared: usize,
    /// One line per problem; empty means verified.
    pub mismatches: Vec<String>,
}

/// Validates every matrix (spec 13) and checks every tensor against its recorded SHA-256; with
/// `against`, also compares the decompressed model with the original, tensor for tensor
/// (lossless tensors bit for bit with the original, lossy ones with what spec 17.3 says they
/// must decode to). Invalid input is an `Err`; digest or content differences are `mismatches`.
pub fn verify(input: &Path, against: Option<&Path>, progress: Progress) -> Result<VerifyReport> {
    let ck = Checkpoint::open(input)?;
    let decoded = decode_all(&ck, progress)?;
    let files = export(&ck, &decoded)?;
    let mut report = VerifyReport { matrices: decoded.len(), ..Default::default() };
    let out: HashMap<&str, &Tensor> = files.iter().flat_map(|f| f.2.iter().map(|t| (t.name.as_str(), t))).collect();
    report.tensors = out.len();
    let records = ck.config.nwc_rs.as_ref().map(|x| &x.tensors);
    if let Some(records) = records {
        for r in records {
            if sha256_hex(&out[r.name.as_str()].data) != r.decoded_sha256 {
                report.mismatches.push(format!("{}: decoded bytes do not match the recorded SHA-256", r.name));
            }
        }
    }
    if let Some(orig) = against {
        let model = read_model(orig)?;
        let lossy: HashMap<&str, &Vec<String>> =
            records.map(|rs| rs.iter().map(|r| (r.name.as_str(), &r.lossy)).collect()).unwrap_or_default();
        let mut seen = 0;
        for (_, t) in model.tensors() {
            let Some(got) = out.get(t.name.as_str()) else {
                report.mismatches.push(format!("{}: in the original, missing from the checkpoint", t.name));
                continue;
            };
            seen += 1;
            if got.dtype != t.dtype || got.shape != t.shape {
                report
                    .mismatches
                    .push(format!("{}: {:?} {:?} in the original, {:?} {:?} decompressed", t.name, t.dtype, t.shape, got.dtype, got.shape));
                continue;
            }
            let steps = lossy.get(t.name.as_str()).map(|v| v.as_slice()).unwrap_or(&[]);
            let expected = expected_output(t, steps).map_err(|msg| ContainerError::Tensor {
                file: orig.to_path_buf(),
                tensor: t.name.clone(),
                msg,
            })?;
            if got.data != expected {
                let at = got.data.iter().zip(&expected).position(|(a, b)| a != b).unwrap_or(0);
                report.mismatches.push(format!("{}: differs from the original at byte {at}", t.name));
            }
            report.compared += 1;
        }
        if seen != out.len() {
            report.mismatches.push(format!("the checkpoint has {} tensors the original does not", out.len() - seen));
        }
    }
    Ok(report)
}
