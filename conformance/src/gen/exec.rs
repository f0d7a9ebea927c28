//! Execution-layout vectors (spec 20) for the shared corpus: canonical ones for every BF16 matrix
//! of the format-10 cases plus matrices aimed at the window code, valid ones with other bases, and
//! (in `exec_broken`) invalid and malformed ones. Each canonical vector names the format-10
//! vectors of the same matrix, which must transcode to it (spec 20.12.2).

use super::cases::{self, Input};
use super::expect::{put_dequant_gathers, put_matvec_case, standard_inputs, MatvecInput};
use super::writer::{le_u16, Writer};
use super::{exec_broken, new_vector, set_clauses, Tier};
use crate::exec::field_key;
use crate::manifest::{Kind, Representation, Vector};
use nwc_reference::exec::{
    canonical_base, check_canonical, decode_exec, encode_exec, encode_exec_with_bases, ExecDecoded, ExecMatrix, MAX_BASE,
};
use nwc_reference::{DecodedMatrix, ElemType, Elements, Mode, Shape};
use std::io;

/// One execution-layout matrix to be.
pub struct ExecCase {
    /// Distribution and shape, e.g. `gauss2p-12-13x40`; unique among exec cases.
    pub name: String,
    pub shape: Shape,
    pub words: Vec<u16>,
    pub about: String,
    /// The spec's worked example (20.17): its matvec and expected BF16 outputs.
    pub example: Option<(MatvecInput, Vec<u16>)>,
}

/// Clauses every canonical or valid execution-layout vector exercises.
const COMMON: [&str; 24] = [
    "3.2", "15.4.2", "15.4.3", "15.4.4", "15.4.5", "15.4.6", "15.4.7", "20", "20.1", "20.2", "20.3", "20.4", "20.5", "20.6", "20.7",
    "20.9", "20.11", "20.13", "20.14", "20.15", "20.15.1", "20.15.2", "20.18", "20.19",
];

/// The matrices: every BF16 case of the format-10 corpus (both layouts: their matrices differ),
/// plus zero-heavy rows, windows at both ends of the base range, and the worked example.
pub fn exec_cases(seed: u64, tier: Tier) -> Vec<ExecCase> {
    let mut out = Vec::new();
    for mode in [Mode::BF16_L0, Mode::BF16_L1] {
        let all = match tier {
            Tier::Small => cases::small(seed, mode),
            Tier::Large => cases::large(seed, mode),
        };
        for c in all {
            let Input::Bf16(words) = c.input else { continue };
            let name = format!("l{}-{}", mode.layout.number(), c.name);
            // The spec's examples are the same matrix in both layouts: one exec vector each.
            if out.iter().any(|e: &ExecCase| e.shape == c.shape && e.words == words) {
                continue;
            }
            out.push(ExecCase { name, shape: c.shape, words, about: c.about, example: None });
        }
    }
    out.extend(window_cases(seed));
    out
}

fn window_cases(seed: u64) -> Vec<ExecCase> {
    // A small LCG keeps these independent of the format-10 generator's stream.
    let mut state = seed ^ 0x5EED_E8EC;
    let mut next = move || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 33) as u16
    };
    let mut out = Vec::new();
    // Zeros and padding (code 0), a whole zero row (base 1), subnormals, two tiles per row.
    let shape = Shape::new(5, 600);
    let words: Vec<u16> = (0..shape.weights())
        .map(|i| match (i / 600, next() % 10) {
            (2, _) => 0,
            (_, 0..=3) => 0,
            (_, 4) => next() & 0x807F, // subnormal or signed zero
            _ => (next() & 0x807F) | ((118 + next() % 12) << 7),
        })
        .collect();
    let about = "exact zeros, a zero row, subnormals: code 0 (spec 20.6)".to_owned();
    out.push(ExecCase { name: "zeros-5x600".into(), shape, words, about, example: None });
    // Rows whose windows sit at the ends: exponents 1..14 (base 1) and 242..255 (base 242, with
    // infinities and NaNs), plus escapes on the far side of each.
    let shape = Shape::new(4, 70);
    let words: Vec<u16> = (0..shape.weights())
        .map(|i| {
            let e = match (i / 70, next() % 8) {
                (0 | 2, 0) => 200,
                (0 | 2, _) => 1 + next() % 14,
                (_, 0) => 3,
                _ => 242 + next() % 14,
            };
            (next() & 0x807F) | (e << 7)
        })
        .collect();
    let about = "windows at base 1 and base 242 (infinities, NaNs), escapes beyond".to_owned();
    out.push(ExecCase { name: "window-ends-4x70".into(), shape, words, about, example: None });
    // Spec 20.17.
    let words = vec![0x3F80, 0x4000, 0xBF00, 0x0000, 0x0D80, 0, 0, 0, 0, 0];
    let x = vec![2f32.powi(24), 0.5, 2f32.powi(25), 3.0, 2f32.powi(100)];
    let example = Some((MatvecInput { batch: 1, x, bias: None }, vec![0x3F80, 0x0000]));
    let about = "the worked example of spec 20.17".to_owned();
    out.push(ExecCase { name: "example-2x5".into(), shape: Shape::new(2, 5), words, about, example });
    out
}

fn exec_vector(id: String, kind: Kind, shape: Shape, about: String) -> Vector {
    let mut v = new_vector(id, kind, Mode::BF16_L0.code(), shape.rows, shape.cols, about);
    v.representation = Representation::Exec;
    v
}

/// Stores the five fields of `m` under their `exec_*` keys (spec 20.3).
pub fn put_exec_fields(w: &mut Writer, v: &mut Vector, fields: &[(String, Vec<u8>)]) -> io::Result<()> {
    for (key, bytes) in fields {
        let path = w.put(v, key, bytes)?;
        v.fields.insert(key.clone(), path);
    }
    Ok(())
}

pub fn le_fields(m: &ExecMatrix) -> Vec<(String, Vec<u8>)> {
    m.to_le_fields().into_iter().map(|(f, b)| (field_key(f), b)).collect()
}

/// Dequant, gathers and matvecs of an execution layout (spec 20.14, 20.15), with the bounds of
/// spec 19 for BF16 activations. The matvec is the exec reference's, checked here against the
/// format-10 layout-0 matvec of the same matrix (spec 20.15.2).
fn write_exec_results(w: &mut Writer, v: &mut Vector, d: &ExecDecoded, inputs: &[MatvecInput]) -> io::Result<()> {
    put_dequant_gathers(w, v, d.shape.rows, &d.dequant(), |rows| d.gather(rows).expect("rows in range"))?;
    let f10 =
        DecodedMatrix { mode: Mode::BF16_L0, shape: d.shape, exp_of_rank: [0; 15], elements: Elements::Bf16(d.words.clone()), scale: None };
    let bits = |v: &[f32]| v.iter().map(|x| if x.is_nan() { 0x7FC0_0000 } else { x.to_bits() }).collect::<Vec<u32>>();
    for (i, input) in inputs.iter().enumerate() {
        let bias = input.bias.as_deref();
        let y = d.matvec(&input.x, input.batch, bias).expect("sizes match");
        let same = f10.matvec(&input.x, input.batch, bias).expect("sizes");
        assert_eq!(bits(&y), bits(&same), "{}: exec matvec differs from format-10 layout 0", v.id);
        let y16 = d.matvec_bf16(&input.x, input.batch, bias).expect("sizes");
        // spec 19's bound is defined on the format-10 matrix of the same weights
        put_matvec_case(w, v, i, input, &y, &y16, &f10)?;
    }
    if v.matvecs.iter().any(|c| c.bound.is_some()) {
        v.clauses.extend(["20.15.3", "19", "19.1", "19.2", "19.3", "19.4", "19.5", "19.6"].map(str::to_owned));
        v.clauses.sort_by_key(|id| super::coverage::clause_key(id));
        v.clauses.dedup();
    }
    Ok(())
}

/// Format-10 vectors already in the corpus that carry `input` (same file, same shape): BF16 ones
/// to transcode, FP8 ones to be refused.
fn sources(existing: &[Vector], input: &str, shape: Shape, elem: ElemType) -> Vec<String> {
    existing
        .iter()
        .filter(|v| v.representation == Representation::Format10 && v.input.as_deref() == Some(input))
        .filter(|v| (v.rows, v.cols) == (shape.rows, shape.cols) && v.elem == elem.name())
        .filter(|v| matches!(v.kind, Kind::Canonical | Kind::Valid))
        .map(|v| v.id.clone())
        .collect()
}

/// The BF16 value of each FP8 example weight is the same number; the FP8 vectors of the spec's
/// 1x3 example carry [1.0, 2.0, -0.5] (spec 15.4.8), so they are named as refusals.
fn fp8_twins(existing: &[Vector], case: &ExecCase) -> Vec<String> {
    if case.name != "l0-example-1x3" {
        return Vec::new();
    }
    existing.iter().filter(|v| v.id.starts_with("canonical-fp8-") && v.id.contains("-example-1x3-scaled")).map(|v| v.id.clone()).collect()
}

fn canonical(w: &mut Writer, seed: u64, case: &ExecCase, existing: &[Vector]) -> io::Result<Vector> {
    let m = encode_exec(case.shape, &case.words).unwrap_or_else(|e| panic!("exec case {}: {e}", case.name));
    let about = format!("execution layout: {} ({}), reference encoder output", case.shape, case.about);
    let mut v = exec_vector(format!("canonical-exec-{}", case.name), Kind::Canonical, case.shape, about);
    let input = w.put(&mut v, "input", &le_u16(&case.words))?;
    v.transcoded_from = sources(existing, &input, case.shape, ElemType::Bf16);
    v.transcode_refused_from = fp8_twins(existing, case);
    v.input = Some(input);
    let mut clauses: Vec<&'static str> = COMMON.to_vec();
    clauses.extend(["20.8", "20.12", "20.12.1"]);
    if !v.transcoded_from.is_empty() {
        clauses.extend(["20.12.2", "13.21", "14.3", "14.6", "15.1"]);
    }
    if !v.transcode_refused_from.is_empty() {
        clauses.push("20.12.3");
    }
    if case.example.is_some() {
        clauses.push("20.17");
    }
    set_clauses(&mut v, clauses);
    put_exec_fields(w, &mut v, &le_fields(&m))?;
    let d = decode_exec(&m).unwrap_or_else(|e| panic!("exec case {}: {e}", case.name));
    assert_eq!(d.words, case.words, "{}: exec round trip", case.name);
    let mut inputs = standard_inputs(seed, case.shape.rows, case.shape.cols);
    if let Some((input, expected)) = &case.example {
        let got = d.matvec_bf16(&input.x, input.batch, input.bias.as_deref()).expect("sizes");
        assert_eq!(&got, expected, "{}: matvec differs from the spec's example", case.name);
        inputs.push(MatvecInput { batch: input.batch, x: input.x.clone(), bias: input.bias.clone() });
    }
    write_exec_results(w, &mut v, &d, &inputs)?;
    Ok(v)
}

/// Spec 20.11: the same matrix under other bases: each canonical base moved down by 3 (or up,
/// where it cannot), and every base 242.
fn valid(w: &mut Writer, seed: u64, case: &ExecCase) -> io::Result<Vec<Vector>> {
    let k = case.shape.cols as usize;
    let canonical: Vec<u8> = case.words.chunks_exact(k).map(canonical_base).collect();
    let shifted: Vec<u8> = canonical.iter().map(|&b| if b > 3 { b - 3 } else { b + 3 }).collect();
    let variants = [
        ("base-shifted", "every row's base 3 below the canonical one (3 above where that is below 1)", shifted),
        ("base-max", "every row's base 242", vec![MAX_BASE; canonical.len()]),
    ];
    let mut out = Vec::new();
    for (suffix, what, bases) in variants {
        let m = encode_exec_with_bases(case.shape, &case.words, &bases).expect("bases in range");
        assert!(check_canonical(&m).expect("valid").is_some(), "{}: {suffix} is canonical", case.name);
        let about = format!("execution layout: {} ({}): {what}", case.shape, case.about);
        let mut v = exec_vector(format!("valid-exec-{}-{suffix}", case.name), Kind::Valid, case.shape, about);
        set_clauses(&mut v, COMMON);
        let input = w.put(&mut v, "input", &le_u16(&case.words))?;
        v.input = Some(input);
        put_exec_fields(w, &mut v, &le_fields(&m))?;
        let d = decode_exec(&m).expect("valid");
        assert_eq!(d.words, case.words);
        write_exec_results(w, &mut v, &d, &standard_inputs(seed, case.shape.rows, case.shape.cols))?;
        out.push(v);
    }
    Ok(out)
}

/// Cases that get valid variants, and the one the broken vectors start from.
const VALID_BASES: [&str; 4] = ["l0-gauss2p-12-13x40", "l0-heavytail-9x513", "l1-rowscaled12-31x600", "window-ends-4x70"];
const BROKEN_BASE: &str = "l0-rowscaled20-9x520";

/// Every execution-layout vector, given the format-10 vectors already generated.
pub fn exec_vectors(w: &mut Writer, seed: u64, tier: Tier, existing: &[Vector]) -> io::Result<Vec<Vector>> {
    let mut out = Vec::new();
    let all = exec_cases(seed, tier);
    for case in &all {
        out.push(canonical(w, seed, case, existing)?);
        if VALID_BASES.contains(&case.name.as_str()) {
            out.extend(valid(w, seed, case)?);
        }
        if case.name == BROKEN_BASE {
            out.extend(exec_broken::broken_vectors(w, case)?);
        }
    }
    for name in VALID_BASES.iter().chain([&BROKEN_BASE]) {
        assert!(all.iter().any(|c| c.name == *name), "no exec case {name}");
    }
    Ok(out)
}
