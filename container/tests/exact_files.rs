//! Spec 17.12: decompression gives back every original file byte for byte: hand-written
//! headers (spaces, newlines, own key and tensor order, odd padding), sharded models with their
//! index text, and files whose header is not in the order of the data.

mod common;

use common::*;
use nwc_container::{compress, decompress, verify, CompressOptions};
use nwc_testkit::gen::{Dist, Generator};
use sha2::{Digest, Sha256};
use std::path::Path;

fn sha(path: &Path) -> Vec<u8> {
    Sha256::digest(std::fs::read(path).unwrap()).to_vec()
}

/// A safetensors file written by hand: `header` is used as is; tensors are laid out in `order`.
fn hand_written(
    path: &Path,
    header_of: impl Fn(&[(String, usize, usize)]) -> String,
    tensors: &[(&str, &str, Vec<usize>, Vec<u8>)],
    order: &[usize],
) {
    let mut at = 0;
    let mut spans = vec![(String::new(), 0, 0); tensors.len()];
    for &i in order {
        let len = tensors[i].3.len();
        spans[i] = (tensors[i].0.to_string(), at, at + len);
        at += len;
    }
    let header = header_of(&spans);
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header.as_bytes());
    for &i in order {
        bytes.extend_from_slice(&tensors[i].3);
    }
    std::fs::write(path, bytes).unwrap();
}

fn round_trip(orig: &Path, opts: &CompressOptions) {
    let tmp = tempfile::tempdir().unwrap();
    let (ck, out) = (tmp.path().join("ck"), tmp.path().join("out"));
    compress(orig, &ck, opts, &no_progress).unwrap();
    decompress(&ck, &out, &no_progress).unwrap();
    let files: Vec<std::path::PathBuf> =
        if orig.is_file() { vec![orig.to_path_buf()] } else { std::fs::read_dir(orig).unwrap().map(|e| e.unwrap().path()).collect() };
    let mut names: Vec<String> = std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    let mut want: Vec<String> = files.iter().map(|f| f.file_name().unwrap().to_string_lossy().into_owned()).collect();
    want.sort();
    assert_eq!(names, want, "the same files");
    for f in &files {
        let got = out.join(f.file_name().unwrap());
        assert_eq!(sha(&got), sha(f), "{} differs", f.display());
    }
    // spec 17.13: verifying against the original also compares every file by SHA-256.
    let report = verify(&ck, Some(orig), &no_progress).unwrap();
    assert!(report.mismatches.is_empty(), "{:?}", report.mismatches);
    assert!(!report.files.is_empty() && report.files.iter().all(|c| c.identical()), "{:?}", report.files);
}

fn bf16(gen: &mut Generator, rows: usize, cols: usize) -> Vec<u8> {
    bf16_tensor(gen, "x", rows, cols, Dist::Gaussian { log2_sigma: -6 }).data
}

#[test]
fn hand_written_header_with_spaces_and_own_order() {
    let tmp = tempfile::tempdir().unwrap();
    let mut gen = Generator::new(5);
    let tensors = vec![
        ("b.weight", "BF16", vec![24, 40], bf16(&mut gen, 24, 40)),
        ("a.bias", "F32", vec![3], vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]),
        ("c.weight", "BF16", vec![16, 33], bf16(&mut gen, 16, 33)),
        ("empty", "F32", vec![0], vec![]),
    ];
    let path = tmp.path().join("hand.safetensors");
    // Data order c, a, b; header keys in yet another order, with spaces, a newline, metadata
    // last and odd trailing padding.
    hand_written(
        &path,
        |s| {
            let e = |i: usize, t: &(&str, &str, Vec<usize>, Vec<u8>)| {
                format!("\"{}\" : {{ \"data_offsets\" : [ {} , {} ], \"dtype\": \"{}\", \"shape\": {:?} }}", t.0, s[i].1, s[i].2, t.1, t.2)
            };
            format!(
                "{{ {},\n  {}, {}, {}, \"__metadata__\": {{\"z\": \"1\", \"a\": \"2\"}} }}   ",
                e(0, &tensors[0]),
                e(3, &tensors[3]),
                e(1, &tensors[1]),
                e(2, &tensors[2])
            )
        },
        &tensors,
        &[2, 3, 1, 0],
    );
    round_trip(&path, &CompressOptions::default());
}

#[test]
fn sharded_model_with_its_index_text() {
    let tmp = tempfile::tempdir().unwrap();
    let orig = tmp.path().join("orig");
    sharded_model(&orig);
    // An index with its own formatting and key order.
    let index = orig.join("model.safetensors.index.json");
    let text = std::fs::read_to_string(&index).unwrap().replace("  ", "\t");
    std::fs::write(&index, format!("{text}\n\n")).unwrap();
    round_trip(&orig, &CompressOptions::default());
    // Sharded checkpoints too.
    round_trip(&orig, &CompressOptions { shard_bytes: Some(10_000), ..Default::default() });
}

#[test]
fn canonical_library_files_round_trip() {
    // Files as the safetensors library writes them (sorted by dtype, then name; 8-byte padding).
    let tmp = tempfile::tempdir().unwrap();
    let orig = tmp.path().join("m.safetensors");
    let mut gen = Generator::new(9);
    let t = [bf16_tensor(&mut gen, "z.weight", 40, 64, Dist::HeavyTail), f32_tensor(&mut gen, "a.weight", vec![5, 7])];
    nwc_container::model::write_safetensors(&orig, &t.iter().collect::<Vec<_>>(), None).unwrap();
    round_trip(&orig, &CompressOptions::default());
}

#[test]
fn a_changed_recorded_header_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let orig = tmp.path().join("m.safetensors");
    let mut gen = Generator::new(3);
    let t = [bf16_tensor(&mut gen, "w", 16, 32, Dist::HeavyTail)];
    nwc_container::model::write_safetensors(&orig, &t.iter().collect::<Vec<_>>(), None).unwrap();
    let ck = tmp.path().join("ck");
    compress(&orig, &ck, &CompressOptions::default(), &no_progress).unwrap();
    let cfg = ck.join("nwc_config.json");
    let text = std::fs::read_to_string(&cfg).unwrap().replace("[16,32]", "[32,16]");
    std::fs::write(&cfg, text).unwrap();
    let err = decompress(&ck, &tmp.path().join("out"), &no_progress).unwrap_err().to_string();
    assert!(err.contains("header entry `w` differs from its record"), "{err}");
}

/// Stored tensors start at a multiple of their element size, as in the safetensors library's own
/// layout (readers may map them without a copy): a copied F32 tensor of 13 values must not
/// misalign the matrix fields after it (spec 17.14).
#[test]
fn stored_tensors_stay_aligned() {
    let tmp = tempfile::tempdir().unwrap();
    let orig = tmp.path().join("orig");
    sharded_model(&orig);
    for shard_bytes in [None, Some(10_000)] {
        let ck = tmp.path().join(format!("ck{}", shard_bytes.is_some()));
        compress(&orig, &ck, &CompressOptions { shard_bytes, ..Default::default() }, &no_progress).unwrap();
        for e in std::fs::read_dir(&ck).unwrap() {
            let path = e.unwrap().path();
            if path.extension().is_some_and(|x| x == "safetensors") {
                let f = nwc_container::sfile::MappedFile::open(&path).unwrap();
                let base = 8 + f.header.len();
                for t in &f.tensors {
                    let size = (t.dtype.bitsize() / 8).max(1);
                    assert_eq!((t.start - base) % size, 0, "{} in {}", t.name, path.display());
                }
            }
        }
    }
}
