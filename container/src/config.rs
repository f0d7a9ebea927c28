//! Spec 17.4 - 17.6: `nwc_config.json`. Unknown keys are kept (flatten) so that a checkpoint read
//! and written again loses nothing; every field the 0.10.1 library may omit has a default.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

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
    #[serde(default)]
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
