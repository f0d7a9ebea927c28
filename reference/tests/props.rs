//! Property tests of the reference codec: round trip, determinism, validity of its own output and
//! robustness against single-byte corruption (`props_semantics.rs` has the semantics of spec 15).
//!
//! Shapes go up to 100 x 1100 so that several column blocks (512 columns), layout-1 super-chunks
//! (32 columns) and ragged edges occur. Each case draws its weights from a seed, so a failure
//! report (shape, mode, seed, kind) reproduces it exactly.

use nwc_reference::{decode, encode, validate, DecodeError, EncodedMatrix};
use proptest::prelude::*;

mod props_input;
use props_input::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// decode(encode(x)) == x, the encoder is deterministic, its output is valid.
    #[test]
    fn round_trip_and_determinism(shape in shape_strategy(), mode in mode_strategy(), seed: u64, kind in kind_strategy()) {
        let input = make_input(mode, shape, seed, kind, false);
        let first = encode(mode, shape, input.weights()).unwrap();
        let second = encode(mode, shape, input.weights()).unwrap();
        prop_assert_eq!(&first, &second);
        prop_assert!(validate(&first.matrix).is_ok(), "{:?}", validate(&first.matrix));
        let decoded = decode(&first.matrix).unwrap();
        prop_assert_eq!(decoded.elements, input.as_elements());
        prop_assert_eq!(&decoded.exp_of_rank[..], &first.exp_of_rank[..15]);
    }
}

/// The byte ranges of `data` a decoder must ignore (spec 9.7): alignment gaps between blocks and
/// everything from the stream end on.
fn unspecified_data_bytes(m: &EncodedMatrix) -> Vec<std::ops::Range<usize>> {
    let mut ranges = Vec::new();
    let mut end = 0usize;
    for (b, &base) in m.bases.iter().enumerate() {
        if base as usize > end {
            ranges.push(end..base as usize);
        }
        end = base as usize + 4 * m.hdr[32 * b..32 * (b + 1)].iter().map(|&w| usize::from(w)).sum::<usize>();
    }
    ranges.push(end..m.data.len());
    ranges
}

/// Which stored field a corruption hits.
#[derive(Clone, Copy, Debug)]
enum Target {
    Bases,
    Hdr,
    Lut,
    Data,
    Low,
}

fn flip(m: &mut EncodedMatrix, target: Target, position: usize, xor: u8) -> usize {
    fn flip_u32s(v: &mut [u32], position: usize, xor: u8) -> usize {
        let at = position % (4 * v.len());
        v[at / 4] ^= u32::from(xor) << (8 * (at % 4));
        at
    }
    fn flip_bytes(v: &mut [u8], position: usize, xor: u8) -> usize {
        let at = position % v.len();
        v[at] ^= xor;
        at
    }
    match target {
        Target::Bases => flip_u32s(&mut m.bases, position, xor),
        Target::Hdr => flip_bytes(&mut m.hdr, position, xor),
        Target::Lut => flip_u32s(&mut m.lut, position, xor),
        Target::Data => flip_bytes(&mut m.data, position, xor),
        Target::Low => flip_bytes(&mut m.low, position, xor),
    }
}

/// What a corrupted matrix may do: be rejected with a format error (never a limit error or a
/// panic), or decode. If it decodes to the original, the flipped byte must be one the spec leaves
/// unspecified (spec 9.7); if it decodes to something else, that byte was specified, and the new
/// matrix must itself survive a canonical round trip.
fn check_corruption(
    original: &EncodedMatrix,
    input: &Input,
    target: Target,
    at: usize,
    corrupt: &EncodedMatrix,
) -> Result<(), TestCaseError> {
    let in_unspecified = match target {
        Target::Data => unspecified_data_bytes(original).iter().any(|r| r.contains(&at)),
        Target::Low => at as u64 >= nwc_reference::Geometry::new(original.mode, original.shape).unwrap().n_low,
        _ => false,
    };
    let result = decode(corrupt);
    if matches!(target, Target::Bases | Target::Hdr) {
        // Spec 9.3 and rules 13.11/13.12 determine every offset and header byte.
        prop_assert!(
            matches!(result, Err(DecodeError::Format(_))),
            "{:?} byte {} flipped, decoder says {:?}",
            target,
            at,
            result.as_ref().map(|_| ())
        );
    }
    match result {
        Err(DecodeError::Format(_)) => {
            prop_assert!(!in_unspecified, "a flip at unspecified {:?} byte {} was rejected", target, at);
        }
        Err(other) => prop_assert!(false, "{:?} flip at {}: not a format error: {}", target, at, other),
        Ok(decoded) => {
            let original_elements = input.as_elements();
            // A table flip in a rank no weight uses changes nothing decoded (spec 14.4: another
            // rank order is valid); any other specified byte must change the weights.
            if decoded.elements == original_elements {
                prop_assert!(
                    in_unspecified || matches!(target, Target::Lut),
                    "{:?} byte {} changed but the decoder ignored it",
                    target,
                    at
                );
            } else {
                prop_assert!(!in_unspecified, "unspecified {:?} byte {} changed the weights", target, at);
                // The decoded matrix is a matrix like any other: it re-encodes and decodes back.
                let bytes = decoded.to_le_bytes();
                let again = nwc_reference::encode_le_bytes(original.mode, original.shape, &bytes).unwrap();
                prop_assert_eq!(decode(&again.matrix).unwrap().elements, decoded.elements.clone());
                // A flip in the raw plane cannot change the ranking (spec 5.1 counts the coded part
                // only), so re-encoding must give back the corrupted fields exactly.
                if matches!(target, Target::Low) {
                    let mut without_slack = corrupt.clone();
                    without_slack.low.truncate(again.matrix.low.len());
                    prop_assert_eq!(&again.matrix, &without_slack);
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// One byte of bases, hdr or lut xored with a random non-zero value.
    #[test]
    fn corrupted_tables(shape in shape_strategy(), mode in mode_strategy(), seed: u64, kind in kind_strategy(),
                        target in prop_oneof![Just(Target::Bases), Just(Target::Hdr), Just(Target::Lut)],
                        position: usize, xor in 1..=255u8) {
        let input = make_input(mode, shape, seed, kind, false);
        let original = encoded(mode, shape, &input);
        let mut corrupt = original.clone();
        let at = flip(&mut corrupt, target, position, xor);
        check_corruption(&original, &input, target, at, &corrupt)?;
    }

    /// One byte of data or low (low optionally with its 512-byte slack) xored with a random
    /// non-zero value; then one byte inside the unspecified bytes, which must not matter.
    #[test]
    fn corrupted_streams(shape in shape_strategy(), mode in mode_strategy(), seed: u64, kind in kind_strategy(),
                         target in prop_oneof![Just(Target::Data), Just(Target::Low)], with_slack: bool,
                         position: usize, xor in 1..=255u8) {
        let input = make_input(mode, shape, seed, kind, false);
        let mut original = encoded(mode, shape, &input);
        if with_slack {
            original.low.extend_from_slice(&[0u8; 512]); // spec 9.6
        }
        let mut corrupt = original.clone();
        let at = flip(&mut corrupt, target, position, xor);
        check_corruption(&original, &input, target, at, &corrupt)?;

        let gaps = unspecified_data_bytes(&original);
        let spare: Vec<usize> = gaps.iter().flat_map(|r| r.clone()).collect();
        let at = spare[position % spare.len()]; // never empty: the 64-byte tail slack
        let mut corrupt = original.clone();
        corrupt.data[at] ^= xor;
        check_corruption(&original, &input, Target::Data, at, &corrupt)?;
    }
}
