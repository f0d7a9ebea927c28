//! The checkpoint container (spec 17).
//! Original -> checkpoint -> decompressed: identical tensor for tensor (spec 17.8), digests,
//! lossy options, sharding, refusal to overwrite, corrupt inputs.

mod common;

use common::*;
use nwc_container::config::NwcConfig;
use nwc_container::{compress, decompress, inspect, verify, CompressOptions, ContainerError, Policy};
use nwc_reference::{ElemType, Layout};
use std::path::Path;

fn read_config(dir: &Path) -> NwcConfig {
    serde_json::from_str(&std::fs::read_to_string(dir.join("nwc_config.json")).unwrap()).unwrap()
}

/// Spec 17.1 (folder and files), spec 17.2 (sharded originals with an index), spec 17.6 (integrity records),
/// spec 17.8 (decompression gives every tensor back).
#[test]
fn lossless_round_trip_keeps_every_tensor_and_file() {
    let tmp = tempfile::tempdir().unwrap();
    let (orig, ck, out) = (tmp.path().join("orig"), tmp.path().join("ck"), tmp.path().join("out"));
    sharded_model(&orig);
    for layout in [Layout::Rows8, Layout::Fragment16] {
        let _ = std::fs::remove_dir_all(&ck);
        let _ = std::fs::remove_dir_all(&out);
        let opts = CompressOptions { layout, ..Default::default() };
        let summary = compress(&orig, &ck, &opts, &no_progress).unwrap();
        // 5 BF16 matrices, embed and lm_head tied into one: 4 matrices; F32 and others copied.
        assert_eq!((summary.matrices, summary.tensors_compressed, summary.tensors_copied), (4, 5, 4));
        let cfg = read_config(&ck);
        assert_eq!(cfg.library_version, 10);
        assert_eq!(cfg.weights.len(), 4);
        let tied: Vec<_> = cfg.modules.iter().filter(|m| m.weight == cfg.modules[0].weight).collect();
        assert_eq!(tied.len(), 2, "embedding and lm_head share one matrix: {:?}", cfg.modules);
        assert_eq!(tied[0].kind, "embedding");
        assert_eq!(tied[1].kind, "linear");
        let k = cfg.modules.iter().find(|m| m.path.ends_with("k_proj")).unwrap();
        assert_eq!(k.bias, Some(Some("model.layers.0.self_attn.k_proj.bias".into())));
        decompress(&ck, &out, &no_progress).unwrap();
        assert_eq!(all_tensors(&out), all_tensors(&orig), "{layout:?}");
        for f in [
            "model-00001-of-00002.safetensors",
            "model-00002-of-00002.safetensors",
            "model.safetensors.index.json",
            "config.json",
            "tokenizer.json",
        ] {
            assert!(out.join(f).is_file(), "{f} missing");
        }
        let index = |d: &Path| {
            serde_json::from_slice::<serde_json::Value>(&std::fs::read(d.join("model.safetensors.index.json")).unwrap()).unwrap()
        };
        assert_eq!(index(&out), index(&orig), "same index content");
        let report = verify(&ck, Some(&orig), &no_progress).unwrap();
        assert!(report.mismatches.is_empty(), "{:?}", report.mismatches);
        assert_eq!((report.matrices, report.compared), (4, 9));
        let ins = inspect(&ck).unwrap();
        assert_eq!(ins.matrices.len(), 4);
        let heavy = ins.matrices.iter().find(|m| m.names.contains("k_proj")).unwrap();
        assert!(heavy.escapes > 0, "heavy-tailed matrix must have escapes");
        // Tiny matrices pay the 16 KiB table (spec 17.4 accounting), so only a lower bound here.
        assert!(ins.matrices.iter().all(|m| m.ratio > 0.3 && m.entropy_bits > 0.0));
    }
}

#[test]
fn stored_fields_use_the_library_lengths() {
    let tmp = tempfile::tempdir().unwrap();
    let (orig, ck) = (tmp.path().join("orig"), tmp.path().join("ck"));
    sharded_model(&orig);
    compress(&orig, &ck, &CompressOptions::default(), &no_progress).unwrap();
    let c = nwc_container::checkpoint::Checkpoint::open(&ck).unwrap();
    for e in &c.config.weights {
        let m = c.matrix(e).unwrap();
        let g = nwc_reference::Geometry::new(m.mode, m.shape).unwrap();
        let canonical = nwc_reference::encode(
            m.mode,
            m.shape,
            nwc_reference::Weights::Bf16(&match nwc_reference::decode(&m).unwrap().elements {
                nwc_reference::Elements::Bf16(w) => w,
                _ => unreachable!(),
            }),
        )
        .unwrap();
        // Spec 17.7: data is dl + 64 bytes, low is n_low + 512.
        assert_eq!(m.data.len(), canonical.matrix.data.len() + 64);
        assert_eq!(m.low.len() as u64, g.n_low + 512);
        assert_eq!(e.bytes, Some(nwc_container::checkpoint::accounted_bytes(&canonical.matrix)));
        assert_eq!(&m.data[..canonical.matrix.data.len()], &canonical.matrix.data[..]);
    }
}

/// Spec 17.3: which tensors are compressed, and what the lossy options decode to.
#[test]
fn fp8_and_cast_bf16_are_lossy_as_specified() {
    let tmp = tempfile::tempdir().unwrap();
    let (orig, ck, out) = (tmp.path().join("orig"), tmp.path().join("ck"), tmp.path().join("out"));
    let originals = sharded_model(&orig);
    let opts = CompressOptions {
        elem: ElemType::Fp8E4m3,
        policy: Policy { cast_bf16: true, exclude: vec!["*embed*".into(), "lm_head*".into()], ..Default::default() },
        shard_bytes: Some(20_000),
        ..Default::default()
    };
    let s = compress(&orig, &ck, &opts, &no_progress).unwrap();
    assert_eq!(s.matrices, 4, "q, k, up and the cast down_proj");
    assert!(ck.join("model.safetensors.index.json").is_file(), "sharded output");
    let cfg = read_config(&ck);
    assert!(cfg.weights.iter().all(|w| w.elem == "fp8"));
    let records = &cfg.nwc_rs.as_ref().unwrap().tensors;
    let down = records.iter().find(|r| r.name.ends_with("down_proj.weight")).unwrap();
    assert_eq!(down.lossy, vec!["cast-bf16".to_string(), "fp8".to_string()]);
    decompress(&ck, &out, &no_progress).unwrap();
    let got = all_tensors(&out);
    for t in &originals {
        let g = got.iter().find(|g| g.name == t.name).unwrap();
        assert_eq!((g.dtype, &g.shape), (t.dtype, &t.shape), "{}", t.name);
        let r = records.iter().find(|r| r.name == t.name).unwrap();
        if r.lossy.is_empty() {
            assert_eq!(g.data, t.data, "{} is lossless", t.name);
        } else {
            assert_ne!(g.data, t.data, "{} went through fp8", t.name);
        }
    }
    let report = verify(&ck, Some(&orig), &no_progress).unwrap();
    assert!(report.mismatches.is_empty(), "{:?}", report.mismatches);
}

/// Spec 17.9 (verification, digests) and spec 17.10 (errors name the rule, the file and the tensor).
#[test]
fn refuses_to_overwrite_and_reports_corruption() {
    let tmp = tempfile::tempdir().unwrap();
    let (orig, ck, out) = (tmp.path().join("orig"), tmp.path().join("ck"), tmp.path().join("out"));
    sharded_model(&orig);
    let err = compress(&orig, &orig, &CompressOptions::default(), &no_progress).unwrap_err();
    assert!(err.is_usage(), "{err}");
    compress(&orig, &ck, &CompressOptions::default(), &no_progress).unwrap();
    std::fs::create_dir(&out).unwrap();
    assert!(decompress(&ck, &out, &no_progress).unwrap_err().is_usage());
    assert!(!tmp.path().read_dir().unwrap().any(|e| e.unwrap().file_name().to_string_lossy().contains("partial")));

    // A broken lane header: a named validity rule, the file and the tensor names.
    let file = ck.join("model.safetensors");
    let c = nwc_container::checkpoint::Checkpoint::open(&ck).unwrap();
    let mut tensors: Vec<_> = c.order.iter().map(|n| c.tensor(n).unwrap()).collect();
    drop(c);
    let hdr = tensors.iter_mut().find(|t| t.name == "nwc/1/hdr").unwrap();
    hdr.data[3] = hdr.data[3].wrapping_add(1);
    let refs: Vec<_> = tensors.iter().collect();
    std::fs::remove_file(&file).unwrap();
    nwc_container::model::write_safetensors(&file, &refs, None).unwrap();
    let err = verify(&ck, None, &no_progress).unwrap_err();
    let msg = err.to_string();
    let ContainerError::Matrix { id: 1, names, .. } = &err else { panic!("{msg}") };
    assert!(msg.contains("spec 13.") && msg.contains("model.safetensors") && msg.contains(names.as_str()), "{msg}");
    // Decompression (which decodes BF16 matrices a run of rows at a time) names it the same way
    // and leaves no output.
    let out3 = tmp.path().join("out3");
    let err = decompress(&ck, &out3, &no_progress).unwrap_err();
    assert!(matches!(err, ContainerError::Matrix { id: 1, .. }) && err.to_string() == msg, "{err}");
    assert!(!out3.exists());

    // A copied tensor changed in place: verify reports a digest mismatch, decompress refuses.
    let hdr = tensors.iter_mut().find(|t| t.name == "nwc/1/hdr").unwrap();
    hdr.data[3] = hdr.data[3].wrapping_sub(1);
    let norm = tensors.iter_mut().find(|t| t.name == "model.norm.weight").unwrap();
    norm.data[0] ^= 1;
    let refs: Vec<_> = tensors.iter().collect();
    nwc_container::model::write_safetensors(&file, &refs, None).unwrap();
    let report = verify(&ck, None, &no_progress).unwrap();
    assert_eq!(report.mismatches.len(), 1, "{:?}", report.mismatches);
    assert!(report.mismatches[0].contains("model.norm.weight"));
    let out2 = tmp.path().join("out2");
    assert!(decompress(&ck, &out2, &no_progress).is_err());
    assert!(!out2.exists());

    // Truncated file.
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() / 2]).unwrap();
    let err = verify(&ck, None, &no_progress).unwrap_err();
    let half = bytes.len() as u64 / 2;
    assert!(matches!(err, ContainerError::Truncated { got, expected, .. } if got == half && expected == bytes.len() as u64), "{err}");
    assert!(err.to_string().contains(&format!("model.safetensors: truncated: {half} of {} bytes", bytes.len())), "{err}");
}
