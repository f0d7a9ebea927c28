//! Spec 17.1, 17.4 - 17.7: the checkpoint folder and the stored fields of one matrix as
//! safetensors tensors `nwc/<id>/data|bases|hdr|lut|low|scale`.

use crate::config::{is_plain_file_name, NwcConfig, WeightEntry, CONFIG_FILE, READABLE_VERSIONS};
use crate::error::{ContainerError, Result};
use crate::model::{list_dir, Tensor, INDEX_FILE};
use crate::ops::writer::Piece;
use crate::sfile::{MappedFile, TensorInfo};
use nwc_reference::geometry::{RAW_SLACK, TAIL_SLACK};
use nwc_reference::{ElemType, EncodedMatrix, Field, FormatError, Geometry, Layout, Mode, Shape};
use safetensors::Dtype;
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Spec 17.1: the safetensors metadata of a checkpoint file.
pub fn checkpoint_metadata() -> std::collections::BTreeMap<String, String> {
    [("format".to_string(), "pt".to_string()), ("nwc".to_string(), "1".to_string())].into_iter().collect()
}

/// Spec 17.4: the mode of a weights entry (missing elem/layout: BF16 layout 0, as in version 9).
pub fn entry_mode(e: &WeightEntry) -> Option<Mode> {
    let elem = match e.elem.as_str() {
        "bf16" => ElemType::Bf16,
        "fp8" => ElemType::Fp8E4m3,
        _ => return None,
    };
    let layout = match e.layout {
        0 => Layout::Rows8,
        1 => Layout::Fragment16,
        _ => return None,
    };
    Some(Mode { elem, layout })
}

/// Spec 17.4: the `bytes` a weights entry reports: dl + 4 nb + 32 nb + 16384 + n_low (+ 4 M).
pub fn accounted_bytes(m: &EncodedMatrix) -> u64 {
    let g = Geometry::new(m.mode, m.shape).expect("a valid matrix");
    // dl = align8(end) + 64 from the offsets (spec 9.4), whatever length the stored field has.
    let last = m.bases.len().saturating_sub(1);
    let end = m.bases.get(last).map_or(0, |&b| u64::from(b)) + m.hdr[32 * last..].iter().map(|&w| 4 * u64::from(w)).sum::<u64>();
    let dl = end.div_ceil(8) * 8 + TAIL_SLACK;
    dl + 36 * g.blocks + 16384 + g.n_low + m.scale.as_ref().map_or(0, |s| 4 * s.len() as u64)
}

/// Spec 17.7: the tensors of one matrix as our writer stores them: `data` with 64 more zero bytes
/// (dl + 64, like the 0.10.1 library) and `low` with its 512-byte slack. The field buffers move
/// into the pieces (no copy); `bound` is the header bound the writer needs (see `ops::writer`).
pub fn matrix_pieces(id: u64, m: EncodedMatrix, bound: usize) -> Vec<Piece<'static>> {
    let g = Geometry::new(m.mode, m.shape).expect("a valid matrix");
    let low_zeros = (g.n_low as usize + RAW_SLACK as usize).saturating_sub(m.low.len());
    let u32s = |v: &[u32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let t = |field: &str, dtype, data: Vec<u8>, zeros: usize, width: usize| Piece {
        name: format!("nwc/{id}/{field}"),
        dtype,
        shape: vec![(data.len() + zeros) / width],
        data: Cow::Owned(data),
        zeros,
        bound,
    };
    let mut out = vec![
        t("data", Dtype::U8, m.data, TAIL_SLACK as usize, 1),
        t("bases", Dtype::I32, u32s(&m.bases), 0, 4),
        t("hdr", Dtype::U8, m.hdr, 0, 1),
        t("lut", Dtype::I32, u32s(&m.lut), 0, 4),
        t("low", Dtype::U8, m.low, low_zeros, 1),
    ];
    if let Some(scale) = &m.scale {
        out.push(t("scale", Dtype::F32, scale.iter().flat_map(|x| x.to_le_bytes()).collect(), 0, 4));
    }
    out
}

/// Upper bound of the header entries of one matrix's stored tensors (ids up to 20 digits).
pub fn matrix_header_bound() -> usize {
    6 * crate::ops::writer::entry_bound("nwc/18446744073709551615/scale", 1)
}

/// Spec 17.1: the index says where every tensor is: each name it maps is in that shard, and each
/// tensor of the shards is in it.
fn check_index(path: &Path, map: &HashMap<String, String>, files: &[MappedFile], index: &HashMap<String, (usize, usize)>) -> Result<()> {
    let bad = |msg: String| ContainerError::Config { file: path.to_path_buf(), msg };
    let file_name = |fi: usize| files[fi].path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    for (tensor, shard) in map {
        match index.get(tensor) {
            Some(&(fi, _)) if file_name(fi) == *shard => {}
            Some(&(fi, _)) => return Err(bad(format!("maps `{tensor}` to {shard}, but {} holds it (spec 17.1)", file_name(fi)))),
            None => return Err(bad(format!("maps `{tensor}` to {shard}, which does not hold it (spec 17.1)"))),
        }
    }
    match index.keys().find(|t| !map.contains_key(*t)) {
        Some(t) => Err(bad(format!("tensor `{t}` of {} is missing from weight_map (spec 17.1)", file_name(index[t].0)))),
        None => Ok(()),
    }
}

/// Spec 17.7: the stored fields of a matrix (spec 12.1), as in `nwc/<id>/<field>`.
const FIELD_TENSORS: [Field; 6] = [Field::Data, Field::Bases, Field::Hdr, Field::Lut, Field::Low, Field::Scale];

/// Spec 17.7: every stored tensor is accounted for: a name under `nwc/` is a field of a weights
/// entry or the bias of a fused module; with records (17.6), every other tensor is a copied
/// tensor's record. Anything else would be dropped by decompression without a word.
fn check_accounted(config: &NwcConfig, files: &[MappedFile], order: &[String], index: &HashMap<String, (usize, usize)>) -> Result<()> {
    let ids: std::collections::HashSet<u64> = config.weights.iter().map(|e| e.id).collect();
    let fused: std::collections::HashSet<&str> = config.modules.iter().filter(|m| m.kind == "fused").map(|m| m.path.as_str()).collect();
    let copied: Option<std::collections::HashSet<&str>> =
        config.nwc_rs.as_ref().map(|x| x.tensors.iter().filter(|r| r.matrix.is_none()).map(|r| r.name.as_str()).collect());
    // `nwc/<id>/<field>`, id in decimal without leading zeros (17.7).
    let is_field = |name: &str| {
        let Some((id, field)) = name.strip_prefix("nwc/").and_then(|r| r.split_once('/')) else { return false };
        FIELD_TENSORS.iter().any(|f| f.name() == field) && id.parse::<u64>().is_ok_and(|n| ids.contains(&n) && n.to_string() == id)
    };
    for name in order {
        let accounted = match name.strip_prefix("nwc/fused/").and_then(|b| b.strip_suffix(".bias")) {
            Some(path) => fused.contains(path),
            None if name.starts_with("nwc/") => is_field(name),
            None => copied.as_ref().is_none_or(|c| c.contains(name.as_str())),
        };
        if !accounted {
            let why = if name.starts_with("nwc/") {
                "no weights entry or fused module has it (spec 17.7)"
            } else {
                "no record of nwc_rs names it (spec 17.7)"
            };
            return Err(ContainerError::Tensor { file: files[index[name].0].path.clone(), tensor: name.clone(), msg: why.into() });
        }
    }
    Ok(())
}

/// A checkpoint opened for reading: its config and its safetensors files, memory-mapped.
pub struct Checkpoint {
    pub dir: PathBuf,
    pub config: NwcConfig,
    pub files: Vec<MappedFile>,
    /// Tensor name -> (file index, tensor index in that file).
    index: HashMap<String, (usize, usize)>,
    /// Order of tensors as stored (file order, then offset order).
    pub order: Vec<String>,
    /// Files other than safetensors, the config and the index.
    pub other_files: Vec<String>,
}

impl Checkpoint {
    /// Spec 17.1: reads `nwc_config.json` and `model.safetensors` (or the shards an index lists).
    pub fn open(dir: &Path) -> Result<Checkpoint> {
        let cfg_path = dir.join(CONFIG_FILE);
        if !cfg_path.is_file() {
            if !dir.exists() {
                let source = std::fs::metadata(dir).err().unwrap_or_else(|| std::io::Error::other("missing"));
                return Err(ContainerError::Io { path: dir.to_path_buf(), source });
            }
            return Err(ContainerError::Usage(format!("{}: not an NWC checkpoint (no {CONFIG_FILE})", dir.display())));
        }
        let text = std::fs::read_to_string(&cfg_path).map_err(ContainerError::io(&cfg_path))?;
        let config: NwcConfig = serde_json::from_str(&text)
            .map_err(|e| ContainerError::Config { file: cfg_path.clone(), msg: format!("not a valid nwc_config.json: {e}") })?;
        if !READABLE_VERSIONS.contains(&config.library_version) {
            return Err(ContainerError::Unsupported {
                file: cfg_path,
                msg: format!("library_version {} (readable: 9, 10)", config.library_version),
            });
        }
        config.check(&cfg_path)?;
        let index_path = dir.join(INDEX_FILE);
        // Spec 17.1: the index maps every tensor name to the plain file name of its shard.
        let weight_map: Option<HashMap<String, String>> = if index_path.is_file() {
            let text = std::fs::read_to_string(&index_path).map_err(ContainerError::io(&index_path))?;
            let v: serde_json::Value =
                serde_json::from_str(&text).map_err(|e| ContainerError::Config { file: index_path.clone(), msg: e.to_string() })?;
            let bad = |msg: &str| ContainerError::Config { file: index_path.clone(), msg: msg.into() };
            let map = v["weight_map"].as_object().ok_or_else(|| bad("no `weight_map` object"))?;
            let map = map
                .iter()
                .map(|(t, f)| f.as_str().map(|f| (t.clone(), f.to_string())).ok_or_else(|| bad("`weight_map` values must be file names")))
                .collect::<Result<HashMap<_, _>>>()?;
            if !map.values().all(|n| is_plain_file_name(n)) {
                return Err(bad("shard names must be plain file names"));
            }
            Some(map)
        } else {
            None
        };
        let names: Vec<String> = match &weight_map {
            Some(map) => {
                let mut names: Vec<String> = map.values().cloned().collect();
                names.sort();
                names.dedup();
                names
            }
            None => vec!["model.safetensors".into()],
        };
        let files = names.iter().map(|f| MappedFile::open(&dir.join(f))).collect::<Result<Vec<_>>>()?;
        let mut index = HashMap::new();
        let mut order = Vec::new();
        for (fi, f) in files.iter().enumerate() {
            for (ti, t) in f.tensors.iter().enumerate() {
                if let Some((first, _)) = index.insert(t.name.clone(), (fi, ti)) {
                    return Err(ContainerError::Tensor {
                        file: f.path.clone(),
                        tensor: t.name.clone(),
                        msg: format!("also stored in {}", files[first].path.display()),
                    });
                }
                order.push(t.name.clone());
            }
        }
        if let Some(map) = &weight_map {
            check_index(&index_path, map, &files, &index)?;
        }
        check_accounted(&config, &files, &order, &index)?;
        let other_files =
            list_dir(dir)?.into_iter().filter(|n| !n.ends_with(".safetensors") && n != INDEX_FILE && n != CONFIG_FILE).collect();
        Ok(Checkpoint { dir: dir.to_path_buf(), config, files, index, order, other_files })
    }

    /// The stored tensor `name`: its file and where it is.
    pub fn get(&self, name: &str) -> Option<(&MappedFile, &TensorInfo)> {
        let &(fi, ti) = self.index.get(name)?;
        Some((&self.files[fi], &self.files[fi].tensors[ti]))
    }

    pub fn contains(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    /// A copy of the stored tensor `name` (small tensors, tests).
    pub fn tensor(&self, name: &str) -> Option<Tensor> {
        let (f, t) = self.get(name)?;
        Some(Tensor { name: t.name.clone(), dtype: t.dtype, shape: t.shape.clone(), data: f.bytes(t).to_vec() })
    }

    /// Hands the pages of matrix `id`'s stored fields back to the kernel (bounded memory).
    pub fn release_matrix(&self, id: u64) {
        for field in FIELD_TENSORS {
            if let Some((f, t)) = self.get(&format!("nwc/{id}/{}", field.name())) {
                f.release(t);
            }
        }
    }

    fn cfg_path(&self) -> PathBuf {
        self.dir.join(CONFIG_FILE)
    }

    /// The names of the tensors that use matrix `id` (for error messages).
    pub fn names_of(&self, id: u64) -> String {
        let mut names: Vec<String> = match &self.config.nwc_rs {
            Some(x) => x.tensors.iter().filter(|t| t.matrix == Some(id)).map(|t| t.name.clone()).collect(),
            None => self.config.modules.iter().filter(|m| m.weight == id).map(|m| m.path.clone()).collect(),
        };
        if names.is_empty() {
            names.push("unused".into());
        }
        names.join(", ")
    }

    /// The file that holds matrix `id`'s stored fields (the one holding `nwc/<id>/data`), or, when
    /// that tensor is absent, the file that should list it: the shard index, or model.safetensors.
    pub fn matrix_file(&self, id: u64) -> PathBuf {
        match self.get(&format!("nwc/{id}/data")) {
            Some((f, _)) => f.path.clone(),
            None if self.dir.join(INDEX_FILE).is_file() => self.dir.join(INDEX_FILE),
            None => self.dir.join("model.safetensors"),
        }
    }

    /// A broken rule of chapter 13 in matrix `id`, reported with the file, the matrix and the
    /// tensors that use it (spec 17.10).
    fn matrix_error(&self, id: u64, source: nwc_reference::DecodeError) -> ContainerError {
        ContainerError::Matrix { file: self.matrix_file(id), id, names: self.names_of(id), source }
    }

    /// Spec 17.7 with rule 13.3.1 (field-missing): every required field tensor of matrix `id`
    /// exists, checked for all of them (in the order of spec 16.2 step 2) before any is read.
    fn check_fields_present(&self, id: u64) -> Result<()> {
        for field in Field::REQUIRED {
            if !self.contains(&format!("nwc/{id}/{}", field.name())) {
                return Err(self.matrix_error(id, FormatError::FieldMissing { field }.into()));
            }
        }
        Ok(())
    }

    fn field(&self, id: u64, field: &str, dtypes: &[Dtype], width: usize) -> Result<&[u8]> {
        let name = format!("nwc/{id}/{field}");
        let (file, t) = self.get(&name).ok_or_else(|| ContainerError::Tensor {
            file: self.matrix_file(id),
            tensor: name.clone(),
            msg: "missing".into(),
        })?;
        if !dtypes.contains(&t.dtype) || t.shape.len() != 1 || t.len() != t.shape[0] * width {
            return Err(ContainerError::Tensor {
                file: file.path.clone(),
                tensor: name,
                msg: format!("dtype {:?} shape {:?}: expected a 1-D tensor of {:?}", t.dtype, t.shape, dtypes),
            });
        }
        file.populate(t);
        Ok(file.bytes(t))
    }

    /// Spec 17.7: the stored fields of matrix `id`, exactly as stored (slacks and all); the
    /// decoder's validation (spec 13) decides whether they are a valid matrix.
    /// Loads one matrix and decodes it with the fast decoder, which checks every rule of spec 13
    /// (a broken rule is reported with the file, the matrix id and the tensors using it, 17.10).
    pub fn decoded_matrix(&self, entry: &WeightEntry) -> Result<nwc_reference::DecodedMatrix> {
        self.decode(entry, &self.matrix(entry)?)
    }

    /// Decodes matrix `m`, loaded from `entry`, as [`Checkpoint::decoded_matrix`] does.
    pub fn decode(&self, entry: &WeightEntry, m: &EncodedMatrix) -> Result<nwc_reference::DecodedMatrix> {
        nwc_fast::decode(m).map_err(|source| self.matrix_error(entry.id, source))
    }

    /// [`Checkpoint::decode`] for a BF16 matrix, a run of whole row blocks of about `run_bytes`
    /// at a time (`nwc_fast::decode_bf16_runs`): `sink` gets the weights run by run, in order. The
    /// runs before a broken one may have been handed over when it fails.
    pub fn decode_runs(
        &self,
        entry: &WeightEntry,
        m: &EncodedMatrix,
        run_bytes: usize,
        sink: impl FnMut(&[u16]) -> Result<()>,
    ) -> Result<()> {
        let matrix_error = |source| self.matrix_error(entry.id, source);
        match nwc_fast::decode_bf16_runs(m, &nwc_reference::Limits::default(), run_bytes, sink) {
            Ok(()) => Ok(()),
            Err(nwc_fast::RunError::Sink(e)) => Err(e),
            Err(nwc_fast::RunError::Decode(source)) => Err(matrix_error(source)),
            Err(nwc_fast::RunError::NotBf16) => {
                Err(ContainerError::Unsupported { file: self.cfg_path(), msg: format!("weights entry {}: not a BF16 matrix", entry.id) })
            }
        }
    }

    pub fn matrix(&self, entry: &WeightEntry) -> Result<EncodedMatrix> {
        let id = entry.id;
        let mode = entry_mode(entry).ok_or_else(|| ContainerError::Unsupported {
            file: self.cfg_path(),
            msg: format!("weights entry {id}: elem `{}` layout {}", entry.elem, entry.layout),
        })?;
        if entry.block != 4096 {
            return Err(ContainerError::Unsupported { file: self.cfg_path(), msg: format!("weights entry {id}: block {}", entry.block) });
        }
        let shape = Shape::new(entry.out, entry.inp);
        let u32s = |t: &[u8]| t.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect::<Vec<u32>>();
        let bytes = [Dtype::U8, Dtype::I8];
        let words = [Dtype::I32, Dtype::U32];
        self.check_fields_present(id)?;
        let data = self.field(id, "data", &bytes, 1)?.to_vec();
        let bases = u32s(self.field(id, "bases", &words, 4)?);
        let hdr = self.field(id, "hdr", &bytes, 1)?.to_vec();
        let lut = u32s(self.field(id, "lut", &words, 4)?);
        let low = self.field(id, "low", &bytes, 1)?.to_vec();
        // An absent scale is an unscaled FP8 matrix (spec 11.6); a BF16 matrix with a scale tensor
        // breaks rule 13.3 (field-size), which the decoder reports: it is never dropped silently.
        let scale = match self.contains(&format!("nwc/{id}/scale")) {
            true => Some(
                self.field(id, "scale", &[Dtype::F32], 4)?.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
            ),
            false => None,
        };
        Ok(EncodedMatrix { mode, shape, data, bases, hdr, lut, low, scale })
    }

    /// Checks that every weights entry has its tensors and ids are unique; returns the entries.
    pub fn entries(&self) -> Result<&[WeightEntry]> {
        // Unique ids: `NwcConfig::check` at open.
        Ok(&self.config.weights)
    }
}
