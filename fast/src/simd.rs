//! The `simd` feature: a second compilation of the hot loops (the row-block encoder and decoder)
//! for x86_64 processors with BMI2, LZCNT and AVX2, chosen at run time. With AVX2 the compiler
//! turns the joins of decoded high bytes with the raw plane into 256-bit vector code; with BMI2
//! every variable shift of the bit readers and writers is one micro-operation. It is the only
//! `unsafe` code of the crate (calling a function compiled for features the baseline lacks), and
//! the differential tests run against both builds.
#![allow(unsafe_code)]

use crate::bits::Broken;
use crate::decode::RowBlockArgs;
use crate::encode::{EncodeArgs, RowBlockStreams};
use crate::kind::Kind;

/// Whether this processor has BMI2, LZCNT and AVX2, for which the `v3` functions below are compiled.
/// The hot loops shift by variable amounts all the time: without BMI2 such a shift is three
/// micro-operations on Intel cores and must go through the `cl` register; with it, one (`shlx`).
#[inline(always)]
fn has_v3() -> bool {
    std::is_x86_feature_detected!("bmi2") && std::is_x86_feature_detected!("lzcnt") && std::is_x86_feature_detected!("avx2")
}

/// [`crate::decode::decode_row_block`], compiled for this processor's features where it has
/// BMI2, LZCNT and AVX2.
#[inline(always)]
pub fn decode_row_block_best<K: Kind>(args: RowBlockArgs<'_, K>) -> Result<(), Broken> {
    /// The same function inlined into one compiled for those features.
    #[target_feature(enable = "bmi1,bmi2,lzcnt,popcnt,avx2")]
    unsafe fn v3<K: Kind>(args: RowBlockArgs<'_, K>) -> Result<(), Broken> {
        crate::decode::decode_row_block::<K>(args)
    }
    if has_v3() {
        // SAFETY: has_v3 found the features v3 is compiled for.
        unsafe { v3::<K>(args) }
    } else {
        crate::decode::decode_row_block::<K>(args)
    }
}

/// [`crate::encode::encode_row_block`], compiled for this processor's features where it has
/// BMI2, LZCNT and AVX2.
#[inline(always)]
pub fn encode_row_block_best(args: EncodeArgs<'_>) -> RowBlockStreams {
    /// The same function inlined into one compiled for those features.
    #[target_feature(enable = "bmi1,bmi2,lzcnt,popcnt,avx2")]
    unsafe fn v3(args: EncodeArgs<'_>) -> RowBlockStreams {
        crate::encode::encode_row_block(args)
    }
    if has_v3() {
        // SAFETY: has_v3 found the features v3 is compiled for.
        unsafe { v3(args) }
    } else {
        crate::encode::encode_row_block(args)
    }
}
