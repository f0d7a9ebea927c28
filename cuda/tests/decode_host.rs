//! CI without a GPU: the lane decode that every exact execution-layout kernel inlines (spec 20.13),
//! compiled from the kernel sources themselves by the host's C++ compiler and checked against the
//! reference encoder. The regions of kernels/exec_common.cu and kernels/exec_strip_decode.cu marked
//! `host-decode` (the fast path with adjacent pairs and its patch, the strip kernels' a / a + 4
//! pairs and their patch, the pad mask) go into decode_host.cpp; a row of one tile (1..16 columns)
//! encoded by `nwc_reference::exec::encode_exec` must decode to its own BF16 words both ways. Rows
//! cover plain codes, zeros and subnormals (code 0), escapes (code 15), the top window (base 242,
//! where the fast path's code-15 carry crosses into the other half of a pair) and pad columns.
//! The device kernels compile the same text with `prmt` and `mad` in PTX (`__CUDA_ARCH__`); the host
//! build takes the byte-level definitions beside them.
//!
//! Needs a C++17 compiler (`CXX`, else `c++`). Without one the test says it was skipped, unless
//! NWC_REQUIRE_CXX is set (scripts/test-all.sh sets it), then it fails.

use nwc_reference::exec::encode_exec;
use nwc_reference::Shape;
use std::path::PathBuf;
use std::process::{Command, Stdio};

const HARNESS: &str = include_str!("decode_host.cpp");
const SOURCES: [(&str, &str); 2] = [
    ("exec_common.cu", include_str!("../kernels/exec_common.cu")),
    ("exec_strip_decode.cu", include_str!("../kernels/exec_strip_decode.cu")),
];

/// The text between `// host-decode: begin` and `// host-decode: end` lines, every region in order.
fn regions(name: &str, src: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    for line in src.lines() {
        let t = line.trim_start();
        if t.starts_with("// host-decode: begin") {
            assert!(cur.is_none(), "{name}: nested host-decode region");
            cur = Some(String::new());
        } else if t.starts_with("// host-decode: end") {
            out.push(cur.take().unwrap_or_else(|| panic!("{name}: host-decode end without begin")));
        } else if let Some(c) = cur.as_mut() {
            c.push_str(line);
            c.push('\n');
        }
    }
    assert!(cur.is_none(), "{name}: host-decode region not closed");
    out
}

/// SplitMix64: the rows are reproducible without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One BF16 word of kind `kind`: 0 clustered exponents with a few outliers, 1 the same with exact
/// zeros, 2 any exponent, 3 the top exponents (Inf, NaN, base 242), 4 the bottom ones (subnormals,
/// base 1).
fn word(rng: &mut Rng, kind: u64) -> u16 {
    let sign = (rng.below(2) as u16) << 15;
    let mant = rng.below(128) as u16;
    let exp = match kind {
        0 | 1 if rng.below(20) == 0 => rng.below(256),
        1 if rng.below(3) == 0 => return sign,
        0 | 1 => 117 + rng.below(9),
        2 => rng.below(256),
        3 => 236 + rng.below(20),
        _ => rng.below(16),
    } as u16;
    sign | (exp << 7) | mant
}

fn compiler() -> Option<String> {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".to_owned());
    let ok = Command::new(&cxx).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
    ok.then_some(cxx)
}

#[test]
fn kernel_lane_decode_matches_the_reference_encoder() {
    let Some(cxx) = compiler() else {
        assert!(std::env::var("NWC_REQUIRE_CXX").is_err(), "NWC_REQUIRE_CXX is set but no C++ compiler was found");
        println!("skipped: no C++ compiler (set CXX)");
        return;
    };
    let mut body = String::new();
    for (name, src) in SOURCES {
        let r = regions(name, src);
        assert!(!r.is_empty(), "{name}: no host-decode region");
        body.extend(r);
    }
    assert!(HARNESS.contains("// @REGIONS@\n"), "decode_host.cpp lost its marker");
    let program = HARNESS.replace("// @REGIONS@\n", &body);
    let dir: PathBuf = std::env::temp_dir().join(format!("nwc-decode-host-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cpp, exe) = (dir.join("decode_host.cpp"), dir.join("decode_host"));
    std::fs::write(&cpp, program).unwrap();
    let out = Command::new(&cxx).args(["-std=c++17", "-O1", "-o"]).arg(&exe).arg(&cpp).output().unwrap();
    assert!(out.status.success(), "{cxx} failed:\n{}", String::from_utf8_lossy(&out.stderr));

    // The cases: rows of kinds 0..4 and rows of one repeated word, 1..16 columns (pad past K).
    let mut rng = Rng(0x6e77_6321);
    let mut rows: Vec<Vec<u16>> = Vec::new();
    for i in 0..18_000u64 {
        let k = if i % 4 == 0 { 1 + rng.below(16) } else { 16 } as usize;
        let kind = i % 6;
        let row: Vec<u16> = if kind == 5 {
            let kind = rng.below(5);
            vec![word(&mut rng, kind); k]
        } else {
            (0..k).map(|_| word(&mut rng, kind)).collect()
        };
        rows.push(row);
    }
    let mut input = String::new();
    let (mut escapes, mut top, mut zeros, mut pads, mut lone, mut zeros_only) = (0, 0, 0, 0, 0, 0);
    let mut shared = 0;
    for row in &rows {
        let k = row.len() as u64;
        let m = encode_exec(Shape::new(1, k), row).unwrap();
        let le = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let esc = &m.esc[m.esc_start[0] as usize..m.esc_start[1] as usize];
        escapes += usize::from(!esc.is_empty());
        lone += usize::from(esc.len() == 1 && esc[0] >= 2);
        shared += usize::from(esc.len() >= 2 && esc[0] >= 2 && esc.iter().all(|&e| e == esc[0]));
        top += usize::from(m.base[0] == 242 && !esc.is_empty());
        zeros += usize::from((0..k).any(|c| m.code(16, 0, c) == 0));
        zeros_only += usize::from(esc.is_empty() && (0..k).any(|c| m.code(16, 0, c) == 0));
        pads += usize::from(k < 16);
        input.push_str(&format!(
            "{} {} {} {} {} {} {} {} {}",
            m.base[0],
            k,
            le(&m.codes[0..4]),
            le(&m.codes[4..8]),
            le(&m.sm[0..4]),
            le(&m.sm[4..8]),
            le(&m.sm[8..12]),
            le(&m.sm[12..16]),
            esc.len()
        ));
        for e in esc {
            input.push_str(&format!(" {e}"));
        }
        input.push('\n');
    }
    // every case the decode distinguishes occurs many times
    for (what, n) in [
        ("escapes", escapes),
        ("base 242 with escapes", top),
        ("code 0", zeros),
        ("pad columns", pads),
        ("one escape", lone),
        ("several escapes of one byte", shared),
        ("code 0 without escapes", zeros_only),
    ] {
        assert!(n >= 100, "only {n} rows with {what}");
    }
    // the cases through a file: writing them to a pipe while the harness fills its stdout would block
    let cases = dir.join("cases.txt");
    std::fs::write(&cases, input).unwrap();
    let out = Command::new(&exe).stdin(std::fs::File::open(&cases).unwrap()).output().unwrap();
    assert!(out.status.success(), "the harness failed");
    let _ = std::fs::remove_dir_all(&dir);
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), rows.len(), "one output line per case");
    for (row, line) in rows.iter().zip(lines) {
        let v: Vec<u16> = line.split_whitespace().map(|t| t.parse().unwrap()).collect();
        assert_eq!(v.len(), 64);
        let (adjacent, rest) = v.split_at(16);
        let (strip, rest) = rest.split_at(16);
        let (strip_lone, strip_fix) = rest.split_at(16);
        assert_eq!(&adjacent[..row.len()], &row[..], "adjacent pairs (exec_pairs16_fast + exec_patch_pairs)");
        assert_eq!(&strip[..row.len()], &row[..], "a / a + 4 pairs (exec_strip_pairs16 + exec_strip_patch)");
        assert_eq!(&strip_lone[..row.len()], &row[..], "a / a + 4 pairs, the escape byte from the tile flag");
        assert_eq!(&strip_fix[..row.len()], &row[..], "a / a + 4 pairs, the XOR fix");
    }
}
