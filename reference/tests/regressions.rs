//! Regression tests from hardening the decoder against hostile input (issue 5, spec 16).
//!
//! Each test names what it guards. Inputs found by the fuzz targets in fuzz/ are added here as
//! plain test cases, so `cargo test` keeps checking them without cargo-fuzz.
//!
//! Also part of this work, but tested next to the code because the public path would need a
//! 1.4 GB `low` field: `decode::tests::data_length_past_u32_is_shape_range` (rule 13.2's data
//! length limit, which the decoder did not check before).

use nwc_reference::geometry::{RAW_SLACK, TAIL_SLACK};
use nwc_reference::{decode, decode_with_limits, encode, DecodeError, EncodedMatrix, LimitError, Limits, Mode, Shape, Weights};
mod counting_alloc;
use counting_alloc::peak_during;

/// The constant of spec 16.3: per-lane buffers, the expected lookup table and error text.
const DECODER_CONSTANT_BYTES: usize = 64 * 1024;

/// Spec 16.3: the decoder allocates the output, a copy of the scales and a constant, nothing
/// sized by `hdr`. It used to keep a u64 start offset per lane: 256 bytes per block, which for
/// a tall one-column matrix is 128 times the decoded output (here 4096 x 1 BF16: 8 KiB of
/// output, 128 KiB of offsets).
#[test]
fn decoder_allocates_output_plus_constant() {
    for mode in Mode::ALL {
        for (rows, cols) in [(4096, 1), (1, 4096), (40, 1100), (17, 33)] {
            let shape = Shape::new(rows, cols);
            let n = (rows * cols) as usize;
            let bf16: Vec<u16> = (0..n).map(|i| 0x3F00 + (i % 200) as u16).collect();
            let fp8: Vec<u8> = (0..n).map(|i| (i % 120) as u8).collect();
            let weights = match mode.elem {
                nwc_reference::ElemType::Bf16 => Weights::Bf16(&bf16),
                nwc_reference::ElemType::Fp8E4m3 => Weights::Fp8(&fp8),
            };
            let mut m = encode(mode, shape, weights).unwrap().matrix;
            if mode.elem == nwc_reference::ElemType::Fp8E4m3 {
                m.scale = Some(vec![0.5; rows as usize]);
            }
            let (decoded, peak) = peak_during(|| decode(&m));
            decoded.unwrap();
            let output = n * mode.elem.input_bytes();
            let scales = m.scale.as_ref().map_or(0, |s| 4 * s.len());
            assert!(
                peak <= output + scales + DECODER_CONSTANT_BYTES,
                "{mode} {shape}: decode allocated {peak} bytes, output {output} + scales {scales} + constant"
            );
        }
    }
}

fn empty_fields(mode: Mode, shape: Shape) -> EncodedMatrix {
    EncodedMatrix { mode, shape, data: Vec::new(), bases: Vec::new(), hdr: Vec::new(), lut: Vec::new(), low: Vec::new(), scale: None }
}

/// Spec 16.2: a huge declared shape with missing fields is refused before anything sized by
/// the shape is allocated, whatever the limits.
#[test]
fn huge_declared_shape_allocates_nothing() {
    let shape = Shape::new(1 << 20, 1 << 20); // 2^40 weights: the largest shape the format allows
    for mode in Mode::ALL {
        let m = empty_fields(mode, shape);
        let (limited, peak) = peak_during(|| decode(&m));
        assert!(matches!(limited, Err(DecodeError::Limit(LimitError::Weights { .. }))), "{limited:?}");
        assert!(peak < DECODER_CONSTANT_BYTES, "{peak}");
        let (unlimited, peak) = peak_during(|| decode_with_limits(&m, &Limits::unlimited()));
        match unlimited {
            Err(DecodeError::Format(e)) => assert_eq!(e.rule(), "field-size"),
            other => panic!("{other:?}"),
        }
        assert!(peak < DECODER_CONSTANT_BYTES, "{peak}");
    }
}

/// Spec 16.4: an allocation limit below the output size is a limit error, not a format error,
/// and is reported before the fields are looked at.
#[test]
fn allocation_limit_is_a_limit_error() {
    let m = encode(Mode::BF16_L0, Shape::new(8, 64), Weights::Bf16(&[0x3F80; 512])).unwrap().matrix;
    let limits = Limits { max_alloc_bytes: 1023, ..Limits::default() };
    let err = decode_with_limits(&m, &limits).unwrap_err();
    assert_eq!(err, DecodeError::Limit(LimitError::Allocation { what: "decoded weights", got: 1024, limit: 1023 }));
    assert!(decode_with_limits(&m, &Limits { max_alloc_bytes: 1024, ..Limits::default() }).is_ok());
}

/// Spec 9.7 / 13.21: garbage in the bytes the spec leaves unspecified (block gaps, everything
/// from the stream end on, the raw-plane slack) changes nothing. (Checked by the fuzz targets
/// `decode_mutated` and `differential` too; this keeps one fixed case in `cargo test`.)
#[test]
fn unspecified_bytes_are_ignored() {
    let words: Vec<u16> = (0..9 * 600).map(|i| 0x3C00 + ((i * 7) % 300) as u16).collect();
    let enc = encode(Mode::BF16_L0, Shape::new(9, 600), Weights::Bf16(&words)).unwrap();
    let clean = decode(&enc.matrix).unwrap();
    let mut m = enc.matrix.clone();
    let stream_end = enc.stream_end as usize;
    assert_eq!(m.data.len() - stream_end, (stream_end.div_ceil(8) * 8 - stream_end) + TAIL_SLACK as usize);
    for b in &mut m.data[stream_end..] {
        *b = 0xA5;
    }
    // Gaps between blocks: from a block's stream end to the next 8-aligned base.
    for (block, pair) in m.bases.windows(2).enumerate() {
        let lanes = &m.hdr[32 * block..32 * block + 32];
        let end = pair[0] as usize + lanes.iter().map(|&w| 4 * usize::from(w)).sum::<usize>();
        m.data[end..pair[1] as usize].fill(0x5A);
    }
    m.low.extend(std::iter::repeat_n(0xFF, RAW_SLACK as usize));
    assert_eq!(decode(&m).unwrap(), clean);
}
