//! Shared pieces of the nwc fuzz targets (issue 5, spec 16).
//!
//! - [`input`]: reading structure out of fuzz bytes (through `arbitrary::Unstructured`);
//! - [`record`]: the byte form of "an arbitrary set of stored fields" (target `decode_arbitrary`),
//!   with a writer so the seed corpus can hold real encodings;
//! - [`matrices`]: small valid matrices made from fuzz bytes;
//! - [`mutate`]: structure-aware corruptions of an encoding (target `decode_mutated`);
//! - [`lut_decoder`]: a second decoding path, through the lookup table (target `differential`);
//! - [`oracle`]: the properties every target checks;
//! - [`exec_mutate`]: damaged execution layouts (target `exec_mutated`);
//! - [`exec_rules`]: an independent reading of the execution layout's rules (target `exec_mutated`).

pub mod exec_mutate;
pub mod exec_rules;
pub mod input;
pub mod lut_decoder;
pub mod matrices;
pub mod mutate;
pub mod oracle;
pub mod record;

use nwc_reference::Limits;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Longest input a target reads; longer ones return at once. The inputs describe small matrices
/// and the cost of an execution grows with the input, so `scripts/fuzz.sh` passes a `-max_len`
/// of at most this (1024 for the targets whose inputs are a matrix description and mutations).
pub const MAX_INPUT: usize = 4096;

/// Once per fuzzing process, before the first input (`fuzz_target!(init: nwc_fuzz::init(), ...)`):
/// rayon's global pool becomes the fuzzing thread alone. nwc-fast and the CLI split work with
/// rayon; on fuzz-sized matrices handing tasks to other threads (and their spinning while idle)
/// cost more than the work itself, and on a busy machine every hand-off waits for a time slice.
/// With the calling thread as the only worker, parallel iterators run inline.
pub fn init() {
    // An error means a pool exists already (another init): keep it.
    let _ = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .use_current_thread()
        .build_global();
}

/// Limits for fuzzing: small enough that no input can make the decoder allocate more than a few
/// hundred KiB, so libFuzzer's memory limit only ever catches real leaks or unbounded allocation.
pub fn fuzz_limits() -> Limits {
    Limits {
        max_rows: 1 << 12,
        max_cols: 1 << 14,
        max_weights: 1 << 16,
        max_alloc_bytes: 1 << 17,
    }
}

/// The scratch directory of this fuzzing process for the targets that write files (`cli_readers`,
/// `cli_exec_readers`), made once: `/dev/shm/nwc-fuzz-NAME-PID` where /dev/shm exists (in
/// memory: an execution writes up to eight files), else in the temporary directory. Each input
/// rewrites or removes every file it uses, so no file of an earlier input is left. A process runs
/// one target, so the first `name` asked for is the one used.
pub fn scratch(name: &str) -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let shm = Path::new("/dev/shm");
        let base = if shm.is_dir() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        let dir = base.join(format!("nwc-fuzz-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch directory");
        dir
    })
}
