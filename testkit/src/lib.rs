//! Test support shared by the crates of this workspace:
//! - [`gen`]: deterministic weight matrices (shapes and distributions of the interop test);
//! - [`peer`]: fetches PyPI `neural-weight-compression==0.10.1` at test time and calls its host
//!   encoder through `libloading`. Nothing from that package is ever committed.

pub mod gen;
pub mod peer;
