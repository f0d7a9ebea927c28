//! # nwc-container
//!
//! NWC checkpoints (spec 17): a folder with `nwc_config.json` and safetensors files holding the
//! stored fields of every compressed matrix as `nwc/<id>/data|bases|hdr|lut|low|scale`, every
//! other tensor copied unchanged. The layout is the one the 0.10.1 library writes, so each side
//! can read the other's checkpoints; our writer adds per-tensor SHA-256 digests and enough
//! records to rebuild the original files exactly (`nwc_rs` in `nwc_config.json`, spec 17.6).
//!
//! - [`compress`]: original model (one `.safetensors` or a sharded folder) -> checkpoint, streamed
//!   tensor by tensor from memory-mapped files, the checkpoint's shards written as they fill;
//! - [`decompress`]: checkpoint -> the original files byte for byte (spec 17.12: the original
//!   headers and index text are recorded), tensors decoded in parallel and written at their
//!   offsets;
//! - [`verify`]: validates every matrix and checks digests, optionally against the original
//!   (tensor for tensor and file for file, by SHA-256);
//! - [`inspect`]: per-matrix statistics;
//! - [`slice_rows`] (re-exported): spec 18 row slices.

pub mod checkpoint;
pub mod config;
pub mod error;
pub mod model;
pub mod ops;
pub mod policy;
pub mod sfile;

pub use error::ContainerError;
pub use nwc_fast::slice::{slice_rows, SliceError};
pub use ops::{compress, decompress, inspect, verify, CompressOptions, FileCheck, Inspection, MatrixStats, Progress, VerifyReport};
pub use policy::Policy;
