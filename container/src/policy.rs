//! Spec 17.3: which tensors are compressed. By default every 2-D BF16 tensor named `<path>.weight`
//! (lossless; the 0.10.1 library's modules hold only such weights, 17.5); F32 and F16 2-D tensors
//! only with `cast_bf16` (lossy, explicit); name patterns include or exclude.

/// Name patterns use `*` for any run of characters (including dots) and `?` for one character.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    // Iterative wildcard matching with one backtrack point.
    let (mut pi, mut ni, mut star, mut mark) = (0, 0, None, 0);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[derive(Clone, Debug, Default)]
pub struct Policy {
    /// If non-empty, only names matching one of these are compressed.
    pub include: Vec<String>,
    /// Names matching any of these are never compressed.
    pub exclude: Vec<String>,
    /// Also compress 2-D F32/F16 tensors, rounding them to BF16 first (lossy).
    pub cast_bf16: bool,
}

/// What happens to one tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Copy,
    /// Compress its BF16 words as they are.
    Bf16,
    /// Round to BF16 first (F32 or F16 source), then compress.
    CastBf16,
}

impl Policy {
    pub fn decide(&self, name: &str, dtype: safetensors::Dtype, shape: &[usize]) -> Decision {
        use safetensors::Dtype;
        let matrix = shape.len() == 2 && shape[0] > 0 && shape[1] > 0;
        let named = (self.include.is_empty() || self.include.iter().any(|p| glob_match(p, name)))
            && !self.exclude.iter().any(|p| glob_match(p, name));
        // A module's weight is `<path>.weight` (17.5): another name could not be given back by a
        // reader that rebuilds the model from the modules (the 0.10.1 library).
        let weight = name.ends_with(".weight") && name.len() > ".weight".len();
        if !matrix || !named || !weight || name.starts_with("nwc/") {
            return Decision::Copy;
        }
        match dtype {
            Dtype::BF16 => Decision::Bf16,
            Dtype::F32 | Dtype::F16 if self.cast_bf16 => Decision::CastBf16,
            _ => Decision::Copy,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("*.weight", "model.layers.0.mlp.up_proj.weight"));
        assert!(glob_match("*embed*", "model.embed_tokens.weight"));
        assert!(!glob_match("*.bias", "a.weight"));
        assert!(glob_match("layers.?.q", "layers.7.q"));
        assert!(!glob_match("layers.?.q", "layers.17.q"));
        assert!(glob_match("*", ""));
        assert!(glob_match("a*b*c", "axxbyyc"));
        assert!(!glob_match("a*b*c", "axxbyy"));
    }

    #[test]
    fn only_module_weights_are_candidates() {
        let p = Policy::default();
        assert_eq!(p.decide("lm_head.weight", safetensors::Dtype::BF16, &[4, 8]), Decision::Bf16);
        assert_eq!(p.decide("head", safetensors::Dtype::BF16, &[4, 8]), Decision::Copy);
        assert_eq!(p.decide(".weight", safetensors::Dtype::BF16, &[4, 8]), Decision::Copy);
        assert_eq!(p.decide("a.weight", safetensors::Dtype::BF16, &[4]), Decision::Copy);
    }
}
