//! The corpus manifest (`vectors/manifest.json`): one entry per vector, every file listed with its
//! SHA-256 so any language can check it has the corpus intact. Paths are relative to `vectors/`.
//! All binary files are raw little-endian arrays: u8 (data, hdr, low, exp_of_rank, fp8 input),
//! u16 (BF16 input, dequant, gather output, BF16 matvec output), u32 (bases, lut), f32 (scale,
//! activations, bias, f32 matvec output). Execution-layout vectors (spec 20) add u8 (exec_sm,
//! exec_codes, exec_base, exec_esc) and u32 (exec_esc_start).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the corpus layout; bump it when the meaning of any manifest field changes.
/// 2 (spec revision 2): `expected_error` is the first rule in the order of spec 16.2, vectors that
/// break two rules and vectors with an absent field (rule 13.3.1); see vectors/README.md.
/// Also in version 2: execution-layout vectors (spec 20), fields `representation`, `transcoded_from`
/// and `transcode_refused_from`.
pub const CORPUS_VERSION: u32 = 2;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    /// NWC format version the vectors belong to (10).
    pub format_version: u32,
    pub corpus_version: u32,
    /// The command that regenerates the corpus, and its seed.
    pub generator: String,
    pub seed: u64,
    pub vectors: Vec<Vector>,
}

/// What a vector asserts.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// The stored fields are THE canonical encoding of the input (spec 14.2): an encoder must
    /// reproduce them (unspecified bytes excepted) and a decoder must decode them to the input.
    Canonical,
    /// A valid, non-canonical encoding of the input (spec 14.3): a decoder must decode it to the
    /// input; encoders are not compared against it.
    Valid,
    /// Parses, but breaks the validity rule `expected_error` (spec 13): a decoder must reject it.
    Invalid,
    /// Cannot even be parsed (wrong mode code, shape, field sizes, missing bytes): a decoder must
    /// reject it; `expected_error` names the rule.
    Malformed,
}

/// Which representation a vector's stored fields are in.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Representation {
    /// Format 10 (spec 2-13): fields `data`, `bases`, `hdr`, `lut`, `low`, `scale`.
    #[default]
    Format10,
    /// The execution layout (spec 20): fields `exec_sm`, `exec_codes`, `exec_base`,
    /// `exec_esc_start`, `exec_esc`; `mode_code` is 0 (BF16) and `expected_error` names a rule of
    /// spec 20.9, which a decoder MUST report exactly (spec 20.10: the check order is total).
    Exec,
}

impl Representation {
    pub fn is_format10(&self) -> bool {
        *self == Representation::Format10
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Vector {
    /// Unique, stable, file-system safe id, e.g. `canonical-bf16-l0-gauss-13x40`.
    pub id: String,
    pub kind: Kind,
    /// Absent for format 10; `exec` for an execution-layout vector (spec 20).
    #[serde(default, skip_serializing_if = "Representation::is_format10")]
    pub representation: Representation,
    /// Execution-layout vectors: ids of format-10 vectors (same manifest) that carry the same
    /// matrix. Transcoding any of them (spec 20.12.2) MUST give exactly this vector's fields.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transcoded_from: Vec<String>,
    /// Execution-layout vectors: ids of FP8 format-10 vectors (same manifest) carrying the same
    /// values; a transcoder MUST refuse them (spec 20.12.3).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transcode_refused_from: Vec<String>,
    /// Spec clauses the vector exercises, e.g. ["6.1", "7.3"].
    pub clauses: Vec<String>,
    /// One line saying what the vector is about.
    pub description: String,
    /// The mode code as stored (0, 1, 16, 17; other values only in `malformed` vectors).
    pub mode_code: u32,
    /// "bf16" or "fp8" (derived from mode_code bits 0..3; informative).
    pub elem: String,
    /// 0 or 1 (derived from mode_code bits 4..7; informative).
    pub layout: u32,
    pub rows: u64,
    pub cols: u64,
    /// The uncompressed matrix (canonical and valid vectors): LE BF16 or fp8 bytes, M*K elements.
    pub input: Option<String>,
    /// Stored fields by name: "data", "bases", "hdr", "lut", "low", "scale" (scaled FP8, spec
    /// 11.6), plus "exp_of_rank" (canonical vectors: the encoder's 16-byte rank table, not a
    /// stored field). A malformed vector may lack a required field (rule 13.3.1).
    pub fields: BTreeMap<String, String>,
    /// Canonical vectors: end of the streams in `data`; bytes from here on are unspecified, as are
    /// the alignment gaps between blocks.
    pub stream_end: Option<u64>,
    /// Invalid and malformed vectors: the rule name of spec 13 a decoder must report, the first
    /// one the encoding breaks in the order of checks of spec 16.2.
    pub expected_error: Option<String>,
    /// Invalid and malformed vectors that break further rules (a misaligned offset is always a
    /// mismatched one too; some vectors break two rules on purpose): informative. A decoder that
    /// follows spec 16.2 reports `expected_error`; before spec revision 2 it MAY have reported one
    /// of these (for rules of step 5 of spec 16.2 it still MAY, spec 13.21).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also_broken: Vec<String>,
    /// FP8 vectors quantized from BF16 (spec 11.2): the BF16 source, u16 LE, M*K words. A
    /// quantizing encoder must turn it into `input` and the `scale` field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantized_from: Option<String>,
    /// Expected dequant output (spec 15.2): u16 LE, M x K16.
    pub dequant: Option<String>,
    /// Expected gather outputs (spec 15.3).
    pub gathers: Vec<GatherCase>,
    /// Expected matvec outputs in the canonical accumulation order (spec 15.4).
    pub matvecs: Vec<MatvecCase>,
    /// SHA-256 (hex) of every file this vector names, by path.
    pub sha256: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct GatherCase {
    pub rows: Vec<u64>,
    /// u16 LE, rows.len() x K16.
    pub output: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct MatvecCase {
    pub batch: u64,
    /// f32 LE, batch x K.
    pub activations: String,
    /// f32 LE, M values, or none.
    pub bias: Option<String>,
    /// f32 LE, batch x M: the exact f32 result. NaN results are stored as 0x7FC00000; any NaN
    /// matches them (spec 15.4.6).
    pub output_f32: String,
    /// u16 LE, batch x M: the result rounded to BF16 (nearest even). NaN results are stored as
    /// 0x7FC0; any NaN matches them.
    pub output_bf16: String,
    /// Cases whose activations and bias are BF16 values (spec 19.2): f64 LE, batch x M, the bound
    /// B of spec 19.3 for each output, or NaN where the output lies outside the domain of spec
    /// 19.2. A bounded-class implementation (spec 19) passes an output within B of `output_f32`
    /// (spec 19.4, 19.6); an exact one passes only the canonical bits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<String>,
}
