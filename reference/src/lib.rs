//! # nwc-reference
//!
//! The reference codec of NWC format 10 (Neural Weight Compression): a lossless coding of BF16 and
//! fp8 e4m3 weight matrices whose decoder runs inside a GPU matrix-vector product.
//!
//! Written to be read beside the spec in `spec/` of this repository: modules follow its chapters
//! and comments cite clauses as `spec N.M`. It is the oracle for every other implementation in the
//! project, so it favours clarity over speed and contains no `unsafe`.
//!
//! ```
//! use nwc_reference::{decode, encode, Mode, Shape, Weights};
//! let weights: Vec<u16> = (0..64u16).map(|i| 0x3C00 + i).collect(); // 4 x 16 BF16 words
//! let enc = encode(Mode::BF16_L0, Shape::new(4, 16), Weights::Bf16(&weights)).unwrap();
//! let dec = decode(&enc.matrix).unwrap();
//! assert_eq!(dec.elements, nwc_reference::Elements::Bf16(weights));
//! ```
#![forbid(unsafe_code)]

pub mod bounded; // spec 19
pub mod code; // spec 6
pub mod decode; // spec 13, 15.1
pub mod element; // spec 4
pub mod encode; // spec 4-9
pub mod error;
pub mod exec; // spec 20
pub mod geometry; // spec 3
pub mod lut; // spec 10
pub mod matrix; // spec 12
pub mod mode; // spec 2
pub mod quantize; // spec 11
pub mod ranking; // spec 5
mod rows; // spec 15.2-15.4, 20.14-20.15: shared by both decoded representations
pub mod semantics; // spec 15
pub mod tiling; // spec 7, 8

pub use decode::{check_structure, decode, decode_with_limits, validate};
pub use encode::{encode, encode_le_bytes, Weights};
pub use error::{DecodeError, EncodeError, Field, FormatError, LimitError, ParamError, QuantizeError};
pub use geometry::{Geometry, Limits, Shape};
pub use lut::{build_lut, recover_exp_of_rank};
pub use matrix::{DecodedMatrix, Elements, EncodedMatrix, Encoding};
pub use mode::{ElemType, Layout, Mode};
pub use quantize::quantize_fp8;

/// The format version this crate implements (the 0.10.1 library reports the same number).
pub const FORMAT_VERSION: u32 = 10;
