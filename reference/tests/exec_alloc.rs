//! Spec 20.16 (memory): the execution-layout decoder allocates its output (2 bytes a weight) and
//! a small constant (an error report), nothing sized by `esc_start` or `esc`, and nothing at all
//! before the fixed-size rules pass. Measured with a per-thread counting allocator, as
//! `regressions.rs` does for format 10.

use nwc_reference::exec::{decode_exec, encode_exec};
use nwc_reference::Shape;
mod counting_alloc;
use counting_alloc::peak_during;

/// Error text and the like.
const CONSTANT_BYTES: usize = 1024;

#[test]
fn exec_decoder_allocates_output_plus_constant() {
    for (rows, cols) in [(4096, 1), (1, 4096), (40, 1100), (17, 33)] {
        let shape = Shape::new(rows, cols);
        let n = (rows * cols) as usize;
        // Every third weight far outside the window: many escapes, so `esc` is large.
        let words: Vec<u16> = (0..n).map(|i| if i % 3 == 0 { 0x7000 + i as u16 % 64 } else { 0x3F00 + i as u16 % 64 }).collect();
        let m = encode_exec(shape, &words).unwrap();
        // One weight a row always fits its row's window; wider rows escape every third weight.
        assert!(cols == 1 || m.esc.len() > n / 4);
        let (d, peak) = peak_during(|| decode_exec(&m));
        assert_eq!(d.unwrap().words, words);
        assert!(peak <= 2 * n + CONSTANT_BYTES, "{shape}: peak {peak} for {n} weights");
        // Broken in the last rule: the output was allocated, then dropped with the error.
        if let Some(last) = m.esc.len().checked_sub(1) {
            let mut bad = m.clone();
            bad.esc[last] = 0;
            let (r, peak) = peak_during(|| decode_exec(&bad));
            assert_eq!(r.unwrap_err().to_string().split(' ').next(), Some("exec-escape-in-window"));
            assert!(peak <= 2 * n + CONSTANT_BYTES, "{shape}: peak {peak} for {n} weights");
        }
        // Broken in a fixed-size rule: nothing sized by the shape is allocated.
        let mut bad = m.clone();
        bad.base[0] = 0;
        let (r, peak) = peak_during(|| decode_exec(&bad));
        assert!(r.is_err());
        assert!(peak <= CONSTANT_BYTES, "{shape}: peak {peak} before any output");
    }
}
