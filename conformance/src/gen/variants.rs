//! Non-canonical but valid encodings (spec 14.3, 14.4, 9.7): garbage in every unspecified byte, a
//! different rank order, escapes for ranked symbols. Each keeps the matrix it encodes.

use super::cases::Input;
use nwc_reference::element::fp8_split;
use nwc_reference::geometry::LANES;
use nwc_reference::{ElemType, EncodedMatrix, Encoding};
use nwc_testkit::corrupt::recode;

/// A valid, non-canonical encoding of a canonical vector's matrix.
pub struct ValidVariant {
    pub suffix: &'static str,
    pub about: String,
    pub matrix: EncodedMatrix,
    pub clauses: Vec<&'static str>,
}

/// A non-zero byte that depends on its offset, so garbage is never mistaken for a pattern.
fn garbage(i: usize) -> u8 {
    ((i * 151 + 89) % 255) as u8 + 1
}

/// Every unspecified byte of `data` (spec 9.7) set to garbage: the alignment gaps before blocks,
/// the bytes from the stream end to dl, and 64 extra bytes as the 0.10.1 checkpoints keep.
fn unspecified_garbage(enc: &Encoding) -> ValidVariant {
    let mut m = enc.matrix.clone();
    let mut gaps = 0;
    for b in 1..m.bases.len() {
        let words: usize = m.hdr[LANES * (b - 1)..LANES * b].iter().map(|&h| usize::from(h)).sum();
        let end = m.bases[b - 1] as usize + 4 * words;
        for i in end..m.bases[b] as usize {
            m.data[i] = garbage(i);
            gaps += 1;
        }
    }
    let end = enc.stream_end as usize;
    let len = m.data.len();
    for (i, byte) in m.data[end..len].iter_mut().enumerate() {
        *byte = garbage(end + i);
    }
    m.data.extend((len..len + 64).map(garbage));
    let about = format!("{gaps} gap bytes and every byte after the stream end are garbage; data is dl + 64 bytes");
    ValidVariant { suffix: "unspecified-garbage", about, matrix: m, clauses: vec!["9.5", "9.7", "12.5", "14.1", "14.3"] }
}

/// `low` with the 512-byte slack (spec 9.6), filled with garbage.
fn low_slack_garbage(enc: &Encoding) -> ValidVariant {
    let mut m = enc.matrix.clone();
    let n = m.low.len();
    m.low.extend((n..n + 512).map(garbage));
    let about = "low carries the 512-byte slack, filled with garbage".to_owned();
    ValidVariant { suffix: "low-slack-garbage", about, matrix: m, clauses: vec!["9.6", "9.7", "12.5", "14.1", "14.3"] }
}

/// Symbol counts of the matrix by symbol byte (BF16: 7-bit exponent; FP8: symbol byte).
fn counts(input: &Input) -> [u64; 128] {
    let mut hist = [0u64; 128];
    match input {
        Input::Bf16(words) => words.iter().for_each(|&w| hist[usize::from((w >> 8) as u8 & 0x7F)] += 1),
        Input::Fp8(bytes) => bytes.iter().for_each(|&b| {
            let s = fp8_split(b).symbol as usize;
            hist[usize::from(nwc_reference::element::FP8_SYMBOL_BYTE[s])] += 1
        }),
    }
    hist
}

/// Another ranking (spec 14.4): two tied ranks swapped when the matrix has a tie among its used
/// symbols, else ranks 0 and 1 swapped; the streams and `lut` are re-coded under it.
fn reranked(enc: &Encoding, input: &Input) -> ValidVariant {
    let hist = counts(input);
    let coded = if enc.matrix.mode.elem == ElemType::Bf16 { 15 } else { 10 };
    let eor = enc.exp_of_rank;
    let tie = (0..coded - 1).find(|&r| hist[usize::from(eor[r])] > 0 && hist[usize::from(eor[r])] == hist[usize::from(eor[r + 1])]);
    let (a, why) = match tie {
        Some(r) => (r, "two tied ranks swapped (the other tie order)"),
        None => (0, "ranks 0 and 1 swapped"),
    };
    let mut ranks = eor;
    ranks.swap(a, a + 1);
    let matrix = recode(&enc.matrix, &ranks, &|_| false);
    let about = format!("{why}: ranks {a} and {}; lut and streams re-coded", a + 1);
    ValidVariant { suffix: "reranked", about, matrix, clauses: vec!["5.2", "14.3", "14.4", "14.6"] }
}

/// BF16: every third weight escaped although its symbol has a rank (spec 14.4).
fn extra_escapes(enc: &Encoding) -> ValidVariant {
    let matrix = recode(&enc.matrix, &enc.exp_of_rank, &|i| i % 3 == 0);
    let about = "every third weight (row-major) escaped although its symbol is ranked".to_owned();
    ValidVariant { suffix: "extra-escapes", about, matrix, clauses: vec!["6.2", "14.3", "14.4"] }
}

/// The valid variants of one canonical encoding.
pub fn valid_variants(enc: &Encoding, input: &Input) -> Vec<ValidVariant> {
    let mut out = vec![unspecified_garbage(enc), low_slack_garbage(enc), reranked(enc, input)];
    if enc.matrix.mode.elem == ElemType::Bf16 {
        out.push(extra_escapes(enc));
    }
    out
}

/// Extra clauses an invalid or malformed vector of `rule` illustrates, beyond chapter 13.
pub fn rule_clauses(rule: &str, m: &EncodedMatrix) -> Vec<&'static str> {
    let l0 = m.mode.layout == nwc_reference::Layout::Rows8;
    let bf16 = m.mode.elem == ElemType::Bf16;
    match rule {
        "mode-code" => vec!["2", "2.2", "2.3", "1.5", "12.2"],
        // Declared sizes a hostile file could use to make a decoder allocate or loop: spec 16.3-16.5.
        "shape-range" => vec!["3", "3.2", "3.3", "12.2", "16.3", "16.4", "16.5"],
        "field-size" => vec!["12", "12.1", "9.6", "11.4", "16.3", "16.5"],
        "data-too-short" => vec!["9.4", "9.5", "12.4", "16.5"],
        "offset-first-nonzero" | "offset-misaligned" | "offset-mismatch" => vec!["9.2", "9.3"],
        "lane-length-range" => vec!["6.6", "9.1"],
        "rank-table" => vec!["5.3", "10.6"],
        "lut-mismatch" => vec!["10.1", "10.2", "10.3", "10.4", "10.5"],
        "lane-truncated" | "lane-overlong" => vec!["6.5", "9.1", "9.2"],
        "stream-padding" => vec!["6.4", "6.5"],
        "filler-code" => vec!["6.3", if l0 { "7.4" } else { "8.4" }, "14.4"],
        "fp8-rank" | "bf16-escape" => vec!["6.1", "6.2"],
        "fp8-nibble" => vec!["4.7", "4.8"],
        "fp8-nan" => vec!["4.6", "4.8"],
        "raw-padding" => vec![match (l0, bf16) {
            (true, true) => "7.5",
            (true, false) => "7.6",
            (false, true) => "8.5",
            (false, false) => "8.6",
        }],
        "scale-value" => vec!["11.1", "11.4"],
        _ => Vec::new(),
    }
}
