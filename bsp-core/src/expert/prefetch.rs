//! Reading a slice front to back with the memory ahead already requested.
//!
//! A loop that does a little work per element of a large slice (counting
//! digits, scattering keys) is bound by the latency of main memory, not by
//! its bandwidth, when each cache line is requested only once the loop
//! reaches it: the processor holds too few of the loop's iterations in
//! flight to overlap more than a line or two of misses, and the hardware
//! prefetcher does not always run far enough ahead (on the 2-core VM of
//! BENCHMARKS.md a four-table digit count of 2^25 keys out of the cache took
//! 1.3 ns a key as a plain loop and 0.53 ns with the lines requested 2 KiB
//! ahead). [`lines`] walks a slice by cache lines and, at each, asks the
//! processor to start loading the line [`AHEAD_BYTES`] further on.
//!
//! The request is a hint (`prefetcht0` on x86-64, nothing elsewhere): it
//! changes no value and cannot fault, so the iterator is safe to use
//! anywhere. Being the one crate of the workspace allowed `unsafe`, bsp-core
//! holds the call for the sort and the collectives.

/// The bytes of a cache line on the processors bsp targets: [`lines`]
/// yields this many bytes of elements at a time.
pub const LINE_BYTES: usize = 64;

/// How far ahead of the line being read [`lines`] requests memory: 32
/// lines, enough to cover main memory's latency at a few nanoseconds a
/// line of work.
pub const AHEAD_BYTES: usize = 2048;

/// The slice in pieces of one cache line's worth of elements (at least
/// one element; the last piece may be shorter), requesting, as each piece
/// is yielded, the memory [`AHEAD_BYTES`] beyond it.
///
/// Loop over the pieces, then over each piece, as below: `.flatten()`
/// compiles to a slower loop (a count of 2^24 keys took 0.47 ns a key
/// through it on AMD-2b, against 0.26 nested).
///
/// # Examples
///
/// ```
/// let keys: Vec<u32> = (0..1000).collect();
/// let mut sum = 0u64;
/// for line in bsp_core::expert::prefetch::lines(&keys) {
///     assert!(line.len() <= 16);
///     sum += line.iter().map(|&k| u64::from(k)).sum::<u64>();
/// }
/// assert_eq!(sum, 999 * 1000 / 2);
/// ```
///
/// # Cost
///
/// Local: one prefetch hint per line of the slice, on top of the caller's
/// loop.
pub fn lines<T>(data: &[T]) -> Lines<'_, T> {
    Lines { rest: data }
}

/// The iterator of [`lines`]: the part of the slice not yet yielded.
///
/// Its loop is lean on purpose: the pieces' length and the distance ahead
/// are constants of the element type, and each piece is split off the
/// front of the rest. A first version kept an index and computed
/// both at run time; counting 2^24 keys by a 10-bit digit through it took
/// 0.31–0.35 ns a key on AMD-2b (2026-11-27), against 0.26 now and 0.23 for
/// a plain loop without the prefetch.
#[derive(Clone, Debug)]
pub struct Lines<'a, T> {
    rest: &'a [T],
}

impl<T> Lines<'_, T> {
    /// Elements per piece: a cache line's worth, at least one (zero-sized
    /// elements count as bytes).
    const STEP: usize = per(LINE_BYTES, std::mem::size_of::<T>());
    /// Elements between a piece's start and the element requested.
    const AHEAD: usize = per(AHEAD_BYTES, std::mem::size_of::<T>());
}

/// How many elements of `size` bytes (a zero size counted as one) fill
/// `bytes`, at least one.
const fn per(bytes: usize, size: usize) -> usize {
    let size = if size == 0 { 1 } else { size };
    if size >= bytes {
        1
    } else {
        bytes / size
    }
}

impl<'a, T> Iterator for Lines<'a, T> {
    type Item = &'a [T];

    #[inline]
    fn next(&mut self) -> Option<&'a [T]> {
        if self.rest.is_empty() {
            return None;
        }
        if let Some(later) = self.rest.get(Self::AHEAD) {
            request(later);
        }
        let (line, rest) = self.rest.split_at(Self::STEP.min(self.rest.len()));
        self.rest = rest;
        Some(line)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.rest.len().div_ceil(Self::STEP);
        (left, Some(left))
    }
}

impl<T> ExactSizeIterator for Lines<'_, T> {}

impl<T> std::iter::FusedIterator for Lines<'_, T> {}

/// Asks the processor to load the cache line holding `x`.
#[inline(always)]
fn request<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: `_mm_prefetch` needs SSE, which every x86-64 processor
        // has; it only hints the cache, never reads the value into a
        // register nor faults, and `x` is a live reference anyway.
        unsafe { _mm_prefetch::<_MM_HINT_T0>((x as *const T).cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lines_cover_the_slice_in_order() {
        for n in [0usize, 1, 15, 16, 17, 1000] {
            let bytes: Vec<u8> = (0..n).map(|i| i as u8).collect();
            let pieces: Vec<&[u8]> = lines(&bytes).collect();
            assert_eq!(pieces.len(), n.div_ceil(64));
            assert_eq!(lines(&bytes).len(), pieces.len());
            assert!(pieces.iter().all(|l| !l.is_empty() && l.len() <= 64));
            assert_eq!(pieces.concat(), bytes);
        }
        // Elements larger than a line: one at a time.
        let big = [[0u8; 100]; 3];
        assert_eq!(lines(&big).count(), 3);
        // Zero-sized elements: counted like bytes.
        let units = [(); 100];
        assert_eq!(lines(&units).map(<[()]>::len).collect::<Vec<_>>(), [64, 36]);
    }
}
