//! Encode a small matrix, corrupt it (`nwc_fuzz::mutate`), then validate and decode.
//! - Corruptions of unspecified bytes only (spec 9.7) must not change the decoded weights.
//! - Any other corruption may be rejected (with a named rule) or accepted; an accepted matrix
//!   must pass every check of `nwc_fuzz::oracle` (decoders agree, re-encodes and decodes again
//!   to the same weights). The fast CPU decoder must agree with the reference either way.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nwc_fuzz::mutate::{mutated_case, Effect};
use nwc_fuzz::{fuzz_limits, oracle};

fuzz_target!(init: nwc_fuzz::init(), |data: &[u8]| {
    if data.len() > nwc_fuzz::MAX_INPUT {
        return;
    }
    let (original, mutated, effect) = mutated_case(data);
    let after = oracle::decode_checked(&mutated, &fuzz_limits());
    if effect == Effect::Unspecified || mutated == original {
        // The original is decoded only here: that fresh encodings are valid is the roundtrip
        // target's property, and decoding it for every input would double the cost.
        let before = oracle::decode_checked(&original, &fuzz_limits()).expect("fresh encodings are valid");
        let after = after.as_ref().expect("changing only unspecified bytes must not make a matrix invalid (spec 13.21)");
        assert_eq!(after.elements, before.elements, "unspecified bytes changed the decoded weights");
    }
    if let Some(d) = after {
        oracle::check_accepted(&mutated, &d);
    }
});
