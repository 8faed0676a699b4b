//! Copying a block out of the cache into memory that is not in it, without
//! reading that memory first.
//!
//! A plain store to a line the cache does not hold makes the processor
//! read the line before it writes it, so copying a block from the cache
//! into cold memory moves its bytes over the memory bus twice: the
//! destination's lines read for ownership, then written back. [`copy`] writes every whole
//! line of the destination with non-temporal stores instead, which send
//! the line to memory without reading it. It pays where the source is
//! in the cache and the destination is not (a bucket sorted in the
//! cache, copied to its place in a large sequence), and costs where the
//! destination is read again soon (it is no longer cached).

use bytemuck::Pod;

use super::line_writer::stream_line;
use super::prefetch::LINE_BYTES;

/// Copies `src` into `dst` (of the same length): the destination's whole
/// 64-byte lines by non-temporal stores, its ends plainly. The stores
/// are ordered before the function returns, so a later synchronisation
/// publishes them as it does plain ones.
///
/// # Examples
///
/// ```
/// use bsp_core::expert::stream;
///
/// let src: Vec<u64> = (0..1000).collect();
/// let mut dst = vec![0u64; 1003];
/// stream::copy(&mut dst[3..], &src); // any alignment
/// assert_eq!(&dst[3..], &src[..]);
/// ```
///
/// # Panics
///
/// If the lengths differ.
///
/// # Cost
///
/// One read of `src` and one write of `dst`'s bytes; none of `dst`'s
/// lines are read.
pub fn copy<T: Pod>(dst: &mut [T], src: &[T]) {
    assert_eq!(
        dst.len(),
        src.len(),
        "stream::copy: a destination of {} elements for a source of {}",
        dst.len(),
        src.len()
    );
    let (dst, src) = (
        bytemuck::cast_slice_mut::<T, u8>(dst),
        bytemuck::cast_slice::<T, u8>(src),
    );
    // The destination's bytes before its first whole line, and after its
    // last.
    let head = dst.as_ptr().align_offset(LINE_BYTES).min(dst.len());
    let lines = (dst.len() - head) / LINE_BYTES;
    let tail = head + lines * LINE_BYTES;
    dst[..head].copy_from_slice(&src[..head]);
    for k in 0..lines {
        let at = head + k * LINE_BYTES;
        let (from, to) = (&src[at..at + LINE_BYTES], &mut dst[at..at + LINE_BYTES]);
        // SAFETY: both slices are one line long (cut so above, and `src`
        // is as long as `dst`); `to` starts a whole line of `dst` (`head`
        // is the offset of its first aligned address), so it is aligned
        // to 64.
        unsafe { stream_line(from.as_ptr(), to.as_mut_ptr()) };
    }
    dst[tail..].copy_from_slice(&src[tail..]);
    super::line_writer::fence();
}

#[cfg(test)]
mod tests {
    use super::copy;

    #[test]
    fn every_alignment_and_length_copies_exactly() {
        let src: Vec<u8> = (0..700u32).map(|i| (i * 7 + 3) as u8).collect();
        for offset in 0..70 {
            for len in [0, 1, 63, 64, 65, 127, 128, 129, 500, 630] {
                let mut dst = vec![0u8; 700 + 70];
                copy(&mut dst[offset..offset + len], &src[..len]);
                assert_eq!(&dst[offset..offset + len], &src[..len], "{offset} {len}");
                assert!(dst[..offset].iter().all(|&b| b == 0));
                assert!(dst[offset + len..].iter().all(|&b| b == 0));
            }
        }
    }

    #[test]
    #[should_panic(expected = "a destination of 2 elements for a source of 3")]
    fn lengths_must_match() {
        copy(&mut [0u32; 2], &[1, 2, 3]);
    }
}
