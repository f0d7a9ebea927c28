//! Spec 17.9: `verify`: every matrix valid, every produced tensor equal to its recorded digest,
//! and with an original model, the same tensors and the same files (SHA-256 of each file).

use super::convert::expected_output;
use super::export::{plan_file, produce, records_by_file};
use super::peer::{decode_all, export_peer};
use super::Progress;
use crate::checkpoint::Checkpoint;
use crate::error::{ContainerError, Result};
use crate::model::{read_model, sha256_hex, Model, Tensor};
use crate::sfile::{hex, MappedFile, TensorInfo};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// One original file compared with the file decompression would write.
#[derive(Clone, Debug, PartialEq)]
pub struct FileCheck {
    pub name: String,
    /// SHA-256 of the original file; `None` when the original has no such file.
    pub original_sha256: Option<String>,
    /// SHA-256 of the file decompression writes.
    pub decompressed_sha256: String,
    /// Some tensor of the file went through a lossy step: the files cannot be identical.
    pub lossy: bool,
}

impl FileCheck {
    pub fn identical(&self) -> bool {
        self.original_sha256.as_deref() == Some(self.decompressed_sha256.as_str())
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct VerifyReport {
    pub matrices: usize,
    pub tensors: usize,
    /// Tensors compared bit for bit against the original model.
    pub compared: usize,
    /// With an original: one entry per safetensors file (our checkpoints only).
    pub files: Vec<FileCheck>,
    /// One line per problem; empty means verified.
    pub mismatches: Vec<String>,
}

/// Validates every matrix (spec 13) and checks every tensor against its recorded SHA-256; with
/// `against`, also compares the decompressed model with the original, tensor for tensor
/// (lossless tensors bit for bit with the original, lossy ones with what spec 17.3 says they
/// must decode to) and file for file (SHA-256). Invalid input is an `Err`; digest or content
/// differences are `mismatches`.
pub fn verify(input: &Path, against: Option<&Path>, progress: Progress) -> Result<VerifyReport> {
    let ck = Checkpoint::open(input)?;
    let orig = against.map(read_model).transpose()?;
    let Some(x) = &ck.config.nwc_rs else {
        return verify_peer(&ck, orig.as_ref().map(|m| (m, against.expect("with orig"))), progress);
    };
    let mut report = VerifyReport { matrices: ck.entries()?.len(), tensors: x.tensors.len(), ..Default::default() };
    // Matrices no record uses are validated too.
    let used: HashSet<u64> = x.tensors.iter().filter_map(|r| r.matrix).collect();
    for e in ck.entries()?.iter().filter(|e| !used.contains(&e.id)) {
        ck.decoded_matrix(e)?;
    }
    let originals: HashMap<&str, (&MappedFile, &TensorInfo)> =
        orig.iter().flat_map(|m| m.tensors().map(|(f, t)| (t.name.as_str(), (f, t)))).collect();
    for (f, records) in records_by_file(&ck, x)? {
        let plan = plan_file(&ck, f, &records)?;
        let mut sorted = records.clone();
        sorted.sort_by_key(|r| plan.offsets[&r.name]);
        let mut h = Sha256::new();
        h.update((plan.header.len() as u64).to_le_bytes());
        h.update(plan.header.as_bytes());
        for r in sorted {
            let produced = produce(&ck, r)?;
            let got = produced.bytes();
            h.update(&got);
            progress(got.len() as u64);
            if sha256_hex(&got) != r.decoded_sha256 {
                report.mismatches.push(format!("{}: decoded bytes do not match the recorded SHA-256", r.name));
            }
            let Some(&(of, ot)) = originals.get(r.name.as_str()) else {
                continue;
            };
            if crate::sfile::dtype_name(ot.dtype) != r.dtype || ot.shape.iter().map(|&d| d as u64).ne(r.shape.iter().copied()) {
                report
                    .mismatches
                    .push(format!("{}: {:?} {:?} in the original, {} {:?} decompressed", r.name, ot.dtype, ot.shape, r.dtype, r.shape));
                continue;
            }
            let original = of.bytes(ot);
            let expected = if r.lossy.is_empty() {
                std::borrow::Cow::Borrowed(original)
            } else {
                let e = expected_output(ot.dtype, &ot.shape, original, &r.lossy).map_err(|msg| ContainerError::Tensor {
                    file: of.path.clone(),
                    tensor: r.name.clone(),
                    msg,
                })?;
                std::borrow::Cow::Owned(e)
            };
            if *got != *expected {
                let at = got.iter().zip(expected.iter()).position(|(a, b)| a != b).unwrap_or(0);
                report.mismatches.push(format!("{}: differs from the original at byte {at}", r.name));
            }
            of.release(ot);
            report.compared += 1;
        }
        if let Some(m) = &orig {
            let original = m.files.iter().find(|o| o.name == f.name).map(|o| {
                let digest = hex(&Sha256::digest(o.all()));
                o.release_range(0, o.all().len());
                digest
            });
            let check = FileCheck {
                name: f.name.clone(),
                original_sha256: original,
                decompressed_sha256: hex(&h.finalize()),
                lossy: records.iter().any(|r| !r.lossy.is_empty()),
            };
            if check.original_sha256.is_none() {
                report.mismatches.push(format!("file {}: not in the original", f.name));
            } else if !check.identical() && !check.lossy {
                report.mismatches.push(format!("file {}: SHA-256 differs from the original", f.name));
            }
            report.files.push(check);
        }
    }
    if let Some(m) = &orig {
        let names: HashSet<&str> = x.tensors.iter().map(|r| r.name.as_str()).collect();
        for (_, t) in m.tensors().filter(|(_, t)| !names.contains(t.name.as_str())) {
            report.mismatches.push(format!("{}: in the original, missing from the checkpoint", t.name));
        }
        let extra = names.iter().filter(|n| !originals.contains_key(*n)).count();
        if extra > 0 {
            report.mismatches.push(format!("the checkpoint has {extra} tensors the original does not"));
        }
        for o in m.files.iter().filter(|o| !x.files.iter().any(|f| f.name == o.name)) {
            report.mismatches.push(format!("file {}: in the original, not in the checkpoint", o.name));
        }
    }
    Ok(report)
}

/// Spec 17.9 for the 0.10.1 library's checkpoints: no records, so no digests and no files to
/// compare; tensors are compared by name with the original.
fn verify_peer(ck: &Checkpoint, orig: Option<(&Model, &Path)>, progress: Progress) -> Result<VerifyReport> {
    let decoded = decode_all(ck, progress)?;
    let files = export_peer(ck, &decoded)?;
    let mut report = VerifyReport { matrices: decoded.len(), ..Default::default() };
    let out: HashMap<&str, &Tensor> = files.iter().flat_map(|f| f.2.iter().map(|t| (t.name.as_str(), t))).collect();
    report.tensors = out.len();
    if let Some((model, path)) = orig {
        let mut seen = 0;
        for (f, t) in model.tensors() {
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
            if got.data != f.bytes(t) {
                let at = got.data.iter().zip(f.bytes(t)).position(|(a, b)| a != b).unwrap_or(0);
                report.mismatches.push(format!("{}: differs from the original at byte {at}", t.name));
            }
            report.compared += 1;
        }
        if seen != out.len() {
            report.mismatches.push(format!("the checkpoint has {} tensors the original does not ({})", out.len() - seen, path.display()));
        }
    }
    Ok(report)
}
