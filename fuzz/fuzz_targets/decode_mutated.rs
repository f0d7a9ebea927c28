//! Encode a small matrix, corrupt it (`nwc_fuzz::mutate`), then validate and decode.
//! - Corruptions of unspecified bytes only (spec 9.7) must not change the decoded weights.
//! - Any other corruption may be rejected (with a named rule) or accepted; an accepted matrix
//!   must pass every check of `nwc_fuzz::oracle` (decoders agree, re-encodes and decodes again
//!   to the same weights).
#![no_main]

use libfuzzer_sys::fuzz_target;
use nwc_fuzz::input::Input;
use nwc_fuzz::matrices::{encode_spec, read_scales, read_spec};
use nwc_fuzz::mutate::{mutate, Effect, Fields};
use nwc_fuzz::{fuzz_limits, oracle};
use nwc_reference::ElemType;

/// Most mutations applied to one matrix.
const MAX_MUTATIONS: usize = 6;

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    // The first byte says how many of the following bytes describe the matrix (spec and weights).
    let spec_len = usize::from(input.u8());
    let spec = read_spec(&mut Input::new(&input.bytes(spec_len)));
    let mut original = encode_spec(&spec).matrix;
    if original.mode.elem == ElemType::Fp8E4m3 && input.u8() & 1 == 1 {
        original.scale = Some(read_scales(&mut input, original.shape.rows));
    }
    let before = oracle::decode_checked(&original, &fuzz_limits()).expect("fresh encodings are valid");
    let mut fields = Fields::from_matrix(&original);
    let effect = mutate(&mut fields, &mut input, MAX_MUTATIONS);
    let mutated = fields.to_matrix();
    let after = oracle::decode_checked(&mutated, &fuzz_limits());
    if effect == Effect::Unspecified || mutated == original {
        let after = after.as_ref().expect("changing only unspecified bytes must not make a matrix invalid (spec 13.21)");
        assert_eq!(after.elements, before.elements, "unspecified bytes changed the decoded weights");
    }
    if let Some(d) = after {
        oracle::check_accepted(&mutated, &d);
    }
});
