//! One CUDA device: its context, the stream all our work runs on, and the compiled kernels.
//! Compiled modules are cached per process and device ([`Gpu::get`]); a production build loads
//! only the production kernels (`kernels::all_kernels`).

use crate::kernels;
use crate::GpuError;
use cudarc::driver::sys::{CUdevice_attribute, CUfunction_attribute};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

pub struct Gpu {
    pub ctx: Arc<CudaContext>,
    /// The one stream every operation of this crate is issued on (so ordering is program order).
    pub stream: Arc<CudaStream>,
    pub name: String,
    pub arch: &'static str,
    pub sm_count: u32,
    _module: Arc<CudaModule>,
    functions: HashMap<&'static str, CudaFunction>,
    /// CTAs of (kernel, threads, dynamic shared bytes) that fit one SM, asked of the driver once
    /// per key instead of at every launch (`ctas_per_sm`).
    occupancy: Mutex<HashMap<(&'static str, u32, u32), u32>>,
}

static CACHE: OnceLock<Mutex<HashMap<usize, Arc<Gpu>>>> = OnceLock::new();

impl Gpu {
    /// True when a driver library and at least one device are present.
    pub fn present() -> bool {
        Gpu::probe().is_ok()
    }

    /// The number of devices, or why there is none.
    pub fn probe() -> Result<usize, String> {
        // SAFETY: only probes whether libcuda can be opened; calls nothing in it.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err("libcuda could not be loaded".into());
        }
        match CudaContext::device_count() {
            Ok(n) if n > 0 => Ok(n as usize),
            Ok(_) => Err("the driver reports no devices".into()),
            Err(e) => Err(format!("cuInit/cuDeviceGetCount failed: {e}")),
        }
    }

    /// The device `ordinal`, its kernels compiled by NVRTC for its architecture on first use.
    pub fn get(ordinal: usize) -> Result<Arc<Gpu>, GpuError> {
        let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
        let mut cache = cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(gpu) = cache.get(&ordinal) {
            return Ok(gpu.clone());
        }
        let gpu = Arc::new(Gpu::open(ordinal)?);
        cache.insert(ordinal, gpu.clone());
        Ok(gpu)
    }

    fn open(ordinal: usize) -> Result<Gpu, GpuError> {
        if !Gpu::present() {
            return Err(GpuError::NoDevice("no driver library or no device".into()));
        }
        let ctx = CudaContext::new(ordinal).map_err(|e| GpuError::NoDevice(e.to_string()))?;
        // SAFETY: every buffer of this crate is allocated, used and freed on the single `stream`
        // below, so the per-buffer events cudarc would record are not needed for ordering.
        unsafe { ctx.disable_event_tracking() };
        // A created stream, not the legacy default one: graph capture (benchmarks) needs it.
        let stream = ctx.new_stream()?;
        let (major, minor) = ctx.compute_capability()?;
        let arch = kernels::arch_name(major, minor);
        let ptx = kernels::compile(arch)?;
        let module = ctx.load_module(ptx)?;
        let mut functions = HashMap::new();
        for (name, smem) in kernels::all_kernels() {
            let f = module.load_function(name)?;
            // Kernels with more than the default 48 KB of dynamic shared memory must say so.
            if smem > 0 {
                f.set_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem as i32)?;
            }
            functions.insert(name, f);
        }
        let sm_count = ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32;
        Ok(Gpu { name: ctx.name()?, ctx, stream, arch, sm_count, _module: module, functions, occupancy: Mutex::new(HashMap::new()) })
    }

    /// The loaded entry point `name`; an error (not a panic) for a name this build did not load.
    pub(crate) fn function(&self, name: &str) -> Result<&CudaFunction, GpuError> {
        self.functions.get(name).ok_or_else(|| GpuError::MissingKernel(name.to_owned()))
    }

    /// How many CTAs of kernel `name` with `threads` threads and `smem` bytes of dynamic shared
    /// memory fit one SM at once (at least 1), from the driver on first use, then cached.
    pub(crate) fn ctas_per_sm(&self, name: &str, threads: u32, smem: u32) -> Result<u32, GpuError> {
        let (&key, f) = self.functions.get_key_value(name).ok_or_else(|| GpuError::MissingKernel(name.to_owned()))?;
        let mut cache = self.occupancy.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(&n) = cache.get(&(key, threads, smem)) {
            return Ok(n);
        }
        let n = f.occupancy_max_active_blocks_per_multiprocessor(threads, smem as usize, None)?.max(1);
        cache.insert((key, threads, smem), n);
        Ok(n)
    }
}
