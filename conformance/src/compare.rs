//! Spec 14.1: comparing two encodings on their specified bytes only. The unspecified bytes of
//! spec 9.7 (alignment gaps between blocks, `data` from the stream end on, the raw-plane slack)
//! are skipped, taken from the expected encoding's own block layout.

use crate::fields::RawFields;
use nwc_reference::geometry::LANES;
use nwc_reference::Geometry;
use std::ops::Range;

/// The first specified byte where two encodings disagree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    pub field: String,
    /// Byte offset into the field (for u32/f32 fields: of the differing element).
    pub offset: u64,
    pub expected: String,
    pub got: String,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} offset {}: expected {}, got {}", self.field, self.offset, self.expected, self.got)
    }
}

fn is_word_field(field: &str) -> bool {
    matches!(field, "bases" | "lut" | "scale")
}

fn show(field: &str, bytes: &[u8], offset: usize) -> String {
    if is_word_field(field) {
        let at = offset & !3;
        match bytes.get(at..at + 4) {
            Some(w) => format!("{:#010x} (entry {})", u32::from_le_bytes([w[0], w[1], w[2], w[3]]), at / 4),
            None => "end of field".to_owned(),
        }
    } else {
        match bytes.get(offset) {
            Some(b) => format!("{b:#04x}"),
            None => "end of field".to_owned(),
        }
    }
}

/// Spec 9.2, 9.7: the byte ranges of `data` that hold lane streams, from `bases` and `hdr`.
fn stream_spans(expected: &RawFields, g: &Geometry) -> Result<Vec<Range<usize>>, String> {
    let bases = expected.get("bases").ok_or("expected encoding has no bases")?;
    let hdr = expected.get("hdr").ok_or("expected encoding has no hdr")?;
    if bases.len() as u64 != 4 * g.blocks || hdr.len() as u64 != LANES as u64 * g.blocks {
        return Err("expected encoding's bases/hdr do not fit its shape".to_owned());
    }
    Ok(bases
        .chunks_exact(4)
        .zip(hdr.chunks_exact(LANES))
        .map(|(b, lanes)| {
            let start = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
            start..start + 4 * lanes.iter().map(|&w| usize::from(w)).sum::<usize>()
        })
        .collect())
}

/// Compares `fields` of `got` with `expected` on the specified bytes (spec 14.1). Err means the
/// expected encoding itself is unusable.
#[allow(clippy::single_range_in_vec_init)] // lists of spans that happen to hold one span
pub fn first_difference(g: &Geometry, expected: &RawFields, got: &RawFields, fields: &[&str]) -> Result<Option<Difference>, String> {
    for &field in fields {
        let want = expected.get(field).ok_or_else(|| format!("expected encoding has no {field}"))?;
        let Some(have) = got.get(field) else {
            let diff = Difference { field: field.into(), offset: 0, expected: format!("{} bytes", want.len()), got: "no file".into() };
            return Ok(Some(diff));
        };
        let length_diff = |expected: String| Difference {
            field: field.into(),
            offset: have.len().min(want.len()) as u64,
            expected,
            got: format!("{} bytes", have.len()),
        };
        let spans = match field {
            "data" => stream_spans(expected, g)?,
            "low" => {
                let n = g.n_low as usize;
                if have.len() != n && have.len() != n + 512 {
                    return Ok(Some(length_diff(format!("{n} or {} bytes (spec 9.6)", n + 512))));
                }
                vec![0..n.min(want.len())]
            }
            _ => {
                if have.len() != want.len() {
                    return Ok(Some(length_diff(format!("{} bytes", want.len()))));
                }
                vec![0..want.len()]
            }
        };
        for span in spans {
            let end = span.end.min(want.len());
            if let Some(offset) = (span.start..end).find(|&i| have.get(i) != Some(&want[i])) {
                let at = if is_word_field(field) { offset & !3 } else { offset };
                let diff = Difference {
                    field: field.into(),
                    offset: at as u64,
                    expected: show(field, want, offset),
                    got: show(field, have, offset),
                };
                return Ok(Some(diff));
            }
        }
    }
    Ok(None)
}
