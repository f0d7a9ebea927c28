//! Checkpoints written the way the 0.10.1 library writes them (format-facts section 11), with its
//! quirks: garbage in the alignment gaps and the tail of `data` (dl + 64 bytes), `low` with and
//! without the 512-byte slack, library_version 9 without elem/layout, a fused q/k/v group with its
//! bias under `nwc/fused/`, a tied embedding, no `nwc_rs` records. The H200 cross-check against the
//! library itself is a separate step (not run here).

mod common;

use common::*;
use nwc_container::model::{write_safetensors, Tensor};
use nwc_container::{decompress, inspect, verify};
use nwc_reference::{encode, EncodedMatrix, Mode, Shape, Weights};
use nwc_testkit::gen::{Dist, Generator};
use safetensors::Dtype;
use std::path::Path;

/// Stored fields of one matrix as the library writes them: garbage in gaps and tail.
fn peer_tensors(id: u64, m: &EncodedMatrix, end: usize, with_slack: bool, seed: u8) -> Vec<Tensor> {
    let mut data = m.data.clone();
    data.resize(data.len() + 64, 0);
    // Garbage from the stream end on, and in every 4-byte alignment gap between blocks.
    for (i, b) in data[end..].iter_mut().enumerate() {
        *b = seed.wrapping_mul(31).wrapping_add(i as u8) | 1;
    }
    let hdr_words = |b: usize| {
        m.hdr[32 * b..32 * b + 32]
            .iter()
            .map(|&w| 4 * w as usize)
            .sum::<usize>()
    };
    for b in 0..m.bases.len().saturating_sub(1) {
        let block_end = m.bases[b] as usize + hdr_words(b);
        for x in &mut data[block_end..m.bases[b + 1] as usize] {
            *x = 0xEE;
        }
    }
    let mut low = m.low.clone();
    if with_slack {
        low.extend(std::iter::repeat_n(0, 512));
    }
    let i32s = |v: &[u32]| {
        v.iter()
            .flat_map(|x| (*x as i32).to_le_bytes())
            .collect::<Vec<u8>>()
    };
    let t = |f: &str, dtype, n, data| Tensor {
        name: format!("nwc/{id}/{f}"),
        dtype,
        shape: vec![n],
        data,
    };
    let mut out = vec![
        t("data", Dtype::U8, data.len(), data),
        t("bases", Dtype::I32, m.bases.len(), i32s(&m.bases)),
        t("hdr", Dtype::U8, m.hdr.len(), m.hdr.clone()),
        t("lut", Dtype::I32, 4096, i32s(&m.lut)),
        t("low", Dtype::U8, low.len(), low),
    ];
    if let Some(s) = &m.scale {
        out.push(t(
            "scale",
            Dtype::F32,
            s.len(),
            s.iter().flat_map(|x| x.to_le_bytes()).collect(),
        ));
    }
    out
}

fn bf16_bytes(words: &[u16]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn write_peer_checkpoint(dir: &Path, version: u64) -> Vec<(String, Vec<usize>, Vec<u8>)> {
    std::fs::create_dir_all(dir).unwrap();
    let mut gen = Generator::new(3);
    let embed = gen.bf16(Dist::Gaussian { log2_sigma: -6 }, Shape::new(50, 40));
    let qkv = gen.bf16(Dist::HeavyTail, Shape::new(24 + 8 + 8, 600));
    let fused_bias: Vec<u16> = gen.bf16(Dist::Gaussian { log2_sigma: -3 }, Shape::new(1, 40));
    let norm = gen.bf16(Dist::Gaussian { log2_sigma: 0 }, Shape::new(1, 40));
    let e0 = encode(Mode::BF16_L0, Shape::new(50, 40), Weights::Bf16(&embed)).unwrap();
    let e1 = encode(Mode::BF16_L0, Shape::new(40, 600), Weights::Bf16(&qkv)).unwrap();
    let mut tensors = peer_tensors(0, &e0.matrix, e0.stream_end as usize, true, 1);
    tensors.extend(peer_tensors(
        1,
        &e1.matrix,
        e1.stream_end as usize,
        false,
        2,
    ));
    tensors.push(Tensor {
        name: "nwc/fused/model.layers.0.self_attn.bias".into(),
        dtype: Dtype::BF16,
        shape: vec![40],
        data: bf16_bytes(&fused_bias),
    });
    tensors.push(Tensor {
        name: "model.norm.weight".into(),
        dtype: Dtype::BF16,
        shape: vec![40],
        data: bf16_bytes(&norm),
    });
    let refs: Vec<&Tensor> = tensors.iter().collect();
    let meta = [
        ("format".to_string(), "pt".to_string()),
        ("nwc".to_string(), "1".to_string()),
    ]
    .into_iter()
    .collect();
    write_safetensors(&dir.join("model.safetensors"), &refs, Some(&meta)).unwrap();
    let elem = if version == 10 {
        r#", "elem": "bf16", "layout": 0"#
    } else {
        ""
    };
    let config = format!(
        r#"{{
 "nwc_checkpoint": 1,
 "library_version": {version},
 "base_model": "toy/model",
 "weights": [
  {{"id": 0, "out": 50, "in": 40, "block": 4096, "bytes": 1{elem}}},
  {{"id": 1, "out": 40, "in": 600, "block": 4096, "bytes": 1{elem}}}
 ],
 "modules": [
  {{"path": "model.embed_tokens", "kind": "embedding", "weight": 0, "padding_idx": null}},
  {{"path": "model.layers.0.self_attn", "kind": "fused", "weight": 1, "names": ["q_proj", "k_proj", "v_proj"], "sizes": [24, 8, 8], "bias": "nwc/fused/model.layers.0.self_attn.bias"}},
  {{"path": "lm_head", "kind": "linear", "weight": 0, "bias": null}}
 ],
 "bytes_nwc": 2,
 "bytes_bf16": 3
}}"#
    );
    std::fs::write(dir.join("nwc_config.json"), config).unwrap();
    std::fs::write(dir.join("config.json"), r#"{"tie_word_embeddings": true}"#).unwrap();
    let rows = |w: &[u16], r0: usize, r1: usize, k: usize| bf16_bytes(&w[r0 * k..r1 * k]);
    vec![
        (
            "model.embed_tokens.weight".into(),
            vec![50, 40],
            bf16_bytes(&embed),
        ),
        (
            "model.layers.0.self_attn.q_proj.weight".into(),
            vec![24, 600],
            rows(&qkv, 0, 24, 600),
        ),
        (
            "model.layers.0.self_attn.k_proj.weight".into(),
            vec![8, 600],
            rows(&qkv, 24, 32, 600),
        ),
        (
            "model.layers.0.self_attn.v_proj.weight".into(),
            vec![8, 600],
            rows(&qkv, 32, 40, 600),
        ),
        (
            "model.layers.0.self_attn.q_proj.bias".into(),
            vec![24],
            rows(&fused_bias, 0, 24, 1),
        ),
        (
            "model.layers.0.self_attn.k_proj.bias".into(),
            vec![8],
            rows(&fused_bias, 24, 32, 1),
        ),
        (
            "model.layers.0.self_attn.v_proj.bias".into(),
            vec![8],
            rows(&fused_bias, 32, 40, 1),
        ),
        ("model.norm.weight".into(), vec![40], bf16_bytes(&norm)),
    ]
}

/// Spec 17.5 (fused and tied modules), spec 17.7 (fields with and without slacks), spec 17.11 (the library's quirks).
#[test]
fn reads_library_checkpoints_with_their_quirks() {
    for version in [9, 10] {
        let tmp = tempfile::tempdir().unwrap();
        let (ck, out) = (tmp.path().join("ck"), tmp.path().join("out"));
        let mut expected = write_peer_checkpoint(&ck, version);
        let report = verify(&ck, None, &no_progress).unwrap();
        assert!(report.mismatches.is_empty());
        assert_eq!(report.matrices, 2);
        let ins = inspect(&ck).unwrap();
        assert_eq!(ins.library_version, version);
        decompress(&ck, &out, &no_progress).unwrap();
        let mut got: Vec<(String, Vec<usize>, Vec<u8>)> = all_tensors(&out)
            .into_iter()
            .map(|t| (t.name, t.shape, t.data))
            .collect();
        got.sort();
        expected.sort();
        // Tied: lm_head is not written (tie_word_embeddings), the fused group is split.
        assert_eq!(got, expected, "version {version}");
        assert!(out.join("config.json").is_file());
    }
}

/// Spec 17.4 and spec 17.10: unsupported versions and element types are named with the file.
#[test]
fn unsupported_versions_and_modes_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = tmp.path().join("ck");
    write_peer_checkpoint(&ck, 10);
    let cfg = std::fs::read_to_string(ck.join("nwc_config.json")).unwrap();
    std::fs::write(
        ck.join("nwc_config.json"),
        cfg.replace("\"library_version\": 10", "\"library_version\": 11"),
    )
    .unwrap();
    let err = verify(&ck, None, &no_progress).unwrap_err().to_string();
    assert!(
        err.contains("library_version 11") && err.contains("nwc_config.json"),
        "{err}"
    );
    std::fs::write(
        ck.join("nwc_config.json"),
        cfg.replacen("\"elem\": \"bf16\"", "\"elem\": \"int4\"", 1),
    )
    .unwrap();
    let err = verify(&ck, None, &no_progress).unwrap_err().to_string();
    assert!(err.contains("int4"), "{err}");
    std::fs::write(ck.join("nwc_config.json"), "{\"weights\": 3}").unwrap();
    let err = verify(&ck, None, &no_progress).unwrap_err().to_string();
    assert!(err.contains("nwc_config.json"), "{err}");
}
