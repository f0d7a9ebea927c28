//! Writes vector files under `files/<id>/` and records their SHA-256. Files with identical
//! contents are written once: a later vector names the earlier file (the corpus is smaller and
//! the manifest still lists every file each vector needs, with its hash).

use crate::corpus::sha256_hex;
use crate::manifest::Vector;
use nwc_reference::EncodedMatrix;
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

pub struct Writer {
    root: PathBuf,
    by_hash: BTreeMap<String, String>,
    pub bytes_written: u64,
    pub files_written: u64,
}

pub fn le_u16(v: &[u16]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn le_u32(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn le_f32(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn le_f64(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

impl Writer {
    pub fn new(root: &Path) -> Writer {
        Writer { root: root.to_owned(), by_hash: BTreeMap::new(), bytes_written: 0, files_written: 0 }
    }

    /// Stores `bytes` as `files/<vector id>/<name>.bin` (or reuses an identical file) and records
    /// the path's hash in the vector. Returns the path relative to the corpus root.
    pub fn put(&mut self, v: &mut Vector, name: &str, bytes: &[u8]) -> io::Result<String> {
        let hash = sha256_hex(bytes);
        let path = match self.by_hash.get(&hash) {
            Some(existing) => existing.clone(),
            None => {
                let rel = format!("files/{}/{name}.bin", v.id);
                let full = self.root.join(&rel);
                std::fs::create_dir_all(full.parent().expect("has a parent"))?;
                std::fs::write(&full, bytes)?;
                self.bytes_written += bytes.len() as u64;
                self.files_written += 1;
                self.by_hash.insert(hash.clone(), rel.clone());
                rel
            }
        };
        v.sha256.insert(path.clone(), hash);
        Ok(path)
    }

    /// Stores every stored field of `m` (spec 12.1) and names them in `v.fields`.
    pub fn put_fields(&mut self, v: &mut Vector, m: &EncodedMatrix) -> io::Result<()> {
        let mut fields: Vec<(&str, Vec<u8>)> = vec![
            ("data", m.data.clone()),
            ("bases", le_u32(&m.bases)),
            ("hdr", m.hdr.clone()),
            ("lut", le_u32(&m.lut)),
            ("low", m.low.clone()),
        ];
        if let Some(scale) = &m.scale {
            fields.push(("scale", le_f32(scale)));
        }
        for (name, bytes) in fields {
            let path = self.put(v, name, &bytes)?;
            v.fields.insert(name.to_owned(), path);
        }
        Ok(())
    }
}
