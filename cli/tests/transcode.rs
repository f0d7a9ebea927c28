//! `nwc transcode` (spec 20.12): the execution layout of a BF16 matrix from a format-10 directory
//! (either layout) and from raw BF16 is the same canonical layout, the reference's, and decodes
//! back to the matrix; FP8, broken directories and wrong arguments are named errors (snapshot).

mod common;

use common::*;
use nwc_reference::exec::{decode_exec, encode_exec, parse_le_fields};
use nwc_reference::Shape;
use nwc_testkit::gen::Dist;
use std::fs;
use std::path::Path;

const FIELDS: [&str; 5] = ["exec_sm.bin", "exec_codes.bin", "exec_base.bin", "exec_esc_start.bin", "exec_esc.bin"];

fn read_fields(dir: &Path) -> Vec<Vec<u8>> {
    FIELDS.iter().map(|f| fs::read(dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"))).collect()
}

#[test]
fn every_source_gives_the_canonical_layout() {
    let tmp = tempfile::tempdir().unwrap();
    for (i, (shape, dist)) in [
        (Shape::new(20, 600), Dist::Gaussian { log2_sigma: -6 }),
        (Shape::new(9, 1100), Dist::HeavyTail),
        (Shape::new(3, 5), Dist::RandomBits),
    ]
    .into_iter()
    .enumerate()
    {
        let input = bf16_input(40 + i as u64, dist, shape);
        let raw = write(tmp.path(), &format!("w{i}.bf16"), &input);
        let words: Vec<u16> = input.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
        let want: Vec<Vec<u8>> = encode_exec(shape, &words).unwrap().to_le_fields().into_iter().map(|(_, b)| b).collect();
        let (m, k) = (shape.rows.to_string(), shape.cols.to_string());
        let from_raw = tmp.path().join(format!("raw{i}"));
        let r = nwc(&[&"transcode", &"--rows", &m, &"--cols", &k, &raw, &from_raw]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert_eq!(read_fields(&from_raw), want, "raw BF16 {shape}");
        for layout in [0u8, 1] {
            let f10 = tmp.path().join(format!("f{i}-{layout}"));
            encode_ok("bf16", layout, shape, &raw, &f10, &[]);
            let out = tmp.path().join(format!("x{i}-{layout}"));
            let r = nwc(&[&"transcode", &f10, &out]);
            assert_eq!(r.code, 0, "{}", r.stderr);
            assert_eq!(read_fields(&out), want, "format 10 layout {layout} {shape}: spec 20.12.2");
        }
        let f = read_fields(&from_raw);
        let exec = parse_le_fields(shape, &f[0], &f[1], &f[2], &f[3], &f[4]).unwrap();
        assert_eq!(decode_exec(&exec).unwrap().words, words, "spec 20.13: decodes to the matrix");
        let summary: serde_json::Value = serde_json::from_slice(&fs::read(from_raw.join("summary.json")).unwrap()).unwrap();
        assert_eq!(
            (summary["representation"].as_str(), summary["M"].as_u64(), summary["K"].as_u64()),
            (Some("exec"), Some(shape.rows), Some(shape.cols))
        );
    }
}

#[test]
fn refusals_and_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let shape = Shape::new(8, 40);
    let raw = write(d, "w.bf16", &bf16_input(3, Dist::Gaussian { log2_sigma: -6 }, shape));
    let fp8 = d.join("fp8");
    encode_ok("fp8", 0, shape, &raw, &fp8, &["--quantize-from-bf16"]);
    let broken = d.join("broken");
    encode_ok("bf16", 0, shape, &raw, &broken, &[]);
    fs::remove_file(broken.join("hdr.bin")).unwrap();
    let busy = d.join("busy");
    fs::create_dir(&busy).unwrap();
    fs::write(busy.join("keep"), b"x").unwrap();
    let mut lines = Vec::new();
    let mut show = |what: &str, r: Run| {
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
        let text = r.stderr.trim().replace(&d.display().to_string(), "[TMP]");
        lines.push(format!("{what}: exit {}: {}", r.code, text.lines().next().unwrap_or_default()));
    };
    show("fp8 matrix", nwc(&[&"transcode", &fp8, &d.join("o1")]));
    show("missing hdr.bin", nwc(&[&"transcode", &broken, &d.join("o2")]));
    show("raw without a shape", nwc(&[&"transcode", &raw, &d.join("o3")]));
    show("directory with a shape", nwc(&[&"transcode", &"--rows", &"8", &"--cols", &"40", &fp8, &d.join("o4")]));
    show("raw of the wrong size", nwc(&[&"transcode", &"--rows", &"8", &"--cols", &"41", &raw, &d.join("o5")]));
    show("missing input", nwc(&[&"transcode", &d.join("nope"), &d.join("o6")]));
    show("shape out of range", nwc(&[&"transcode", &"--rows", &"0", &"--cols", &"40", &raw, &d.join("o7")]));
    show("rows without cols", nwc(&[&"transcode", &"--rows", &"8", &raw, &d.join("o8")]));
    show("non-empty outdir", nwc(&[&"transcode", &"--rows", &"8", &"--cols", &"40", &raw, &busy]));
    for i in 1..=8 {
        assert!(!d.join(format!("o{i}")).exists(), "o{i}: a refused transcode writes nothing");
    }
    insta::assert_snapshot!("transcode_errors", lines.join("\n"));
}
