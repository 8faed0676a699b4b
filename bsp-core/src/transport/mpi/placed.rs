//! The placed exchange (see `placement.rs`): the heads of every block
//! travel first, in a counted exchange; then one `MPI_Alltoallw` sends the
//! bodies straight from their segments and receives each sender's bodies
//! either straight into the regions the receiver's plan gives (an hindexed
//! receive datatype over their absolute addresses) or, where the plan
//! says no, into one staging buffer.

use std::os::raw::c_int;

use bytes::Bytes;

use super::alltoallw::{byte_type, free_types, hindexed_bytes, Receive};
use super::{MpiComm, ReceiveMode};
use crate::segments::{copy_prefix, segments_len, slice_segments, Segments};
use crate::transport::{dense, Blocks, Placed, Plan};

/// Bytes in front of each head block: the length of its bodies.
const LEN_BYTES: usize = 8;

/// Below this size of record on average, placing costs more than it
/// saves: every record is a piece of the receive datatype.
const PLACE_MIN_RECORD: u64 = 4 << 10;

/// Below this many bytes per processor, the exchange of heads (two more
/// collectives) costs more than the copy it saves.
const PLACE_MIN_BYTES: u64 = 128 << 10;

impl MpiComm {
    /// Whether a routing of `bytes` bytes in `records` records (over all
    /// ranks) takes the placed exchange.
    pub(super) fn placing(&self, bytes: u64, records: u64) -> bool {
        match self.receive {
            ReceiveMode::Staged => false,
            ReceiveMode::Placed => records > 0,
            ReceiveMode::Auto => {
                records > 0
                    && bytes / records >= PLACE_MIN_RECORD
                    && bytes / self.nprocs as u64 >= PLACE_MIN_BYTES
            }
        }
    }

    /// [`Comm::alltoallv_placed`](crate::transport::Comm::alltoallv_placed)
    /// on MPI: the heads (each led by its bodies' length) in a counted
    /// exchange, then the bodies in one `MPI_Alltoallw`. A rank's blocks
    /// to itself stay here, and come back as bytes.
    pub(super) fn placed_alltoallv(
        &mut self,
        heads: Blocks,
        bodies: Blocks,
        plan: Plan<'_>,
    ) -> Vec<Placed> {
        let (p, me) = (self.nprocs, self.pid);
        let mut heads = dense(heads, p);
        let mut bodies = dense(bodies, p);
        let mut own_heads = std::mem::take(&mut heads[me]);
        let own_bodies = std::mem::take(&mut bodies[me]);
        let mut send_counts = vec![0; p];
        for (k, head) in heads.iter_mut().enumerate() {
            if !head.is_empty() {
                let len = segments_len(&bodies[k]);
                send_counts[k] = self.count(len, "a block");
                head.insert(0, Bytes::copy_from_slice(&(len as u64).to_ne_bytes()));
            }
        }
        // The heads received, by sender, with the length of their bodies.
        let mut received: Vec<(usize, Segments)> = Vec::new();
        let mut body_lens: Vec<usize> = Vec::new();
        for (k, head) in self.counted_alltoallv(heads, None).into_iter().enumerate() {
            if k == me && !own_heads.is_empty() {
                received.push((me, std::mem::take(&mut own_heads)));
                body_lens.push(segments_len(&own_bodies));
            } else if k != me && !head.is_empty() {
                let mut len = [0u8; LEN_BYTES];
                copy_prefix(&head, &mut len);
                let mut rest = Segments::new();
                slice_segments(&head, LEN_BYTES, segments_len(&head) - LEN_BYTES, &mut rest);
                received.push((k, rest));
                body_lens.push(u64::from_ne_bytes(len) as usize);
            }
        }
        let mut plans = plan(&received);
        // A plan that does not cover its bodies exactly would be a bug in
        // the runtime; receive those bodies as bytes rather than write
        // outside the regions.
        for (regions, &len) in plans.iter_mut().zip(&body_lens) {
            let covered = regions
                .as_ref()
                .map(|r| r.iter().map(|r| r.len).sum::<usize>());
            debug_assert!(
                covered.is_none_or(|c| c == len),
                "bsp: a plan of the wrong length"
            );
            if covered.is_some_and(|c| c != len) {
                *regions = None;
            }
        }
        // Bodies received as bytes land in one staging buffer.
        let mut staged_at = vec![0usize; received.len()];
        let mut staged_len = 0;
        for (i, &(src, _)) in received.iter().enumerate() {
            if src != me && plans[i].is_none() {
                staged_at[i] = staged_len;
                staged_len += body_lens[i];
            }
        }
        self.count(staged_len, "a receive buffer");
        let mut staging = self.world.pool.take(staged_len);
        let mut recv_counts = vec![0; p];
        let mut recv_types = vec![byte_type(); p];
        for (i, &(src, _)) in received.iter().enumerate() {
            if src == me || body_lens[i] == 0 {
                continue;
            }
            recv_counts[src] = 1;
            recv_types[src] = match &plans[i] {
                Some(regions) => hindexed_bytes(regions.iter().map(|r| (r.at.cast_const(), r.len))),
                None => {
                    // Written by MPI: an address from the mutable buffer.
                    let at = staging.as_mut_ptr().wrapping_add(staged_at[i]);
                    hindexed_bytes(std::iter::once((at.cast_const(), body_lens[i])))
                }
            };
        }
        let zeros: Vec<c_int> = vec![0; p];
        let into = Receive {
            base: std::ptr::null_mut(),
            counts: &recv_counts,
            displs: &zeros,
            types: &recv_types,
        };
        // SAFETY: the receive side is `MPI_BOTTOM` with absolute-address
        // datatypes: for each sender with bodies, one element of
        // `recv_types[src]`, of exactly the length it sends (announced in
        // its heads), over the plan's regions, which `Plan`'s contract
        // keeps valid, disjoint and untouched until this returns, or over
        // its part of `staging`, which is owned here. Each pair's counts
        // were agreed by the heads' exchange.
        unsafe { self.alltoallw_from_segments(&bodies, &send_counts, into) };
        free_types(&mut recv_types, &recv_counts);
        drop(bodies);
        let staging = self.world.pool.share(staging);
        let mut own_bodies = Some(own_bodies);
        received
            .into_iter()
            .zip(plans)
            .enumerate()
            .map(|(i, ((src, heads), regions))| {
                let body_len = body_lens[i];
                let bodies = if src == me {
                    own_bodies.take()
                } else if regions.is_none() {
                    Some(vec![staging.slice(staged_at[i]..staged_at[i] + body_len)])
                } else {
                    None
                };
                Placed {
                    src,
                    heads,
                    bodies,
                    body_len,
                }
            })
            .collect()
    }
}
