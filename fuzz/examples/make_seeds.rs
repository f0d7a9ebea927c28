//! Writes the committed seed corpora, fuzz/corpus/<target>/seed-*: real encodings of small
//! matrices in all four modes (from the same generators the tests use), in the input format of
//! each target. Run from fuzz/: `cargo run --release --example make_seeds`.
//! (When the golden vectors in vectors/ exist, their matrices can be added the same way through
//! `record::write`.)

use nwc_fuzz::input::Input;
use nwc_fuzz::matrices::{encode_spec, read_spec};
use nwc_fuzz::record;
use std::path::Path;

/// Spec bytes (see `matrices::read_spec`): mode index, rows - 1, cols - 1 (u16), source byte and an
/// 8-byte generator seed.
fn spec_bytes(mode: u8, rows: u8, cols: u16, source: u8, seed: u64) -> Vec<u8> {
    // The top two bits select the full ranges of `read_mode_and_shape`.
    let mut out = vec![mode, 0xC0 | (rows - 1)];
    out.extend((0xC000 | (cols - 1)).to_le_bytes());
    out.push(source);
    out.extend(seed.to_le_bytes());
    out
}

fn write(target: &str, name: &str, bytes: &[u8]) {
    let dir = Path::new("corpus").join(target);
    std::fs::create_dir_all(&dir).expect("create corpus dir");
    std::fs::write(dir.join(format!("seed-{name}")), bytes).expect("write seed");
}

fn main() {
    // (rows, cols): one block, ragged edges, two column blocks, several row blocks.
    let shapes: [(u8, u16); 5] = [(1, 1), (13, 40), (9, 513), (17, 100), (20, 600)];
    let mut specs = Vec::new();
    for mode in 0..4u8 {
        for (i, &(rows, cols)) in shapes.iter().enumerate() {
            // Source byte: generator distribution (source / 4) picked per shape, generator path (% 4 = 0).
            let source = (4 * (i as u8 + mode)) & 0xFC;
            specs.push((
                format!("m{mode}-{rows}x{cols}"),
                spec_bytes(mode, rows, cols, source, 1000 + i as u64),
            ));
        }
    }
    // A few alphabet and raw-byte sources (ties, escapes, fp8 NaN for the round trip).
    specs.push((
        "alphabet-bf16".into(),
        [
            vec![0, 0x84, 47, 0x80, 2, 5],
            (0..10u8).collect(),
            (0..60u8).collect(),
        ]
        .concat(),
    ));
    specs.push((
        "raw-fp8-nan".into(),
        [vec![1, 2, 19, 0, 3], vec![0x7F, 0x10, 0xFF, 0x01]].concat(),
    ));
    specs.push((
        "raw-bf16".into(),
        [vec![2, 0x87, 33, 0x80, 3], (0..=255u8).collect()].concat(),
    ));

    for (name, spec) in &specs {
        write("roundtrip", name, spec);
        let framed = [vec![spec.len() as u8], spec.clone()].concat();
        // differential: spec, scale flag, noise flag, activations.
        write(
            "differential",
            name,
            &[framed.clone(), vec![1, 1], (0..64u8).collect()].concat(),
        );
        // decode_mutated: spec, scale flag, then one mutation per op kind, cycling over the specs.
        let op = (name.len() % 14) as u8;
        write(
            "decode_mutated",
            name,
            &[framed.clone(), vec![1, op, 3, 1, 2, 3, 4, 5, 6, 7, 8]].concat(),
        );
        write("decode_mutated", &format!("{name}-clean"), &framed);
        // decode_arbitrary: the encoding as a record.
        let m = encode_spec(&read_spec(&mut Input::new(spec))).matrix;
        let rec = record::write(&m);
        assert_eq!(
            record::read(&rec).matrix.as_ref(),
            Some(&m),
            "record format must round-trip"
        );
        write("decode_arbitrary", name, &rec);
    }
    // Invalid records: bad mode code, huge declared shape with empty fields.
    write("decode_arbitrary", "bad-mode", &[2, 0, 1, 0, 1, 0]);
    let mut huge = vec![0, record::FLAG_WIDE_SHAPE];
    huge.extend((1u64 << 31).to_le_bytes());
    huge.extend(((1u64 << 31) - 512).to_le_bytes());
    write("decode_arbitrary", "huge-shape", &huge);
}
