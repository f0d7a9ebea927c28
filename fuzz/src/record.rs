//! The byte form of "arbitrary stored fields under an arbitrary declared mode and shape", read by
//! the `decode_arbitrary` target. The flags let the fuzzer choose how much of the structure is
//! consistent, so it reaches the deep rules (lane streams, raw plane) as well as the shallow ones
//! (mode code, shape, field sizes, offsets):
//!
//! ```text
//! byte 0      mode code (any value; only 0, 1, 16, 17 are valid, rule 13.1)
//! byte 1      flags (FLAG_*)
//! rows, cols  u16 each, or u64 each with FLAG_WIDE_SHAPE (little-endian)
//! with FLAG_EXACT_SIZES, field sizes follow from the shape (spec 12):
//!   hdr       32 * nb bytes
//!   bases     4 * nb bytes, or none with FLAG_CHAINED_BASES (computed from hdr, spec 9.2)
//!   lut       15 bytes of exp_of_rank with FLAG_BUILT_LUT (table built by spec 10), else 16384 bytes
//!   low       n_low bytes, + 512 with FLAG_RAW_SLACK
//!   scale     4 * M bytes with FLAG_SCALE
//!   data      the rest; with FLAG_FILL_DATA zero-extended to the length hdr needs (spec 9.4)
//! without it, each field is a u16 count of its elements followed by that many elements, in the
//! order hdr, bases, lut, low, scale (count 0xFFFF = absent); data is the rest.
//! ```
//! Missing input bytes read as zero (see [`crate::input`]).

use crate::input::{le_to_u32s, u32s_to_le, Input};
use nwc_reference::geometry::{LANES, LUT_ENTRIES, RAW_SLACK, TAIL_SLACK};
use nwc_reference::lut::widen;
use nwc_reference::{build_lut, recover_exp_of_rank, EncodedMatrix, Geometry, Mode, Shape};

pub const FLAG_WIDE_SHAPE: u8 = 1;
pub const FLAG_EXACT_SIZES: u8 = 2;
pub const FLAG_CHAINED_BASES: u8 = 4;
pub const FLAG_BUILT_LUT: u8 = 8;
pub const FLAG_RAW_SLACK: u8 = 16;
pub const FLAG_SCALE: u8 = 32;
pub const FLAG_FILL_DATA: u8 = 64;

/// What a record describes: a mode code that may be invalid, and stored fields.
pub struct Record {
    pub mode_code: u32,
    pub shape: Shape,
    /// Present when the mode code is valid.
    pub matrix: Option<EncodedMatrix>,
}

/// Most elements read for one field when sizes come from the shape; larger geometries are left
/// for the limits check, which must refuse them before the fields matter. `fuzz_limits` allows
/// 2^16 weights, so every shape it accepts still gets exact sizes.
const MAX_EXACT_FIELD: u64 = 1 << 17;
/// Most bytes FLAG_FILL_DATA zero-extends `data` to (every zero is a byte to allocate and scan
/// in every execution; 128 KiB holds four blocks of the longest lanes).
const MAX_FILL: u64 = 1 << 17;

/// Chains block offsets from header bytes: bases[0] = 0, bases[b] = align8(end of block b - 1).
pub fn chained_bases(hdr: &[u8], blocks: usize) -> Vec<u32> {
    let mut bases = Vec::with_capacity(blocks);
    let mut end = 0u64;
    for b in 0..blocks {
        let start = end.div_ceil(8) * 8;
        bases.push(start as u32); // wraps past 2^32: then it is an offset error the decoder must find
        let lanes = hdr.get(b * LANES..(b + 1) * LANES).unwrap_or(&[]);
        end = start + lanes.iter().map(|&w| 4 * u64::from(w)).sum::<u64>();
    }
    bases
}

/// Data length the header bytes ask for (spec 9.4), chained like [`chained_bases`].
pub fn needed_data_len(hdr: &[u8]) -> u64 {
    let mut end = 0u64;
    for block in hdr.chunks(LANES) {
        end = end.div_ceil(8) * 8 + block.iter().map(|&w| 4 * u64::from(w)).sum::<u64>();
    }
    end.div_ceil(8) * 8 + TAIL_SLACK
}

fn scales_from(bytes: &[u8]) -> Vec<f32> {
    le_to_u32s(bytes).into_iter().map(f32::from_bits).collect()
}

/// Reads a record.
pub fn read(data: &[u8]) -> Record {
    let mut input = Input::new(data);
    let mode_code = u32::from(input.u8());
    let flags = input.u8();
    let shape = if flags & FLAG_WIDE_SHAPE != 0 {
        Shape::new(input.u64(), input.u64())
    } else {
        Shape::new(u64::from(input.u16()), u64::from(input.u16()))
    };
    let Ok(mode) = Mode::from_code(mode_code) else {
        return Record {
            mode_code,
            shape,
            matrix: None,
        };
    };
    let exact = match Geometry::new(mode, shape) {
        Ok(g)
            if flags & FLAG_EXACT_SIZES != 0
                && g.n_low + RAW_SLACK <= MAX_EXACT_FIELD
                && g.blocks * 32 <= MAX_EXACT_FIELD =>
        {
            Some(g)
        }
        _ => None,
    };
    let matrix = match exact {
        Some(g) => read_exact(&mut input, mode, shape, &g, flags),
        None => read_counted(&mut input, mode, shape),
    };
    Record {
        mode_code,
        shape,
        matrix: Some(matrix),
    }
}

fn read_exact(
    input: &mut Input,
    mode: Mode,
    shape: Shape,
    g: &Geometry,
    flags: u8,
) -> EncodedMatrix {
    let nb = g.blocks as usize;
    let hdr = input.bytes(LANES * nb);
    let bases = if flags & FLAG_CHAINED_BASES != 0 {
        chained_bases(&hdr, nb)
    } else {
        le_to_u32s(&input.bytes(4 * nb))
    };
    let lut = if flags & FLAG_BUILT_LUT != 0 {
        let ranks: [u8; 15] = input.bytes(15).try_into().expect("15 bytes");
        build_lut(mode.elem, &widen(&ranks))
    } else {
        le_to_u32s(&input.bytes(4 * LUT_ENTRIES))
    };
    let slack = if flags & FLAG_RAW_SLACK != 0 {
        RAW_SLACK
    } else {
        0
    };
    let low = input.bytes((g.n_low + slack) as usize);
    let scale =
        (flags & FLAG_SCALE != 0).then(|| scales_from(&input.bytes(4 * shape.rows as usize)));
    let mut data = input.rest();
    if flags & FLAG_FILL_DATA != 0 {
        let needed = needed_data_len(&hdr).min(MAX_FILL) as usize;
        if data.len() < needed {
            data.resize(needed, 0);
        }
    }
    EncodedMatrix {
        mode,
        shape,
        data,
        bases,
        hdr,
        lut,
        low,
        scale,
    }
}

fn read_counted(input: &mut Input, mode: Mode, shape: Shape) -> EncodedMatrix {
    let mut field = |unit: usize| -> Option<Vec<u8>> {
        let count = input.u16();
        (count != u16::MAX).then(|| input.bytes(usize::from(count) * unit))
    };
    let hdr = field(1).unwrap_or_default();
    let bases = le_to_u32s(&field(4).unwrap_or_default());
    let lut = le_to_u32s(&field(4).unwrap_or_default());
    let low = field(1).unwrap_or_default();
    let scale = field(4).map(|b| scales_from(&b));
    let data = input.rest();
    EncodedMatrix {
        mode,
        shape,
        data,
        bases,
        hdr,
        lut,
        low,
        scale,
    }
}

/// Writes a valid matrix as a record that [`read`] gives back unchanged (for seed corpora).
pub fn write(m: &EncodedMatrix) -> Vec<u8> {
    let wide = m.shape.rows > u64::from(u16::MAX) || m.shape.cols > u64::from(u16::MAX);
    let slack = Geometry::new(m.mode, m.shape)
        .map(|g| m.low.len() as u64 > g.n_low)
        .unwrap_or(false);
    let mut flags = FLAG_EXACT_SIZES | FLAG_CHAINED_BASES | FLAG_BUILT_LUT;
    for (on, flag) in [
        (wide, FLAG_WIDE_SHAPE),
        (slack, FLAG_RAW_SLACK),
        (m.scale.is_some(), FLAG_SCALE),
    ] {
        if on {
            flags |= flag;
        }
    }
    let mut out = vec![m.mode.code() as u8, flags];
    if wide {
        out.extend(m.shape.rows.to_le_bytes());
        out.extend(m.shape.cols.to_le_bytes());
    } else {
        out.extend((m.shape.rows as u16).to_le_bytes());
        out.extend((m.shape.cols as u16).to_le_bytes());
    }
    out.extend(&m.hdr);
    out.extend(recover_exp_of_rank(&m.lut));
    out.extend(&m.low);
    if let Some(s) = &m.scale {
        out.extend(u32s_to_le(
            &s.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        ));
    }
    out.extend(&m.data);
    out
}
