//! The NWC conformance suite: the golden-vector manifest and runners that judge the reference,
//! the GPU path, or any third-party encoder or decoder against it.

pub mod backend;
pub mod compare;
pub mod corpus;
pub mod fields;
pub mod gen;
pub mod gpu;
pub mod manifest;
pub mod process;
pub mod report;
pub mod run;
