//! Spec 17.8 and 17.12: checkpoint -> the original model files, byte for byte.
//!
//! With our records every output file's layout is known before any tensor is decoded: the header
//! is the original one (17.12) and gives each tensor's offset. The tensors are then produced in
//! parallel (rayon, one tensor per task, so memory holds at most one tensor per thread) and
//! written straight to their offsets, each checked against its recorded SHA-256 first.

use super::convert::{decoded_bf16, from_bf16_words};
use super::peer::{decode_all, export_peer};
use super::Progress;
use crate::checkpoint::Checkpoint;
use crate::config::{Extras, FileRecord, TensorRecord, WeightEntry, CONFIG_FILE};
use crate::error::{ContainerError, Result};
use crate::model::{write_safetensors, StagedDir, Tensor, INDEX_FILE};
use crate::sfile::{header_json, hex, parse_dtype, words_as_bytes};
use nwc_reference::{ElemType, Elements};
use rayon::prelude::*;
use safetensors::Dtype;
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The bytes of one produced tensor: borrowed from the checkpoint (copied tensors), decoded BF16
/// words, or converted bytes.
pub(super) enum Produced<'c> {
    Stored(&'c [u8]),
    Words(Vec<u16>),
    Bytes(Vec<u8>),
}

impl Produced<'_> {
    pub(super) fn bytes(&self) -> std::borrow::Cow<'_, [u8]> {
        match self {
            Produced::Stored(b) => std::borrow::Cow::Borrowed(b),
            Produced::Words(w) => words_as_bytes(w),
            Produced::Bytes(b) => std::borrow::Cow::Borrowed(b),
        }
    }
}

fn cfg_error(ck: &Checkpoint, tensor: &str, msg: String) -> ContainerError {
    ContainerError::Tensor { file: ck.dir.join(CONFIG_FILE), tensor: tensor.to_string(), msg }
}

/// Spec 17.8: the bytes of the tensor record `r` stands for (a copied tensor as stored, a
/// compressed one decoded and converted to the record's dtype).
pub(super) fn produce<'c>(ck: &'c Checkpoint, r: &TensorRecord) -> Result<Produced<'c>> {
    let dtype = parse_dtype(&r.dtype).ok_or_else(|| cfg_error(ck, &r.name, format!("unknown dtype {}", r.dtype)))?;
    let shape: Vec<usize> = r.shape.iter().map(|&d| d as usize).collect();
    let Some(id) = r.matrix else {
        let (f, t) = ck.get(&r.name).ok_or_else(|| cfg_error(ck, &r.name, "missing from the checkpoint".into()))?;
        if t.dtype != dtype || t.shape != shape {
            return Err(ContainerError::Tensor {
                file: f.path.clone(),
                tensor: r.name.clone(),
                msg: "dtype or shape differs from nwc_config.json".into(),
            });
        }
        f.populate(t);
        return Ok(Produced::Stored(f.bytes(t)));
    };
    let entry = matrix_entry(ck, r, dtype, &shape, id)?;
    let d = ck.decoded_matrix(entry)?;
    ck.release_matrix(id);
    let words = match d.elements {
        Elements::Bf16(w) if d.scale.is_none() => w,
        _ => decoded_bf16(&d),
    };
    Ok(match dtype {
        Dtype::BF16 => Produced::Words(words),
        _ => Produced::Bytes(from_bf16_words(&words, dtype)),
    })
}

/// The weights entry of compressed record `r` (matrix `id`), checked against the record.
fn matrix_entry<'c>(ck: &'c Checkpoint, r: &TensorRecord, dtype: Dtype, shape: &[usize], id: u64) -> Result<&'c WeightEntry> {
    if !matches!(dtype, Dtype::BF16 | Dtype::F32 | Dtype::F16) {
        return Err(cfg_error(ck, &r.name, format!("a compressed tensor cannot have dtype {}", r.dtype)));
    }
    let entry =
        ck.entries()?.iter().find(|e| e.id == id).ok_or_else(|| cfg_error(ck, &r.name, format!("matrix id {id} has no weights entry")))?;
    if shape != [entry.out as usize, entry.inp as usize] {
        return Err(cfg_error(ck, &r.name, format!("shape {shape:?} but matrix {id} is {} x {}", entry.out, entry.inp)));
    }
    Ok(entry)
}

/// Spec 17.8 for the common case, a BF16 tensor stored as a BF16 matrix: decoded a run of rows at
/// a time into one cache-sized buffer, each run hashed and written while it is in the cache (no
/// tensor-sized buffer to clear, fill and read back through memory). Returns the SHA-256 of the
/// tensor, or `None` for every other case (left to [`produce`]).
fn write_decoded_runs(ck: &Checkpoint, r: &TensorRecord, file: &File, path: &Path, at: u64, progress: Progress) -> Result<Option<String>> {
    use sha2::{Digest, Sha256};
    let Some(id) = r.matrix.filter(|_| r.dtype == "BF16") else { return Ok(None) };
    let shape: Vec<usize> = r.shape.iter().map(|&d| d as usize).collect();
    let entry = matrix_entry(ck, r, Dtype::BF16, &shape, id)?;
    let m = ck.matrix(entry)?;
    if m.mode.elem != ElemType::Bf16 {
        return Ok(None);
    }
    ck.release_matrix(id);
    let (mut h, mut pos) = (Sha256::new(), at);
    ck.decode_runs(entry, &m, WRITE_CHUNK, |words| {
        let bytes = words_as_bytes(words);
        h.update(&bytes);
        file.write_all_at(&bytes, pos).map_err(ContainerError::write(path))?;
        pos += bytes.len() as u64;
        progress(bytes.len() as u64);
        Ok(())
    })?;
    Ok(Some(hex(&h.finalize())))
}

/// Bytes hashed and written at a time; see [`write_hashed`].
const WRITE_CHUNK: usize = 256 << 10;

/// One output file's layout: its header and each tensor's (start, end) in the data section.
pub(super) struct FilePlan {
    pub header: String,
    pub offsets: HashMap<String, (usize, usize)>,
    pub data_len: usize,
}

/// Spec 17.12: the header of output file `f`: the recorded original header, checked against the
/// records (the same tensors with the same dtypes and shapes, contiguous offsets); without one
/// (checkpoints written before 17.12), a compact header in record order.
pub(super) fn plan_file(ck: &Checkpoint, f: &FileRecord, records: &[&TensorRecord]) -> Result<FilePlan> {
    let bad = |msg: String| ContainerError::Config { file: ck.dir.join(CONFIG_FILE), msg: format!("file `{}`: {msg}", f.name) };
    let header = match &f.header {
        Some(h) => h.clone(),
        None => {
            let mut at = 0;
            let mut entries = Vec::new();
            let shapes: Vec<Vec<usize>> = records.iter().map(|r| r.shape.iter().map(|&d| d as usize).collect()).collect();
            for (r, shape) in records.iter().zip(&shapes) {
                let dtype = parse_dtype(&r.dtype).ok_or_else(|| bad(format!("unknown dtype {}", r.dtype)))?;
                let len = shape.iter().product::<usize>() * dtype.bitsize() / 8;
                entries.push((r.name.as_str(), dtype, shape.as_slice(), at, at + len));
                at += len;
            }
            header_json(f.metadata.as_ref(), &entries)
        }
    };
    let json: serde_json::Value = serde_json::from_str(&header).map_err(|e| bad(format!("recorded header is not JSON: {e}")))?;
    let obj = json.as_object().ok_or_else(|| bad("recorded header is not an object".into()))?;
    let mut offsets = HashMap::new();
    for (name, v) in obj.iter().filter(|(k, _)| *k != "__metadata__") {
        let r = records.iter().find(|r| &r.name == name).ok_or_else(|| bad(format!("header names `{name}`, which has no record")))?;
        let off = v["data_offsets"].as_array().and_then(|a| Some((a.first()?.as_u64()? as usize, a.get(1)?.as_u64()? as usize)));
        let same = v["dtype"].as_str() == Some(r.dtype.as_str())
            && v["shape"].as_array().is_some_and(|s| s.iter().map(|d| d.as_u64()).eq(r.shape.iter().map(|&d| Some(d))));
        match off {
            Some((a, b)) if same && a <= b => offsets.insert(name.clone(), (a, b)),
            _ => return Err(bad(format!("header entry `{name}` differs from its record"))),
        };
    }
    if offsets.len() != records.len() {
        return Err(bad("header and records list different tensors".into()));
    }
    let mut spans: Vec<(usize, usize)> = offsets.values().copied().collect();
    spans.sort();
    let mut end = 0;
    for (a, b) in spans {
        if a != end {
            return Err(bad("header offsets are not contiguous".into()));
        }
        end = b;
    }
    Ok(FilePlan { header, offsets, data_len: end })
}

/// The records of each output file, in record order.
pub(super) fn records_by_file<'x>(ck: &Checkpoint, x: &'x Extras) -> Result<Vec<(&'x FileRecord, Vec<&'x TensorRecord>)>> {
    let mut out: Vec<_> = x.files.iter().map(|f| (f, Vec::new())).collect();
    for r in &x.tensors {
        let slot = out
            .iter_mut()
            .find(|(f, _)| f.name == r.file)
            .ok_or_else(|| cfg_error(ck, &r.name, format!("file `{}` is not listed", r.file)))?;
        slot.1.push(r);
    }
    Ok(out)
}

/// Writes `bytes` at `at` and returns their SHA-256. Each small chunk is hashed right before it
/// is written, so the write copies it from the cache rather than from memory: on the 2-core VM a
/// write from an 8 MB buffer cost 7x the system time of one from a cache-sized buffer (issue 15).
fn write_hashed(file: &File, path: &Path, bytes: &[u8], at: u64, progress: Progress) -> Result<String> {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    let mut pos = at;
    for chunk in bytes.chunks(WRITE_CHUNK) {
        h.update(chunk);
        file.write_all_at(chunk, pos).map_err(ContainerError::write(path))?;
        pos += chunk.len() as u64;
        progress(chunk.len() as u64);
    }
    Ok(hex(&h.finalize()))
}

fn decompress_records(ck: &Checkpoint, x: &Extras, dir: &Path, progress: Progress) -> Result<()> {
    let mut outputs: Vec<(File, PathBuf, u64, FilePlan)> = Vec::new();
    let mut jobs: Vec<(usize, &TensorRecord)> = Vec::new();
    for (f, records) in records_by_file(ck, x)? {
        // Its name is a plain file name: `NwcConfig::check` at open (spec 17.6).
        let plan = plan_file(ck, f, &records)?;
        let path = dir.join(&f.name);
        let file = File::create(&path).map_err(ContainerError::write(&path))?;
        let mut head = (plan.header.len() as u64).to_le_bytes().to_vec();
        head.extend_from_slice(plan.header.as_bytes());
        file.write_all_at(&head, 0).map_err(ContainerError::write(&path))?;
        file.set_len((head.len() + plan.data_len) as u64).map_err(ContainerError::write(&path))?;
        jobs.extend(records.into_iter().map(|r| (outputs.len(), r)));
        outputs.push((file, path, head.len() as u64, plan));
    }
    // Largest first: the long tasks start early and the small ones fill the gaps.
    jobs.sort_by_key(|(_, r)| std::cmp::Reverse(r.shape.iter().product::<u64>()));
    jobs.par_iter().try_for_each(|&(o, r)| {
        let (file, path, base, plan) = &outputs[o];
        let at = base + plan.offsets[&r.name].0 as u64;
        let digest = match write_decoded_runs(ck, r, file, path, at, progress)? {
            Some(digest) => digest,
            None => {
                let produced = produce(ck, r)?;
                let digest = write_hashed(file, path, &produced.bytes(), at, progress)?;
                if let (Produced::Stored(_), Some((f, t))) = (&produced, ck.get(&r.name)) {
                    f.release(t);
                }
                digest
            }
        };
        // Never hand out silently altered data (spec 17.6): a mismatch fails the whole output,
        // which is still under its temporary name.
        if digest != r.decoded_sha256 {
            return Err(cfg_error(ck, &r.name, "decompressed bytes do not match the recorded SHA-256".into()));
        }
        Ok(())
    })?;
    if let Some(text) = &x.index_text {
        let path = dir.join(INDEX_FILE);
        std::fs::write(&path, text).map_err(ContainerError::write(&path))?;
    } else if let Some(index) = &x.index {
        let path = dir.join(INDEX_FILE);
        std::fs::write(&path, serde_json::to_string_pretty(index).expect("json")).map_err(ContainerError::write(&path))?;
    }
    Ok(())
}

/// Spec 17.8: writes the model a checkpoint stands for into a new folder `output`.
pub fn decompress(input: &Path, output: &Path, progress: Progress) -> Result<()> {
    let ck = Checkpoint::open(input)?;
    let staged = StagedDir::new(output, &[input])?;
    match &ck.config.nwc_rs {
        Some(x) => decompress_records(&ck, x, &staged.tmp, progress)?,
        None => {
            let decoded = decode_all(&ck, progress)?;
            for (name, meta, tensors) in &export_peer(&ck, &decoded)? {
                let refs: Vec<&Tensor> = tensors.iter().collect();
                write_safetensors(&staged.tmp.join(name), &refs, meta.as_ref())?;
            }
        }
    }
    for f in &ck.other_files {
        let from = ck.dir.join(f);
        std::fs::copy(&from, staged.tmp.join(f)).map_err(ContainerError::io(&from))?;
    }
    staged.commit()
}
