//! The device copies of a matrix's stored fields and matvec scratch, bound once: a launch takes
//! their pointers from [`DeviceFields::ptrs`] and pushes the stream arguments every decoding
//! kernel starts with through [`Ptrs::push_stream`], instead of re-listing the fields.

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DriverError, LaunchArgs, PushKernelArg, SyncOnDrop};
use std::sync::Arc;

pub(crate) struct DeviceFields {
    /// Padded by the spec 9.5 tail slack, so the over-reads documented in kernels/common.cu stay
    /// in bounds.
    pub data: CudaSlice<u8>,
    pub bases: CudaSlice<u32>,
    pub hdr: CudaSlice<u8>,
    /// The stored lookup table (spec 10.1): the codewise kernels and the layout 0 dequant read it.
    pub lut: CudaSlice<u32>,
    /// Padded by the spec 9.6 raw slack.
    pub low: CudaSlice<u8>,
    pub scale: Option<CudaSlice<f32>>,
    /// The host-built two-code table of the pair-table kernels (`crate::pair_table`).
    pub pairs: CudaSlice<u32>,
    /// Matvec scratch of the exact layout 0 and bounded kernels: block partials (layout 0: 8 per
    /// block and column, up to EXACT_MAX_COLUMNS columns per launch; layout 1: 16 per block and
    /// column, up to BOUNDED_MAX_COLUMNS), and one counter per row block that the kernel leaves
    /// at zero (spec 15.4.5 order is kept by the last warp of each row block). Every launch of a
    /// matrix runs on the one stream of its `Gpu`, so launches never share the scratch at once.
    pub partial: CudaSlice<f32>,
    pub count: CudaSlice<u32>,
}

/// Which decode table a kernel takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Table {
    /// The stored lookup table (`lut`).
    Stored,
    /// The host-built pair table (`pairs`).
    Pairs,
}

/// Device pointers of every field, valid while the guards live (as long as this value).
pub(crate) struct Ptrs<'a> {
    pub data: u64,
    pub bases: u64,
    pub hdr: u64,
    pub lut: u64,
    pub pairs: u64,
    pub low: u64,
    /// Null when the matrix has no scales (the kernels then skip the multiply, spec 15.4.6).
    pub scale: u64,
    pub partial: u64,
    pub count: u64,
    _guards: Vec<SyncOnDrop<'a>>,
}

impl DeviceFields {
    /// A second device copy (benchmarks rotate copies past the L2 cache), with its own scratch.
    pub fn try_clone(&self, s: &Arc<CudaStream>) -> Result<DeviceFields, DriverError> {
        Ok(DeviceFields {
            data: s.clone_dtod(&self.data)?,
            bases: s.clone_dtod(&self.bases)?,
            hdr: s.clone_dtod(&self.hdr)?,
            lut: s.clone_dtod(&self.lut)?,
            low: s.clone_dtod(&self.low)?,
            scale: self.scale.as_ref().map(|v| s.clone_dtod(v)).transpose()?,
            pairs: s.clone_dtod(&self.pairs)?,
            partial: s.alloc_zeros(self.partial.len())?,
            count: s.alloc_zeros(self.count.len())?,
        })
    }

    pub fn ptrs<'a>(&'a self, s: &'a CudaStream) -> Ptrs<'a> {
        let mut guards = Vec::with_capacity(9);
        let mut ptr = |(p, g): (u64, SyncOnDrop<'a>)| {
            guards.push(g);
            p
        };
        let data = ptr(self.data.device_ptr(s));
        let bases = ptr(self.bases.device_ptr(s));
        let hdr = ptr(self.hdr.device_ptr(s));
        let lut = ptr(self.lut.device_ptr(s));
        let pairs = ptr(self.pairs.device_ptr(s));
        let low = ptr(self.low.device_ptr(s));
        let scale = self.scale.as_ref().map_or(0, |v| ptr(v.device_ptr(s)));
        let partial = ptr(self.partial.device_ptr(s));
        let count = ptr(self.count.device_ptr(s));
        Ptrs { data, bases, hdr, lut, pairs, low, scale, partial, count, _guards: guards }
    }
}

impl Ptrs<'_> {
    /// The arguments every decoding kernel starts with, in order: data, bases, hdr, its table, low.
    pub fn stream_fields(&self, table: Table) -> [&u64; 5] {
        let table = match table {
            Table::Stored => &self.lut,
            Table::Pairs => &self.pairs,
        };
        [&self.data, &self.bases, &self.hdr, table, &self.low]
    }

    /// [`Ptrs::stream_fields`] pushed onto a cudarc launch.
    pub fn push_stream<'b>(&'b self, b: &mut LaunchArgs<'b>, table: Table) {
        for v in self.stream_fields(table) {
            b.arg(v);
        }
    }
}
