//! Spec 19 through the corpus: a matvec that adds the products in another order than the
//! canonical one (as tensor cores do) passes the bounded class on every vector and fails the exact
//! class; one that errs by more than the bound fails the bounded class with an error that names
//! spec 19.4. This exercises spec 19.1 (what the class allows, and that outputs outside the domain
//! of spec 19.2 stay canonical), spec 19.3 (the `bound` files the generator writes) and spec 19.4
//! and 19.6 (the check).

use nwc_conformance::backend::{Backend, Loaded, MatvecClass, ReferenceBackend};
use nwc_conformance::corpus::Corpus;
use nwc_conformance::run::reference::run_backend_class;
use nwc_reference::{decode, DecodedMatrix, EncodedMatrix};
use std::path::Path;

/// The reference's decode with a matvec that, for BF16 activations and bias (the domain of
/// spec 19.2), sums each output's exact products from the last column down, then scales and adds
/// the bias, times `1 + skew`; elsewhere it returns the canonical result.
struct Reordered {
    skew: f32,
}

struct Loaded2(DecodedMatrix, f32);

impl Backend for Reordered {
    fn name(&self) -> &str {
        "reordered"
    }
    fn load(&self, m: &EncodedMatrix) -> Result<Box<dyn Loaded + '_>, String> {
        Ok(Box::new(Loaded2(decode(m).map_err(|e| e.to_string())?, self.skew)))
    }
}

fn bf16_exact(v: &f32) -> bool {
    v.to_bits() & 0xFFFF == 0
}

impl Loaded for Loaded2 {
    fn dequant(&mut self) -> Result<Vec<u16>, String> {
        Ok(self.0.dequant())
    }
    fn gather(&mut self, rows: &[u64]) -> Result<Vec<u16>, String> {
        self.0.gather(rows).map_err(|e| e.to_string())
    }
    fn matvec(&mut self, x: &[f32], batch: usize, bias: Option<&[f32]>) -> Result<Vec<f32>, String> {
        let d = &self.0;
        if !(x.iter().all(bf16_exact) && bias.is_none_or(|b| b.iter().all(bf16_exact))) {
            return d.matvec(x, batch, bias).map_err(|e| e.to_string());
        }
        let (m, k) = (d.shape.rows as usize, d.shape.cols as usize);
        let mut y = Vec::with_capacity(batch * m);
        for n in 0..batch {
            for row in 0..m {
                let w = |c: usize| f32::from_bits(u32::from(d.bf16_word(row as u64, c as u64)) << 16);
                let mut t = (0..k).rev().fold(0.0f32, |a, c| a + w(c) * x[n * k + c]);
                if let Some(s) = &d.scale {
                    t *= s[row];
                }
                if let Some(b) = bias {
                    t += b[row];
                }
                y.push(t * (1.0 + self.1));
            }
        }
        Ok(y)
    }
    fn matvec_bf16(&mut self, x: &[f32], batch: usize, bias: Option<&[f32]>) -> Result<Vec<u16>, String> {
        Ok(self.matvec(x, batch, bias)?.into_iter().map(|v| half::bf16::from_f32(v).to_bits()).collect())
    }
}

fn corpus() -> Corpus {
    Corpus::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../vectors")).expect("the committed corpus")
}

#[test]
fn reordered_sums_pass_the_bounded_class_and_fail_the_exact_one() {
    let corpus = corpus();
    let bounded = run_backend_class(&corpus, &Reordered { skew: 0.0 }, MatvecClass::Bounded);
    let failures: Vec<_> = bounded.vectors.iter().filter(|r| !r.verdict.passed() && r.detail.is_some()).collect();
    assert!(failures.is_empty(), "bounded class: {:?}", failures.first().map(|r| (&r.id, &r.detail)));
    assert!(bounded.summary.passed > 100);
    let exact = run_backend_class(&corpus, &Reordered { skew: 0.0 }, MatvecClass::Exact);
    assert!(exact.summary.failed > 0, "reordering changed no canonical bit: the corpus cannot tell the classes apart");
    // The reference is exact, so it is bounded too.
    assert_eq!(run_backend_class(&corpus, &ReferenceBackend, MatvecClass::Bounded).summary.failed, 0);
}

#[test]
fn an_error_beyond_the_bound_fails_the_bounded_class() {
    let report = run_backend_class(&corpus(), &Reordered { skew: 1.0 / 256.0 }, MatvecClass::Bounded);
    let first = report.vectors.iter().find(|r| !r.verdict.passed() && r.detail.is_some()).expect("a failure");
    let detail = first.detail.as_deref().unwrap_or("");
    assert!(detail.contains("spec 19.4") && detail.contains("bound"), "{detail}");
}
