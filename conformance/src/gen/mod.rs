//! The golden-vector generator behind `nwc-vectors`: canonical vectors from the reference encoder,
//! valid non-canonical variants, and invalid/malformed vectors (one or more per validity rule),
//! each with the files a runner needs and the spec clauses it exercises.
//!
//! Everything is a pure function of the seed and tier, so regenerating gives byte-identical files
//! (`conformance/tests/coverage.rs` checks the committed corpus this way).

pub mod cases;
pub mod coverage;
pub mod expect;
pub mod variants;
pub mod writer;

use crate::manifest::{Kind, Manifest, Vector, CORPUS_VERSION};
use cases::{Case, Input};
use nwc_reference::{decode, encode, DecodeError, Elements, Encoding, FormatError, Mode, Shape, Weights};
use nwc_testkit::corrupt;
use std::collections::BTreeMap;
use std::io;
use std::path::Path;
use writer::{le_u16, Writer};

/// The seed of the committed corpus.
pub const DEFAULT_SEED: u64 = 0x4E57_4331_3030; // "NWC100"

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    /// The committed corpus (a few MB).
    Small,
    /// More and larger random matrices; generated on demand, never committed.
    Large,
}

impl Tier {
    pub fn name(self) -> &'static str {
        match self {
            Tier::Small => "small",
            Tier::Large => "large",
        }
    }
}

/// Totals of one generation run.
#[derive(Debug, Default)]
pub struct Summary {
    pub by_kind_and_mode: BTreeMap<(String, u32), u64>,
    pub files: u64,
    pub bytes: u64,
}

fn elem_name(code: u32) -> String {
    match code & 0xF {
        0 => "bf16".into(),
        1 => "fp8".into(),
        other => format!("elem{other}"),
    }
}

fn new_vector(id: String, kind: Kind, mode_code: u32, rows: u64, cols: u64, description: String) -> Vector {
    Vector {
        id,
        kind,
        clauses: Vec::new(),
        description,
        mode_code,
        elem: elem_name(mode_code),
        layout: (mode_code >> 4) & 0xF,
        rows,
        cols,
        input: None,
        fields: BTreeMap::new(),
        stream_end: None,
        expected_error: None,
        also_broken: Vec::new(),
        quantized_from: None,
        dequant: None,
        gathers: Vec::new(),
        matvecs: Vec::new(),
        sha256: BTreeMap::new(),
    }
}

fn set_clauses(v: &mut Vector, clauses: impl IntoIterator<Item = &'static str>) {
    let mut c: Vec<String> = clauses.into_iter().map(str::to_owned).collect();
    c.sort_by_key(|id| coverage::clause_key(id));
    c.dedup();
    v.clauses = c;
}

fn mode_tag(mode: Mode) -> String {
    format!("{}-l{}", mode.elem.name(), mode.layout.number())
}

fn encode_case(case: &Case) -> Encoding {
    let mut enc = match &case.input {
        Input::Bf16(w) => encode(case.mode, case.shape, Weights::Bf16(w)),
        Input::Fp8(b) => encode(case.mode, case.shape, Weights::Fp8(b)),
    }
    .unwrap_or_else(|e| panic!("case {}: {e}", case.name));
    enc.matrix.scale = case.scale.clone();
    enc
}

/// Decodes `m` and checks it carries exactly the case's matrix (spec 15.1).
fn decode_checked(case: &Case, m: &nwc_reference::EncodedMatrix, what: &str) -> nwc_reference::DecodedMatrix {
    let d = decode(m).unwrap_or_else(|e| panic!("{what} of {}: {e}", case.name));
    let same = match (&d.elements, &case.input) {
        (Elements::Bf16(a), Input::Bf16(b)) => a == b,
        (Elements::Fp8(a), Input::Fp8(b)) => a == b,
        _ => false,
    };
    assert!(same && d.scale == case.scale, "{what} of {} does not decode to its matrix", case.name);
    d
}

fn canonical_vector(w: &mut Writer, seed: u64, case: &Case, enc: &Encoding) -> io::Result<Vector> {
    let id = format!("canonical-{}-{}", mode_tag(case.mode), case.name);
    let about = format!("{}: {} ({}), reference encoder output", case.mode, case.shape, case.about);
    let mut v = new_vector(id, Kind::Canonical, case.mode.code(), case.shape.rows, case.shape.cols, about);
    set_clauses(&mut v, cases::clauses(case, enc));
    if let Some(expected) = &case.example_exp_of_rank {
        assert_eq!(&enc.exp_of_rank[..], &expected[..], "{}: exp_of_rank differs from the spec's example", case.name);
    }
    let input = w.put(&mut v, "input", &case.input.le_bytes())?;
    v.input = Some(input);
    if let Some(source) = &case.quantized_from {
        let path = w.put(&mut v, "quantized-from", &le_u16(source))?;
        v.quantized_from = Some(path);
    }
    w.put_fields(&mut v, &enc.matrix)?;
    let eor = w.put(&mut v, "exp_of_rank", &enc.exp_of_rank)?;
    v.fields.insert("exp_of_rank".into(), eor);
    v.stream_end = Some(enc.stream_end);
    let d = decode_checked(case, &enc.matrix, "canonical encoding");
    let mut inputs = expect::standard_inputs(seed, case.shape.rows, case.shape.cols);
    for (input, expected) in &case.example_matvecs {
        let got = d.matvec_bf16(&input.x, input.batch, input.bias.as_deref()).expect("sizes match");
        assert_eq!(&got, expected, "{}: matvec differs from the spec's example", case.name);
    }
    inputs.extend(case.example_matvecs.iter().map(|(i, _)| expect::MatvecInput { batch: i.batch, x: i.x.clone(), bias: i.bias.clone() }));
    expect::write_results(w, &mut v, &d, &inputs)?;
    Ok(v)
}

fn valid_vectors(w: &mut Writer, seed: u64, case: &Case, enc: &Encoding) -> io::Result<Vec<Vector>> {
    let mut out = Vec::new();
    for variant in variants::valid_variants(enc, &case.input) {
        let id = format!("valid-{}-{}-{}", mode_tag(case.mode), case.name, variant.suffix);
        let about = format!("{}: {} ({}): {}", case.mode, case.shape, case.about, variant.about);
        let mut v = new_vector(id, Kind::Valid, case.mode.code(), case.shape.rows, case.shape.cols, about);
        let mut clauses = cases::clauses(case, enc);
        clauses.retain(|c| !["14.2", "14.5", "13.23", "3.7", "7.7", "8.8", "5.5", "10.7", "15.4.8"].contains(c));
        clauses.extend(variant.clauses.iter().copied());
        set_clauses(&mut v, clauses);
        assert_ne!(variant.matrix, enc.matrix, "{}: variant {} is the canonical encoding", case.name, variant.suffix);
        let d = decode_checked(case, &variant.matrix, variant.suffix);
        let input = w.put(&mut v, "input", &case.input.le_bytes())?;
        v.input = Some(input);
        w.put_fields(&mut v, &variant.matrix)?;
        expect::write_results(w, &mut v, &d, &expect::standard_inputs(seed, case.shape.rows, case.shape.cols))?;
        out.push(v);
    }
    Ok(out)
}

/// Spec 18: the rows [h, M) of a canonical encoding (h = block height), cut out without
/// re-encoding. Valid, not canonical: the table is the whole matrix's (spec 18.3, 14.3).
fn slice_vector(w: &mut Writer, seed: u64, case: &Case, enc: &Encoding) -> io::Result<Option<Vector>> {
    let h = case.mode.layout.block_rows();
    let (rows, cols) = (case.shape.rows, case.shape.cols);
    if rows <= h {
        return Ok(None);
    }
    let m = nwc_fast::slice::slice_rows(&enc.matrix, h, rows).unwrap_or_else(|e| panic!("slice of {}: {e}", case.name));
    let start = (h * cols) as usize;
    let input = match &case.input {
        Input::Bf16(words) => Input::Bf16(words[start..].to_vec()),
        Input::Fp8(bytes) => Input::Fp8(bytes[start..].to_vec()),
    };
    let sliced = Case {
        name: format!("{}-rows{h}-{rows}", case.name),
        shape: Shape::new(rows - h, cols),
        input,
        scale: case.scale.as_ref().map(|s| s[h as usize..].to_vec()),
        quantized_from: None,
        extra_clauses: Vec::new(),
        example_matvecs: Vec::new(),
        example_exp_of_rank: None,
        mode: case.mode,
        about: case.about.clone(),
    };
    let id = format!("valid-{}-{}", mode_tag(case.mode), sliced.name);
    let about = format!("{}: rows {h}..{rows} of {} ({}) sliced without re-encoding", case.mode, case.shape, case.about);
    let mut v = new_vector(id, Kind::Valid, case.mode.code(), rows - h, cols, about);
    set_clauses(&mut v, ["18", "18.1", "18.2", "18.3", "18.4", "14.3", "14.4", "9.3", "12.1", "15.1"]);
    let d = decode_checked(&sliced, &m, "slice");
    let path = w.put(&mut v, "input", &sliced.input.le_bytes())?;
    v.input = Some(path);
    w.put_fields(&mut v, &m)?;
    expect::write_results(w, &mut v, &d, &expect::standard_inputs(seed, rows - h, cols))?;
    Ok(Some(v))
}

/// Rules 13.1 - 13.3 and truncated fields (13.4 here) cannot be parsed: malformed (manifest.rs).
fn kind_of(rule: &str) -> Kind {
    match rule {
        "mode-code" | "shape-range" | "field-size" | "data-too-short" => Kind::Malformed,
        _ => Kind::Invalid,
    }
}

fn broken_vectors(w: &mut Writer, case: &Case, enc: &Encoding) -> io::Result<Vec<Vector>> {
    let mut out = Vec::new();
    for c in corrupt::all(enc) {
        let kind = kind_of(c.rule);
        let kind_name = if kind == Kind::Malformed { "malformed" } else { "invalid" };
        let id = format!("{kind_name}-{}-{}-{}-{}", mode_tag(case.mode), case.name, c.rule, c.variant);
        // The generator's own check: the reference decoder reports exactly this rule.
        match c.fields.check() {
            Err(DecodeError::Format(e)) if e.rule() == c.rule => {}
            other => panic!("{id}: the reference reports {other:?}"),
        }
        let m = c.fields.matrix();
        let clause = FormatError::RULES.iter().find(|(r, _)| *r == c.rule).expect("known rule").1;
        let about = format!("{}: {} breaks {} (spec {clause}): {}", case.mode, case.shape, c.rule, c.what);
        let mut v = new_vector(id, kind, c.fields.mode_code(), m.shape.rows, m.shape.cols, about);
        // Every broken vector is hostile input for chapter 16: rejected before any output, with no
        // out-of-bounds access, on the host before any accelerator sees it; fuzzing seeds start here.
        let mut clauses = vec!["13", clause, "13.21", "13.22", "1.3.2", "16", "16.1", "16.2", "16.6", "16.7", "16.8"];
        clauses.extend(variants::rule_clauses(c.rule, m));
        set_clauses(&mut v, clauses);
        v.expected_error = Some(c.rule.to_owned());
        v.also_broken = c.also_broken.iter().map(|r| (*r).to_owned()).collect();
        w.put_fields(&mut v, m)?;
        out.push(v);
    }
    Ok(out)
}

/// Cases whose valid variants go into the corpus, and the one all corruptions start from.
const VALID_BASES: [&str; 5] = ["13x40", "9x513", "31x600", "2x1100", "8x512"];
const BROKEN_BASE: &str = "9x520";

/// Writes the corpus into `out` (`manifest.json` and `files/`), replacing any previous one there.
pub fn generate(out: &Path, seed: u64, tier: Tier) -> io::Result<(Manifest, Summary)> {
    for stale in ["files", "manifest.json"] {
        let p = out.join(stale);
        if p.is_dir() {
            std::fs::remove_dir_all(&p)?;
        } else if p.exists() {
            std::fs::remove_file(&p)?;
        }
    }
    std::fs::create_dir_all(out)?;
    let mut w = Writer::new(out);
    let mut vectors = Vec::new();
    for mode in Mode::ALL {
        let all = match tier {
            Tier::Small => cases::small(seed, mode),
            Tier::Large => cases::large(seed, mode),
        };
        for case in &all {
            let enc = encode_case(case);
            vectors.push(canonical_vector(&mut w, seed, case, &enc)?);
            let base_shape = case.name.rsplit('-').find(|p| p.contains('x')).unwrap_or("");
            let is_base = |s: &str| case.name.ends_with(s) || case.name.ends_with(&format!("{s}-scaled"));
            if VALID_BASES.iter().any(|s| is_base(s)) || (tier == Tier::Large && case.name.contains("-r")) {
                vectors.extend(valid_vectors(&mut w, seed, case, &enc)?);
                vectors.extend(slice_vector(&mut w, seed, case, &enc)?);
            }
            if is_base(BROKEN_BASE) || (tier == Tier::Large && base_shape == "1x1") {
                vectors.extend(broken_vectors(&mut w, case, &enc)?);
            }
        }
    }
    let mut summary = Summary { files: w.files_written, bytes: w.bytes_written, ..Summary::default() };
    for v in &vectors {
        let kind = format!("{:?}", v.kind).to_lowercase();
        *summary.by_kind_and_mode.entry((kind, v.mode_code)).or_default() += 1;
    }
    let manifest = Manifest {
        format_version: nwc_reference::FORMAT_VERSION,
        corpus_version: CORPUS_VERSION,
        generator: format!(
            "cargo run --release -p nwc-conformance --bin nwc-vectors -- --out vectors --seed {seed} --tier {}",
            tier.name()
        ),
        seed,
        vectors,
    };
    let json = serde_json::to_string_pretty(&manifest).map_err(io::Error::other)? + "\n";
    std::fs::write(out.join("manifest.json"), json)?;
    Ok((manifest, summary))
}
