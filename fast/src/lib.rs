//! # nwc-fast
//!
//! A fast CPU encoder and decoder for NWC format 10. Its output is byte-identical to
//! `nwc-reference` (the oracle), which the differential tests in `tests/` check on every mode,
//! ragged shapes, escapes and every corruption of the test kit.
//!
//! How it is fast (all safe Rust):
//! - code words are precomputed per input byte (BF16: per high byte; FP8: per fp8 byte), so coding
//!   a weight is one table load and one shift-or into a 64-bit bit accumulator;
//! - the decoder reads a lane through a 64-bit window and decodes each code from its count of
//!   leading zeros (spec 6.1: the code of rank r is r zeros, a one and the sign);
//! - work is split by row block with rayon: each task codes its blocks into its own buffer and
//!   owns its rows of the raw plane; offsets are fixed afterwards by a prefix sum (spec 9.3).
//!
//! Parallelism runs on the current rayon pool: wrap a call in `ThreadPool::install` to choose the
//! number of threads.
#![forbid(unsafe_code)]

mod bits;
mod decode;
mod encode;
pub mod slice;

pub use decode::{decode, decode_with_limits, fast_path_accepts};
pub use encode::{encode, encode_le_bytes};
