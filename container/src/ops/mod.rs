//! The model-level operations: compress, decompress, verify, inspect.

mod compress;
mod convert;
mod export;
mod inspect;
mod peer;
mod verify;
pub mod writer;

pub use compress::{compress, CompressOptions, CompressSummary};
pub use export::decompress;
pub use inspect::{inspect, Inspection, MatrixStats};
pub use verify::{verify, FileCheck, VerifyReport};

/// Called with a number of input bytes each time a piece of work completes (for progress bars).
pub type Progress<'a> = &'a (dyn Fn(u64) + Sync);
