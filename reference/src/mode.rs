//! Spec 2: the mode code (element type in bits 0..3, layout in bits 4..7).

use crate::error::FormatError;

/// Spec 2.1: the element type of the stored weights.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElemType {
    /// bfloat16: 16-bit words, high byte entropy-coded, low byte raw (spec 4.1).
    Bf16,
    /// fp8 e4m3fn bytes: a 10-symbol code plus a raw nibble (spec 4.5).
    Fp8E4m3,
}

impl ElemType {
    /// Bytes per weight in the uncompressed input.
    pub fn input_bytes(self) -> usize {
        match self {
            ElemType::Bf16 => 2,
            ElemType::Fp8E4m3 => 1,
        }
    }

    /// Name used by the CLI and the manifests.
    pub fn name(self) -> &'static str {
        match self {
            ElemType::Bf16 => "bf16",
            ElemType::Fp8E4m3 => "fp8",
        }
    }

    /// Number of rank codes before the escape (spec 2.4, 10.2: R = 15 for BF16, 10 for FP8).
    pub(crate) const fn rank_limit(self) -> usize {
        match self {
            ElemType::Bf16 => 15,
            ElemType::Fp8E4m3 => 10,
        }
    }
}

/// Spec 2.1: how weights are grouped into blocks and lanes (the layout field of the mode code).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Layout 0: blocks of 8 rows x 512 columns, lanes of 16 columns (spec 7).
    Rows8,
    /// Layout 1: blocks of 16 rows in mma.m16n8k16 A-fragment order (spec 8).
    Fragment16,
}

impl Layout {
    /// The layout number as it appears in the mode code.
    pub fn number(self) -> u8 {
        match self {
            Layout::Rows8 => 0,
            Layout::Fragment16 => 1,
        }
    }

    /// Rows per block H (spec 3.5, 7.1, 8.1).
    pub fn block_rows(self) -> u64 {
        match self {
            Layout::Rows8 => 8,
            Layout::Fragment16 => 16,
        }
    }
}

/// Spec 2: an element type together with a layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Mode {
    pub elem: ElemType,
    pub layout: Layout,
}

impl Mode {
    pub const BF16_L0: Mode = Mode { elem: ElemType::Bf16, layout: Layout::Rows8 };
    pub const FP8_L0: Mode = Mode { elem: ElemType::Fp8E4m3, layout: Layout::Rows8 };
    pub const BF16_L1: Mode = Mode { elem: ElemType::Bf16, layout: Layout::Fragment16 };
    pub const FP8_L1: Mode = Mode { elem: ElemType::Fp8E4m3, layout: Layout::Fragment16 };
    /// The four modes of format 10, in mode-code order.
    pub const ALL: [Mode; 4] = [Mode::BF16_L0, Mode::FP8_L0, Mode::BF16_L1, Mode::FP8_L1];

    /// Spec 2.1, 2.2: the mode code (0, 1, 16 or 17).
    pub fn code(self) -> u32 {
        let elem = match self.elem {
            ElemType::Bf16 => 0,
            ElemType::Fp8E4m3 => 1,
        };
        elem | (u32::from(self.layout.number()) << 4)
    }

    /// Spec 2.3, rule 13.1 mode-code: only 0, 1, 16 and 17 are valid. The 0.10.1 library reads other
    /// values loosely (any non-1 type is BF16, any non-zero layout nibble is layout 1); we reject them.
    pub fn from_code(code: u32) -> Result<Mode, FormatError> {
        match code {
            0 => Ok(Mode::BF16_L0),
            1 => Ok(Mode::FP8_L0),
            16 => Ok(Mode::BF16_L1),
            17 => Ok(Mode::FP8_L1),
            _ => Err(FormatError::ModeCode { got: code }),
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} layout {}", self.elem.name(), self.layout.number())
    }
}
