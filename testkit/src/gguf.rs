//! A small, bounds-checked reader for GGUF version 3 files: just enough to take the weight
//! matrices out of the SmolLM2 file (`real_weights::SMOLLM2`). It reads the header, skips the
//! metadata (keeping the few scalar values asked for), reads the tensor table and dequantizes F32,
//! F16, Q4_1 and Q8_0 tensors to f32, then to BF16 (round to nearest, ties to even).
//!
//! GGUF layout (little-endian): magic `GGUF`, u32 version, u64 tensor count, u64 metadata count;
//! metadata entries (string key, u32 value type, value); tensor infos (string name, u32 number of
//! dimensions, u64 per dimension with the fastest-varying first, u32 ggml type, u64 offset); then,
//! at the next multiple of `general.alignment` (default 32), the tensor data, each tensor at its
//! offset from there. Strings are a u64 length and UTF-8 bytes.
//!
//! Every read is checked: a malformed file gives a [`GgufError`] naming what was being read and
//! the byte offset, never a panic.

use crate::real_weights::NamedMatrix;
use nwc_reference::Shape;
use std::collections::HashMap;
use std::path::Path;

/// A malformed or unsupported GGUF file: what was being read, at which byte offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GgufError {
    pub offset: u64,
    pub what: String,
}

impl std::fmt::Display for GgufError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "gguf: {} (at byte {})", self.what, self.offset)
    }
}

impl std::error::Error for GgufError {}

type Result<T> = std::result::Result<T, GgufError>;

/// ggml element types this reader dequantizes.
pub const GGML_F32: u32 = 0;
pub const GGML_F16: u32 = 1;
pub const GGML_Q4_1: u32 = 3;
pub const GGML_Q8_0: u32 = 8;

/// Metadata value types of GGUF v3.
const META_STRING: u32 = 8;
const META_ARRAY: u32 = 9;

/// Limits that keep a hostile header from asking for absurd allocations.
const MAX_DIMS: u32 = 4;
const MAX_COUNT: u64 = 1 << 24;

/// One entry of the tensor table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorInfo {
    pub name: String,
    /// Dimensions, fastest-varying first: a matrix is [cols, rows].
    pub dims: Vec<u64>,
    pub ggml_type: u32,
    /// Absolute byte offset of its data in the file.
    pub start: u64,
}

/// A parsed GGUF file: its bytes, the tensor table and the scalar metadata values.
pub struct Gguf {
    pub version: u32,
    pub tensors: Vec<TensorInfo>,
    /// Integer metadata (u8 ... u64, i8 ... i64, bool), by key; other values are skipped.
    pub ints: HashMap<String, i128>,
    /// String metadata, by key.
    pub strings: HashMap<String, String>,
    bytes: Vec<u8>,
}

impl std::fmt::Debug for Gguf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Gguf(v{}, {} tensors, {} bytes)", self.version, self.tensors.len(), self.bytes.len())
    }
}

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn fail<T>(&self, what: impl Into<String>) -> Result<T> {
        Err(GgufError { offset: self.at as u64, what: what.into() })
    }

    fn take(&mut self, n: u64, what: &str) -> Result<&[u8]> {
        let left = (self.bytes.len() - self.at) as u64;
        if n > left {
            return self.fail(format!("{what}: needs {n} bytes, {left} left (truncated file)"));
        }
        let s = &self.bytes[self.at..self.at + n as usize];
        self.at += n as usize;
        Ok(s)
    }

    fn u32(&mut self, what: &str) -> Result<u32> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self, what: &str) -> Result<u64> {
        let b = self.take(8, what)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    fn string(&mut self, what: &str) -> Result<String> {
        let n = self.u64(what)?;
        let at = self.at;
        let b = self.take(n, what)?;
        match std::str::from_utf8(b) {
            Ok(s) => Ok(s.to_string()),
            Err(_) => Err(GgufError { offset: at as u64, what: format!("{what}: not UTF-8") }),
        }
    }

    /// Reads a scalar of metadata type `t`; `None` for strings and arrays.
    fn scalar(&mut self, t: u32, what: &str) -> Result<Option<i128>> {
        let size = match t {
            0 | 1 | 7 => 1,
            2 | 3 => 2,
            4..=6 => 4,
            10..=12 => 8,
            META_STRING | META_ARRAY => return Ok(None),
            _ => return self.fail(format!("{what}: unknown metadata value type {t}")),
        };
        let b = self.take(size, what)?;
        let mut w = [0u8; 8];
        w[..b.len()].copy_from_slice(b);
        let raw = u64::from_le_bytes(w);
        // Signed types are sign-extended; floats keep their bits (never asked for as integers).
        Ok(Some(match t {
            1 => i128::from(raw as u8 as i8),
            3 => i128::from(raw as u16 as i16),
            5 => i128::from(raw as u32 as i32),
            11 => i128::from(raw as i64),
            _ => i128::from(raw),
        }))
    }

    /// Skips one value of type `t` (arrays may nest).
    fn skip_value(&mut self, t: u32, what: &str, depth: u32) -> Result<()> {
        match t {
            META_STRING => self.string(what).map(drop),
            META_ARRAY => {
                if depth > 4 {
                    return self.fail(format!("{what}: arrays nested deeper than 4"));
                }
                let et = self.u32(what)?;
                let n = self.u64(what)?;
                for _ in 0..n {
                    self.skip_value(et, what, depth + 1)?;
                }
                Ok(())
            }
            _ => self.scalar(t, what).map(drop),
        }
    }
}

/// Bytes per block and weights per block of a ggml type.
fn block_size(ggml_type: u32) -> Option<(u64, u64)> {
    match ggml_type {
        GGML_F32 => Some((4, 1)),
        GGML_F16 => Some((2, 1)),
        GGML_Q4_1 => Some((20, 32)),
        GGML_Q8_0 => Some((34, 32)),
        _ => None,
    }
}

impl Gguf {
    pub fn open(path: &Path) -> std::result::Result<Gguf, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("read {}: {e}", path.display()))?;
        Gguf::parse(bytes).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn parse(bytes: Vec<u8>) -> Result<Gguf> {
        let mut c = Cursor { bytes: &bytes, at: 0 };
        if c.take(4, "magic")? != b"GGUF" {
            return Err(GgufError { offset: 0, what: "magic is not GGUF".into() });
        }
        let version = c.u32("version")?;
        if version != 3 {
            return Err(GgufError { offset: 4, what: format!("version {version}, only 3 is read") });
        }
        let n_tensors = c.u64("tensor count")?;
        let n_meta = c.u64("metadata count")?;
        if n_tensors > MAX_COUNT || n_meta > MAX_COUNT {
            return c.fail(format!("{n_tensors} tensors / {n_meta} metadata entries: over the reader's limit {MAX_COUNT}"));
        }
        let (mut ints, mut strings) = (HashMap::new(), HashMap::new());
        for _ in 0..n_meta {
            let key = c.string("metadata key")?;
            let t = c.u32(&key)?;
            if t == META_STRING {
                strings.insert(key.clone(), c.string(&key)?);
            } else if t == META_ARRAY {
                c.skip_value(t, &key, 0)?;
            } else if let Some(v) = c.scalar(t, &key)? {
                ints.insert(key, v);
            }
        }
        let mut infos = Vec::new();
        for _ in 0..n_tensors {
            let name = c.string("tensor name")?;
            let nd = c.u32(&name)?;
            if nd == 0 || nd > MAX_DIMS {
                return c.fail(format!("tensor {name}: {nd} dimensions (1 to {MAX_DIMS} read)"));
            }
            let dims = (0..nd).map(|_| c.u64(&name)).collect::<Result<Vec<u64>>>()?;
            let ggml_type = c.u32(&name)?;
            let offset = c.u64(&name)?;
            infos.push((name, dims, ggml_type, offset));
        }
        let align = match ints.get("general.alignment") {
            None => 32,
            Some(&a) if a > 0 && a <= 1 << 16 && (a & (a - 1)) == 0 => a as u64,
            Some(a) => return c.fail(format!("general.alignment {a} is not a power of two up to 65536")),
        };
        let data_start = (c.at as u64).div_ceil(align) * align;
        let mut tensors = Vec::new();
        for (name, dims, ggml_type, offset) in infos {
            let start = data_start.checked_add(offset).filter(|s| s % align == 0).ok_or_else(|| GgufError {
                offset: data_start,
                what: format!("tensor {name}: data offset {offset} is not aligned to {align}"),
            })?;
            let info = TensorInfo { name, dims, ggml_type, start };
            // Types we cannot size are kept in the table; reading them fails with a named error.
            if let Some(len) = info.byte_len()? {
                if start.checked_add(len).is_none_or(|end| end > bytes.len() as u64) {
                    return Err(GgufError {
                        offset: start,
                        what: format!("tensor {}: {len} bytes of data run past the end of the file ({} bytes)", info.name, bytes.len()),
                    });
                }
            }
            tensors.push(info);
        }
        Ok(Gguf { version, tensors, ints, strings, bytes })
    }

    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// The tensor `name` dequantized to f32, in storage order (row-major for a matrix).
    pub fn f32_values(&self, name: &str) -> Result<Vec<f32>> {
        let t = self.tensor(name).ok_or_else(|| GgufError { offset: 0, what: format!("no tensor named {name}") })?;
        let len = t.byte_len()?.ok_or_else(|| GgufError {
            offset: t.start,
            what: format!("tensor {name}: ggml type {} is not read (F32, F16, Q4_1, Q8_0 are)", t.ggml_type),
        })?;
        let raw = &self.bytes[t.start as usize..(t.start + len) as usize];
        let f16 = |b: &[u8]| half::f16::from_le_bytes([b[0], b[1]]).to_f32();
        let mut out = Vec::with_capacity(t.elements() as usize);
        match t.ggml_type {
            GGML_F32 => out.extend(raw.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
            GGML_F16 => out.extend(raw.chunks_exact(2).map(f16)),
            GGML_Q4_1 => {
                // 32 weights: f16 scale d, f16 minimum m, 16 bytes of nibbles; weight j < 16 is the
                // low nibble of byte j, weight j + 16 its high nibble; value = nibble * d + m.
                for block in raw.chunks_exact(20) {
                    let (d, m, q) = (f16(&block[0..2]), f16(&block[2..4]), &block[4..20]);
                    out.extend(q.iter().map(|&b| f32::from(b & 0x0F) * d + m));
                    out.extend(q.iter().map(|&b| f32::from(b >> 4) * d + m));
                }
            }
            GGML_Q8_0 => {
                // 32 weights: f16 scale d and 32 signed bytes; value = q * d.
                for block in raw.chunks_exact(34) {
                    let d = f16(&block[0..2]);
                    out.extend(block[2..34].iter().map(|&q| f32::from(q as i8) * d));
                }
            }
            _ => unreachable!("byte_len accepted only the types above"),
        }
        Ok(out)
    }

    /// A 2-D tensor as a BF16 matrix (rows = `dims[1]`, cols = `dims[0]`), rounded to nearest even.
    pub fn bf16_matrix(&self, name: &str) -> Result<NamedMatrix> {
        let t = self.tensor(name).ok_or_else(|| GgufError { offset: 0, what: format!("no tensor named {name}") })?;
        if t.dims.len() != 2 {
            return Err(GgufError { offset: t.start, what: format!("tensor {name} has {} dimensions, not 2", t.dims.len()) });
        }
        let shape = Shape::new(t.dims[1], t.dims[0]);
        let words = self.f32_values(name)?.into_iter().map(|v| half::bf16::from_f32(v).to_bits()).collect();
        Ok(NamedMatrix { name: name.to_string(), shape, words })
    }
}

impl TensorInfo {
    /// Number of elements (checked when the table is parsed).
    pub fn elements(&self) -> u64 {
        self.dims.iter().product()
    }

    /// Bytes of data, `None` for a type this reader does not size.
    fn byte_len(&self) -> Result<Option<u64>> {
        let err = |what: String| GgufError { offset: self.start, what: format!("tensor {}: {what}", self.name) };
        let n = self
            .dims
            .iter()
            .try_fold(1u64, |a, &d| a.checked_mul(d))
            .filter(|&n| n > 0 && n <= 1 << 40)
            .ok_or_else(|| err(format!("dimensions {:?}: empty or over 2^40 elements", self.dims)))?;
        let Some((bytes, per)) = block_size(self.ggml_type) else {
            return Ok(None);
        };
        // Blocks never straddle rows: the fastest dimension is a whole number of blocks.
        if self.dims[0] % per != 0 {
            return Err(err(format!("first dimension {} is not a multiple of the block of {per} weights", self.dims[0])));
        }
        Ok(Some(n / per * bytes))
    }
}

#[cfg(test)]
pub(crate) mod tests;
