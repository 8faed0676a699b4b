//! Single-phase delivery: one irregular all-to-all.

use super::{words, Matrix, RouteFigures};
use crate::placement;
use crate::segments::segments_len;
use crate::transport::{Aborted, Blocks, Comm, Placed, Plan};

/// Bytes of each block `blocks` lists for or from another processor than
/// `me` (the block to itself stays local).
fn others(me: usize, blocks: impl Iterator<Item = (usize, usize)>) -> Vec<usize> {
    blocks.filter(|&(q, _)| q != me).map(|(_, b)| b).collect()
}

/// The figures of a single-phase routing that sends `sent` (bytes per
/// block, to others).
fn figures(sent: &[usize]) -> RouteFigures {
    let largest = sent.iter().copied().max().unwrap_or(0);
    RouteFigures {
        first_block: largest as u64,
        first_block_words: words(largest),
        dealt_words: sent.iter().map(|&b| words(b)).sum(),
        ..RouteFigures::default()
    }
}

pub(super) fn route(
    comm: &mut dyn Comm,
    streams: Blocks,
    matrix: Option<&Matrix>,
) -> Result<(Blocks, RouteFigures), Aborted> {
    let me = comm.pid();
    let lens = |blocks: &Blocks| others(me, blocks.iter().map(|(q, b)| (*q, segments_len(b))));
    let mut figures = figures(&lens(&streams));
    let expected: Option<Vec<u64>> =
        matrix.map(|m| (0..m.procs()).map(|i| m.bytes(i, me) as u64).collect());
    let received = comm.alltoallv(streams, expected.as_deref())?;
    figures.received_words = lens(&received).iter().map(|&b| words(b)).sum();
    Ok((received, figures))
}

/// Single-phase delivery in which the receivers place the payloads
/// ([`Comm::alltoallv_placed`], see `placement.rs`): each stream goes as
/// its heads, then its bodies. Returns what arrived and the figures, as
/// [`route`].
pub(crate) fn route_placed(
    comm: &mut dyn Comm,
    streams: Blocks,
    plan: Plan<'_>,
) -> Result<(Vec<Placed>, RouteFigures), Aborted> {
    let me = comm.pid();
    let mut figures = figures(&others(
        me,
        streams.iter().map(|(q, b)| (*q, segments_len(b))),
    ));
    let (heads, bodies) = placement::split(streams);
    let received = comm.alltoallv_placed(heads, bodies, plan)?;
    let got = others(
        me,
        received
            .iter()
            .map(|r| (r.src, segments_len(&r.heads) + r.body_len)),
    );
    figures.received_words = got.iter().map(|&b| words(b)).sum();
    Ok((received, figures))
}
