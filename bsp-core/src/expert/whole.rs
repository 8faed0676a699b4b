//! Copying a record as one machine word.
//!
//! A scatter copies each element to a slot that is usually not in the L1
//! cache, so its speed is that of its stores. A record such as
//! `(u32, u32)` whose key the loop also reads tends to be copied field by
//! field, two 4-byte stores where one 8-byte store does: the compiler
//! splits the copy along the fields it already has in registers.
//! [`copy`] loads and stores an 8- or 16-byte element as one word (from
//! a value in registers, the compiler joins the fields into that word
//! and stores it once). In
//! the plain-store scatter of the radix sort's top digit, that made a
//! reused sort of 2^26 `(u32, u32)` pairs 0.323–0.340 s against
//! 0.356–0.357 (AMD-2c, bench_sort `--stores plain`; BENCHMARKS.md
//! section 13g).

use bytemuck::Pod;

/// Writes `*src` into `*dst`: for an element of 8 or 16 bytes, as one
/// unaligned load and one store of that width; otherwise as `*dst = *src`.
///
/// # Examples
///
/// ```
/// use bsp_core::expert::whole;
///
/// let src = [[3u32, 30], [1, 10]]; // (key, payload) records
/// let mut dst = [[0u32; 2]; 2];
/// for (d, s) in dst.iter_mut().zip(&src) {
///     whole::copy(d, s);
/// }
/// assert_eq!(dst, src);
/// ```
///
/// # Cost
///
/// One load and one store for 8 and 16 bytes.
#[inline(always)]
pub fn copy<T: Pod>(dst: &mut T, src: &T) {
    match std::mem::size_of::<T>() {
        8 => {
            let word: u64 = bytemuck::pod_read_unaligned(bytemuck::bytes_of(src));
            bytemuck::bytes_of_mut(dst).copy_from_slice(&word.to_ne_bytes());
        }
        16 => {
            let word: u128 = bytemuck::pod_read_unaligned(bytemuck::bytes_of(src));
            bytemuck::bytes_of_mut(dst).copy_from_slice(&word.to_ne_bytes());
        }
        _ => *dst = *src,
    }
}

#[cfg(test)]
mod tests {
    use super::copy;

    #[test]
    fn every_width_copies_exactly() {
        fn check<T: bytemuck::Pod + PartialEq + std::fmt::Debug>(x: T) {
            let mut y = T::zeroed();
            copy(&mut y, &x);
            assert_eq!(y, x);
            // From a value, as the line writer copies an element it holds.
            let mut z = T::zeroed();
            copy(&mut z, &{ x });
            assert_eq!(z, x);
        }
        check(7u8);
        check([1u32, 2]);
        check([1u16, 2, 3, 4]);
        check([u64::MAX, 5]);
        check([9u8; 12]);
        check([1u32, 2, 3, 4, 5]);
        // An 8-byte record 4 bytes off a word's alignment, both ways.
        let mut words = [0u32; 5];
        let src = [[1u32, 2], [3, 4]];
        let dst: &mut [[u32; 2]] = bytemuck::cast_slice_mut(&mut words[1..5]);
        copy(&mut dst[1], &src[1]);
        copy(&mut dst[0], &src[0]);
        assert_eq!(words, [0, 1, 2, 3, 4]);
    }
}
