//! Structure-aware corruption of a valid encoding (target `decode_mutated`): bit flips,
//! truncation and extension of any field, swapped and duplicated blocks, edited header bytes and
//! offsets, a foreign lookup table, a changed declared mode or shape, and garbage in the bytes the
//! spec leaves unspecified (spec 9.7), which a decoder must ignore.

use crate::input::{le_to_u32s, u32s_to_le, Input};
use crate::matrices::{encode_spec, read_scales, read_spec};
use crate::record::chained_bases;
use nwc_reference::geometry::{LANES, RAW_SLACK, TAIL_SLACK};
use nwc_reference::{EncodedMatrix, Geometry, Mode, Shape};

/// The stored fields as plain bytes, so every mutation is a byte edit.
#[derive(Clone, Debug, PartialEq)]
pub struct Fields {
    pub mode: Mode,
    pub shape: Shape,
    pub data: Vec<u8>,
    pub bases: Vec<u8>,
    pub hdr: Vec<u8>,
    pub lut: Vec<u8>,
    pub low: Vec<u8>,
    pub scale: Option<Vec<u8>>,
}

impl Fields {
    pub fn from_matrix(m: &EncodedMatrix) -> Fields {
        Fields {
            mode: m.mode,
            shape: m.shape,
            data: m.data.clone(),
            bases: u32s_to_le(&m.bases),
            hdr: m.hdr.clone(),
            lut: u32s_to_le(&m.lut),
            low: m.low.clone(),
            scale: m
                .scale
                .as_ref()
                .map(|s| u32s_to_le(&s.iter().map(|v| v.to_bits()).collect::<Vec<_>>())),
        }
    }

    /// The matrix these bytes describe (a trailing partial u32 or f32 is dropped).
    pub fn to_matrix(&self) -> EncodedMatrix {
        EncodedMatrix {
            mode: self.mode,
            shape: self.shape,
            data: self.data.clone(),
            bases: le_to_u32s(&self.bases),
            hdr: self.hdr.clone(),
            lut: le_to_u32s(&self.lut),
            low: self.low.clone(),
            scale: self
                .scale
                .as_ref()
                .map(|s| le_to_u32s(s).into_iter().map(f32::from_bits).collect()),
        }
    }

    fn field(&mut self, which: usize) -> &mut Vec<u8> {
        match which % 6 {
            0 => &mut self.data,
            1 => &mut self.bases,
            2 => &mut self.hdr,
            3 => &mut self.lut,
            4 => &mut self.low,
            _ => self.scale.get_or_insert_with(Vec::new),
        }
    }

    /// Block b's lane streams: its offset in `data` and length (from the stored fields, clamped).
    fn block_span(&self, b: usize) -> (usize, usize) {
        let bases = le_to_u32s(&self.bases);
        let start = bases.get(b).map_or(0, |&s| s as usize).min(self.data.len());
        let len: usize = self
            .hdr
            .get(b * LANES..(b + 1) * LANES)
            .map_or(0, |h| h.iter().map(|&w| 4 * usize::from(w)).sum());
        (start, len.min(self.data.len() - start))
    }

    fn blocks(&self) -> usize {
        self.hdr.len() / LANES
    }

    /// Rebuilds `data` and `bases` from per-block streams (a consistent layout, spec 9.2).
    fn relayout(&mut self, streams: Vec<Vec<u8>>) {
        let mut data = Vec::new();
        for s in &streams {
            data.resize(data.len().div_ceil(8) * 8, 0);
            data.extend(s);
        }
        data.resize(data.len().div_ceil(8) * 8 + TAIL_SLACK as usize, 0);
        self.data = data;
        self.bases = u32s_to_le(&chained_bases(&self.hdr, self.blocks()));
    }

    fn streams(&self) -> Vec<Vec<u8>> {
        (0..self.blocks())
            .map(|b| {
                let (start, len) = self.block_span(b);
                self.data[start..start + len].to_vec()
            })
            .collect()
    }
}

/// Whether a mutation may change what the matrix means, or only touches unspecified bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    Any,
    /// Only bytes spec 9.7 leaves unspecified: the decoded matrix must not change.
    Unspecified,
}

/// Applies one mutation chosen by the input and says what kind it was.
pub fn mutate_once(f: &mut Fields, input: &mut Input) -> Effect {
    let op = input.u8();
    match op % 14 {
        0 => {
            let field = f.field(input.below(6));
            if !field.is_empty() {
                let i = input.u32() as usize % field.len();
                field[i] ^= 1 << input.below(8);
            }
        }
        1 => {
            let field = f.field(input.below(6));
            let keep = field.len() * usize::from(input.u8()) / 256;
            field.truncate(keep);
        }
        2 => {
            let which = input.below(6);
            let n = 1 + input.below(64);
            let extra = input.bytes(n);
            f.field(which).extend(extra);
        }
        3 | 4 if f.blocks() >= 2 => {
            // Swap two blocks, or copy one over another, keeping offsets consistent so the
            // content rules (not just the offset rules) have to catch it.
            let (i, j) = (input.below(f.blocks()), input.below(f.blocks()));
            let mut streams = f.streams();
            let (hi, hj) = (i * LANES, j * LANES);
            if op % 14 == 3 {
                streams.swap(i, j);
                for l in 0..LANES {
                    f.hdr.swap(hi + l, hj + l);
                }
            } else {
                streams[j] = streams[i].clone();
                let src = f.hdr[hi..hi + LANES].to_vec();
                f.hdr[hj..hj + LANES].copy_from_slice(&src);
            }
            f.relayout(streams);
        }
        5 if !f.hdr.is_empty() => {
            let i = input.u32() as usize % f.hdr.len();
            f.hdr[i] = input.u8();
            if input.u8() & 1 == 1 {
                // Also shift the following streams so the offsets still add up.
                let streams = f.streams();
                f.relayout(streams);
            }
        }
        6 if f.bases.len() >= 4 => {
            let mut bases = le_to_u32s(&f.bases);
            let i = input.u32() as usize % bases.len();
            bases[i] = match input.below(3) {
                0 => input.u32(),
                1 => bases[i].wrapping_add(u32::from(input.u8()) * 8),
                _ => bases[i].wrapping_sub(u32::from(input.u8())),
            };
            f.bases = u32s_to_le(&bases);
        }
        7 => {
            // The lookup table of another matrix (possibly of the other element type).
            let other = encode_spec(&read_spec(&mut Input::new(&input.bytes(24))));
            f.lut = u32s_to_le(&other.matrix.lut);
        }
        8 => return fill_unspecified(f, input),
        9 => {
            // The declared shape may already be a mutated, huge one: bound the new field.
            let rows = f.shape.rows.min(1 << 12) as usize;
            let scale = f
                .scale
                .get_or_insert_with(|| 1.0f32.to_le_bytes().repeat(rows));
            if scale.len() >= 4 {
                let i = 4 * (input.u32() as usize % (scale.len() / 4));
                let value = [
                    0x7FC0_0000u32,
                    0,
                    0x8000_0000,
                    0xBF80_0000,
                    0x7F80_0000,
                    1,
                    input.u32(),
                ][input.below(7)];
                scale[i..i + 4].copy_from_slice(&value.to_le_bytes());
            }
        }
        10 if f.lut.len() >= 4 => {
            let i = 4 * (input.u16() as usize % (f.lut.len() / 4));
            let v = input.u32();
            f.lut[i..i + 4].copy_from_slice(&v.to_le_bytes());
        }
        11 => {
            let streams = f.streams();
            f.relayout(streams);
        }
        12 => {
            let (r, c) = (f.shape.rows, f.shape.cols);
            f.shape = match input.below(5) {
                0 => Shape::new(c, r),
                1 => Shape::new(r, c + 1),
                2 => Shape::new(r + 1, c),
                3 => Shape::new(r.saturating_sub(1), c),
                _ => Shape::new(u64::from(input.u32()), u64::from(input.u32())),
            };
        }
        13 => f.mode = Mode::ALL[input.below(4)],
        _ => {}
    }
    Effect::Any
}

/// Garbage in the bytes spec 9.7 leaves unspecified: alignment gaps between blocks, everything
/// from the stream end on, and the 512-byte raw-plane slack (added if absent).
fn fill_unspecified(f: &mut Fields, input: &mut Input) -> Effect {
    let Ok(g) = Geometry::new(f.mode, f.shape) else {
        return Effect::Any;
    };
    let garbage = input.u8() | 1;
    let mut covered = 0usize;
    for b in 0..f.blocks() {
        let (start, len) = f.block_span(b);
        for byte in &mut f.data[covered.min(start)..start] {
            *byte ^= garbage;
        }
        covered = start + len;
    }
    let tail = covered.min(f.data.len());
    for byte in &mut f.data[tail..] {
        *byte ^= garbage;
    }
    if f.low.len() as u64 == g.n_low {
        f.low
            .extend(std::iter::repeat_n(garbage, RAW_SLACK as usize));
    } else if f.low.len() as u64 == g.n_low + RAW_SLACK {
        for byte in &mut f.low[g.n_low as usize..] {
            *byte ^= garbage;
        }
    }
    Effect::Unspecified
}

/// Applies up to `max` mutations read from the input; returns whether every one of them touched
/// only unspecified bytes.
pub fn mutate(f: &mut Fields, input: &mut Input, max: usize) -> Effect {
    let mut effect = Effect::Unspecified;
    for _ in 0..max {
        if input.is_empty() {
            break;
        }
        if mutate_once(f, input) == Effect::Any {
            effect = Effect::Any;
        }
    }
    effect
}

/// Most mutations applied to one matrix by [`mutated_case`].
pub const MAX_MUTATIONS: usize = 6;

/// One case of the `decode_mutated` target, from its input bytes: the first byte says how many of
/// the following bytes describe the matrix ([`read_spec`]); then, for FP8, a byte whose low bit
/// adds scales; then the mutations. Returns the valid original, the mutated matrix and whether
/// the mutations touched only unspecified bytes.
pub fn mutated_case(data: &[u8]) -> (EncodedMatrix, EncodedMatrix, Effect) {
    let mut input = Input::new(data);
    let spec_len = usize::from(input.u8());
    let spec = read_spec(&mut Input::new(&input.bytes(spec_len)));
    let mut original = encode_spec(&spec).matrix;
    if original.mode.elem == nwc_reference::ElemType::Fp8E4m3 && input.u8() & 1 == 1 {
        original.scale = Some(read_scales(&mut input, original.shape.rows));
    }
    let mut fields = Fields::from_matrix(&original);
    let effect = mutate(&mut fields, &mut input, MAX_MUTATIONS);
    let mutated = fields.to_matrix();
    (original, mutated, effect)
}
