//! Surgery on stored fields: for every validity rule of spec 13, stored fields that break that
//! rule and, wherever the format allows it, no other; plus the lane-level tools the surgery needs
//! (reading a lane's codes, re-packing lanes, re-coding a matrix under another rank table).
//!
//! Every corruption starts from a valid encoding (normally the reference encoder's canonical
//! output) and edits it so that the remaining fields stay consistent: when a lane changes length,
//! `hdr`, every later block offset and the data length are rebuilt (spec 9.1 - 9.4), so that only
//! the intended rule fails. Where the format makes one rule imply another (a misaligned offset is
//! always also a mismatched one), the corruption lists the other rule in `also_broken`.
//!
//! By role: the rules on metadata, sizes, offsets and the table (`fields`, 13.1 - 13.10), on lane
//! streams, FP8 values, the raw plane and scales (`streams`, 13.11 - 13.20), and the lane tools
//! both use (`lanes`).

mod fields;
mod lanes;
mod streams;

pub use fields::*;
pub use lanes::{assemble, lane_codes, lane_words, pack, recode};
pub use streams::*;

use nwc_reference::{EncodedMatrix, Encoding, FormatError};

/// Stored fields that break a rule. The mode code is metadata (spec 12.2); a bad one cannot be
/// held in a [`nwc_reference::Mode`], so it travels beside otherwise valid fields.
#[derive(Clone, Debug, PartialEq)]
pub enum Corrupted {
    Matrix(EncodedMatrix),
    ModeCode { code: u32, matrix: EncodedMatrix },
}

impl Corrupted {
    /// The stored fields (for `ModeCode`, the unchanged fields of the original mode).
    pub fn matrix(&self) -> &EncodedMatrix {
        match self {
            Corrupted::Matrix(m) | Corrupted::ModeCode { matrix: m, .. } => m,
        }
    }

    /// The mode code as stored.
    pub fn mode_code(&self) -> u32 {
        match self {
            Corrupted::Matrix(m) => m.mode.code(),
            Corrupted::ModeCode { code, .. } => *code,
        }
    }

    /// What a decoder reports for these fields: the mode code is checked first (spec 2.3), then
    /// the reference decoder runs. `Ok(())` means the fields are valid.
    pub fn check(&self) -> Result<(), nwc_reference::DecodeError> {
        if let Corrupted::ModeCode { code, .. } = self {
            nwc_reference::Mode::from_code(*code)?;
        }
        nwc_reference::validate(self.matrix())
    }
}

/// One way of breaking one rule.
#[derive(Clone, Debug, PartialEq)]
pub struct Corruption {
    /// The rule name of spec 13 (as in [`FormatError::RULES`]).
    pub rule: &'static str,
    /// Short, file-system safe name of the variant, e.g. `bases0-plus8`.
    pub variant: String,
    /// One line saying what was changed.
    pub what: String,
    pub fields: Corrupted,
    /// Rules the format forces this corruption to break as well; `rule` is the first of them in
    /// the order of checks of spec 16.2, the one a decoder reports (spec 13.21). Empty for almost
    /// all corruptions.
    pub also_broken: Vec<&'static str>,
}

fn corruption(rule: &'static str, variant: impl Into<String>, what: impl Into<String>, m: EncodedMatrix) -> Corruption {
    Corruption { rule, variant: variant.into(), what: what.into(), fields: Corrupted::Matrix(m), also_broken: Vec::new() }
}

/// Every corruption this module knows for `enc`, rule by rule in clause order. Rules that cannot
/// be broken in this encoding's mode or shape (no filler, a single block, ...) contribute nothing.
pub fn all(enc: &Encoding) -> Vec<Corruption> {
    FormatError::RULES.iter().flat_map(|(rule, _)| for_rule(rule, enc)).collect()
}

/// The corruptions of one rule (empty when `rule` cannot be broken in this encoding, or is unknown).
pub fn for_rule(rule: &str, enc: &Encoding) -> Vec<Corruption> {
    let m = &enc.matrix;
    match rule {
        "mode-code" => mode_code(m),
        "shape-range" => shape_range(m),
        "field-size" => field_size(m),
        "data-too-short" => data_too_short(enc),
        "offset-first-nonzero" => offset_first_nonzero(m),
        "offset-misaligned" => offset_misaligned(m),
        "offset-mismatch" => offset_mismatch(m),
        "lane-length-range" => lane_length_range(m),
        "rank-table" => rank_table(m),
        "lut-mismatch" => lut_mismatch(m),
        "lane-truncated" => lane_truncated(m),
        "lane-overlong" => lane_overlong(m),
        "stream-padding" => stream_padding(m),
        "filler-code" => filler_code(m),
        "fp8-rank" => fp8_rank(m),
        "fp8-nibble" => fp8_nibble(m),
        "fp8-nan" => fp8_nan(m),
        "raw-padding" => raw_padding(m),
        "scale-value" => scale_value(m),
        "bf16-escape" => bf16_escape(m),
        _ => Vec::new(),
    }
}
