//! Spec 6.4: lane streams are written MSB first into 32-bit words, stored little-endian.

/// Writes one lane stream into a fixed buffer (a lane has at most 192 words, spec 6.6).
pub struct BitWriter {
    words: [u32; 256],
    n: usize,
    acc: u64,
    pending: u32,
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

impl BitWriter {
    pub fn new() -> Self {
        BitWriter { words: [0; 256], n: 0, acc: 0, pending: 0 }
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
        self.pending += len;
        let full = (self.pending >= 32) as u32;
        self.pending -= 32 * full;
        self.words[self.n & 255] = (self.acc >> self.pending) as u32;
        self.n += full as usize;
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

    /// Sixteen fillers (32 bits) at once.
    #[inline(always)]
    pub fn push_sixteen_fillers(&mut self) {
        self.acc = (self.acc << 32) | u64::from(SIXTEEN_FILLERS);
        self.words[self.n & 255] = (self.acc >> self.pending) as u32;
        self.n += 1;
    }

    /// Spec 6.5: pads the last word with zero bits, appends the stream to `out` as little-endian
    /// words and returns its length in words.
    pub fn finish(mut self, out: &mut Vec<u8>) -> usize {
        if self.pending > 0 {
            self.words[self.n & 255] = (self.acc << (32 - self.pending)) as u32;
            self.n += 1;
        }
        out.reserve(4 * self.n);
        for w in &self.words[..self.n.min(256)] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        self.n
    }
}

impl Default for BitWriter {
    fn default() -> Self {
        Self::new()
    }
}

/// Any lane-level rule broken; the caller asks the reference decoder which one (and where).
#[derive(Debug)]
pub struct Broken;

/// Reads one lane stream through a 64-bit window (the next unread bit is bit 63). The lane's words
/// are first copied into a local buffer followed by zero words, so refilling needs no branch and
/// no bounds check; whether the codes overran the stream (rule 13.11) is decided once, at the end,
/// from the number of bits consumed.
pub struct BitReader {
    buf: [u32; 256],
    words: usize,
    next: usize,
    window: u64,
    avail: u32,
}

impl BitReader {
    pub fn new() -> Self {
        BitReader { buf: [0; 256], words: 0, next: 0, window: 0, avail: 0 }
    }

    /// Starts a lane: `bytes` are its 4 * hdr bytes (at most 192 words, rule 13.8).
    #[inline(always)]
    pub fn start(&mut self, bytes: &[u8]) {
        let n = (bytes.len() / 4).min(250);
        for (w, c) in self.buf[..n].iter_mut().zip(bytes.chunks_exact(4)) {
            *w = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        }
        // Two zero words after the stream: all a valid lane can load beyond its end.
        self.buf[n] = 0;
        self.buf[n + 1] = 0;
        self.words = n;
        self.next = 0;
        self.window = 0;
        self.avail = 0;
        self.refill();
        self.refill();
    }

    /// Loads one word when the window has room for it; afterwards at least 32 bits are available.
    #[inline(always)]
    fn refill(&mut self) {
        let need = u32::from(self.avail <= 32);
        let word = u64::from(self.buf[self.next & 255]);
        let mask = 0u64.wrapping_sub(u64::from(need));
        self.window |= (word << (32u32.wrapping_sub(self.avail) & 63)) & mask;
        self.avail += 32 * need;
        self.next += need as usize;
    }

    #[inline(always)]
    fn consume(&mut self, len: u32) {
        self.window <<= len;
        self.avail -= len;
    }

    /// Spec 10.3: the next 12 bits, the index into the lookup table.
    #[inline(always)]
    pub fn peek12(&mut self) -> usize {
        self.refill();
        (self.window >> 52) as usize
    }

    /// Consumes `len` (at most 24) bits already decoded from the table.
    #[inline(always)]
    pub fn skip(&mut self, len: u32) {
        self.consume(len);
    }

    /// Spec 6.1, 6.2: one code. Returns (rank, sign) for a rank code, or (15, high byte) for a BF16
    /// escape; ranks run to 14 for BF16 (15 is the escape) and to 9 for FP8 (no escape).
    #[inline(always)]
    pub fn read(&mut self, escape: bool) -> Result<(u32, u32), Broken> {
        self.refill();
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
    pub fn finish(&self) -> Result<(), Broken> {
        let consumed = 32 * self.next as u64 - u64::from(self.avail);
        let total = 32 * self.words as u64;
        if consumed <= total && consumed.div_ceil(32) == self.words as u64 && self.window == 0 {
            Ok(())
        } else {
            Err(Broken)
        }
    }
}

impl Default for BitReader {
    fn default() -> Self {
        Self::new()
    }
}
