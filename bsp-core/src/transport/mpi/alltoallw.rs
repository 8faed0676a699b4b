//! Irregular exchanges: the counts exchange, then one `MPI_Alltoallw` that
//! sends every block straight from its segments through hindexed datatypes
//! (the default), or the blocks flattened into one `MPI_Alltoallv`
//! (`BSP_MPI_SEND=flatten`).

use std::os::raw::c_int;

use bytes::Bytes;
use mpi::datatype::{Partition, PartitionMut};
use mpi::raw::AsRaw;
use mpi::traits::*;
use mpi::Count;

use super::{MpiComm, SendMode};
use crate::error::{Error, ErrorKind};
use crate::segments::{segments_len, Segments};

impl MpiComm {
    /// `n` as an MPI count, or the end of the run.
    pub(super) fn count(&mut self, n: usize, what: &str) -> Count {
        match Count::try_from(n) {
            Ok(c) => c,
            Err(_) => {
                let msg = format!(
                    "{what} of {n} bytes exceeds MPI's count limit of {} bytes per exchange",
                    Count::MAX
                );
                let error = Error::at(ErrorKind::Transport, self.pid, self.superstep, msg);
                self.abort_job(error)
            }
        }
    }

    /// Displacements of consecutive parts with the given counts.
    pub(super) fn displacements(&mut self, counts: &[Count], what: &str) -> Vec<Count> {
        let mut at = 0usize;
        let mut displs = Vec::with_capacity(counts.len());
        for &c in counts {
            displs.push(at as Count);
            at += c as usize;
        }
        self.count(at, what);
        displs
    }

    /// One `MPI_Alltoallv` of the bytes `send` (laid out by `send_counts`),
    /// with the receive counts already known. Returns the received bytes and
    /// their displacements.
    ///
    /// `send` must be a slice of an allocated vector (see [`Pool::take`]).
    pub(super) fn alltoallv_known(
        &mut self,
        send: &[u8],
        send_counts: &[Count],
        recv_counts: &[Count],
    ) -> (Bytes, Vec<Count>) {
        let send_displs = self.displacements(send_counts, "a send buffer");
        let recv_displs = self.displacements(recv_counts, "a receive buffer");
        let total: usize = recv_counts.iter().map(|&c| c as usize).sum();
        let mut recv = self.world.pool.take(total);
        {
            let sendp = Partition::new(send, send_counts, &send_displs[..]);
            let mut recvp = PartitionMut::new(&mut recv[..], recv_counts, &recv_displs[..]);
            self.comm().all_to_all_varcount_into(&sendp, &mut recvp);
        }
        (self.world.pool.share(recv), recv_displs)
    }

    /// Sends `blocks[k]` to rank k and returns the block from each rank.
    /// The receive lengths are exchanged first (`MPI_Alltoall`) unless the
    /// caller knows them (`expected`, p entries; every rank must pass them
    /// or none, as the collectives must match).
    pub(super) fn counted_alltoallv(
        &mut self,
        mut blocks: Vec<Segments>,
        expected: Option<&[u64]>,
    ) -> Vec<Segments> {
        let p = self.nprocs;
        // The block to this rank stays here, uncopied; MPI sees it as empty.
        let own = std::mem::take(&mut blocks[self.pid]);
        let mut send_counts = Vec::with_capacity(p);
        for block in &blocks {
            send_counts.push(self.count(segments_len(block), "a block"));
        }
        let mut recv_counts: Vec<Count> = vec![0; p];
        match expected {
            Some(lens) => {
                let me = self.pid;
                for (k, &len) in lens.iter().enumerate().filter(|&(k, _)| k != me) {
                    recv_counts[k] = self.count(len as usize, "a block");
                }
            }
            None => self
                .comm()
                .all_to_all_into(&send_counts[..], &mut recv_counts[..]),
        }
        let total: usize = send_counts.iter().map(|&c| c as usize).sum();
        // Every rank takes the same branch: the collectives must match.
        let (recv, displs) = if self.send == SendMode::Hindexed {
            self.alltoallw_segments(&blocks, &send_counts, &recv_counts)
        } else {
            let mut send = self.world.pool.take(total);
            send.clear();
            for seg in blocks.iter().flatten() {
                send.extend_from_slice(seg);
            }
            let received = self.alltoallv_known(&send, &send_counts, &recv_counts);
            self.world.pool.give(send);
            received
        };
        drop(blocks);
        let mut out: Vec<Segments> = (0..p)
            .map(|k| {
                let (d, c) = (displs[k] as usize, recv_counts[k] as usize);
                if c == 0 {
                    Vec::new()
                } else {
                    vec![recv.slice(d..d + c)]
                }
            })
            .collect();
        out[self.pid] = own;
        out
    }

    /// One `MPI_Alltoallw` that sends every block straight from its
    /// segments (no flattening copy) into one contiguous receive buffer.
    /// Returns the received bytes and their displacements, as
    /// [`alltoallv_known`](Self::alltoallv_known).
    pub(super) fn alltoallw_segments(
        &mut self,
        blocks: &[Segments],
        send_counts: &[Count],
        recv_counts: &[Count],
    ) -> (Bytes, Vec<Count>) {
        let recv_displs = self.displacements(recv_counts, "a receive buffer");
        let total: usize = recv_counts.iter().map(|&c| c as usize).sum();
        let mut recv = self.world.pool.take(total);
        let recv_types = vec![byte_type(); self.nprocs];
        let into = Receive {
            base: recv.as_mut_ptr().cast(),
            counts: recv_counts,
            displs: &recv_displs,
            types: &recv_types,
        };
        // SAFETY: `recv` holds `total` bytes, which the parts of
        // `recv_counts[k]` bytes at `recv_displs[k]` tile; it is owned here
        // and untouched until the call returns. The counts were exchanged
        // just before, so they match the senders'.
        unsafe { self.alltoallw_from_segments(blocks, send_counts, into) };
        (self.world.pool.share(recv), recv_displs)
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
/// absolute, for use from `MPI_BOTTOM`. Each piece's length must fit a
/// `c_int`, and the pieces must stay valid while the type is in use;
/// [`free_type`] it after.
pub(super) fn hindexed_bytes(
    pieces: impl Iterator<Item = (*const u8, usize)>,
) -> mpi::ffi::MPI_Datatype {
    let mut lens: Vec<c_int> = Vec::new();
    let mut addrs: Vec<mpi::ffi::MPI_Aint> = Vec::new();
    let mut end: *const u8 = std::ptr::null();
    for (at, len) in pieces.filter(|&(_, len)| len > 0) {
        let len = c_int::try_from(len).expect("bsp: a piece beyond MPI's count limit");
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
