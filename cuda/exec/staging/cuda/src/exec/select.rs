//! Which kernel serves an execution-layout operation: typed choices, parsed from names for
//! command lines and environment variables (an unknown name is an error, never a fallback).

use crate::GpuError;
use std::str::FromStr;

/// The matvec kernel of an execution-layout matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExecMatvecKernel {
    /// Spec 20.15 exact class (kernels/exec_matvec.cu): streaming 4-row items, activations in
    /// shared memory, 1, 2 or 4 columns per decode. The default.
    Exact,
    /// Spec 19 bounded class (kernels/exec_tensor.cu): tensor cores, BF16 activations only (f32
    /// activations run [`ExecMatvecKernel::Exact`]), up to 64 columns per decode.
    Bounded,
    /// Bench: version 1 of the exact matvec (short CTAs of 2 rows, one load batch per warp).
    #[cfg(feature = "bench")]
    Rows,
    /// Bench: version 2 of the tensor-core matvec (one 64-column step per pipeline item).
    #[cfg(feature = "bench")]
    BoundedStep,
}

/// The dequant kernel of an execution-layout matrix (gather always runs the production one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExecDequantKernel {
    /// kernels/exec_dequant.cu: the streaming item pipeline. The default.
    Stream,
    /// Bench: version 1 (short-lived warps, two items each).
    #[cfg(feature = "bench")]
    Rows,
}

impl ExecMatvecKernel {
    pub const ALL: &'static [ExecMatvecKernel] = &[
        ExecMatvecKernel::Exact,
        ExecMatvecKernel::Bounded,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::Rows,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::BoundedStep,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ExecMatvecKernel::Exact => "exact",
            ExecMatvecKernel::Bounded => "bounded",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::Rows => "rows",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::BoundedStep => "bounded-step",
        }
    }

    /// True for the kernels of the exact class (bit-identical to the reference).
    pub fn is_exact(self) -> bool {
        match self {
            ExecMatvecKernel::Exact => true,
            ExecMatvecKernel::Bounded => false,
            #[cfg(feature = "bench")]
            ExecMatvecKernel::Rows => true,
            #[cfg(feature = "bench")]
            ExecMatvecKernel::BoundedStep => false,
        }
    }
}

impl ExecDequantKernel {
    pub const ALL: &'static [ExecDequantKernel] = &[
        ExecDequantKernel::Stream,
        #[cfg(feature = "bench")]
        ExecDequantKernel::Rows,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ExecDequantKernel::Stream => "stream",
            #[cfg(feature = "bench")]
            ExecDequantKernel::Rows => "rows",
        }
    }
}

impl FromStr for ExecMatvecKernel {
    type Err = GpuError;
    fn from_str(s: &str) -> Result<Self, GpuError> {
        ExecMatvecKernel::ALL.iter().copied().find(|k| k.name() == s).ok_or_else(|| GpuError::UnknownKernel {
            what: "execution-layout matvec",
            got: s.to_owned(),
            choices: ExecMatvecKernel::ALL.iter().map(|k| k.name()).collect::<Vec<_>>().join(", "),
        })
    }
}

impl FromStr for ExecDequantKernel {
    type Err = GpuError;
    fn from_str(s: &str) -> Result<Self, GpuError> {
        ExecDequantKernel::ALL.iter().copied().find(|k| k.name() == s).ok_or_else(|| GpuError::UnknownKernel {
            what: "execution-layout dequant",
            got: s.to_owned(),
            choices: ExecDequantKernel::ALL.iter().map(|k| k.name()).collect::<Vec<_>>().join(", "),
        })
    }
}
