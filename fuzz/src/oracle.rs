//! The properties the fuzz targets check. A violated property panics, which libFuzzer reports as a
//! crash with the input that caused it.

use crate::lut_decoder::lut_dequant;
use nwc_reference::{
    decode, decode_with_limits, DecodeError, DecodedMatrix, Elements, EncodedMatrix, FormatError,
    Limits, Weights,
};

/// Decodes under `limits`. A rejection must be a named rule (spec 13.22) or a limit; anything
/// else (a panic, an unnamed error) is a finding. The fast CPU decoder (crate `nwc-fast`) must
/// give exactly the same result, accepted weights and rejection alike (it promises to).
pub fn decode_checked(m: &EncodedMatrix, limits: &Limits) -> Option<DecodedMatrix> {
    let reference = decode_with_limits(m, limits);
    let fast = nwc_fast::decode_with_limits(m, limits);
    assert!(
        fast == reference,
        "nwc-fast and the reference disagree:\n fast: {:?}\n reference: {:?}",
        fast.as_ref().map(|d| (d.mode, d.shape)),
        reference.as_ref().map(|d| (d.mode, d.shape))
    );
    match reference {
        Ok(d) => Some(d),
        Err(DecodeError::Format(e)) => {
            let named = FormatError::RULES
                .iter()
                .any(|&(rule, clause)| rule == e.rule() && clause == e.clause());
            assert!(named, "error names no rule of spec 13: {e:?}");
            assert!(
                e.to_string().starts_with(e.rule()),
                "message must begin with the rule name: {e}"
            );
            None
        }
        Err(DecodeError::Limit(e)) => {
            assert!(
                e.to_string().starts_with("limit"),
                "limit errors say so: {e}"
            );
            None
        }
        Err(e) => panic!("unexpected error kind: {e:?}"),
    }
}

/// What every accepted matrix must satisfy:
/// - the decoded matrix has the declared shape and one weight per position;
/// - every other decoding path gives the same weights ([`check_other_paths`]; `d` must come from
///   [`decode_checked`], which compared nwc-fast with the reference already);
/// - re-encoding the weights gives a valid matrix that decodes to the same weights. The
///   re-encode is nwc-fast's (byte-identical with the reference encoder, which the `roundtrip`
///   target fuzzes; the reference's bit-by-bit writer was a sixth of a `decode_mutated`
///   execution), so the reference decoder checks the fast encoder's output here.
pub fn check_accepted(m: &EncodedMatrix, d: &DecodedMatrix) {
    assert_eq!((d.mode, d.shape), (m.mode, m.shape));
    let n = m.shape.weights() as usize;
    match &d.elements {
        Elements::Bf16(w) => assert_eq!(w.len(), n),
        Elements::Fp8(b) => assert_eq!(b.len(), n),
    }
    check_other_paths(m, d);
    let weights = match &d.elements {
        Elements::Bf16(w) => Weights::Bf16(w),
        Elements::Fp8(b) => Weights::Fp8(b),
    };
    let again =
        nwc_fast::encode(m.mode, m.shape, weights).expect("decoded weights always re-encode");
    let redecoded =
        decode(&again.matrix).expect("the reference encoder's output is valid (spec 13.23)");
    assert_eq!(
        redecoded.elements, d.elements,
        "re-encoding changed the weights"
    );
}

/// Spec 15: every decoding path in the repository agrees with the reference decoder.
///
/// Paths compared today:
/// 1. the reference `decode` elements, widened to BF16 (the oracle);
/// 2. the fast CPU decoder `nwc_fast::decode_with_limits` (compared in [`decode_checked`], on
///    invalid input too, and again here);
/// 3. `DecodedMatrix::dequant` (spec 15.2);
/// 4. the lookup-table decoder of [`crate::lut_decoder`] (spec 10, a GPU kernel's way of reading);
/// 5. `DecodedMatrix::gather` of every row, in reverse order (spec 15.3).
///
/// Still to add here: the container reader (crate `nwc-container` reads matrices only from
/// checkpoint directories on disk; once it can read one from bytes, write `m` into a container,
/// read it back and compare the fields with `m`). GPU decoders are compared with the reference
/// by the conformance suite on a GPU machine, not here.
pub fn check_decoders_agree(m: &EncodedMatrix, d: &DecodedMatrix) {
    let fast = nwc_fast::decode(m).expect("nwc-fast accepts what the reference accepts");
    assert!(fast == *d, "nwc-fast decoded other weights");
    check_other_paths(m, d);
}

/// Paths 3 to 5 of [`check_decoders_agree`]: for a `d` that [`decode_checked`] returned, where
/// nwc-fast was compared already (decoding it again would only cost time).
pub fn check_other_paths(m: &EncodedMatrix, d: &DecodedMatrix) {
    let (rows, stride) = (m.shape.rows as usize, d.row_stride() as usize);
    let cols = m.shape.cols as usize;
    let dequant = d.dequant();
    assert_eq!(dequant.len(), rows * stride);
    for r in 0..rows {
        for c in 0..stride {
            let expected = if c < cols {
                d.bf16_word(r as u64, c as u64)
            } else {
                d.filler_word()
            };
            assert_eq!(
                dequant[r * stride + c],
                expected,
                "dequant differs at row {r} column {c}"
            );
        }
    }
    let via_lut = lut_dequant(m);
    if via_lut != dequant {
        let i = via_lut
            .iter()
            .zip(&dequant)
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        panic!(
            "lookup-table decoder differs at word {i} (row {}, col {}): {:#06x} vs {:#06x}",
            i / stride,
            i % stride,
            via_lut[i],
            dequant[i]
        );
    }
    let order: Vec<u64> = (0..rows as u64).rev().collect();
    let gathered = d.gather(&order).expect("row indices below M");
    for (i, &r) in order.iter().enumerate() {
        let r = r as usize;
        assert_eq!(
            &gathered[i * stride..(i + 1) * stride],
            &dequant[r * stride..(r + 1) * stride],
            "gather row {r}"
        );
    }
}
