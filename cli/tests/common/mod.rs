//! Helpers shared by the CLI's integration tests: run the built `nwc` binary, make inputs.
#![allow(dead_code)] // each test file uses a different subset

use nwc_reference::Shape;
use nwc_testkit::gen::{le_bytes, Dist, Generator};
use std::path::{Path, PathBuf};
use std::process::Command;

/// What one run of `nwc` gave.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `nwc` with `args`; a crash by signal shows up as code -1.
pub fn nwc(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_nwc")).args(args.iter().map(|a| a.as_ref())).output().expect("spawn nwc");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Asserts exit status 3 with an error line that names `rule` (and the file, when given).
pub fn assert_invalid(run: &Run, rule: &str, file: Option<&str>) {
    assert_eq!(run.code, 3, "expected exit 3 for {rule}; stderr: {}", run.stderr);
    assert!(run.stderr.starts_with("error: "), "stderr: {}", run.stderr);
    assert!(run.stderr.contains(rule), "stderr should name {rule}: {}", run.stderr);
    if let Some(f) = file {
        assert!(run.stderr.contains(f), "stderr should name file {f}: {}", run.stderr);
    }
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}

/// A deterministic BF16 matrix as little-endian bytes.
pub fn bf16_input(seed: u64, dist: Dist, shape: Shape) -> Vec<u8> {
    le_bytes(&Generator::new(seed).bf16(dist, shape))
}

/// A deterministic fp8 matrix (no NaN).
pub fn fp8_input(seed: u64, dist: Dist, shape: Shape) -> Vec<u8> {
    Generator::new(seed).fp8(dist, shape)
}

/// Writes `bytes` to `dir/name` and returns the path.
pub fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).expect("write test file");
    p
}

/// Encodes `input` into `out` with the CLI, asserting success.
pub fn encode_ok(elem: &str, layout: u8, shape: Shape, input: &Path, out: &Path, extra: &[&str]) {
    let (l, m, k) = (layout.to_string(), shape.rows.to_string(), shape.cols.to_string());
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"encode", &"--elem", &elem, &"--layout", &l, &"--rows", &m, &"--cols", &k];
    for e in extra {
        args.push(e);
    }
    args.push(&input);
    args.push(&out);
    let r = nwc(&args);
    assert_eq!(r.code, 0, "encode failed: {}", r.stderr);
}
