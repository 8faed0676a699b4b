//! Mapping a buffer's memory ahead of its first writes.
//!
//! Fresh memory from the allocator (a large zeroed vector, a new coarray)
//! is mapped by the kernel one page at a time, at the first write to each
//! page: a fault per 4 KiB, each a trap into the kernel, an accounting
//! charge and a zeroed page. [`populate`] asks the kernel to map a
//! buffer 4 MiB at a time instead (Linux 5.14's `MADV_POPULATE_WRITE`),
//! which does the same work with a trap per piece: on the 2-core VM of
//! BENCHMARKS.md, 256 MiB took 0.08 s mapped in one call against 0.11 s
//! faulted page by page.

use std::ops::Range;

use crate::{Coarray, Ctx};

/// The bytes [`populate`] asks the kernel to map at a time: 4 MiB.
#[cfg(target_os = "linux")]
const POPULATE_PIECE: usize = 4 << 20;

/// Maps `range` of this processor's local part of `array` ([`populate`]),
/// on every processor at once. Collective: it ends the superstep (a
/// [`sync`](Ctx::sync)) and maps in the next one, so that every
/// processor has made its allocations of the superstep before any maps.
///
/// The kernel holds the process's memory-map lock while it maps, and an
/// allocation that needs the lock (one that maps a block or grows an
/// arena) waits for it. Under the threads transport the processors share
/// one process: where one maps while another still allocates, the second
/// waits out the first's mapping and then maps its own, one after the
/// other. In a one-shot sort of 2^26 pairs at p = 2 that made the two
/// processors' receive buffers take 73–104 ms where one takes 36–56
/// (BENCHMARKS.md section 13n). The label of the superstep that maps is
/// the caller's to set, after the call.
///
/// # Examples
///
/// ```
/// use bsp_core::expert::pages;
///
/// bsp_core::run(2, |ctx| {
///     let buf = ctx.coarray::<u64>(1 << 16);
///     pages::populate_part(ctx, &buf, 0..1 << 15);
///     ctx.label("map the front of the buffer");
///     assert!(ctx.local(&buf).iter().all(|&x| x == 0));
/// })
/// .unwrap();
/// ```
///
/// # Panics
///
/// Where `range` does not lie in the local part (the run ends with an
/// error naming the processor and the superstep).
///
/// # Cost
///
/// One superstep with h = 0 (a sync), then the kernel's mapping of the
/// range's unmapped pages, the processors' mappings at once.
pub fn populate_part<T: bytemuck::Pod>(ctx: &mut Ctx, array: &Coarray<T>, range: Range<usize>) {
    ctx.sync();
    populate(&mut ctx.local_mut(array)[range]);
}

/// Maps every page of `buf` that is not mapped yet, in requests to the
/// kernel of 4 MiB each; the contents are unchanged (fresh pages read as
/// zero either way). Where the kernel cannot (before Linux 5.14, other
/// systems), does nothing, and the pages are mapped at their first
/// writes as usual.
///
/// # Examples
///
/// ```
/// let mut buf = vec![0u64; 1 << 20];
/// bsp_core::expert::pages::populate(&mut buf);
/// assert!(buf.iter().all(|&x| x == 0));
/// ```
///
/// # Cost
///
/// Local: the kernel's mapping of the unmapped pages (for fresh memory, a
/// zeroed page per 4 KiB), without a fault per page.
pub fn populate<T: bytemuck::Pod>(buf: &mut [T]) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        let start = buf.as_mut_ptr() as usize;
        let end = start + std::mem::size_of_val(buf);
        // Whole pages inside the buffer: madvise takes page-aligned
        // ranges, and the pages at the ends may hold other data.
        let (first, last) = (start.next_multiple_of(PAGE), end / PAGE * PAGE);
        // In pieces, so that another thread's wait is bounded: the
        // kernel holds the process's memory-map lock for the whole of a
        // request, and a thread that maps memory meanwhile (an
        // allocation that maps a block or grows its heap) waits for all
        // of it. In a one-shot sort of 2^26 pairs at p = 2 the second
        // processor's few small allocations waited out the first one's
        // whole populate (36–50 ms) before its own began; with pieces of
        // 4 MiB (a millisecond each) they waited 0–17 ms (BENCHMARKS.md
        // section 13n). Processors that populate at once should also
        // let every one allocate first: `populate_part`.
        for start in (first..last).step_by(POPULATE_PIECE) {
            let len = POPULATE_PIECE.min(last - start);
            // SAFETY: the range lies inside `buf`, which this function
            // borrows mutably; MADV_POPULATE_WRITE maps pages as a write
            // fault would, leaving their contents as they are, so no
            // value of `buf` changes. Failure (an old kernel) is ignored.
            unsafe {
                libc::madvise(start as *mut libc::c_void, len, libc::MADV_POPULATE_WRITE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = buf;
}

#[cfg(test)]
mod tests {
    use super::populate;

    #[test]
    fn populating_changes_no_value() {
        for len in [0usize, 1, 1000, 4096, 100_000] {
            let mut fresh = vec![0u32; len];
            populate(&mut fresh);
            assert!(fresh.iter().all(|&x| x == 0));
            let mut written: Vec<u64> = (0..len as u64).map(|i| i * 3 + 1).collect();
            // An unaligned part of a buffer, with pages at both ends shared.
            let n = written.len();
            populate(&mut written[n / 3..]);
            assert!(written
                .iter()
                .enumerate()
                .all(|(i, &x)| x == i as u64 * 3 + 1));
        }
    }
}
