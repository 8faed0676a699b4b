//! Single-phase delivery: one irregular all-to-all.

use super::{words, Matrix, RouteFigures, Router};
use crate::placement::{Placed, Plan};
use crate::segments::segments_len;
use crate::transport::{Aborted, Blocks, Comm};

/// Each block's processor and bytes.
fn block_lens(blocks: &Blocks) -> impl Iterator<Item = (usize, usize)> + '_ {
    blocks.iter().map(|(q, b)| (*q, segments_len(b)))
}

/// The figures of a single-phase routing that sends the blocks `sent`
/// lists (processor, bytes); the block to `me` stays local and counts for
/// nothing.
fn sent_figures(me: usize, sent: impl Iterator<Item = (usize, usize)>) -> RouteFigures {
    let (largest, dealt_words) = sent
        .filter(|&(q, _)| q != me)
        .fold((0, 0), |(largest, dealt), (_, b)| {
            (b.max(largest), dealt + words(b))
        });
    RouteFigures {
        first_block: largest as u64,
        first_block_words: words(largest),
        dealt_words,
        ..RouteFigures::default()
    }
}

/// Words received in the blocks `received` lists (processor, bytes) from
/// other processors than `me`.
fn received_words(me: usize, received: impl Iterator<Item = (usize, usize)>) -> u64 {
    received
        .filter(|&(q, _)| q != me)
        .map(|(_, b)| words(b))
        .sum()
}

/// A direct exchange made inside the all-gather of a sync's rows
/// ([`Comm::allgather_offering`](crate::transport::Comm::allgather_offering)):
/// the figures of what this processor sent, taken before it offered its
/// streams.
pub(crate) struct Offered {
    me: usize,
    figures: RouteFigures,
    bytes: u64,
}

impl Offered {
    /// The offer of processor `me`'s `streams`.
    pub(crate) fn of(me: usize, streams: &Blocks) -> Offered {
        Offered {
            me,
            figures: sent_figures(me, block_lens(streams)),
            bytes: crate::transport::blocks_len(streams),
        }
    }

    /// Bytes offered.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The routing's figures once `received` has arrived.
    pub(crate) fn arrived(self, received: &Blocks) -> RouteFigures {
        RouteFigures {
            received_words: received_words(self.me, block_lens(received)),
            ..self.figures
        }
    }
}

pub(super) fn route(
    comm: &mut dyn Comm,
    streams: Blocks,
    matrix: Option<&Matrix>,
) -> Result<(Blocks, RouteFigures), Aborted> {
    let me = comm.pid();
    let mut figures = sent_figures(me, block_lens(&streams));
    let expected: Option<Vec<u64>> =
        matrix.map(|m| (0..m.procs()).map(|i| m.bytes(i, me) as u64).collect());
    let received = comm.exchange(streams, expected.as_deref())?;
    figures.received_words = received_words(me, block_lens(&received));
    Ok((received, figures))
}

/// Single-phase delivery in which the receivers place the payloads
/// (`placed.rs`, see `placement.rs`): each stream goes as
/// its heads, then its bodies (`heads` and `bodies` as
/// [`placement::split`](crate::placement::split) cuts the streams).
/// Returns what arrived and the figures, as [`route`].
///
/// `matrix`, when known, also gives the bytes of the heads each processor
/// sends this one, so that the heads need no exchange of counts, and may
/// carry the heads themselves, so that they need no exchange at all.
pub(super) fn route_placed(
    comm: &mut dyn Comm,
    (heads, bodies): (Blocks, Blocks),
    plan: Plan<'_>,
    matrix: Option<&Matrix>,
) -> Result<(Vec<Placed>, RouteFigures), Aborted> {
    let me = comm.pid();
    let lens = heads
        .iter()
        .zip(&bodies)
        .map(|((q, h), (_, b))| (*q, segments_len(h) + segments_len(b)));
    let mut figures = sent_figures(me, lens);
    debug_assert!(
        matrix.is_none_or(|m| heads
            .iter()
            .all(|(q, h)| m.head_bytes(me, *q) == segments_len(h) as u64)),
        "bsp: the row's head counts differ from the heads"
    );
    let received = super::placed::exchange(comm, Router::Direct, heads, bodies, plan, matrix)?;
    figures.received_words = received_words(me, received.iter().map(|r| (r.src, r.len())));
    Ok((received, figures))
}
