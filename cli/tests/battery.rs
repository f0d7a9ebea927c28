//! Invalid-input battery for `nwc decode` and `nwc info` (issue 5, spec 16): every stored file of
//! every mode zero-length, truncated, extended, replaced by random bytes; random directories;
//! declared shapes at and just past the format's and the decoder's limits. Whatever the damage:
//! exit 0 or 3 (never a crash), a named error on stderr, no output file after a failure, no
//! temporary files left behind, and every run within a fixed time.

mod common;

use nwc_reference::Shape;
use nwc_testkit::gen::{le_bytes, Dist, Generator};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Generous bound for one run on a loaded CI machine; a decode of these inputs takes milliseconds,
/// and a decoder that allocated or looped by the declared shape would take far longer.
const RUN_TIME_LIMIT: Duration = Duration::from_secs(20);

const FILES: [&str; 8] = [
    "data.bin",
    "bases.bin",
    "hdr.bin",
    "lut.bin",
    "low.bin",
    "scale.bin",
    "exp_of_rank.bin",
    "summary.json",
];

struct Run {
    code: i32,
    stderr: String,
}

fn nwc(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Run {
    let start = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_nwc"))
        .args(args.iter().map(|a| a.as_ref()))
        .output()
        .expect("spawn nwc");
    let took = start.elapsed();
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(
        took < RUN_TIME_LIMIT,
        "nwc took {took:?}; stderr: {}",
        run.stderr
    );
    run
}

/// A small deterministic byte stream (xorshift64*), so the battery needs no extra dependency.
struct Noise(u64);

impl Noise {
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n)
            .map(|_| {
                self.0 ^= self.0 >> 12;
                self.0 ^= self.0 << 25;
                self.0 ^= self.0 >> 27;
                (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
            })
            .collect()
    }
}

/// Encodes a 17 x 530 matrix (two row blocks in layout 0, two column blocks) with the CLI.
fn encoded_dir(tmp: &Path, elem: &str, layout: u8, quantize: bool) -> PathBuf {
    let shape = Shape::new(17, 530);
    let mut gen = Generator::new(5 + u64::from(layout));
    let input = if elem == "bf16" || quantize {
        le_bytes(&gen.bf16(Dist::Gaussian { log2_sigma: -6 }, shape))
    } else {
        gen.fp8(Dist::Fp8Quantized, shape)
    };
    let name = format!("{elem}-l{layout}{}", if quantize { "-q" } else { "" });
    let raw = tmp.join(format!("{name}.raw"));
    fs::write(&raw, input).unwrap();
    let dir = tmp.join(&name);
    let extra: &[&str] = if quantize {
        &["--quantize-from-bf16"]
    } else {
        &[]
    };
    common::encode_ok(elem, layout, shape, &raw, &dir, extra);
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// Decode and info of `dir`: exit 0 or 3; on 3 a one-line named error, no output, no leftovers.
/// Returns whether decode failed.
fn check_outcome(dir: &Path, what: &str, weights_bytes: u64) -> bool {
    let out = dir.with_extension("out");
    let _ = fs::remove_file(&out);
    let r = nwc(&[&"decode", &dir, &out]);
    assert!(
        r.code == 0 || r.code == 3,
        "{what}: decode exit {}: {}",
        r.code,
        r.stderr
    );
    assert!(!r.stderr.contains("panicked"), "{what}: {}", r.stderr);
    if r.code == 3 {
        assert!(r.stderr.starts_with("error: "), "{what}: {}", r.stderr);
        // Named: the file at fault, and for a broken validity rule its name and clause.
        assert!(
            FILES.iter().any(|f| r.stderr.contains(f)),
            "{what}: no file named: {}",
            r.stderr
        );
        let rule = nwc_reference::FormatError::RULES
            .iter()
            .find(|(name, _)| r.stderr.contains(name));
        if let Some((name, clause)) = rule {
            assert!(
                r.stderr.contains(&format!("{name} (spec {clause})")),
                "{what}: {}",
                r.stderr
            );
        }
        assert!(
            !out.exists(),
            "{what}: a failed decode left {}",
            out.display()
        );
    } else {
        assert_eq!(
            fs::metadata(&out).unwrap().len(),
            weights_bytes,
            "{what}: output size"
        );
    }
    let parent = out.parent().unwrap();
    let leftovers: Vec<_> = fs::read_dir(parent)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("nwc-partial"))
        .collect();
    assert!(
        leftovers.is_empty(),
        "{what}: temporary files left: {leftovers:?}"
    );
    let info = nwc(&[&"info", &dir]);
    assert!(
        info.code == 0 || info.code == 3,
        "{what}: info exit {}: {}",
        info.code,
        info.stderr
    );
    assert!(!info.stderr.contains("panicked"), "{what}: {}", info.stderr);
    r.code == 3
}

#[test]
fn every_file_damaged_every_way() {
    let tmp = tempfile::tempdir().unwrap();
    let mut noise = Noise(0x9E37_79B9_7F4A_7C15);
    let dirs = [
        (encoded_dir(tmp.path(), "bf16", 0, false), 2),
        (encoded_dir(tmp.path(), "bf16", 1, false), 2),
        (encoded_dir(tmp.path(), "fp8", 0, false), 1),
        (encoded_dir(tmp.path(), "fp8", 1, true), 1),
    ];
    let mut case = 0;
    for (dir, bytes_per_weight) in &dirs {
        let weights_bytes = 17 * 530 * bytes_per_weight;
        assert!(
            !check_outcome(dir, "undamaged", weights_bytes),
            "{} must decode",
            dir.display()
        );
        for file in FILES {
            let Ok(good) = fs::read(dir.join(file)) else {
                continue;
            };
            let damages: Vec<(&str, Vec<u8>)> = vec![
                ("zero-length", Vec::new()),
                (
                    "truncated by one byte",
                    good[..good.len().saturating_sub(1)].to_vec(),
                ),
                ("one byte longer", [good.clone(), vec![0x5A]].concat()),
                ("random bytes, same length", noise.bytes(good.len())),
                (
                    "random bytes, twice as long",
                    noise.bytes(2 * good.len() + 3),
                ),
                ("first byte flipped", {
                    let mut b = good.clone();
                    if let Some(x) = b.first_mut() {
                        *x ^= 0x80;
                    }
                    b
                }),
            ];
            for (how, bytes) in damages {
                case += 1;
                let damaged = tmp.path().join(format!("case{case}"));
                copy_dir(dir, &damaged);
                fs::write(damaged.join(file), &bytes).unwrap();
                let what = format!("{} {file} {how}", dir.display());
                let failed = check_outcome(&damaged, &what, weights_bytes);
                // Damage that a decoder cannot miss: a field of the wrong size or an empty one.
                let must_fail =
                    matches!(file, "bases.bin" | "hdr.bin" | "lut.bin" | "summary.json")
                        && how != "first byte flipped";
                assert!(failed || !must_fail, "{what}: accepted");
            }
        }
    }
    assert!(
        case >= 4 * 6 * 6,
        "only {case} damaged directories were tried"
    );
}

#[test]
fn directories_of_random_files() {
    let tmp = tempfile::tempdir().unwrap();
    let mut noise = Noise(42);
    for i in 0..12 {
        let dir = tmp.path().join(format!("random{i}"));
        fs::create_dir_all(&dir).unwrap();
        for file in FILES {
            let len = usize::from(noise.bytes(1)[0]) * (i + 1);
            fs::write(dir.join(file), noise.bytes(len)).unwrap();
        }
        assert!(
            check_outcome(&dir, &format!("random directory {i}"), 0),
            "random directory {i} decoded"
        );
    }
}

/// Declared shapes at and just past the hard limits (spec 3.2) and the default weight limit
/// (2^34, spec 16.4), over the files of a small matrix: refused quickly with the right name,
/// without allocating anything the size of the declared shape.
#[test]
fn shapes_at_and_past_the_limits() {
    let tmp = tempfile::tempdir().unwrap();
    let good = encoded_dir(tmp.path(), "bf16", 0, false);
    let cases: [(u64, u64, &str); 8] = [
        (1 << 31, 1, "field-size"),          // M at the hard limit
        ((1 << 31) + 1, 1, "shape-range"),   // past it
        (1, (1 << 31) - 512, "field-size"),  // K at the hard limit
        (1, (1 << 31) - 511, "shape-range"), // past it
        (1 << 20, 1 << 14, "field-size"),    // M*K at the default weight limit
        (1 << 20, (1 << 14) + 1, "limit"),   // past it
        (1 << 20, 1 << 20, "limit"),         // M*K = 2^40, the hard limit
        (1 << 21, 1 << 20, "shape-range"),   // past it
    ];
    for (i, (rows, cols, expected)) in cases.into_iter().enumerate() {
        let dir = tmp.path().join(format!("limits{i}"));
        copy_dir(&good, &dir);
        let path = dir.join("summary.json");
        let mut json: serde_json::Value =
            serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        json["M"] = serde_json::json!(rows);
        json["K"] = serde_json::json!(cols);
        fs::write(&path, json.to_string()).unwrap();
        let out = dir.with_extension("out");
        let r = nwc(&[&"decode", &dir, &out]);
        assert_eq!(r.code, 3, "{rows}x{cols}: {}", r.stderr);
        assert!(
            r.stderr.contains(expected),
            "{rows}x{cols}: expected {expected}: {}",
            r.stderr
        );
        assert!(!out.exists());
    }
}
