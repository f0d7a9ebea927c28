//! Corruptions of rules 13.1 - 13.10: metadata, field sizes, offsets and header bytes, the
//! lookup table (spec 2, 3.2, 9.1 - 9.3, 10, 12).

use super::lanes::{align8, assemble, geometry, lane_words};
use super::{corruption, Corrupted, Corruption};
use nwc_reference::geometry::{RAW_SLACK, TAIL_SLACK};
use nwc_reference::lut::{build_lut, recover_exp_of_rank, widen};
use nwc_reference::{ElemType, EncodedMatrix, Encoding, Shape};

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

/// 13.6: `bases[1]` moved by 4. An offset that is not a multiple of 8 can never equal the aligned
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
/// it: only `bases[b]` disagrees with the end of block b - 1.
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
