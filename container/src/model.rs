//! Original models (spec 17.2): one `.safetensors` file, or a folder holding one or several
//! safetensors files (with `model.safetensors.index.json` when sharded) plus other files
//! (config.json, tokenizer, ...) that travel unchanged. Also the safetensors writer used for
//! both checkpoints and decompressed models.

use crate::error::{ContainerError, Result};
use crate::sfile::{MappedFile, TensorInfo};
use safetensors::{Dtype, View};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

pub const INDEX_FILE: &str = "model.safetensors.index.json";

/// One tensor with its bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    pub name: String,
    pub dtype: Dtype,
    pub shape: Vec<usize>,
    pub data: Vec<u8>,
}

impl View for &Tensor {
    fn dtype(&self) -> Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.data)
    }
    fn data_len(&self) -> usize {
        self.data.len()
    }
}

/// Every tensor of one safetensors file, copied into memory (small files and tests).
pub fn read_tensors(path: &Path) -> Result<Vec<Tensor>> {
    let f = MappedFile::open(path)?;
    Ok(f.tensors
        .iter()
        .map(|t| Tensor { name: t.name.clone(), dtype: t.dtype, shape: t.shape.clone(), data: f.bytes(t).to_vec() })
        .collect())
}

/// Writes tensors as one safetensors file (to `path`, which the caller keeps inside a temporary
/// folder until everything is complete).
pub fn write_safetensors(path: &Path, tensors: &[&Tensor], metadata: Option<&BTreeMap<String, String>>) -> Result<()> {
    let info: Option<HashMap<String, String>> = metadata.map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect());
    safetensors::serialize_to_file(tensors.iter().map(|t| (t.name.clone(), *t)), info, path)
        .map_err(|e| ContainerError::Write { path: path.to_path_buf(), msg: e.to_string() })
}

/// An original model, its safetensors files memory-mapped.
pub struct Model {
    pub files: Vec<MappedFile>,
    /// The index file as parsed JSON, if the model is sharded.
    pub index: Option<serde_json::Value>,
    /// The index file's exact text (spec 17.12).
    pub index_text: Option<String>,
    /// Other files of the folder (copied unchanged), relative names.
    pub other_files: Vec<PathBuf>,
    /// The folder (or the file's parent) the other files are relative to.
    pub root: PathBuf,
}

impl Model {
    pub fn tensors(&self) -> impl Iterator<Item = (&MappedFile, &TensorInfo)> {
        self.files.iter().flat_map(|f| f.tensors.iter().map(move |t| (f, t)))
    }
}

fn read_json(path: &Path) -> Result<(serde_json::Value, String)> {
    let text = std::fs::read_to_string(path).map_err(ContainerError::io(path))?;
    let v =
        serde_json::from_str(&text).map_err(|e| ContainerError::Config { file: path.to_path_buf(), msg: format!("invalid JSON: {e}") })?;
    Ok((v, text))
}

/// Spec 17.2: reads an original model from a `.safetensors` file or a folder.
pub fn read_model(input: &Path) -> Result<Model> {
    if input.is_file() {
        let file = MappedFile::open(input)?;
        return Ok(Model { files: vec![file], index: None, index_text: None, other_files: Vec::new(), root: PathBuf::new() });
    }
    if !input.is_dir() {
        // The OS's own wording ("No such file or directory") for a missing path.
        let source = std::fs::metadata(input).err().unwrap_or_else(|| std::io::Error::other("neither a .safetensors file nor a folder"));
        return Err(ContainerError::Io { path: input.to_path_buf(), source });
    }
    let index_path = input.join(INDEX_FILE);
    let (index, index_text, shard_names) = if index_path.is_file() {
        let (index, text) = read_json(&index_path)?;
        let map = index
            .get("weight_map")
            .and_then(|m| m.as_object())
            .ok_or_else(|| ContainerError::Config { file: index_path.clone(), msg: "no `weight_map` object".into() })?;
        let mut names: Vec<String> = Vec::new();
        for v in map.values() {
            let s = v
                .as_str()
                .ok_or_else(|| ContainerError::Config { file: index_path.clone(), msg: "weight_map values must be file names".into() })?;
            if !names.iter().any(|n| n == s) {
                names.push(s.to_string());
            }
        }
        names.sort();
        (Some(index), Some(text), names)
    } else {
        (None, None, list_dir(input)?.into_iter().filter(|n| n.ends_with(".safetensors")).collect())
    };
    if shard_names.is_empty() {
        return Err(ContainerError::Usage(format!("{}: no .safetensors files", input.display())));
    }
    for n in &shard_names {
        if !crate::config::is_plain_file_name(n) {
            return Err(ContainerError::Config { file: index_path.clone(), msg: format!("shard name `{n}` is not a plain file name") });
        }
    }
    let files = shard_names.iter().map(|n| MappedFile::open(&input.join(n))).collect::<Result<Vec<_>>>()?;
    if let Some(index) = &index {
        // Every tensor the index names must be in the file it names.
        for (tensor, file) in index["weight_map"].as_object().expect("checked").iter() {
            let f = files.iter().find(|f| Some(f.name.as_str()) == file.as_str()).expect("read above");
            if f.find(tensor).is_none() {
                return Err(ContainerError::Tensor {
                    file: input.join(&f.name),
                    tensor: tensor.clone(),
                    msg: "listed in the index but missing".into(),
                });
            }
        }
    }
    let other_files = list_dir(input)?.into_iter().filter(|n| !n.ends_with(".safetensors") && n != INDEX_FILE).map(PathBuf::from).collect();
    Ok(Model { files, index, index_text, other_files, root: input.to_path_buf() })
}

/// Plain files of a folder, sorted (sub-folders are not part of a model).
pub fn list_dir(dir: &Path) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(ContainerError::io(dir))? {
        let entry = entry.map_err(ContainerError::io(dir))?;
        if entry.file_type().map_err(ContainerError::io(entry.path()))?.is_file() {
            out.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    out.sort();
    Ok(out)
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// A folder written under a temporary name and renamed into place only when complete, so a
/// crash never leaves a half-written output under the final name (and an existing path is never
/// overwritten).
pub struct StagedDir {
    pub tmp: PathBuf,
    target: PathBuf,
}

impl StagedDir {
    pub fn new(target: &Path, inputs: &[&Path]) -> Result<StagedDir> {
        if target.exists() {
            return Err(ContainerError::Usage(format!("{} exists; refusing to overwrite it", target.display())));
        }
        let abs = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        for input in inputs {
            if abs(input) == abs(target) {
                return Err(ContainerError::Usage(format!("output {} is an input", target.display())));
            }
        }
        let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "out".into());
        let tmp = target.with_file_name(format!(".{name}.partial-{}", std::process::id()));
        // No missing parent folder is created silently: the parent must exist.
        let parent = target.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if !parent.is_dir() {
            return Err(ContainerError::Usage(format!("{}: the parent folder {} does not exist", target.display(), parent.display())));
        }
        std::fs::create_dir(&tmp).map_err(ContainerError::write(&tmp))?;
        Ok(StagedDir { tmp, target: target.to_path_buf() })
    }

    pub fn commit(self) -> Result<()> {
        std::fs::rename(&self.tmp, &self.target).map_err(ContainerError::write(&self.target))?;
        std::mem::forget(self);
        Ok(())
    }
}

impl Drop for StagedDir {
    fn drop(&mut self) {
        // Not committed: remove the partial output (only the folder this process created).
        let _ = std::fs::remove_dir_all(&self.tmp);
    }
}
