//! An even spread of a short launch's CTAs over the SMs: the CTA strip kernel's one-column plan
//! (exec/strip.rs) with its CTAs per SM held to ceil(grid / SMs) by dynamic shared memory, where
//! the launch is under one round. The device may otherwise place more of them on one SM than an
//! even spread would, most of all under programmatic launches (crate::launch), where the next
//! kernel's CTAs take the slots that free first: 2560x9728 ran 4% faster with serial launches than
//! with programmatic ones until this cap (docs/gpu.md, sessions 24-25).

use super::plan::Plan;
use super::release::{breadth, Breadth, Release};
use super::GpuExecMatrix;
use crate::GpuError;

/// The dynamic shared memory that holds a launch of `grid` CTAs of `smem` bytes each to
/// ceil(grid / `sms`) per SM: None where the launch is at or above one round (it already fills
/// every slot), or where no size up to `limit` gives exactly that occupancy; otherwise the least
/// multiple of 256 bytes at or above `smem` at which `per_sm(bytes)` (the device's resident CTAs
/// at that size, falling as it grows) is the cap.
pub(super) fn spread_smem(
    grid: u32,
    sms: u32,
    smem: u32,
    limit: u32,
    mut per_sm: impl FnMut(u32) -> Result<u64, GpuError>,
) -> Result<Option<u32>, GpuError> {
    let cap = u64::from(grid).div_ceil(u64::from(sms).max(1));
    if cap >= per_sm(smem)? {
        return Ok(None);
    }
    // in units of 256 bytes
    let (mut lo, mut hi) = (smem.div_ceil(256), limit / 256);
    if lo > hi || per_sm(hi * 256)? > cap {
        return Ok(None);
    }
    while lo < hi {
        let mid = (lo + hi) / 2;
        if per_sm(mid * 256)? <= cap {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Ok((per_sm(lo * 256)? == cap).then_some(lo * 256))
}

impl GpuExecMatrix {
    /// The production one-column plan's launch from the strip choice `p`: spread by
    /// [`Self::capped`], and then releasing the next kernel at its start (`Release::Start`); a
    /// plan the cap leaves alone takes the release point of its rounds and breadth
    /// (`release::release_point`). Session 21's rule releases launches under 0.9 rounds at their end because the next
    /// kernel's CTAs would otherwise take the free slots and sit, waiting, beside the whole
    /// kernel; the spread leaves at most one CTA's room on an SM. Measured on the H200 (docs/gpu.md,
    /// session 25; the spread with either release, 18 rows of two calls): the start release
    /// faster on 13 (up to +4.2%: 2304x9216, 4800x9600), slower on 5 by at most 2.1% (640x2560).
    pub(super) fn spread_release(&self, p: Plan) -> Result<Plan, GpuError> {
        let spread = self.capped(p)?;
        if spread == p {
            self.with_release(p, None)
        } else {
            self.with_release(spread, Some(Release::Start))
        }
    }

    /// `p` with the dynamic shared memory of [`spread_smem`] where `p` is a wide launch of the CTA
    /// strip kernel (`release::Breadth::Wide`: at least 4 warps per CTA), within the kernel's allowance
    /// (`kernels::smem_allowance`); else `p` unchanged. The kernel uses only the shared memory its
    /// plan sized (its tile partials); the rest is unused.
    ///
    /// Why only wide launches: measured on the H200 (docs/gpu.md, session 25; the production plan
    /// with and without the cap, programmatic launches, 70 shapes over five calls), of the
    /// launches of 4 to 12 warps per CTA that the cap changed, 16 of 18 gained 0-11% (2560x9728,
    /// 1536x8960, 1024x4096, 1000x3000; then, fresh, 2304x9216, 768x3072, 640x2560, 4800x9600,
    /// 2400x8400, 700x2800, ...) and 2 lost 3-5% (1280x2560, 2200x10000); with CTAs of 2 warps it
    /// lost 3-4% (5120x5120, 5120x3072), and on the one-warp kernel (0.65-0.87 rounds) 1-10%. The
    /// padding takes the SM's shared memory, so its L1 shrinks to 28 KB, which costs the kernels
    /// that re-read their activations through L1 more than the spread gains (the whole carve-out
    /// alone, without the cap: 5-15% slower everywhere).
    pub(super) fn capped(&self, p: Plan) -> Result<Plan, GpuError> {
        if breadth(&p) != Breadth::Wide {
            return Ok(p);
        }
        let registered = crate::kernels::all_kernels().find(|(n, _)| *n == p.name).map_or(0, |(_, l)| l);
        let limit = crate::kernels::smem_allowance(registered, self.gpu.smem_optin);
        let per_sm = |smem: u32| Ok(u64::from(self.gpu.ctas_per_sm(p.name, p.threads, smem)?));
        Ok(match spread_smem(p.grid, self.gpu.sm_count, p.smem, limit, per_sm)? {
            Some(smem) => Plan { smem, ..p },
            None => p,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Resident CTAs of `warps` warps on an H200 SM at 80 registers (24 warps) and 228 KB of
    /// shared memory with 1 KB reserved per CTA, allocated in 128-byte units.
    fn h200(warps: u64) -> impl FnMut(u32) -> Result<u64, GpuError> {
        move |smem| Ok((24 / warps).min(233_472 / (u64::from(smem).next_multiple_of(128) + 1024)))
    }

    #[test]
    fn a_launch_under_one_round_is_held_to_an_even_spread() {
        // 2560x9728: 640 CTAs of 4 warps at 304 bytes, 6 per SM: held to 5
        let smem = spread_smem(640, 132, 304, 232_448, h200(4)).unwrap().unwrap();
        assert_eq!(h200(4)(smem).unwrap(), 5);
        assert_eq!(h200(4)(smem - 256).unwrap(), 6, "the least size that holds the cap");
        // 1000x3000: 250 CTAs of 6 warps, 4 per SM: held to 2
        let smem = spread_smem(250, 132, 96, 232_448, h200(6)).unwrap().unwrap();
        assert_eq!(h200(6)(smem).unwrap(), 2);
        assert_eq!(smem % 256, 0);
    }

    #[test]
    fn a_launch_that_fills_every_slot_is_unchanged() {
        // 4096x4096 at 3 warps: 1024 CTAs, 8 per SM: ceil(1024 / 132) = 8
        assert_eq!(spread_smem(1024, 132, 128, 232_448, h200(3)).unwrap(), None);
        // two rounds
        assert_eq!(spread_smem(2000, 132, 512, 232_448, h200(8)).unwrap(), None);
    }

    #[test]
    fn no_size_within_the_allowance_means_no_change() {
        // one-warp CTAs within the default 48 KB: 24 per SM can only be brought to 4, not 1
        assert_eq!(spread_smem(100, 132, 0, 48 * 1024, h200(1)).unwrap(), None);
        // a plan already past the allowance
        assert_eq!(spread_smem(100, 132, 60_000, 48 * 1024, h200(4)).unwrap(), None);
    }
}
