//! `nwc decode` and `nwc info` on an execution layout (spec 20), the directory `nwc transcode`
//! writes: it decodes to the matrix; `info` shows it (snapshot); every field file damaged in the
//! battery's ways gives exit 0 or 3, never a crash, and on 3 the broken rule of spec 20.9 with
//! its clause and file, and no output (spec 20.10: nothing derived from an invalid layout).

mod common;

use common::*;
use nwc_reference::exec::{encode_exec_with_bases, ExecFormatError};
use nwc_reference::Shape;
use nwc_testkit::gen::Dist;
use std::fs;
use std::path::{Path, PathBuf};

const FIELDS: [&str; 5] = ["exec_sm.bin", "exec_codes.bin", "exec_base.bin", "exec_esc_start.bin", "exec_esc.bin"];

/// A 9 x 1030 matrix (3 tiles per row, 10 pad columns) transcoded by the CLI, and its raw input.
fn exec_dir(tmp: &Path) -> (PathBuf, Vec<u8>) {
    let shape = Shape::new(9, 1030);
    let input = bf16_input(11, Dist::HeavyTail, shape);
    let raw = write(tmp, "w.bf16", &input);
    let dir = tmp.join("exec");
    let r = nwc(&[&"transcode", &"--rows", &"9", &"--cols", &"1030", &raw, &dir]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    (dir, input)
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

#[test]
fn decodes_to_the_matrix_and_info_shows_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, input) = exec_dir(tmp.path());
    let out = tmp.path().join("out.bf16");
    let r = nwc(&[&"decode", &dir, &out]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(fs::read(&out).unwrap(), input, "spec 20.13: the decoded matrix is the input");
    let info = nwc(&[&"info", &dir]);
    assert_eq!(info.code, 0, "{}", info.stderr);
    insta::assert_snapshot!("exec_info", info.stdout);
    let json: serde_json::Value = serde_json::from_str(&nwc(&[&"info", &dir, &"--json"]).stdout).unwrap();
    assert_eq!(
        (json["representation"].as_str(), json["valid"].as_bool(), json["canonical"].as_bool()),
        (Some("exec"), Some(true), Some(true))
    );
    // An output path that is one of the input's files is refused.
    let r = nwc(&[&"decode", &dir, &dir.join("exec_esc.bin")]);
    assert_eq!(r.code, 2, "{}", r.stderr);
}

#[test]
fn other_bases_are_valid_not_canonical() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, input) = exec_dir(tmp.path());
    let words: Vec<u16> = input.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
    let base = fs::read(dir.join("exec_base.bin")).unwrap();
    // Every row's window moved 2 down (up where that leaves 1..242): spec 20.11's other encodings.
    let other: Vec<u8> = base.iter().map(|&b| if b > 2 { b - 2 } else { b + 2 }).collect();
    let m = encode_exec_with_bases(Shape::new(9, 1030), &words, &other).unwrap();
    for (field, bytes) in m.to_le_fields() {
        fs::write(dir.join(format!("exec_{}.bin", field.name())), bytes).unwrap();
    }
    let info = nwc(&[&"info", &dir]);
    assert_eq!(info.code, 0, "{}", info.stderr);
    assert!(info.stdout.contains("bases               not canonical: row 0 has base"), "{}", info.stdout);
    let out = tmp.path().join("out.bf16");
    assert_eq!(nwc(&[&"decode", &dir, &out]).code, 0);
    assert_eq!(fs::read(&out).unwrap(), input);
}

#[test]
fn named_errors_locate_the_rule() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, _) = exec_dir(tmp.path());
    let mut lines = Vec::new();
    type Edit = fn(&mut Vec<u8>);
    let cases: [(&str, &str, Edit); 6] = [
        ("summary.json without K", "summary.json", |b| {
            let mut j: serde_json::Value = serde_json::from_slice(b).unwrap();
            j.as_object_mut().unwrap().remove("K");
            *b = serde_json::to_vec(&j).unwrap();
        }),
        ("base 0 in row 4", "exec_base.bin", |b| b[4] = 0),
        ("an sm pad byte set", "exec_sm.bin", |b| b[1030] = 1),
        ("esc_start[0] = 1", "exec_esc_start.bin", |b| b[0] = 1),
        ("one escape byte more", "exec_esc.bin", |b| b.push(0)),
        ("exec_codes.bin missing", "exec_codes.bin", |b| b.clear()),
    ];
    for (i, (what, file, edit)) in cases.iter().enumerate() {
        let case = tmp.path().join(format!("case{i}"));
        copy_dir(&dir, &case);
        let mut bytes = fs::read(case.join(file)).unwrap();
        edit(&mut bytes);
        if bytes.is_empty() {
            fs::remove_file(case.join(file)).unwrap();
        } else {
            fs::write(case.join(file), bytes).unwrap();
        }
        let out = tmp.path().join(format!("out{i}"));
        let r = nwc(&[&"decode", &case, &out]);
        assert_eq!(r.code, 3, "{what}: {}", r.stderr);
        assert!(!out.exists(), "{what}: a refused decode writes nothing");
        let text = r.stderr.trim().replace(&tmp.path().display().to_string(), "[TMP]");
        lines.push(format!("{what}: {text}"));
    }
    insta::assert_snapshot!("exec_errors", lines.join("\n"));
}

#[test]
fn every_field_damaged_every_way() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, input) = exec_dir(tmp.path());
    let mut case = 0;
    for file in FIELDS.iter().copied().chain(["summary.json"]) {
        let good = fs::read(dir.join(file)).unwrap();
        let mut flipped = good.clone();
        flipped[good.len() / 2] ^= 0x81;
        let damages: [(&str, Option<Vec<u8>>); 6] = [
            ("absent", None),
            ("zero-length", Some(Vec::new())),
            ("truncated by one byte", Some(good[..good.len() - 1].to_vec())),
            ("one byte longer", Some([good.clone(), vec![0x5A]].concat())),
            ("a middle byte flipped", Some(flipped)),
            ("the bytes reversed", Some(good.iter().rev().copied().collect())),
        ];
        for (how, bytes) in damages {
            case += 1;
            let damaged = tmp.path().join(format!("d{case}"));
            copy_dir(&dir, &damaged);
            match &bytes {
                None => fs::remove_file(damaged.join(file)).unwrap(),
                Some(b) => fs::write(damaged.join(file), b).unwrap(),
            }
            let what = format!("{file} {how}");
            let out = tmp.path().join(format!("o{case}"));
            let r = nwc(&[&"decode", &damaged, &out]);
            assert!(!r.stderr.contains("panicked") && (r.code == 0 || r.code == 3), "{what}: exit {}: {}", r.code, r.stderr);
            if r.code == 0 {
                // A changed sm byte is a valid layout of another matrix (the layout has no
                // checksum): accepted, with a complete output.
                assert_eq!(fs::metadata(&out).unwrap().len(), input.len() as u64, "{what}");
            } else {
                assert!(!out.exists(), "{what}: a refused decode writes nothing");
                let named = ExecFormatError::RULES.iter().find(|(rule, _)| r.stderr.contains(rule));
                if let Some((rule, clause)) = named {
                    assert!(r.stderr.contains(&format!("{rule} (spec {clause})")), "{what}: {}", r.stderr);
                }
                assert!(r.stderr.contains(".bin") || r.stderr.contains("summary.json"), "{what}: no file named: {}", r.stderr);
            }
            // A wrong size of a fixed-size field (spec 20.9.2) or of esc (20.9.8) cannot pass.
            let resized = !matches!(how, "a middle byte flipped" | "the bytes reversed");
            assert!(r.code == 3 || !resized, "{what}: accepted");
            let info = nwc(&[&"info", &damaged]);
            assert!(!info.stderr.contains("panicked") && (info.code == 0 || info.code == 3), "{what}: info exit {}", info.code);
        }
    }
    assert_eq!(case, 36);
}
