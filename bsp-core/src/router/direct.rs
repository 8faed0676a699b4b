//! Single-phase delivery: one irregular all-to-all.

use super::RouteFigures;
use crate::segments::{segments_len, Segments};
use crate::transport::{Aborted, Comm};

pub(super) fn route(
    comm: &mut dyn Comm,
    streams: Vec<Segments>,
) -> Result<(Vec<Segments>, RouteFigures), Aborted> {
    let figures = RouteFigures {
        first_block: streams
            .iter()
            .map(|b| segments_len(b) as u64)
            .max()
            .unwrap_or(0),
        ..RouteFigures::default()
    };
    Ok((comm.alltoallv(streams)?, figures))
}
