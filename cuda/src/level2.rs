//! Spec 19, the bounded matvec class that the tensor-core kernels (version 9) belong to: the bound
//! and its checks live in the reference crate (`nwc_reference::bounded`), re-exported here where
//! the GPU runs use them.

pub use nwc_reference::bounded::*;
