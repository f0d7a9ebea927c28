//! Encode then decode arbitrary weights in all four modes: the decoded weights equal the input,
//! bit for bit. fp8 input with a NaN byte must be refused with `Fp8Nan` naming the first one
//! (spec 4.6); format 10 has no code for it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nwc_fuzz::input::Input;
use nwc_fuzz::matrices::{read_spec, Plain};
use nwc_fuzz::oracle;
use nwc_reference::element::{bf16_symbol, fp8_is_nan};
use nwc_reference::geometry::TAIL_SLACK;
use nwc_reference::{decode, encode, Elements, EncodeError};

fuzz_target!(init: nwc_fuzz::init(), |data: &[u8]| {
    if data.len() > nwc_fuzz::MAX_INPUT {
        return;
    }
    let spec = read_spec(&mut Input::new(data));
    let result = encode(spec.mode, spec.shape, spec.weights.as_weights());
    if let Plain::Fp8(bytes) = &spec.weights {
        if let Some(index) = bytes.iter().position(|&b| fp8_is_nan(b)) {
            let expected = EncodeError::Fp8Nan { index: index as u64, byte: bytes[index] };
            assert_eq!(result.expect_err("fp8 NaN must be refused"), expected);
            return;
        }
    }
    let enc = result.expect("every non-NaN matrix within the limits encodes");
    let m = &enc.matrix;
    // Spec 9.4: the data field is the 8-aligned stream end plus 64 bytes.
    assert_eq!(m.data.len() as u64, enc.stream_end.div_ceil(8) * 8 + TAIL_SLACK);
    let d = decode(m).expect("the reference encoder's output is valid (spec 13.23)");
    let expected = match &spec.weights {
        Plain::Bf16(w) => Elements::Bf16(w.clone()),
        Plain::Fp8(b) => Elements::Fp8(b.clone()),
    };
    assert_eq!(d.elements, expected, "round trip changed the weights");
    assert_eq!(&d.exp_of_rank[..], &enc.exp_of_rank[..15]);
    // Spec 6.2: a BF16 weight is escaped exactly when its symbol has no rank below 15.
    let escapes = match &spec.weights {
        Plain::Bf16(w) => w.iter().filter(|&&x| !enc.exp_of_rank[..15].contains(&bf16_symbol(x))).count() as u64,
        Plain::Fp8(_) => 0,
    };
    assert_eq!(enc.escapes, escapes);
    oracle::check_decoders_agree(m, &d);
});
