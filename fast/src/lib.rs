//! # nwc-fast
//!
//! A fast CPU encoder and decoder for NWC format 10. Its output is byte-identical to
//! `nwc-reference` (the oracle), which the differential tests in `tests/` check on every mode,
//! ragged shapes, escapes and every corruption of the test kit.
//!
//! How it is fast (safe Rust by default):
//! - code words are precomputed per input byte (BF16: per high byte; FP8: per fp8 byte), so coding
//!   a weight is one table load and one shift-or into a 64-bit bit accumulator; BF16 weights are
//!   coded two at a time from a per-matrix table indexed by both high bytes (escapes, rare, one by
//!   one);
//! - the decoder copies a lane once into a zero-padded big-endian buffer, refills its 64-bit window
//!   with one unaligned load (no branch) once per three table steps, and decodes up to three codes
//!   per look-up of a table built per matrix; long codes and escapes go through their count of
//!   leading zeros (spec 6.1: the code of rank r is r zeros, a one and the sign); four lanes are
//!   decoded in lockstep, and a lane whose positions are all weights is joined with the raw plane
//!   in one loop over all its positions, which the compiler vectorizes;
//! - work is split by row block with rayon: each task codes its blocks into its own buffer and
//!   owns its rows of the raw plane; offsets are fixed afterwards by a prefix sum (spec 9.3);
//! - for callers that hash what goes in or comes out (checkpoints, spec 17.6): `encode_observed`
//!   reports each run of coded rows while it codes the next, and `decode_bf16_runs` decodes a run
//!   of row blocks at a time into one small reused buffer, so the hash reads from the cache.
//!
//! Feature `simd` (off by default, x86_64 only): the row-block encoder and decoder are compiled a
//! second time for processors with BMI2, LZCNT and AVX2 and chosen at run time. Calling into them
//! is the only `unsafe` code of the crate, in `simd.rs`; the differential tests run against both
//! builds.
//!
//! Parallelism runs on the current rayon pool: wrap a call in `ThreadPool::install` to choose the
//! number of threads.
// The default build has no `unsafe` at all; the `simd` feature allows it in `simd.rs` only.
#![cfg_attr(not(feature = "simd"), forbid(unsafe_code))]
#![cfg_attr(feature = "simd", deny(unsafe_code))]

mod bits;
mod codebook;
mod decode;
mod encode;
mod kind;
mod runs;
#[cfg(all(feature = "simd", target_arch = "x86_64"))]
mod simd;
pub mod slice;

pub use decode::{decode, decode_with_limits, fast_path_accepts};
pub use encode::{encode, encode_le_bytes, encode_observed};
pub use runs::{decode_bf16_runs, RunError};
