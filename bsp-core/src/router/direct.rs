//! Single-phase delivery: one irregular all-to-all.

use super::RouteFigures;
use crate::segments::segments_len;
use crate::transport::{Aborted, Blocks, Comm};

pub(super) fn route(
    comm: &mut dyn Comm,
    streams: Blocks,
) -> Result<(Blocks, RouteFigures), Aborted> {
    let me = comm.pid();
    // Bytes to or from other processors: the stream to itself stays local.
    let others = |blocks: &Blocks| -> Vec<u64> {
        blocks
            .iter()
            .filter(|&&(q, _)| q != me)
            .map(|(_, b)| segments_len(b) as u64)
            .collect()
    };
    let sent = others(&streams);
    let mut figures = RouteFigures {
        first_block: sent.iter().copied().max().unwrap_or(0),
        dealt: sent.iter().sum(),
        ..RouteFigures::default()
    };
    let received = comm.alltoallv(streams)?;
    figures.received = others(&received).iter().sum();
    Ok((received, figures))
}
