//! Irregular exchanges: the counts exchange, then one `MPI_Alltoallw` that
//! sends every block straight from its segments through hindexed datatypes
//! (no send buffer is filled); blocks above a p-th of the piece limit, and
//! on one node those between one eager message and 64 KiB, then follow
//! point to point, in messages under the limit or eager-sized (`p2p.rs`).

use std::os::raw::c_int;

use mpi::raw::AsRaw;
use mpi::traits::*;
use mpi::Count;

use super::MpiComm;
use crate::pool::BUFFERS;
use crate::segments::{one_segment, segments_len, Segments};
use crate::transport::Scatter;

impl MpiComm {
    /// Sends `blocks[k]` to rank k and returns the block from each rank.
    /// The receive lengths are exchanged first (`MPI_Alltoall`) unless the
    /// caller knows them (`expected`, p entries; every rank must pass them
    /// or none, as the collectives must match).
    pub(super) fn counted_alltoallv(
        &mut self,
        mut blocks: Vec<Segments>,
        expected: Option<&[u64]>,
    ) -> Vec<Segments> {
        let (p, me) = (self.nprocs, self.pid);
        // The block to this rank stays here, uncopied; MPI sees it as empty.
        let own = std::mem::take(&mut blocks[me]);
        let mut recv_lens = vec![0u64; p];
        match expected {
            Some(lens) => recv_lens.copy_from_slice(lens),
            None => {
                let send_lens: Vec<u64> = blocks.iter().map(|b| segments_len(b) as u64).collect();
                self.comm()
                    .all_to_all_into(&send_lens[..], &mut recv_lens[..]);
            }
        }
        recv_lens[me] = 0;
        let mut out = self.exchange_known(&blocks, &recv_lens);
        drop(blocks);
        out[me] = own;
        out
    }

    /// Sends `blocks[k]` to each rank k and receives `recv_lens[k]` bytes
    /// from each, this rank's own entries empty: the blocks that travel
    /// [in the collective](Self::in_collective) in one `MPI_Alltoallw`
    /// straight from their segments, then the others point to
    /// point, in messages of at most [`message_limit`](Self::message_limit)
    /// bytes (`p2p.rs`): eager-sized ones for the mid-sized blocks of one
    /// node, the piece limit's otherwise. Both ends of a pair know the block's length,
    /// so both take the same way without asking. Returns what arrived, by
    /// sender (one slice of one receive buffer each). Every rank must call
    /// this at the same point, with lengths that match the senders'.
    pub(super) fn exchange_known(
        &mut self,
        blocks: &[Segments],
        recv_lens: &[u64],
    ) -> Vec<Segments> {
        let p = self.nprocs;
        let send_lens: Vec<usize> = blocks.iter().map(|b| segments_len(b)).collect();
        let recv_lens: Vec<usize> = recv_lens.iter().map(|&l| l as usize).collect();
        // Which blocks go point to point, decided once per block.
        let send_apart: Vec<bool> = send_lens.iter().map(|&l| !self.in_collective(l)).collect();
        let recv_apart: Vec<bool> = recv_lens.iter().map(|&l| !self.in_collective(l)).collect();
        let count = |len: usize, apart: bool| if apart { 0 } else { as_count(len) };
        let send_counts: Vec<Count> = send_lens
            .iter()
            .zip(&send_apart)
            .map(|(&l, &a)| count(l, a))
            .collect();
        let recv_counts: Vec<Count> = recv_lens
            .iter()
            .zip(&recv_apart)
            .map(|(&l, &a)| count(l, a))
            .collect();
        // The receive buffer: the collective's parts first, by sender, then
        // the larger blocks. The collective's part is below the piece
        // limit, so its displacements are MPI counts.
        let mut displs = vec![0usize; p];
        let mut at = 0;
        for large in [false, true] {
            for k in (0..p).filter(|&k| recv_apart[k] == large) {
                displs[k] = at;
                at += recv_lens[k];
            }
        }
        let mut recv = BUFFERS.take(at);
        let recv_displs: Vec<Count> = (0..p)
            .map(|k| {
                if recv_counts[k] > 0 {
                    as_count(displs[k])
                } else {
                    0
                }
            })
            .collect();
        let recv_types = vec![byte_type(); p];
        let into = Receive {
            base: recv.as_mut_ptr().cast(),
            counts: &recv_counts,
            displs: &recv_displs,
            types: &recv_types,
        };
        // SAFETY: `recv` is owned here and untouched until the call
        // returns; from each rank k it receives `recv_counts[k]` bytes
        // at `recv_displs[k]`, within `recv` (the layout above). The
        // lengths match the senders' (this function's contract), so do
        // the counts, which both ends derive from them alike.
        unsafe { self.alltoallw_from_segments(blocks, &send_counts, into) };
        if send_apart.iter().chain(&recv_apart).any(|&apart| apart) {
            let base = recv.as_mut_ptr();
            let mut into = Scatter::default();
            for k in (0..p).filter(|&k| recv_apart[k]) {
                // Written by MPI: an address from the mutable buffer.
                into.from(
                    k,
                    &[(base.wrapping_add(displs[k]).cast_const(), recv_lens[k])],
                );
            }
            let large = blocks.iter().enumerate().filter(|&(k, _)| send_apart[k]);
            // SAFETY: from each rank k with a large block, exactly its
            // length, into its own range of `recv`, owned here.
            unsafe { self.p2p_into(large, into) };
        }
        let recv = BUFFERS.share(recv);
        (0..p)
            .map(|k| {
                let (d, c) = (displs[k], recv_lens[k]);
                if c == 0 {
                    Segments::new()
                } else {
                    one_segment(recv.slice(d..d + c))
                }
            })
            .collect()
    }

    /// One `MPI_Alltoallw` that sends `blocks[k]` (`send_counts[k]` bytes)
    /// to rank k straight from its segments, through an hindexed datatype
    /// over their absolute addresses (from `MPI_BOTTOM`), and receives as
    /// `into` says.
    ///
    /// # Safety
    ///
    /// `into` must describe memory valid for writes and untouched by
    /// anything else until this returns: from each rank k, `counts[k]`
    /// elements of `types[k]` at `base + displs[k]`, of exactly the bytes
    /// that rank sends here (all arrays of p entries). Every rank of the
    /// communicator must call this collective with matching counts.
    pub(super) unsafe fn alltoallw_from_segments(
        &self,
        blocks: &[Segments],
        send_counts: &[Count],
        into: Receive<'_>,
    ) {
        let p = self.nprocs;
        let mut send_types = vec![byte_type(); p];
        for (k, block) in blocks.iter().enumerate() {
            if send_counts[k] > 0 {
                send_types[k] = hindexed_bytes(block.iter().map(|s| (s.as_ptr(), s.len())));
            }
        }
        let ones: Vec<c_int> = send_counts.iter().map(|&c| c_int::from(c > 0)).collect();
        let zeros: Vec<c_int> = vec![0; p];
        // SAFETY: the send side is `MPI_BOTTOM` (the null address in OpenMPI
        // and MPICH; mpi-sys exports no constant) with, for each
        // destination k, one element of `send_types[k]`, whose pieces are
        // the live segments of `blocks[k]` (borrowed for the whole call),
        // or no element. The receive side is the caller's, under this
        // function's contract. All arrays have p entries.
        unsafe {
            mpi::ffi::MPI_Alltoallw(
                std::ptr::null(),
                ones.as_ptr(),
                zeros.as_ptr(),
                send_types.as_ptr(),
                into.base,
                into.counts.as_ptr(),
                into.displs.as_ptr(),
                into.types.as_ptr(),
                self.comm().as_raw(),
            );
        }
        free_types(&mut send_types, send_counts);
    }
}

/// `n` as an MPI count: a part of a collective, which the piece limit
/// keeps below MPI's count limit.
fn as_count(n: usize) -> Count {
    Count::try_from(n).expect("bsp: a collective's part within the piece limit")
}

/// The receive side of [`MpiComm::alltoallw_from_segments`]: from each
/// rank k, `counts[k]` elements of `types[k]` at `base + displs[k]`.
pub(super) struct Receive<'a> {
    pub(super) base: *mut std::ffi::c_void,
    pub(super) counts: &'a [c_int],
    pub(super) displs: &'a [c_int],
    pub(super) types: &'a [mpi::ffi::MPI_Datatype],
}

/// MPI's datatype of one byte.
pub(super) fn byte_type() -> mpi::ffi::MPI_Datatype {
    // SAFETY: reading an immutable handle that mpi-sys's C shim
    // initialises statically (`MPI_UINT8_T`); MPI is initialised.
    unsafe { mpi::ffi::RSMPI_UINT8_T }
}

/// A committed hindexed datatype of bytes over `pieces` (address and
/// length of each; empty ones skipped, adjacent ones merged), addresses
/// absolute, for use from `MPI_BOTTOM`. The pieces together must stay
/// within MPI's count limit (the piece limit keeps every message and
/// every block of a collective within it), and they must stay valid while
/// the type is in use;
/// [`free_type`] it after.
pub(super) fn hindexed_bytes(
    pieces: impl Iterator<Item = (*const u8, usize)>,
) -> mpi::ffi::MPI_Datatype {
    let mut lens: Vec<c_int> = Vec::new();
    let mut addrs: Vec<mpi::ffi::MPI_Aint> = Vec::new();
    let mut end: *const u8 = std::ptr::null();
    for (at, len) in pieces.filter(|&(_, len)| len > 0) {
        let len = c_int::try_from(len).expect("bsp: a piece within the piece limit");
        match lens.last_mut() {
            Some(last) if at == end => *last += len,
            _ => {
                let mut addr: mpi::ffi::MPI_Aint = 0;
                // SAFETY: `MPI_Get_address` only computes the address of
                // the location it is given.
                unsafe { mpi::ffi::MPI_Get_address(at.cast(), &mut addr) };
                lens.push(len);
                addrs.push(addr);
            }
        }
        // One past the piece: compared, never dereferenced.
        end = at.wrapping_add(len as usize);
    }
    let mut datatype = byte_type();
    // SAFETY: `lens` and `addrs` have `lens.len()` entries each;
    // `datatype` is a valid place for the new handle, committed here and
    // freed by the caller.
    unsafe {
        mpi::ffi::MPI_Type_create_hindexed(
            lens.len() as c_int,
            lens.as_ptr(),
            addrs.as_ptr(),
            byte_type(),
            &mut datatype,
        );
        mpi::ffi::MPI_Type_commit(&mut datatype);
    }
    datatype
}

/// Frees the datatypes made by [`hindexed_bytes`] for a collective that
/// has completed: `types[k]` where `counts[k] > 0` (the others are the
/// predefined byte type).
pub(super) fn free_types(types: &mut [mpi::ffi::MPI_Datatype], counts: &[Count]) {
    for (datatype, _) in types.iter_mut().zip(counts).filter(|(_, &c)| c > 0) {
        // SAFETY: the type was created and committed by `hindexed_bytes`,
        // and the collective that used it has completed.
        unsafe { mpi::ffi::MPI_Type_free(datatype) };
    }
}
