//! Errors, split by who is to blame: the file (`FormatError`, one variant per validity rule of
//! spec 13), the caller (`EncodeError`, `ParamError`) or this process's resource limits
//! (`LimitError`). Every message names the spec rule or field with what was found and expected.

use thiserror::Error;

/// A stored field (spec 12).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Data,
    Bases,
    Hdr,
    Lut,
    Low,
    Scale,
}

impl Field {
    /// The fields every encoding has (spec 12.1), in the order spec 16.2 step 2 checks their
    /// presence (rule 13.3.1). `scale` is optional (spec 11.6).
    pub const REQUIRED: [Field; 5] = [Field::Data, Field::Bases, Field::Hdr, Field::Lut, Field::Low];

    pub fn name(self) -> &'static str {
        match self {
            Field::Data => "data",
            Field::Bases => "bases",
            Field::Hdr => "hdr",
            Field::Lut => "lut",
            Field::Low => "low",
            Field::Scale => "scale",
        }
    }
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The stored fields break a validity rule of spec 13. Offsets are byte offsets into the named
/// field; `block` and `lane` locate a lane stream (spec 9).
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum FormatError {
    #[error("mode-code (spec 13.1): mode code {got} is not one of 0, 1, 16, 17")]
    ModeCode { got: u32 },
    #[error("shape-range (spec 13.2): shape {rows}x{cols} is outside the format's limits")]
    ShapeRange { rows: u64, cols: u64 },
    #[error("shape-range (spec 13.2): the lane streams in `hdr` need a data field of {needed} bytes, more than 2^32 - 1")]
    DataLength { needed: u64 },
    /// A required field is absent altogether (not stored with length 0). `EncodedMatrix` always
    /// holds its required fields, so the readers of files and containers report this one.
    #[error("field-missing (spec 13.3.1): the required field `{field}` is absent")]
    FieldMissing { field: Field },
    #[error("field-size (spec 13.3): field `{field}` has {got} bytes, expected {expected}")]
    FieldSize { field: Field, got: u64, expected: String },
    #[error("data-too-short (spec 13.4): field `data` has {got} bytes, the streams and their 64-byte slack need {needed}")]
    DataTooShort { got: u64, needed: u64 },
    #[error("offset-first-nonzero (spec 13.5): bases[0] is {got}, expected 0")]
    OffsetFirstNonZero { got: u32 },
    #[error("offset-misaligned (spec 13.6): bases[{block}] = {got} is not a multiple of 8")]
    OffsetMisaligned { block: u64, got: u32 },
    #[error("offset-mismatch (spec 13.7): bases[{block}] = {got}, but the previous block ends so that it must be {expected}")]
    OffsetMismatch { block: u64, got: u32, expected: u64 },
    #[error("lane-length-range (spec 13.8): hdr[{offset}] (block {block}, lane {lane}) = {got} words, allowed 1..={max}")]
    LaneLengthRange { block: u64, lane: usize, offset: u64, got: u8, max: u8 },
    #[error("rank-table (spec 13.9): lut gives exp_of_rank[{rank}] = {value}: {reason}")]
    RankTable { rank: usize, value: u8, reason: &'static str },
    #[error("lut-mismatch (spec 13.10): lut[{entry}] = {got:#010x}, the table its own exp_of_rank builds has {expected:#010x}")]
    LutMismatch { entry: usize, got: u32, expected: u32 },
    #[error("lane-truncated (spec 13.11): block {block} lane {lane} ends inside code {code} of {codes} (data offset {offset})")]
    LaneTruncated { block: u64, lane: usize, code: usize, codes: usize, offset: u64 },
    #[error("lane-overlong (spec 13.12): block {block} lane {lane} has {words} words in hdr, its codes use {used}")]
    LaneOverlong { block: u64, lane: usize, words: u8, used: u64 },
    #[error("stream-padding (spec 13.13): block {block} lane {lane} has non-zero bits after its last code (data offset {offset})")]
    StreamPadding { block: u64, lane: usize, offset: u64 },
    #[error("filler-code (spec 13.14): block {block} lane {lane} code {code} (row {row}, column {col}, outside the matrix) is not `10`")]
    FillerCode { block: u64, lane: usize, code: usize, row: u64, col: u64 },
    #[error(
        "fp8-rank (spec 13.15): block {block} lane {lane} code {code} has {zeros} leading zeros, FP8 ranks end at 9 (data offset {offset})"
    )]
    Fp8Rank { block: u64, lane: usize, code: usize, zeros: usize, offset: u64 },
    #[error("fp8-nibble (spec 13.16): row {row} column {col}: nibble {nibble} cannot follow FP8 symbol byte {symbol_byte} (low offset {offset})")]
    Fp8Nibble { row: u64, col: u64, symbol_byte: u8, nibble: u8, offset: u64 },
    #[error("fp8-nan (spec 13.17): row {row} column {col} decodes to an fp8 NaN (low offset {offset})")]
    Fp8Nan { row: u64, col: u64, offset: u64 },
    #[error("raw-padding (spec 13.18): low[{offset}] holds a non-zero pad {what}")]
    RawPadding { offset: u64, what: &'static str },
    #[error("scale-value (spec 13.19): scale[{row}] = {value} is not a positive finite number")]
    ScaleValue { row: u64, value: String },
    #[error("bf16-escape (spec 13.20): block {block} lane {lane} code {code} has {zeros} leading zeros, a BF16 escape has exactly 15 (data offset {offset})")]
    Bf16Escape { block: u64, lane: usize, code: usize, zeros: usize, offset: u64 },
}

impl FormatError {
    /// The name of the broken validity rule (spec 13).
    pub fn rule(&self) -> &'static str {
        self.rule_and_clause().0
    }

    /// The spec clause of the broken rule, e.g. "13.7".
    pub fn clause(&self) -> &'static str {
        self.rule_and_clause().1
    }

    fn rule_and_clause(&self) -> (&'static str, &'static str) {
        use FormatError::*;
        match self {
            ModeCode { .. } => ("mode-code", "13.1"),
            ShapeRange { .. } | DataLength { .. } => ("shape-range", "13.2"),
            FieldSize { .. } => ("field-size", "13.3"),
            FieldMissing { .. } => ("field-missing", "13.3.1"),
            DataTooShort { .. } => ("data-too-short", "13.4"),
            OffsetFirstNonZero { .. } => ("offset-first-nonzero", "13.5"),
            OffsetMisaligned { .. } => ("offset-misaligned", "13.6"),
            OffsetMismatch { .. } => ("offset-mismatch", "13.7"),
            LaneLengthRange { .. } => ("lane-length-range", "13.8"),
            RankTable { .. } => ("rank-table", "13.9"),
            LutMismatch { .. } => ("lut-mismatch", "13.10"),
            LaneTruncated { .. } => ("lane-truncated", "13.11"),
            LaneOverlong { .. } => ("lane-overlong", "13.12"),
            StreamPadding { .. } => ("stream-padding", "13.13"),
            FillerCode { .. } => ("filler-code", "13.14"),
            Fp8Rank { .. } => ("fp8-rank", "13.15"),
            Fp8Nibble { .. } => ("fp8-nibble", "13.16"),
            Fp8Nan { .. } => ("fp8-nan", "13.17"),
            RawPadding { .. } => ("raw-padding", "13.18"),
            ScaleValue { .. } => ("scale-value", "13.19"),
            Bf16Escape { .. } => ("bf16-escape", "13.20"),
        }
    }

    /// Every rule name, in clause order (for tools that list or cover them).
    pub const RULES: [(&'static str, &'static str); 21] = [
        ("mode-code", "13.1"),
        ("shape-range", "13.2"),
        ("field-size", "13.3"),
        ("field-missing", "13.3.1"),
        ("data-too-short", "13.4"),
        ("offset-first-nonzero", "13.5"),
        ("offset-misaligned", "13.6"),
        ("offset-mismatch", "13.7"),
        ("lane-length-range", "13.8"),
        ("rank-table", "13.9"),
        ("lut-mismatch", "13.10"),
        ("lane-truncated", "13.11"),
        ("lane-overlong", "13.12"),
        ("stream-padding", "13.13"),
        ("filler-code", "13.14"),
        ("fp8-rank", "13.15"),
        ("fp8-nibble", "13.16"),
        ("fp8-nan", "13.17"),
        ("raw-padding", "13.18"),
        ("scale-value", "13.19"),
        ("bf16-escape", "13.20"),
    ];
}

/// A resource limit of this process was exceeded (spec 3.3 allows lower limits than the format's).
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum LimitError {
    #[error("limit: {got} rows exceed this decoder's limit of {limit}")]
    Rows { got: u64, limit: u64 },
    #[error("limit: {got} columns exceed this decoder's limit of {limit}")]
    Cols { got: u64, limit: u64 },
    #[error("limit: {got} weights exceed this decoder's limit of {limit}")]
    Weights { got: u64, limit: u64 },
    #[error("limit: allocating {got} bytes for {what} exceeds this decoder's limit of {limit}")]
    Allocation { what: &'static str, got: u64, limit: u64 },
}

/// Decoding failed: the file is invalid, or it is larger than this process allows.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    #[error(transparent)]
    Format(#[from] FormatError),
    #[error(transparent)]
    Limit(#[from] LimitError),
}

/// The encoder's input is unusable (the caller's fault, not a file's).
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum EncodeError {
    #[error("shape (spec 3.2): {rows}x{cols} is outside the format's limits")]
    Shape { rows: u64, cols: u64 },
    #[error("input: {got} bytes, a {rows}x{cols} {elem} matrix has {expected}")]
    InputLength { got: u64, expected: u64, rows: u64, cols: u64, elem: &'static str },
    #[error("fp8 NaN (spec 4.6): input byte {index} is {byte:#04x}, format 10 cannot carry NaN")]
    Fp8Nan { index: u64, byte: u8 },
    #[error("stream size (spec 3.2): the data field would need {bytes} bytes, more than 2^32 - 1")]
    StreamTooLarge { bytes: u64 },
    #[error(transparent)]
    Limit(#[from] LimitError),
}

/// fp8 quantization was given unusable input (spec 11.3).
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum QuantizeError {
    #[error("quantize (spec 11.3): weight at row {row} column {col} is not finite ({bits:#06x})")]
    NotFinite { row: u64, col: u64, bits: u16 },
    #[error("quantize: {got} weights given, a {rows}x{cols} matrix has {expected}")]
    InputLength { got: u64, expected: u64, rows: u64, cols: u64 },
}

/// A decode-side operation got arguments that do not fit the matrix (spec 15).
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParamError {
    #[error("gather (spec 15.3): row index {index} is not below the {rows} rows of the matrix")]
    RowIndex { index: u64, rows: u64 },
    #[error("matvec (spec 15.4): {what} has {got} values, expected {expected}")]
    Length { what: &'static str, got: u64, expected: u64 },
    #[error("matvec (spec 15.4): batch must be at least 1")]
    EmptyBatch,
}
