//! The send side of a superstep: the records a processor requests, kept per
//! destination in call order until the sync hands them to the router.

use bytes::Bytes;

use crate::segments::{one_segment, Segments};
#[cfg(test)]
use crate::wire::SHORT_PUT_BYTES;
use crate::wire::{Record, HEADER_BYTES};

/// Send buffers kept for reuse, per destination.
const MAX_SPARE: usize = 2;
/// Smaller buffers are cheap to allocate again and not kept.
const MIN_SPARE_BYTES: usize = 4096;

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
    pieces: Vec<Piece>,
    current: Vec<u8>,
    /// Position in `current` of the header of an open `Messages` record
    /// that further sends to the same queue may extend, and that queue's id.
    open_messages: Option<(usize, u32)>,
    records: u64,
    /// Bytes of the records' heads (headers, and get tickets) in the
    /// stream: what a placed exchange sends ahead of the payloads.
    head_bytes: u64,
    /// Buffers handed to the router in earlier syncs, kept so that they can
    /// be reused once every receiver has dropped them: a long computation
    /// then allocates (and page-faults) its send buffers only once.
    spare: Vec<Bytes>,
}

impl Stream {
    fn len(&self) -> usize {
        self.pieces.iter().map(Piece::len).sum::<usize>() + self.current.len()
    }

    fn flush(&mut self) {
        if let Some(buffer) = self.take_current() {
            self.pieces.push(Piece::Bytes(buffer));
        }
    }

    /// The bytes appended since the last piece, as one buffer (kept as a
    /// spare when large enough to be worth reusing); `None` when there
    /// are none.
    fn take_current(&mut self) -> Option<Bytes> {
        self.open_messages = None;
        if self.current.is_empty() {
            return None;
        }
        let worth_keeping = self.current.len() >= MIN_SPARE_BYTES;
        let buffer = Bytes::from(std::mem::take(&mut self.current));
        if worth_keeping && self.spare.len() < MAX_SPARE {
            self.spare.push(buffer.clone());
        }
        Some(buffer)
    }

    /// The stream's segments, emptying it: its pieces in order, the
    /// coarrays of lent pieces given by `lent`.
    #[inline]
    fn take_segments(&mut self, lent: &impl Fn(u32) -> Bytes) -> Segments {
        self.records = 0;
        self.head_bytes = 0;
        if self.pieces.is_empty() {
            // Nothing lent or flushed before: the usual small stream is
            // one buffer, with no list built.
            return self.take_current().map_or_else(Segments::new, one_segment);
        }
        self.flush();
        self.pieces
            .drain(..)
            .map(|piece| match piece {
                Piece::Bytes(b) => b,
                Piece::Lent { array, start, len } => lent(array).slice(start..start + len),
            })
            .collect()
    }

    /// Before appending to an empty `current`: reuse a spare buffer that
    /// nobody else references any more, if there is one. A spare that a
    /// receiver still reads (on threads a sender may start its next
    /// superstep before the receivers have applied its last one) stays
    /// kept for a later superstep.
    #[inline]
    fn reuse_spare(&mut self) {
        if self.current.capacity() > 0 {
            return;
        }
        let Some(free) = self.spare.iter().rposition(Bytes::is_unique) else {
            return;
        };
        if let Ok(mut unique) = self.spare.swap_remove(free).try_into_mut() {
            // Emptied first: turning a shared buffer back into a vector
            // moves its contents to the front.
            unique.clear();
            self.current = Vec::from(unique);
        }
    }

    /// Appends `record`'s header and ends the current buffer, so that a
    /// payload piece can follow it.
    fn header_then_piece(&mut self, record: Record, piece: Piece) {
        self.head_bytes += record.head_len() as u64;
        record.encode(&mut self.current);
        self.flush();
        if piece.len() > 0 {
            self.pieces.push(piece);
        }
    }
}

/// Everything one processor has requested during the current superstep, per
/// destination, in call order.
///
/// Only the destinations written to cost anything per superstep: a stream
/// is allocated on first use (and kept, with its spare buffers, for later
/// supersteps), and the destinations written to this superstep are listed,
/// so that counting and taking the streams is proportional to them, not
/// to p.
pub(crate) struct Outbox {
    streams: Vec<Option<Box<Stream>>>,
    /// Destinations with a record this superstep, in order of first use.
    touched: Vec<usize>,
    records: u64,
    /// Buffers of earlier shared payloads ([`shared_copy`](Outbox::shared_copy)),
    /// kept for reuse once every receiver has dropped them.
    shared_spare: Vec<Bytes>,
    /// An empty list for the next [`take`](Outbox::take)
    /// ([`recycle`](Outbox::recycle)).
    spare_list: Vec<(usize, Segments)>,
}

impl Outbox {
    pub(crate) fn new(nprocs: usize) -> Self {
        Outbox {
            streams: (0..nprocs).map(|_| None).collect(),
            touched: Vec::new(),
            records: 0,
            shared_spare: Vec::new(),
            spare_list: Vec::new(),
        }
    }

    /// A copy of `src` for several records to share
    /// ([`push_owned`](Outbox::push_owned) of its clones), written into
    /// the buffer of an earlier one that nobody references any more where
    /// one is large enough: a processor that multicasts in a loop then
    /// allocates (and page-faults) its buffer once, as its streams do.
    pub(crate) fn shared_copy(&mut self, src: &[u8]) -> Bytes {
        let free = self
            .shared_spare
            .iter()
            .rposition(|b| b.is_unique() && b.len() >= src.len());
        let copy = match free.map(|i| self.shared_spare.swap_remove(i).try_into_mut()) {
            Some(Ok(mut unique)) => {
                unique.clear();
                unique.extend_from_slice(src);
                unique.freeze()
            }
            _ => Bytes::copy_from_slice(src),
        };
        if copy.len() >= MIN_SPARE_BYTES {
            if self.shared_spare.len() >= MAX_SPARE {
                // The smallest goes: the next payload is as likely as
                // not the size of the last.
                let smallest = (0..self.shared_spare.len())
                    .min_by_key(|&i| self.shared_spare[i].len())
                    .expect("a full spare list is not empty");
                self.shared_spare.swap_remove(smallest);
            }
            self.shared_spare.push(copy.clone());
        }
        copy
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// Number of records requested so far this superstep.
    pub(crate) fn records(&self) -> u64 {
        self.records
    }

    /// Total bytes requested so far this superstep.
    pub(crate) fn bytes(&self) -> usize {
        self.touched
            .iter()
            .map(|&dst| self.streams[dst].as_ref().map_or(0, |s| s.len()))
            .sum()
    }

    /// Bytes requested so far this superstep for `dst`.
    pub(crate) fn bytes_to(&self, dst: usize) -> usize {
        self.streams[dst].as_ref().map_or(0, |s| s.len())
    }

    /// Bytes of the record heads requested so far this superstep for
    /// `dst`: what `placement::split` cuts out
    /// of its stream as the heads.
    pub(crate) fn head_bytes_to(&self, dst: usize) -> u64 {
        self.streams[dst].as_ref().map_or(0, |s| s.head_bytes)
    }

    /// The stream for `dst`, about to receive one more record.
    #[inline]
    fn stream(&mut self, dst: usize) -> &mut Stream {
        self.records += 1;
        let s = self.streams[dst].get_or_insert_with(Box::default);
        if s.records == 0 {
            self.touched.push(dst);
        }
        s.records += 1;
        s
    }

    /// Appends `record`, whose payload (none for a get request) is copied
    /// from `payload`.
    #[inline]
    pub(crate) fn push(&mut self, dst: usize, record: Record, payload: &[u8]) {
        debug_assert!(
            matches!(record, Record::Get { .. }) || record.payload_len() == payload.len(),
            "a record's payload is the bytes that follow it"
        );
        let s = self.stream(dst);
        s.open_messages = None;
        s.reuse_spare();
        s.current.reserve(record.header_len() + payload.len());
        s.head_bytes += record.head_len() as u64;
        record.encode(&mut s.current);
        append_payload(&mut s.current, payload);
    }

    /// Appends `record`, whose payload is handed over without a copy.
    pub(crate) fn push_owned(&mut self, dst: usize, record: Record, payload: Bytes) {
        self.stream(dst)
            .header_then_piece(record, Piece::Bytes(payload));
    }

    /// Appends `record`, whose payload is `len` bytes of coarray `array`'s
    /// local part from byte `start`, to be read when the streams are taken.
    pub(crate) fn push_lent(
        &mut self,
        dst: usize,
        record: Record,
        array: u32,
        start: usize,
        len: usize,
    ) {
        self.stream(dst)
            .header_then_piece(record, Piece::Lent { array, start, len });
    }

    /// Appends one encoded message for `queue`, extending the previous
    /// `Messages` record when it was the last thing sent to `dst` and is
    /// for the same queue. `encode` appends the message's bytes.
    pub(crate) fn push_message(
        &mut self,
        dst: usize,
        queue: u32,
        encode: impl FnOnce(&mut Vec<u8>),
    ) {
        let s = self.stream(dst);
        s.reuse_spare();
        let at = match s.open_messages {
            Some((at, q)) if q == queue => at,
            _ => {
                let at = s.current.len();
                let record = Record::messages(queue);
                s.head_bytes += record.head_len() as u64;
                record.encode(&mut s.current);
                s.open_messages = Some((at, queue));
                at
            }
        };
        let before = s.current.len();
        encode(&mut s.current);
        let added = s.current.len() - before;
        Record::add_message(&mut s.current[at..at + HEADER_BYTES], added);
    }

    /// Hands out the streams, as (destination, segment list) in destination
    /// order, one for each destination written to, and empties the outbox.
    /// `lent(array)` gives the whole local part of a coarray lent for this
    /// sync, as bytes.
    pub(crate) fn take(&mut self, lent: impl Fn(u32) -> Bytes) -> Vec<(usize, Segments)> {
        self.records = 0;
        self.touched.sort_unstable();
        let mut list = std::mem::take(&mut self.spare_list);
        list.reserve(self.touched.len());
        for &dst in &self.touched {
            let s = self.streams[dst].as_mut().expect("a touched stream exists");
            list.push((dst, s.take_segments(&lent)));
        }
        self.touched.clear();
        list
    }

    /// Takes back a list of (processor, segment list) that has been read,
    /// to hold the streams of a later [`take`](Outbox::take): a small
    /// superstep then allocates no list. Its segments are dropped.
    pub(crate) fn recycle(&mut self, mut list: Vec<(usize, Segments)>) {
        if list.capacity() > self.spare_list.capacity() {
            list.clear();
            self.spare_list = list;
        }
    }
}

/// Appends `payload` to `out`. The payloads of single-element puts (4, 8
/// or 16 bytes) are copied as blocks of a size known when compiling, not
/// through a call to `memcpy`: that call took 8% of the samples of
/// supersteps of 2048 one-word puts under MPI, and a put went from 17.7
/// to 17.1 ns (np = 2, AMD-2b, 2026-11-27).
#[inline(always)]
fn append_payload(out: &mut Vec<u8>, payload: &[u8]) {
    match payload.len() {
        4 => out.extend_from_slice(&block::<4>(payload)),
        8 => out.extend_from_slice(&block::<8>(payload)),
        16 => out.extend_from_slice(&block::<16>(payload)),
        _ => out.extend_from_slice(payload),
    }
}

/// `bytes`, which are `N` long, as an array.
#[inline(always)]
fn block<const N: usize>(bytes: &[u8]) -> [u8; N] {
    bytes.try_into().expect("a block of the length matched")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segments::SegmentReader;
    use crate::wire::RecordReader;

    fn put(bytes: u64) -> Record {
        Record::Put {
            array: 0,
            offset: 0,
            bytes,
        }
    }

    #[test]
    fn payloads_of_every_short_length_follow_their_headers() {
        let mut out = Outbox::new(1);
        let payloads: Vec<Vec<u8>> = (0..=20u8)
            .map(|n| (0..n).map(|i| n ^ i).collect())
            .collect();
        for payload in &payloads {
            out.push(0, put(payload.len() as u64), payload);
        }
        let streams = out.take(|_| unreachable!());
        let mut records = RecordReader::new(SegmentReader::new(&streams[0].1));
        for payload in &payloads {
            let record = records.next().expect("one record a payload");
            assert_eq!(record, put(payload.len() as u64));
            let mut back = vec![0xff; payload.len()];
            assert!(records.payload().read_into(&mut back));
            assert_eq!(&back, payload);
        }
        assert!(records.next().is_none());
    }

    #[test]
    fn a_shared_copy_reuses_a_buffer_nobody_holds() {
        let mut out = Outbox::new(2);
        let first = out.shared_copy(&[1; 8192]);
        let at = first.as_ptr();
        // Still held: the next copy gets a buffer of its own.
        let second = out.shared_copy(&[2; 8192]);
        let at2 = second.as_ptr();
        assert_ne!(at2, at);
        assert!(first.iter().all(|&b| b == 1));
        drop((first, second));
        // Released: one of them written into (the spares keep both alive,
        // so a new allocation could not land at either address).
        let third = out.shared_copy(&[3; 5000]);
        assert!(third.as_ptr() == at || third.as_ptr() == at2);
        assert_eq!(&third[..], &[3; 5000][..]);
        // Too short for the spares to keep.
        assert_eq!(&out.shared_copy(&[4; 10])[..], &[4; 10][..]);
        assert!(out.shared_spare.len() <= MAX_SPARE);
    }

    #[test]
    fn send_buffers_are_reused_once_released() {
        let mut out = Outbox::new(1);
        out.push(0, put(10_000), &[1; 10_000]);
        let first = out.take(|_| unreachable!());
        let address = first[0].1[0].as_ptr();
        out.push(0, put(10_000), &[1; 10_000]); // still referenced by `first`: a new buffer
        let second = out.take(|_| unreachable!());
        let second_address = second[0].1[0].as_ptr();
        assert_ne!(second_address, address);
        drop(first);
        drop(second);
        out.push(0, put(10_000), &[1; 10_000]);
        let third = out.take(|_| unreachable!());
        assert_eq!(third[0].1[0].len(), 10_012);
        let reused = third[0].1[0].as_ptr();
        assert!(
            reused == address || reused == second_address,
            "a released buffer is reused"
        );
    }

    #[test]
    fn messages_share_a_header_and_owned_payloads_follow_theirs() {
        let mut out = Outbox::new(1);
        out.push_message(0, 7, |v| v.extend_from_slice(&[1, 2]));
        out.push_message(0, 7, |v| v.extend_from_slice(&[3]));
        out.push_owned(0, put(3), Bytes::from_static(&[9, 9, 9]));
        assert_eq!(out.records(), 3);
        assert_eq!(out.bytes(), HEADER_BYTES + SHORT_PUT_BYTES + 6);
        let streams = out.take(|_| unreachable!());
        // Re-split the stream at every byte to exercise segment crossing.
        let whole: Vec<u8> = streams[0]
            .1
            .iter()
            .flat_map(|b| b.iter().copied())
            .collect();
        let tiny: Vec<Bytes> = whole.iter().map(|&b| Bytes::from(vec![b])).collect();
        let mut r = RecordReader::new(SegmentReader::new(&tiny));
        assert_eq!(
            r.next(),
            Some(Record::Messages {
                queue: 7,
                count: 2,
                bytes: 3
            })
        );
        let mut m = [0u8; 3];
        assert!(r.payload().read_into(&mut m));
        assert_eq!(m, [1, 2, 3]);
        let record = r.next().unwrap();
        assert_eq!(record, put(3));
        r.skip_payload(&record);
        assert!(r.next().is_none());
    }
}
