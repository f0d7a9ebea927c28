//! What a reader checks of a checkpoint's references before using them (spec 17.1, 17.4 - 17.6):
//! the records' file names (decompression writes them: never a path), their format and lossy
//! steps, the modules' and records' matrix ids, and the shard index against the shards. Each
//! damage is refused by inspect, verify and decompress alike, naming the clause; nothing is
//! written. Also spec 17.3: only `<path>.weight` tensors are compressed.

mod common;

use common::*;
use nwc_container::model::{write_safetensors, Tensor};
use nwc_container::{compress, decompress, inspect, verify, CompressOptions};
use nwc_testkit::gen::{Dist, Generator};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A compressed copy of the sharded model (two shards and an index).
fn checkpoint(tmp: &Path) -> PathBuf {
    let orig = tmp.join("orig");
    sharded_model(&orig);
    let ck = tmp.join("ck");
    let opts = CompressOptions { shard_bytes: Some(20_000), ..Default::default() };
    compress(&orig, &ck, &opts, &no_progress).unwrap();
    ck
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

fn edit_json(path: &Path, f: impl FnOnce(&mut Value)) {
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

/// Every reader refuses `ck` with a message containing `why`; decompression writes nothing.
fn refused(ck: &Path, why: &str) {
    let out = ck.with_extension("out");
    let errors = [
        inspect(ck).err().map(|e| e.to_string()),
        verify(ck, None, &no_progress).err().map(|e| e.to_string()),
        decompress(ck, &out, &no_progress).err().map(|e| e.to_string()),
    ];
    for (what, e) in ["inspect", "verify", "decompress"].iter().zip(errors) {
        let e = e.unwrap_or_else(|| panic!("{what} accepted {}", ck.display()));
        assert!(e.contains(why), "{what}: {e}");
    }
    assert!(!out.exists(), "a refused decompression wrote {}", out.display());
    assert!(!ck.parent().unwrap().join("escaped.safetensors").exists());
}

#[test]
fn damaged_references_are_refused_by_every_reader() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = checkpoint(tmp.path());
    verify(&ck, None, &no_progress).unwrap();
    type Damage = fn(&mut Value);
    let config_damages: [(&str, Damage, &str); 7] = [
        ("path in records", |v| v["nwc_rs"]["files"][0]["name"] = "../escaped.safetensors".into(), "not a plain file name (spec 17.6)"),
        ("records format 2", |v| v["nwc_rs"]["format"] = 2.into(), "nwc_rs format 2"),
        ("unknown lossy step", |v| v["nwc_rs"]["tensors"][0]["lossy"] = serde_json::json!(["int4"]), "lossy steps"),
        ("steps out of order", |v| v["nwc_rs"]["tensors"][0]["lossy"] = serde_json::json!(["fp8", "cast-bf16"]), "lossy steps"),
        ("record file unlisted", |v| v["nwc_rs"]["tensors"][0]["file"] = "other.safetensors".into(), "is not one of nwc_rs.files"),
        ("module of no matrix", |v| v["modules"][0]["weight"] = 99.into(), "matrix id 99 has no weights entry (spec 17.5)"),
        ("no modules", |v| drop(v.as_object_mut().unwrap().remove("modules")), "missing field `modules`"),
    ];
    for (i, (what, damage, why)) in config_damages.into_iter().enumerate() {
        let d = tmp.path().join(format!("c{i}"));
        copy_dir(&ck, &d);
        edit_json(&d.join("nwc_config.json"), damage);
        println!("{what}");
        refused(&d, why);
    }
    let index = "model.safetensors.index.json";
    let index_damages: [(&str, Damage, &str); 3] = [
        (
            "a tensor mapped to the other shard",
            |v| {
                let map = v["weight_map"].as_object().unwrap();
                let (name, shard) = map.iter().next().map(|(k, s)| (k.clone(), s.clone())).unwrap();
                let other = map.values().find(|s| **s != shard).unwrap().clone();
                v["weight_map"][&name] = other;
            },
            "but",
        ),
        (
            "a tensor missing from the index",
            |v| {
                let name = v["weight_map"].as_object().unwrap().keys().next().unwrap().clone();
                v["weight_map"].as_object_mut().unwrap().remove(&name);
            },
            "is missing from weight_map",
        ),
        (
            "a tensor the shards do not hold",
            |v| {
                let shard = v["weight_map"].as_object().unwrap().values().next().unwrap().clone();
                v["weight_map"]["nwc/999/data"] = shard;
            },
            "which does not hold it",
        ),
    ];
    for (i, (what, damage, why)) in index_damages.into_iter().enumerate() {
        let d = tmp.path().join(format!("i{i}"));
        copy_dir(&ck, &d);
        edit_json(&d.join(index), damage);
        println!("{what}");
        refused(&d, why);
    }
}

/// Spec 17.7: a stored tensor that nothing accounts for is refused, not dropped.
#[test]
fn unaccounted_tensors_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let orig = tmp.path().join("orig");
    sharded_model(&orig);
    let ck = tmp.path().join("ck");
    compress(&orig, &ck, &CompressOptions::default(), &no_progress).unwrap();
    let file = ck.join("model.safetensors");
    let model = nwc_container::model::read_model(&file).unwrap();
    let stored: Vec<Tensor> = model
        .tensors()
        .map(|(f, t)| Tensor { name: t.name.clone(), dtype: t.dtype, shape: t.shape.clone(), data: f.bytes(t).to_vec() })
        .collect();
    drop(model);
    for (i, (extra, why)) in [
        ("nwc/999/data", "no weights entry or fused module has it"),
        ("nwc/0/extra", "no weights entry"),
        ("stray.weight", "no record of nwc_rs names it"),
    ]
    .into_iter()
    .enumerate()
    {
        let d = tmp.path().join(format!("u{i}"));
        copy_dir(&ck, &d);
        let mut tensors = stored.clone();
        tensors.push(Tensor { name: extra.into(), dtype: safetensors::Dtype::U8, shape: vec![4], data: vec![0; 4] });
        let refs: Vec<&Tensor> = tensors.iter().collect();
        write_safetensors(&d.join("model.safetensors"), &refs, None).unwrap();
        refused(&d, why);
    }
}

#[test]
fn only_module_weights_are_compressed() {
    let tmp = tempfile::tempdir().unwrap();
    let mut gen = Generator::new(3);
    let w = bf16_tensor(&mut gen, "head.weight", 8, 32, Dist::Gaussian { log2_sigma: -6 });
    let mut other = bf16_tensor(&mut gen, "head", 8, 32, Dist::Gaussian { log2_sigma: -6 });
    other.data[0] ^= 1; // not shared with head.weight
    let orig = tmp.path().join("m.safetensors");
    write_safetensors(&orig, &[&w, &other] as &[&Tensor], None).unwrap();
    let ck = tmp.path().join("ck");
    let s = compress(&orig, &ck, &CompressOptions::default(), &no_progress).unwrap();
    assert_eq!(s.matrices, 1, "only `head.weight` is a candidate (spec 17.3)");
    let out = tmp.path().join("out");
    decompress(&ck, &out, &no_progress).unwrap();
    let report = verify(&ck, Some(&orig), &no_progress).unwrap();
    assert!(report.mismatches.is_empty(), "{:?}", report.mismatches);
}
