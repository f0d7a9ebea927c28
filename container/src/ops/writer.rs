//! The streaming checkpoint writer (spec 17.1): stored tensors are appended as they are ready and
//! a shard is closed as soon as it is full, so nothing waits for the whole model in memory.
//!
//! A safetensors header comes first in its file but is only known once the file's last tensor is
//! written. Each file therefore reserves room for an upper bound of its header (every name is
//! known in advance; sizes and offsets take at most 20 digits) and its real header is padded with
//! spaces to that length, which every safetensors reader accepts (JSON whitespace).

use crate::error::{ContainerError, Result};
use crate::model::INDEX_FILE;
use crate::sfile::header_json;
use safetensors::Dtype;
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// One stored tensor: its bytes followed by `zeros` zero bytes (the slacks of spec 17.7).
pub struct Piece<'a> {
    pub name: String,
    pub dtype: Dtype,
    pub shape: Vec<usize>,
    pub data: Cow<'a, [u8]>,
    pub zeros: usize,
    /// Upper bound of the header bytes of this piece and every piece after it.
    pub bound: usize,
}

impl Piece<'_> {
    pub fn len(&self) -> usize {
        self.data.len() + self.zeros
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Upper bound of one header entry: `"name":{"dtype":"XXXX","shape":[d,..],"data_offsets":[a,b]},`.
pub fn entry_bound(name: &str, dims: usize) -> usize {
    serde_json::to_string(name).map_or(0, |s| s.len()) + 48 + 21 * (dims + 2)
}

struct OpenShard {
    out: BufWriter<File>,
    path: PathBuf,
    reserved: usize,
    entries: Vec<(String, Dtype, Vec<usize>, usize, usize)>,
    pos: usize,
}

pub struct ShardWriter {
    dir: PathBuf,
    limit: Option<u64>,
    meta: BTreeMap<String, String>,
    cur: Option<OpenShard>,
    /// Closed shards: temporary path and tensor names.
    done: Vec<(PathBuf, Vec<String>)>,
    data_bytes: u64,
}

const ZEROS: [u8; 4096] = [0; 4096];
/// Size of each write (and of the write buffer): small enough to stay in the cache.
const WRITE_CHUNK: usize = 256 << 10;

impl ShardWriter {
    pub fn new(dir: &Path, limit: Option<u64>, meta: BTreeMap<String, String>) -> ShardWriter {
        ShardWriter { dir: dir.to_path_buf(), limit, meta, cur: None, done: Vec::new(), data_bytes: 0 }
    }

    pub fn push(&mut self, p: &Piece) -> Result<()> {
        let full = self.cur.as_ref().is_some_and(|c| self.limit.is_some_and(|l| c.pos > 0 && (c.pos + p.len()) as u64 > l));
        if full {
            self.close()?;
        }
        if self.cur.is_none() {
            let path = self.dir.join(format!(".shard-{}", self.done.len()));
            let meta_bound = serde_json::to_string(&self.meta).map_or(0, |s| s.len()) + 32;
            let reserved = (meta_bound + p.bound).div_ceil(8) * 8;
            let mut file = File::create(&path).map_err(ContainerError::write(&path))?;
            file.seek(SeekFrom::Start(8 + reserved as u64)).map_err(ContainerError::write(&path))?;
            self.cur = Some(OpenShard { out: BufWriter::with_capacity(WRITE_CHUNK, file), path, reserved, entries: Vec::new(), pos: 0 });
        }
        let c = self.cur.as_mut().expect("opened above");
        let w = |e: std::io::Error| ContainerError::Write { path: c.path.clone(), msg: e.to_string() };
        // Cache-sized writes: see `export::write_hashed` for why.
        for chunk in p.data.chunks(WRITE_CHUNK) {
            c.out.write_all(chunk).map_err(w)?;
        }
        let mut z = p.zeros;
        while z > 0 {
            let n = z.min(ZEROS.len());
            c.out.write_all(&ZEROS[..n]).map_err(|e| ContainerError::Write { path: c.path.clone(), msg: e.to_string() })?;
            z -= n;
        }
        c.entries.push((p.name.clone(), p.dtype, p.shape.clone(), c.pos, c.pos + p.len()));
        c.pos += p.len();
        self.data_bytes += p.len() as u64;
        Ok(())
    }

    fn close(&mut self) -> Result<()> {
        let Some(c) = self.cur.take() else {
            return Ok(());
        };
        let werr = |e: std::io::Error| ContainerError::Write { path: c.path.clone(), msg: e.to_string() };
        let file = c.out.into_inner().map_err(|e| werr(e.into_error()))?;
        let entries: Vec<_> = c.entries.iter().map(|(n, d, s, a, b)| (n.as_str(), *d, s.as_slice(), *a, *b)).collect();
        let mut header = header_json(Some(&self.meta), &entries);
        if header.len() > c.reserved {
            return Err(werr(std::io::Error::other(format!("header of {} bytes over its bound {}", header.len(), c.reserved))));
        }
        header.extend(std::iter::repeat_n(' ', c.reserved - header.len()));
        let mut head = (c.reserved as u64).to_le_bytes().to_vec();
        head.extend_from_slice(header.as_bytes());
        file.write_all_at(&head, 0).map_err(werr)?;
        self.done.push((c.path, c.entries.into_iter().map(|e| e.0).collect()));
        Ok(())
    }

    /// Closes the last shard and gives the files their names: `model.safetensors`, or
    /// `model-0000i-of-0000n.safetensors` and an index. Returns the bytes written.
    pub fn finish(mut self) -> Result<u64> {
        if self.cur.is_none() && self.done.is_empty() {
            self.push(&Piece { name: String::new(), dtype: Dtype::U8, shape: vec![0], data: Cow::Borrowed(&[]), zeros: 0, bound: 64 })?;
            self.cur.as_mut().expect("opened").entries.clear();
        }
        self.close()?;
        let n = self.done.len();
        let mut total = 0;
        let mut weight_map = Map::new();
        for (i, (tmp, names)) in self.done.iter().enumerate() {
            let name = if n == 1 { "model.safetensors".to_string() } else { format!("model-{:05}-of-{:05}.safetensors", i + 1, n) };
            let path = self.dir.join(&name);
            std::fs::rename(tmp, &path).map_err(ContainerError::write(&path))?;
            total += std::fs::metadata(&path).map_err(ContainerError::io(&path))?.len();
            for t in names {
                weight_map.insert(t.clone(), Value::String(name.clone()));
            }
        }
        if n > 1 {
            let index = json!({ "metadata": { "total_size": self.data_bytes }, "weight_map": weight_map });
            let path = self.dir.join(INDEX_FILE);
            std::fs::write(&path, serde_json::to_string_pretty(&index).expect("json")).map_err(ContainerError::write(&path))?;
        }
        Ok(total)
    }
}
