//! Spec 17.4 - 17.6: `nwc_config.json`. Unknown keys are kept (flatten) so that a checkpoint read
//! and written again loses nothing; every field the 0.10.1 library may omit has a default.

use crate::error::{ContainerError, Result};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::path::Path;

pub const CONFIG_FILE: &str = "nwc_config.json";
/// Spec 17.4: versions whose checkpoints we read (9 is BF16 layout 0 only).
pub const READABLE_VERSIONS: [u64; 2] = [9, 10];

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct NwcConfig {
    #[serde(default)]
    pub nwc_checkpoint: Option<u64>,
    pub library_version: u64,
    #[serde(default)]
    pub base_model: Option<String>,
    pub weights: Vec<WeightEntry>,
    /// Required (spec 17.4): a reader without `nwc_rs` builds the model's tensors from it.
    pub modules: Vec<ModuleEntry>,
    #[serde(default)]
    pub bytes_nwc: Option<u64>,
    #[serde(default)]
    pub bytes_bf16: Option<u64>,
    /// Our additions (spec 17.6); absent in the 0.10.1 library's checkpoints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nwc_rs: Option<Extras>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

fn default_block() -> u64 {
    4096
}

fn default_elem() -> String {
    "bf16".into()
}

/// Spec 17.4: one compressed matrix.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct WeightEntry {
    pub id: u64,
    pub out: u64,
    #[serde(rename = "in")]
    pub inp: u64,
    #[serde(default = "default_block")]
    pub block: u64,
    #[serde(default)]
    pub bytes: Option<u64>,
    /// Missing in version 9: BF16.
    #[serde(default = "default_elem")]
    pub elem: String,
    #[serde(default)]
    pub layout: u64,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// Spec 17.5: how a matrix is used by the model (linear, embedding, fused group).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ModuleEntry {
    pub path: String,
    pub kind: String,
    pub weight: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bias: Option<Option<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub padding_idx: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub names: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<u64>>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// Spec 17.6: what our writer adds so that decompression rebuilds the original files exactly and
/// `verify` can check every tensor.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Extras {
    pub format: u64,
    /// Every tensor of the original model, in original file order.
    pub tensors: Vec<TensorRecord>,
    /// The original safetensors files, in order, with their `__metadata__`.
    pub files: Vec<FileRecord>,
    /// The JSON content of the original `model.safetensors.index.json`, if there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<Value>,
    /// Spec 17.12: the exact text of the original index file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_text: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct FileRecord {
    pub name: String,
    #[serde(default)]
    pub metadata: Option<std::collections::BTreeMap<String, String>>,
    /// Spec 17.12: the file's header exactly as stored (the bytes after its 8-byte length).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TensorRecord {
    pub name: String,
    /// safetensors dtype name, e.g. "BF16".
    pub dtype: String,
    pub shape: Vec<u64>,
    /// Which original file held it.
    pub file: String,
    /// SHA-256 of the original tensor bytes.
    pub sha256: String,
    /// The matrix id holding it, or none if it was copied unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matrix: Option<u64>,
    /// Lossy steps applied ("cast-bf16", "fp8"), empty for a lossless tensor.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lossy: Vec<String>,
    /// SHA-256 of the bytes decompression must produce (equal to `sha256` when lossless).
    pub decoded_sha256: String,
}

impl NwcConfig {
    /// Spec 17.4: JSON with one-space indentation, as the 0.10.1 library writes it.
    pub fn to_json(&self) -> String {
        let mut out = Vec::new();
        let fmt = serde_json::ser::PrettyFormatter::with_indent(b" ");
        let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
        self.serialize(&mut ser).expect("serializing plain data cannot fail");
        String::from_utf8(out).expect("serde_json writes UTF-8")
    }
}

/// Spec 17.1: a plain file name: not empty, no path separator, not starting with `.`.
pub fn is_plain_file_name(name: &str) -> bool {
    !name.is_empty() && !name.contains('/') && !name.contains('\\') && !name.starts_with('.')
}

/// Spec 17.6: the `format` of the records this reader knows.
pub const RECORDS_FORMAT: u64 = 1;
/// Spec 17.6: the lossy steps a record may list, in the order they are applied.
pub const LOSSY_STEPS: [&str; 2] = ["cast-bf16", "fp8"];
/// Spec 17.5: the module kinds.
pub const MODULE_KINDS: [&str; 3] = ["linear", "embedding", "fused"];

impl NwcConfig {
    /// Spec 17.4 - 17.6: the references inside nwc_config.json, checked before any of it is used:
    /// weights ids unique, every module's matrix a weights entry and its kind known, and with
    /// `nwc_rs` its format known, its file names plain and distinct (decompression writes them),
    /// every record's file listed, its matrix a weights entry and its lossy steps known and in
    /// order. `file` is the config's path, for the errors.
    pub fn check(&self, file: &Path) -> Result<()> {
        let config = |msg: String| ContainerError::Config { file: file.to_path_buf(), msg };
        let unsupported = |msg: String| ContainerError::Unsupported { file: file.to_path_buf(), msg };
        let mut ids = HashSet::new();
        for e in &self.weights {
            if !ids.insert(e.id) {
                return Err(config(format!("weights id {} appears twice (spec 17.4)", e.id)));
            }
        }
        for m in &self.modules {
            if !MODULE_KINDS.contains(&m.kind.as_str()) {
                return Err(unsupported(format!("module kind `{}` ({}; spec 17.5)", m.kind, m.path)));
            }
            if !ids.contains(&m.weight) {
                return Err(config(format!("modules entry `{}`: matrix id {} has no weights entry (spec 17.5)", m.path, m.weight)));
            }
        }
        let Some(x) = &self.nwc_rs else { return Ok(()) };
        if x.format != RECORDS_FORMAT {
            return Err(unsupported(format!("nwc_rs format {} (readable: {RECORDS_FORMAT}; spec 17.6)", x.format)));
        }
        let mut files = HashSet::new();
        for f in &x.files {
            if !is_plain_file_name(&f.name) || f.name == CONFIG_FILE {
                return Err(config(format!("nwc_rs: file name `{}` is not a plain file name (spec 17.6)", f.name)));
            }
            if !files.insert(f.name.as_str()) {
                return Err(config(format!("nwc_rs: file `{}` is listed twice (spec 17.6)", f.name)));
            }
        }
        for r in &x.tensors {
            let at = |msg: String| ContainerError::Tensor { file: file.to_path_buf(), tensor: r.name.clone(), msg };
            if !files.contains(r.file.as_str()) {
                return Err(at(format!("nwc_rs: its file `{}` is not one of nwc_rs.files (spec 17.6)", r.file)));
            }
            if let Some(id) = r.matrix.filter(|id| !ids.contains(id)) {
                return Err(at(format!("nwc_rs: matrix id {id} has no weights entry (spec 17.6)")));
            }
            let steps: Vec<Option<usize>> = r.lossy.iter().map(|s| LOSSY_STEPS.iter().position(|k| k == s)).collect();
            if steps.iter().any(Option::is_none) || !steps.windows(2).all(|w| w[0] < w[1]) {
                return Err(at(format!("nwc_rs: lossy steps {:?} (known: {LOSSY_STEPS:?}, in that order; spec 17.6)", r.lossy)));
            }
        }
        Ok(())
    }
}
