//! Invalid and malformed execution-layout vectors (spec 20.9, 20.10): one or more per rule, each a
//! corruption of a canonical layout, and corruptions that break two rules at once, where the check
//! order of spec 20.10 fixes which one a decoder reports. The generator checks every vector
//! against the reference before writing it.

use super::exec::{le_fields, put_exec_fields, ExecCase};
use super::{new_vector, set_clauses};
use crate::exec::{field_key, parse};
use crate::fields::RawFields;
use crate::manifest::{Kind, Representation, Vector};
use nwc_reference::exec::{decode_exec, encode_exec, ExecDecodeError, ExecField, ExecFormatError, ExecGeometry, ExecMatrix, ESCAPE_CODE};
use nwc_reference::{Mode, Shape};
use std::io;

/// Stored fields under corruption: raw bytes by `exec_*` key (absent = field missing), the shape,
/// and the decoded view of the original (for locating rows, pads and escapes).
struct Target {
    shape: Shape,
    raw: RawFields,
}

impl Target {
    fn bytes(&mut self, f: ExecField) -> &mut Vec<u8> {
        self.raw.get_mut(&field_key(f)).expect("field present")
    }
    fn set_u32(&mut self, entry: usize, value: u32) {
        self.bytes(ExecField::EscStart)[4 * entry..4 * entry + 4].copy_from_slice(&value.to_le_bytes());
    }
}

type Mutate = Box<dyn Fn(&mut Target)>;

/// One corruption: the rule it breaks (the first in the order of spec 20.10), a variant name, what
/// it does, and the edit.
struct Corruption {
    rule: &'static str,
    variant: &'static str,
    what: String,
    edit: Mutate,
}

/// The corruptions of `m` (a canonical layout with at least two tiles per row, pad columns and
/// escapes in more than one tile).
fn corruptions(m: &ExecMatrix) -> Vec<Corruption> {
    let g = ExecGeometry::new(m.shape).expect("valid");
    let (k, k16) = (m.shape.cols, g.k16);
    let esc_start = m.esc_start.clone();
    // The first position with an escape, and a tile t >= 1 that has one.
    let first_escape_row =
        (0..m.shape.rows).find(|&r| (0..k).any(|c| m.code(k16, r, c) == ESCAPE_CODE)).expect("the base case has escapes");
    let escape_tile = (1..g.tiles as usize).find(|&t| esc_start[t + 1] > esc_start[t]).expect("escapes past tile 0");
    // A window code (1..14) to turn into an escape code, in row 1.
    let window_col = (0..k).find(|&c| (1..=14).contains(&m.code(k16, 1, c))).expect("row 1 has window codes");
    let in_window = m.base[first_escape_row as usize] + 5;
    let top_of_window = m.base[first_escape_row as usize] + 13;
    let mut out: Vec<Corruption> = Vec::new();
    let mut push = |rule, variant, what: String, edit: Mutate| out.push(Corruption { rule, variant, what, edit });
    push("exec-shape-range", "rows-zero", "the shape says 0 rows".into(), Box::new(|t| t.shape.rows = 0));
    push("exec-shape-range", "cols-2p31", "the shape says K = 2^31".into(), Box::new(|t| t.shape.cols = 1 << 31));
    let sm = field_key(ExecField::Sm);
    push("exec-field-size", "sm-missing", "there is no sm field".into(), Box::new(move |t| drop(t.raw.remove(&sm))));
    push(
        "exec-field-size",
        "codes-short",
        "codes lacks its last byte".into(),
        Box::new(|t| {
            t.bytes(ExecField::Codes).pop();
        }),
    );
    push("exec-field-size", "base-long", "base has M + 1 bytes".into(), Box::new(|t| t.bytes(ExecField::Base).push(1)));
    push(
        "exec-field-size",
        "esc-start-ragged",
        "esc_start has 2 bytes more than T + 1 entries".into(),
        Box::new(|t| t.bytes(ExecField::EscStart).extend([0, 0])),
    );
    push("exec-base-range", "zero", "base[3] = 0".into(), Box::new(|t| t.bytes(ExecField::Base)[3] = 0));
    push("exec-base-range", "243", "base[0] = 243".into(), Box::new(|t| t.bytes(ExecField::Base)[0] = 243));
    let sm_pad = (2 * k16 + k) as usize;
    push(
        "exec-sm-padding",
        "row2",
        format!("sm[{sm_pad}] (row 2, first pad column) = 0x80"),
        Box::new(move |t| t.bytes(ExecField::Sm)[sm_pad] = 0x80),
    );
    let pad_col = k + 1; // odd when K is even: the high nibble
    let code_pad = (4 * (k16 / 2) + pad_col / 2) as usize;
    push(
        "exec-code-padding",
        "row4",
        format!("the code of row 4, pad column {} is 1 (codes byte {code_pad}, high nibble)", k + 1),
        Box::new(move |t| t.bytes(ExecField::Codes)[code_pad] |= 0x10),
    );
    push("exec-esc-start-first", "one", "esc_start[0] = 1".into(), Box::new(|t| t.set_u32(0, 1)));
    let (a, b) = (esc_start[5], esc_start[6]);
    push(
        "exec-esc-start-order",
        "entry6",
        format!("esc_start[5] = {} (was {a}), above esc_start[6] = {b}", b + 1),
        Box::new(move |t| t.set_u32(5, b + 1)),
    );
    push("exec-esc-length", "extra", "esc has one byte more".into(), Box::new(|t| t.bytes(ExecField::Esc).push(200)));
    push(
        "exec-esc-length",
        "short",
        "esc lacks its last byte".into(),
        Box::new(|t| {
            t.bytes(ExecField::Esc).pop();
        }),
    );
    let esc = field_key(ExecField::Esc);
    push("exec-esc-length", "missing", "there is no esc field (length 0, spec 20.9.2)".into(), Box::new(move |t| drop(t.raw.remove(&esc))));
    let moved = esc_start[escape_tile] + 1;
    push(
        "exec-esc-count",
        "boundary",
        format!("esc_start[{escape_tile}] = {moved}: one escape moved from tile {escape_tile} to tile {}", escape_tile - 1),
        Box::new(move |t| t.set_u32(escape_tile, moved)),
    );
    let byte = (k16 / 2 + window_col / 2) as usize;
    let shift = 4 * (window_col % 2);
    push(
        "exec-esc-count",
        "code-15",
        format!("the code of row 1, column {window_col} is 15 with no escape byte added"),
        Box::new(move |t| t.bytes(ExecField::Codes)[byte] |= 0xF << shift),
    );
    push("exec-escape-in-window", "zero", "esc[0] = 0".into(), Box::new(|t| t.bytes(ExecField::Esc)[0] = 0));
    push(
        "exec-escape-in-window",
        "inside",
        format!("esc[0] = {in_window}, inside the window of its row {first_escape_row}"),
        Box::new(move |t| t.bytes(ExecField::Esc)[0] = in_window),
    );
    push(
        "exec-escape-in-window",
        "top",
        format!("esc[0] = {top_of_window}, the top of the window of its row {first_escape_row}"),
        Box::new(move |t| t.bytes(ExecField::Esc)[0] = top_of_window),
    );
    out
}

fn rule_clauses(rule: &str) -> Vec<&'static str> {
    match rule {
        "exec-shape-range" => vec!["20.2", "3.2", "16.3", "16.4", "16.5"],
        "exec-field-size" => vec!["20.3", "16.3", "16.5"],
        "exec-base-range" => vec!["20.6"],
        "exec-sm-padding" => vec!["20.4"],
        "exec-code-padding" => vec!["20.5"],
        _ => vec!["20.7", "20.6"],
    }
}

/// What the reference says about the corrupted fields.
fn verdict(t: &Target) -> Result<(), ExecFormatError> {
    match parse(t.shape.rows, t.shape.cols, &t.raw).map_err(ExecDecodeError::from).and_then(|m| decode_exec(&m)) {
        Ok(_) => Ok(()),
        Err(ExecDecodeError::Format(e)) => Err(e),
        Err(other) => panic!("a corruption hit a resource limit: {other}"),
    }
}

fn write(
    w: &mut super::writer::Writer,
    case: &ExecCase,
    id: String,
    rule: &str,
    what: &str,
    t: &Target,
    also: &[&str],
) -> io::Result<Vector> {
    let clause = ExecFormatError::RULES.iter().find(|(r, _)| *r == rule).expect("known rule").1;
    let kind = if matches!(rule, "exec-shape-range" | "exec-field-size") { Kind::Malformed } else { Kind::Invalid };
    let extra = if also.is_empty() {
        String::new()
    } else {
        format!("; also breaks {}, which come later in the order of spec 20.10", also.join(", "))
    };
    let about = format!("execution layout: {} ({}) breaks {rule} (spec {clause}): {what}{extra}", case.shape, case.about);
    let mut v = new_vector(id, kind, Mode::BF16_L0.code(), t.shape.rows, t.shape.cols, about);
    v.representation = Representation::Exec;
    let mut clauses = vec!["20.9", clause, "20.10", "20.16", "16", "16.1", "16.2", "16.6", "16.7"];
    clauses.extend(rule_clauses(rule));
    for r in also {
        clauses.push(ExecFormatError::RULES.iter().find(|(x, _)| x == r).expect("known rule").1);
    }
    set_clauses(&mut v, clauses);
    v.expected_error = Some(rule.to_owned());
    let fields: Vec<(String, Vec<u8>)> = t.raw.iter().map(|(k, b)| (k.clone(), b.clone())).collect();
    put_exec_fields(w, &mut v, &fields)?;
    Ok(v)
}

/// The broken vectors of one case: every corruption alone, then pairs that break two rules.
pub fn broken_vectors(w: &mut super::writer::Writer, case: &ExecCase) -> io::Result<Vec<Vector>> {
    let m = encode_exec(case.shape, &case.words).expect("encodes");
    let fresh = || Target { shape: case.shape, raw: le_fields(&m).into_iter().collect() };
    let all = corruptions(&m);
    let mut out = Vec::new();
    for c in &all {
        let mut t = fresh();
        (c.edit)(&mut t);
        let id = format!("{}-exec-{}-{}-{}", kind_name(c.rule), case.name, c.rule, c.variant);
        match verdict(&t) {
            Err(e) if e.rule() == c.rule => {}
            other => panic!("{id}: the reference reports {other:?}"),
        }
        out.push(write(w, case, id, c.rule, &c.what, &t, &[])?);
    }
    // Two rules at once (spec 20.10): each corruption alone reports its own rule (checked above);
    // together, the earlier rule in the order.
    let pairs = [
        (("exec-base-range", "zero"), ("exec-esc-count", "boundary")),
        (("exec-code-padding", "row4"), ("exec-escape-in-window", "inside")),
        (("exec-sm-padding", "row2"), ("exec-esc-length", "extra")),
    ];
    for ((r1, v1), (r2, v2)) in pairs {
        let find = |r: &str, v: &str| all.iter().find(|c| c.rule == r && c.variant == v).expect("listed corruption");
        let (c1, c2) = (find(r1, v1), find(r2, v2));
        let mut t = fresh();
        (c1.edit)(&mut t);
        (c2.edit)(&mut t);
        let id = format!("invalid-exec-{}-{r1}-and-{r2}", case.name);
        match verdict(&t) {
            Err(e) if e.rule() == r1 => {}
            other => panic!("{id}: the reference reports {other:?}"),
        }
        out.push(write(w, case, id, r1, &format!("{} and {}", c1.what, c2.what), &t, &[r2])?);
    }
    Ok(out)
}

fn kind_name(rule: &str) -> &'static str {
    if matches!(rule, "exec-shape-range" | "exec-field-size") {
        "malformed"
    } else {
        "invalid"
    }
}
