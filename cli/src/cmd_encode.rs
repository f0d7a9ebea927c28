//! `nwc encode`: raw weights in, one directory of stored fields out (spec 12).

use crate::error::CliError;
use crate::store::{self, sha256_hex, write_atomic};
use nwc_reference::{encode, quantize_fp8, ElemType, Encoding, Field, FormatError, Geometry, Limits, Mode, Shape, Weights};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

pub struct EncodeArgs {
    pub mode: Mode,
    pub shape: Shape,
    pub quantize_from_bf16: bool,
    /// fp8 input with its row scales, stored as given (spec 11.4).
    pub scales: Option<PathBuf>,
    pub input: PathBuf,
    pub outdir: PathBuf,
}

/// summary.json as `nwc encode` writes it. Keys shared with peer_encode.py keep its names and
/// meanings; `bytes_total` counts every stored field (scale.bin too, when there is one).
#[derive(Serialize)]
struct SummaryOut {
    format_version: u32,
    encoder: String,
    #[serde(rename = "M")]
    rows: u64,
    #[serde(rename = "K")]
    cols: u64,
    /// The mode code (spec 2.1, 2.2), the peer library's `elem` argument.
    elem: u32,
    #[serde(rename = "type")]
    elem_type: &'static str,
    layout: u8,
    #[serde(rename = "K16")]
    k16: u64,
    blocks: u64,
    n_low: u64,
    /// Length of data.bin: align8(stream end) + 64 (spec 9.4).
    encoder_return_dl: u64,
    stream_end: u64,
    escapes: u64,
    quantized_from_bf16: bool,
    bytes_total: u64,
    /// M*K times the size of one stored element (2 for BF16, 1 for fp8).
    bytes_input: u64,
    ratio_vs_bf16: f64,
    ratio_vs_input: f64,
    exp_of_rank: [u8; 16],
    sha256: BTreeMap<&'static str, String>,
}

fn le_u32(values: impl IntoIterator<Item = u32>) -> Vec<u8> {
    values.into_iter().flat_map(u32::to_le_bytes).collect()
}

/// Reads the input after checking its size against the shape (never reads a file of the wrong size).
pub(crate) fn read_input(path: &Path, shape: Shape, elem_name: &'static str, bytes_per_weight: u64) -> Result<Vec<u8>, CliError> {
    let expected = shape.weights() * bytes_per_weight;
    let got = store::file_len(path)?.ok_or_else(|| CliError::invalid(path, "input: no such file or directory"))?;
    if got != expected {
        let (rows, cols) = (shape.rows, shape.cols);
        let msg = format!("input: {got} bytes, a {rows}x{cols} {elem_name} matrix has {expected} ({bytes_per_weight} per weight)");
        return Err(CliError::invalid(path, msg));
    }
    let bytes = fs::read(path).map_err(|e| CliError::read(path, e))?;
    if bytes.len() as u64 != expected {
        return Err(CliError::invalid(path, "input changed size while being read"));
    }
    Ok(bytes)
}

/// `--scales FILE`: M row scales, f32 little-endian, in the layout of the stored `scale` field
/// (spec 12.1; the same file the conformance protocol passes). The size is checked before the
/// file is read (rule 13.3 field-size) and every value as rule 13.19 (scale-value) would check
/// the stored field, so that `nwc encode` never writes an encoding that breaks either.
fn read_scales(path: &Path, shape: Shape) -> Result<Vec<f32>, CliError> {
    let expected = 4 * shape.rows;
    let got = store::file_len(path)?.ok_or_else(|| CliError::invalid(path, "scales: no such file or directory"))?;
    if got != expected {
        let expected = format!("{expected} (one f32 per row of {} rows)", shape.rows);
        return Err(CliError::invalid(path, format!("scales: {}", FormatError::FieldSize { field: Field::Scale, got, expected })));
    }
    let bytes = fs::read(path).map_err(|e| CliError::read(path, e))?;
    if bytes.len() as u64 != expected {
        return Err(CliError::invalid(path, "scales changed size while being read"));
    }
    let scales: Vec<f32> = bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    if let Some(row) = scales.iter().position(|s| !(s.is_finite() && *s > 0.0)) {
        let e = FormatError::ScaleValue { row: row as u64, value: format!("{}", scales[row]) };
        return Err(CliError::invalid(path, format!("scales: {e}")));
    }
    Ok(scales)
}

/// The matrix to encode, and the fp8 scales: computed when quantized (spec 11.2), given with
/// `--scales` (spec 11.4), or none (an unscaled encoding, spec 11.6).
fn weights_of(args: &EncodeArgs) -> Result<(Encoding, Option<Vec<f32>>), CliError> {
    let (mode, shape, input) = (args.mode, args.shape, &args.input);
    let encode_err = |e: nwc_reference::EncodeError| CliError::invalid(input, e.to_string());
    let bf16_input = mode.elem == ElemType::Bf16 || args.quantize_from_bf16;
    if !bf16_input {
        let scales = args.scales.as_deref().map(|p| read_scales(p, shape)).transpose()?;
        let bytes = read_input(input, shape, "fp8 e4m3", 1)?;
        return Ok((encode(mode, shape, Weights::Fp8(&bytes)).map_err(encode_err)?, scales));
    }
    let bytes = read_input(input, shape, "bf16", 2)?;
    let words: Vec<u16> = bytes.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
    drop(bytes);
    if mode.elem == ElemType::Bf16 {
        return Ok((encode(mode, shape, Weights::Bf16(&words)).map_err(encode_err)?, None));
    }
    let (fp8, scales) = quantize_fp8(&words, shape).map_err(|e| CliError::invalid(input, e.to_string()))?;
    Ok((encode(mode, shape, Weights::Fp8(&fp8)).map_err(encode_err)?, Some(scales)))
}

/// OUTDIR must be new (its parent existing: no folder is created silently) or an empty folder,
/// like `nwc compress`'s output: an encode never replaces files.
pub(crate) fn check_outdir(outdir: &Path) -> Result<(), CliError> {
    match fs::read_dir(outdir).map(|mut e| e.next().is_some()) {
        Ok(true) => Err(CliError::usage(format!("{} exists and is not empty; refusing to overwrite it", outdir.display()))),
        Ok(false) => Ok(()),
        Err(_) if outdir.exists() => Err(CliError::usage(format!("{} exists and is not a folder", outdir.display()))),
        Err(_) => crate::error::check_parent(outdir),
    }
}

pub fn run(args: &EncodeArgs) -> Result<(), CliError> {
    check_outdir(&args.outdir)?;
    // Spec 3.2 and this process's limits, before the input is read.
    let geometry = Geometry::new(args.mode, args.shape).map_err(|e| CliError::rejected(format!("{e} (--rows/--cols)")))?;
    Limits::default().check_shape(args.shape).map_err(|e| CliError::rejected(format!("{e} (--rows/--cols)")))?;
    let (enc, scales) = weights_of(args)?;
    let m = &enc.matrix;

    let mut files: Vec<(&'static str, Vec<u8>)> = vec![
        (store::DATA, m.data.clone()),
        (store::BASES, le_u32(m.bases.iter().copied())),
        (store::HDR, m.hdr.clone()),
        (store::LUT, le_u32(m.lut.iter().copied())),
        (store::LOW, m.low.clone()),
        (store::EXP_OF_RANK, enc.exp_of_rank.to_vec()),
    ];
    if let Some(s) = &scales {
        files.push((store::SCALE, le_u32(s.iter().map(|v| v.to_bits()))));
    }
    let n = args.shape.weights();
    let bytes_input = n * args.mode.elem.input_bytes() as u64;
    let bytes_total: u64 = files.iter().filter(|(name, _)| *name != store::EXP_OF_RANK).map(|(_, b)| b.len() as u64).sum();
    let summary = SummaryOut {
        format_version: nwc_reference::FORMAT_VERSION,
        encoder: format!("nwc-reference {}", env!("CARGO_PKG_VERSION")),
        rows: args.shape.rows,
        cols: args.shape.cols,
        elem: args.mode.code(),
        elem_type: store::type_name(args.mode),
        layout: args.mode.layout.number(),
        k16: geometry.k16,
        blocks: geometry.blocks,
        n_low: geometry.n_low,
        encoder_return_dl: m.data.len() as u64,
        stream_end: enc.stream_end,
        escapes: enc.escapes,
        quantized_from_bf16: args.quantize_from_bf16,
        bytes_total,
        bytes_input,
        ratio_vs_bf16: bytes_total as f64 / (2 * n) as f64,
        ratio_vs_input: bytes_total as f64 / bytes_input as f64,
        exp_of_rank: enc.exp_of_rank,
        sha256: files.iter().map(|(name, b)| (*name, sha256_hex(b))).collect(),
    };
    let json = serde_json::to_vec_pretty(&summary).expect("the summary serialises");
    files.push((store::SUMMARY, json));

    if !args.outdir.exists() {
        fs::create_dir(&args.outdir).map_err(|e| CliError::write(&args.outdir, e))?;
    }
    let input = store::resolved(&args.input);
    for (name, _) in &files {
        if store::resolved(&args.outdir.join(name)) == input {
            return Err(CliError::usage(format!("the input {} would be overwritten by the output {name}", args.input.display())));
        }
    }
    for (name, bytes) in &files {
        write_atomic(&args.outdir.join(name), bytes)?;
    }
    // A scale.bin left over from an earlier quantized encode would be read as this matrix's.
    if scales.is_none() {
        let stale = args.outdir.join(store::SCALE);
        if stale.exists() {
            fs::remove_file(&stale).map_err(|e| CliError::write(&stale, e))?;
        }
    }
    println!(
        "{} {}: {} bytes stored ({:.4} of BF16), {} escapes -> {}",
        args.mode,
        args.shape,
        bytes_total,
        summary.ratio_vs_bf16,
        enc.escapes,
        args.outdir.display()
    );
    Ok(())
}
