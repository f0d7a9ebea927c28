//! Surgery on stored fields: for every validity rule of spec 13, stored fields that break that
//! rule and, wherever the format allows it, no other; plus the lane-level tools the surgery needs
//! (reading a lane's codes, re-packing lanes, re-coding a matrix under another rank table).
//!
//! Every corruption starts from a valid encoding (normally the reference encoder's canonical
//! output) and edits it so that the remaining fields stay consistent: when a lane changes length,
//! `hdr`, every later block offset and the data length are rebuilt (spec 9.1 - 9.4), so that only
//! the intended rule fails. Where the format makes one rule imply another (a misaligned offset is
//! always also a mismatched one), the corruption lists the other rule in `also_broken`.

use nwc_reference::code::{Code, LaneReader, LaneWriter, Read};
use nwc_reference::element::FP8_SYMBOL_BYTE;
use nwc_reference::geometry::{Geometry, LANES, RAW_SLACK, TAIL_SLACK};
use nwc_reference::lut::{build_lut, recover_exp_of_rank, widen};
use nwc_reference::tiling::{lane_positions, Position, RawSlot};
use nwc_reference::{ElemType, EncodedMatrix, Encoding, FormatError, Layout, Shape};

/// Stored fields that break a rule. The mode code is metadata (spec 12.2); a bad one cannot be
/// held in a [`nwc_reference::Mode`], so it travels beside otherwise valid fields.
#[derive(Clone, Debug, PartialEq)]
pub enum Corrupted {
    Matrix(EncodedMatrix),
    ModeCode { code: u32, matrix: EncodedMatrix },
}

impl Corrupted {
    /// The stored fields (for `ModeCode`, the unchanged fields of the original mode).
    pub fn matrix(&self) -> &EncodedMatrix {
        match self {
            Corrupted::Matrix(m) | Corrupted::ModeCode { matrix: m, .. } => m,
        }
    }

    /// The mode code as stored.
    pub fn mode_code(&self) -> u32 {
        match self {
            Corrupted::Matrix(m) => m.mode.code(),
            Corrupted::ModeCode { code, .. } => *code,
        }
    }

    /// What a decoder reports for these fields: the mode code is checked first (spec 2.3), then
    /// the reference decoder runs. `Ok(())` means the fields are valid.
    pub fn check(&self) -> Result<(), nwc_reference::DecodeError> {
        if let Corrupted::ModeCode { code, .. } = self {
            nwc_reference::Mode::from_code(*code)?;
        }
        nwc_reference::validate(self.matrix())
    }
}

/// One way of breaking one rule.
#[derive(Clone, Debug, PartialEq)]
pub struct Corruption {
    /// The rule name of spec 13 (as in [`FormatError::RULES`]).
    pub rule: &'static str,
    /// Short, file-system safe name of the variant, e.g. `bases0-plus8`.
    pub variant: String,
    /// One line saying what was changed.
    pub what: String,
    pub fields: Corrupted,
    /// Rules the format forces this corruption to break as well; `rule` is the first of them in
    /// the order of checks of spec 16.2, the one a decoder reports (spec 13.21). Empty for almost
    /// all corruptions.
    pub also_broken: Vec<&'static str>,
}

fn corruption(rule: &'static str, variant: impl Into<String>, what: impl Into<String>, m: EncodedMatrix) -> Corruption {
    Corruption { rule, variant: variant.into(), what: what.into(), fields: Corrupted::Matrix(m), also_broken: Vec::new() }
}

/// Every corruption this module knows for `enc`, rule by rule in clause order. Rules that cannot
/// be broken in this encoding's mode or shape (no filler, a single block, ...) contribute nothing.
pub fn all(enc: &Encoding) -> Vec<Corruption> {
    FormatError::RULES.iter().flat_map(|(rule, _)| for_rule(rule, enc)).collect()
}

/// The corruptions of one rule (empty when `rule` cannot be broken in this encoding, or is unknown).
pub fn for_rule(rule: &str, enc: &Encoding) -> Vec<Corruption> {
    let m = &enc.matrix;
    match rule {
        "mode-code" => mode_code(m),
        "shape-range" => shape_range(m),
        "field-size" => field_size(m),
        "data-too-short" => data_too_short(enc),
        "offset-first-nonzero" => offset_first_nonzero(m),
        "offset-misaligned" => offset_misaligned(m),
        "offset-mismatch" => offset_mismatch(m),
        "lane-length-range" => lane_length_range(m),
        "rank-table" => rank_table(m),
        "lut-mismatch" => lut_mismatch(m),
        "lane-truncated" => lane_truncated(m),
        "lane-overlong" => lane_overlong(m),
        "stream-padding" => stream_padding(m),
        "filler-code" => filler_code(m),
        "fp8-rank" => fp8_rank(m),
        "fp8-nibble" => fp8_nibble(m),
        "fp8-nan" => fp8_nan(m),
        "raw-padding" => raw_padding(m),
        "scale-value" => scale_value(m),
        "bf16-escape" => bf16_escape(m),
        _ => Vec::new(),
    }
}

// ---------------------------------------------------------------------------------------------
// Lane tools (spec 6, 9)
// ---------------------------------------------------------------------------------------------

fn geometry(m: &EncodedMatrix) -> Geometry {
    Geometry::new(m.mode, m.shape).expect("corruptions start from a valid encoding")
}

fn align8(x: usize) -> usize {
    x.div_ceil(8) * 8
}

/// (rank limit R, has escape) of spec 6.1 / 10.2 for the element type.
fn code_params(elem: ElemType) -> (usize, bool) {
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
/// business (only [`lane_length_range`] builds one, on purpose, and 255 is the most it uses).
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

fn code_bits(codes: &[(Code, Position)]) -> usize {
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
fn decode_code(code: Code) -> Read {
    if code.len == 24 && code.value >> 8 == 1 {
        Read::Escape { hi: code.value as u8 }
    } else {
        Read::Rank { rank: code.len - 2, sign: (code.value & 1) as u8 }
    }
}

/// Replaces code `index` of lane (`block`, `lane`) by `bits` and re-assembles the fields.
fn replace_code(m: &EncodedMatrix, block: u64, lane: usize, index: usize, bits: Code) -> EncodedMatrix {
    let mut lanes = lane_words(m);
    let i = block as usize * LANES + lane;
    let mut codes: Vec<Code> = lane_codes(m, &lanes[i], block, lane).into_iter().map(|(c, _)| c).collect();
    codes[index] = bits;
    lanes[i] = pack(codes);
    assemble(m, &lanes)
}

/// The first position (block, lane, code index, position) that satisfies `pick`.
fn find_position(m: &EncodedMatrix, pick: impl Fn(&Position) -> bool) -> Option<(u64, usize, usize, Position)> {
    let g = geometry(m);
    (0..g.blocks).find_map(|block| {
        (0..LANES).find_map(|lane| {
            lane_positions(&g, block, lane).into_iter().enumerate().find(|(_, p)| pick(p)).map(|(i, p)| (block, lane, i, p))
        })
    })
}

fn set_raw(low: &mut [u8], slot: RawSlot, value: u8) {
    match slot {
        RawSlot::Byte(i) => low[i] = value,
        RawSlot::Nibble { byte, high: true } => low[byte] = (low[byte] & 0x0F) | (value << 4),
        RawSlot::Nibble { byte, high: false } => low[byte] = (low[byte] & 0xF0) | (value & 0x0F),
    }
}

// ---------------------------------------------------------------------------------------------
// Rules 13.1 - 13.4: metadata and field sizes (spec 2, 3.2, 12)
// ---------------------------------------------------------------------------------------------

/// 13.1: mode codes the 0.10.1 library would read loosely (2.3) and plain garbage.
pub fn mode_code(m: &EncodedMatrix) -> Vec<Corruption> {
    [2u32, 3, 15, 18, 32, 256, u32::MAX]
        .into_iter()
        .map(|code| Corruption {
            rule: "mode-code",
            variant: format!("code{code}"),
            what: format!("mode code {code} beside fields that are valid for mode {}", m.mode.code()),
            fields: Corrupted::ModeCode { code, matrix: m.clone() },
            also_broken: Vec::new(),
        })
        .collect()
}

/// 13.2: shapes outside the hard limits of spec 3.2, beside the unchanged fields.
pub fn shape_range(m: &EncodedMatrix) -> Vec<Corruption> {
    let shapes: [(&str, u64, u64); 5] = [
        ("rows0", 0, m.shape.cols),
        ("cols0", m.shape.rows, 0),
        ("rows-2^31+1", (1 << 31) + 1, m.shape.cols),
        ("cols-2^31-511", m.shape.rows, (1 << 31) - 511),
        ("weights-2^41", 1 << 21, 1 << 20),
    ];
    shapes
        .into_iter()
        .map(|(variant, rows, cols)| {
            let what = format!("shape {rows}x{cols} is outside the hard limits");
            corruption("shape-range", variant, what, EncodedMatrix { shape: Shape::new(rows, cols), ..m.clone() })
        })
        .collect()
}

/// 13.3: each field one element too long or too short, `low` with a wrong slack, a `scale` of
/// the wrong length (FP8) or present at all (BF16).
pub fn field_size(m: &EncodedMatrix) -> Vec<Corruption> {
    let mut out = Vec::new();
    let mut push = |variant: &str, what: &str, f: &dyn Fn(&mut EncodedMatrix)| {
        let mut c = m.clone();
        f(&mut c);
        out.push(corruption("field-size", variant, what, c));
    };
    push("bases-long", "one u32 appended to bases", &|c| c.bases.push(0));
    push("bases-short", "last entry of bases removed", &|c| {
        c.bases.pop();
    });
    push("hdr-long", "one byte appended to hdr", &|c| c.hdr.push(1));
    push("hdr-short", "last byte of hdr removed", &|c| {
        c.hdr.pop();
    });
    push("lut-short", "lut has 4095 entries", &|c| {
        c.lut.pop();
    });
    push("lut-long", "lut has 4097 entries", &|c| c.lut.push(0));
    let n_low = geometry(m).n_low as usize;
    for (variant, len) in [("low-short", n_low - 1), ("low-long", n_low + 1), ("low-slack-short", n_low + RAW_SLACK as usize - 1)] {
        let what = format!("low has {len} bytes, n_low is {n_low}");
        push(variant, &what, &|c| c.low.resize(len, 0));
    }
    let rows = m.shape.rows as usize;
    match m.mode.elem {
        ElemType::Bf16 => push("scale-in-bf16", "a BF16 encoding with a scale field", &|c| c.scale = Some(vec![1.0; rows])),
        ElemType::Fp8E4m3 => {
            push("scale-short", "scale has M - 1 entries", &|c| c.scale = Some(vec![1.0; rows - 1]));
            push("scale-long", "scale has M + 1 entries", &|c| c.scale = Some(vec![1.0; rows + 1]));
        }
    }
    out
}

/// 13.4: `data` cut below dl = align8(end) + 64 (dl comes from `hdr`, spec 9.4). These cut only
/// unspecified bytes or stream bytes; every other field stays valid.
pub fn data_too_short(enc: &Encoding) -> Vec<Corruption> {
    let m = &enc.matrix;
    let dl = align8(enc.stream_end as usize) + TAIL_SLACK as usize;
    [("dl-minus-1", dl - 1), ("stream-end", enc.stream_end as usize), ("half", enc.stream_end as usize / 2), ("empty", 0)]
        .into_iter()
        .map(|(variant, len)| {
            let what = format!("data cut to {len} bytes, dl is {dl}");
            corruption("data-too-short", variant, what, EncodedMatrix { data: m.data[..len].to_vec(), ..m.clone() })
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Rules 13.5 - 13.8: offsets and header bytes (spec 9.1 - 9.3)
// ---------------------------------------------------------------------------------------------

/// 13.5: every block moved 8 bytes later (8 bytes inserted before block 0, all offsets + 8), so
/// each later offset still follows from the stored one before it (13.7 holds) and dl still fits.
pub fn offset_first_nonzero(m: &EncodedMatrix) -> Vec<Corruption> {
    let mut data = vec![0u8; 8];
    data.extend_from_slice(&m.data);
    let bases = m.bases.iter().map(|b| b + 8).collect();
    let what = "8 bytes inserted before block 0 and every offset moved by 8";
    vec![corruption("offset-first-nonzero", "all-plus8", what, EncodedMatrix { data, bases, ..m.clone() })]
}

/// 13.6: bases[1] moved by 4. An offset that is not a multiple of 8 can never equal the aligned
/// end of the block before it, so 13.7 breaks too (unavoidably). Needs two blocks.
pub fn offset_misaligned(m: &EncodedMatrix) -> Vec<Corruption> {
    if m.bases.len() < 2 {
        return Vec::new();
    }
    let mut c = m.clone();
    c.bases[1] += 4;
    let mut out = corruption("offset-misaligned", "bases1-plus4", "bases[1] moved by 4 bytes", c);
    out.also_broken = vec!["offset-mismatch"];
    vec![out]
}

/// 13.7: block `b` (1 and the last) moved 8 bytes later with its data, later blocks shifted with
/// it: only bases[b] disagrees with the end of block b - 1.
pub fn offset_mismatch(m: &EncodedMatrix) -> Vec<Corruption> {
    let nb = m.bases.len();
    let mut targets = vec![1, nb - 1];
    targets.dedup();
    targets
        .into_iter()
        .filter(|&b| b >= 1 && b < nb)
        .map(|b| {
            let at = m.bases[b] as usize;
            let mut data = m.data[..at].to_vec();
            data.extend_from_slice(&[0u8; 8]);
            data.extend_from_slice(&m.data[at..]);
            let bases = m.bases.iter().enumerate().map(|(i, &x)| if i >= b { x + 8 } else { x }).collect();
            let what = format!("block {b} and all later blocks moved 8 bytes later (8-byte hole before block {b})");
            corruption("offset-mismatch", format!("block{b}-plus8"), what, EncodedMatrix { data, bases, ..m.clone() })
        })
        .collect()
}

/// 13.8: a header byte of 0 (the lane's words removed) or above the mode's maximum (zero words
/// appended). A lane of 0 words cannot hold its codes (13.11) and more words than the maximum
/// always outlast the codes (13.12), so those rules break too; offsets and dl are rebuilt.
pub fn lane_length_range(m: &EncodedMatrix) -> Vec<Corruption> {
    let max = usize::from(geometry(m).max_lane_words());
    let lanes = lane_words(m);
    let target = lanes.len() - 1; // the last lane of the last block
    let mut out = Vec::new();
    for (variant, words, also) in
        [("zero", 0usize, "lane-truncated"), ("max-plus1", max + 1, "lane-overlong"), ("255", 255, "lane-overlong")]
    {
        let mut l = lanes.clone();
        l[target].truncate(words);
        l[target].resize(words, 0);
        let what = format!("hdr of the last lane set to {words} (maximum {max}), its words adjusted to match");
        let mut c = corruption("lane-length-range", variant, what, assemble(m, &l));
        c.also_broken = vec![also];
        out.push(c);
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Rules 13.9 - 13.10: the lookup table (spec 10)
// ---------------------------------------------------------------------------------------------

/// 13.9: a table rebuilt (spec 10.2 - 10.4) from a rank table that is not a ranking, so it agrees
/// with itself (13.10 holds) and the lane streams still parse.
pub fn rank_table(m: &EncodedMatrix) -> Vec<Corruption> {
    let ranks = recover_exp_of_rank(&m.lut);
    let mut edits: Vec<(&str, String, [u8; 15])> = Vec::new();
    let mut dup = ranks;
    dup[1] = dup[0];
    edits.push(("dup-rank1", "exp_of_rank[1] set to exp_of_rank[0]".into(), dup));
    match m.mode.elem {
        ElemType::Bf16 => {
            let mut dup14 = ranks;
            dup14[14] = dup14[3];
            edits.push(("dup-rank14", "exp_of_rank[14] set to exp_of_rank[3] (held in lut[1])".into(), dup14));
        }
        ElemType::Fp8E4m3 => {
            let mut foreign = ranks;
            foreign[3] = 58;
            edits.push(("not-a-symbol", "exp_of_rank[3] set to 58, not an FP8 symbol byte".into(), foreign));
            let mut tail = ranks;
            tail[12] = 1;
            edits.push(("rank12-nonzero", "exp_of_rank[12] set to 1 (ranks 10..14 must be 0)".into(), tail));
        }
    }
    edits
        .into_iter()
        .map(|(variant, what, r)| {
            let c = EncodedMatrix { lut: build_lut(m.mode.elem, &widen(&r)), ..m.clone() };
            corruption("rank-table", variant, what + "; lut rebuilt from it", c)
        })
        .collect()
}

/// 13.10: bits flipped where rank recovery (spec 10.6) does not look: the length byte of entry
/// 0xABC, and the always-zero low byte of entry 0.
pub fn lut_mismatch(m: &EncodedMatrix) -> Vec<Corruption> {
    [("entry2748-bit0", 0xABC, 1u32), ("entry0-bit3", 0, 8), ("entry4095-bit31", 4095, 1 << 31)]
        .into_iter()
        .map(|(variant, entry, mask)| {
            let mut c = m.clone();
            c.lut[entry] ^= mask;
            corruption("lut-mismatch", variant, format!("lut[{entry}] xor {mask:#x}"), c)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Rules 13.11 - 13.15, 13.20: lane streams (spec 6)
// ---------------------------------------------------------------------------------------------

/// 13.11: the last word of the first lane with at least 2 words removed, `hdr` and all later
/// offsets fixed up. Cutting whole words leaves a prefix of a code (at most R zeros), so the
/// stream ends inside a code rather than showing too many zeros.
pub fn lane_truncated(m: &EncodedMatrix) -> Vec<Corruption> {
    let mut lanes = lane_words(m);
    let Some(i) = lanes.iter().position(|w| w.len() >= 2) else { return Vec::new() };
    lanes[i].pop();
    let what = format!("last word of block {} lane {} removed, hdr and later offsets adjusted", i / LANES, i % LANES);
    vec![corruption("lane-truncated", "drop-last-word", what, assemble(m, &lanes))]
}

/// 13.12: a zero word appended to the first lane below the mode's maximum, `hdr` bumped, later
/// blocks shifted.
pub fn lane_overlong(m: &EncodedMatrix) -> Vec<Corruption> {
    let max = usize::from(geometry(m).max_lane_words());
    let mut lanes = lane_words(m);
    let Some(i) = lanes.iter().position(|w| w.len() < max) else { return Vec::new() };
    lanes[i].push(0);
    let what = format!("a zero word appended to block {} lane {}, hdr and later offsets adjusted", i / LANES, i % LANES);
    vec![corruption("lane-overlong", "extra-zero-word", what, assemble(m, &lanes))]
}

/// 13.13: the very last bit of the first lane whose last word has bits after its last code.
pub fn stream_padding(m: &EncodedMatrix) -> Vec<Corruption> {
    let mut lanes = lane_words(m);
    let found = lanes.iter().enumerate().find(|(i, w)| {
        let bits = code_bits(&lane_codes(m, w, (i / LANES) as u64, i % LANES));
        bits % 32 != 0
    });
    let Some((i, _)) = found else { return Vec::new() };
    *lanes[i].last_mut().expect("lanes have a word") |= 1;
    let what = format!("last bit of block {} lane {} set (after its last code)", i / LANES, i % LANES);
    vec![corruption("stream-padding", "last-bit", what, assemble(m, &lanes))]
}

/// 13.14: the first filler coded `11` (sign set), `010` (rank 1) and, for BF16, as an escape of
/// the rank-0 symbol (fillers are never escaped, spec 14.4).
pub fn filler_code(m: &EncodedMatrix) -> Vec<Corruption> {
    let Some((block, lane, i, pos)) = find_position(m, |p| !p.real) else { return Vec::new() };
    let at = format!("filler of block {block} lane {lane} (row {}, column {})", pos.row, pos.col);
    let mut out = vec![
        corruption("filler-code", "sign1", format!("{at} coded `11`"), replace_code(m, block, lane, i, Code::rank(0, 1))),
        corruption("filler-code", "rank1", format!("{at} coded `010`"), replace_code(m, block, lane, i, Code::rank(1, 0))),
    ];
    if m.mode.elem == ElemType::Bf16 {
        let hi = recover_exp_of_rank(&m.lut)[0];
        let c = replace_code(m, block, lane, i, Code::escape(hi));
        out.push(corruption("filler-code", "escaped", format!("{at} coded as an escape of byte {hi:#04x}"), c));
    }
    out
}

/// 13.15: FP8: the first code of block 0 lane 0 replaced by 10 zeros, a one and a sign bit.
pub fn fp8_rank(m: &EncodedMatrix) -> Vec<Corruption> {
    if m.mode.elem != ElemType::Fp8E4m3 {
        return Vec::new();
    }
    let c = replace_code(m, 0, 0, 0, Code { value: 0b10, len: 12 });
    vec![corruption("fp8-rank", "rank10", "block 0 lane 0 code 0 is `0000000000 1 0` (rank 10)", c)]
}

/// 13.20: BF16: a code of 16 zeros, a one and 8 bits (an escape with one zero too many), at the
/// first code of block 0 lane 0 and at the last code of the last lane.
pub fn bf16_escape(m: &EncodedMatrix) -> Vec<Corruption> {
    if m.mode.elem != ElemType::Bf16 {
        return Vec::new();
    }
    let g = geometry(m);
    let bad = Code { value: (1 << 8) | 0x3F, len: 25 };
    let last_block = g.blocks - 1;
    let last_code = g.codes_per_lane(last_block) - 1;
    vec![
        corruption("bf16-escape", "first-code", "block 0 lane 0 code 0 has 16 leading zeros", replace_code(m, 0, 0, 0, bad)),
        corruption(
            "bf16-escape",
            "last-code",
            format!("block {last_block} lane 31 code {last_code} has 16 leading zeros"),
            replace_code(m, last_block, LANES - 1, last_code, bad),
        ),
    ]
}

// ---------------------------------------------------------------------------------------------
// Rules 13.16 - 13.19: FP8 values, raw plane, scales (spec 4.8, 7.5 - 8.6, 11)
// ---------------------------------------------------------------------------------------------

/// Recodes the weight at (0, 0) (block 0, lane 0, code 0 in both layouts) to the FP8 symbol with
/// byte `symbol_byte`, with `sign`, and sets its nibble.
fn set_fp8_weight(m: &EncodedMatrix, symbol_byte: u8, sign: u8, nibble: u8) -> EncodedMatrix {
    let ranks = recover_exp_of_rank(&m.lut);
    let rank = ranks[..10].iter().position(|&b| b == symbol_byte).expect("a valid FP8 table ranks every symbol");
    let mut c = replace_code(m, 0, 0, 0, Code::rank(rank as u8, sign));
    let pos = lane_positions(&geometry(m), 0, 0)[0];
    debug_assert!(pos.real && pos.row == 0 && pos.col == 0);
    set_raw(&mut c.low, pos.raw.expect("a real weight has a raw slot"), nibble);
    c
}

/// 13.16: the weight at (0, 0) made symbol 9 (zero) with nibble 1, symbol 8 with nibble 4, and
/// symbol 0 with the odd nibble 3 (spec 4.8).
pub fn fp8_nibble(m: &EncodedMatrix) -> Vec<Corruption> {
    if m.mode.elem != ElemType::Fp8E4m3 {
        return Vec::new();
    }
    [("zero-nibble1", FP8_SYMBOL_BYTE[9], 1u8), ("sub-nibble4", FP8_SYMBOL_BYTE[8], 4), ("sym0-nibble3", FP8_SYMBOL_BYTE[0], 3)]
        .into_iter()
        .map(|(variant, byte, nibble)| {
            let what = format!("weight (0, 0) coded as symbol byte {byte} with nibble {nibble}");
            corruption("fp8-nibble", variant, what, set_fp8_weight(m, byte, 0, nibble))
        })
        .collect()
}

/// 13.17: the weight at (0, 0) made symbol 7 with nibble 15, i.e. 0x7F and 0xFF.
pub fn fp8_nan(m: &EncodedMatrix) -> Vec<Corruption> {
    if m.mode.elem != ElemType::Fp8E4m3 {
        return Vec::new();
    }
    [("pos", 0u8), ("neg", 1)]
        .into_iter()
        .map(|(variant, sign)| {
            let what = format!("weight (0, 0) coded as symbol 7, sign {sign}, nibble 15 (NaN)");
            corruption("fp8-nan", variant, what, set_fp8_weight(m, FP8_SYMBOL_BYTE[7], sign, 15))
        })
        .collect()
}

/// 13.18: the raw slot of the first pad position (a filler that has one) set non-zero; the
/// 512-byte slack is not a pad and is left alone.
pub fn raw_padding(m: &EncodedMatrix) -> Vec<Corruption> {
    let Some((block, lane, _, pos)) = find_position(m, |p| !p.real && p.raw.is_some()) else { return Vec::new() };
    let slot = pos.raw.expect("picked for its slot");
    let mut c = m.clone();
    set_raw(&mut c.low, slot, 0x5);
    let what = format!("raw slot {slot:?} of the pad at row {}, column {} (block {block} lane {lane}) set to 5", pos.row, pos.col);
    let layout = if m.mode.layout == Layout::Rows8 { "l0" } else { "l1" };
    vec![corruption("raw-padding", format!("pad-{layout}"), what, c)]
}

/// 13.19: one scale (the last row's) NaN, infinite, zero or negative. FP8 encodings without a
/// scale field get all-ones scales first (a valid choice, spec 11.4).
pub fn scale_value(m: &EncodedMatrix) -> Vec<Corruption> {
    if m.mode.elem != ElemType::Fp8E4m3 {
        return Vec::new();
    }
    let base = m.scale.clone().unwrap_or_else(|| vec![1.0; m.shape.rows as usize]);
    [("nan", f32::NAN), ("inf", f32::INFINITY), ("neg-inf", f32::NEG_INFINITY), ("zero", 0.0), ("neg-zero", -0.0), ("negative", -0.5)]
        .into_iter()
        .map(|(variant, value)| {
            let mut scale = base.clone();
            *scale.last_mut().expect("M >= 1") = value;
            let what = format!("scale of the last row set to {value}");
            corruption("scale-value", variant, what, EncodedMatrix { scale: Some(scale), ..m.clone() })
        })
        .collect()
}
