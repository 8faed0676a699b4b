//! Single-phase delivery: one irregular all-to-all.

use super::{words, Matrix, RouteFigures};
use crate::segments::segments_len;
use crate::transport::{Aborted, Blocks, Comm};

pub(super) fn route(
    comm: &mut dyn Comm,
    streams: Blocks,
    matrix: Option<&Matrix>,
) -> Result<(Blocks, RouteFigures), Aborted> {
    let me = comm.pid();
    // Bytes to or from other processors: the stream to itself stays local.
    let others = |blocks: &Blocks| -> Vec<usize> {
        blocks
            .iter()
            .filter(|&&(q, _)| q != me)
            .map(|(_, b)| segments_len(b))
            .collect()
    };
    let sent = others(&streams);
    let largest = sent.iter().copied().max().unwrap_or(0);
    let mut figures = RouteFigures {
        first_block: largest as u64,
        first_block_words: words(largest),
        dealt_words: sent.iter().map(|&b| words(b)).sum(),
        ..RouteFigures::default()
    };
    let expected: Option<Vec<u64>> =
        matrix.map(|m| (0..m.procs()).map(|i| m.bytes(i, me) as u64).collect());
    let received = comm.alltoallv(streams, expected.as_deref())?;
    figures.received_words = others(&received).iter().map(|&b| words(b)).sum();
    Ok((received, figures))
}
