//! CPU throughput, side by side in one run: the reference codec, nwc-fast on 1 thread and on all
//! threads, and the 0.10.1 library's host encoder (fetched from PyPI by the test kit).
//!
//! cargo run --release -p nwc-fast --bin nwc-cpu-bench -- [ROWS COLS [REPS]] [--minilm]
//!
//! MB/s counts uncompressed input bytes (2 per BF16 weight, 1 per fp8 weight), best of REPS runs.
//! `--minilm` also runs all 40 matrices of all-MiniLM-L6-v2 (real weights, converted to BF16).

use nwc_reference::{Mode, Shape, Weights};
use nwc_testkit::gen::{le_bytes, Dist, Generator};
use std::time::Instant;

fn best_of<T>(reps: usize, mut f: impl FnMut() -> T) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..reps {
        let t = Instant::now();
        std::hint::black_box(f());
        best = best.min(t.elapsed().as_secs_f64());
    }
    best
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("thread pool")
}

struct Case {
    name: String,
    mode: Mode,
    matrices: Vec<(Shape, Vec<u8>)>, // little-endian input bytes
}

fn row(label: &str, bytes: f64, secs: f64) {
    println!("| {label:<34} | {:>9.1} |", bytes / secs / 1e6);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let minilm = args.iter().any(|a| a == "--minilm");
    let nums: Vec<u64> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let (rows, cols) = (nums.first().copied().unwrap_or(2048), nums.get(1).copied().unwrap_or(4096));
    let reps = nums.get(2).copied().unwrap_or(3) as usize;
    let all = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let one = pool(1);
    let many = pool(all);
    let peer = nwc_testkit::peer::PeerLib::load();
    if let Err(e) = &peer {
        eprintln!("peer library unavailable ({e}); its rows are skipped");
    }

    let mut gen = Generator::new(2024);
    let shape = Shape::new(rows, cols);
    let gauss = gen.bf16(Dist::Gaussian { log2_sigma: -6 }, shape);
    let fp8 = nwc_reference::quantize_fp8(&gauss, shape).expect("finite").0;
    let mut cases = vec![
        Case { name: format!("N(0,2^-6) {shape} BF16 L0"), mode: Mode::BF16_L0, matrices: vec![(shape, le_bytes(&gauss))] },
        Case { name: format!("N(0,2^-6) {shape} BF16 L1"), mode: Mode::BF16_L1, matrices: vec![(shape, le_bytes(&gauss))] },
        Case { name: format!("quantized {shape} FP8 L0"), mode: Mode::FP8_L0, matrices: vec![(shape, fp8)] },
    ];
    if minilm {
        match nwc_testkit::real_weights::fetch_minilm().and_then(|p| nwc_testkit::real_weights::bf16_matrices(&p)) {
            Ok(ms) => cases.push(Case {
                name: format!("all-MiniLM-L6-v2, {} matrices, BF16 L0", ms.len()),
                mode: Mode::BF16_L0,
                matrices: ms.into_iter().map(|m| (m.shape, le_bytes(&m.words))).collect(),
            }),
            Err(e) => eprintln!("MiniLM unavailable: {e}"),
        }
    }

    println!("threads available: {all}; best of {reps}; MB/s of uncompressed input");
    for case in &cases {
        let bytes: f64 = case.matrices.iter().map(|(_, b)| b.len() as f64).sum();
        let encoded: Vec<_> = case
            .matrices
            .iter()
            .map(|(s, b)| nwc_fast::encode_le_bytes(case.mode, *s, b).expect("encode").matrix)
            .collect();
        println!("\n{}\n\n| codec | MB/s |\n|---|---:|", case.name);
        let reference_reps = reps.min(2);
        let enc_ref = best_of(reference_reps, || {
            for (s, b) in &case.matrices {
                nwc_reference::encode_le_bytes(case.mode, *s, b).unwrap();
            }
        });
        row("encode: reference", bytes, enc_ref);
        let enc_fast = |p: &rayon::ThreadPool| {
            best_of(reps, || {
                p.install(|| {
                    for (s, b) in &case.matrices {
                        nwc_fast::encode_le_bytes(case.mode, *s, b).unwrap();
                    }
                })
            })
        };
        row("encode: nwc-fast, 1 thread", bytes, enc_fast(&one));
        row(&format!("encode: nwc-fast, {all} threads"), bytes, enc_fast(&many));
        if let Ok(peer) = &peer {
            let t = best_of(reps, || {
                for (s, b) in &case.matrices {
                    peer.encode(case.mode, *s, b).unwrap();
                }
            });
            row("encode: 0.10.1 host encoder", bytes, t);
        }
        let dec_ref = best_of(reference_reps, || encoded.iter().map(|m| nwc_reference::decode(m).unwrap()).count());
        row("decode: reference", bytes, dec_ref);
        let dec_fast = |p: &rayon::ThreadPool| best_of(reps, || p.install(|| encoded.iter().map(|m| nwc_fast::decode(m).unwrap()).count()));
        row("decode: nwc-fast, 1 thread", bytes, dec_fast(&one));
        row(&format!("decode: nwc-fast, {all} threads"), bytes, dec_fast(&many));
        let _ = Weights::Bf16(&[]);
    }
}
