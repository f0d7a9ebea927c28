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
/// bit 31 of word 0 (bitvec's `Msb0` order on `u32` elements is exactly this).
#[derive(Default)]
pub struct LaneWriter {
    bits: BitVec<u32, Msb0>,
}

impl LaneWriter {
    pub fn push(&mut self, code: Code) {
        let value = code.value.view_bits::<Msb0>();
        self.bits.extend_from_bitslice(&value[32 - usize::from(code.len)..]);
    }

    /// Spec 6.4/6.5: the stream as whole words, the last one padded with zero bits (bitvec keeps
    /// unused bits of the last element zero as long as we only append).
    pub fn into_words(mut self) -> Vec<u32> {
        self.bits.set_uninitialized(false);
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

/// Spec 6.4: a lane stream being read, MSB first.
pub struct LaneReader<'a> {
    bits: &'a BitSlice<u32, Msb0>,
    pos: usize,
}

impl<'a> LaneReader<'a> {
    pub fn new(words: &'a [u32]) -> LaneReader<'a> {
        LaneReader { bits: words.view_bits::<Msb0>(), pos: 0 }
    }

    /// Bits consumed so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The bits not read yet (to check the zero padding, rule 13.13).
    pub fn rest(&self) -> &'a BitSlice<u32, Msb0> {
        &self.bits[self.pos..]
    }

    fn take(&mut self, n: usize) -> Result<u32, ReadFailure> {
        let end = self.pos + n;
        if end > self.bits.len() {
            return Err(ReadFailure::Truncated);
        }
        let v = self.bits[self.pos..end].load_be::<u32>();
        self.pos = end;
        Ok(v)
    }

    /// Reads one code. `rank_limit` is R of spec 10.2: 15 for BF16 (rank 15 means escape), 10 for
    /// FP8 (which has no escape).
    pub fn read(&mut self, rank_limit: usize, has_escape: bool) -> Result<Read, ReadFailure> {
        let rest = &self.bits[self.pos..];
        let zeros = rest.leading_zeros();
        let max_zeros = if has_escape { rank_limit } else { rank_limit - 1 };
        if zeros > max_zeros {
            return Err(ReadFailure::TooManyZeros { zeros });
        }
        if zeros == rest.len() {
            return Err(ReadFailure::Truncated);
        }
        self.pos += zeros + 1; // the zeros and the terminating one
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
