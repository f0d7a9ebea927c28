//! Spec 6.4: lane streams are written MSB first into 32-bit words, stored little-endian.

/// Writes one lane stream into a fixed buffer of little-endian words (a lane has at most 192
/// words, spec 6.6). The buffer is borrowed, not owned, so that the writer itself is a few scalars
/// the compiler keeps in registers, and so that it is not zeroed for every lane.
pub struct BitWriter<'a> {
    words: &'a mut [u8; 4 * 256],
    n: usize,
    acc: u64,
    pending: u32,
}

/// A code packed as `bits << 5 | length` (length 2..=24, spec 6.1 - 6.3).
pub type Packed = u32;

pub const fn pack(bits: u32, len: u32) -> Packed {
    (bits << 5) | len
}

/// The codes of two consecutive BF16 weights (spec 6.1), as `bits << 8 | escape << 7 | length`.
/// Both rank codes together are at most 32 bits long, and their bits without the first code's
/// leading zeros at most 18 bits wide (`1 s`, then the second code), so one `u32` holds them.
/// Pairs with an escape (spec 6.2) only carry the [`PAIR_ESCAPE`] flag.
pub type PairCode = u32;
pub const PAIR_LEN_MASK: u32 = 0x3F;
pub const PAIR_ESCAPE: u32 = 0x80;
pub const PAIR_BITS_SHIFT: u32 = 8;

/// The pair code of the codes `first`, `second` (neither an escape: at most 16 bits each).
pub const fn pair_code(first: Packed, second: Packed) -> PairCode {
    let (l0, l1) = (first & 31, second & 31);
    (((first >> 5) << l1 | (second >> 5)) << PAIR_BITS_SHIFT) | (l0 + l1)
}

/// Spec 6.3: a filler is `10`.
pub const FILLER: Packed = pack(0b10, 2);
/// Sixteen fillers in a row are exactly one word of `1010...`.
pub const SIXTEEN_FILLERS: u32 = 0xAAAA_AAAA;

impl<'a> BitWriter<'a> {
    /// A writer at the start of `words` (whose contents do not matter).
    #[inline(always)]
    pub fn new(words: &'a mut [u8; 4 * 256]) -> Self {
        BitWriter { words, n: 0, acc: 0, pending: 0 }
    }

    /// Appends one code. Branch-free: the word at `n` is always written and `n` advances only
    /// when 32 bits are complete (a partial word is rewritten by later pushes or by `finish`).
    #[inline(always)]
    pub fn push(&mut self, code: Packed) {
        // pending < 32 and len <= 24, so the accumulator never needs more than 56 bits.
        self.append(u64::from(code >> 5), code & 31);
    }

    /// Appends `len` <= 32 bits (right-aligned in `bits`) and stores the word they complete, if
    /// any: the word slot is always written, and only counted once it is full.
    #[inline(always)]
    fn append(&mut self, bits: u64, len: u32) {
        self.acc = (self.acc << len) | bits;
        self.pending += len; // below 64
                             // With 32 or more bits pending, the word is the top 32 of them and `pending & 31` stay;
                             // with fewer, the slot gets a partial word that a later store replaces.
        self.put((self.acc >> (self.pending & 31)) as u32);
        self.n += (self.pending >> 5) as usize;
        self.pending &= 31;
    }

    /// Two codes at once: one shift-or instead of two when both fit in 32 bits (the usual case;
    /// long codes and escapes go one by one). Same bits as `push(a); push(b)`.
    #[inline(always)]
    pub fn push2(&mut self, a: Packed, b: Packed) {
        let (la, lb) = (a & 31, b & 31);
        let len = la + lb;
        if len > 32 {
            self.push(a);
            self.push(b);
            return;
        }
        self.append((u64::from(a >> 5) << lb) | u64::from(b >> 5), len);
    }

    /// Four codes at once when together they fit in 32 bits, else two pairs.
    #[inline(always)]
    pub fn push4(&mut self, c: [Packed; 4]) {
        let lens = [c[0] & 31, c[1] & 31, c[2] & 31, c[3] & 31];
        let len = lens[0] + lens[1] + lens[2] + lens[3];
        if len > 32 {
            self.push2(c[0], c[1]);
            self.push2(c[2], c[3]);
            return;
        }
        let lo = (u64::from(c[2] >> 5) << lens[3]) | u64::from(c[3] >> 5);
        let hi = (u64::from(c[0] >> 5) << lens[1]) | u64::from(c[1] >> 5);
        self.append((hi << (lens[2] + lens[3])) | lo, len);
    }

    /// Two [`PairCode`]s (four codes) at once: one shift-or when together they fit in 32 bits (the
    /// usual case), else one append per pair. Neither may be an escape pair.
    #[inline(always)]
    pub fn push_pairs(&mut self, a: PairCode, b: PairCode) {
        let (la, lb) = (a & PAIR_LEN_MASK, b & PAIR_LEN_MASK);
        let (ba, bb) = (u64::from(a >> PAIR_BITS_SHIFT), u64::from(b >> PAIR_BITS_SHIFT));
        if la + lb > 32 {
            self.append(ba, la);
            self.append(bb, lb);
            return;
        }
        self.append((ba << lb) | bb, la + lb);
    }

    /// Sixteen fillers (32 bits) at once.
    #[inline(always)]
    pub fn push_sixteen_fillers(&mut self) {
        self.acc = (self.acc << 32) | u64::from(SIXTEEN_FILLERS);
        self.put((self.acc >> self.pending) as u32);
        self.n += 1;
    }

    /// Stores `word` at word slot `n` (spec 6.4: little-endian).
    #[inline(always)]
    fn put(&mut self, word: u32) {
        let at = 4 * (self.n & 255);
        self.words[at..at + 4].copy_from_slice(&word.to_le_bytes());
    }

    /// Spec 6.5: pads the last word with zero bits, appends the stream to `out` and returns its
    /// length in words.
    #[inline]
    pub fn finish(mut self, out: &mut Vec<u8>) -> usize {
        if self.pending > 0 {
            self.put((self.acc << (32 - self.pending)) as u32);
            self.n += 1;
        }
        out.extend_from_slice(&self.words[..4 * self.n.min(256)]);
        self.n
    }
}

/// Any lane-level rule broken; the caller asks the reference decoder which one (and where).
#[derive(Debug)]
pub struct Broken;

/// Longest lane the reader holds: rule 13.8 caps a lane at 192 words, `check_structure` enforces it.
const MAX_LANE_BYTES: usize = 4 * 250;
/// Zero bytes kept after a lane: a refill loads 8 bytes, and a lane whose codes run past its end
/// reads at most one code (24 bits) of them before it fails.
const LANE_PAD: usize = 16;

/// One lane stream, ready to be read MSB first by a [`Cursor`].
///
/// The lane's 32-bit little-endian words (spec 6.4) are copied once into this buffer as one
/// big-endian byte stream followed by zero bytes, so a refill is one unaligned 8-byte load at the
/// byte holding the next bit and one shift, with no branch and no bounds check. Whether the codes
/// overran the stream (rule 13.11) is decided once, at the end, from the bits consumed.
pub struct LaneBuf {
    buf: [u8; MAX_LANE_BYTES + LANE_PAD],
    /// Lane length in bytes (4 * its hdr word count).
    len: usize,
    /// A lane longer than the buffer (never after `check_structure`): it fails at `finish`.
    too_long: bool,
}

impl LaneBuf {
    pub fn new() -> Self {
        LaneBuf { buf: [0; MAX_LANE_BYTES + LANE_PAD], len: 0, too_long: false }
    }

    /// Loads a lane: `bytes` are its 4 * hdr bytes (at most 192 words, rule 13.8). Returns the
    /// cursor at its first bit.
    #[inline(always)]
    pub fn start(&mut self, bytes: &[u8]) -> Cursor {
        let n = bytes.len().min(MAX_LANE_BYTES) & !3;
        for (d, c) in self.buf[..n].chunks_exact_mut(4).zip(bytes.chunks_exact(4)) {
            d.copy_from_slice(&[c[3], c[2], c[1], c[0]]); // spec 6.4: MSB first in LE words
        }
        self.buf[n..n + LANE_PAD].fill(0);
        self.len = n;
        self.too_long = bytes.len() > n;
        let mut c = Cursor { pos: 0, window: 0 };
        c.refill(self);
        c
    }
}

impl Default for LaneBuf {
    fn default() -> Self {
        Self::new()
    }
}

/// The read position in a [`LaneBuf`]: the number of bits consumed and a 64-bit window whose bit
/// 63 is the next unread bit. Two scalars and `Copy`, so that the decoder keeps the cursors of
/// several lanes in registers.
#[derive(Clone, Copy, Default)]
pub struct Cursor {
    /// Bits consumed from the start of the lane.
    pos: usize,
    window: u64,
}

impl Cursor {
    /// Reloads the window from the lane at `pos`: afterwards it holds the next 64 - (pos mod 8)
    /// >= 57 stream bits (zero padding included) followed by zeros.
    #[inline(always)]
    pub fn refill(&mut self, lane: &LaneBuf) {
        let at = (self.pos >> 3).min(MAX_LANE_BYTES + LANE_PAD - 8);
        let bytes: [u8; 8] = lane.buf[at..at + 8].try_into().expect("8 bytes");
        self.window = u64::from_be_bytes(bytes) << (self.pos & 7);
    }

    #[inline(always)]
    fn consume(&mut self, len: u32) {
        self.window <<= len;
        self.pos += len as usize;
    }

    /// One step through a [`MultiTable`]: looks up the next `WINDOW` bits and consumes the codes
    /// the entry holds (none when it has none). Returns the entry. At most [`STEPS_PER_REFILL`]
    /// steps may follow a refill (or a [`Cursor::read`], which refills).
    #[inline(always)]
    pub fn step(&mut self, table: &MultiTable) -> u32 {
        let e = table.entries[(self.window >> (64 - WINDOW)) as usize];
        self.consume(entry_bits(e));
        e
    }

    /// Spec 6.1, 6.2: one code. Returns (rank, sign) for a rank code, or (15, high byte) for a BF16
    /// escape; ranks run to 14 for BF16 (15 is the escape) and to 9 for FP8 (no escape).
    #[inline(always)]
    pub fn read(&mut self, lane: &LaneBuf, escape: bool) -> Result<(u32, u32), Broken> {
        self.refill(lane);
        let zeros = self.window.leading_zeros();
        let limit = if escape { 15 } else { 10 };
        if zeros < limit {
            let sign = ((self.window >> (62 - zeros)) & 1) as u32;
            self.consume(zeros + 2);
            Ok((zeros, sign))
        } else if escape && zeros == 15 {
            let hi = ((self.window >> 40) & 0xFF) as u32;
            self.consume(24);
            Ok((15, hi))
        } else {
            Err(Broken) // bf16-escape / fp8-rank (too many zeros), or ran past the end
        }
    }

    /// Rules 13.11 - 13.13: the codes ended inside the stream (not past it), used every word the
    /// header counts, and the bits after the last code are zero.
    pub fn finish(mut self, lane: &LaneBuf) -> Result<(), Broken> {
        self.refill(lane); // the window now holds the next 57 or more stream bits, padding included
        let consumed = self.pos as u64;
        let total = 8 * lane.len as u64;
        if !lane.too_long && consumed <= total && consumed.div_ceil(32) == total / 32 && self.window == 0 {
            Ok(())
        } else {
            Err(Broken)
        }
    }
}

/// Bits of the window a [`MultiTable`] looks at.
pub const WINDOW: u32 = 12;
/// Most codes one table entry holds.
pub const MULTI: usize = 3;
/// Table steps between refills. A refill leaves at least 57 valid bits; a table step consumes at
/// most `WINDOW` bits and a `read` (which refills first) at most 24, the BF16 escape.
pub const STEPS_PER_REFILL: usize = 3;
const _: () = assert!(STEPS_PER_REFILL as u32 * WINDOW <= 57 && 24 + (STEPS_PER_REFILL as u32 - 1) * WINDOW <= 57);

/// Bits consumed by the codes of a table entry.
#[inline(always)]
pub fn entry_bits(e: u32) -> u32 {
    e >> 26
}

/// Number of codes in a table entry (0: the next code is not complete in the window, or invalid).
#[inline(always)]
pub fn entry_count(e: u32) -> usize {
    ((e >> 24) & 3) as usize
}

/// Decodes up to [`MULTI`] codes per look-up (spec 6.1): for each value of the next [`WINDOW`]
/// bits, the bytes of the rank codes complete in it, their number and their total length, as
/// `bits << 26 | count << 24 | byte2 << 16 | byte1 << 8 | byte0`. Built once per matrix from its
/// exp_of_rank (4096 entries, 16 KB: it stays in the L1 cache). The format's own table (spec 10.3)
/// looks at the same 12 bits but holds two codes at most; a Gaussian-like matrix averages about
/// 3.6 bits per code, so three codes often fit. Escapes, long codes (more than 12 bits) and broken
/// codes are left to [`Cursor::read`].
pub struct MultiTable {
    entries: [u32; 1 << WINDOW],
}

impl MultiTable {
    /// `byte[2 * rank + sign]` is the byte of a rank code; ranks above `max_rank` are invalid.
    pub fn new(byte: &[u8; 32], max_rank: u32) -> MultiTable {
        let mut entries = [0u32; 1 << WINDOW];
        for (v, entry) in (0u32..).zip(entries.iter_mut()) {
            let (mut bits, mut count, mut packed) = (0u32, 0u32, 0u32);
            while (count as usize) < MULTI {
                // The unread bits of v, at the top of a u32.
                let rest = (v << (32 - WINDOW)) << bits;
                let zeros = rest.leading_zeros();
                if zeros > max_rank || bits + zeros + 2 > WINDOW {
                    break;
                }
                let sign = (rest >> (30 - zeros)) & 1;
                packed |= u32::from(byte[(2 * zeros + sign) as usize]) << (8 * count);
                bits += zeros + 2;
                count += 1;
            }
            *entry = bits << 26 | count << 24 | packed;
        }
        MultiTable { entries }
    }
}
