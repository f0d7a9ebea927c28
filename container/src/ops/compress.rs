//! Spec 17.3 - 17.7: original model -> NWC checkpoint.

use super::convert::{from_bf16_words, to_bf16_words};
use super::writer::{entry_bound, Piece, ShardWriter};
use super::Progress;
use crate::checkpoint::{accounted_bytes, checkpoint_metadata, matrix_header_bound, matrix_pieces};
use crate::config::{Extras, FileRecord, ModuleEntry, NwcConfig, TensorRecord, WeightEntry, CONFIG_FILE};
use crate::error::{ContainerError, Result};
use crate::model::{read_model, sha256_hex, Model, StagedDir};
use crate::policy::{Decision, Policy};
use crate::sfile::{bytes_as_words, hex, sha256_chunked, MappedFile, TensorInfo};
use nwc_reference::{quantize_fp8, ElemType, EncodedMatrix, Layout, Mode, Shape, Weights};
use rayon::prelude::*;
use safetensors::Dtype;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::borrow::Cow;
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

/// One tensor of the original model and what happens to it.
struct Item<'m> {
    file: &'m MappedFile,
    t: &'m TensorInfo,
    decision: Decision,
    /// Upper bound of the checkpoint header entries of this tensor and all after it.
    bound: usize,
    /// Position in the original model (records keep this order, spec 17.6).
    index: usize,
}

/// A processed tensor: its digest and, if compressed, its matrix and the digest decompression
/// must reproduce when lossy.
struct Done {
    digest: String,
    encoded: Option<EncodedMatrix>,
    lossy_sha256: Option<String>,
}

/// Spec 17.3 - 17.7 and 17.12, streaming: tensors are read from the mapped files in original
/// order, hashed and encoded (in parallel across the tensors of a batch and inside each matrix),
/// and written as soon as they are done while the next batch is encoded. A batch holds at most
/// about one largest tensor of input, so memory stays bounded by a few tensors whatever the model
/// size.
pub fn compress(input: &Path, output: &Path, opts: &CompressOptions, progress: Progress) -> Result<CompressSummary> {
    let model = read_model(input)?;
    if let Some((_, t)) = model.tensors().find(|(_, t)| t.name.starts_with("nwc/")) {
        return Err(ContainerError::Unsupported {
            file: input.to_path_buf(),
            msg: format!("tensor `{}` uses the reserved prefix nwc/", t.name),
        });
    }
    let staged = StagedDir::new(output, &[input])?;
    let mut items: Vec<Item> = model
        .tensors()
        .enumerate()
        .map(|(index, (file, t))| Item { file, t, decision: opts.policy.decide(&t.name, t.dtype, &t.shape), bound: 0, index })
        .collect();
    // Copied tensors of 8-byte elements go first, while the offset is still a multiple of 8
    // (matrix fields keep only 4-byte alignment; see `State::commit`).
    items.sort_by_key(|it| !(it.decision == Decision::Copy && it.t.dtype.bitsize() == 64));
    // Copied tensors whose length is not a multiple of 8 are written last (see `State::commit`);
    // every file's header bound includes them wherever they land.
    let mut bound: usize = items.iter().filter(|it| deferred(it)).map(|it| entry_bound(&it.t.name, it.t.shape.len())).sum();
    for it in items.iter_mut().rev() {
        bound += if it.decision == Decision::Copy { entry_bound(&it.t.name, it.t.shape.len()) } else { matrix_header_bound() };
        it.bound = bound;
    }
    let largest = items.iter().map(|it| it.t.len()).max().unwrap_or(0).max(1 << 20);
    let mut batches: Vec<&[Item]> = Vec::new();
    let mut rest = &items[..];
    while !rest.is_empty() {
        let (mut n, mut size) = (0, 0);
        while n < rest.len() && (n == 0 || size + rest[n].t.len() <= largest) {
            size += rest[n].t.len();
            n += 1;
        }
        batches.push(&rest[..n]);
        rest = &rest[n..];
    }

    let mode = Mode { elem: opts.elem, layout: opts.layout };
    let mut writer = ShardWriter::new(&staged.tmp, opts.shard_bytes, checkpoint_metadata());
    let mut st = State::default();
    let mut pending: (Vec<Piece>, &[Item]) = (Vec::new(), &[]);
    let mut tail: Vec<Piece> = Vec::new();
    for batch in batches {
        let (written, done) = rayon::join(
            || write_pieces(&mut writer, &pending),
            || batch.par_iter().map(|it| process(it, mode, progress)).collect::<Result<Vec<Done>>>(),
        );
        written?;
        let done = done?;
        pending = (st.commit(batch, done, &mut tail), batch);
    }
    write_pieces(&mut writer, &pending)?;
    // Largest elements first, so that every tensor of the tail starts at a multiple of its
    // element size too.
    tail.sort_by_key(|p| std::cmp::Reverse(p.dtype.bitsize()));
    write_pieces(&mut writer, &(tail, &[]))?;
    let bytes_out = writer.finish()?;

    let config = st.config(&model, opts);
    for f in &model.other_files {
        let (from, to) = (model.root.join(f), staged.tmp.join(f));
        std::fs::copy(&from, &to).map_err(ContainerError::io(&from))?;
    }
    let cfg_path = staged.tmp.join(CONFIG_FILE);
    std::fs::write(&cfg_path, config.to_json()).map_err(ContainerError::write(&cfg_path))?;
    staged.commit()?;
    Ok(CompressSummary {
        matrices: config.weights.len(),
        tensors_compressed: st.records.iter().filter(|r| r.1.matrix.is_some()).count(),
        tensors_copied: st.records.iter().filter(|r| r.1.matrix.is_none()).count(),
        bytes_in: items.iter().map(|it| it.t.len() as u64).sum(),
        bytes_out,
    })
}

/// Writes committed pieces, then hands the input pages of their tensors back to the kernel.
fn write_pieces(writer: &mut ShardWriter, (pieces, items): &(Vec<Piece>, &[Item])) -> Result<()> {
    for p in pieces {
        writer.push(p)?;
    }
    for it in items.iter() {
        it.file.release(it.t);
    }
    Ok(())
}

/// A copied tensor that would leave the following offsets unaligned.
fn deferred(it: &Item) -> bool {
    it.decision == Decision::Copy && it.t.len() % 8 != 0
}

fn process(it: &Item, mode: Mode, progress: Progress) -> Result<Done> {
    it.file.populate(it.t);
    let bytes = it.file.bytes(it.t);
    if it.decision == Decision::Copy {
        return Ok(Done { digest: sha256_chunked(bytes, progress), encoded: None, lossy_sha256: None });
    }
    // Spec 17.6: the tensor's SHA-256, computed run by run of rows while the encoder codes the
    // next run, so each run is hashed while it is still in the cache (the input is read through
    // memory once for coding, not a second time for hashing).
    let row_bytes = bytes.len() / it.t.shape.first().copied().unwrap_or(1).max(1);
    let run_rows = (RUN_BYTES / row_bytes.max(1)).max(1) as u64;
    let mut h = Sha256::new();
    let m = encode_tensor(it.t, bytes, mode, run_rows, |r0, r1| {
        let run = &bytes[r0 as usize * row_bytes..r1 as usize * row_bytes];
        h.update(run);
        progress(run.len() as u64);
    })?;
    let digest = hex(&h.finalize());
    let lossy_sha256 = if it.decision == Decision::Bf16 && mode.elem == ElemType::Bf16 {
        None
    } else {
        // Same arithmetic as decoding the stored matrix (spec 17.8).
        let words = match mode.elem {
            ElemType::Fp8E4m3 => {
                let q = nwc_fast::decode(&m).map_err(|e| ContainerError::Encode { tensor: it.t.name.clone(), msg: e.to_string() })?;
                super::convert::decoded_bf16(&q)
            }
            ElemType::Bf16 => to_bf16_words(it.t.dtype, bytes).expect("compressed tensors convert"),
        };
        Some(sha256_hex(&from_bf16_words(&words, it.t.dtype)))
    };
    Ok(Done { digest, encoded: Some(m), lossy_sha256 })
}

/// Input bytes hashed per run of rows (see `process`): cache-sized.
const RUN_BYTES: usize = 512 << 10;

/// What the commits have gathered: matrices, records, modules.
#[derive(Default)]
struct State {
    by_key: HashMap<(String, Vec<usize>, String), u64>,
    weights: Vec<WeightEntry>,
    bytes_bf16: u64,
    /// (original position, record), in processing order.
    records: Vec<(usize, TensorRecord)>,
    /// (tensor name, matrix id) of every compressed tensor, for the modules (spec 17.5).
    uses: Vec<(String, u64)>,
    names: std::collections::HashSet<String>,
}

impl State {
    /// Spec 17.5: tensors with identical dtype, shape and bytes (a tied embedding and lm_head)
    /// share one matrix id; ids follow the original tensor order. Returns the pieces to store.
    ///
    /// Stored tensors keep the offsets of 4- and 8-byte values aligned, as the safetensors library's
    /// own layout does (readers may map I32/F32 tensors without a copy): every matrix field has a
    /// length that keeps the next field aligned (spec 17.7 lengths are multiples of 4), and a
    /// copied tensor whose length is not a multiple of 8 goes to `tail`, written after all others.
    fn commit<'m>(&mut self, batch: &'m [Item], done: Vec<Done>, tail: &mut Vec<Piece<'m>>) -> Vec<Piece<'m>> {
        let mut pieces = Vec::new();
        for (it, d) in batch.iter().zip(done) {
            let t = it.t;
            self.names.insert(t.name.clone());
            let mut lossy = Vec::new();
            let matrix = d.encoded.map(|m| {
                if it.decision == Decision::CastBf16 {
                    lossy.push("cast-bf16".to_string());
                }
                if m.mode.elem == ElemType::Fp8E4m3 {
                    lossy.push("fp8".to_string());
                }
                let key = (dtype_name(t.dtype), t.shape.clone(), d.digest.clone());
                let next = self.weights.len() as u64;
                let id = *self.by_key.entry(key).or_insert(next);
                if id == next {
                    self.weights.push(WeightEntry {
                        id,
                        out: m.shape.rows,
                        inp: m.shape.cols,
                        block: 4096,
                        bytes: Some(accounted_bytes(&m)),
                        elem: m.mode.elem.name().to_string(),
                        layout: u64::from(m.mode.layout.number()),
                        other: Map::new(),
                    });
                    self.bytes_bf16 += 2 * m.shape.rows * m.shape.cols;
                    pieces.extend(matrix_pieces(id, m, it.bound));
                }
                self.uses.push((t.name.clone(), id));
                id
            });
            if matrix.is_none() {
                let data = Cow::Borrowed(it.file.bytes(t));
                let to = if deferred(it) { &mut *tail } else { &mut pieces };
                to.push(Piece { name: t.name.clone(), dtype: t.dtype, shape: t.shape.clone(), data, zeros: 0, bound: it.bound });
            }
            self.records.push((
                it.index,
                TensorRecord {
                    name: t.name.clone(),
                    dtype: dtype_name(t.dtype),
                    shape: t.shape.iter().map(|&d| d as u64).collect(),
                    file: it.file.name.clone(),
                    decoded_sha256: d.lossy_sha256.unwrap_or_else(|| d.digest.clone()),
                    sha256: d.digest,
                    matrix,
                    lossy,
                },
            ));
        }
        pieces
    }

    /// Spec 17.4 - 17.6, 17.12: the checkpoint's nwc_config.json.
    fn config(&self, model: &Model, opts: &CompressOptions) -> NwcConfig {
        let modules = self.uses.iter().map(|(name, id)| module_entry(name, *id, &self.names)).collect();
        NwcConfig {
            nwc_checkpoint: Some(1),
            library_version: u64::from(nwc_reference::FORMAT_VERSION),
            base_model: opts.base_model.clone(),
            bytes_nwc: Some(self.weights.iter().filter_map(|w| w.bytes).sum()),
            bytes_bf16: Some(self.bytes_bf16),
            weights: self.weights.clone(),
            modules,
            nwc_rs: Some(Extras {
                format: 1,
                tensors: {
                    let mut r = self.records.clone();
                    r.sort_by_key(|(i, _)| *i);
                    r.into_iter().map(|(_, r)| r).collect()
                },
                files: model
                    .files
                    .iter()
                    .map(|f| FileRecord { name: f.name.clone(), metadata: f.metadata.clone(), header: Some(f.header.clone()) })
                    .collect(),
                index: model.index.clone(),
                index_text: model.index_text.clone(),
            }),
            other: Map::new(),
        }
    }
}

pub use crate::sfile::dtype_name;

/// Encodes one tensor in `mode` with the fast encoder (spec 17.3: cast to BF16 first where the
/// policy says so; FP8 quantizes with per-row scales, spec 11). BF16 input is read in place.
/// `observe(r0, r1)` is called for every run of about `run_rows` rows, in order, as
/// `nwc_fast::encode_observed` does.
fn encode_tensor(t: &TensorInfo, bytes: &[u8], mode: Mode, run_rows: u64, observe: impl FnMut(u64, u64) + Send) -> Result<EncodedMatrix> {
    let err = |msg: String| ContainerError::Encode { tensor: t.name.clone(), msg };
    let words = match t.dtype {
        Dtype::BF16 => bytes_as_words(bytes),
        d => Cow::Owned(to_bf16_words(d, bytes).ok_or_else(|| err(format!("dtype {d:?}")))?),
    };
    let shape = Shape::new(t.shape[0] as u64, t.shape[1] as u64);
    match mode.elem {
        ElemType::Bf16 => {
            Ok(nwc_fast::encode_observed(mode, shape, Weights::Bf16(&words), run_rows, observe).map_err(|e| err(e.to_string()))?.matrix)
        }
        ElemType::Fp8E4m3 => {
            let (q, scale) = quantize_fp8(&words, shape).map_err(|e| err(e.to_string()))?;
            let mut m = nwc_fast::encode_observed(mode, shape, Weights::Fp8(&q), run_rows, observe).map_err(|e| err(e.to_string()))?.matrix;
            m.scale = Some(scale);
            Ok(m)
        }
    }
}

/// Spec 17.5: the module entry of a compressed tensor, from its name: `<path>.weight`; a last
/// path component containing "embed" makes an embedding, the rest linears (with `<path>.bias` if the model has it).
fn module_entry(name: &str, id: u64, names: &std::collections::HashSet<String>) -> ModuleEntry {
    let path = name.strip_suffix(".weight").unwrap_or(name).to_string();
    let embedding = path.rsplit('.').next().is_some_and(|last| last.contains("embed"));
    let bias_name = format!("{path}.bias");
    let has_bias = names.contains(&bias_name);
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
