//! `nwc-broken MODE ARGS...`: deliberately faulty encoders and decoders that speak the
//! nwc-conform protocol, so the suite can show it catches them. Built on the reference codec;
//! each mode breaks exactly one thing.
//!
//! Encoder modes (`nwc-broken MODE --elem E --layout L --rows M --cols K [--scales FILE] INPUT OUTDIR`):
//!   encode-ok          the reference encoder (control)
//!   encode-noisy-slack fills every unspecified byte (spec 9.7) with 0xA5: still canonical
//!   encode-flip-bit    flips one bit of data.bin
//!   encode-raw-padding writes a non-zero raw-plane pad slot (breaks rule 13.18)
//!   encode-wrong-ranks swaps ranks 0 and 1 in exp_of_rank.bin only
//!   encode-reranked    swaps ranks 0 and 1 and re-codes consistently: valid, not canonical
//!   encode-silent      exits 0 and writes nothing
//!   encode-hang        never finishes
//!   encode-no-scales   ignores `--scales` (writes no scale.bin)
//!   encode-wrong-scale stores the given scales with one bit of `scale[0]` flipped
//! Decoder modes (`nwc-broken MODE DIR OUT.raw`):
//!   decode-ok            the reference decoder (control)
//!   decode-no-validation writes zeros instead of rejecting an invalid encoding
//!   decode-partial       rejects invalid encodings but leaves a partial OUT.raw
//! Transcoder modes (`nwc-broken MODE DIR OUTDIR` or `nwc-broken MODE --rows M --cols K INPUT OUTDIR`):
//!   transcode-ok            the reference transcoder (control)
//!   transcode-flip-bit      flips one bit of exec_sm.bin
//!   transcode-no-validation writes the layout of an all-zero matrix instead of refusing an invalid encoding
//!   transcode-fp8           transcodes FP8 encodings (their bytes as BF16 words) instead of refusing them
//! Execution-layout decoder modes (`nwc-broken MODE DIR OUT.raw`, DIR holding `exec_*.bin`):
//!   exec-decode-ok            the reference's validation and decode (control)
//!   exec-decode-no-validation writes zeros instead of rejecting an invalid layout
//!   exec-decode-partial       rejects invalid layouts but leaves a partial OUT.raw
//!   exec-decode-unnamed       rejects invalid layouts without naming the rule
//!   exec-decode-wrong-rule    rejects invalid layouts naming the rule after the first broken one

use nwc_conformance::exec;
use nwc_conformance::fields::{file_name, parse, read_dir, to_raw, RawFields, SUMMARY};
use nwc_reference::exec::{decode_exec, encode_exec, transcode, ExecDecodeError, ExecFormatError, ExecMatrix};
use nwc_reference::tiling::{lane_positions, write_raw};
use nwc_reference::{decode, encode_le_bytes, Elements, Encoding, Geometry, Mode, Shape};
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some(mode) if mode.starts_with("encode-") => encoder(mode, &args[1..]),
        Some(mode) if mode.starts_with("decode-") => decoder(mode, &args[1..]),
        Some(mode) if mode.starts_with("transcode-") => transcoder(mode, &args[1..]),
        Some(mode) if mode.starts_with("exec-decode-") => exec_decoder(mode, &args[1..]),
        _ => Err("usage: nwc-broken MODE ARGS... (see the source for the modes)".into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nwc-broken: {e}");
            ExitCode::FAILURE
        }
    }
}

fn flag<'a>(args: &'a [String], name: &str) -> Result<&'a str, String> {
    let i = args.iter().position(|a| a == name).ok_or(format!("missing {name}"))?;
    args.get(i + 1).map(String::as_str).ok_or(format!("{name} needs a value"))
}

fn number(args: &[String], name: &str) -> Result<u64, String> {
    flag(args, name)?.parse().map_err(|e| format!("{name}: {e}"))
}

fn encoder(mode: &str, args: &[String]) -> Result<(), String> {
    if mode == "encode-hang" {
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
    let [.., input, out] = args else { return Err("missing INPUT OUTDIR".into()) };
    let elem = match flag(args, "--elem")? {
        "bf16" => 0,
        "fp8" => 1,
        other => return Err(format!("--elem {other}")),
    };
    let code = elem | (number(args, "--layout")? as u32) << 4;
    let m = Mode::from_code(code).map_err(|e| e.to_string())?;
    let shape = Shape::new(number(args, "--rows")?, number(args, "--cols")?);
    let bytes = std::fs::read(input).map_err(|e| format!("{input}: {e}"))?;
    let mut enc = encode_le_bytes(m, shape, &bytes).map_err(|e| e.to_string())?;
    // Spec 11.4: scales given with FP8 bytes are stored as given.
    let given = args.iter().position(|a| a == "--scales").filter(|_| mode != "encode-no-scales");
    if let Some(i) = given {
        let path = args.get(i + 1).ok_or("--scales needs a value")?;
        let bytes = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
        enc.matrix.scale = Some(bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect());
    }
    match mode {
        "encode-ok" => {}
        "encode-silent" => return Ok(()),
        "encode-noisy-slack" => noisy_slack(&mut enc),
        "encode-flip-bit" => enc.matrix.data[0] ^= 0x10,
        "encode-no-scales" => {}
        "encode-wrong-scale" => {
            if let Some(s) = enc.matrix.scale.as_mut() {
                s[0] = f32::from_bits(s[0].to_bits() ^ 1);
            }
        }
        "encode-raw-padding" => raw_padding(&mut enc),
        "encode-wrong-ranks" => enc.exp_of_rank.swap(0, 1),
        "encode-reranked" => {
            enc.exp_of_rank.swap(0, 1);
            enc.matrix = nwc_testkit::corrupt::recode(&enc.matrix, &enc.exp_of_rank, &|_| false);
        }
        _ => return Err(format!("unknown mode {mode}")),
    }
    let mut raw = to_raw(&enc.matrix);
    raw.insert("exp_of_rank".into(), enc.exp_of_rank.to_vec());
    let dir = Path::new(out);
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    for (name, blob) in &raw {
        std::fs::write(dir.join(file_name(name)), blob).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Spec 9.7: gaps between blocks, data from the stream end on, and 512 bytes of raw slack.
fn noisy_slack(enc: &mut Encoding) {
    let m = &mut enc.matrix;
    let mut end = 0usize;
    for (b, &base) in m.bases.iter().enumerate() {
        m.data[end..base as usize].fill(0xA5);
        end = base as usize + 4 * m.hdr[32 * b..32 * b + 32].iter().map(|&w| usize::from(w)).sum::<usize>();
    }
    m.data[end..].fill(0xA5);
    m.data.extend([0xA5; 64]);
    m.low.extend([0xA5; 512]);
}

/// Puts 1 into the first raw-plane pad slot (a filler position's raw part), if the shape has one.
fn raw_padding(enc: &mut Encoding) {
    let m = &mut enc.matrix;
    let g = Geometry::new(m.mode, m.shape).expect("encoded, so the shape is valid");
    for block in 0..g.blocks {
        for lane in 0..32 {
            if let Some(slot) = lane_positions(&g, block, lane).into_iter().find(|p| !p.real).and_then(|p| p.raw) {
                write_raw(&mut m.low, slot, 1);
                return;
            }
        }
    }
}

/// The summary.json of a directory the runner laid out.
fn read_summary(dir: &Path) -> Result<serde_json::Value, String> {
    let text = std::fs::read_to_string(dir.join(SUMMARY)).map_err(|e| format!("{SUMMARY}: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("{SUMMARY}: {e}"))
}

fn decoder(mode: &str, args: &[String]) -> Result<(), String> {
    let [dir, out] = args else { return Err("usage: nwc-broken MODE DIR OUT.raw".into()) };
    let dir = Path::new(dir);
    let summary = read_summary(dir)?;
    let get = |key: &str| summary.get(key).and_then(|v| v.as_u64()).ok_or(format!("{SUMMARY}: no `{key}`"));
    let (code, rows, cols) = (get("elem")? as u32, get("M")?, get("K")?);
    let raw: RawFields = read_dir(dir)?;
    let decoded = parse(code, rows, cols, &raw).map_err(Into::into).and_then(|m| decode(&m));
    match (decoded, mode) {
        (Ok(d), _) => std::fs::write(out, d.to_le_bytes()).map_err(|e| e.to_string()),
        (Err(_), "decode-no-validation") => {
            // Any plausible-looking output will do; capped so a hostile shape cannot exhaust memory.
            let size = if code & 15 == 1 { 1 } else { 2 };
            let len = rows.saturating_mul(cols).saturating_mul(size).min(1 << 24);
            std::fs::write(out, vec![0u8; len as usize]).map_err(|e| e.to_string())
        }
        (Err(e), "decode-partial") => {
            std::fs::write(out, b"partial").map_err(|e| e.to_string())?;
            Err(e.to_string())
        }
        (Err(e), _) => Err(e.to_string()),
    }
}

fn transcoder(mode: &str, args: &[String]) -> Result<(), String> {
    let [.., input, out] = args else { return Err("missing INPUT OUTDIR".into()) };
    let mut exec: ExecMatrix = if args.iter().any(|a| a == "--rows") {
        let shape = Shape::new(number(args, "--rows")?, number(args, "--cols")?);
        let bytes = std::fs::read(input).map_err(|e| format!("{input}: {e}"))?;
        let words: Vec<u16> = bytes.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
        encode_exec(shape, &words).map_err(|e| e.to_string())?
    } else {
        let dir = Path::new(input);
        let summary = read_summary(dir)?;
        let get = |key: &str| summary.get(key).and_then(|v| v.as_u64()).ok_or(format!("{SUMMARY}: no `{key}`"));
        let (code, rows, cols) = (get("elem")? as u32, get("M")?, get("K")?);
        let parsed = parse(code, rows, cols, &read_dir(dir)?).map_err(|e| e.to_string());
        let shape = Shape::new(rows, cols);
        match (mode, parsed.map(|m| decode(&m).map(|d| (m, d)))) {
            ("transcode-no-validation", Err(_) | Ok(Err(_))) => {
                encode_exec(shape, &vec![0u16; (rows * cols) as usize]).map_err(|e| e.to_string())?
            }
            ("transcode-fp8", Ok(Ok((_, d)))) if matches!(d.elements, Elements::Fp8(_)) => {
                let Elements::Fp8(bytes) = &d.elements else { unreachable!() };
                encode_exec(shape, &bytes.iter().map(|&b| u16::from(b)).collect::<Vec<_>>()).map_err(|e| e.to_string())?
            }
            (_, Ok(Ok((m, _)))) => transcode(&m).map_err(|e| e.to_string())?,
            (_, Ok(Err(e))) => return Err(e.to_string()),
            (_, Err(e)) => return Err(e),
        }
    };
    match mode {
        "transcode-ok" | "transcode-no-validation" | "transcode-fp8" => {}
        "transcode-flip-bit" => {
            if let Some(b) = exec.sm.first_mut() {
                *b ^= 0x01;
            }
        }
        _ => return Err(format!("unknown mode {mode}")),
    }
    let dir = Path::new(out);
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    for (field, blob) in exec.to_le_fields() {
        std::fs::write(dir.join(format!("exec_{}.bin", field.name())), blob).map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn exec_decoder(mode: &str, args: &[String]) -> Result<(), String> {
    let [dir, out] = args else { return Err("usage: nwc-broken MODE DIR OUT.raw".into()) };
    let dir = Path::new(dir);
    let summary = read_summary(dir)?;
    // Spec 20.9.1: a shape the metadata does not give breaks exec-shape-range.
    let get = |key: &str| summary.get(key).and_then(|v| v.as_u64()).ok_or(format!("exec-shape-range (spec 20.9.1): {SUMMARY}: no `{key}`"));
    let (rows, cols) = (get("M")?, get("K")?);
    let decoded = exec::parse(rows, cols, &exec::read_exec_dir(dir)?).map_err(Into::into).and_then(|m| decode_exec(&m));
    let Err(e) = decoded else {
        let words = decoded.expect("checked").words;
        return std::fs::write(out, words.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>()).map_err(|e| e.to_string());
    };
    let ExecDecodeError::Format(f) = &e else { return Err(e.to_string()) };
    match mode {
        "exec-decode-ok" => Err(e.to_string()),
        // Capped so that a hostile shape cannot exhaust memory.
        "exec-decode-no-validation" => {
            std::fs::write(out, vec![0u8; rows.saturating_mul(cols).saturating_mul(2).min(1 << 24) as usize]).map_err(|e| e.to_string())
        }
        "exec-decode-partial" => {
            std::fs::write(out, b"partial").map_err(|e| e.to_string())?;
            Err(e.to_string())
        }
        "exec-decode-unnamed" => Err("the execution layout is invalid".into()),
        "exec-decode-wrong-rule" => {
            let rules = ExecFormatError::RULES;
            let next = rules[(rules.iter().position(|(r, _)| *r == f.rule()).expect("a rule of 20.9") + 1) % rules.len()];
            Err(format!("{} (spec {}): checked in another order", next.0, next.1))
        }
        _ => Err(format!("unknown mode {mode}")),
    }
}
