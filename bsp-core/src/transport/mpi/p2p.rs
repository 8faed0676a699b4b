//! Exchanges into landing regions (`Comm::exchange_into`) as
//! point-to-point messages: one
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
//!
//! A block longer than the piece limit (MPI's count limit, 2³¹ − 1 bytes,
//! unless `BSP_MPI_PIECE` lowers it for a test) goes as several messages
//! of at most that many bytes each: sender and receiver cut the same
//! length at the same places, and messages between two ranks with one tag
//! arrive in the order sent. The counted exchanges send their large
//! blocks this way too (`alltoallw.rs`).

use std::ffi::c_void;
use std::os::raw::c_int;

use mpi::ffi;
use mpi::raw::AsRaw;

use super::alltoallw::{byte_type, hindexed_bytes};
use super::MpiComm;
use crate::segments::Segments;
use crate::transport::Scatter;

/// The tag of the placed exchanges' messages on bsp's communicator (the
/// timed all-gather uses another). Messages between two ranks with one tag
/// are received in the order sent, so consecutive exchanges need no
/// numbering.
const TAG: c_int = 0x6274;

/// Calls `each` with the pieces of consecutive messages that carry the
/// bytes of `pieces` (address and length; empty ones left out) in order,
/// at most `limit` bytes a message, all but the last exactly `limit`. Two
/// lists of the same total length are cut at the same byte offsets.
fn cut(pieces: &[(*const u8, usize)], limit: usize, mut each: impl FnMut(&[(*const u8, usize)])) {
    let mut message = Vec::new();
    let mut room = limit;
    for &(mut at, mut len) in pieces {
        while len > 0 {
            let take = len.min(room);
            message.push((at, take));
            // One past the part taken: an address inside the piece, or
            // just past its end, never dereferenced here.
            at = at.wrapping_add(take);
            len -= take;
            room -= take;
            if room == 0 {
                each(&message);
                message.clear();
                room = limit;
            }
        }
    }
    if !message.is_empty() {
        each(&message);
    }
}

/// A buffer argument and count for one message over `pieces` (at most
/// the piece limit in all): the lone piece's address as bytes, or
/// `MPI_BOTTOM` and one element of a new hindexed datatype, which is
/// pushed to `made` to be freed after.
fn message_over(
    pieces: &[(*const u8, usize)],
    made: &mut Vec<ffi::MPI_Datatype>,
) -> (*const u8, c_int, ffi::MPI_Datatype) {
    match pieces {
        [(at, len)] => {
            let len = c_int::try_from(*len).expect("bsp: a message within the piece limit");
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
    /// Sends each block of `outgoing` (rank, block) to its rank straight
    /// from its segments, and receives as `into` lists, in one round of
    /// point-to-point messages (several for a block over its
    /// [`message_limit`](MpiComm::message_limit): the piece limit, or one
    /// eager message for the mid-sized blocks of one node).
    ///
    /// # Safety
    ///
    /// The pieces of `into` must be valid for writes and untouched by
    /// anything else until this returns, and the pieces for each sender
    /// must add up to exactly the bytes it sends here. Every rank must
    /// call this at the same point of the protocol.
    pub(super) unsafe fn p2p_into<'a>(
        &self,
        outgoing: impl IntoIterator<Item = (usize, &'a Segments)>,
        into: Scatter,
    ) {
        let comm = self.comm().as_raw();
        let mut made = Vec::new();
        let mut requests: Vec<ffi::MPI_Request> = Vec::with_capacity(into.from.len() + 4);
        for (src, pieces) in &into.from {
            let len = pieces.iter().map(|&(_, len)| len).sum();
            cut(pieces, self.message_limit(len), |message| {
                let (at, count, datatype) = message_over(message, &mut made);
                // SAFETY: a request handle is plain data, written by MPI_Irecv.
                let mut request = unsafe { ffi::RSMPI_REQUEST_NULL };
                // SAFETY: `at` with `count` elements of `datatype` covers
                // exactly this message's part of the pieces for `src`,
                // valid for writes and untouched until the wait below
                // (this function's contract); `comm` is this endpoint's
                // communicator.
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
            });
        }
        let mut pieces = Vec::new();
        for (k, block) in outgoing {
            pieces.clear();
            pieces.extend(block.iter().map(|s| (s.as_ptr(), s.len())));
            pieces.retain(|&(_, len)| len > 0);
            let len = pieces.iter().map(|&(_, len)| len).sum();
            cut(&pieces, self.message_limit(len), |message| {
                let (at, count, datatype) = message_over(message, &mut made);
                // SAFETY: as above.
                let mut request = unsafe { ffi::RSMPI_REQUEST_NULL };
                // SAFETY: the message covers part of the live segments of
                // `block`, borrowed until the wait below and only read.
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
            });
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

#[cfg(test)]
mod tests {
    use super::cut;

    /// The messages `cut` makes of pieces at `offsets` (offset, length)
    /// of one buffer, as (offset, length) again.
    fn messages(offsets: &[(usize, usize)], limit: usize) -> Vec<Vec<(usize, usize)>> {
        let base = [0u8; 64].as_ptr();
        let pieces: Vec<_> = offsets
            .iter()
            .map(|&(at, len)| (base.wrapping_add(at), len))
            .collect();
        let mut out = Vec::new();
        cut(&pieces, limit, |m| {
            out.push(
                m.iter()
                    .map(|&(at, len)| (at as usize - base as usize, len))
                    .collect(),
            )
        });
        out
    }

    #[test]
    fn cut_makes_messages_of_the_limit_at_the_same_offsets() {
        // One piece, cut at multiples of the limit.
        assert_eq!(
            messages(&[(0, 10)], 4),
            [vec![(0, 4)], vec![(4, 4)], vec![(8, 2)]]
        );
        // Several pieces: a message takes the ends of one and the start of
        // the next; an empty piece is left out.
        assert_eq!(
            messages(&[(40, 3), (0, 0), (10, 6), (30, 1)], 4),
            [
                vec![(40, 3), (10, 1)],
                vec![(11, 4)],
                vec![(15, 1), (30, 1)]
            ]
        );
        // Within the limit: one message, as the pieces were.
        assert_eq!(messages(&[(0, 3), (5, 2)], 8), [vec![(0, 3), (5, 2)]]);
        assert!(messages(&[], 8).is_empty());
        assert!(messages(&[(3, 0)], 8).is_empty());
        // The receiver's pieces for the same 10 bytes, laid out otherwise,
        // are cut at the same byte offsets (4 and 8).
        let lens = |ms: Vec<Vec<(usize, usize)>>| -> Vec<usize> {
            ms.iter().map(|m| m.iter().map(|p| p.1).sum()).collect()
        };
        assert_eq!(
            lens(messages(&[(0, 10)], 4)),
            lens(messages(&[(20, 1), (30, 9)], 4))
        );
    }
}
