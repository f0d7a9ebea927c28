//! Shared pieces of the nwc fuzz targets (issue 5, spec 16).
//!
//! - [`input`]: reading structure out of fuzz bytes (through `arbitrary::Unstructured`);
//! - [`record`]: the byte form of "an arbitrary set of stored fields" (target `decode_arbitrary`),
//!   with a writer so the seed corpus can hold real encodings;
//! - [`matrices`]: small valid matrices made from fuzz bytes;
//! - [`mutate`]: structure-aware corruptions of an encoding (target `decode_mutated`);
//! - [`lut_decoder`]: a second decoding path, through the lookup table (target `differential`);
//! - [`oracle`]: the properties every target checks.

pub mod input;
pub mod lut_decoder;
pub mod matrices;
pub mod mutate;
pub mod oracle;
pub mod record;

use nwc_reference::Limits;

/// Limits for fuzzing: small enough that no input can make the decoder allocate more than a few
/// hundred KiB, so libFuzzer's memory limit only ever catches real leaks or unbounded allocation.
pub fn fuzz_limits() -> Limits {
    Limits { max_rows: 1 << 12, max_cols: 1 << 14, max_weights: 1 << 16, max_alloc_bytes: 1 << 17 }
}
