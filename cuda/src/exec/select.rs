//! Which kernel serves an execution-layout operation: typed choices, parsed from names for
//! command lines and environment variables (an unknown name is an error, never a fallback).

use crate::GpuError;
use std::str::FromStr;

/// The matvec kernel of an execution-layout matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExecMatvecKernel {
    /// Spec 20.15 exact class, the default: [`ExecMatvecKernel::Strip`] for one column (where its
    /// tile partials fit shared memory: K up to ~7 M), [`ExecMatvecKernel::Stream`] for batches
    /// (and for one column beyond that K). All are bit-identical, so the choice never changes a
    /// result.
    Exact,
    /// Spec 20.15 exact class (kernels/exec_matvec_strip.cu): a warp per tile column of a strip of
    /// rows (in CTAs of one warp, a warp per 4 rows through every tile, where the rows fill the
    /// device), the tile's activations in registers, the weights loaded straight into registers;
    /// one column per launch. Measured on the H200 against the lean kernel (docs/gpu.md, session
    /// 12): 3-7% faster by geomean over the bench shapes.
    Strip,
    /// Spec 20.15 exact class (kernels/exec_matvec.cu `exec_matvec_c*`): persistent warps
    /// streaming 4-row items through a cp.async pipeline, activations in shared memory, 1, 2 or 4
    /// columns per decode; one column: the lean kernel (exec_matvec_lean.cu) where K16 % 32 == 0
    /// and x fits shared memory, the generic one (exec_matvec.cu) otherwise.
    Stream,
    /// Bench: [`ExecMatvecKernel::Stream`] with the generic one-column kernel at every K.
    #[cfg(feature = "bench")]
    StreamGeneric,
    /// Bench: [`ExecMatvecKernel::Rows`] without the escape offsets in its load batch.
    #[cfg(feature = "bench")]
    RowsNoPrefetch,
    /// Bench: the strip kernel with CTAs of W warps at every shape (with the launch shape that
    /// `GpuExecMatrix::force_strip_plan` gives, if any), and with CTAs of one warp (W1) at every
    /// shape; `Exact` chooses between them (exec/strip.rs). Exact class.
    #[cfg(feature = "bench")]
    VarStripCta,
    #[cfg(feature = "bench")]
    VarStripW1,
    /// Bench: the production choice of the strip kernels (spread as production's, `spread::capped`)
    /// with the next kernel released at every launch's start, or at every launch's end, instead of
    /// by production's rule (`spread_release`, `release::release_point`; docs/gpu.md, sessions 21 and
    /// 25). Exact class.
    #[cfg(feature = "bench")]
    VarStripReleaseStart,
    #[cfg(feature = "bench")]
    VarStripReleaseEnd,
    /// Bench: the production one-column plan without its CTAs per SM capped (`spread::capped`,
    /// session 25), each launch released where `release::release_point` puts it. Exact class.
    #[cfg(feature = "bench")]
    VarStripUncapped,
    /// Bench: the production one-column plan without the two-warp rule of exec/pair.rs (session
    /// 29: production until session 28). Exact class.
    #[cfg(feature = "bench")]
    VarStripNoPairRule,
    /// Bench: the production one-column plan with the CTA kernel's row slices tied to its warps
    /// (`strip::SliceRule::PerWarps`, S = max(1, W / CB): production until session 29). Exact
    /// class.
    #[cfg(feature = "bench")]
    VarStripPerWarpSlices,
    /// Bench: the CTA kernel with free row slices at every shape, W1's domain included (one round
    /// where an RS of at most 16 allows; session 30's candidate for W1's domain). Exact class.
    #[cfg(feature = "bench")]
    VarStripNoW1,
    /// Bench: the production one-column plan with W1's launches on W1 where production runs W1
    /// ahead (exec/w1.rs, session 30), released as W1's rule says. Exact class.
    #[cfg(feature = "bench")]
    VarStripW1Plain,
    /// Bench, ceiling probe (not exact): the strip kernel with the loaded words as weights, no
    /// decode (kernels/bench/exec_matvec_variants.cu).
    #[cfg(feature = "bench")]
    ProbeStripNoDecode,
    /// Bench, ceiling probe (not exact): the lean one-column kernel with the stage words used as
    /// weights, no decode (kernels/bench/exec_matvec_variants.cu).
    #[cfg(feature = "bench")]
    ProbeNoDecode,
    /// Bench, ceiling probe (not exact): the lean kernel with neither decode nor fma (the copies,
    /// x, the stage reads, the tree and the loop).
    #[cfg(feature = "bench")]
    ProbeLoads,
    /// Bench, streaming probes (not a matvec): the copy pipeline alone with items of 4 rows x 1
    /// tile, 2 x 2 and 1 row x 4 tiles.
    #[cfg(feature = "bench")]
    ProbeStream4x1,
    #[cfg(feature = "bench")]
    ProbeStream2x2,
    #[cfg(feature = "bench")]
    ProbeStream1x4,
    /// Bench, ceiling probes of the bounded stream kernel (not a matvec; up to 8 columns, more
    /// run [`ExecMatvecKernel::Bounded`]): the stage words as weights (no decode), and the decode
    /// without mma (kernels/bench/exec_tensor_stream.cu).
    #[cfg(feature = "bench")]
    ProbeBoundedRaw,
    #[cfg(feature = "bench")]
    ProbeBoundedNoMma,
    /// Bench, ceiling probe of the bounded strip kernel (not a matvec; up to 16 columns): the
    /// loaded words as weights, no decode, no patch (kernels/bench/exec_tensor_variants.cu).
    #[cfg(feature = "bench")]
    ProbeBoundedStripRaw,
    /// Spec 19 bounded class (kernels/exec_tensor*.cu): tensor cores, BF16 activations only (f32
    /// activations run [`ExecMatvecKernel::Exact`]); the strip kernel (items of 16 rows x 128
    /// columns loaded straight into registers, a row group's item columns split over CTAs where
    /// the row groups alone would spread unevenly over the SMs) up to 32 columns per decode, the
    /// panel kernel (CTAs of 8 warps sharing staged activations, 1 or 2 row groups per warp) at 64.
    Bounded,
    /// Bench: the bounded matvec with warpgroup MMA (kernels/bench/exec_wgmma.cu, sm_90a only):
    /// 16, 32 or 64 columns per decode, the activations of a column range staged once per CTA in
    /// shared memory as wgmma's B operand. Spec 19 bounded class.
    #[cfg(feature = "bench")]
    BoundedWgmma,
    /// Bench: [`ExecMatvecKernel::Bounded`] with the stream kernel (bench/exec_tensor_stream.cu:
    /// items through a cp.async stage in shared memory; the choice up to 16 columns until session
    /// 13) in place of the strip kernel.
    #[cfg(feature = "bench")]
    BoundedStream,
    /// Spec 20.15 exact class, version 1 (kernels/exec_matvec.cu `exec_matvec_rows`): short
    /// CTAs of 2 rows whose warps split the tiles; one column per launch. Same results as
    /// [`ExecMatvecKernel::Exact`].
    Rows,
    /// Bench: the tile kernel (bench/exec_tensor_tile.cu, the 64-column kernel until session 11) at
    /// every batch size (8 to 64 columns per decode).
    #[cfg(feature = "bench")]
    BoundedTile,
    /// Bench: the step kernel (kernels/bench/exec_tensor_step.cu, items of 16 rows x 64 columns)
    /// up to 32 columns per decode, the tile kernel above: the bounded choice before the stream
    /// kernel, and at 17..32 columns until session 13.
    #[cfg(feature = "bench")]
    BoundedStep,
    /// Bench: [`ExecMatvecKernel::Bounded`] up to 32 columns per decode with the strip kernel held
    /// to one split of the item columns (no summing launch); at 9..16 columns, with the strip
    /// kernel's variant that loads each chunk's activations as its mma need them.
    #[cfg(feature = "bench")]
    VarTcStripNoSplit,
    #[cfg(feature = "bench")]
    VarTcStripXChunk,
    /// Bench (session 28): [`ExecMatvecKernel::Bounded`] up to 32 columns per decode with every
    /// split launch's CTAs of a row group in one thread-block cluster that adds the splits itself
    /// (kernels/exec_tensor.cu, `exec_tc_cluster_out`: no partial-sum buffer, no summing launch;
    /// programmatic like a one-split launch), at most 8 splits, on the plan that counts resident
    /// clusters (production takes the cluster launch only where that plan is its own).
    #[cfg(feature = "bench")]
    VarTcStripCluster,
    /// Bench: [`ExecMatvecKernel::Bounded`] up to 32 columns per decode with every split launch's
    /// splits added by the summing kernel (`exec_tensor_panel_sum`), never in a cluster
    /// (production until session 28).
    #[cfg(feature = "bench")]
    VarTcStripSumKernel,
    /// Bench: [`ExecMatvecKernel::Bounded`] up to 32 columns per decode, production's launch with
    /// the strip kernel releasing the next kernel after its items everywhere (production until
    /// session 31, which releases launches that fill the device at their CTAs' start).
    #[cfg(feature = "bench")]
    VarTcStripReleaseEnd,
    /// Bench: [`ExecMatvecKernel::Bounded`] up to 32 columns per decode with a split launch held
    /// to the least splits that spread its row groups, also where its plan then runs more than one
    /// wave (production until session 32, which takes up to 8 splits where they fit one wave).
    #[cfg(feature = "bench")]
    VarTcStripLeastSplits,
    /// Bench (session 33): [`ExecMatvecKernel::Bounded`]'s strip kernel up to 32 columns per
    /// decode on an even share of all row groups' items: CTA c takes the items c x P .. of the
    /// row groups' items in one sequence, and each row group's parts are added by the last CTA
    /// to finish one (kernels/bench/exec_tensor_share.cu, exec/tensor_share.rs).
    #[cfg(feature = "bench")]
    VarTcStripShare,
    /// Bench: the panel kernel (33..64 columns per decode) held to 1 row group per warp (the choice
    /// until session 13) or to 2; [`ExecMatvecKernel::Bounded`] takes the one its plan models
    /// faster.
    #[cfg(feature = "bench")]
    BoundedPanelRg1,
    #[cfg(feature = "bench")]
    BoundedPanelRg2,
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

impl ExecMatvecKernel {
    pub const ALL: &'static [ExecMatvecKernel] = &[
        ExecMatvecKernel::Exact,
        ExecMatvecKernel::Strip,
        ExecMatvecKernel::Stream,
        ExecMatvecKernel::Rows,
        ExecMatvecKernel::Bounded,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::BoundedStream,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::BoundedWgmma,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::BoundedTile,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::StreamGeneric,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::RowsNoPrefetch,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::BoundedStep,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::BoundedPanelRg1,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::BoundedPanelRg2,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::VarTcStripNoSplit,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::VarTcStripXChunk,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::VarTcStripCluster,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::VarTcStripSumKernel,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::VarTcStripReleaseEnd,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::VarTcStripLeastSplits,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::VarTcStripShare,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::VarStripCta,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::VarStripW1,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::VarStripReleaseStart,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::VarStripReleaseEnd,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::VarStripUncapped,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::VarStripNoPairRule,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::VarStripPerWarpSlices,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::VarStripNoW1,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::VarStripW1Plain,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::ProbeStripNoDecode,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::ProbeNoDecode,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::ProbeLoads,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::ProbeStream4x1,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::ProbeStream2x2,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::ProbeStream1x4,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::ProbeBoundedRaw,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::ProbeBoundedNoMma,
        #[cfg(feature = "bench")]
        ExecMatvecKernel::ProbeBoundedStripRaw,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ExecMatvecKernel::Exact => "exact",
            ExecMatvecKernel::Strip => "strip",
            ExecMatvecKernel::Stream => "stream",
            ExecMatvecKernel::Bounded => "bounded",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::BoundedStream => "bounded-stream",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::BoundedWgmma => "bounded-wgmma",
            ExecMatvecKernel::Rows => "rows",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::BoundedTile => "bounded-tile",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::StreamGeneric => "stream-generic",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::RowsNoPrefetch => "rows-noprefetch",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::BoundedStep => "bounded-step",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::BoundedPanelRg1 => "bounded-panel-rg1",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::BoundedPanelRg2 => "bounded-panel-rg2",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::VarTcStripNoSplit => "var-tc-strip-nosplit",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::VarTcStripXChunk => "var-tc-strip-xchunk",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::VarTcStripCluster => "var-tc-strip-cluster",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::VarTcStripSumKernel => "var-tc-strip-sum-kernel",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::VarTcStripReleaseEnd => "var-tc-strip-release-end",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::VarTcStripLeastSplits => "var-tc-strip-least-splits",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::VarTcStripShare => "var-tc-strip-share",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::VarStripCta => "var-strip-cta",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::VarStripW1 => "var-strip-w1",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::VarStripReleaseStart => "var-strip-release-start",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::VarStripReleaseEnd => "var-strip-release-end",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::VarStripUncapped => "var-strip-uncapped",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::VarStripNoPairRule => "var-strip-no-pair-rule",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::VarStripPerWarpSlices => "var-strip-per-warp-slices",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::VarStripNoW1 => "var-strip-no-w1",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::VarStripW1Plain => "var-strip-w1-plain",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::ProbeStripNoDecode => "probe-strip-nodecode",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::ProbeNoDecode => "probe-nodecode",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::ProbeLoads => "probe-loads",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::ProbeStream4x1 => "probe-stream4x1",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::ProbeStream2x2 => "probe-stream2x2",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::ProbeStream1x4 => "probe-stream1x4",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::ProbeBoundedRaw => "probe-bounded-raw",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::ProbeBoundedNoMma => "probe-bounded-nomma",
            #[cfg(feature = "bench")]
            ExecMatvecKernel::ProbeBoundedStripRaw => "probe-bounded-strip-raw",
        }
    }

    /// True for the bench's ceiling probes: timed, never compared (they compute nothing usable).
    pub fn is_probe(self) -> bool {
        match self {
            #[cfg(feature = "bench")]
            ExecMatvecKernel::ProbeBoundedRaw
            | ExecMatvecKernel::ProbeBoundedNoMma
            | ExecMatvecKernel::ProbeBoundedStripRaw
            | ExecMatvecKernel::ProbeStripNoDecode => true,
            k => k.is_lean_probe(),
        }
    }

    /// True for the ceiling probes of the lean one-column kernel (exec/variant.rs has their plans).
    pub fn is_lean_probe(self) -> bool {
        match self {
            #[cfg(feature = "bench")]
            ExecMatvecKernel::ProbeNoDecode
            | ExecMatvecKernel::ProbeLoads
            | ExecMatvecKernel::ProbeStream4x1
            | ExecMatvecKernel::ProbeStream2x2
            | ExecMatvecKernel::ProbeStream1x4 => true,
            _ => false,
        }
    }

    /// True for the kernels of the exact class (bit-identical to the reference).
    pub fn is_exact(self) -> bool {
        match self {
            ExecMatvecKernel::Exact | ExecMatvecKernel::Strip | ExecMatvecKernel::Stream | ExecMatvecKernel::Rows => true,
            ExecMatvecKernel::Bounded => false,
            #[cfg(feature = "bench")]
            ExecMatvecKernel::StreamGeneric
            | ExecMatvecKernel::RowsNoPrefetch
            | ExecMatvecKernel::VarStripCta
            | ExecMatvecKernel::VarStripW1
            | ExecMatvecKernel::VarStripReleaseStart
            | ExecMatvecKernel::VarStripReleaseEnd
            | ExecMatvecKernel::VarStripUncapped
            | ExecMatvecKernel::VarStripNoPairRule
            | ExecMatvecKernel::VarStripPerWarpSlices
            | ExecMatvecKernel::VarStripNoW1
            | ExecMatvecKernel::VarStripW1Plain => true,
            #[cfg(feature = "bench")]
            ExecMatvecKernel::BoundedTile
            | ExecMatvecKernel::BoundedStep
            | ExecMatvecKernel::BoundedPanelRg1
            | ExecMatvecKernel::BoundedPanelRg2
            | ExecMatvecKernel::VarTcStripNoSplit
            | ExecMatvecKernel::VarTcStripXChunk
            | ExecMatvecKernel::VarTcStripCluster
            | ExecMatvecKernel::VarTcStripSumKernel
            | ExecMatvecKernel::VarTcStripReleaseEnd
            | ExecMatvecKernel::VarTcStripLeastSplits
            | ExecMatvecKernel::VarTcStripShare
            | ExecMatvecKernel::BoundedStream
            | ExecMatvecKernel::BoundedWgmma
            | ExecMatvecKernel::ProbeBoundedRaw
            | ExecMatvecKernel::ProbeBoundedNoMma
            | ExecMatvecKernel::ProbeBoundedStripRaw
            | ExecMatvecKernel::ProbeStripNoDecode => false,
            // the lean kernel's probes run its exact plans
            #[cfg(feature = "bench")]
            k => k.is_lean_probe(),
        }
    }
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
