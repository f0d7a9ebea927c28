//! Interop: our reference encoder is byte-identical to the 0.10.1 library's host encoder
//! (spec 14: the library is a canonical encoder) in all four modes, and our decoder reads the
//! library's output back to the input. The library is fetched from PyPI at test time; if it
//! cannot be fetched this test FAILS, it never skips.
//!
//! NWC_INTEROP_MATRICES (default 400) sets the number of generated shapes; each gives a BF16 and
//! an fp8 matrix, both encoded in both layouts: 400 comparisons per mode by default.

use nwc_reference::{decode, encode, ElemType, Elements, Geometry, Layout, Mode, Shape, Weights};
use nwc_testkit::gen::{le_bytes, Dist, Generator};
use nwc_testkit::peer::{PeerLib, PeerOutput};

fn first_difference(a: &[u8], b: &[u8]) -> String {
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(i) => format!("first difference at byte {i}: ours {:#04x}, peer {:#04x}", a[i], b[i]),
        None => format!("lengths differ: ours {}, peer {}", a.len(), b.len()),
    }
}

fn u32_bytes(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Compares every stored field; returns a description of the first mismatch.
fn compare(mode: Mode, shape: Shape, input: &[u8], peer: &PeerLib) -> Result<(), String> {
    let ours = match mode.elem {
        ElemType::Bf16 => {
            let words: Vec<u16> = input.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
            encode(mode, shape, Weights::Bf16(&words))
        }
        ElemType::Fp8E4m3 => encode(mode, shape, Weights::Fp8(input)),
    }
    .map_err(|e| format!("our encoder failed: {e}"))?;
    let theirs: PeerOutput = peer.encode(mode, shape, input).map_err(|rc| format!("peer encoder returned {rc}"))?;
    let g = Geometry::new(mode, shape).unwrap();
    let layout = [g.blocks as i64, g.n_low as i64, theirs.layout[2], g.k16 as i64];
    if theirs.layout != layout {
        return Err(format!("nwc_layout {:?}, our geometry {:?}", theirs.layout, layout));
    }
    let m = &ours.matrix;
    // Both sides zero-fill the unspecified gap and tail bytes, so whole fields compare.
    let fields: [(&str, Vec<u8>, Vec<u8>); 6] = [
        ("data", m.data.clone(), theirs.data.clone()),
        ("bases", u32_bytes(&m.bases), u32_bytes(&theirs.bases)),
        ("hdr", m.hdr.clone(), theirs.hdr.clone()),
        ("lut", u32_bytes(&m.lut), u32_bytes(&theirs.lut)),
        ("low", m.low.clone(), theirs.low.clone()),
        ("exp_of_rank", ours.exp_of_rank.to_vec(), theirs.exp_of_rank.to_vec()),
    ];
    for (name, a, b) in fields {
        if a != b {
            return Err(format!("field {name}: {}", first_difference(&a, &b)));
        }
    }
    // The peer's own output passes our validator and decodes to the input.
    let mut peer_matrix = m.clone();
    peer_matrix.data = theirs.data;
    let decoded = decode(&peer_matrix).map_err(|e| format!("peer output rejected: {e}"))?;
    let back = match decoded.elements {
        Elements::Bf16(w) => le_bytes(&w),
        Elements::Fp8(b) => b,
    };
    if back != input {
        return Err(format!("decoded peer output differs: {}", first_difference(&back, input)));
    }
    Ok(())
}

#[test]
fn byte_identical_with_the_peer_encoder_in_all_four_modes() {
    let peer = PeerLib::load().unwrap_or_else(|e| panic!("the 0.10.1 library is needed for this test and could not be loaded: {e}"));
    let count: usize = std::env::var("NWC_INTEROP_MATRICES").ok().and_then(|v| v.parse().ok()).unwrap_or(400);
    let mut gen = Generator::new(0x6e77_6310);
    let mut per_mode = [0usize; 4];
    let mut failures = Vec::new();
    for i in 0..count {
        // Each index gives one BF16 and one fp8 matrix of the same shape, each in both layouts.
        let shape = gen.shape(i, 3000);
        let bf16_dist = Dist::BF16[i % Dist::BF16.len()];
        let fp8_dist = Dist::FP8[i % Dist::FP8.len()];
        let inputs =
            [(ElemType::Bf16, le_bytes(&gen.bf16(bf16_dist, shape)), bf16_dist), (ElemType::Fp8E4m3, gen.fp8(fp8_dist, shape), fp8_dist)];
        for (elem, input, dist) in &inputs {
            for layout in [Layout::Rows8, Layout::Fragment16] {
                let mode = Mode { elem: *elem, layout };
                per_mode[usize::from(*elem == ElemType::Fp8E4m3) + 2 * usize::from(layout.number())] += 1;
                if let Err(e) = compare(mode, shape, input, &peer) {
                    failures.push(format!("matrix {i} ({mode}, {shape}, {}): {e}", dist.name()));
                }
            }
        }
    }
    println!("compared per mode [bf16 L0, fp8 L0, bf16 L1, fp8 L1]: {per_mode:?}");
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn fp8_quantized_from_bf16_matches_in_both_layouts() {
    let peer = PeerLib::load().unwrap_or_else(|e| panic!("the 0.10.1 library could not be loaded: {e}"));
    let mut gen = Generator::new(7);
    for i in 0..60 {
        let shape = gen.shape(i, 2000);
        let input = gen.fp8(Dist::Fp8Quantized, shape);
        for mode in [Mode::FP8_L0, Mode::FP8_L1] {
            compare(mode, shape, &input, &peer).unwrap_or_else(|e| panic!("{mode} {shape}: {e}"));
        }
    }
}

#[test]
fn fp8_nan_is_rejected_like_the_peer_rejects_it() {
    let peer = PeerLib::load().unwrap_or_else(|e| panic!("the 0.10.1 library could not be loaded: {e}"));
    let shape = Shape::new(9, 70);
    for nan in [0x7Fu8, 0xFF] {
        for at in [0usize, 333, 629] {
            let mut input = vec![0x38u8; 630];
            input[at] = nan;
            for mode in [Mode::FP8_L0, Mode::FP8_L1] {
                assert_eq!(peer.encode(mode, shape, &input).unwrap_err(), -2);
                let err = encode(mode, shape, Weights::Fp8(&input)).unwrap_err();
                assert!(matches!(err, nwc_reference::EncodeError::Fp8Nan { index, .. } if index == at as u64), "{err}");
            }
        }
    }
}

#[test]
fn layout_sizes_match_nwc_layout_examples() {
    let peer = PeerLib::load().unwrap_or_else(|e| panic!("the 0.10.1 library could not be loaded: {e}"));
    for (m, k, elem, expected) in [
        (13u64, 40u32, 0, [2i64, 624, 16, 48]),
        (3, 4097, 16, [9, 66048, 144, 4112]),
        (1, 1, 17, [1, 256, 16, 16]),
        (4096, 4096, 0, [4096, 16777216, 32768, 4096]),
    ] {
        assert_eq!(peer.layout(m, k, elem), Ok(expected));
        let g = Geometry::new(Mode::from_code(elem as u32).unwrap(), Shape::new(m, u64::from(k))).unwrap();
        assert_eq!([g.blocks as i64, g.n_low as i64, g.k16 as i64], [expected[0], expected[1], expected[3]]);
    }
}
