//! Single-phase delivery: one irregular all-to-all.

use super::RouteFigures;
use crate::transport::{block_len, Aborted, Block, Comm};

pub(super) fn route(
    comm: &mut dyn Comm,
    streams: Vec<Block>,
) -> Result<(Vec<Block>, RouteFigures), Aborted> {
    let figures = RouteFigures {
        first_block: streams
            .iter()
            .map(|b| block_len(b) as u64)
            .max()
            .unwrap_or(0),
        ..RouteFigures::default()
    };
    Ok((comm.alltoallv(streams)?, figures))
}
