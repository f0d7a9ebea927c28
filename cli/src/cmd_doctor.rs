//! `nwc doctor`: can this machine run the GPU path? One line per check, with the fix when it
//! fails; the CPU codec is checked too (a tiny encode and decode), so a machine without a GPU
//! still learns that the CPU path works. Exit 0 only when the GPU path is usable.
//!
//! The GPU calls are kept to nwc-cuda's entry points (`Gpu::probe`, `Gpu::get`, which compiles
//! the kernels with NVRTC, and the conformance sweep), all in this file.

use crate::error::CliError;
use nwc_reference::{ElemType, Layout, Mode, Shape, Weights};

/// Exit status of `doctor` when the GPU path is not usable (the CPU checks may still pass).
pub const EXIT_NO_GPU: u8 = 5;

fn line(ok: bool, what: &str, detail: &str) {
    println!("[{}] {what}: {detail}", if ok { " ok " } else { "FAIL" });
}

/// A tiny encode with nwc-fast, checked against the reference encoder byte for byte and decoded
/// back by the reference decoder, in every mode.
fn cpu_codec() -> Result<String, String> {
    let shape = Shape::new(40, 72);
    let words: Vec<u16> = (0..shape.weights()).map(|i| 0x3C00u16.wrapping_add((i * 7919 % 700) as u16) ^ ((i as u16 & 1) << 15)).collect();
    let fp8: Vec<u8> = (0..shape.weights()).map(|i| (i * 37 % 256) as u8 & 0xF7).collect();
    for elem in [ElemType::Bf16, ElemType::Fp8E4m3] {
        for layout in [Layout::Rows8, Layout::Fragment16] {
            let mode = Mode { elem, layout };
            let w = match elem {
                ElemType::Bf16 => Weights::Bf16(&words),
                ElemType::Fp8E4m3 => Weights::Fp8(&fp8),
            };
            let fast = nwc_fast::encode(mode, shape, w).map_err(|e| format!("{mode}: encode: {e}"))?;
            let reference = nwc_reference::encode(mode, shape, w).map_err(|e| format!("{mode}: reference encode: {e}"))?;
            if fast.matrix != reference.matrix {
                return Err(format!("{mode}: nwc-fast and the reference encoder differ"));
            }
            let d = nwc_fast::decode(&fast.matrix).map_err(|e| format!("{mode}: decode: {e}"))?;
            let same = match &d.elements {
                nwc_reference::Elements::Bf16(got) => got == &words,
                nwc_reference::Elements::Fp8(got) => got == &fp8,
            };
            if !same {
                return Err(format!("{mode}: decoded weights differ from the input"));
            }
        }
    }
    Ok(format!("encode + decode of a {shape} matrix in all 4 modes, bit-exact with the reference"))
}

pub fn run() -> Result<(), CliError> {
    let cpu = cpu_codec();
    match &cpu {
        Ok(d) => line(true, "CPU codec", d),
        Err(e) => line(false, "CPU codec", &format!("{e} (fix: this is a bug; please report it with `nwc --version`)")),
    }
    let gpu_ok = gpu_checks();
    if cpu.is_err() {
        return Err(CliError { exit: crate::error::EXIT_INVALID, message: "the CPU codec check failed".into(), file: None });
    }
    if !gpu_ok {
        return Err(CliError { exit: EXIT_NO_GPU, message: "the GPU path is not usable here (the CPU path is)".into(), file: None });
    }
    println!("the GPU path is usable");
    Ok(())
}

fn gpu_checks() -> bool {
    let devices = match nwc_cuda::Gpu::probe() {
        Ok(n) => {
            line(true, "CUDA driver", &format!("loaded; {n} device(s)"));
            n
        }
        Err(why) => {
            line(false, "CUDA driver", &format!("{why}: no GPU path on this machine (fix: install the NVIDIA driver so that libcuda.so.1 loads and `nvidia-smi` lists a GPU)"));
            return false;
        }
    };
    let gpu = match nwc_cuda::Gpu::get(0) {
        Ok(g) => g,
        Err(nwc_cuda::GpuError::Compile(log)) => {
            line(
                false,
                "NVRTC",
                &format!("{log} (fix: install the CUDA runtime's NVRTC, libnvrtc.so.13 or newer, and put its folder on LD_LIBRARY_PATH)"),
            );
            return false;
        }
        Err(e) => {
            line(
                false,
                "GPU 0",
                &format!("{e} (fix: check `nvidia-smi`; the device may be in use, in exclusive mode or need a driver update)"),
            );
            return false;
        }
    };
    line(true, "GPU 0", &format!("{} ({}, {} SMs; {devices} device(s))", gpu.name, gpu.arch, gpu.sm_count));
    line(true, "NVRTC", &format!("kernels compiled for {}", gpu.arch));
    let tally = nwc_conformance::gpu::sweep::run_sweep(&gpu, 15, 8, 96);
    if tally.failed == 0 && tally.passed > 0 {
        line(true, "GPU conformance", &format!("{} (8 random matrices, all modes, bit-exact with the reference)", tally.line()));
        true
    } else {
        let first = tally.failures.first().cloned().unwrap_or_default();
        line(
            false,
            "GPU conformance",
            &format!(
                "{}; first: {first} (fix: update the driver; if it persists, report it with `nwc --version` and this line)",
                tally.line()
            ),
        );
        false
    }
}
