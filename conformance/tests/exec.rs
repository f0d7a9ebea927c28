//! The execution-layout checks (spec 20) on the committed corpus: the reference passes every
//! execution-layout vector, and deliberately faulty engines are caught (wrong transcode, format-10
//! pad values in dequant, another summation order, a transcoder that accepts FP8).

use nwc_conformance::backend::MatvecClass;
use nwc_conformance::corpus::Corpus;
use nwc_conformance::exec::{run_exec_backend, ExecBackend, ExecLoaded, ReferenceExecBackend};
use nwc_conformance::report::{Report, Verdict};
use nwc_reference::exec::{decode_exec, encode_exec_with_bases, transcode, ExecDecoded, ExecMatrix};
use nwc_reference::{decode, Elements, EncodedMatrix};
use std::path::Path;

fn corpus() -> Corpus {
    Corpus::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../vectors")).expect("committed corpus")
}

#[derive(Clone, Copy, PartialEq)]
enum Fault {
    None,
    /// Transcodes with base 242 everywhere: valid, not canonical (spec 20.12.2 wants canonical).
    TranscodeBase242,
    /// Accepts FP8 by transcoding its unscaled BF16 values (spec 20.12.3 wants a refusal).
    TranscodeFp8,
    /// Pads dequant rows with 0x3F00 like a format-10 filler (spec 20.14 wants 0x0000).
    DequantPads,
    /// Sums each row left to right in one fma chain (spec 20.15.2 wants the lane order).
    SerialMatvec,
}

struct Faulty(Fault);
struct Loaded(ExecDecoded, Fault);

impl ExecBackend for Faulty {
    fn name(&self) -> &str {
        "faulty"
    }
    fn load(&self, m: &ExecMatrix) -> Result<Box<dyn ExecLoaded + '_>, String> {
        Ok(Box::new(Loaded(decode_exec(m).map_err(|e| e.to_string())?, self.0)))
    }
    fn transcode(&self, m: &EncodedMatrix) -> Result<ExecMatrix, String> {
        match self.0 {
            Fault::TranscodeBase242 => {
                let d = decode(m).map_err(|e| e.to_string())?;
                let Elements::Bf16(w) = d.elements else { return Err("fp8".into()) };
                encode_exec_with_bases(d.shape, &w, &vec![242; d.shape.rows as usize]).map_err(|e| e.to_string())
            }
            Fault::TranscodeFp8 => {
                let d = decode(m).map_err(|e| e.to_string())?;
                let w: Vec<u16> =
                    (0..d.shape.rows).flat_map(|r| (0..d.shape.cols).map(move |c| (r, c))).map(|(r, c)| d.bf16_word(r, c)).collect();
                nwc_reference::exec::encode_exec(d.shape, &w).map_err(|e| e.to_string())
            }
            _ => transcode(m).map_err(|e| e.to_string()),
        }
    }
}

impl ExecLoaded for Loaded {
    fn dequant(&mut self) -> Result<Vec<u16>, String> {
        let mut out = self.0.dequant();
        if self.1 == Fault::DequantPads {
            let (k, k16) = (self.0.shape.cols as usize, self.0.row_stride() as usize);
            out.chunks_exact_mut(k16).for_each(|row| row[k..].fill(0x3F00));
        }
        Ok(out)
    }
    fn gather(&mut self, rows: &[u64]) -> Result<Vec<u16>, String> {
        self.0.gather(rows).map_err(|e| e.to_string())
    }
    fn matvec(&mut self, x: &[f32], batch: usize, bias: Option<&[f32]>) -> Result<Vec<f32>, String> {
        if self.1 != Fault::SerialMatvec {
            return self.0.matvec(x, batch, bias).map_err(|e| e.to_string());
        }
        let (m, k) = (self.0.shape.rows as usize, self.0.shape.cols as usize);
        let mut y = Vec::new();
        for xs in x.chunks_exact(k) {
            for row in 0..m {
                let w = &self.0.words[row * k..(row + 1) * k];
                let s = w.iter().zip(xs).fold(0.0f32, |a, (&w, &x)| f32::from_bits(u32::from(w) << 16).mul_add(x, a));
                y.push(s + bias.map_or(0.0, |b| b[row]));
            }
        }
        Ok(y)
    }
    fn matvec_bf16(&mut self, x: &[f32], batch: usize, bias: Option<&[f32]>) -> Result<Vec<u16>, String> {
        Ok(self.matvec(x, batch, bias)?.into_iter().map(|v| half::bf16::from_f32(v).to_bits()).collect())
    }
}

fn failed(r: &Report) -> Vec<&str> {
    r.vectors.iter().filter(|v| v.verdict == Verdict::Fail).map(|v| v.id.as_str()).collect()
}

#[test]
fn reference_passes_every_exec_vector_and_skips_format10() {
    let c = corpus();
    let r = run_exec_backend(&c, &ReferenceExecBackend, MatvecClass::Exact);
    assert!(r.all_passed(), "{}", r.to_text());
    let exec = r.vectors.iter().filter(|v| v.verdict == Verdict::Pass).count();
    assert!(exec >= 60, "only {exec} execution-layout vectors");
    assert!(r.vectors.iter().any(|v| v.verdict == Verdict::Skipped && !v.id.contains("-exec-")));
    assert!(failed(&run_exec_backend(&c, &Faulty(Fault::None), MatvecClass::Exact)).is_empty());
}

#[test]
fn faulty_engines_are_caught() {
    let c = corpus();
    for (fault, expect) in [
        (Fault::TranscodeBase242, "transcodes"),
        (Fault::TranscodeFp8, "spec 20.12.3"),
        (Fault::DequantPads, "dequant"),
        (Fault::SerialMatvec, "matvec"),
    ] {
        let r = run_exec_backend(&c, &Faulty(fault), MatvecClass::Exact);
        let bad = failed(&r);
        assert!(!bad.is_empty(), "fault not caught: {}", r.to_text());
        let detail = r.vectors.iter().find(|v| v.verdict == Verdict::Fail).and_then(|v| v.detail.clone()).unwrap();
        assert!(detail.contains(expect), "{detail}");
    }
}

/// Spec 19 applies unchanged (spec 20.15.3): a serial fma chain is not canonical but lies within
/// the bound, so it passes as a bounded-class engine on the cases that carry bounds.
#[test]
fn serial_order_passes_as_bounded_where_bounds_exist() {
    let c = corpus();
    let r = run_exec_backend(&c, &Faulty(Fault::SerialMatvec), MatvecClass::Bounded);
    // Cases with f32 activations have no bound and still need the canonical bits.
    for v in r.vectors.iter().filter(|v| v.verdict == Verdict::Fail) {
        let d = v.detail.as_deref().unwrap_or("");
        assert!(d.contains("matvec 0") || d.contains("matvec 3"), "{}: {d}", v.id);
    }
}
