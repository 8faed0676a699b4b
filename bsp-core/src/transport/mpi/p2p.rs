//! The payloads of the placed exchanges as point-to-point messages: one
//! message from each sender to each receiver it has bytes for, sent
//! straight from its segments and received straight into the pieces of
//! memory the receiver's plan gives.
//!
//! Every rank knows, before this exchange, what each rank sends it (the
//! heads have arrived, or the rows carried them), so no counts travel,
//! and ranks with nothing to exchange post nothing: the cost is that of
//! the messages, not of p. A block or a landing of one piece is sent or
//! received as plain bytes at its address; only one of several pieces
//! needs a datatype (hindexed, over absolute addresses from
//! `MPI_BOTTOM`), which `MPI_Alltoallw` needed for every block.

use std::ffi::c_void;
use std::os::raw::c_int;

use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::Count;

use super::alltoallw::{byte_type, hindexed_bytes};
use super::MpiComm;
use crate::segments::Segments;

/// The tag of the placed exchanges' messages on bsp's communicator (the
/// timed all-gather uses another). Messages between two ranks with one tag
/// are received in the order sent, so consecutive exchanges need no
/// numbering.
const TAG: c_int = 0x6274;

/// The receive side of an exchange into memory listed piece by piece: for
/// each sender, the pieces (address, length) its bytes land in, in order.
/// Made empty (nothing from any rank).
#[derive(Default)]
pub(super) struct Scatter {
    from: Vec<(usize, Vec<(*const u8, usize)>)>,
}

impl Scatter {
    /// What `src` sends lands in `pieces` (address and length), in order.
    pub(super) fn from(&mut self, src: usize, pieces: &[(*const u8, usize)]) {
        let pieces: Vec<_> = pieces.iter().copied().filter(|&(_, len)| len > 0).collect();
        if !pieces.is_empty() {
            self.from.push((src, pieces));
        }
    }
}

/// A buffer argument and count for one message over `pieces`: the lone
/// piece's address as bytes, or `MPI_BOTTOM` and one element of a new
/// hindexed datatype, which is pushed to `made` to be freed after.
fn message_over(
    pieces: &[(*const u8, usize)],
    made: &mut Vec<ffi::MPI_Datatype>,
) -> (*const u8, c_int, ffi::MPI_Datatype) {
    match pieces {
        [(at, len)] => {
            let len = c_int::try_from(*len).expect("bsp: a piece beyond MPI's count limit");
            (*at, len, byte_type())
        }
        _ => {
            let datatype = hindexed_bytes(pieces.iter().copied());
            made.push(datatype);
            (std::ptr::null(), 1, datatype)
        }
    }
}

impl MpiComm {
    /// Sends `blocks[k]` (`send_counts[k]` bytes) to each rank k straight
    /// from its segments and receives as `into` lists, in one round of
    /// point-to-point messages.
    ///
    /// # Safety
    ///
    /// The pieces of `into` must be valid for writes and untouched by
    /// anything else until this returns, and the pieces for each sender
    /// must add up to exactly the bytes it sends here (its
    /// `send_counts` entry for this rank). Every rank must call this at
    /// the same point of the protocol.
    pub(super) unsafe fn exchange_into(
        &self,
        blocks: &[Segments],
        send_counts: &[Count],
        into: Scatter,
    ) {
        let comm = self.comm().as_raw();
        let mut made = Vec::new();
        let mut requests: Vec<ffi::MPI_Request> = Vec::with_capacity(into.from.len() + 4);
        for (src, pieces) in &into.from {
            let (at, count, datatype) = message_over(pieces, &mut made);
            // SAFETY: a request handle is plain data, written by MPI_Irecv.
            let mut request = unsafe { ffi::RSMPI_REQUEST_NULL };
            // SAFETY: `at` with `count` elements of `datatype` covers
            // exactly the pieces for `src`, valid for writes and untouched
            // until the wait below (this function's contract); `comm` is
            // this endpoint's communicator.
            unsafe {
                ffi::MPI_Irecv(
                    at.cast_mut().cast::<c_void>(),
                    count,
                    datatype,
                    *src as c_int,
                    TAG,
                    comm,
                    &mut request,
                );
            }
            requests.push(request);
        }
        let mut pieces = Vec::new();
        for (k, block) in blocks.iter().enumerate() {
            if send_counts[k] == 0 {
                continue;
            }
            pieces.clear();
            pieces.extend(block.iter().map(|s| (s.as_ptr(), s.len())));
            pieces.retain(|&(_, len)| len > 0);
            let (at, count, datatype) = message_over(&pieces, &mut made);
            // SAFETY: as above.
            let mut request = unsafe { ffi::RSMPI_REQUEST_NULL };
            // SAFETY: the message covers the live segments of `blocks[k]`,
            // borrowed until the wait below and only read.
            unsafe {
                ffi::MPI_Isend(
                    at.cast::<c_void>(),
                    count,
                    datatype,
                    k as c_int,
                    TAG,
                    comm,
                    &mut request,
                );
            }
            requests.push(request);
        }
        // SAFETY: `requests` holds the requests made above, each completed
        // (and freed) here, before the buffers they name are released.
        unsafe {
            ffi::MPI_Waitall(
                requests.len() as c_int,
                requests.as_mut_ptr(),
                ffi::RSMPI_STATUSES_IGNORE,
            );
        }
        for datatype in &mut made {
            // SAFETY: made and committed by `hindexed_bytes`; the messages
            // that used it have completed.
            unsafe { ffi::MPI_Type_free(datatype) };
        }
    }
}
