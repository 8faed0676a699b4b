//! The all-gather of a sync under a time limit.
//!
//! `MPI_Allgather` cannot be given up on, and OpenMPI's blocking
//! collectives spin a core while they wait. With a time limit set, each
//! rank instead posts a receive from every other rank and sends its row to
//! each, then polls the receives with backoff (a short spin, then sleeps of
//! up to a millisecond) until all have arrived or the deadline passes. The
//! receives that have not completed name the ranks that have not arrived.
//! Messages between two ranks with one tag arrive in the order sent, so
//! consecutive all-gathers match up without numbering.

use std::ffi::c_void;
use std::os::raw::c_int;
use std::time::{Duration, Instant};

use mpi::ffi;
use mpi::raw::AsRaw;

use super::MpiComm;

/// The tag of bsp's timed all-gather messages (on bsp's own communicator).
const TAG: c_int = 0x6273;

/// Polls before the first sleep.
const SPINS: u32 = 200;

/// The longest sleep between polls.
const MAX_PAUSE: Duration = Duration::from_millis(1);

impl MpiComm {
    /// All ranks' `row`s, concatenated in rank order, or the ranks that did
    /// not arrive within `limit` (their receives are cancelled).
    pub(super) fn timed_allgather(
        &mut self,
        row: &[u64],
        limit: Duration,
    ) -> Result<Vec<u64>, Vec<usize>> {
        let (p, me, n) = (self.nprocs, self.pid, row.len());
        let mut all = vec![0u64; n * p];
        all[me * n..(me + 1) * n].copy_from_slice(row);
        let comm = self.comm().as_raw();
        let count = c_int::try_from(n).expect("bsp: sync rows are short");
        let others: Vec<usize> = (0..p).filter(|&q| q != me).collect();
        // Sent from a copy whose heap buffer can outlive this call: after a
        // timeout the sends stay pending, and the copy is kept for good.
        let outgoing = row.to_vec();
        // SAFETY: a request handle is plain data; every one is written by
        // MPI_Irecv / MPI_Isend below before it is read.
        let mut recvs: Vec<ffi::MPI_Request> =
            vec![unsafe { ffi::RSMPI_REQUEST_NULL }; others.len()];
        // SAFETY: as above.
        let mut sends: Vec<ffi::MPI_Request> =
            vec![unsafe { ffi::RSMPI_REQUEST_NULL }; others.len()];
        for (i, &q) in others.iter().enumerate() {
            // SAFETY: `all[q*n..(q+1)*n]` is n u64s that nothing else touches
            // until the receive completes or is cancelled below; `comm` is
            // bsp's communicator, valid for the life of the process.
            unsafe {
                ffi::MPI_Irecv(
                    all.as_mut_ptr().add(q * n).cast::<c_void>(),
                    count,
                    ffi::RSMPI_UINT64_T,
                    q as c_int,
                    TAG,
                    comm,
                    &mut recvs[i],
                );
            }
        }
        for (i, &q) in others.iter().enumerate() {
            // SAFETY: `outgoing` stays alive and unchanged until the send
            // completes: it is waited for below, or after a timeout moved
            // (its heap buffer unmoved) into `self.unsent`, never dropped.
            unsafe {
                ffi::MPI_Isend(
                    outgoing.as_ptr().cast::<c_void>(),
                    count,
                    ffi::RSMPI_UINT64_T,
                    q as c_int,
                    TAG,
                    comm,
                    &mut sends[i],
                );
            }
        }
        let deadline = Instant::now() + limit;
        let mut arrived = vec![false; others.len()];
        let mut left = others.len();
        let mut indices: Vec<c_int> = vec![0; others.len()];
        let mut polls = 0u32;
        let mut pause = Duration::from_micros(20);
        while left > 0 {
            let mut done: c_int = 0;
            // SAFETY: `recvs` holds `others.len()` valid (or null) requests
            // and `indices` room for as many indices.
            unsafe {
                ffi::MPI_Testsome(
                    recvs.len() as c_int,
                    recvs.as_mut_ptr(),
                    &mut done,
                    indices.as_mut_ptr(),
                    ffi::RSMPI_STATUSES_IGNORE,
                );
            }
            if done > 0 {
                for &i in &indices[..done as usize] {
                    arrived[i as usize] = true;
                    left -= 1;
                }
                continue;
            }
            if Instant::now() >= deadline {
                for (i, request) in recvs.iter_mut().enumerate() {
                    if !arrived[i] {
                        // SAFETY: an active receive request, cancelled and
                        // freed; its buffer (`all`) is then never read.
                        unsafe {
                            ffi::MPI_Cancel(request);
                            ffi::MPI_Request_free(request);
                        }
                    }
                }
                // The sends may never be received; leave them to MPI, with
                // their buffer kept alive for the rest of the process.
                super::lock(&self.world.unsent).push(outgoing);
                for request in &mut sends {
                    // SAFETY: freeing an active send request is allowed; the
                    // send itself may still complete.
                    unsafe { ffi::MPI_Request_free(request) };
                }
                return Err((0..others.len())
                    .filter(|&i| !arrived[i])
                    .map(|i| others[i])
                    .collect());
            }
            polls += 1;
            if polls > SPINS {
                std::thread::sleep(pause);
                pause = (pause * 2).min(MAX_PAUSE);
            }
        }
        // Every rank has arrived, so every rank has posted its receives:
        // the sends complete.
        // SAFETY: `sends` holds valid send requests whose buffer `outgoing`
        // is alive until after the wait.
        unsafe {
            ffi::MPI_Waitall(
                sends.len() as c_int,
                sends.as_mut_ptr(),
                ffi::RSMPI_STATUSES_IGNORE,
            );
        }
        Ok(all)
    }
}
