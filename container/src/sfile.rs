//! Safetensors files at disk speed: inputs are memory-mapped and read tensor by tensor (no copy of
//! the file into the heap), the exact header bytes are kept (spec 17.12), and the pages of a
//! tensor are handed back to the kernel once it is done, so the resident set stays bounded by the
//! tensors in flight rather than the model size.

use crate::error::{ContainerError, Result};
use memmap2::Mmap;
use safetensors::{Dtype, SafeTensors};
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

/// safetensors' limit on the header length (the crate refuses longer headers).
const MAX_HEADER: u64 = 100_000_000;

/// One tensor of a mapped file: where its bytes are (absolute offsets in the file).
#[derive(Clone, Debug, PartialEq)]
pub struct TensorInfo {
    pub name: String,
    pub dtype: Dtype,
    pub shape: Vec<usize>,
    pub start: usize,
    pub end: usize,
}

impl TensorInfo {
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }
}

/// A memory-mapped safetensors file, validated.
pub struct MappedFile {
    pub path: PathBuf,
    /// The file name (no folder).
    pub name: String,
    /// The header exactly as stored (the n bytes after the 8-byte length), padding included.
    pub header: String,
    pub metadata: Option<BTreeMap<String, String>>,
    /// Tensors in the order of their data offsets.
    pub tensors: Vec<TensorInfo>,
    /// `None` for an empty mapping (mmap of zero bytes is not allowed).
    map: Option<Mmap>,
}

fn truncated(path: &Path, got: u64, expected: u64) -> ContainerError {
    ContainerError::Truncated { file: path.to_path_buf(), got, expected }
}

impl MappedFile {
    /// Maps and validates a safetensors file. A short file is reported as `truncated: N of M
    /// bytes`, M being what its header describes.
    pub fn open(path: &Path) -> Result<MappedFile> {
        let file = File::open(path).map_err(ContainerError::io(path))?;
        let len = file.metadata().map_err(ContainerError::io(path))?.len();
        if len < 8 {
            return Err(truncated(path, len, 8));
        }
        // SAFETY: the mapping is read-only; like every reader of memory-mapped files we rely on
        // the file not being truncated or rewritten by another process while we read it.
        let map = unsafe { Mmap::map(&file) }.map_err(ContainerError::io(path))?;
        let bad = |msg: String| ContainerError::Safetensors { file: path.to_path_buf(), msg };
        let n = u64::from_le_bytes(map[..8].try_into().expect("8 bytes"));
        if n > MAX_HEADER {
            return Err(bad(format!("header length {n} is over the {MAX_HEADER}-byte limit")));
        }
        if len < 8 + n {
            return Err(truncated(path, len, 8 + n));
        }
        let header = std::str::from_utf8(&map[8..8 + n as usize]).map_err(|e| bad(format!("header is not UTF-8: {e}")))?;
        let json: serde_json::Value = serde_json::from_str(header).map_err(|e| bad(format!("header is not JSON: {e}")))?;
        let data_end =
            json.as_object().map(|o| o.values().filter_map(|t| t.get("data_offsets")?.get(1)?.as_u64()).max().unwrap_or(0)).unwrap_or(0);
        let expected = 8 + n + data_end;
        if len < expected {
            return Err(truncated(path, len, expected));
        }
        let (_, meta) = SafeTensors::read_metadata(&map).map_err(|e| {
            let msg = if len > expected { format!("{len} bytes where the header describes {expected}") } else { e.to_string() };
            bad(msg)
        })?;
        let base = 8 + n as usize;
        let mut tensors: Vec<TensorInfo> = meta
            .tensors()
            .into_iter()
            .map(|(name, info)| TensorInfo {
                name,
                dtype: info.dtype,
                shape: info.shape.clone(),
                start: base + info.data_offsets.0,
                end: base + info.data_offsets.1,
            })
            .collect();
        tensors.sort_by(|a, b| (a.start, &a.name).cmp(&(b.start, &b.name)));
        let metadata = meta.metadata().as_ref().map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect());
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        Ok(MappedFile { path: path.to_path_buf(), name, header: header.to_string(), metadata, tensors, map: Some(map) })
    }

    pub fn bytes(&self, t: &TensorInfo) -> &[u8] {
        self.map.as_ref().map_or(&[][..], |m| &m[t.start..t.end])
    }

    pub fn find(&self, name: &str) -> Option<&TensorInfo> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// The whole file's bytes (for file-level digests).
    pub fn all(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }

    /// Maps every page of `t` in one call (one fault per 4 KiB page otherwise); only advice.
    pub fn populate(&self, t: &TensorInfo) {
        if let Some(map) = &self.map {
            let page = 4096;
            let a = t.start / page * page;
            if t.end > a {
                let _ = map.advise_range(memmap2::Advice::PopulateRead, a, t.end - a);
            }
        }
    }

    /// Drops the pages of `t` from this process's mapping (they stay in the page cache): keeps the
    /// resident set at the tensors in flight, not the whole file.
    pub fn release(&self, t: &TensorInfo) {
        self.release_range(t.start, t.end);
    }

    pub fn release_range(&self, start: usize, end: usize) {
        let Some(map) = &self.map else { return };
        let page = 4096;
        let (a, b) = (start.div_ceil(page) * page, end / page * page);
        if b > a {
            // SAFETY: the mapping is a read-only, shared file mapping; MADV_DONTNEED only drops
            // this process's page-table entries, and a later access reads the same file pages
            // again, so a slice still borrowed from the range stays valid (it is only re-read).
            let _ = unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, a, b - a) };
        }
    }
}

/// SHA-256 of `bytes` in chunks, reporting each chunk to `progress` (the bar moves during a large
/// tensor).
pub fn sha256_chunked(bytes: &[u8], progress: &(dyn Fn(u64) + Sync)) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for chunk in bytes.chunks(8 << 20) {
        h.update(chunk);
        progress(chunk.len() as u64);
    }
    hex(&h.finalize())
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A safetensors header in the compact form the safetensors library writes: `__metadata__` first,
/// then the tensors in the given order, padded with spaces to a multiple of 8 bytes.
pub fn header_json(metadata: Option<&BTreeMap<String, String>>, entries: &[(&str, Dtype, &[usize], usize, usize)]) -> String {
    let mut s = String::from("{");
    let q = |x: &str| serde_json::to_string(x).expect("strings serialize");
    if let Some(m) = metadata {
        s += &format!("\"__metadata__\":{}", serde_json::to_string(m).expect("map"));
    }
    for (name, dtype, shape, a, b) in entries {
        if s.len() > 1 {
            s.push(',');
        }
        let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
        s += &format!("{}:{{\"dtype\":{},\"shape\":[{}],\"data_offsets\":[{a},{b}]}}", q(name), q(&dtype_name(*dtype)), dims.join(","));
    }
    s.push('}');
    while s.len() % 8 != 0 {
        s.push(' ');
    }
    s
}

/// The safetensors name of a dtype ("BF16", "U8", ...).
pub fn dtype_name(d: Dtype) -> String {
    serde_json::to_value(d).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_else(|| format!("{d:?}"))
}

pub fn parse_dtype(s: &str) -> Option<Dtype> {
    serde_json::from_value(serde_json::Value::String(s.to_string())).ok()
}

/// Little-endian u16 words as bytes without a copy (the safetensors byte order).
#[cfg(target_endian = "little")]
pub fn words_as_bytes(words: &[u16]) -> std::borrow::Cow<'_, [u8]> {
    // SAFETY: u8 has no alignment or validity requirements; the length is exactly the words'
    // bytes, and on a little-endian target their in-memory order is the file order.
    std::borrow::Cow::Borrowed(unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), words.len() * 2) })
}

#[cfg(not(target_endian = "little"))]
pub fn words_as_bytes(words: &[u16]) -> std::borrow::Cow<'_, [u8]> {
    std::borrow::Cow::Owned(words.iter().flat_map(|w| w.to_le_bytes()).collect())
}

/// Little-endian bytes as u16 words, without a copy when they are 2-aligned in memory (a mapped
/// tensor at an even file offset).
pub fn bytes_as_words(bytes: &[u8]) -> std::borrow::Cow<'_, [u16]> {
    #[cfg(target_endian = "little")]
    {
        // SAFETY: every bit pattern is a valid u16; align_to only yields the aligned middle part.
        let (head, mid, tail) = unsafe { bytes.align_to::<u16>() };
        if head.is_empty() && tail.is_empty() {
            return std::borrow::Cow::Borrowed(mid);
        }
    }
    std::borrow::Cow::Owned(bytes.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect())
}
