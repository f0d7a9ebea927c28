//! Reading fixed-size values from fuzz bytes. Every read succeeds: past the end of the input it
//! yields zeros, so short inputs still describe a whole structure and the fuzzer never wastes
//! executions on "not enough data".

use arbitrary::Unstructured;

/// A cursor over fuzz bytes.
pub struct Input<'a> {
    u: Unstructured<'a>,
}

impl<'a> Input<'a> {
    pub fn new(data: &'a [u8]) -> Input<'a> {
        Input {
            u: Unstructured::new(data),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.u.is_empty()
    }

    pub fn remaining(&self) -> usize {
        self.u.len()
    }

    /// `n` bytes; zeros where the input has run out.
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        let take = n.min(self.u.len());
        let mut out = self.u.bytes(take).map(<[u8]>::to_vec).unwrap_or_default();
        out.resize(n, 0);
        out
    }

    /// Whatever is left.
    pub fn rest(&mut self) -> Vec<u8> {
        let n = self.u.len();
        self.bytes(n)
    }

    pub fn u8(&mut self) -> u8 {
        self.bytes(1)[0]
    }

    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.bytes(2).try_into().expect("2 bytes"))
    }

    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.bytes(4).try_into().expect("4 bytes"))
    }

    pub fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.bytes(8).try_into().expect("8 bytes"))
    }

    /// A value in 0..n (n > 0), from one byte.
    pub fn below(&mut self, n: usize) -> usize {
        usize::from(self.u8()) % n
    }
}

/// Little-endian bytes of u32 values.
pub fn u32s_to_le(values: &[u32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// u32 values from little-endian bytes (a trailing partial value is dropped).
pub fn le_to_u32s(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
