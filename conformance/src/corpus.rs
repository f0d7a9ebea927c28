//! Reading a corpus directory: the manifest, read one vector at a time so that a single entry the
//! runner cannot understand becomes a failure of that vector rather than of the whole run, and
//! every file checked against its SHA-256 before use.

use crate::manifest::{Vector, CORPUS_VERSION};
use sha2::{Digest, Sha256};
use std::path::{Component, Path, PathBuf};

/// Problems that stop a whole run: without a readable manifest nothing can be judged.
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path} is not a corpus manifest: {reason}")]
    Manifest { path: PathBuf, reason: String },
}

/// One manifest entry: a vector, or the reason it cannot be used (it still counts, as a failure).
#[derive(Clone, Debug)]
pub enum Entry {
    Usable(Box<Vector>),
    Unusable { id: String, reason: String },
}

impl Entry {
    pub fn id(&self) -> &str {
        match self {
            Entry::Usable(v) => &v.id,
            Entry::Unusable { id, .. } => id,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Corpus {
    pub dir: PathBuf,
    pub format_version: u32,
    pub corpus_version: u32,
    pub entries: Vec<Entry>,
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

fn manifest_error(path: &Path, reason: impl Into<String>) -> CorpusError {
    CorpusError::Manifest { path: path.to_owned(), reason: reason.into() }
}

impl Corpus {
    /// Loads `DIR/manifest.json`. Fails only when the manifest as a whole is unusable (unreadable,
    /// not JSON, wrong format or corpus version); a bad entry becomes [`Entry::Unusable`].
    pub fn load(dir: &Path) -> Result<Corpus, CorpusError> {
        let path = dir.join("manifest.json");
        let text = std::fs::read_to_string(&path).map_err(|source| CorpusError::Read { path: path.clone(), source })?;
        let root: serde_json::Value = serde_json::from_str(&text).map_err(|e| manifest_error(&path, e.to_string()))?;
        let number = |key: &str| {
            root.get(key).and_then(|v| v.as_u64()).ok_or_else(|| manifest_error(&path, format!("`{key}` is missing or not a number")))
        };
        let format_version = number("format_version")? as u32;
        let corpus_version = number("corpus_version")? as u32;
        if format_version != nwc_reference::FORMAT_VERSION {
            return Err(manifest_error(&path, format!("format_version {format_version}, this runner checks 10")));
        }
        if corpus_version != CORPUS_VERSION {
            return Err(manifest_error(&path, format!("corpus_version {corpus_version}, this runner reads {CORPUS_VERSION}")));
        }
        let list =
            root.get("vectors").and_then(|v| v.as_array()).ok_or_else(|| manifest_error(&path, "`vectors` is missing or not a list"))?;
        let entries = list.iter().enumerate().map(|(i, value)| parse_entry(i, value)).collect();
        Ok(Corpus { dir: dir.to_owned(), format_version, corpus_version, entries })
    }

    /// Reads a file a vector names, after checking that the manifest lists its SHA-256 and that
    /// the bytes match it. The path must stay inside the corpus directory.
    pub fn read(&self, vector: &Vector, rel: &str) -> Result<Vec<u8>, String> {
        let expected = vector.sha256.get(rel).ok_or_else(|| format!("file {rel}: the manifest lists no sha256 for it"))?;
        let inside = !rel.is_empty() && Path::new(rel).components().all(|c| matches!(c, Component::Normal(_)));
        if !inside {
            return Err(format!("file {rel}: path leaves the corpus directory"));
        }
        let bytes = std::fs::read(self.dir.join(rel)).map_err(|e| format!("file {rel}: {e}"))?;
        let got = sha256_hex(&bytes);
        if !got.eq_ignore_ascii_case(expected) {
            return Err(format!("file {rel}: sha256 {got}, the manifest says {expected}"));
        }
        Ok(bytes)
    }
}

fn parse_entry(index: usize, value: &serde_json::Value) -> Entry {
    let id = value.get("id").and_then(|v| v.as_str()).map(str::to_owned).unwrap_or_else(|| format!("#{index}"));
    match serde_json::from_value::<Vector>(value.clone()) {
        Ok(v) => Entry::Usable(Box::new(v)),
        Err(e) => Entry::Unusable { id, reason: format!("manifest entry #{index} cannot be read: {e}") },
    }
}
