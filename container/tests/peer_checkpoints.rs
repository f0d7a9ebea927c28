//! Checkpoints written by the 0.10.1 library itself (its `save_pretrained`, run by
//! scripts/h200-interop.sh, which leaves them in OUT/peer-checkpoints/<variant>/ with `ck/` the
//! checkpoint, `orig/` the model it was made from and `peer-export/` the library's own
//! `export_bf16` of it). They are local test artifacts, not committed; run
//!
//!   NWC_PEER_CHECKPOINTS=OUT/peer-checkpoints cargo test -p nwc-container --release \
//!       --test peer_checkpoints -- --ignored
//!
//! (`h200_interop.py --cpu` makes the same folders on a machine with torch and no GPU, without
//! `peer-export/`.) The test is ignored by default (CI has no such folder); run without the
//! variable, it fails.
//!
//! BF16 checkpoints must decompress to the original tensors bit for bit. FP8 ones must decompress
//! to the spec 11 quantization of the original matrices, scaled back to BF16 (spec 17.3): the
//! library quantizes with torch, we with nwc-reference, and the bits must agree.

mod common;

use common::*;
use nwc_container::model::Tensor;
use nwc_container::{decompress, verify};
use nwc_reference::element::fp8_to_f32;
use nwc_reference::{quantize_fp8, Shape};
use safetensors::Dtype;
use std::path::PathBuf;

/// What an fp8 checkpoint of `orig` decompresses to: every 2-D BF16 tensor quantized per row
/// (spec 11.2) and scaled back to BF16 (spec 17.3); the rest unchanged. Per-row scales make this
/// the same for a fused group as for its parts.
fn fp8_expected(orig: Vec<Tensor>) -> Vec<Tensor> {
    orig.into_iter()
        .map(|mut t| {
            if t.dtype == Dtype::BF16 && t.shape.len() == 2 {
                let shape = Shape::new(t.shape[0] as u64, t.shape[1] as u64);
                let words: Vec<u16> = t.data.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
                let (q, scale) = quantize_fp8(&words, shape).unwrap();
                let cols = t.shape[1];
                t.data = q
                    .iter()
                    .enumerate()
                    .flat_map(|(i, &b)| half::bf16::from_f32(fp8_to_f32(b) * scale[i / cols]).to_bits().to_le_bytes())
                    .collect();
            }
            t
        })
        .collect()
}

#[test]
#[ignore = "needs NWC_PEER_CHECKPOINTS: checkpoints the 0.10.1 library wrote (scripts/h200-interop.sh)"]
fn library_checkpoints_decompress_bit_exactly() {
    let root = PathBuf::from(
        std::env::var("NWC_PEER_CHECKPOINTS").expect("NWC_PEER_CHECKPOINTS: the peer-checkpoints folder of an h200-interop.sh run"),
    );
    let mut variants: Vec<PathBuf> =
        std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).filter(|p| p.join("ck").is_dir()).collect();
    variants.sort();
    assert!(!variants.is_empty(), "no <variant>/ck folders in {}", root.display());
    let tmp = tempfile::tempdir().unwrap();
    for v in &variants {
        let name = v.file_name().unwrap().to_string_lossy().into_owned();
        let (ck, orig, export) = (v.join("ck"), v.join("orig"), v.join("peer-export"));
        let report = verify(&ck, None, &no_progress).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(report.matrices > 0 && report.mismatches.is_empty(), "{name}: {:?}", report.mismatches);
        let out = tmp.path().join(&name);
        decompress(&ck, &out, &no_progress).unwrap_or_else(|e| panic!("{name}: {e}"));
        let got = all_tensors(&out);
        if export.is_dir() {
            // The library's own export: tied lm_head written once, fused groups split, fp8 scaled.
            let want = all_tensors(&export);
            assert!(got == want, "{name}: decompressed tensors differ from the library's export");
        }
        if name.starts_with("bf16") {
            let report = verify(&ck, Some(&orig), &no_progress).unwrap();
            assert!(report.mismatches.is_empty(), "{name}: {:?}", report.mismatches);
            assert!(got == all_tensors(&orig), "{name}: decompressed tensors differ from the original");
        } else {
            let expected = fp8_expected(all_tensors(&orig));
            assert_eq!(got.len(), expected.len(), "{name}: tensor count");
            for (g, e) in got.iter().zip(&expected) {
                assert!(g.name == e.name && g.data == e.data, "{name}: {} differs from the spec 11 quantization of {}", g.name, e.name);
            }
        }
        eprintln!("{name}: {} matrices, {} tensors, bit-exact", report.matrices, got.len());
    }
}
