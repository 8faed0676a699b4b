//! The byte format of one superstep's communication, and the buffers that
//! collect it.
//!
//! Everything a processor requests during a superstep for destination `j`
//! (puts, get requests, queue messages, get replies) is one byte stream of
//! records, each a 24-byte header followed by its payload:
//!
//! ```text
//! tag: u32 | id: u32 | a: u64 | b: u64 | payload
//! ```
//!
//! | tag       | id          | a                   | b                   | payload |
//! |-----------|-------------|---------------------|---------------------|---------|
//! | PUT       | coarray     | element offset      | payload bytes       | data |
//! | GET       | coarray     | element offset      | element count       | requester's get id (u64) |
//! | MESSAGES  | queue       | message count       | payload bytes       | encoded messages |
//! | REPLY     | 0           | requester's get id  | payload bytes       | data |
//!
//! Headers are native-endian: both transports run one binary on one
//! architecture. Consecutive messages to the same queue share one header.

use bytes::Bytes;

use crate::transport::Block;

pub(crate) const HEADER_BYTES: usize = 24;

/// Send buffers kept for reuse, per destination.
const MAX_SPARE: usize = 2;
/// Smaller buffers are cheap to allocate again and not kept.
const MIN_SPARE_BYTES: usize = 4096;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum Tag {
    Put = 1,
    Get = 2,
    Messages = 3,
    Reply = 4,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Header {
    pub(crate) tag: Tag,
    pub(crate) id: u32,
    pub(crate) a: u64,
    pub(crate) b: u64,
}

impl Header {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.tag as u32).to_ne_bytes());
        out.extend_from_slice(&self.id.to_ne_bytes());
        out.extend_from_slice(&self.a.to_ne_bytes());
        out.extend_from_slice(&self.b.to_ne_bytes());
    }

    fn decode(bytes: &[u8; HEADER_BYTES]) -> Option<Header> {
        let word = |i: usize| u64::from_ne_bytes(bytes[i..i + 8].try_into().unwrap());
        let tag = match u32::from_ne_bytes(bytes[0..4].try_into().unwrap()) {
            1 => Tag::Put,
            2 => Tag::Get,
            3 => Tag::Messages,
            4 => Tag::Reply,
            _ => return None,
        };
        Some(Header {
            tag,
            id: u32::from_ne_bytes(bytes[4..8].try_into().unwrap()),
            a: word(8),
            b: word(16),
        })
    }

    /// Payload length in bytes.
    pub(crate) fn payload_len(&self) -> usize {
        match self.tag {
            Tag::Get => 8,
            Tag::Put | Tag::Messages | Tag::Reply => self.b as usize,
        }
    }
}

/// A finished piece of an outgoing stream.
enum Piece {
    Bytes(Bytes),
    /// `len` bytes from byte `start` of a coarray's local part, read at the
    /// sync (see [`Ctx::put_from`](crate::Ctx::put_from)).
    Lent {
        array: u32,
        start: usize,
        len: usize,
    },
}

impl Piece {
    fn len(&self) -> usize {
        match self {
            Piece::Bytes(b) => b.len(),
            Piece::Lent { len, .. } => *len,
        }
    }
}

/// The outgoing stream for one destination: finished pieces plus the
/// buffer currently being appended to.
#[derive(Default)]
struct Stream {
    segments: Vec<Piece>,
    current: Vec<u8>,
    /// Position in `current` of the header of an open MESSAGES record that
    /// further sends to the same queue may extend, and that queue's id.
    open_messages: Option<(usize, u32)>,
    records: u64,
    /// Buffers handed to the router in earlier syncs, kept so that they can
    /// be reused once every receiver has dropped them: a long computation
    /// then allocates (and page-faults) its send buffers only once.
    spare: Vec<Bytes>,
}

impl Stream {
    fn len(&self) -> usize {
        self.segments.iter().map(Piece::len).sum::<usize>() + self.current.len()
    }

    fn flush(&mut self) {
        if !self.current.is_empty() {
            let worth_keeping = self.current.len() >= MIN_SPARE_BYTES;
            let buffer = Bytes::from(std::mem::take(&mut self.current));
            if worth_keeping && self.spare.len() < MAX_SPARE {
                self.spare.push(buffer.clone());
            }
            self.segments.push(Piece::Bytes(buffer));
        }
        self.open_messages = None;
    }

    /// Before appending to an empty `current`: reuse a spare buffer that
    /// nobody else references any more, if there is one.
    fn reuse_spare(&mut self) {
        if self.current.capacity() > 0 {
            return;
        }
        while let Some(old) = self.spare.pop() {
            if let Ok(unique) = old.try_into_mut() {
                let mut buffer = Vec::from(unique);
                buffer.clear();
                self.current = buffer;
                return;
            }
        }
    }
}

/// Everything one processor has requested during the current superstep, per
/// destination, in call order.
pub(crate) struct Outbox {
    streams: Vec<Stream>,
}

impl Outbox {
    pub(crate) fn new(nprocs: usize) -> Self {
        Outbox {
            streams: (0..nprocs).map(|_| Stream::default()).collect(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.streams.iter().all(|s| s.records == 0)
    }

    /// Number of records requested so far this superstep.
    pub(crate) fn records(&self) -> u64 {
        self.streams.iter().map(|s| s.records).sum()
    }

    /// Total bytes requested so far this superstep.
    pub(crate) fn bytes(&self) -> usize {
        self.streams.iter().map(Stream::len).sum()
    }

    /// Appends a record whose payload is copied from `payload`.
    pub(crate) fn push(&mut self, dst: usize, header: Header, payload: &[u8]) {
        let s = &mut self.streams[dst];
        s.open_messages = None;
        s.reuse_spare();
        s.current.reserve(HEADER_BYTES + payload.len());
        header.encode(&mut s.current);
        s.current.extend_from_slice(payload);
        s.records += 1;
    }

    /// Appends a record whose payload is handed over without a copy.
    pub(crate) fn push_owned(&mut self, dst: usize, header: Header, payload: Bytes) {
        let s = &mut self.streams[dst];
        header.encode(&mut s.current);
        s.flush();
        if !payload.is_empty() {
            s.segments.push(Piece::Bytes(payload));
        }
        s.records += 1;
    }

    /// Appends a record whose payload is `len` bytes of coarray `array`'s
    /// local part from byte `start`, to be read when the stream is taken.
    pub(crate) fn push_lent(
        &mut self,
        dst: usize,
        header: Header,
        array: u32,
        start: usize,
        len: usize,
    ) {
        let s = &mut self.streams[dst];
        header.encode(&mut s.current);
        s.flush();
        if len > 0 {
            s.segments.push(Piece::Lent { array, start, len });
        }
        s.records += 1;
    }

    /// Appends one encoded message for `queue`, extending the previous
    /// MESSAGES record when it was the last thing sent to `dst` and is for
    /// the same queue. `encode` appends the message's bytes.
    pub(crate) fn push_message(
        &mut self,
        dst: usize,
        queue: u32,
        encode: impl FnOnce(&mut Vec<u8>),
    ) {
        let s = &mut self.streams[dst];
        s.reuse_spare();
        let at = match s.open_messages {
            Some((at, q)) if q == queue => at,
            _ => {
                let at = s.current.len();
                Header {
                    tag: Tag::Messages,
                    id: queue,
                    a: 0,
                    b: 0,
                }
                .encode(&mut s.current);
                s.open_messages = Some((at, queue));
                at
            }
        };
        let before = s.current.len();
        encode(&mut s.current);
        let added = (s.current.len() - before) as u64;
        let field = |i: usize| at + i..at + i + 8;
        let count = u64::from_ne_bytes(s.current[field(8)].try_into().unwrap()) + 1;
        let bytes = u64::from_ne_bytes(s.current[field(16)].try_into().unwrap()) + added;
        s.current[field(8)].copy_from_slice(&count.to_ne_bytes());
        s.current[field(16)].copy_from_slice(&bytes.to_ne_bytes());
        s.records += 1;
    }

    /// Hands out the streams, one block per destination, and empties the
    /// outbox. `lent(array)` gives the whole local part of a coarray lent for
    /// this sync, as bytes.
    pub(crate) fn take(&mut self, lent: impl Fn(u32) -> Bytes) -> Vec<Block> {
        self.streams
            .iter_mut()
            .map(|s| {
                s.flush();
                s.records = 0;
                s.segments
                    .drain(..)
                    .map(|piece| match piece {
                        Piece::Bytes(b) => b,
                        Piece::Lent { array, start, len } => lent(array).slice(start..start + len),
                    })
                    .collect()
            })
            .collect()
    }
}

/// Reads a stream that arrives as a list of segments, without joining them.
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

    pub(crate) fn is_at_end(&self) -> bool {
        self.segment == self.segments.len()
    }

    /// Copies the next `out.len()` bytes into `out`; false if the stream is shorter.
    pub(crate) fn read_into(&mut self, out: &mut [u8]) -> bool {
        let mut done = 0;
        while done < out.len() {
            let Some(seg) = self.segments.get(self.segment) else {
                return false;
            };
            let n = (seg.len() - self.pos).min(out.len() - done);
            out[done..done + n].copy_from_slice(&seg[self.pos..self.pos + n]);
            done += n;
            self.pos += n;
            self.skip_exhausted();
        }
        true
    }

    /// Passes the next `n` bytes to `sink` in contiguous pieces.
    pub(crate) fn read_pieces(&mut self, mut n: usize, mut sink: impl FnMut(&[u8])) -> bool {
        while n > 0 {
            let Some(seg) = self.segments.get(self.segment) else {
                return false;
            };
            let take = (seg.len() - self.pos).min(n);
            sink(&seg[self.pos..self.pos + take]);
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

    /// Reads the next record header, or `None` at the end of the stream.
    ///
    /// # Panics
    ///
    /// On a malformed stream, which would be a bug in the runtime.
    pub(crate) fn header(&mut self) -> Option<Header> {
        if self.is_at_end() {
            return None;
        }
        let mut raw = [0u8; HEADER_BYTES];
        assert!(self.read_into(&mut raw), "bsp: truncated record header");
        Some(Header::decode(&raw).expect("bsp: corrupt record header"))
    }

    pub(crate) fn read_u64(&mut self) -> u64 {
        let mut raw = [0u8; 8];
        assert!(self.read_into(&mut raw), "bsp: truncated record");
        u64::from_ne_bytes(raw)
    }
}

/// Zero-copy sub-range `[start, start + len)` of a segmented stream.
pub(crate) fn slice_segments(
    segments: &[Bytes],
    mut start: usize,
    mut len: usize,
    out: &mut Vec<Bytes>,
) {
    for seg in segments {
        if len == 0 {
            break;
        }
        if start >= seg.len() {
            start -= seg.len();
            continue;
        }
        let take = (seg.len() - start).min(len);
        out.push(seg.slice(start..start + take));
        start = 0;
        len -= take;
    }
    debug_assert_eq!(len, 0, "slice past the end of the stream");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn send_buffers_are_reused_once_released() {
        let mut out = Outbox::new(1);
        let put = |out: &mut Outbox| {
            let header = Header {
                tag: Tag::Put,
                id: 0,
                a: 0,
                b: 10_000,
            };
            out.push(0, header, &[1; 10_000]);
        };
        put(&mut out);
        let first = out.take(|_| unreachable!());
        let address = first[0][0].as_ptr();
        put(&mut out); // still referenced by `first`: a new buffer
        let second = out.take(|_| unreachable!());
        let second_address = second[0][0].as_ptr();
        assert_ne!(second_address, address);
        drop(first);
        drop(second);
        put(&mut out);
        let third = out.take(|_| unreachable!());
        assert_eq!(third[0][0].len(), 10_024);
        let reused = third[0][0].as_ptr();
        assert!(
            reused == address || reused == second_address,
            "a released buffer is reused"
        );
    }

    #[test]
    fn messages_share_a_header_and_reader_crosses_segments() {
        let mut out = Outbox::new(1);
        out.push_message(0, 7, |v| v.extend_from_slice(&[1, 2]));
        out.push_message(0, 7, |v| v.extend_from_slice(&[3]));
        out.push_owned(
            0,
            Header {
                tag: Tag::Put,
                id: 1,
                a: 0,
                b: 3,
            },
            Bytes::from_static(&[9, 9, 9]),
        );
        assert_eq!(out.records(), 3);
        let blocks = out.take(|_| unreachable!());
        // Re-split the stream at every byte to exercise segment crossing.
        let whole: Vec<u8> = blocks[0].iter().flat_map(|b| b.iter().copied()).collect();
        let tiny: Vec<Bytes> = whole.iter().map(|&b| Bytes::from(vec![b])).collect();
        let mut r = SegmentReader::new(&tiny);
        let h = r.header().unwrap();
        assert_eq!((h.tag, h.id, h.a, h.b), (Tag::Messages, 7, 2, 3));
        let mut m = [0u8; 3];
        assert!(r.read_into(&mut m));
        assert_eq!(m, [1, 2, 3]);
        let h = r.header().unwrap();
        assert_eq!((h.tag, h.b), (Tag::Put, 3));
        assert!(r.skip(3));
        assert!(r.header().is_none());
        let mut part = Vec::new();
        slice_segments(&tiny, 2, 5, &mut part);
        assert_eq!(part.concat(), whole[2..7].to_vec());
    }
}
