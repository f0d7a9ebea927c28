//! Lane tools of the corruptions (spec 6, 9): reading and re-packing lanes, re-coding a matrix
//! under another rank table, finding and replacing one code, setting one raw slot.

use nwc_reference::code::{Code, LaneReader, LaneWriter, Read};
use nwc_reference::geometry::{Geometry, LANES, TAIL_SLACK};
use nwc_reference::lut::{build_lut, recover_exp_of_rank};
use nwc_reference::tiling::{lane_positions, Position, RawSlot};
use nwc_reference::{ElemType, EncodedMatrix};

// ---------------------------------------------------------------------------------------------
// Lane tools (spec 6, 9)
// ---------------------------------------------------------------------------------------------

pub(super) fn geometry(m: &EncodedMatrix) -> Geometry {
    Geometry::new(m.mode, m.shape).expect("corruptions start from a valid encoding")
}

pub(super) fn align8(x: usize) -> usize {
    x.div_ceil(8) * 8
}

/// (rank limit R, has escape) of spec 6.1 / 10.2 for the element type.
pub(super) fn code_params(elem: ElemType) -> (usize, bool) {
    match elem {
        ElemType::Bf16 => (15, true),
        ElemType::Fp8E4m3 => (10, false),
    }
}

/// The words of every lane stream, block by block, lane by lane (spec 9.2), read through the
/// stored `bases` and `hdr` of a valid encoding.
pub fn lane_words(m: &EncodedMatrix) -> Vec<Vec<u32>> {
    let mut out = Vec::with_capacity(m.hdr.len());
    for (block, &base) in m.bases.iter().enumerate() {
        let mut start = base as usize;
        for &words in &m.hdr[block * LANES..(block + 1) * LANES] {
            let end = start + 4 * usize::from(words);
            out.push(m.data[start..end].chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect());
            start = end;
        }
    }
    out
}

/// Rebuilds `data`, `bases` and `hdr` from lane streams (one entry per block and lane, in order):
/// blocks at 8-aligned offsets with zero gaps, and a zero tail up to align8(end) + 64 (spec 9.2 -
/// 9.4). Header bytes are the word counts, so a lane of 0 or more than 255 words is the caller's
/// business (only [`lane_length_range`](super::lane_length_range) builds one, on purpose, and 255 is the most it uses).
pub fn assemble(m: &EncodedMatrix, lanes: &[Vec<u32>]) -> EncodedMatrix {
    let mut data = Vec::new();
    let mut bases = Vec::new();
    let mut hdr = Vec::with_capacity(lanes.len());
    for block in lanes.chunks(LANES) {
        data.resize(align8(data.len()), 0);
        bases.push(data.len() as u32);
        for words in block {
            hdr.push(words.len() as u8);
            data.extend(words.iter().flat_map(|w| w.to_le_bytes()));
        }
    }
    data.resize(align8(data.len()) + TAIL_SLACK as usize, 0);
    EncodedMatrix { data, bases, hdr, ..m.clone() }
}

/// The codes of one lane of a valid encoding, in stream order, with the position each stands for.
pub fn lane_codes(m: &EncodedMatrix, words: &[u32], block: u64, lane: usize) -> Vec<(Code, Position)> {
    let g = geometry(m);
    let (rank_limit, has_escape) = code_params(m.mode.elem);
    let mut reader = LaneReader::new(words);
    lane_positions(&g, block, lane)
        .into_iter()
        .map(|pos| {
            let code = match reader.read(rank_limit, has_escape).expect("a valid lane parses") {
                Read::Rank { rank, sign } => Code::rank(rank, sign),
                Read::Escape { hi } => Code::escape(hi),
            };
            (code, pos)
        })
        .collect()
}

/// Packs codes into a lane stream (spec 6.4): MSB first, the last word zero-padded.
pub fn pack(codes: impl IntoIterator<Item = Code>) -> Vec<u32> {
    let mut writer = LaneWriter::default();
    for code in codes {
        writer.push(code);
    }
    writer.into_words()
}

pub(super) fn code_bits(codes: &[(Code, Position)]) -> usize {
    codes.iter().map(|(c, _)| usize::from(c.len)).sum()
}

/// Re-codes every lane under another rank table, keeping the matrix: each real weight gets the
/// rank code of its symbol in `exp_of_rank`, or (BF16) an escape when its symbol has no rank
/// 0..14 or `escape(index of the weight in row-major order)` asks for one; fillers stay `10`.
/// `lut` is rebuilt from the new table; `low` and `scale` do not change (spec 14.4).
/// For FP8, `exp_of_rank[0..10]` must be a permutation of the ten symbol bytes.
pub fn recode(m: &EncodedMatrix, exp_of_rank: &[u8; 16], escape: &dyn Fn(u64) -> bool) -> EncodedMatrix {
    let old = recover_exp_of_rank(&m.lut);
    let words = lane_words(m);
    let mut lanes = Vec::with_capacity(words.len());
    for (i, lane_words) in words.iter().enumerate() {
        let (block, lane) = ((i / LANES) as u64, i % LANES);
        let codes = lane_codes(m, lane_words, block, lane).into_iter().map(|(code, pos)| {
            if !pos.real {
                return Code::FILLER;
            }
            let index = pos.row * m.shape.cols + pos.col;
            // The sign and symbol byte the old code carries (spec 6.1, 6.2).
            let (sign, symbol) = match decode_code(code) {
                Read::Rank { rank, sign } => (sign, old[rank as usize]),
                Read::Escape { hi } => (hi >> 7, hi & 0x7F),
            };
            let coded_ranks = if m.mode.elem == ElemType::Bf16 { 15 } else { 10 };
            let rank = exp_of_rank[..coded_ranks].iter().position(|&s| s == symbol);
            match (m.mode.elem, rank) {
                (ElemType::Fp8E4m3, Some(rank)) => Code::rank(rank as u8, sign),
                (ElemType::Fp8E4m3, None) => panic!("recode: FP8 symbol byte {symbol} missing from the new rank table"),
                (ElemType::Bf16, Some(rank)) if !escape(index) => Code::rank(rank as u8, sign),
                (ElemType::Bf16, _) => Code::escape((sign << 7) | symbol),
            }
        });
        lanes.push(pack(codes));
    }
    EncodedMatrix { lut: build_lut(m.mode.elem, exp_of_rank), ..assemble(m, &lanes) }
}

/// The meaning of a code built by [`Code::rank`] or [`Code::escape`].
pub(super) fn decode_code(code: Code) -> Read {
    if code.len == 24 && code.value >> 8 == 1 {
        Read::Escape { hi: code.value as u8 }
    } else {
        Read::Rank { rank: code.len - 2, sign: (code.value & 1) as u8 }
    }
}

/// Replaces code `index` of lane (`block`, `lane`) by `bits` and re-assembles the fields.
pub(super) fn replace_code(m: &EncodedMatrix, block: u64, lane: usize, index: usize, bits: Code) -> EncodedMatrix {
    let mut lanes = lane_words(m);
    let i = block as usize * LANES + lane;
    let mut codes: Vec<Code> = lane_codes(m, &lanes[i], block, lane).into_iter().map(|(c, _)| c).collect();
    codes[index] = bits;
    lanes[i] = pack(codes);
    assemble(m, &lanes)
}

/// The first position (block, lane, code index, position) that satisfies `pick`.
pub(super) fn find_position(m: &EncodedMatrix, pick: impl Fn(&Position) -> bool) -> Option<(u64, usize, usize, Position)> {
    let g = geometry(m);
    (0..g.blocks).find_map(|block| {
        (0..LANES).find_map(|lane| {
            lane_positions(&g, block, lane).into_iter().enumerate().find(|(_, p)| pick(p)).map(|(i, p)| (block, lane, i, p))
        })
    })
}

pub(super) fn set_raw(low: &mut [u8], slot: RawSlot, value: u8) {
    match slot {
        RawSlot::Byte(i) => low[i] = value,
        RawSlot::Nibble { byte, high: true } => low[byte] = (low[byte] & 0x0F) | (value << 4),
        RawSlot::Nibble { byte, high: false } => low[byte] = (low[byte] & 0xF0) | (value & 0x0F),
    }
}
