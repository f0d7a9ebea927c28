//! One CUDA device: its context, the stream all our work runs on, and the compiled kernels.
//! Compiled modules are cached per process and device ([`Gpu::get`]); a production build loads
//! only the production kernels (`kernels::all_kernels`). [`Gpu::with_borrowed_stream`] gives a
//! view of the same device and kernels that issues on a stream another library owns (torch's
//! current stream), so our launches join that library's stream order and its CUDA graphs.

use crate::kernels;
use crate::GpuError;
use cudarc::driver::sys::{CUdevice_attribute, CUfunction_attribute, CUstream};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

pub struct Gpu {
    pub ctx: Arc<CudaContext>,
    /// The one stream every operation of this crate is issued on (so ordering is program order).
    pub stream: Arc<CudaStream>,
    pub name: String,
    pub arch: &'static str,
    /// (major, minor); 9.0 and later have programmatic dependent launch (`exec::DependentLaunch`).
    pub compute_capability: (i32, i32),
    pub sm_count: u32,
    /// The most dynamic shared memory one CTA may opt in to (the execution-layout kernels size
    /// their pipelines to it).
    pub smem_optin: u32,
    /// The compiled kernels, shared by every view of this device ([`Gpu::with_borrowed_stream`]).
    kernels: Arc<Kernels>,
}

/// The key of the resident-cluster cache: kernel, threads, dynamic shared bytes, CTAs per
/// cluster.
type ClusterKey = (&'static str, u32, u32, u32);

/// One device's loaded module and what is cached about its entry points.
struct Kernels {
    _module: Arc<CudaModule>,
    functions: HashMap<&'static str, CudaFunction>,
    /// CTAs of (kernel, threads, dynamic shared bytes) that fit one SM, asked of the driver once
    /// per key instead of at every launch (`ctas_per_sm`).
    occupancy: Mutex<HashMap<(&'static str, u32, u32), u32>>,
    /// Resident clusters by (kernel, threads, shared bytes, CTAs per cluster) (`clusters_resident`).
    clusters: Mutex<HashMap<ClusterKey, u32>>,
    /// Bench: the warpgroup-MMA kernels (`kernels::WGMMA_SOURCE`), compiled for sm_90a on first
    /// use ([`Gpu::function`]); the error, once, where they cannot be.
    #[cfg(feature = "bench")]
    sm90a: OnceLock<Result<Sm90a, String>>,
}

/// Bench: the sm_90a module and its entry points.
#[cfg(feature = "bench")]
type Sm90a = (Arc<CudaModule>, HashMap<&'static str, CudaFunction>);

/// A matrix resident on one device, issuing its launches through the [`Gpu`] handle it holds.
pub(crate) trait Resident {
    fn device_slot(&mut self) -> &mut Arc<Gpu>;
}

/// Runs `work` on `m` with its device handle replaced by `view` (the same device issuing on
/// another stream, [`Gpu::with_borrowed_stream`]), then puts the matrix's own handle back.
/// [`GpuError::Unsupported`] when `view` is another device.
pub(crate) fn on_view<M: Resident, R>(m: &mut M, view: &Arc<Gpu>, work: impl FnOnce(&M) -> R) -> Result<R, GpuError> {
    let slot = m.device_slot();
    if !slot.same_device(view) {
        return Err(GpuError::Unsupported("a matrix runs on the device it was uploaded to"));
    }
    let own = std::mem::replace(slot, view.clone());
    let out = work(m);
    *m.device_slot() = own;
    Ok(out)
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
        let smem_optin = ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)? as u32;
        let mut functions = HashMap::new();
        for (name, smem) in kernels::all_kernels() {
            let f = module.load_function(name)?;
            // Kernels with more than the default 48 KB of dynamic shared memory must say so.
            if smem > 0 {
                f.set_attribute(
                    CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    kernels::smem_allowance(smem, smem_optin) as i32,
                )?;
            }
            functions.insert(name, f);
        }
        let sm_count = ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32;
        Ok(Gpu {
            name: ctx.name()?,
            ctx,
            stream,
            arch,
            compute_capability: (major, minor),
            sm_count,
            smem_optin,
            kernels: Arc::new(Kernels {
                _module: module,
                functions,
                occupancy: Mutex::new(HashMap::new()),
                clusters: Mutex::new(HashMap::new()),
                #[cfg(feature = "bench")]
                sm90a: OnceLock::new(),
            }),
        })
    }

    /// This device and its compiled kernels, issuing every operation on `stream`, a stream
    /// another library created in this device's primary context (torch's
    /// `torch.cuda.current_stream().cuda_stream`). Work issued through the view is ordered with
    /// that library's work on the stream, and is captured when that stream is capturing a CUDA
    /// graph. The view does not own the stream: dropping it destroys nothing.
    ///
    /// # Safety
    /// `stream` must be a live stream of this device's primary context (the context
    /// [`Gpu::get`] retains), and stay alive while the view, or a matrix issuing through it,
    /// may still issue work. The caller orders memory shared with this device's own stream
    /// (uploads, frees) against `stream`.
    pub unsafe fn with_borrowed_stream(&self, stream: CUstream) -> Gpu {
        Gpu {
            // SAFETY: forwarded from this function's contract.
            stream: unsafe { self.ctx.wrap_borrowed_stream(stream) },
            ctx: self.ctx.clone(),
            name: self.name.clone(),
            arch: self.arch,
            compute_capability: self.compute_capability,
            sm_count: self.sm_count,
            smem_optin: self.smem_optin,
            kernels: self.kernels.clone(),
        }
    }

    /// True when `other` is this device (the same context), whatever stream each issues on.
    pub fn same_device(&self, other: &Gpu) -> bool {
        Arc::ptr_eq(&self.kernels, &other.kernels)
    }

    /// The loaded entry point `name`; an error (not a panic) for a name this build did not load.
    pub(crate) fn function(&self, name: &str) -> Result<&CudaFunction, GpuError> {
        Ok(self.entry(name)?.1)
    }

    /// `name` as this build's key, and its entry point: the production module's, or (bench) the
    /// sm_90a module's, which is compiled and loaded on the first call that names one of its
    /// kernels.
    fn entry(&self, name: &str) -> Result<(&'static str, &CudaFunction), GpuError> {
        if let Some((&key, f)) = self.kernels.functions.get_key_value(name) {
            return Ok((key, f));
        }
        #[cfg(feature = "bench")]
        if kernels::WGMMA_KERNELS.contains(&name) {
            let loaded = self.kernels.sm90a.get_or_init(|| self.load_sm90a().map_err(|e| e.to_string()));
            let (_, functions) = loaded.as_ref().map_err(|e| GpuError::Compile(e.clone()))?;
            return functions.get_key_value(name).map(|(&k, f)| (k, f)).ok_or_else(|| GpuError::MissingKernel(name.to_owned()));
        }
        Err(GpuError::MissingKernel(name.to_owned()))
    }

    /// Bench: the production sources and `kernels::WGMMA_SOURCE` compiled for sm_90a (wgmma needs
    /// the arch-specific target) and loaded, each wgmma entry point allowed the opt-in shared
    /// memory; only on an sm_90 device.
    #[cfg(feature = "bench")]
    fn load_sm90a(&self) -> Result<Sm90a, GpuError> {
        if self.arch != "sm_90" {
            return Err(GpuError::Unsupported("the warpgroup-MMA kernels need an sm_90 device (sm_90a code)"));
        }
        let src = format!("{}{}", kernels::SOURCE, kernels::WGMMA_SOURCE);
        let ptx = cudarc::nvrtc::compile_ptx_with_opts(src, kernels::options("sm_90a")).map_err(|e| GpuError::Compile(format!("{e:?}")))?;
        let module = self.ctx.load_module(ptx)?;
        let mut functions = HashMap::new();
        for name in kernels::WGMMA_KERNELS {
            let f = module.load_function(name)?;
            f.set_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, self.smem_optin as i32)?;
            functions.insert(name, f);
        }
        Ok((module, functions))
    }

    /// How many clusters of `cluster` CTAs (along x) of kernel `name`, each of `threads` threads
    /// and `smem` bytes of dynamic shared memory, the device holds at once (the driver's
    /// cuOccupancyMaxActiveClusters: a cluster's CTAs share one GPC, so this can be fewer than the
    /// SMs' CTAs / `cluster`); at least 1, cached. Compute capability 9.0 and later only.
    pub(crate) fn clusters_resident(&self, name: &str, threads: u32, smem: u32, cluster: u32) -> Result<u32, GpuError> {
        let (key, f) = self.entry(name)?;
        let mut cache = self.kernels.clusters.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(&n) = cache.get(&(key, threads, smem, cluster)) {
            return Ok(n);
        }
        self.ctx.bind_to_thread()?;
        let mut attr = crate::launch::cluster_attr(cluster);
        let config = cudarc::driver::sys::CUlaunchConfig {
            gridDimX: cluster,
            gridDimY: 1,
            gridDimZ: 1,
            blockDimX: threads,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: smem,
            hStream: std::ptr::null_mut(),
            attrs: &mut attr,
            numAttrs: 1,
        };
        let mut n: std::ffi::c_int = 0;
        // SAFETY: `config` and `attr` outlive the call; `f` is a loaded function of this context.
        unsafe { cudarc::driver::sys::cuOccupancyMaxActiveClusters(&mut n, f.cu_function(), &config) }.result()?;
        let n = n.max(1) as u32;
        cache.insert((key, threads, smem, cluster), n);
        Ok(n)
    }

    /// How many CTAs of kernel `name` with `threads` threads and `smem` bytes of dynamic shared
    /// memory fit one SM at once (at least 1), from the driver on first use, then cached.
    pub(crate) fn ctas_per_sm(&self, name: &str, threads: u32, smem: u32) -> Result<u32, GpuError> {
        let (key, f) = self.entry(name)?;
        let mut cache = self.kernels.occupancy.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(&n) = cache.get(&(key, threads, smem)) {
            return Ok(n);
        }
        let n = f.occupancy_max_active_blocks_per_multiprocessor(threads, smem as usize, None)?.max(1);
        cache.insert((key, threads, smem), n);
        Ok(n)
    }
}
