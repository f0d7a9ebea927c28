//! Spec 16.2 (revision 2): the order of checks is total through step 4, so an encoding that breaks
//! several rules is reported under the first one in that order. These pin the reference decoder to
//! it in all four modes, independently of the corpus (which has the same cases as vectors).

use nwc_reference::{decode, encode, DecodeError, EncodedMatrix, Mode, Shape, Weights};

/// A 9 x 1100 matrix: in every mode at least 3 blocks (layout 0: 2 row blocks x 3 column blocks;
/// layout 1: 3 column blocks), with varied exponents.
fn encoded(mode: Mode) -> EncodedMatrix {
    let shape = Shape::new(9, 1100);
    let n = shape.weights() as usize;
    let enc = match mode.elem {
        nwc_reference::ElemType::Bf16 => {
            let words: Vec<u16> = (0..n).map(|i| 0x3C00 + ((i * 2654435761) % 0x0700) as u16).collect();
            encode(mode, shape, Weights::Bf16(&words))
        }
        nwc_reference::ElemType::Fp8E4m3 => {
            let bytes: Vec<u8> = (0..n).map(|i| ((i * 2654435761) % 0x7E) as u8).collect();
            encode(mode, shape, Weights::Fp8(&bytes))
        }
    };
    let mut m = enc.expect("encodes").matrix;
    if mode.elem == nwc_reference::ElemType::Fp8E4m3 {
        m.scale = Some(vec![0.5; 9]);
    }
    m
}

fn reported(m: &EncodedMatrix) -> &'static str {
    match decode(m) {
        Err(DecodeError::Format(e)) => e.rule(),
        other => panic!("expected a validity error, got {:?}", other.map(|_| ())),
    }
}

#[test]
fn the_first_rule_in_the_order_of_16_2_is_reported() {
    for mode in Mode::ALL {
        let m = encoded(mode);
        assert!(m.bases.len() >= 3, "{mode}: {} blocks", m.bases.len());
        let max = nwc_reference::Geometry::new(m.mode, m.shape).unwrap().max_lane_words();

        // Step 3: a header byte of block 0 raised by 2 words breaks 13.7 (bases[1]) and 13.4.
        let mut c = m.clone();
        let lane = (0..32).find(|&l| c.hdr[l] + 2 <= max).expect("a lane below the maximum");
        c.hdr[lane] += 2;
        assert_eq!(reported(&c), "offset-mismatch", "{mode}: raised header byte");
        let mut fixed = c.clone();
        let shift = 8;
        for b in fixed.bases.iter_mut().skip(1) {
            *b += shift;
        }
        assert_eq!(reported(&fixed), "data-too-short", "{mode}: the same with the offsets moved");

        // Step 3: block order before rule order: a mismatch at block 1, a misalignment at block 2.
        let mut c = m.clone();
        c.bases[1] += 8;
        c.bases[2] += 4;
        assert_eq!(reported(&c), "offset-mismatch", "{mode}: mismatch at 1, misaligned at 2");

        // Step 3: every header byte before bases[0], even one of the last block.
        let mut c = m.clone();
        *c.hdr.last_mut().unwrap() = 0;
        c.bases[0] = 8;
        assert_eq!(reported(&c), "lane-length-range", "{mode}: last header byte 0, bases[0] 8");

        // Step 2 before step 3, step 3 before step 4, 13.10 before 13.19.
        let mut c = m.clone();
        c.bases[0] = 8;
        c.low.pop();
        assert_eq!(reported(&c), "field-size", "{mode}: short low and bases[0] 8");
        let mut c = m.clone();
        c.bases[0] = 8;
        c.lut[4095] ^= 1 << 31;
        assert_eq!(reported(&c), "offset-first-nonzero", "{mode}: bases[0] 8 and a lut bit");
        if let Some(scale) = c.scale.as_mut() {
            c.bases[0] = 0;
            scale[0] = -1.0;
            assert_eq!(reported(&c), "lut-mismatch", "{mode}: a lut bit and a negative scale");
        }
    }
}

/// Spec 11.6: an FP8 encoding without scales is valid; matvec is the one with every scale 1.0.
#[test]
fn unscaled_fp8_is_valid_and_means_scales_of_one() {
    for mode in [Mode::FP8_L0, Mode::FP8_L1] {
        let mut m = encoded(mode);
        let x: Vec<f32> = (0..1100).map(|k| ((k % 7) as f32 - 3.0) * 0.25).collect();
        m.scale = None;
        let unscaled = decode(&m).expect("valid without scales").matvec(&x, 1, None).unwrap();
        m.scale = Some(vec![1.0; 9]);
        let ones = decode(&m).expect("valid with scales").matvec(&x, 1, None).unwrap();
        assert_eq!(unscaled.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), ones.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
    }
}
