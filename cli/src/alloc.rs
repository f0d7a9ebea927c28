//! The `nwc` binary's global allocator: the system allocator, except that large blocks (>= 1 MiB)
//! are kept when freed and handed out again for the next request of the same size class.
//!
//! Why: the codec allocates its big buffers (the stored fields, the decoded weights) afresh for
//! every tensor. glibc serves blocks of that size with a new mmap and unmaps them on free, so
//! every tensor paid a page fault per 4 KiB touched: on a 1 GB model the kernel time exceeded the
//! user time (issue 15). Reusing the blocks makes the faults a one-time cost; fresh blocks are
//! also marked for transparent huge pages, which makes that one time 512 times cheaper where the
//! kernel allows it. The cache is capped (`CAP` bytes, `SLOTS` blocks), so memory stays bounded.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;

const LARGE: usize = 1 << 20;
const SLOTS: usize = 32;
const CAP: usize = 192 << 20;

struct Cache {
    /// (address, size class, alignment) of free blocks.
    blocks: [(usize, usize, usize); SLOTS],
    n: usize,
    bytes: usize,
}

pub struct ReuseAlloc {
    cache: Mutex<Cache>,
}

impl ReuseAlloc {
    pub const fn new() -> ReuseAlloc {
        ReuseAlloc { cache: Mutex::new(Cache { blocks: [(0, 0, 0); SLOTS], n: 0, bytes: 0 }) }
    }
}

/// Large sizes are rounded up to a multiple of an eighth of their power of two, so that requests
/// of nearly the same size share blocks (at most 1/4 wasted).
fn class(size: usize) -> usize {
    let g = (size.next_power_of_two() / 8).max(4096);
    size.div_ceil(g) * g
}

fn big(layout: Layout) -> Layout {
    Layout::from_size_align(class(layout.size()), layout.align()).expect("a valid layout rounded up stays valid")
}

impl ReuseAlloc {
    fn take(&self, layout: Layout) -> Option<*mut u8> {
        let (c, a) = (class(layout.size()), layout.align());
        let mut cache = self.cache.lock().ok()?;
        let n = cache.n;
        let i = cache.blocks[..n].iter().position(|b| b.1 == c && b.2 == a)?;
        let b = cache.blocks[i];
        cache.blocks[i] = cache.blocks[n - 1];
        cache.n -= 1;
        cache.bytes -= c;
        Some(b.0 as *mut u8)
    }

    fn fresh(p: *mut u8, size: usize) -> *mut u8 {
        if !p.is_null() {
            // Huge pages for the inner 2 MiB-aligned part; only advice, failures are harmless.
            let (start, end) = ((p as usize).div_ceil(2 << 20) * (2 << 20), (p as usize + size) / (2 << 20) * (2 << 20));
            if end > start {
                // SAFETY: the range lies inside the block just allocated; MADV_HUGEPAGE changes
                // no contents.
                unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
            }
        }
        p
    }
}

// SAFETY: every block is obtained from `System` with the layout `big(layout)` (large) or `layout`
// (small) and returned to it with the same layout; a cached block is handed to one caller only
// (it is removed from the cache under the lock).
unsafe impl GlobalAlloc for ReuseAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() < LARGE {
            return System.alloc(layout);
        }
        self.take(layout).unwrap_or_else(|| Self::fresh(System.alloc(big(layout)), class(layout.size())))
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() < LARGE {
            return System.alloc_zeroed(layout);
        }
        match self.take(layout) {
            Some(p) => {
                p.write_bytes(0, layout.size());
                p
            }
            None => Self::fresh(System.alloc_zeroed(big(layout)), class(layout.size())),
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if layout.size() < LARGE {
            return System.dealloc(ptr, layout);
        }
        let c = class(layout.size());
        if let Ok(mut cache) = self.cache.lock() {
            if cache.n < SLOTS && cache.bytes + c <= CAP {
                let n = cache.n;
                cache.blocks[n] = (ptr as usize, c, layout.align());
                cache.n += 1;
                cache.bytes += c;
                return;
            }
        }
        System.dealloc(ptr, big(layout));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new = Layout::from_size_align_unchecked(new_size, layout.align());
        if layout.size() < LARGE && new_size < LARGE {
            return System.realloc(ptr, layout, new_size);
        }
        if layout.size() >= LARGE && new_size >= LARGE && class(layout.size()) == class(new_size) {
            return ptr;
        }
        let p = self.alloc(new);
        if !p.is_null() {
            std::ptr::copy_nonoverlapping(ptr, p, layout.size().min(new_size));
            self.dealloc(ptr, layout);
        }
        p
    }
}
