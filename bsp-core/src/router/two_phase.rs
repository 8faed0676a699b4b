//! The deterministic two-transpose h-relation router (Bader, Helman and
//! JáJá 1995, Sect. 3 and Appendix B).
//!
//! The unit dealt is a word of 8 bytes (the last word of a stream may be
//! short). Processor i splits its stream for destination j ≠ i (m words)
//! into min(m, p) contiguous parts of ⌊m/p⌋ or ⌈m/p⌉ words; part c goes to
//! intermediate (i + j + c) mod p, the ⌈m/p⌉ parts coming first. This is
//! the paper's cyclic dealing of words with the words of a part kept
//! together, so its bounds on bin sizes carry over unchanged: a stage-1
//! block holds at most s/p + (p−1)/2 words (s: the words its sender deals)
//! and a stage-2 block at most h/p + (p−1)/2 (h: the words its receiver
//! receives), which debug builds assert. A processor's stream to itself is
//! not dealt: it stays where it is.
//!
//! Each block starts with a header listing only its non-empty parts, in
//! peer order (destination in stage 1, source in stage 2), as pairs of
//! LEB128 integers: the gap to the previous part's peer and the part's
//! length. An empty block is sent as nothing. A superstep whose processors
//! send m messages therefore costs O(p + parts) bookkeeping per processor,
//! parts ≤ min(bytes, m·p), and nothing of size p² exists anywhere.
//!
//! On the threads transport the parts are reference-counted slices of the
//! sender's buffers: the intermediates re-bin pointers and the only copy of
//! the payload is the one into the receiver's memory.

use std::ops::Range;

use bytes::Bytes;

use super::two_stage::{
    self, assert_first_bound, assert_second_bound, block_size, note_first, note_second, Dealing,
    Part, Piece, Stage,
};
use super::{words, Matrix, RouteFigures, Router, WORD_BYTES};
use crate::placement::{Placed, Plan};
use crate::segments::{segments_len, SegmentCursor};
use crate::transport::{Aborted, Blocks, Comm};

/// Length in words of part `c` when `len` words are split into `p` parts.
fn part_len(len: usize, p: usize, c: usize) -> usize {
    len / p + usize::from(c < len % p)
}

/// Word offset of part `c` when `len` words are split into `p` parts.
fn part_start(len: usize, p: usize, c: usize) -> usize {
    c * (len / p) + c.min(len % p)
}

/// The parts of a stream of `len` bytes from processor `from` to `to ≠
/// from`, in order: for each, the intermediate it goes through and its
/// byte range in the stream.
pub(crate) fn parts(
    from: usize,
    to: usize,
    len: usize,
    p: usize,
) -> impl Iterator<Item = (usize, Range<usize>)> {
    let w = words(len) as usize;
    (0..w.min(p)).map(move |c| ((from + to + c) % p, part_range(len, p, c)))
}

/// The byte range of part `c` of a stream of `len` bytes (empty, at the
/// end, if it has none).
fn part_range(len: usize, p: usize, c: usize) -> Range<usize> {
    let w = words(len) as usize;
    let start = (WORD_BYTES * part_start(w, p, c)).min(len);
    let end = (start + WORD_BYTES * part_len(w, p, c)).min(len);
    start..end
}

/// The byte range of the stream of `len` bytes from `from` to `to` that
/// goes through intermediate `k` (empty if none does: a stream to itself
/// is not dealt).
pub(crate) fn through(len: usize, from: usize, to: usize, k: usize, p: usize) -> Range<usize> {
    if from == to || len == 0 {
        return 0..0;
    }
    part_range(len, p, (k + 2 * p - from - to) % p)
}

/// The length of every block processor `me` receives in each stage, from
/// the routing's communication matrix: what an MPI transport would
/// otherwise exchange before each transpose. Stage 1 block from i: the
/// parts of i's streams dealt to `me`; stage 2 block from k: the parts of
/// the streams to `me` dealt to k. Each with its header. Cost O(p²).
fn expected(m: &Matrix, me: usize) -> [Vec<u64>; 2] {
    let p = m.procs();
    // The bytes of the stream from i to j that go through intermediate k.
    let through = |i: usize, j: usize, k: usize| through(m.bytes(i, j), i, j, k, p).len();
    let block = |parts: Vec<Part>| -> u64 {
        (parts.iter().map(|part| part.len).sum::<usize>() + block_header_len(&parts)) as u64
    };
    let first = (0..p)
        .map(|i| block(nonempty_parts(p, |j| through(i, j, me))))
        .collect();
    let second = (0..p)
        .map(|k| block(nonempty_parts(p, |i| through(i, me, k))))
        .collect();
    [first, second]
}

/// For a placed two-phase exchange, the length of the stage-1 block
/// header each processor sends `me` ahead of its heads (0 where it deals
/// `me` nothing), from the communication matrix: the parts of the bodies
/// of its streams (each stream's bytes less its heads') dealt to `me`.
/// What an MPI transport would otherwise learn from a count exchange.
/// Cost O(p²).
pub(crate) fn placed_front_lens(m: &Matrix, me: usize) -> Vec<usize> {
    (0..m.procs())
        .map(|i| block_header_len(&placed_front(m, i, me)))
        .collect()
}

/// The parts of processor `i`'s bodies dealt to `me` in stage 1 of a
/// placed two-phase routing, as the header of `i`'s stage-1 block to `me`
/// lists them, from the matrix. Cost O(p).
pub(crate) fn placed_front(m: &Matrix, i: usize, me: usize) -> Vec<Part> {
    let p = m.procs();
    let body = |j: usize| m.bytes(i, j) - m.head_bytes(i, j) as usize;
    nonempty_parts(p, |j| through(body(j), i, j, me, p).len())
}

/// The parts with peers 0..p whose length `len_of(peer)` is not zero.
fn nonempty_parts(p: usize, len_of: impl Fn(usize) -> usize) -> Vec<Part> {
    (0..p)
        .map(|peer| Part {
            peer,
            len: len_of(peer),
        })
        .filter(|part| part.len > 0)
        .collect()
}

/// Bytes of the header in front of a block of `parts`: none for a block
/// without parts, which is not sent.
fn block_header_len(parts: &[Part]) -> usize {
    if parts.is_empty() {
        0
    } else {
        header_len(parts)
    }
}

/// Whether a block of `block` words keeps the paper's bound for a
/// processor that deals (stage 1) or receives (stage 2) `total` words:
/// `block ≤ total/p + (p−1)/2`, in integers.
fn within_bound(block: u64, total: u64, p: u64) -> bool {
    2 * p * block <= 2 * total + p * (p - 1)
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(from: &mut SegmentCursor<'_>) -> u64 {
    let (mut v, mut shift) = (0u64, 0);
    loop {
        let b = from.next_byte().expect("bsp: truncated router header");
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return v;
        }
        shift += 7;
    }
}

/// Bytes of `v` as a LEB128 integer.
fn varint_len(v: u64) -> usize {
    (64 - v.max(1).leading_zeros() as usize).div_ceil(7)
}

/// Bytes of the header that [`encode_header`] writes for `parts`.
fn header_len(parts: &[Part]) -> usize {
    let mut next = 0;
    let mut len = varint_len(parts.len() as u64);
    for part in parts {
        len += varint_len((part.peer - next) as u64) + varint_len(part.len as u64);
        next = part.peer + 1;
    }
    len
}

/// The header of a block: the number of parts, then for each part the gap
/// between its peer and the previous part's peer + 1, and its length.
pub(crate) fn encode_header(parts: impl ExactSizeIterator<Item = Part>) -> Bytes {
    let mut raw = Vec::with_capacity(1 + 4 * parts.len());
    put_varint(&mut raw, parts.len() as u64);
    let mut next = 0;
    for part in parts {
        put_varint(&mut raw, (part.peer - next) as u64);
        put_varint(&mut raw, part.len as u64);
        next = part.peer + 1;
    }
    Bytes::from(raw)
}

/// Reads the header at the front of a block into `parts` (emptied first);
/// the cursor is left at the first part's payload.
pub(crate) fn decode_header(from: &mut SegmentCursor<'_>, parts: &mut Vec<Part>) {
    parts.clear();
    let count = get_varint(from) as usize;
    let mut next = 0;
    for _ in 0..count {
        let peer = next + get_varint(from) as usize;
        let len = get_varint(from) as usize;
        parts.push(Part { peer, len });
        next = peer + 1;
    }
}

/// The two-phase router's [`Dealing`]: the parts of [`parts`], blocks
/// with headers, and their lengths known in advance where the matrix is.
struct TwoPhase {
    me: usize,
    p: usize,
    /// The blocks' lengths in each stage, where the matrix is known.
    expected: Option<[Vec<u64>; 2]>,
}

impl Dealing for TwoPhase {
    const NAME: &'static str = "two-phase";
    const FIRST_BOUND: &'static str = "s/p + (p-1)/2";
    const SECOND_BOUND: &'static str = "h/p + (p-1)/2";

    fn deal(&mut self, to: usize, len: usize, part: &mut dyn FnMut(usize, usize)) {
        for (k, range) in parts(self.me, to, len, self.p) {
            part(k, range.len());
        }
    }

    fn listed(&self) -> bool {
        false
    }

    fn expected(&self, stage: Stage) -> Option<&[u64]> {
        self.expected.as_ref().map(|lengths| &stage.of(lengths)[..])
    }

    fn parts(&self, _: Stage, _: usize, block: &mut SegmentCursor<'_>, parts: &mut Vec<Part>) {
        decode_header(block, parts)
    }

    fn first_within(block: u64, dealt: u64, p: u64) -> bool {
        within_bound(block, dealt, p)
    }

    fn second_within(block: u64, received: u64, p: u64) -> bool {
        within_bound(block, received, p)
    }

    /// Source i's part c came through intermediate (i + me + c) mod p: in
    /// intermediate order, the parts from intermediate (i + me) mod p on
    /// come first.
    fn stream_start(&self, src: usize, run: &[Piece]) -> usize {
        run.partition_point(|piece| piece.part.peer < (src + self.me) % self.p)
    }
}

/// Routes `streams` through the p intermediates in two transposes.
pub(super) fn route(
    comm: &mut dyn Comm,
    streams: Blocks,
    matrix: Option<&Matrix>,
) -> Result<(Blocks, RouteFigures), Aborted> {
    let (me, p) = (comm.pid(), comm.nprocs());
    let expected = matrix.map(|m| expected(m, me));
    two_stage::route(comm, streams, &mut TwoPhase { me, p, expected })
}

/// The two-phase routing in which the receivers place the payloads
/// (`placed.rs`, see `placement.rs`): each stream's heads
/// go straight to its destination, and its bodies are dealt over the
/// intermediates and forwarded as [`route`] deals a stream. Returns what
/// arrived and the figures: the blocks of both stages are those of the
/// bodies (and keep the same bounds); the words dealt and received are
/// those of the whole streams, heads included.
pub(super) fn route_placed(
    comm: &mut dyn Comm,
    (heads, bodies): (Blocks, Blocks),
    plan: Plan<'_>,
    matrix: Option<&Matrix>,
) -> Result<(Vec<Placed>, RouteFigures), Aborted> {
    let (p, me) = (comm.nprocs(), comm.pid());
    let mut figures = RouteFigures::default();
    // Stage 1's blocks, by intermediate: their parts and payload.
    let mut first: Vec<Vec<Part>> = vec![Vec::new(); p];
    let mut dealt_body_words = 0;
    for ((j, head), (_, body)) in heads.iter().zip(&bodies) {
        if *j == me {
            continue;
        }
        let len = segments_len(body);
        figures.dealt_words += words(segments_len(head) + len);
        dealt_body_words += words(len);
        for (k, range) in parts(me, *j, len, p) {
            first[k].push(Part {
                peer: *j,
                len: range.len(),
            });
        }
    }
    for (k, block) in first.iter().enumerate().filter(|(_, b)| !b.is_empty()) {
        note_first(&mut figures, block_size(block.iter().map(|part| part.len)));
        if k != me {
            figures.header_bytes += header_len(block) as u64;
        }
    }
    assert_first_bound::<TwoPhase>(figures.first_block_words, dealt_body_words, p);
    let received = super::placed::exchange(comm, Router::TwoPhase, heads, bodies, plan, matrix)?;
    // Stage 2's blocks, by intermediate: the parts of the bodies received.
    let mut second = vec![(0u64, 0u64); p];
    let mut received_body_words = 0;
    for r in received.iter().filter(|r| r.src != me) {
        figures.received_words += words(r.len());
        received_body_words += words(r.body_len);
        for (k, range) in parts(r.src, me, r.body_len, p) {
            second[k].0 += range.len() as u64;
            second[k].1 += words(range.len());
        }
    }
    for block in second {
        note_second(&mut figures, block);
    }
    assert_second_bound::<TwoPhase>(figures.second_block_words, received_body_words, p);
    Ok((received, figures))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_tile_the_stream() {
        for len in 0..40 {
            for p in 1..9 {
                let mut next = 0;
                for c in 0..p {
                    assert_eq!(part_start(len, p, c), next);
                    assert_eq!(part_len(len, p, c) > 0, c < len.min(p));
                    next += part_len(len, p, c);
                }
                assert_eq!(next, len);
                let dealt: Vec<usize> = parts(1, 2, len, p).map(|(_, r)| r.len()).collect();
                assert_eq!(
                    dealt.iter().sum::<usize>(),
                    len,
                    "bytes of {len} words over {p}"
                );
            }
        }
    }

    #[test]
    fn through_gives_each_intermediate_its_part() {
        for len in [0, 1, 7, 8, 9, 64, 1000] {
            for p in 1..7 {
                for (from, to) in [(0, p - 1), (p / 2, 0), (p - 1, p - 1)] {
                    let mut covered = vec![0u8; len];
                    for k in 0..p {
                        for b in through(len, from, to, k, p) {
                            covered[b] += 1;
                        }
                    }
                    let dealt = usize::from(from != to);
                    assert!(covered.iter().all(|&c| usize::from(c) == dealt));
                    if from != to {
                        for (k, range) in parts(from, to, len, p) {
                            assert_eq!(through(len, from, to, k, p), range);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn headers_round_trip_and_list_only_parts() {
        let parts = [
            Part { peer: 0, len: 1 },
            Part { peer: 1, len: 300 },
            Part {
                peer: 4000,
                len: 1 << 40,
            },
        ];
        let header = encode_header(parts.into_iter());
        assert_eq!(header.len(), 1 + 2 + 3 + (2 + 6));
        assert_eq!(header_len(&parts), header.len());
        assert_eq!(header_len(&[]), 1);
        let block = vec![header];
        let mut decoded = vec![Part { peer: 9, len: 9 }];
        decode_header(&mut SegmentCursor::new(&block), &mut decoded);
        assert_eq!(decoded, parts);
        assert_eq!(&encode_header([].into_iter())[..], &[0]);
    }

    #[test]
    fn the_bound_is_the_papers() {
        // p = 4: s/p + 3/2.
        assert!(within_bound(26, 100, 4));
        assert!(!within_bound(27, 100, 4));
        assert!(within_bound(0, 0, 1));
    }
}
