//! What the two routers of two stages share: the deterministic two-phase
//! router (`two_phase.rs`) and the transportation primitive
//! (`transportation.rs`) both deal every stream over the p intermediates,
//! exchange the blocks, regroup what arrived by final destination, exchange
//! again, and put each source's stream back together. They differ in how a
//! stream is cut into parts, whether the receivers know every part's
//! length in advance, the paper's bounds on the blocks, and the order of a
//! stream's parts; [`Dealing`] says which, and [`route`] does the rest.

use std::ops::Range;

use super::two_phase::encode_header;
use super::{words, RouteFigures};
use crate::segments::{segments_len, SegmentCursor, Segments};
use crate::transport::{Aborted, Blocks, Comm};

/// One of the two exchanges of a two-stage routing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stage {
    /// Sources to intermediates.
    First,
    /// Intermediates to destinations.
    Second,
}

impl Stage {
    /// The entry for this stage in a pair of per-stage values.
    pub(super) fn of<T>(self, pair: &[T; 2]) -> &T {
        &pair[self as usize]
    }
}

/// How a two-stage router deals its streams, and what its receivers know.
pub(super) trait Dealing {
    /// The router's name, for the bound assertions.
    const NAME: &'static str;
    /// The stage-1 bound on a block, as the assertion states it.
    const FIRST_BOUND: &'static str;
    /// The stage-2 bound on a block, as the assertion states it.
    const SECOND_BOUND: &'static str;

    /// Cuts this processor's stream of `len > 0` bytes to `to` (never this
    /// processor) into parts: `part(k, bytes)` for each, in stream order, k
    /// the intermediate it goes through. Called in ascending `to`.
    fn deal(&mut self, to: usize, len: usize, part: &mut dyn FnMut(usize, usize));

    /// Whether the receivers know every block's parts in advance
    /// ([`parts`](Self::parts) lists them), so blocks travel without a
    /// header.
    fn listed(&self) -> bool;

    /// The length of every block this processor receives in `stage`, by
    /// sender, where known in advance (a transport then needs no count
    /// exchange).
    fn expected(&self, stage: Stage) -> Option<&[u64]>;

    /// The parts of the block from `from` in `stage`: read from its header,
    /// or as the router knows them.
    fn parts(
        &self,
        stage: Stage,
        from: usize,
        block: &mut SegmentCursor<'_>,
        parts: &mut Vec<Part>,
    );

    /// Whether a stage-1 block of `block` words keeps the bound, for a
    /// sender that deals `dealt` words over p processors.
    fn first_within(block: u64, dealt: u64, p: u64) -> bool;

    /// Whether a stage-2 block of `block` words keeps the bound, for a
    /// receiver of `received` words among p processors.
    fn second_within(block: u64, received: u64, p: u64) -> bool;

    /// Where source `src`'s stream begins among its parts `run`, which are
    /// listed in intermediate order: the parts from there on come first,
    /// then those before it.
    fn stream_start(&self, src: usize, run: &[Piece]) -> usize;
}

/// Routes `streams` in two stages as `dealing` says. Returns what arrived,
/// by source (this processor's stream to itself stays local), and the
/// routing's figures. Debug builds assert the router's bounds on the
/// blocks of both stages.
pub(super) fn route<D: Dealing>(
    comm: &mut dyn Comm,
    streams: Blocks,
    dealing: &mut D,
) -> Result<(Blocks, RouteFigures), Aborted> {
    let p = comm.nprocs();
    let me = comm.pid();
    let mut figures = RouteFigures::default();
    let mut own = None;

    // Stage 1: deal every stream over the p intermediates.
    let mut pieces = Pieces::default();
    for (j, stream) in streams {
        if j == me {
            own = Some(stream);
            continue;
        }
        let len = segments_len(&stream);
        if len == 0 {
            continue;
        }
        figures.dealt_words += words(len);
        let mut cursor = SegmentCursor::new(&stream);
        dealing.deal(j, len, &mut |k, bytes| {
            pieces.push(k, j, bytes, &mut cursor)
        });
    }
    let listed = dealing.listed();
    let wrap = |run: &[Piece], pool: &mut Segments, header_bytes: &mut u64| {
        if listed {
            bare(run, pool)
        } else {
            block(run, pool, header_bytes)
        }
    };
    let first = pieces.group(|_, run, pool| {
        note_first(
            &mut figures,
            block_size(run.iter().map(|piece| piece.part.len)),
        );
        wrap(run, pool, &mut figures.header_bytes)
    });
    assert_first_bound::<D>(figures.first_block_words, figures.dealt_words, p);
    let received = comm.exchange(first, dealing.expected(Stage::First))?;

    // Stage 2: regroup what arrived by final destination, in source order.
    let pieces = regroup(
        &received,
        |i, cursor, parts| dealing.parts(Stage::First, i, cursor, parts),
        |_| {},
    );
    let second = pieces.group(|_, run, pool| wrap(run, pool, &mut figures.header_bytes));
    drop(received);
    let arrived = comm.exchange(second, dealing.expected(Stage::Second))?;

    // Reassemble each source's stream from its parts.
    let pieces = regroup(
        &arrived,
        |k, cursor, parts| dealing.parts(Stage::Second, k, cursor, parts),
        |parts| {
            let (bytes, block_words) = block_size(parts.iter().map(|part| part.len));
            figures.received_words += block_words;
            note_second(&mut figures, (bytes, block_words));
        },
    );
    drop(arrived);
    assert_second_bound::<D>(figures.second_block_words, figures.received_words, p);
    let delivered = pieces.group(|i, run, pool| {
        let first = dealing.stream_start(i, run);
        let mut stream = Segments::new();
        for piece in run[first..].iter().chain(&run[..first]) {
            stream.extend(pool[piece.slices.clone()].iter_mut().map(std::mem::take));
        }
        stream
    });
    Ok((with_own(delivered, me, own), figures))
}

/// One part of a block: the processor it is for (stage 1) or from
/// (stage 2), and its length in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Part {
    pub(crate) peer: usize,
    pub(crate) len: usize,
}

/// A part on its way into a block: the processor the block goes to, the
/// part's header entry, and where its slices lie in the pool.
pub(super) struct Piece {
    pub(super) to: usize,
    pub(super) part: Part,
    pub(super) slices: Range<usize>,
}

/// The parts of one exchange (or of the reassembly), gathered in any order
/// and then grouped by where they go. Cost: O(parts · log parts), never p.
#[derive(Default)]
pub(super) struct Pieces {
    pieces: Vec<Piece>,
    pool: Segments,
}

impl Pieces {
    /// Adds a part for `to`: the next `len` bytes of `from`.
    pub(super) fn push(
        &mut self,
        to: usize,
        peer: usize,
        len: usize,
        from: &mut SegmentCursor<'_>,
    ) {
        let start = self.pool.len();
        from.take(len, &mut self.pool);
        self.pieces.push(Piece {
            to,
            part: Part { peer, len },
            slices: start..self.pool.len(),
        });
    }

    /// The parts grouped by `to`, ascending; within a group, in the order
    /// they were added. Calls `group(to, parts)` for each and gathers the
    /// blocks it returns.
    pub(super) fn group(
        mut self,
        mut group: impl FnMut(usize, &[Piece], &mut Segments) -> Segments,
    ) -> Blocks {
        self.pieces.sort_by_key(|piece| piece.to); // stable: keeps the order within `to`
        self.pieces
            .chunk_by(|a, b| a.to == b.to)
            .map(|run| (run[0].to, group(run[0].to, run, &mut self.pool)))
            .collect()
    }
}

/// Reads each block of `blocks` (listed by sender) as the parts that
/// `parts_of` lists for it — by decoding the block's header, or from what
/// the receiver knows — and adds each part to the pieces bound for the
/// part's peer, with the sender as the piece's peer. `seen` gets each
/// block's parts.
pub(super) fn regroup(
    blocks: &Blocks,
    mut parts_of: impl FnMut(usize, &mut SegmentCursor<'_>, &mut Vec<Part>),
    mut seen: impl FnMut(&[Part]),
) -> Pieces {
    let mut pieces = Pieces::default();
    let mut parts = Vec::new();
    for (from, block) in blocks {
        let mut cursor = SegmentCursor::new(block);
        parts_of(*from, &mut cursor, &mut parts);
        for part in &parts {
            pieces.push(part.peer, *from, part.len, &mut cursor);
        }
        seen(&parts);
    }
    pieces
}

/// Bytes and words of a block whose parts are `lens` bytes long. Every
/// part but a stream's last is whole words; the last one's short word is
/// a word of its stream too.
pub(super) fn block_size(lens: impl Iterator<Item = usize>) -> (u64, u64) {
    lens.fold((0, 0), |(bytes, w), len| {
        (bytes + len as u64, w + words(len))
    })
}

/// Counts a stage-1 block of `(bytes, words)` in the figures.
pub(super) fn note_first(figures: &mut RouteFigures, (bytes, block_words): (u64, u64)) {
    figures.first_block = figures.first_block.max(bytes);
    figures.first_block_words = figures.first_block_words.max(block_words);
}

/// Counts a stage-2 block of `(bytes, words)` in the figures.
pub(super) fn note_second(figures: &mut RouteFigures, (bytes, block_words): (u64, u64)) {
    figures.second_block = figures.second_block.max(bytes);
    figures.second_block_words = figures.second_block_words.max(block_words);
}

/// Debug builds: asserts `D`'s bound on a stage-1 block of `block` words,
/// its sender dealing `dealt` words over `p` processors.
pub(super) fn assert_first_bound<D: Dealing>(block: u64, dealt: u64, p: usize) {
    debug_assert!(
        D::first_within(block, dealt, p as u64),
        "{} stage-1 block of {block} words exceeds {} with s = {dealt}, p = {p}",
        D::NAME,
        D::FIRST_BOUND,
    );
}

/// Debug builds: asserts `D`'s bound on a stage-2 block of `block` words,
/// its receiver receiving `received` words among `p` processors.
pub(super) fn assert_second_bound<D: Dealing>(block: u64, received: u64, p: usize) {
    debug_assert!(
        D::second_within(block, received, p as u64),
        "{} stage-2 block of {block} words exceeds {} with h = {received}, p = {p}",
        D::NAME,
        D::SECOND_BOUND,
    );
}

/// The block made of `run`'s parts: its header, then their payload, moved
/// out of `pool`. Adds the header's length to `header_bytes`.
pub(super) fn block(run: &[Piece], pool: &mut Segments, header_bytes: &mut u64) -> Segments {
    let header = encode_header(run.iter().map(|piece| piece.part));
    *header_bytes += header.len() as u64;
    let mut out = Segments::with_capacity(1 + run.len());
    out.push(header);
    for piece in run {
        out.extend(pool[piece.slices.clone()].iter_mut().map(std::mem::take));
    }
    out
}

/// `delivered` (listed by source) with this processor's stream to itself,
/// which stayed local, in its place.
pub(super) fn with_own(mut delivered: Blocks, me: usize, own: Option<Segments>) -> Blocks {
    if let Some(own) = own {
        let at = delivered.partition_point(|&(i, _)| i < me);
        delivered.insert(at, (me, own));
    }
    delivered
}

/// The block made of `run`'s parts without a header: their payload,
/// moved out of `pool`.
pub(super) fn bare(run: &[Piece], pool: &mut Segments) -> Segments {
    run.iter()
        .flat_map(|piece| piece.slices.clone())
        .map(|s| std::mem::take(&mut pool[s]))
        .collect()
}
