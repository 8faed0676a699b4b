//! Segment lists: the bytes one processor hands another in one exchange.
//!
//! A stream of records is kept as a list of reference-counted byte
//! segments rather than one buffer, so that a router can cut it into parts
//! and re-bin the parts, and a transport can pass them between threads,
//! without copying the payload. This is the bottom layer of the crate: it
//! imports nothing from the rest of it.

use std::ops::Range;

use bytes::Bytes;
use smallvec::SmallVec;

/// The bytes one processor sends to another in one exchange, as a list of
/// segments. Segments are reference-counted, so handing a list to another
/// thread moves pointers, not data. A list of one segment, what most
/// streams are, is kept inline: a small superstep allocates no list.
pub(crate) type Segments = SmallVec<[Bytes; 1]>;

/// A segment list of `bytes` alone.
#[inline]
pub(crate) fn one_segment(bytes: Bytes) -> Segments {
    SmallVec::from_buf([bytes])
}

/// The most bytes [`copy_bytes`] hands `memcpy` at once. glibc's
/// `memmove` copies with `rep movsb` below a size it derives from the
/// caches (on AMD processors, the L2's) and with a loop of vector moves
/// above it, which was the slower of the two on AMD-2b (BENCHMARKS.md,
/// section 14e): two processes each copying 1 MiB between mapped buffers
/// moved 55-59 GB/s in one call and 66-68 GB/s in calls of 256 KiB, and
/// 8 MiB 42 against 45-47 GB/s. 256 KiB lies below the L2 of the
/// processors measured (and where it does not, every piece takes the
/// vector loop, as the whole copy would).
const COPY_PIECE: usize = 256 << 10;

/// Copies `from` into `out` (of the same length) in pieces of at most
/// [`COPY_PIECE`] bytes.
#[inline]
pub(crate) fn copy_bytes(out: &mut [u8], from: &[u8]) {
    if out.len() <= COPY_PIECE {
        out.copy_from_slice(from);
    } else {
        copy_in_pieces(out, from);
    }
}

/// Copies `from` into `out` (of the same length), with copies of a
/// length known when compiling for record headers and small payloads: a
/// call to `memcpy` costs more than they do.
#[inline]
pub(crate) fn copy_short(out: &mut [u8], from: &[u8]) {
    match out.len() {
        4 => out.copy_from_slice(&from[..4]),
        8 => out.copy_from_slice(&from[..8]),
        12 => out.copy_from_slice(&from[..12]),
        16 => out.copy_from_slice(&from[..16]),
        _ => copy_bytes(out, from),
    }
}

/// [`copy_bytes`] of more than a piece: out of line, so that the copies
/// of a few bytes that inline `copy_bytes` stay small.
#[inline(never)]
fn copy_in_pieces(out: &mut [u8], from: &[u8]) {
    for (to, piece) in out.chunks_mut(COPY_PIECE).zip(from.chunks(COPY_PIECE)) {
        to.copy_from_slice(piece);
    }
}

/// Total length in bytes of a segment list.
pub(crate) fn segments_len(segments: &[Bytes]) -> usize {
    segments.iter().map(Bytes::len).sum()
}

/// Cuts a segment list into consecutive pieces front to back, without
/// copying: each call continues where the previous one ended, so cutting a
/// list of s segments into k pieces costs O(k + s), not O(k · s).
pub(crate) struct SegmentCursor<'a> {
    segments: &'a [Bytes],
    segment: usize,
    pos: usize,
}

impl<'a> SegmentCursor<'a> {
    pub(crate) fn new(segments: &'a [Bytes]) -> Self {
        SegmentCursor {
            segments,
            segment: 0,
            pos: 0,
        }
    }

    /// Appends the next `len` bytes to `out` as zero-copy slices.
    ///
    /// # Panics
    ///
    /// If fewer than `len` bytes are left, which would be a bug in the runtime.
    pub(crate) fn take(&mut self, mut len: usize, out: &mut Segments) {
        while len > 0 {
            let seg = self
                .segments
                .get(self.segment)
                .expect("bsp: a cut past the end of the segments");
            let n = (seg.len() - self.pos).min(len);
            if n > 0 {
                out.push(seg.slice(self.pos..self.pos + n));
            }
            self.pos += n;
            len -= n;
            if self.pos == seg.len() {
                self.segment += 1;
                self.pos = 0;
            }
        }
    }

    /// The next byte, or `None` at the end.
    pub(crate) fn next_byte(&mut self) -> Option<u8> {
        loop {
            let seg = self.segments.get(self.segment)?;
            if self.pos < seg.len() {
                self.pos += 1;
                return Some(seg[self.pos - 1]);
            }
            self.segment += 1;
            self.pos = 0;
        }
    }
}

/// Copies the first `out.len()` bytes of `segments` into `out` (fewer if
/// the list is shorter).
pub(crate) fn copy_prefix(segments: &[Bytes], out: &mut [u8]) {
    let mut at = 0;
    for seg in segments {
        if at == out.len() {
            break;
        }
        let n = seg.len().min(out.len() - at);
        out[at..at + n].copy_from_slice(&seg[..n]);
        at += n;
    }
}

/// Reads a segment list front to back as one stream, without joining it.
pub(crate) struct SegmentReader<'a> {
    segments: &'a [Bytes],
    segment: usize,
    pos: usize,
}

impl<'a> SegmentReader<'a> {
    pub(crate) fn new(segments: &'a [Bytes]) -> Self {
        let mut r = SegmentReader {
            segments,
            segment: 0,
            pos: 0,
        };
        r.skip_exhausted();
        r
    }

    fn skip_exhausted(&mut self) {
        while self.segment < self.segments.len() && self.pos == self.segments[self.segment].len() {
            self.segment += 1;
            self.pos = 0;
        }
    }

    /// Whether every byte has been read.
    pub(crate) fn is_at_end(&self) -> bool {
        self.segment == self.segments.len()
    }

    /// The bytes left in the current segment (none at the end), to be
    /// read in place and then passed with
    /// [`advance_in_segment`](SegmentReader::advance_in_segment).
    #[inline]
    pub(crate) fn rest_of_segment(&self) -> &'a [u8] {
        self.segments
            .get(self.segment)
            .map_or(&[][..], |seg| &seg[self.pos..])
    }

    /// Moves `n` bytes on, at most the length of
    /// [`rest_of_segment`](SegmentReader::rest_of_segment).
    #[inline]
    pub(crate) fn advance_in_segment(&mut self, n: usize) {
        self.pos += n;
        debug_assert!(self.pos <= self.segments[self.segment].len());
        if self.pos == self.segments[self.segment].len() {
            self.skip_exhausted();
        }
    }

    /// Copies the next `out.len()` bytes into `out`; false if the stream is shorter.
    #[inline]
    pub(crate) fn read_into(&mut self, out: &mut [u8]) -> bool {
        // Fast path: the bytes lie inside the current segment (a record of
        // a few bytes nearly always does).
        if let Some(seg) = self.segments.get(self.segment) {
            let end = self.pos + out.len();
            if end < seg.len() {
                let from = &seg[self.pos..end];
                copy_short(out, from);
                self.pos = end;
                return true;
            }
        }
        self.read_into_across(out)
    }

    /// [`read_into`](SegmentReader::read_into) where the bytes may cross
    /// segment borders: kept out of line so that the fast path inlines.
    #[cold]
    #[inline(never)]
    fn read_into_across(&mut self, out: &mut [u8]) -> bool {
        let mut done = 0;
        self.read_pieces(out.len(), |piece| {
            copy_bytes(&mut out[done..done + piece.len()], piece);
            done += piece.len();
        })
    }

    /// Passes the next `n` bytes to `sink` in contiguous pieces; false if
    /// the stream is shorter.
    pub(crate) fn read_pieces(&mut self, n: usize, mut sink: impl FnMut(&[u8])) -> bool {
        self.walk(n, |seg, range| sink(&seg[range]))
    }

    /// Appends the next `n` bytes to `out` as zero-copy slices; false if
    /// the stream is shorter.
    pub(crate) fn read_slices(&mut self, n: usize, out: &mut Segments) -> bool {
        self.walk(n, |seg, range| out.push(seg.slice(range)))
    }

    /// Passes the next `n` bytes to `sink` as ranges of the segments that
    /// hold them, in order; false if the stream is shorter.
    fn walk(&mut self, mut n: usize, mut sink: impl FnMut(&'a Bytes, Range<usize>)) -> bool {
        while n > 0 {
            let Some(seg) = self.segments.get(self.segment) else {
                return false;
            };
            let take = (seg.len() - self.pos).min(n);
            sink(seg, self.pos..self.pos + take);
            n -= take;
            self.pos += take;
            self.skip_exhausted();
        }
        true
    }

    /// Skips `n` bytes; false if the stream is shorter.
    pub(crate) fn skip(&mut self, n: usize) -> bool {
        self.read_pieces(n, |_| {})
    }

    /// Reads the next 8 bytes as a native-endian `u64`.
    ///
    /// # Panics
    ///
    /// If fewer than 8 bytes are left, which would be a bug in the runtime.
    pub(crate) fn read_u64(&mut self) -> u64 {
        let mut raw = [0u8; 8];
        assert!(self.read_into(&mut raw), "bsp: truncated stream");
        u64::from_ne_bytes(raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytewise(data: &[u8]) -> Segments {
        data.iter().map(|&b| Bytes::from(vec![b])).collect()
    }

    #[test]
    fn large_reads_copy_every_byte_in_pieces() {
        // Lengths around the piece size and its multiples, from one
        // segment and across two, at an odd offset.
        for len in [
            COPY_PIECE - 1,
            COPY_PIECE,
            COPY_PIECE + 1,
            3 * COPY_PIECE + 17,
        ] {
            let data: Vec<u8> = (0..len + 3).map(|i| (i * 7 + i / 251) as u8).collect();
            let whole = vec![Bytes::from(data.clone())];
            let (a, b) = data.split_at(len / 2);
            let two = vec![Bytes::copy_from_slice(a), Bytes::copy_from_slice(b)];
            for segments in [whole, two] {
                let mut r = SegmentReader::new(&segments);
                assert!(r.skip(1));
                let mut out = vec![0u8; len];
                assert!(r.read_into(&mut out));
                assert!(out == data[1..len + 1], "{len} bytes");
            }
        }
    }

    #[test]
    fn slices_and_reads_cross_segment_borders() {
        let whole: Vec<u8> = (0..20).collect();
        let tiny = bytewise(&whole);
        assert_eq!(segments_len(&tiny), 20);
        let mut part = Segments::new();
        let mut from_two = SegmentCursor::new(&tiny);
        from_two.take(2, &mut Segments::new());
        from_two.take(5, &mut part);
        assert_eq!(part.concat(), whole[2..7].to_vec());
        let mut r = SegmentReader::new(&tiny);
        let mut four = [0u8; 4];
        assert!(r.read_into(&mut four));
        assert_eq!(four, [0, 1, 2, 3]);
        assert!(r.skip(8));
        assert_eq!(
            r.read_u64(),
            u64::from_ne_bytes([12, 13, 14, 15, 16, 17, 18, 19])
        );
        assert!(r.is_at_end());
        assert!(!r.skip(1));
        let mut cursor = SegmentCursor::new(&tiny);
        let mut cut = Segments::new();
        cursor.take(3, &mut cut);
        assert_eq!(cursor.next_byte(), Some(3));
        cursor.take(4, &mut cut);
        assert_eq!(cut.concat(), [0, 1, 2, 4, 5, 6, 7]);
        cursor.take(12, &mut cut);
        assert_eq!(cursor.next_byte(), None);
        let mut prefix = [0u8; 3];
        copy_prefix(&tiny, &mut prefix);
        assert_eq!(prefix, [0, 1, 2]);
    }
}
