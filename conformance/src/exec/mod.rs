//! Execution-layout vectors (spec 20) in the shared corpus: their field files, and judging them on
//! the reference or on any [`ExecBackend`]. Format-10 runners skip these vectors (their protocol
//! has no execution layout); `nwc-conform reference` runs both kinds.
//!
//! Field files (raw little-endian, under the vector's directory, named in `fields` by key):
//!
//! | key / file | field (spec 20.3) | type, length |
//! |---|---|---|
//! | `exec_sm` / `exec_sm.bin` | `sm` | u8, M·K16 |
//! | `exec_codes` / `exec_codes.bin` | `codes` | u8, M·K16/2 |
//! | `exec_base` / `exec_base.bin` | `base` | u8, M |
//! | `exec_esc_start` / `exec_esc_start.bin` | `esc_start` | u32 LE, T + 1 |
//! | `exec_esc` / `exec_esc.bin` | `esc` | u8, E |

pub mod backend;
pub mod run;

pub use backend::{check_exec_outputs, ExecBackend, ExecLoaded, ReferenceExecBackend};
pub use run::{judge_exec, run_exec_backend};

use crate::fields::RawFields;
use nwc_reference::exec::{parse_le_fields, ExecField, ExecFormatError, ExecMatrix};
use nwc_reference::Shape;

/// The manifest key (and file stem) of a field: `exec_` + its spec name.
pub fn field_key(field: ExecField) -> String {
    format!("exec_{}", field.name())
}

/// Builds an [`ExecMatrix`] from raw fields keyed by [`field_key`]; a missing field counts as
/// empty, so rules 20.9.1 and 20.9.2 report it in their order (spec 20.10).
pub fn parse(rows: u64, cols: u64, raw: &RawFields) -> Result<ExecMatrix, ExecFormatError> {
    let get = |f: ExecField| raw.get(&field_key(f)).map(Vec::as_slice).unwrap_or_default();
    parse_le_fields(
        Shape::new(rows, cols),
        get(ExecField::Sm),
        get(ExecField::Codes),
        get(ExecField::Base),
        get(ExecField::EscStart),
        get(ExecField::Esc),
    )
}

/// The stored fields as raw bytes keyed by [`field_key`].
pub fn to_raw(m: &ExecMatrix) -> RawFields {
    m.to_le_fields().into_iter().map(|(f, bytes)| (field_key(f), bytes)).collect()
}

/// The `exec_*.bin` files in `dir` keyed by [`field_key`] (spec 20.3 fields, the corpus's file
/// names); an absent file is left out.
pub fn read_exec_dir(dir: &std::path::Path) -> Result<RawFields, String> {
    let mut raw = RawFields::new();
    for field in ExecField::ALL {
        let key = field_key(field);
        match std::fs::read(dir.join(format!("{key}.bin"))) {
            Ok(bytes) => {
                raw.insert(key, bytes);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("{key}.bin: {e}")),
        }
    }
    Ok(raw)
}
