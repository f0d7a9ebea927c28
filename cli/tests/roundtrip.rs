//! Round trips through the `nwc` binary in all four modes, and decoding directories in the form
//! peer_encode.py writes (its summary keys, checkpoint-size fields).

mod common;

use common::*;
use nwc_reference::{Mode, Shape};
use nwc_testkit::gen::Dist;
use serde_json::Value;
use std::fs;

fn summary(dir: &std::path::Path) -> Value {
    serde_json::from_slice(&fs::read(dir.join("summary.json")).unwrap()).unwrap()
}

#[test]
fn every_mode_round_trips_bit_exact() {
    let tmp = tempfile::tempdir().unwrap();
    // Ragged shapes: K not a multiple of 16/32, M not a multiple of 8/16, more than one column block.
    for (i, shape) in [Shape::new(13, 40), Shape::new(9, 513), Shape::new(1, 7)].into_iter().enumerate() {
        for mode in Mode::ALL {
            let (elem, layout) = (mode.elem.name(), mode.layout.number());
            let input = match elem {
                "bf16" => bf16_input(i as u64, Dist::HeavyTail, shape),
                _ => fp8_input(i as u64, Dist::Fp8RandomBytes, shape),
            };
            let tag = format!("{i}-{}", mode.code());
            let raw = write(tmp.path(), &format!("in-{tag}.raw"), &input);
            let dir = tmp.path().join(format!("enc-{tag}"));
            encode_ok(elem, layout, shape, &raw, &dir, &[]);
            let out = tmp.path().join(format!("out-{tag}.raw"));
            let r = nwc(&[&"decode", &dir, &out]);
            assert_eq!(r.code, 0, "{mode} {shape}: {}", r.stderr);
            assert_eq!(fs::read(&out).unwrap(), input, "{mode} {shape}");
            let s = summary(&dir);
            assert_eq!(s["elem"], mode.code());
            assert_eq!(s["format_version"], 10);
            assert_eq!(s["M"], shape.rows);
            assert_eq!(s["K"], shape.cols);
            assert_eq!(s["bytes_input"], shape.weights() * mode.elem.input_bytes() as u64);
        }
    }
}

#[test]
fn quantized_fp8_round_trips_and_records_scales() {
    let tmp = tempfile::tempdir().unwrap();
    let shape = Shape::new(24, 70);
    let input = bf16_input(7, Dist::RowScaled { binades: 6 }, shape);
    let raw = write(tmp.path(), "in.bf16", &input);
    for layout in [0u8, 1] {
        let dir = tmp.path().join(format!("q{layout}"));
        encode_ok("fp8", layout, shape, &raw, &dir, &["--quantize-from-bf16"]);
        let scale = fs::read(dir.join("scale.bin")).unwrap();
        assert_eq!(scale.len(), 4 * 24);
        // The stored fp8 matrix is exactly what the reference quantizer makes of the input.
        let words: Vec<u16> = input.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
        let (fp8, scales) = nwc_reference::quantize_fp8(&words, shape).unwrap();
        let want_scale: Vec<u8> = scales.iter().flat_map(|s| s.to_bits().to_le_bytes()).collect();
        assert_eq!(scale, want_scale);
        let out = tmp.path().join(format!("q{layout}.fp8"));
        let r = nwc(&[&"decode", &dir, &out]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert_eq!(fs::read(&out).unwrap(), fp8);
        let s = summary(&dir);
        assert_eq!(s["quantized_from_bf16"], true);
        assert!(s["sha256"]["scale.bin"].is_string());
    }
    // Re-encoding into the same (non-empty) directory is refused; nothing in it changes.
    let fp8_raw = write(tmp.path(), "plain.fp8", &fp8_input(1, Dist::Fp8Quantized, shape));
    let scale = fs::read(tmp.path().join("q0/scale.bin")).unwrap();
    let r = nwc(&[
        &"encode",
        &"--elem",
        &"fp8",
        &"--rows",
        &shape.rows.to_string(),
        &"--cols",
        &shape.cols.to_string(),
        &fp8_raw,
        &tmp.path().join("q0"),
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("exists and is not empty"), "{}", r.stderr);
    assert_eq!(fs::read(tmp.path().join("q0/scale.bin")).unwrap(), scale);
}

/// Writes a directory the way peer_encode.py does: its file names, its summary keys (including
/// the ones `nwc` does not write), optionally the checkpoint sizes (data + 64, low + 512).
fn write_peer_style_dir(dir: &std::path::Path, mode: Mode, shape: Shape, out: &nwc_testkit::peer::PeerOutput, checkpoint: bool) {
    fs::create_dir_all(dir).unwrap();
    let mut data = out.data.clone();
    let mut low = out.low.clone();
    if checkpoint {
        data.resize(data.len() + 64, 0);
        low.resize(low.len() + 512, 0);
    }
    let le32 = |v: &[u32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    fs::write(dir.join("data.bin"), &data).unwrap();
    fs::write(dir.join("bases.bin"), le32(&out.bases)).unwrap();
    fs::write(dir.join("hdr.bin"), &out.hdr).unwrap();
    fs::write(dir.join("lut.bin"), le32(&out.lut)).unwrap();
    fs::write(dir.join("low.bin"), &low).unwrap();
    fs::write(dir.join("exp_of_rank.bin"), out.exp_of_rank).unwrap();
    let [nb, n_low, n_scratch, k16] = out.layout;
    let summary = serde_json::json!({
        "peer_format_version": 10, "library": "nwc_ops.so",
        "M": shape.rows, "K": shape.cols, "elem": mode.code(),
        "type": if mode.code() & 15 == 1 { "fp8_e4m3" } else { "bf16" }, "layout": mode.layout.number(),
        "K16": k16, "blocks": nb, "n_low": n_low, "n_scratch": n_scratch,
        "encoder_return_dl": out.data.len(), "checkpoint_sizes": checkpoint,
        "exp_of_rank": out.exp_of_rank,
    });
    fs::write(dir.join("summary.json"), serde_json::to_vec_pretty(&summary).unwrap()).unwrap();
}

/// The 0.10.1 library's own encoder output (fetched from PyPI like the conformance tests do), in
/// peer_encode.py's directory form, decodes to the input with `nwc decode`, and `nwc info` calls it valid.
#[test]
fn decodes_directories_written_like_peer_encode_py() {
    let peer = nwc_testkit::peer::PeerLib::load().expect("the peer library (PyPI neural-weight-compression 0.10.1)");
    let tmp = tempfile::tempdir().unwrap();
    let shape = Shape::new(21, 600);
    for mode in Mode::ALL {
        let input = match mode.elem.name() {
            "bf16" => bf16_input(3, Dist::Gaussian { log2_sigma: -6 }, shape),
            _ => fp8_input(3, Dist::Fp8Quantized, shape),
        };
        let out = peer.encode(mode, shape, &input).expect("peer encodes");
        for checkpoint in [false, true] {
            let dir = tmp.path().join(format!("peer-{}-{checkpoint}", mode.code()));
            write_peer_style_dir(&dir, mode, shape, &out, checkpoint);
            let raw = tmp.path().join(format!("peer-{}-{checkpoint}.raw", mode.code()));
            let r = nwc(&[&"decode", &dir, &raw]);
            assert_eq!(r.code, 0, "{mode} checkpoint={checkpoint}: {}", r.stderr);
            assert_eq!(fs::read(&raw).unwrap(), input, "{mode} checkpoint={checkpoint}");
            let info = nwc(&[&"info", &dir]);
            assert_eq!(info.code, 0, "{}", info.stderr);
            assert!(info.stdout.contains("status        valid"), "{}", info.stdout);
            assert!(info.stdout.contains("not recorded in summary.json"), "{}", info.stdout);
        }
    }
}

#[test]
fn nwc_encode_writes_what_the_peer_writes() {
    let peer = nwc_testkit::peer::PeerLib::load().expect("the peer library (PyPI neural-weight-compression 0.10.1)");
    let tmp = tempfile::tempdir().unwrap();
    let shape = Shape::new(17, 100);
    for mode in Mode::ALL {
        let input = match mode.elem.name() {
            "bf16" => bf16_input(5, Dist::HeavyTail, shape),
            _ => fp8_input(5, Dist::Fp8Subnormal, shape),
        };
        let raw = write(tmp.path(), &format!("in-{}.raw", mode.code()), &input);
        let dir = tmp.path().join(format!("ours-{}", mode.code()));
        encode_ok(mode.elem.name(), mode.layout.number(), shape, &raw, &dir, &[]);
        let out = peer.encode(mode, shape, &input).expect("peer encodes");
        assert_eq!(fs::read(dir.join("data.bin")).unwrap(), out.data, "{mode} data.bin");
        assert_eq!(fs::read(dir.join("hdr.bin")).unwrap(), out.hdr, "{mode} hdr.bin");
        assert_eq!(fs::read(dir.join("low.bin")).unwrap(), out.low, "{mode} low.bin");
        assert_eq!(fs::read(dir.join("exp_of_rank.bin")).unwrap(), out.exp_of_rank, "{mode} exp_of_rank.bin");
        let s = summary(&dir);
        assert_eq!(s["encoder_return_dl"], out.data.len());
        assert_eq!(s["blocks"], out.layout[0]);
        assert_eq!(s["n_low"], out.layout[1]);
        assert_eq!(s["K16"], out.layout[3]);
    }
}
