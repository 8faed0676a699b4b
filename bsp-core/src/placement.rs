//! Placed delivery: payloads received straight into the coarrays they
//! are put to, with no copy out of a receive buffer.
//!
//! A stream interleaves record headers and payloads, so a receiver can
//! only find where a payload goes after it has received the stream, and
//! must then copy the payload out of its receive buffer: one more pass
//! over every byte than `MPI_Alltoallv`, which receives into the
//! application's memory. Where the records are large, a transport that
//! can scatter a receive (MPI, through a datatype over absolute
//! addresses) is better served by sending each stream in two parts: first
//! its *heads* (the headers, a few bytes per record), from which the
//! receiver works out where each payload goes, then its *bodies* (the
//! payloads), which the transport writes there.
//!
//! The receiver's plan is all or nothing per sender, and nothing at all
//! when two puts of the superstep write overlapping bytes, so that the
//! result is the one of applying every put in order:
//!
//! * a sender whose every record is a put, in bounds, to a coarray that
//!   is not lent out this sync, has its bodies placed;
//! * any other sender (a message, a get reply, a put that will fail its
//!   checks, this processor itself) has its bodies received as bytes,
//!   and its heads and bodies are joined back into a stream that the
//!   ordinary delivery applies, with its checks and errors;
//! * since no two puts overlap, the order in which placed and applied
//!   puts land does not change the result.

use std::collections::HashMap;

use bytes::Bytes;

use crate::delivery::{byte_range, Inbound};
use crate::segments::{one_segment, segments_len, SegmentCursor, SegmentReader, Segments};
use crate::transport::{blocks_len, Blocks};
use crate::wire::{Record, RecordReader};

/// A piece of this processor's memory into which a placed routing writes
/// received bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Region {
    pub(crate) at: *mut u8,
    pub(crate) len: usize,
}

/// What a placed routing received from one processor.
pub(crate) struct Placed {
    /// The sender.
    pub(crate) src: usize,
    /// The heads it sent.
    pub(crate) heads: Segments,
    /// Its bodies as bytes, or `None` when they were written into the
    /// regions the plan gave for them.
    pub(crate) bodies: Option<Segments>,
    /// Bytes of its bodies.
    pub(crate) body_len: usize,
}

impl Placed {
    /// Bytes received from the sender: heads and bodies.
    pub(crate) fn len(&self) -> usize {
        segments_len(&self.heads) + self.body_len
    }
}

/// The receiver's side of a placed routing: given the heads received, by
/// sender (this processor's own among them), for each sender the regions
/// its bodies fill, in order, or `None` to receive them as bytes.
///
/// The regions of one call must be valid for writes, must not overlap one
/// another, must add up to the length of the bodies the sender sends, and
/// must not be read or written by anything else until the routing
/// returns.
pub(crate) type Plan<'a> = &'a mut dyn FnMut(&[(usize, Segments)]) -> Vec<Option<Vec<Region>>>;

/// Cuts each stream into its heads (the records' headers, copied into one
/// buffer) and its bodies (their payloads, zero-copy slices of the
/// stream). Costs O(records) per stream.
pub(crate) fn split(streams: Blocks) -> (Blocks, Blocks) {
    let mut heads = Vec::with_capacity(streams.len());
    let mut bodies = Vec::with_capacity(streams.len());
    for (dst, stream) in streams {
        let mut head = Vec::new();
        let mut body = Segments::new();
        let mut records = RecordReader::new(SegmentReader::new(&stream));
        while let Some(record) = records.next() {
            record.encode(&mut head);
            assert!(
                records.payload().read_slices(record.body_len(), &mut body),
                "bsp: truncated record"
            );
        }
        heads.push((dst, one_segment(Bytes::from(head))));
        bodies.push((dst, body));
    }
    (heads, bodies)
}

/// The stream that `heads` and `bodies` (as [`split`] cut them) came
/// from, as zero-copy slices of both.
pub(crate) fn rejoin(heads: &Segments, bodies: &Segments) -> Segments {
    let mut stream = Segments::new();
    let mut head_cut = SegmentCursor::new(heads);
    let mut body_cut = SegmentCursor::new(bodies);
    let mut records = RecordReader::new(SegmentReader::new(heads));
    while let Some(record) = records.next() {
        head_cut.take(record.head_len(), &mut stream);
        body_cut.take(record.body_len(), &mut stream);
    }
    stream
}

/// A processor's outgoing streams, one per destination written to, as
/// the outbox handed them out or already cut by [`split`] (when their
/// heads travel in the sync's row).
pub(crate) enum Streams {
    Whole(Blocks),
    Cut { heads: Blocks, bodies: Blocks },
}

impl Streams {
    /// The streams, whole (a cut stream is joined back, without copying).
    pub(crate) fn whole(self) -> Blocks {
        match self {
            Streams::Whole(streams) => streams,
            Streams::Cut { heads, bodies } => heads
                .into_iter()
                .zip(bodies)
                .map(|((dst, head), (_, body))| (dst, rejoin(&head, &body)))
                .collect(),
        }
    }

    /// The streams cut into heads and bodies, as [`split`] returns them.
    pub(crate) fn cut(self) -> (Blocks, Blocks) {
        match self {
            Streams::Whole(streams) => split(streams),
            Streams::Cut { heads, bodies } => (heads, bodies),
        }
    }

    /// Bytes of all the streams.
    pub(crate) fn len(&self) -> u64 {
        match self {
            Streams::Whole(streams) => blocks_len(streams),
            Streams::Cut { heads, bodies } => blocks_len(heads) + blocks_len(bodies),
        }
    }
}

/// A put as the receiver's plan sees it: bytes `start..end` of coarray
/// `array`, or `None` when it will fail its checks.
type Target = Option<(u32, usize, usize)>;

impl Inbound<'_> {
    /// The receiver's plan of a placed exchange (see the module docs):
    /// for each sender in `heads`, the regions of this processor's
    /// coarrays its bodies fill, or `None` to receive them as bytes; and
    /// the number of records placed.
    pub(crate) fn plan(&mut self, heads: &[(usize, Segments)]) -> (Vec<Option<Vec<Region>>>, u64) {
        // Every coarray written to, looked up once: its bytes' address and
        // length, or `None` if it cannot take a put now.
        let mut arrays: HashMap<u32, Option<(*mut u8, usize, usize)>> = HashMap::new();
        // Per sender: its puts, and whether all of them can be placed.
        let mut targets: Vec<(Vec<Target>, bool)> = Vec::with_capacity(heads.len());
        for &(src, ref head) in heads {
            let mut puts = Vec::new();
            let mut placeable = src != self.me;
            let mut records = RecordReader::new(SegmentReader::new(head));
            while let Some(record) = records.next() {
                let Record::Put {
                    array,
                    offset,
                    bytes,
                } = record
                else {
                    placeable = false;
                    continue;
                };
                let found = *arrays.entry(array).or_insert_with(|| {
                    let storage = self.registry.storage_mut(array).ok()?;
                    let size = storage.elem_size().max(1);
                    let all = storage.bytes_mut();
                    Some((all.as_mut_ptr(), all.len(), size))
                });
                let target = found.and_then(|(_, have, size)| {
                    let (start, end) =
                        byte_range(offset, usize::try_from(bytes).ok()?, size, have)?;
                    Some((array, start, end))
                });
                placeable &= target.is_some();
                puts.push(target);
            }
            targets.push((puts, placeable));
        }
        // Any two puts writing the same byte: apply everything in order.
        let mut spans: Vec<(u32, usize, usize)> = targets
            .iter()
            .flat_map(|(puts, _)| puts.iter().flatten().copied())
            .filter(|&(_, start, end)| end > start)
            .collect();
        spans.sort_unstable();
        let overlap = spans
            .windows(2)
            .any(|w| w[0].0 == w[1].0 && w[1].1 < w[0].2);
        let mut placed = 0;
        let plans = targets
            .into_iter()
            .map(|(puts, placeable)| {
                if overlap || !placeable {
                    return None;
                }
                placed += puts.len() as u64;
                let regions = puts
                    .into_iter()
                    .flatten()
                    .map(|(array, start, end)| {
                        let (base, _, _) = arrays[&array].expect("a placeable put's coarray");
                        // SAFETY: `start..end` lies inside the coarray's
                        // bytes (checked above), whose address `base` is.
                        let at = unsafe { base.add(start) };
                        Region {
                            at,
                            len: end - start,
                        }
                    })
                    .collect();
                Some(regions)
            })
            .collect();
        (plans, placed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outbox::Outbox;

    fn put(array: u32, offset: u64, bytes: u64) -> Record {
        Record::Put {
            array,
            offset,
            bytes,
        }
    }

    #[test]
    fn head_bytes_are_what_split_cuts_out_as_heads() {
        let mut out = Outbox::new(3);
        out.push(0, put(1, 0, 10), &[1; 10]); // a short put
        let far = Record::Put {
            array: 2,
            offset: 1 << 40,
            bytes: 5,
        };
        out.push(0, far, &[2; 5]); // a full header
        out.push_message(0, 7, |v| v.extend_from_slice(&[1, 2]));
        out.push_message(0, 7, |v| v.extend_from_slice(&[3])); // the same record
        out.push_message(0, 8, |v| v.push(4)); // a new record
        out.push_owned(2, put(1, 0, 3), Bytes::from_static(&[9, 9, 9]));
        let get = Record::Get {
            array: 1,
            offset: 0,
            count: 4,
            ticket: 3,
        };
        out.push(2, get, &[]);
        let expected: Vec<u64> = (0..3).map(|d| out.head_bytes_to(d)).collect();
        assert_eq!(expected[1], 0);
        let (heads, _) = split(out.take(|_| unreachable!()));
        for (d, head) in &heads {
            assert_eq!(segments_len(head) as u64, expected[*d]);
        }
        assert_eq!(heads.len(), 2);
        // Taken: nothing left to count.
        assert!((0..3).all(|d| out.head_bytes_to(d) == 0));
    }

    #[test]
    fn split_streams_rejoin_to_the_same_bytes() {
        let mut out = Outbox::new(2);
        out.push(1, put(0, 3, 5), &[1, 2, 3, 4, 5]);
        out.push_message(1, 7, |v| v.extend_from_slice(&[9, 9]));
        out.push_owned(1, put(1 << 25, 0, 3), Bytes::from_static(&[6, 7, 8]));
        let streams = out.take(|_| unreachable!());
        let whole: Vec<u8> = streams[0].1.concat();
        let (heads, bodies) = split(streams);
        let body: Vec<u8> = bodies[0].1.concat();
        assert_eq!(body, [1, 2, 3, 4, 5, 9, 9, 6, 7, 8]);
        assert_eq!(
            segments_len(&heads[0].1) + body.len(),
            whole.len(),
            "heads and bodies together are the stream"
        );
        assert_eq!(rejoin(&heads[0].1, &bodies[0].1).concat(), whole);
    }

    fn heads(puts: &[(usize, Record)]) -> Vec<(usize, Segments)> {
        let mut out = Outbox::new(3);
        for &(src, record) in puts {
            out.push(src, record, &vec![0; record.body_len()]);
        }
        split(out.take(|_| unreachable!())).0
    }

    #[test]
    fn a_plan_places_senders_of_disjoint_puts_only() {
        let mut registry = Registry::new();
        let a = registry.register_array(vec![0u64; 10]);
        let b = registry.register_array(vec![0u32; 4]);
        let mut gets = PendingGets::default();
        let mut inbound = Inbound {
            me: 0,
            nprocs: 3,
            superstep: 0,
            registry: &mut registry,
            gets: &mut gets,
        };
        // From 1: a[2..4] and b[0..2]; from 2: a[4..5]; from 0 (itself): a[9].
        let disjoint = heads(&[
            (1, put(a, 2, 16)),
            (1, put(b, 0, 8)),
            (2, put(a, 4, 8)),
            (0, put(a, 9, 8)),
        ]);
        let (plans, placed) = inbound.plan(&disjoint);
        let lens: Vec<Option<Vec<usize>>> = plans
            .iter()
            .map(|p| p.as_ref().map(|r| r.iter().map(|r| r.len).collect()))
            .collect();
        assert_eq!(lens, [None, Some(vec![16, 8]), Some(vec![8])]);
        assert_eq!(placed, 3);
        // 1 and 2 both write a[4]: nothing is placed.
        let overlapping = heads(&[(1, put(a, 3, 16)), (2, put(a, 4, 8))]);
        assert!(inbound.plan(&overlapping).0.iter().all(Option::is_none));
        // Out of bounds, or an unknown coarray: that sender is applied (and fails there).
        let bad = heads(&[(1, put(b, 3, 8)), (2, put(a, 0, 8)), (0, put(99, 0, 1))]);
        let (plans, placed) = inbound.plan(&bad);
        assert!(plans[1].is_none() && plans[2].is_some() && placed == 1);
    }

    use crate::delivery::PendingGets;
    use crate::registry::Registry;
    use crate::segments::segments_len;
}
