//! Spec 6: the prefix code and how lane streams are packed into 32-bit words.

use bitvec::prelude::*;

/// Spec 6.1-6.3: one code, as its bits right-aligned in `value` (MSB first on the wire).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Code {
    pub value: u32,
    pub len: u8,
}

impl Code {
    /// Spec 6.1: rank r as r zeros, a one, then the sign bit.
    pub fn rank(rank: u8, sign: u8) -> Code {
        Code { value: 0b10 | u32::from(sign), len: rank + 2 }
    }

    /// Spec 6.2: BF16 escape: 15 zeros, a one, then all 8 bits of the high byte.
    pub fn escape(hi: u8) -> Code {
        Code { value: (1 << 8) | u32::from(hi), len: 24 }
    }

    /// Spec 6.3: a position outside the matrix is coded as rank 0 with sign 0.
    pub const FILLER: Code = Code { value: 0b10, len: 2 };
}

/// Spec 6.4: a lane stream being written. Bits go in MSB first: the first bit of the stream is
/// bit 31 of word 0 (bitvec's `Msb0` order on `u32` elements is exactly this). Codes collect in
/// a 64-bit accumulator and go into the bit vector a whole word at a time (appending bit by bit
/// was most of the encoder's time).
#[derive(Default)]
pub struct LaneWriter {
    /// The complete words so far; always a whole number of words long.
    bits: BitVec<u32, Msb0>,
    /// The bits not in `bits` yet, left-aligned (the next stream bit is bit 63).
    pending: u64,
    /// How many bits of `pending` are in use (below 32 between calls).
    pending_len: u32,
}

impl LaneWriter {
    pub fn push(&mut self, code: Code) {
        let len = u32::from(code.len);
        debug_assert!((1..=32).contains(&len), "codes are 2 to 24 bits long (spec 6.1, 6.2)");
        // The low `len` bits of `value`, MSB first, placed right after the pending bits.
        let value = u64::from(code.value) & ((1u64 << len) - 1);
        self.pending |= value << (64 - self.pending_len - len);
        self.pending_len += len;
        if self.pending_len >= 32 {
            self.flush_word();
        }
    }

    /// Moves the first 32 pending bits into `bits` as one word.
    fn flush_word(&mut self) {
        let word = (self.pending >> 32) as u32;
        let at = self.bits.len();
        self.bits.resize(at + 32, false);
        self.bits[at..].store_be(word);
        self.pending <<= 32;
        self.pending_len = self.pending_len.saturating_sub(32);
    }

    /// Spec 6.4/6.5: the stream as whole words, the last one padded with zero bits (the pending
    /// bits past the stream end are zero).
    pub fn into_words(mut self) -> Vec<u32> {
        if self.pending_len > 0 {
            self.flush_word();
        }
        self.bits.into_vec()
    }
}

/// What one code read from a stream says (spec 6.1-6.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    /// A rank code: rank, then its sign bit.
    Rank { rank: u8, sign: u8 },
    /// A BF16 escape with the verbatim high byte.
    Escape { hi: u8 },
}

/// Why a code could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadFailure {
    /// The stream ended inside the code (rule 13.11 lane-truncated).
    Truncated,
    /// More leading zeros than any code has (rule 13.15 fp8-rank / 13.20 bf16-escape).
    TooManyZeros { zeros: usize },
}

/// Spec 6.4: a lane stream being read, MSB first. The next bits wait in a 64-bit window, filled
/// from the bit slice a word at a time, so a code costs a few shifts instead of a walk over its
/// bits.
pub struct LaneReader<'a> {
    bits: &'a BitSlice<u32, Msb0>,
    /// Bits consumed so far.
    pos: usize,
    /// The `avail` bits after `pos`, left-aligned (bit 63 is the next stream bit); zero below.
    window: u64,
    avail: u32,
}

impl<'a> LaneReader<'a> {
    pub fn new(words: &'a [u32]) -> LaneReader<'a> {
        LaneReader { bits: words.view_bits::<Msb0>(), pos: 0, window: 0, avail: 0 }
    }

    /// Bits consumed so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The bits not read yet (to check the zero padding, rule 13.13).
    pub fn rest(&self) -> &'a BitSlice<u32, Msb0> {
        &self.bits[self.pos..]
    }

    /// Tops the window up to more than 32 bits, or to the end of the stream. The check is inline:
    /// most calls find the window full enough.
    #[inline]
    fn refill(&mut self) {
        if self.avail <= 32 {
            self.load_words();
        }
    }

    fn load_words(&mut self) {
        while self.avail <= 32 {
            let from = self.pos + self.avail as usize;
            let n = (self.bits.len() - from).min(32);
            if n == 0 {
                return;
            }
            let chunk = u64::from(self.bits[from..from + n].load_be::<u32>());
            self.window |= chunk << (64 - self.avail - n as u32);
            self.avail += n as u32;
        }
    }

    /// Consumes `n` bits (from the window when it holds them).
    #[inline]
    fn skip(&mut self, n: usize) {
        if n < self.avail as usize {
            self.window <<= n;
            self.avail -= n as u32;
        } else {
            self.window = 0;
            self.avail = 0;
        }
        self.pos += n;
    }

    /// The next `n` bits (at most 32) as a number, MSB first.
    #[inline]
    fn take(&mut self, n: u32) -> Result<u32, ReadFailure> {
        self.refill();
        if n > self.avail {
            return Err(ReadFailure::Truncated);
        }
        let v = (self.window >> (64 - n)) as u32;
        self.skip(n as usize);
        Ok(v)
    }

    /// Reads one code. `rank_limit` is R of spec 10.2: 15 for BF16 (rank 15 means escape), 10 for
    /// FP8 (which has no escape).
    #[inline]
    pub fn read(&mut self, rank_limit: usize, has_escape: bool) -> Result<Read, ReadFailure> {
        self.refill();
        let max_zeros = if has_escape { rank_limit } else { rank_limit - 1 };
        let in_window = (self.window.leading_zeros()).min(self.avail) as usize;
        // A one inside the window ends the run of zeros; otherwise count the zeros of the whole
        // rest (an error, or a test's rank limit longer than the window).
        let (zeros, ended) = if in_window < self.avail as usize {
            (in_window, true)
        } else {
            let rest = self.rest();
            let zeros = rest.leading_zeros();
            (zeros, zeros < rest.len())
        };
        if zeros > max_zeros {
            return Err(ReadFailure::TooManyZeros { zeros });
        }
        if !ended {
            return Err(ReadFailure::Truncated);
        }
        self.skip(zeros + 1); // the zeros and the terminating one
        if has_escape && zeros == rank_limit {
            return Ok(Read::Escape { hi: self.take(8)? as u8 });
        }
        let sign = self.take(1)? as u8;
        Ok(Read::Rank { rank: zeros as u8, sign })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_bit_is_bit_31_of_word_0() {
        let mut w = LaneWriter::default();
        w.push(Code::rank(0, 1)); // 11
        w.push(Code::rank(2, 0)); // 0010
        w.push(Code::FILLER); // 10
        assert_eq!(w.into_words(), vec![0b1100_1010u32 << 24]);
    }

    #[test]
    fn escape_round_trips_across_a_word_boundary() {
        let mut w = LaneWriter::default();
        for _ in 0..10 {
            w.push(Code::rank(1, 0));
        }
        w.push(Code::escape(0xC1));
        w.push(Code::rank(14, 1));
        let words = w.into_words();
        assert_eq!(words.len(), 3); // 10 x 3 + 24 + 16 = 70 bits
        let mut r = LaneReader::new(&words);
        for _ in 0..10 {
            assert_eq!(r.read(15, true), Ok(Read::Rank { rank: 1, sign: 0 }));
        }
        assert_eq!(r.read(15, true), Ok(Read::Escape { hi: 0xC1 }));
        assert_eq!(r.read(15, true), Ok(Read::Rank { rank: 14, sign: 1 }));
        assert!(r.rest().not_any());
    }

    /// The reader's 64-bit window is refilled a word at a time: a long stream of mixed codes
    /// crosses every bit offset of a word boundary.
    #[test]
    fn long_streams_round_trip() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let expected: Vec<Read> = (0..2000)
            .map(|_| {
                let r = next();
                match r % 16 {
                    15 => Read::Escape { hi: (r >> 8) as u8 },
                    rank => Read::Rank { rank: rank as u8, sign: (r >> 8) as u8 & 1 },
                }
            })
            .collect();
        let mut w = LaneWriter::default();
        for &code in &expected {
            w.push(match code {
                Read::Escape { hi } => Code::escape(hi),
                Read::Rank { rank, sign } => Code::rank(rank, sign),
            });
        }
        let words = w.into_words();
        let mut r = LaneReader::new(&words);
        for (i, &code) in expected.iter().enumerate() {
            assert_eq!(r.read(15, true), Ok(code), "code {i}");
        }
        assert!(r.position() > 32 * (words.len() - 1) && r.rest().not_any());
    }

    #[test]
    fn too_many_zeros_and_truncation() {
        let words = [0u32, 0];
        assert_eq!(LaneReader::new(&words).read(15, true), Err(ReadFailure::TooManyZeros { zeros: 64 }));
        let words = [0b0000_0000_0010_0000u32 << 16]; // ten zeros then 1: rank 10
        assert_eq!(LaneReader::new(&words).read(10, false), Err(ReadFailure::TooManyZeros { zeros: 10 }));
        let words = [1u32]; // 31 zeros, then the one as the very last bit
        assert_eq!(LaneReader::new(&words).read(15, true), Err(ReadFailure::TooManyZeros { zeros: 31 }));
        let words = [1u32]; // 31 zeros, a one, then nothing left for the sign
        assert_eq!(LaneReader::new(&words).read(40, false), Err(ReadFailure::Truncated));
    }
}
