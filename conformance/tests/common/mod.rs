//! A tiny, fixed corpus written with the reference codec (same schema as `vectors/`), so the
//! runner can be tested without the full corpus: the four modes, ragged shapes with pad slots,
//! FP8 with scales, a valid non-canonical encoding, and invalid and malformed vectors.
#![allow(dead_code)]

use nwc_conformance::corpus::sha256_hex;
use nwc_conformance::fields::{to_raw, RawFields};
use nwc_conformance::manifest::{GatherCase, Kind, Manifest, MatvecCase, Vector, CORPUS_VERSION};
use nwc_reference::tiling::{lane_positions, write_raw};
use nwc_reference::{decode, encode_le_bytes, quantize_fp8, EncodedMatrix, Geometry, Mode, Shape};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Deterministic pseudo-random numbers (64-bit LCG, top bits).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) as u32
    }
    /// A value in [-1, 1).
    fn unit(&mut self) -> f32 {
        (self.next() % 65536) as f32 / 32768.0 - 1.0
    }
    /// A BF16 word near N(0, 0.05): a small spread of exponents, as in real weights.
    fn weight(&mut self) -> u16 {
        let v = (self.unit() + self.unit() + self.unit()) * 0.05;
        half::bf16::from_f32(v).to_bits()
    }
}

struct Writer {
    dir: PathBuf,
    vectors: Vec<Vector>,
}

fn le16(w: &[u16]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn le32f(w: &[f32]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

impl Writer {
    fn file(&self, v: &mut Vector, name: &str, bytes: &[u8]) -> String {
        let rel = format!("{}/{name}.bin", v.id);
        std::fs::create_dir_all(self.dir.join(&v.id)).unwrap();
        std::fs::write(self.dir.join(&rel), bytes).unwrap();
        v.sha256.insert(rel.clone(), sha256_hex(bytes));
        rel
    }

    fn vector(&self, id: &str, kind: Kind, mode_code: u32, shape: Shape, description: &str) -> Vector {
        Vector {
            id: id.into(),
            kind,
            representation: Default::default(),
            transcoded_from: Vec::new(),
            transcode_refused_from: Vec::new(),
            clauses: vec![],
            description: description.into(),
            mode_code,
            elem: if mode_code & 15 == 1 { "fp8" } else { "bf16" }.into(),
            layout: (mode_code >> 4) & 15,
            rows: shape.rows,
            cols: shape.cols,
            input: None,
            fields: BTreeMap::new(),
            stream_end: None,
            expected_error: None,
            also_broken: vec![],
            quantized_from: None,
            dequant: None,
            gathers: vec![],
            matvecs: vec![],
            sha256: BTreeMap::new(),
        }
    }

    fn fields(&self, v: &mut Vector, raw: &RawFields) {
        for (name, bytes) in raw {
            let rel = self.file(v, name, bytes);
            v.fields.insert(name.clone(), rel);
        }
    }

    /// Expected dequant, one gather and one matvec (batch 2, with bias) from the reference.
    fn outputs(&self, v: &mut Vector, m: &EncodedMatrix, rng: &mut Lcg) {
        let d = decode(m).unwrap();
        let rel = self.file(v, "dequant", &le16(&d.dequant()));
        v.dequant = Some(rel);
        let rows: Vec<u64> = vec![m.shape.rows - 1, 0, m.shape.rows / 2];
        let out = self.file(v, "gather0", &le16(&d.gather(&rows).unwrap()));
        v.gathers.push(GatherCase { rows, output: out });
        let x: Vec<f32> = (0..2 * m.shape.cols).map(|_| rng.unit()).collect();
        let bias: Vec<f32> = (0..m.shape.rows).map(|_| rng.unit()).collect();
        let y = d.matvec(&x, 2, Some(&bias)).unwrap();
        let y16 = d.matvec_bf16(&x, 2, Some(&bias)).unwrap();
        let case = MatvecCase {
            batch: 2,
            activations: self.file(v, "matvec0-x", &le32f(&x)),
            bias: Some(self.file(v, "matvec0-bias", &le32f(&bias))),
            output_f32: self.file(v, "matvec0-y", &le32f(&y)),
            output_bf16: self.file(v, "matvec0-y16", &le16(&y16)),
            bound: None,
        };
        v.matvecs.push(case);
    }
}

/// Input bytes for a mode: BF16 words, or fp8 bytes quantized from them (with their scales).
/// FP8 only: the row scales and the BF16 source bytes the input was quantized from.
type Quantized = (Vec<f32>, Vec<u8>);

fn input_for(mode: Mode, shape: Shape, rng: &mut Lcg) -> (Vec<u8>, Option<Quantized>) {
    let words: Vec<u16> = (0..shape.weights()).map(|_| rng.weight()).collect();
    if mode.code() & 15 == 1 {
        let (bytes, scales) = quantize_fp8(&words, shape).unwrap();
        (bytes, Some((scales, le16(&words))))
    } else {
        (le16(&words), None)
    }
}

/// Writes the mini corpus into `dir` and returns the manifest path's directory.
pub fn write_mini_corpus(dir: &Path) -> PathBuf {
    let mut w = Writer { dir: dir.to_owned(), vectors: vec![] };
    let mut rng = Lcg(0x6e7763);
    let cases = [
        (Mode::BF16_L0, Shape::new(13, 40)),
        (Mode::FP8_L0, Shape::new(9, 24)),
        (Mode::BF16_L1, Shape::new(3, 33)),
        (Mode::FP8_L1, Shape::new(5, 70)),
    ];
    let mut first: Option<(Vector, EncodedMatrix)> = None;
    for (mode, shape) in cases {
        let id = format!("canonical-{}-l{}-{}x{}", mode.elem.name(), mode.layout.number(), shape.rows, shape.cols);
        let mut v = w.vector(&id, Kind::Canonical, mode.code(), shape, "ragged shape, pad slots");
        let (input, quantized) = input_for(mode, shape, &mut rng);
        let mut enc = encode_le_bytes(mode, shape, &input).unwrap();
        if let Some((scales, source)) = quantized {
            enc.matrix.scale = Some(scales);
            v.quantized_from = Some(w.file(&mut v, "bf16-source", &source));
        }
        v.input = Some(w.file(&mut v, "input", &input));
        w.fields(&mut v, &to_raw(&enc.matrix));
        let ranks = w.file(&mut v, "exp_of_rank", &enc.exp_of_rank);
        v.fields.insert("exp_of_rank".into(), ranks);
        v.stream_end = Some(enc.stream_end);
        w.outputs(&mut v, &enc.matrix, &mut rng);
        if first.is_none() {
            first = Some((v.clone(), enc.matrix.clone()));
        }
        w.vectors.push(v);
    }
    let (base, m) = first.unwrap();
    let input = std::fs::read(dir.join(base.input.as_ref().unwrap())).unwrap();

    // Valid: the canonical fields with 0xA5 in every unspecified byte and both slacks (spec 9.7).
    let mut v = w.vector("valid-bf16-l0-noisy-slack", Kind::Valid, base.mode_code, m.shape, "garbage in unspecified bytes");
    let mut noisy = m.clone();
    let end = base.stream_end.unwrap() as usize;
    noisy.data[end..].fill(0xA5);
    noisy.data.extend([0xA5; 64]);
    noisy.low.extend([0xA5; 512]);
    v.input = Some(w.file(&mut v, "input", &input));
    w.fields(&mut v, &to_raw(&noisy));
    w.outputs(&mut v, &noisy, &mut rng);
    w.vectors.push(v);

    let g = Geometry::new(m.mode, m.shape).unwrap();
    let broken = |f: &dyn Fn(&mut EncodedMatrix)| {
        let mut b = m.clone();
        f(&mut b);
        b
    };
    let invalid = [
        ("invalid-offset-mismatch", Kind::Invalid, "offset-mismatch", base.mode_code, broken(&|b| b.bases[1] += 8)),
        (
            "invalid-raw-padding",
            Kind::Invalid,
            "raw-padding",
            base.mode_code,
            broken(&|b| {
                let pad = (0..32).flat_map(|l| lane_positions(&g, 0, l)).find(|p| !p.real && p.raw.is_some()).unwrap();
                write_raw(&mut b.low, pad.raw.unwrap(), 3);
            }),
        ),
        ("malformed-mode-code", Kind::Malformed, "mode-code", 5, m.clone()),
        ("malformed-data-too-short", Kind::Malformed, "data-too-short", base.mode_code, broken(&|b| b.data.truncate(end))),
    ];
    for (id, kind, rule, code, b) in invalid {
        let mut v = w.vector(id, kind, code, m.shape, rule);
        v.expected_error = Some(rule.into());
        w.fields(&mut v, &to_raw(&b));
        w.vectors.push(v);
    }

    let manifest = Manifest {
        format_version: 10,
        corpus_version: CORPUS_VERSION,
        generator: "conformance/tests/common/mod.rs (mini corpus)".into(),
        seed: 0x6e7763,
        vectors: w.vectors,
    };
    std::fs::write(dir.join("manifest.json"), serde_json::to_string_pretty(&manifest).unwrap()).unwrap();
    dir.to_owned()
}

/// The runner's view of a mini corpus in a fresh temporary directory (kept alive by the guard).
pub fn mini_corpus() -> (tempfile::TempDir, nwc_conformance::corpus::Corpus) {
    let tmp = tempfile::tempdir().unwrap();
    write_mini_corpus(tmp.path());
    let corpus = nwc_conformance::corpus::Corpus::load(tmp.path()).unwrap();
    (tmp, corpus)
}
