//! Which kernel serves an operation: typed choices, checked against the matrix's layout when
//! they are made (an unsupported choice is an error, never a panic or a silent substitute), and
//! parsed from names for command lines and environment variables (an unknown name is an error).

use crate::GpuError;
use nwc_reference::{Layout, Mode};
use std::str::FromStr;

/// The matvec kernel of a matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MatvecKernel {
    /// Spec 15.4, bit-exact: the pair-table kernel on layout 0 (columns in groups of up to 4 per
    /// decode), one code at a time on layout 1. The default.
    Exact,
    /// Spec 19, layout 1 only: tensor cores, each output within the bound B of the canonical one,
    /// up to 16 columns per decode. Only BF16 activations are in the domain of spec 19.2; f32
    /// activations run [`MatvecKernel::Exact`].
    Bounded,
    /// Bench: the exact layout 0 kernel with one launch per column (no batched decode).
    #[cfg(feature = "bench")]
    ExactPerColumn,
    /// Bench: "version 1" on layout 0, one code at a time (on layout 1 this is `Exact`'s kernel).
    #[cfg(feature = "bench")]
    Codewise,
    /// Bench: "version 6" on layout 0, a staged reader with the raw plane copied to shared memory.
    #[cfg(feature = "bench")]
    Staged,
}

/// The dequant kernel of a matrix (gather always runs the gather kernel).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DequantKernel {
    /// The production kernel of the matrix's layout: staged reader on layout 0, fragment decoder
    /// on layout 1. The default.
    ByLayout,
    /// Bench: the gather kernel run over every block ("version 1").
    #[cfg(feature = "bench")]
    Gather,
    /// Bench, layout 0: the pair-table decoder of the exact matvec ("version 7").
    #[cfg(feature = "bench")]
    PairTable,
}

impl MatvecKernel {
    pub const ALL: &'static [MatvecKernel] = &[
        MatvecKernel::Exact,
        MatvecKernel::Bounded,
        #[cfg(feature = "bench")]
        MatvecKernel::ExactPerColumn,
        #[cfg(feature = "bench")]
        MatvecKernel::Codewise,
        #[cfg(feature = "bench")]
        MatvecKernel::Staged,
    ];

    pub fn name(self) -> &'static str {
        match self {
            MatvecKernel::Exact => "exact",
            MatvecKernel::Bounded => "bounded",
            #[cfg(feature = "bench")]
            MatvecKernel::ExactPerColumn => "exact-per-column",
            #[cfg(feature = "bench")]
            MatvecKernel::Codewise => "codewise",
            #[cfg(feature = "bench")]
            MatvecKernel::Staged => "staged",
        }
    }

    /// `Ok` when this build has a kernel of this choice for `mode`.
    pub fn check(self, mode: Mode) -> Result<(), GpuError> {
        let fits = match self {
            MatvecKernel::Exact => true,
            MatvecKernel::Bounded => mode.layout == Layout::Fragment16,
            #[cfg(feature = "bench")]
            MatvecKernel::Codewise => true,
            #[cfg(feature = "bench")]
            MatvecKernel::ExactPerColumn | MatvecKernel::Staged => mode.layout == Layout::Rows8,
        };
        if fits {
            Ok(())
        } else {
            Err(GpuError::KernelMismatch { kernel: format!("{} matvec", self.name()), mode })
        }
    }
}

impl DequantKernel {
    pub const ALL: &'static [DequantKernel] = &[
        DequantKernel::ByLayout,
        #[cfg(feature = "bench")]
        DequantKernel::Gather,
        #[cfg(feature = "bench")]
        DequantKernel::PairTable,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DequantKernel::ByLayout => "by-layout",
            #[cfg(feature = "bench")]
            DequantKernel::Gather => "gather",
            #[cfg(feature = "bench")]
            DequantKernel::PairTable => "pair-table",
        }
    }

    /// `Ok` when this build has a kernel of this choice for `mode`.
    pub fn check(self, mode: Mode) -> Result<(), GpuError> {
        let fits = match self {
            DequantKernel::ByLayout => true,
            #[cfg(feature = "bench")]
            DequantKernel::Gather => true,
            #[cfg(feature = "bench")]
            DequantKernel::PairTable => mode.layout == Layout::Rows8,
        };
        if fits {
            Ok(())
        } else {
            Err(GpuError::KernelMismatch { kernel: format!("{} dequant", self.name()), mode })
        }
    }
}

fn parse<T: Copy>(what: &'static str, s: &str, all: &[T], name: impl Fn(T) -> &'static str) -> Result<T, GpuError> {
    all.iter().copied().find(|&k| name(k) == s).ok_or_else(|| GpuError::UnknownKernel {
        what,
        got: s.to_owned(),
        choices: all.iter().map(|&k| name(k)).collect::<Vec<_>>().join(", "),
    })
}

impl FromStr for MatvecKernel {
    type Err = GpuError;
    fn from_str(s: &str) -> Result<Self, GpuError> {
        parse("matvec", s, MatvecKernel::ALL, MatvecKernel::name)
    }
}

impl FromStr for DequantKernel {
    type Err = GpuError;
    fn from_str(s: &str) -> Result<Self, GpuError> {
        parse("dequant", s, DequantKernel::ALL, DequantKernel::name)
    }
}

impl std::fmt::Display for MatvecKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::fmt::Display for DequantKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_errors() {
        for &k in MatvecKernel::ALL {
            assert_eq!(k.name().parse::<MatvecKernel>().unwrap(), k);
        }
        for &k in DequantKernel::ALL {
            assert_eq!(k.name().parse::<DequantKernel>().unwrap(), k);
        }
        let err = "5".parse::<MatvecKernel>().unwrap_err().to_string();
        assert!(err.contains("unknown matvec kernel \"5\"") && err.contains("exact, bounded"), "{err}");
        assert!("9".parse::<DequantKernel>().is_err());
    }

    #[test]
    fn choices_that_do_not_fit_the_layout_are_typed_errors() {
        assert!(matches!(MatvecKernel::Bounded.check(Mode::BF16_L0), Err(GpuError::KernelMismatch { .. })));
        MatvecKernel::Bounded.check(Mode::FP8_L1).unwrap();
        MatvecKernel::Exact.check(Mode::BF16_L0).unwrap();
        #[cfg(feature = "bench")]
        {
            assert!(DequantKernel::PairTable.check(Mode::BF16_L1).is_err());
            assert!(MatvecKernel::Staged.check(Mode::FP8_L1).is_err());
        }
    }
}
