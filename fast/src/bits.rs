//! Spec 6.4: lane streams are written MSB first into 32-bit words, stored little-endian.

/// Writes one lane stream straight into a byte buffer.
pub struct BitWriter<'a> {
    out: &'a mut Vec<u8>,
    acc: u64,
    pending: u32,
    start: usize,
}

/// A code packed as `bits << 5 | length` (length 2..=24, spec 6.1 - 6.3).
pub type Packed = u32;

pub const fn pack(bits: u32, len: u32) -> Packed {
    (bits << 5) | len
}

/// Spec 6.3: a filler is `10`.
pub const FILLER: Packed = pack(0b10, 2);
/// Sixteen fillers in a row are exactly one word of `1010...`.
pub const SIXTEEN_FILLERS: u32 = 0xAAAA_AAAA;

impl<'a> BitWriter<'a> {
    pub fn new(out: &'a mut Vec<u8>) -> Self {
        let start = out.len();
        BitWriter { out, acc: 0, pending: 0, start }
    }

    #[inline(always)]
    pub fn push(&mut self, code: Packed) {
        let len = code & 31;
        // pending < 32 and len <= 24, so the accumulator never needs more than 56 bits.
        self.acc = (self.acc << len) | u64::from(code >> 5);
        self.pending += len;
        if self.pending >= 32 {
            self.pending -= 32;
            self.out.extend_from_slice(&((self.acc >> self.pending) as u32).to_le_bytes());
        }
    }

    /// Sixteen fillers (32 bits) at once.
    #[inline(always)]
    pub fn push_sixteen_fillers(&mut self) {
        self.acc = (self.acc << 32) | u64::from(SIXTEEN_FILLERS);
        self.out.extend_from_slice(&((self.acc >> self.pending) as u32).to_le_bytes());
    }

    /// Spec 6.5: pads the last word with zero bits; returns the stream length in words.
    pub fn finish(self) -> usize {
        if self.pending > 0 {
            let word = (self.acc << (32 - self.pending)) as u32;
            self.out.extend_from_slice(&word.to_le_bytes());
        }
        (self.out.len() - self.start) / 4
    }
}

/// Any lane-level rule broken; the caller asks the reference decoder which one (and where).
#[derive(Debug)]
pub struct Broken;

/// Reads one lane stream through a 64-bit window (the next unread bit is bit 63).
pub struct BitReader<'a> {
    words: &'a [u8],
    next: usize,
    window: u64,
    valid: u32,
}

impl<'a> BitReader<'a> {
    /// `words`: the lane's 4 * hdr bytes.
    pub fn new(words: &'a [u8]) -> Self {
        let mut r = BitReader { words, next: 0, window: 0, valid: 0 };
        r.refill();
        r.refill();
        r
    }

    /// Loads one more word if the window has room (keeps at least 33 valid bits while words remain,
    /// more than the longest code, 24 bits).
    #[inline(always)]
    fn refill(&mut self) {
        if self.valid <= 32 && self.next < self.words.len() {
            let w = &self.words[self.next..self.next + 4];
            let word = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            self.window |= u64::from(word) << (32 - self.valid);
            self.valid += 32;
            self.next += 4;
        }
    }

    #[inline(always)]
    fn consume(&mut self, len: u32) {
        self.window <<= len;
        self.valid -= len;
    }

    /// Spec 6.1, 6.2: one code. Returns (rank, sign) for a rank code, or (15, high byte) for a BF16
    /// escape. `max_rank` is 14 for BF16 (15 is the escape) and 9 for FP8 (no escape).
    #[inline(always)]
    pub fn read(&mut self, escape: bool) -> Result<(u32, u32), Broken> {
        self.refill();
        let zeros = self.window.leading_zeros();
        let limit = if escape { 15 } else { 10 };
        if zeros < limit {
            let len = zeros + 2;
            if len > self.valid {
                return Err(Broken); // lane-truncated
            }
            let sign = ((self.window >> (62 - zeros)) & 1) as u32;
            self.consume(len);
            Ok((zeros, sign))
        } else if escape && zeros == 15 {
            if 24 > self.valid {
                return Err(Broken);
            }
            let hi = ((self.window >> 40) & 0xFF) as u32;
            self.consume(24);
            Ok((15, hi))
        } else {
            Err(Broken) // bf16-escape / fp8-rank (too many zeros) or truncated
        }
    }

    /// Rules 13.12, 13.13: the codes used every word the header counts (fewer than 32 bits left)
    /// and the bits after the last code are zero.
    pub fn finish(&self) -> Result<(), Broken> {
        if self.next == self.words.len() && self.valid < 32 && self.window == 0 {
            Ok(())
        } else {
            Err(Broken)
        }
    }
}
