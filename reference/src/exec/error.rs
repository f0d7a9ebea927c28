//! Errors of the execution layout (spec 20): one variant per validity rule of spec 20.9, each
//! naming its rule, clause, field and byte offset; plus the refusals of the transcoder (spec 20.12).

use crate::error::{DecodeError, LimitError};
use thiserror::Error;

/// A stored field of the execution layout (spec 20.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExecField {
    /// Sign-mantissa plane, M x K16 bytes (spec 20.4).
    Sm,
    /// Code plane, M x K16 / 2 bytes (spec 20.5).
    Codes,
    /// Per-row window base, M bytes (spec 20.6).
    Base,
    /// Escape offsets, T + 1 little-endian u32 (spec 20.7).
    EscStart,
    /// Escaped exponents, E bytes (spec 20.7).
    Esc,
}

impl ExecField {
    /// The five fields in the order of spec 20.3 (also the order of the size checks, spec 20.10).
    pub const ALL: [ExecField; 5] = [ExecField::Sm, ExecField::Codes, ExecField::Base, ExecField::EscStart, ExecField::Esc];

    /// The field's name in the spec and in the corpus manifest (`exec_` + this name; spec 20.3).
    pub fn name(self) -> &'static str {
        match self {
            ExecField::Sm => "sm",
            ExecField::Codes => "codes",
            ExecField::Base => "base",
            ExecField::EscStart => "esc_start",
            ExecField::Esc => "esc",
        }
    }
}

impl std::fmt::Display for ExecField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The stored fields break a validity rule of spec 20.9. Offsets are byte offsets into the named
/// field (for `esc_start`, of the u32 entry concerned).
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExecFormatError {
    #[error("exec-shape-range (spec 20.9.1): shape {rows}x{cols} is outside the format's limits")]
    ShapeRange { rows: u64, cols: u64 },
    #[error("exec-field-size (spec 20.9.2): field `{field}` has {got} bytes, expected {expected}")]
    FieldSize { field: ExecField, got: u64, expected: u64 },
    #[error("exec-base-range (spec 20.9.3): base[{row}] = {got}, allowed 1..=242")]
    BaseRange { row: u64, got: u8 },
    #[error("exec-sm-padding (spec 20.9.4): sm[{offset}] (row {row}, pad column {col}) = {got:#04x}, expected 0")]
    SmPadding { row: u64, col: u64, offset: u64, got: u8 },
    #[error("exec-code-padding (spec 20.9.5): the code of row {row}, pad column {col} (codes byte {offset}) is {got}, expected 0")]
    CodePadding { row: u64, col: u64, offset: u64, got: u8 },
    #[error("exec-esc-start-first (spec 20.9.6): esc_start[0] = {got}, expected 0")]
    EscStartFirst { got: u32 },
    #[error("exec-esc-start-order (spec 20.9.7): esc_start[{entry}] = {got} is below esc_start[{}] = {previous}", entry - 1)]
    EscStartOrder { entry: u64, got: u32, previous: u32 },
    #[error("exec-esc-length (spec 20.9.8): esc_start[{entry}] = {last} (the last entry), but field `esc` has {got} bytes")]
    EscLength { entry: u64, last: u32, got: u64 },
    #[error(
        "exec-esc-count (spec 20.9.9): tile {tile} (row {row}, columns from {col}) has {codes} escape codes, esc_start gives it {counted}"
    )]
    EscCount { tile: u64, row: u64, col: u64, codes: u64, counted: u64 },
    #[error("exec-escape-in-window (spec 20.9.10): esc[{offset}] = {got} (row {row}, column {col}) {why}")]
    EscapeInWindow { offset: u64, row: u64, col: u64, got: u8, why: String },
}

impl ExecFormatError {
    /// Every rule of spec 20.9 in the total check order of spec 20.10: (name, clause).
    pub const RULES: [(&'static str, &'static str); 10] = [
        ("exec-shape-range", "20.9.1"),
        ("exec-field-size", "20.9.2"),
        ("exec-base-range", "20.9.3"),
        ("exec-sm-padding", "20.9.4"),
        ("exec-code-padding", "20.9.5"),
        ("exec-esc-start-first", "20.9.6"),
        ("exec-esc-start-order", "20.9.7"),
        ("exec-esc-length", "20.9.8"),
        ("exec-esc-count", "20.9.9"),
        ("exec-escape-in-window", "20.9.10"),
    ];

    fn index(&self) -> usize {
        use ExecFormatError::*;
        match self {
            ShapeRange { .. } => 0,
            FieldSize { .. } => 1,
            BaseRange { .. } => 2,
            SmPadding { .. } => 3,
            CodePadding { .. } => 4,
            EscStartFirst { .. } => 5,
            EscStartOrder { .. } => 6,
            EscLength { .. } => 7,
            EscCount { .. } => 8,
            EscapeInWindow { .. } => 9,
        }
    }

    /// The name of the broken rule (spec 20.9), e.g. `exec-esc-count`.
    pub fn rule(&self) -> &'static str {
        Self::RULES[self.index()].0
    }

    /// Its clause, e.g. "20.9.9".
    pub fn clause(&self) -> &'static str {
        Self::RULES[self.index()].1
    }

    /// The field the violation was found in (none for the shape).
    pub fn field(&self) -> Option<ExecField> {
        use ExecFormatError::*;
        match self {
            ShapeRange { .. } => None,
            FieldSize { field, .. } => Some(*field),
            BaseRange { .. } => Some(ExecField::Base),
            SmPadding { .. } => Some(ExecField::Sm),
            CodePadding { .. } => Some(ExecField::Codes),
            EscStartFirst { .. } | EscStartOrder { .. } | EscLength { .. } | EscCount { .. } => Some(ExecField::EscStart),
            EscapeInWindow { .. } => Some(ExecField::Esc),
        }
    }

    /// Byte offset of the violation in [`field`](Self::field), where there is one. For `esc_start`
    /// rules it is the offset of the u32 entry (4 x its index); for field sizes, the length found.
    pub fn offset(&self) -> Option<u64> {
        use ExecFormatError::*;
        match self {
            ShapeRange { .. } => None,
            FieldSize { got, .. } => Some(*got),
            BaseRange { row, .. } => Some(*row),
            SmPadding { offset, .. } | CodePadding { offset, .. } | EscapeInWindow { offset, .. } => Some(*offset),
            EscStartFirst { .. } => Some(0),
            EscStartOrder { entry, .. } | EscLength { entry, .. } => Some(4 * entry),
            EscCount { tile, .. } => Some(4 * (tile + 1)),
        }
    }
}

/// Validating or decoding an execution layout failed: the fields are invalid (spec 20.9), or the
/// matrix is larger than this process allows (spec 20.16).
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExecDecodeError {
    #[error(transparent)]
    Format(#[from] ExecFormatError),
    #[error(transparent)]
    Limit(#[from] LimitError),
}

/// Building an execution layout failed (spec 20.12). Each variant names what is wrong with the
/// input; none of them says anything about a stored execution layout.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExecEncodeError {
    #[error("exec transcode (spec 20.12.3): the format-10 matrix is FP8; the execution layout carries BF16 only")]
    Fp8,
    #[error("exec transcode (spec 20.12.3): the format-10 matrix is invalid: {0}")]
    Source(DecodeError),
    #[error("exec encode (spec 20.2): shape {rows}x{cols} is outside the format's limits")]
    Shape { rows: u64, cols: u64 },
    #[error("exec encode: {got} weights given, a {rows}x{cols} matrix has {expected}")]
    InputLength { got: u64, expected: u64, rows: u64, cols: u64 },
    #[error("exec encode (spec 20.2): the matrix needs {escapes} escapes, more than 2^32 - 1")]
    TooManyEscapes { escapes: u64 },
    #[error("exec encode (spec 20.11): base {got} for row {row} is outside 1..=242")]
    Base { row: u64, got: u8 },
    #[error(transparent)]
    Limit(#[from] LimitError),
}
