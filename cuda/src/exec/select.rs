//! Which kernel serves an execution-layout operation: typed choices, parsed from names for
//! command lines and environment variables (an unknown name is an error, never a fallback).

use crate::GpuError;
use std::str::FromStr;

/// The kernel classes of [`ExecMatvecKernel`]: what a kernel's output is held to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    /// Spec 20.15 exact class: bit-identical to the reference.
    Exact,
    /// Spec 19 bounded class.
    Bounded,
    /// Bench, a ceiling probe of a bounded or strip kernel: timed, never compared.
    #[cfg_attr(not(feature = "bench"), allow(dead_code))]
    Probe,
    /// Bench, a ceiling probe of the lean one-column kernel: timed, never compared; it runs the
    /// exact kernels' plans.
    #[cfg_attr(not(feature = "bench"), allow(dead_code))]
    LeanProbe,
}

/// Declares [`ExecMatvecKernel`] from one table (each kernel once: its docs, whether only the
/// bench builds it, its name for command lines and its [`Class`]), with `ALL`, `name` and `class`.
macro_rules! matvec_kernels {
    ($($(#[doc = $doc:literal])* $(#[cfg($cfg:meta)])? $kernel:ident = $name:literal, $class:ident;)*) => {
        /// The matvec kernel of an execution-layout matrix.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ExecMatvecKernel {
            $($(#[doc = $doc])* $(#[cfg($cfg)])? $kernel,)*
        }

        impl ExecMatvecKernel {
            /// Every kernel of this build, in the table's order.
            pub const ALL: &'static [ExecMatvecKernel] = &[$($(#[cfg($cfg)])? ExecMatvecKernel::$kernel,)*];

            /// The kernel's name on command lines and in environment variables.
            pub fn name(self) -> &'static str {
                match self {
                    $($(#[cfg($cfg)])? ExecMatvecKernel::$kernel => $name,)*
                }
            }

            fn class(self) -> Class {
                match self {
                    $($(#[cfg($cfg)])? ExecMatvecKernel::$kernel => Class::$class,)*
                }
            }
        }
    };
}

matvec_kernels! {
    /// Spec 20.15 exact class, the default: [`ExecMatvecKernel::Strip`] for one column (where its
    /// tile partials fit shared memory: K up to ~7 M), [`ExecMatvecKernel::Stream`] for batches
    /// (and for one column beyond that K). All are bit-identical, so the choice never changes a
    /// result.
    Exact = "exact", Exact;
    /// Spec 20.15 exact class (kernels/exec_matvec_strip.cu): a warp per tile column of a strip of
    /// rows (in CTAs of one warp, a warp per 4 rows through every tile, where the rows fill the
    /// device), the tile's activations in registers, the weights loaded straight into registers;
    /// one column per launch. Measured on the H200 against the lean kernel (docs/gpu.md, session
    /// 12): 3-7% faster by geomean over the bench shapes.
    Strip = "strip", Exact;
    /// Spec 20.15 exact class (kernels/exec_matvec.cu `exec_matvec_c*`): persistent warps
    /// streaming 4-row items through a cp.async pipeline, activations in shared memory, 1, 2 or 4
    /// columns per decode; one column: the lean kernel (exec_matvec_lean.cu) where K16 % 32 == 0
    /// and x fits shared memory, the generic one (exec_matvec.cu) otherwise.
    Stream = "stream", Exact;
    /// Bench: [`ExecMatvecKernel::Stream`] with the generic one-column kernel at every K.
    #[cfg(feature = "bench")]
    StreamGeneric = "stream-generic", Exact;
    /// Bench: [`ExecMatvecKernel::Rows`] without the escape offsets in its load batch.
    #[cfg(feature = "bench")]
    RowsNoPrefetch = "rows-noprefetch", Exact;
    /// Bench: the strip kernel with CTAs of W warps at every shape (with the launch shape that
    /// `GpuExecMatrix::force_strip_plan` gives, if any), and with CTAs of one warp (W1) at every
    /// shape; `Exact` chooses between them (exec/strip.rs). Exact class.
    #[cfg(feature = "bench")]
    VarStripCta = "var-strip-cta", Exact;
    #[cfg(feature = "bench")]
    VarStripW1 = "var-strip-w1", Exact;
    /// Bench: the production choice of the strip kernels (spread as production's, `spread::capped`)
    /// with the next kernel released at every launch's start, or at every launch's end, instead of
    /// by production's rule (`spread_release`, `release::release_point`; docs/gpu.md, sessions 21 and
    /// 25). Exact class.
    #[cfg(feature = "bench")]
    VarStripReleaseStart = "var-strip-release-start", Exact;
    #[cfg(feature = "bench")]
    VarStripReleaseEnd = "var-strip-release-end", Exact;
    /// Bench: the production one-column plan without its CTAs per SM capped (`spread::capped`,
    /// session 25), each launch released where `release::release_point` puts it. Exact class.
    #[cfg(feature = "bench")]
    VarStripUncapped = "var-strip-uncapped", Exact;
    /// Bench: the production one-column plan without the two-warp rule of exec/pair.rs (session
    /// 29: production until session 28). Exact class.
    #[cfg(feature = "bench")]
    VarStripNoPairRule = "var-strip-no-pair-rule", Exact;
    /// Bench: the production one-column plan with the CTA kernel's row slices tied to its warps
    /// (`strip::SliceRule::PerWarps`, S = max(1, W / CB): production until session 29). Exact
    /// class.
    #[cfg(feature = "bench")]
    VarStripPerWarpSlices = "var-strip-per-warp-slices", Exact;
    /// Bench: the CTA kernel with free row slices at every shape, W1's domain included (one round
    /// where an RS of at most 16 allows; session 30's candidate for W1's domain). Exact class.
    #[cfg(feature = "bench")]
    VarStripNoW1 = "var-strip-no-w1", Exact;
    /// Bench: the production one-column plan with W1's launches on W1 where production runs W1
    /// ahead (exec/w1.rs, session 30), released as W1's rule says. Exact class.
    #[cfg(feature = "bench")]
    VarStripW1Plain = "var-strip-w1-plain", Exact;
    /// Bench (session 36): the CTA strip kernel on two columns per decode
    /// (kernels/bench/exec_matvec_strip_cols.cu) at every shape where its tile partials fit,
    /// batches two columns per launch on the CTA kernel's plan at its occupancy and partials
    /// (exec/variant.rs); one column (a batch's last, or batch 1) on production's one-column plan,
    /// so that its batch-1 time is production's. Exact class.
    #[cfg(feature = "bench")]
    VarStripC2 = "var-strip-c2", Exact;
    /// Bench (session 36): as [`ExecMatvecKernel::VarStripC2`] with four columns per launch on
    /// the CTA strip kernel on four columns per decode where at least 3 are left (3 compute the
    /// last one twice), two where 2 are left. Exact class.
    #[cfg(feature = "bench")]
    VarStripC4 = "var-strip-c4", Exact;
    /// Bench, ceiling probe (not exact): the strip kernel with the loaded words as weights, no
    /// decode (kernels/bench/exec_matvec_variants.cu).
    #[cfg(feature = "bench")]
    ProbeStripNoDecode = "probe-strip-nodecode", Probe;
    /// Bench, ceiling probe (not exact): the lean one-column kernel with the stage words used as
    /// weights, no decode (kernels/bench/exec_matvec_variants.cu).
    #[cfg(feature = "bench")]
    ProbeNoDecode = "probe-nodecode", LeanProbe;
    /// Bench, ceiling probe (not exact): the lean kernel with neither decode nor fma (the copies,
    /// x, the stage reads, the tree and the loop).
    #[cfg(feature = "bench")]
    ProbeLoads = "probe-loads", LeanProbe;
    /// Bench, streaming probes (not a matvec): the copy pipeline alone with items of 4 rows x 1
    /// tile, 2 x 2 and 1 row x 4 tiles.
    #[cfg(feature = "bench")]
    ProbeStream4x1 = "probe-stream4x1", LeanProbe;
    #[cfg(feature = "bench")]
    ProbeStream2x2 = "probe-stream2x2", LeanProbe;
    #[cfg(feature = "bench")]
    ProbeStream1x4 = "probe-stream1x4", LeanProbe;
    /// Bench, ceiling probes of the bounded stream kernel (not a matvec; up to 8 columns, more
    /// run [`ExecMatvecKernel::Bounded`]): the stage words as weights (no decode), and the decode
    /// without mma (kernels/bench/exec_tensor_stream.cu).
    #[cfg(feature = "bench")]
    ProbeBoundedRaw = "probe-bounded-raw", Probe;
    #[cfg(feature = "bench")]
    ProbeBoundedNoMma = "probe-bounded-nomma", Probe;
    /// Bench, ceiling probe of the bounded strip kernel (not a matvec; up to 16 columns): the
    /// loaded words as weights, no decode, no patch (kernels/bench/exec_tensor_variants.cu).
    #[cfg(feature = "bench")]
    ProbeBoundedStripRaw = "probe-bounded-strip-raw", Probe;
    /// Spec 19 bounded class (kernels/exec_tensor*.cu): tensor cores, BF16 activations only (f32
    /// activations run [`ExecMatvecKernel::Exact`]); the strip kernel (items of 16 rows x 128
    /// columns loaded straight into registers, a row group's item columns split over CTAs where
    /// the row groups alone would spread unevenly over the SMs) up to 32 columns per decode, the
    /// panel kernel (CTAs of 8 warps sharing staged activations, 1 or 2 row groups per warp) at 64.
    Bounded = "bounded", Bounded;
    /// Bench: the bounded matvec with warpgroup MMA (kernels/bench/exec_wgmma.cu, sm_90a only):
    /// 16, 32 or 64 columns per decode, the activations of a column range staged once per CTA in
    /// shared memory as wgmma's B operand. Spec 19 bounded class.
    #[cfg(feature = "bench")]
    BoundedWgmma = "bounded-wgmma", Bounded;
    /// Bench: [`ExecMatvecKernel::Bounded`] with the stream kernel (bench/exec_tensor_stream.cu:
    /// items through a cp.async stage in shared memory; the choice up to 16 columns until session
    /// 13) in place of the strip kernel.
    #[cfg(feature = "bench")]
    BoundedStream = "bounded-stream", Bounded;
    /// Spec 20.15 exact class, version 1 (kernels/exec_matvec.cu `exec_matvec_rows`): short
    /// CTAs of 2 rows whose warps split the tiles; one column per launch. Same results as
    /// [`ExecMatvecKernel::Exact`].
    Rows = "rows", Exact;
    /// Bench: the tile kernel (bench/exec_tensor_tile.cu, the 64-column kernel until session 11) at
    /// every batch size (8 to 64 columns per decode).
    #[cfg(feature = "bench")]
    BoundedTile = "bounded-tile", Bounded;
    /// Bench: the step kernel (kernels/bench/exec_tensor_step.cu, items of 16 rows x 64 columns)
    /// up to 32 columns per decode, the tile kernel above: the bounded choice before the stream
    /// kernel, and at 17..32 columns until session 13.
    #[cfg(feature = "bench")]
    BoundedStep = "bounded-step", Bounded;
    /// Bench: [`ExecMatvecKernel::Bounded`] up to 32 columns per decode with the strip kernel held
    /// to one split of the item columns (no summing launch); at 9..16 columns, with the strip
    /// kernel's variant that loads each chunk's activations as its mma need them.
    #[cfg(feature = "bench")]
    VarTcStripNoSplit = "var-tc-strip-nosplit", Bounded;
    #[cfg(feature = "bench")]
    VarTcStripXChunk = "var-tc-strip-xchunk", Bounded;
    /// Bench (session 28): [`ExecMatvecKernel::Bounded`] up to 32 columns per decode with every
    /// split launch's CTAs of a row group in one thread-block cluster that adds the splits itself
    /// (kernels/exec_tensor.cu, `exec_tc_cluster_out`: no partial-sum buffer, no summing launch;
    /// programmatic like a one-split launch), at most 8 splits, on the plan that counts resident
    /// clusters (production takes the cluster launch only where that plan is its own).
    #[cfg(feature = "bench")]
    VarTcStripCluster = "var-tc-strip-cluster", Bounded;
    /// Bench: [`ExecMatvecKernel::Bounded`] up to 32 columns per decode with every split launch's
    /// splits added by the summing kernel (`exec_tensor_panel_sum`), never in a cluster
    /// (production until session 28).
    #[cfg(feature = "bench")]
    VarTcStripSumKernel = "var-tc-strip-sum-kernel", Bounded;
    /// Bench: [`ExecMatvecKernel::Bounded`] up to 32 columns per decode, production's launch with
    /// the strip kernel releasing the next kernel after its items everywhere (production until
    /// session 31, which releases launches that fill the device at their CTAs' start).
    #[cfg(feature = "bench")]
    VarTcStripReleaseEnd = "var-tc-strip-release-end", Bounded;
    /// Bench: [`ExecMatvecKernel::Bounded`] up to 32 columns per decode with a split launch held
    /// to the least splits that spread its row groups, also where its plan then runs more than one
    /// wave (production until session 32, which takes up to 8 splits where they fit one wave).
    #[cfg(feature = "bench")]
    VarTcStripLeastSplits = "var-tc-strip-least-splits", Bounded;
    /// Bench: the panel kernel (33..64 columns per decode) held to 1 row group per warp (the choice
    /// until session 13) or to 2; [`ExecMatvecKernel::Bounded`] takes the one its plan models
    /// faster.
    #[cfg(feature = "bench")]
    BoundedPanelRg1 = "bounded-panel-rg1", Bounded;
    #[cfg(feature = "bench")]
    BoundedPanelRg2 = "bounded-panel-rg2", Bounded;
}

impl ExecMatvecKernel {
    /// True for the bench's ceiling probes: timed, never compared (they compute nothing usable).
    pub fn is_probe(self) -> bool {
        matches!(self.class(), Class::Probe | Class::LeanProbe)
    }

    /// True for the ceiling probes of the lean one-column kernel (exec/variant.rs has their plans).
    pub fn is_lean_probe(self) -> bool {
        self.class() == Class::LeanProbe
    }

    /// True for the kernels of the exact class (bit-identical to the reference), and for the lean
    /// kernel's probes, which run its exact plans.
    pub fn is_exact(self) -> bool {
        matches!(self.class(), Class::Exact | Class::LeanProbe)
    }

    /// True for the bench's exact kernels that batch on the CTA strip kernel on several columns
    /// ([`ExecMatvecKernel::VarStripC2`], [`ExecMatvecKernel::VarStripC4`]), whose every launch
    /// has a BF16 entry point; false for every production kernel.
    pub(super) fn batches_on_strip(self) -> bool {
        #[cfg(feature = "bench")]
        if matches!(self, ExecMatvecKernel::VarStripC2 | ExecMatvecKernel::VarStripC4) {
            return true;
        }
        false
    }
}

/// The dequant kernel of an execution-layout matrix (gather always runs the streaming one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExecDequantKernel {
    /// kernels/exec_dequant.cu `exec_dequant_d4`: the streaming item pipeline. Same results.
    Stream,
    /// kernels/exec_dequant.cu `exec_dequant_rows`: short-lived warps, two items each, escape
    /// offsets in the load batch. The default: faster on every bench shape (2.0-2.35 against
    /// 1.6-2.0 TB/s of BF16 output on the H200, 2026-12-01; the copy roof allows 2.40).
    Rows,
}

impl ExecDequantKernel {
    pub const ALL: &'static [ExecDequantKernel] = &[ExecDequantKernel::Rows, ExecDequantKernel::Stream];

    pub fn name(self) -> &'static str {
        match self {
            ExecDequantKernel::Stream => "stream",
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kernel_has_one_name_that_parses_back() {
        for &k in ExecMatvecKernel::ALL {
            assert_eq!(k.name().parse::<ExecMatvecKernel>().ok(), Some(k), "{}", k.name());
            assert_eq!(ExecMatvecKernel::ALL.iter().filter(|o| o.name() == k.name()).count(), 1, "{}", k.name());
        }
        for &k in ExecDequantKernel::ALL {
            assert_eq!(k.name().parse::<ExecDequantKernel>().ok(), Some(k));
        }
        assert!("no-such-kernel".parse::<ExecMatvecKernel>().is_err());
    }

    #[test]
    fn classes() {
        assert!(ExecMatvecKernel::Exact.is_exact() && !ExecMatvecKernel::Exact.is_probe());
        assert!(!ExecMatvecKernel::Bounded.is_exact() && !ExecMatvecKernel::Bounded.is_probe());
        #[cfg(feature = "bench")]
        {
            // a lean probe runs the exact plans; the other probes are timed only
            assert!(ExecMatvecKernel::ProbeLoads.is_exact() && ExecMatvecKernel::ProbeLoads.is_lean_probe());
            assert!(ExecMatvecKernel::ProbeBoundedRaw.is_probe() && !ExecMatvecKernel::ProbeBoundedRaw.is_exact());
            assert!(!ExecMatvecKernel::VarTcStripCluster.is_exact() && !ExecMatvecKernel::VarTcStripCluster.is_probe());
            assert!(ExecMatvecKernel::VarStripW1.is_exact() && !ExecMatvecKernel::VarStripW1.is_lean_probe());
        }
    }
}
