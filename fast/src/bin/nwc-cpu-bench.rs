//! CPU throughput, side by side in one run: the reference codec, nwc-fast on 1 thread and on all
//! threads, and the 0.10.1 library's host encoder (fetched from PyPI by the test kit).
//!
//! ```text
//! cargo run --release -p nwc-fast --features bench[,simd] --bin nwc-cpu-bench -- [ROWS COLS [REPS]] [--minilm]
//!     [--fast-only] [--only-encode | --only-decode] [--case TEXT] [--one-thread]
//! ```
//!
//! MB/s counts uncompressed input bytes (2 per BF16 weight, 1 per fp8 weight), best of REPS
//! measurements, each of which repeats the work for at least 0.25 s.
//! `--minilm` also runs all 40 matrices of all-MiniLM-L6-v2 (real weights, converted to BF16).

use nwc_reference::{Mode, Shape, Weights};
use nwc_testkit::gen::{le_bytes, Dist, Generator};
use std::time::Instant;

/// Shortest span one measurement covers: `f` is repeated until it is reached. The thread CPU time
/// below comes from the scheduler's statistics, which are brought up to date only at ticks and
/// context switches (1 - 4 ms apart); a single run of a few ms could read as much faster than it
/// is (or as taking no time at all), and a best-of-N would pick exactly those readings.
const MIN_SPAN_S: f64 = 0.25;

/// Runs `f` at least once and until `MIN_SPAN_S` passed (`NWC_BENCH_ONCE=1`: exactly once, for
/// instruction counts under valgrind); returns (wall seconds, thread CPU seconds) per run.
fn timed_runs<T>(f: &impl Fn() -> T) -> (f64, f64) {
    let span = if std::env::var_os("NWC_BENCH_ONCE").is_some() { 0.0 } else { MIN_SPAN_S };
    let (t, c0) = (Instant::now(), thread_cpu_ns());
    let mut runs = 0u32;
    while runs == 0 || t.elapsed().as_secs_f64() < span {
        std::hint::black_box(f());
        runs += 1;
    }
    let cpu = match (c0, thread_cpu_ns()) {
        (Some(a), Some(b)) => (b - a) as f64 / 1e9,
        _ => f64::NAN,
    };
    (t.elapsed().as_secs_f64() / f64::from(runs), cpu / f64::from(runs))
}

/// Best wall time per run of `reps` measurements (see [`timed_runs`]).
fn best_of<T>(reps: usize, f: impl Fn() -> T) -> f64 {
    (0..reps).map(|_| timed_runs(&f).0).fold(f64::INFINITY, f64::min)
}

/// CPU time of the calling thread in ns (Linux schedstat), to see through a machine shared with
/// other work: with one worker thread, bytes per CPU second is the single-core speed.
fn thread_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat").ok()?.split_whitespace().next()?.parse().ok()
}

/// Best wall time and best thread-CPU time per run of `reps` measurements on a one-thread pool.
fn best_of_one_thread<T: Send>(p: &rayon::ThreadPool, reps: usize, f: impl Fn() -> T + Sync) -> (f64, f64) {
    let (mut wall, mut cpu) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..reps {
        let (w, c) = p.install(|| timed_runs(&f));
        wall = wall.min(w);
        cpu = cpu.min(c);
    }
    (wall, cpu)
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("thread pool")
}

struct Case {
    name: String,
    mode: Mode,
    matrices: Vec<(Shape, Vec<u8>)>, // little-endian input bytes
}

/// The input as the Rust codecs take it: BF16 words or fp8 bytes. Converting little-endian
/// bytes to words is not coding work, so it is done once here; the peer takes the bytes directly.
fn words_of(mode: Mode, bytes: &[u8]) -> Vec<u16> {
    match mode.elem {
        nwc_reference::ElemType::Bf16 => bytes.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect(),
        nwc_reference::ElemType::Fp8E4m3 => Vec::new(),
    }
}

fn weights<'a>(mode: Mode, words: &'a [u16], bytes: &'a [u8]) -> Weights<'a> {
    match mode.elem {
        nwc_reference::ElemType::Bf16 => Weights::Bf16(words),
        nwc_reference::ElemType::Fp8E4m3 => Weights::Fp8(bytes),
    }
}

fn row(label: &str, bytes: f64, secs: f64) {
    println!("| {label:<40} | {:>9.1} |", bytes / secs / 1e6);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let minilm = args.iter().any(|a| a == "--minilm");
    // --fast-only: skip the reference and the peer (for profiling nwc-fast).
    let fast_only = args.iter().any(|a| a == "--fast-only");
    // --only-encode / --only-decode: one direction (for profiling).
    let (do_enc, do_dec) = (!args.iter().any(|a| a == "--only-decode"), !args.iter().any(|a| a == "--only-encode"));
    // --case TEXT: only the cases whose name contains TEXT (e.g. "BF16 L0").
    let only_case = args.iter().position(|a| a == "--case").and_then(|i| args.get(i + 1)).cloned();
    let nums: Vec<u64> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let (rows, cols) = (nums.first().copied().unwrap_or(2048), nums.get(1).copied().unwrap_or(4096));
    let reps = nums.get(2).copied().unwrap_or(3) as usize;
    let all = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let one = pool(1);
    // Thread counts for the scaling rows: powers of two below the core count, and all cores.
    let mut counts: Vec<usize> = [2, 4, 8].into_iter().filter(|&n| n < all).collect();
    counts.push(all);
    // --one-thread: no multi-thread rows (for instruction counts under valgrind).
    let one_thread = args.iter().any(|a| a == "--one-thread");
    let pools: Vec<(usize, rayon::ThreadPool)> = counts.iter().filter(|&&n| n > 1 && !one_thread).map(|&n| (n, pool(n))).collect();
    let peer = if fast_only { Err("skipped (--fast-only)".to_string()) } else { nwc_testkit::peer::PeerLib::load() };
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

    if let Some(text) = &only_case {
        cases.retain(|c| c.name.contains(text.as_str()));
    }
    let build = if cfg!(feature = "simd") { "nwc-fast built with --features simd" } else { "nwc-fast default build (no unsafe)" };
    println!("{build}; threads available: {all}; best of {reps}; MB/s of uncompressed input");
    for case in &cases {
        let bytes: f64 = case.matrices.iter().map(|(_, b)| b.len() as f64).sum();
        let words: Vec<Vec<u16>> = case.matrices.iter().map(|(_, b)| words_of(case.mode, b)).collect();
        let inputs: Vec<(Shape, Weights)> = case.matrices.iter().zip(&words).map(|((s, b), w)| (*s, weights(case.mode, w, b))).collect();
        let encoded: Vec<_> =
            case.matrices.iter().map(|(s, b)| nwc_fast::encode_le_bytes(case.mode, *s, b).expect("encode").matrix).collect();
        println!("\n{}\n\n| codec | MB/s |\n|---|---:|", case.name);
        let reference_reps = if fast_only { 0 } else { reps.min(2) };
        if do_enc {
            if !fast_only {
                let (w, c) = best_of_one_thread(&one, reference_reps, || {
                    for (s, w) in &inputs {
                        nwc_reference::encode(case.mode, *s, *w).unwrap();
                    }
                });
                row("encode: reference", bytes, w);
                row("encode: reference (CPU time)", bytes, c);
            }
            let (w, c) = best_of_one_thread(&one, reps, || {
                for (s, w) in &inputs {
                    nwc_fast::encode(case.mode, *s, *w).unwrap();
                }
            });
            row("encode: nwc-fast, 1 thread", bytes, w);
            row("encode: nwc-fast, 1 thread (CPU time)", bytes, c);
            for (n, p) in &pools {
                let t = best_of(reps, || {
                    p.install(|| {
                        for (s, w) in &inputs {
                            nwc_fast::encode(case.mode, *s, *w).unwrap();
                        }
                    })
                });
                row(&format!("encode: nwc-fast, {n} threads"), bytes, t);
            }
            if let (Ok(peer), false) = (&peer, fast_only) {
                let (w, c) = best_of_one_thread(&one, reps, || {
                    for (s, b) in &case.matrices {
                        peer.encode(case.mode, *s, b).unwrap();
                    }
                });
                row("encode: 0.10.1 host encoder", bytes, w);
                row("encode: 0.10.1 host encoder (CPU time)", bytes, c);
            }
        }
        if do_dec {
            if !fast_only {
                let (w, c) = best_of_one_thread(&one, reference_reps, || {
                    encoded.iter().map(|m| nwc_reference::decode(m).unwrap()).collect::<Vec<_>>()
                });
                row("decode: reference", bytes, w);
                row("decode: reference (CPU time)", bytes, c);
            }
            let (w, c) = best_of_one_thread(&one, reps, || encoded.iter().map(|m| nwc_fast::decode(m).unwrap()).collect::<Vec<_>>());
            row("decode: nwc-fast, 1 thread", bytes, w);
            row("decode: nwc-fast, 1 thread (CPU time)", bytes, c);
            for (n, p) in &pools {
                let t = best_of(reps, || p.install(|| encoded.iter().map(|m| nwc_fast::decode(m).unwrap()).collect::<Vec<_>>()));
                row(&format!("decode: nwc-fast, {n} threads"), bytes, t);
            }
        }
    }
}
