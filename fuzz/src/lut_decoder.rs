//! A second decoding path for the differential target: codes are read through the 4096-entry
//! lookup table, one 12-bit window at a time (spec 10.1), the way a GPU kernel reads them, instead
//! of bit by bit as the reference decoder does (spec 6). It shares with the reference only the
//! map from codes to positions (`tiling::LanePositions`) and the raw-slot reader.
//!
//! It checks nothing: it must only be given matrices that `nwc_reference::decode` accepted. Its
//! output is dequant output (spec 15.2): M rows of K16 BF16 words, pad columns included.

use nwc_reference::geometry::LANES;
use nwc_reference::lut::PARTIAL;
use nwc_reference::tiling::{read_raw, LanePositions};
use nwc_reference::{ElemType, EncodedMatrix, Geometry};

/// Reads a lane stream MSB first (spec 6.4) from its little-endian words in `data`.
struct Bits<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Bits<'_> {
    /// Word `i` of the lane; the table window may look past the lane end, and those bits (never
    /// used) read as zero.
    fn word(&self, i: usize) -> u64 {
        match self.bytes.get(4 * i..4 * i + 4) {
            Some(w) => u64::from(u32::from_le_bytes([w[0], w[1], w[2], w[3]])),
            None => 0,
        }
    }

    /// The next `n` bits (1 to 32), MSB first, from the two words they can span.
    fn peek(&self, n: usize) -> u32 {
        let (word, within) = (self.pos / 32, self.pos % 32);
        let both = ((self.word(word) << 32) | self.word(word + 1)) << within;
        (both >> (64 - n)) as u32
    }

    fn take(&mut self, n: usize) -> u32 {
        let v = self.peek(n);
        self.pos += n;
        v
    }
}

/// The table byte of rank 11..14, which entries 0 and 1 carry (spec 10.1).
fn long_rank_byte(lut: &[u32], rank: usize) -> u32 {
    let entry = lut[(rank - 11) / 2];
    (entry >> (8 + 8 * ((rank - 11) % 2))) & 0xFF
}

/// Decodes the codes of one lane into (sign << 7 | symbol byte) values, in stream order.
fn lane_bytes(m: &EncodedMatrix, bits: &mut Bits, codes: usize) -> Vec<u32> {
    let mut out = Vec::with_capacity(codes);
    while out.len() < codes {
        let window = bits.peek(12);
        let entry = m.lut[window as usize];
        let len = (entry & 0xFF) as usize;
        if entry & PARTIAL == 0 {
            // Two complete codes in the window. If only one is wanted, its length is the run of
            // zeros plus two.
            out.push((entry >> 8) & 0xFF);
            if out.len() < codes {
                out.push((entry >> 16) & 0xFF);
                bits.pos += len;
            } else {
                bits.pos += window.leading_zeros() as usize - 20 + 2;
            }
        } else if entry & (1 << 24) != 0 {
            out.push((entry >> 8) & 0xFF);
            bits.pos += len;
        } else {
            // No complete code in 12 bits: rank 11..14 or (BF16) an escape.
            let mut zeros = 0;
            while bits.take(1) == 0 {
                zeros += 1;
            }
            if m.mode.elem == ElemType::Bf16 && zeros == 15 {
                out.push(bits.take(8));
            } else {
                let sign = bits.take(1);
                out.push((sign << 7) | long_rank_byte(&m.lut, zeros));
            }
        }
    }
    out
}

/// Dequant output (spec 15.2) of a matrix the reference decoder accepted.
pub fn lut_dequant(m: &EncodedMatrix) -> Vec<u16> {
    let g = Geometry::new(m.mode, m.shape).expect("only valid matrices come here");
    let mut out = vec![0u16; (m.shape.rows * g.k16) as usize];
    for block in 0..g.blocks {
        let mut start = m.bases[block as usize] as usize;
        for lane in 0..LANES {
            let words = usize::from(m.hdr[block as usize * LANES + lane]);
            let mut bits = Bits {
                bytes: &m.data[start..start + 4 * words],
                pos: 0,
            };
            start += 4 * words;
            let positions = LanePositions::new(&g, block, lane);
            let bytes = lane_bytes(m, &mut bits, positions.len());
            for (p, byte) in positions.zip(bytes) {
                // Pad columns K..K16 of real rows are part of dequant output too.
                if p.row >= m.shape.rows || p.col >= g.k16 {
                    continue;
                }
                let raw = u32::from(p.raw.map_or(0, |slot| read_raw(&m.low, slot)));
                let word = match m.mode.elem {
                    ElemType::Bf16 => (byte << 8) | raw,
                    ElemType::Fp8E4m3 => (byte << 8) | (raw << 4), // spec 15.2: the exact BF16 value
                };
                out[(p.row * g.k16 + p.col) as usize] = word as u16;
            }
        }
    }
    out
}
