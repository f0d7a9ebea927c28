//! Snapshots of the model commands' user-facing output: help texts, `--version`, the `--json`
//! reports of `verify` and `inspect`, `verify --against` file lines, and the errors for a missing
//! input, a truncated safetensors file and a non-empty encode OUTDIR. Paths are replaced by
//! placeholders so the snapshots do not depend on the temporary folder.

mod common;

use common::*;
use std::path::Path;

fn write_model(path: &Path) {
    let words: Vec<u8> = (0..40 * 72u32).flat_map(|i| (0x3C00u16 + (i * 7 % 300) as u16).to_le_bytes()).collect();
    let norm: Vec<u8> = (0..72u32).flat_map(|i| (i as f32).to_le_bytes()).collect();
    // Hand-written header: spaces, own key order.
    let header = format!(
        "{{ \"norm.weight\": {{\"dtype\":\"F32\", \"shape\":[72], \"data_offsets\":[0,{}]}}, \"layer.weight\": {{\"dtype\":\"BF16\",\"shape\":[40,72],\"data_offsets\":[{},{}]}} }}",
        norm.len(),
        norm.len(),
        norm.len() + words.len()
    );
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(&norm);
    bytes.extend_from_slice(&words);
    std::fs::write(path, bytes).unwrap();
}

fn scrub(text: &str, dir: &Path) -> String {
    text.replace(&dir.display().to_string(), "[TMP]")
}

#[test]
fn help_texts() {
    for cmd in ["compress", "decompress", "verify", "inspect", "slice", "doctor", "info", "encode", "transcode"] {
        let r = nwc(&[&cmd, &"--help"]);
        assert_eq!(r.code, 0);
        insta::assert_snapshot!(format!("help_{cmd}"), r.stdout);
    }
    let r = nwc(&[&"--help"]);
    insta::assert_snapshot!("help_top", r.stdout);
    let r = nwc(&[&"--version"]);
    assert!(r.stdout.contains(&format!("NWC format {}", nwc_reference::FORMAT_VERSION)));
    insta::assert_snapshot!("version", r.stdout);
}

#[test]
fn json_reports_and_file_checks() {
    let tmp = tempfile::tempdir().unwrap();
    let model = tmp.path().join("model.safetensors");
    write_model(&model);
    let ck = tmp.path().join("ck");
    assert_eq!(nwc(&[&"compress", &model, &ck]).code, 0);
    let r = nwc(&[&"verify", &ck, &"--against", &model]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    insta::assert_snapshot!("verify_against_text", r.stdout);
    let r = nwc(&[&"verify", &ck, &"--against", &model, &"--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    insta::assert_snapshot!("verify_against_json", r.stdout);
    let r = nwc(&[&"inspect", &ck, &"--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    insta::assert_snapshot!("inspect_json", r.stdout);
    let out = tmp.path().join("out");
    assert_eq!(nwc(&[&"decompress", &ck, &out]).code, 0);
    assert_eq!(std::fs::read(out.join("model.safetensors")).unwrap(), std::fs::read(&model).unwrap(), "byte for byte");
}

#[test]
fn error_messages() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let mut lines = Vec::new();
    let mut show = |what: &str, r: Run| lines.push(format!("{what}: exit {}: {}", r.code, scrub(r.stderr.trim(), d)));
    show("compress missing", nwc(&[&"compress", &d.join("missing.safetensors"), &d.join("ck")]));
    show("verify missing", nwc(&[&"verify", &d.join("missing")]));
    show("decompress missing", nwc(&[&"decompress", &d.join("missing"), &d.join("out")]));
    show("compress into missing parent", nwc(&[&"compress", &d.join("missing.safetensors"), &d.join("no/ck")]));
    let model = d.join("model.safetensors");
    write_model(&model);
    show("compress into missing parent", nwc(&[&"compress", &model, &d.join("no/ck")]));
    let bytes = std::fs::read(&model).unwrap();
    let cut = d.join("cut.safetensors");
    std::fs::write(&cut, &bytes[..bytes.len() - 100]).unwrap();
    show("compress truncated", nwc(&[&"compress", &cut, &d.join("ck2")]));
    std::fs::write(&cut, &bytes[..20]).unwrap();
    show("compress truncated header", nwc(&[&"compress", &cut, &d.join("ck3")]));
    let raw = write(d, "in.raw", &vec![0x3Cu8; 2 * 8 * 16]);
    let outdir = d.join("enc");
    std::fs::create_dir(&outdir).unwrap();
    std::fs::write(outdir.join("keep.txt"), b"mine").unwrap();
    show("encode into non-empty", nwc(&[&"encode", &"--elem", &"bf16", &"--rows", &"8", &"--cols", &"16", &raw, &outdir]));
    show("encode into missing parent", nwc(&[&"encode", &"--elem", &"bf16", &"--rows", &"8", &"--cols", &"16", &raw, &d.join("no/enc")]));
    show("decode into missing parent", nwc(&[&"decode", &outdir, &d.join("no/out.raw")]));
    assert_eq!(std::fs::read(outdir.join("keep.txt")).unwrap(), b"mine");
    insta::assert_snapshot!("error_messages", lines.join("\n"));
}

/// `nwc doctor`: exit 0 only with a usable GPU path; without one it says so (5) and still checks
/// the CPU codec.
#[test]
fn doctor_checks_the_cpu_codec_with_or_without_a_gpu() {
    let r = nwc(&[&"doctor"]);
    assert!(r.stdout.starts_with("[ ok ] CPU codec: "), "{}", r.stdout);
    match r.code {
        0 => assert!(r.stdout.contains("the GPU path is usable"), "{}", r.stdout),
        5 => {
            println!("{}", nwc_cuda_skip_line());
            assert!(r.stdout.contains("[FAIL]") && r.stdout.contains("fix:"), "{}", r.stdout);
            assert!(r.stderr.contains("not usable"), "{}", r.stderr);
        }
        other => panic!("exit {other}: {}{}", r.stdout, r.stderr),
    }
}

/// Without a GPU the GPU half of the doctor test is a skip, and says so.
fn nwc_cuda_skip_line() -> &'static str {
    "skipped: no CUDA device (the GPU checks of `nwc doctor` reported FAIL, as they must)"
}

/// `nwc info --json`: the keys of the README, for a valid and a broken matrix.
#[test]
fn info_json() {
    use nwc_reference::Shape;
    let tmp = tempfile::tempdir().unwrap();
    let shape = Shape::new(16, 40);
    let raw = write(tmp.path(), "in.raw", &bf16_input(3, nwc_testkit::gen::Dist::Gaussian { log2_sigma: -6 }, shape));
    let dir = tmp.path().join("enc");
    encode_ok("bf16", 0, shape, &raw, &dir, &[]);
    let r = nwc(&[&"info", &dir, &"--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    insta::assert_snapshot!("info_json_valid", r.stdout);
    let hdr = dir.join("hdr.bin");
    let mut bytes = std::fs::read(&hdr).unwrap();
    bytes[0] ^= 1;
    std::fs::write(&hdr, bytes).unwrap();
    let r = nwc(&[&"info", &dir, &"--json"]);
    assert_eq!(r.code, 3);
    let j: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(j["valid"], false);
    insta::assert_snapshot!("info_json_invalid", r.stdout);
}
