//! The transportation primitive of Ranka, Shankar and Alsabti (1995,
//! Sect. 6): many-to-many personalized communication with bounded
//! traffic, as two exchanges of low variance in block size.
//!
//! The unit is a word of 8 bytes (a stream's last word may be short).
//! Source i splits its stream of a words for destination j ≠ i into p
//! contiguous parts, part k going to intermediate k: ⌊a/p⌋ words each,
//! and the a mod p words left over handed out one each, round robin, by
//! one counter that runs on across i's destinations in ascending order
//! (the local pre-processing of the paper's Fig. 7). Each source starts
//! its counter at its own pid, so that the leftover words of different
//! sources land on different intermediates. Because the counter runs on,
//! a stage-1 block holds at most ⌈s/p⌉ words (s: the words its source
//! deals), and a stage-2 block at most Σᵢ ⌈aᵢⱼ/p⌉ ≤ h/p + (p − 1) words
//! (h: the words its destination receives) — the paper's bounds r/p and
//! t/p + p, with the source's own stream kept local. Debug builds assert
//! both.
//!
//! When every processor knows the routing's communication matrix (the
//! sync rows carry it for p ≤ 64), every processor computes the length of
//! every part it will receive (Fig. 8), so blocks travel without headers.
//! Otherwise (more processors, or the replies to gets, whose sizes nobody
//! knows in advance) each block starts with the two-phase router's header
//! of its non-empty parts. Reassembly puts a stream's parts back in
//! intermediate order. A stream to the processor itself stays where it is.

use super::two_phase::decode_header;
use super::two_stage::{self, Dealing, Part, Piece, Stage};
use super::{words, Matrix, RouteFigures, WORD_BYTES};
use crate::segments::SegmentCursor;
use crate::transport::{Aborted, Blocks, Comm};

/// How a stream of `len` bytes is dealt over p intermediates when the
/// round-robin counter stands at `start`: ⌊w/p⌋ words each, one more for
/// the w mod p intermediates from `start` on (cyclically), w = ⌈len/8⌉.
#[derive(Clone, Copy, Debug)]
struct Deal {
    len: usize,
    p: usize,
    base: usize,
    extra: usize,
    start: usize,
}

impl Deal {
    fn new(len: usize, p: usize, start: usize) -> Self {
        let w = words(len) as usize;
        Deal {
            len,
            p,
            base: w / p,
            extra: w % p,
            start,
        }
    }

    /// Where the counter stands after this stream.
    fn next_start(&self) -> usize {
        (self.start + self.extra) % self.p
    }

    /// Whether intermediate `k` gets one of the leftover words.
    fn has_extra(&self, k: usize) -> bool {
        (k + self.p - self.start) % self.p < self.extra
    }

    /// Leftover words handed to intermediates below `k`.
    fn extras_below(&self, k: usize) -> usize {
        let end = self.start + self.extra;
        if end <= self.p {
            k.clamp(self.start, end) - self.start
        } else {
            // The run wraps: [start, p) and [0, end − p).
            k.saturating_sub(self.start) + k.min(end - self.p)
        }
    }

    /// Bytes of the part for intermediate `k`.
    fn part_bytes(&self, k: usize) -> usize {
        let first = WORD_BYTES * (k * self.base + self.extras_below(k));
        let words = self.base + usize::from(self.has_extra(k));
        let start = first.min(self.len);
        (first + WORD_BYTES * words).min(self.len) - start
    }

    /// The intermediates with a non-empty part, ascending: all p when
    /// every one gets a word, else only the leftover run.
    fn intermediates(&self) -> impl Iterator<Item = usize> {
        let all = if self.base > 0 { 0..self.p } else { 0..0 };
        let few = (self.base == 0).then(|| self.extras());
        all.chain(few.into_iter().flatten())
    }

    /// The leftover run, ascending (for streams of fewer than p words).
    fn extras(&self) -> impl Iterator<Item = usize> {
        let end = self.start + self.extra;
        let (wrapped, run) = if end > self.p {
            (0..end - self.p, self.start..self.p)
        } else {
            (0..0, self.start..end)
        };
        wrapped.chain(run)
    }
}

/// The deals of source `i`'s streams, by destination ascending, from the
/// matrix: the counter starts at i and skips i's stream to itself.
fn deals_of(m: &Matrix, i: usize) -> impl Iterator<Item = (usize, Deal)> + '_ {
    let p = m.procs();
    let mut start = i % p;
    (0..p)
        .filter(move |&j| j != i && m.bytes(i, j) > 0)
        .map(move |j| {
            let deal = Deal::new(m.bytes(i, j), p, start);
            start = deal.next_start();
            (j, deal)
        })
}

/// The parts processor `me` receives, from the matrix: in stage 1, for
/// each source i, the lengths of its parts for each destination (in
/// destination order); in stage 2, for each intermediate k, the lengths of
/// the parts of each source's stream to `me` (in source order); and the
/// length of every block of each stage, by sender. Cost O(p²).
struct Expected {
    first: Vec<Vec<Part>>,
    second: Vec<Vec<Part>>,
    lengths: [Vec<u64>; 2],
}

impl Expected {
    fn new(m: &Matrix, me: usize) -> Self {
        let p = m.procs();
        let mut first = vec![Vec::new(); p];
        let mut second = vec![Vec::new(); p];
        for (i, parts) in first.iter_mut().enumerate() {
            for (j, deal) in deals_of(m, i) {
                let len = deal.part_bytes(me);
                if len > 0 {
                    parts.push(Part { peer: j, len });
                }
                if j == me {
                    for (k, parts) in second.iter_mut().enumerate() {
                        let len = deal.part_bytes(k);
                        if len > 0 {
                            parts.push(Part { peer: i, len });
                        }
                    }
                }
            }
        }
        let lengths = |parts: &[Vec<Part>]| -> Vec<u64> {
            (parts.iter())
                .map(|v| v.iter().map(|part| part.len as u64).sum())
                .collect()
        };
        let lengths = [lengths(&first), lengths(&second)];
        Expected {
            first,
            second,
            lengths,
        }
    }
}

/// The transportation primitive's [`Dealing`]: the running counter's
/// deals, and blocks without headers where the matrix is known.
struct Transportation {
    p: usize,
    /// Where the round-robin counter stands.
    start: usize,
    expected: Option<Expected>,
}

impl Dealing for Transportation {
    const NAME: &'static str = "transportation";
    const FIRST_BOUND: &'static str = "⌈s/p⌉";
    const SECOND_BOUND: &'static str = "h/p + p - 1";

    /// Fig. 7: the parts of `deal`, the counter running on.
    fn deal(&mut self, _: usize, len: usize, part: &mut dyn FnMut(usize, usize)) {
        let deal = Deal::new(len, self.p, self.start);
        self.start = deal.next_start();
        for k in deal.intermediates() {
            part(k, deal.part_bytes(k));
        }
    }

    fn listed(&self) -> bool {
        self.expected.is_some()
    }

    fn expected(&self, stage: Stage) -> Option<&[u64]> {
        (self.expected.as_ref()).map(|e| &stage.of(&e.lengths)[..])
    }

    /// Fig. 8: from the matrix when known, else from the block's header.
    fn parts(
        &self,
        stage: Stage,
        from: usize,
        block: &mut SegmentCursor<'_>,
        parts: &mut Vec<Part>,
    ) {
        match (&self.expected, stage) {
            (Some(e), Stage::First) => parts.clone_from(&e.first[from]),
            (Some(e), Stage::Second) => parts.clone_from(&e.second[from]),
            (None, _) => decode_header(block, parts),
        }
    }

    /// ⌈s/p⌉.
    fn first_within(block: u64, s: u64, p: u64) -> bool {
        p * block < s + p
    }

    /// h/p + (p − 1).
    fn second_within(block: u64, h: u64, p: u64) -> bool {
        p * block <= h + p * (p - 1)
    }

    /// A stream's parts are dealt in intermediate order.
    fn stream_start(&self, _: usize, _: &[Piece]) -> usize {
        0
    }
}

/// Routes `streams` with the transportation primitive: Figs. 7 and 8.
pub(super) fn route(
    comm: &mut dyn Comm,
    streams: Blocks,
    matrix: Option<&Matrix>,
) -> Result<(Blocks, RouteFigures), Aborted> {
    let (me, p) = (comm.pid(), comm.nprocs());
    let mut dealing = Transportation {
        p,
        start: me % p,
        expected: matrix.map(|m| Expected::new(m, me)),
    };
    two_stage::route(comm, streams, &mut dealing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_tile_the_stream_in_intermediate_order() {
        for len in 0..200 {
            for p in 1..10 {
                for start in 0..p {
                    let deal = Deal::new(len, p, start);
                    let listed: Vec<usize> = deal.intermediates().collect();
                    let nonempty: Vec<usize> = (0..p).filter(|&k| deal.part_bytes(k) > 0).collect();
                    assert_eq!(listed, nonempty, "len {len}, p {p}, start {start}");
                    let total: usize = (0..p).map(|k| deal.part_bytes(k)).sum();
                    assert_eq!(total, len, "len {len}, p {p}, start {start}");
                    let extras = (0..p).filter(|&k| deal.has_extra(k)).count();
                    assert_eq!(extras, words(len) as usize % p);
                }
            }
        }
    }

    #[test]
    fn the_running_counter_keeps_stage_one_within_a_word_of_s_over_p() {
        // A source with streams of many lengths: every intermediate's block
        // is ⌊s/p⌋ or ⌈s/p⌉ words.
        for p in 1..12 {
            let lens = [1usize, 3, 17, 8 * p + 5, 2, 8 * (3 * p + 1), 9];
            let mut blocks = vec![0u64; p];
            let mut start = 0;
            let mut s = 0;
            for &len in &lens {
                let deal = Deal::new(len, p, start);
                start = deal.next_start();
                s += words(len);
                for (k, b) in blocks.iter_mut().enumerate() {
                    *b += words(deal.part_bytes(k));
                }
            }
            for &b in &blocks {
                assert!(
                    Transportation::first_within(b, s, p as u64),
                    "p {p}: {blocks:?}, s {s}"
                );
                assert!(b * p as u64 + p as u64 > s, "p {p}: {blocks:?}, s {s}");
            }
        }
    }

    #[test]
    fn the_bounds_are_the_papers() {
        assert!(Transportation::first_within(25, 100, 4));
        assert!(!Transportation::first_within(26, 100, 4));
        assert!(Transportation::first_within(26, 101, 4));
        assert!(Transportation::second_within(28, 100, 4));
        assert!(!Transportation::second_within(29, 100, 4));
    }
}
