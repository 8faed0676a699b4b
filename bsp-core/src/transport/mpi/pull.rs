//! Placed payloads on one node, pulled by their receivers in one copy.
//!
//! A placed routing (`router/placed.rs`) knows, on the receiving rank,
//! where every byte from each sender lands; the sender knows where its
//! bytes are. On one node the receiver can then copy them itself, from
//! the sender's memory straight into the landing regions, with Linux's
//! cross-memory attach (`process_vm_readv`): one copy, by the kernel, as
//! an MPI library's single-copy transfers and `MPI_Put` into a window
//! make, and no message protocol, eager cut or rendezvous around it.
//!
//! An exchange is two fenced all-gathers of the sync window
//! (`fenced.rs`): the first carries, in each receiver's mailbox, the
//! (address, length) list of the sender's segments for it; after it, each
//! receiver reads its senders' segments into place; the second tells
//! every sender that its segments have been read, so that it may free
//! them. Where a sender's list does not fit a mailbox, every rank learns
//! it from the same fence and the exchange goes point to point instead
//! (`p2p.rs`), as it does where the kernel refuses the reads (a ptrace
//! policy such as Yama's, or ranks in other containers): a probe at the
//! first exchange of each communicator asks every rank, collectively.

use std::io;

use bytes::Bytes;
use mpi::traits::*;

use super::MpiComm;
use crate::error::{Error, ErrorKind};
use crate::segments::{SegmentReader, Segments};
use crate::transport::{Blocks, Comm, Scatter};

/// The most pieces one `process_vm_readv` call takes on either side
/// (Linux's `IOV_MAX`).
const IOV_MAX: usize = 1024;

/// What every rank reads from another in the probe.
static PROBE: u64 = 0x6273_705f_7075_6c6c;

/// The operating-system process of every rank of a communicator whose
/// ranks may read each other's memory.
pub(super) struct Pull {
    pids: Vec<libc::pid_t>,
}

/// What the probe found: the ranks' processes, if every rank could read
/// the next one's memory.
pub(super) fn probe(comm: &impl Communicator, me: usize) -> Option<Pull> {
    let p = comm.size() as usize;
    let mine = [
        u64::from(std::process::id()),
        std::ptr::addr_of!(PROBE) as u64,
    ];
    let mut all = vec![0u64; 2 * p];
    comm.all_gather_into(&mine[..], &mut all[..]);
    let pids: Vec<libc::pid_t> = all.chunks(2).map(|w| w[0] as libc::pid_t).collect();
    let next = (me + 1) % p;
    let mut word = 0u64;
    let local = [(std::ptr::addr_of_mut!(word).cast::<u8>().cast_const(), 8)];
    // SAFETY: `word` is 8 bytes this function owns and nothing else
    // touches; the remote piece is the next rank's PROBE, 8 bytes.
    let read = unsafe { read(pids[next], &local, &[(all[2 * next + 1], 8)]) };
    let works = u64::from(read.is_ok() && word == PROBE);
    let mut agreed = vec![0u64; p];
    comm.all_gather_into(&works, &mut agreed[..]);
    agreed.iter().all(|&w| w == 1).then_some(Pull { pids })
}

impl MpiComm {
    /// The placed exchange by pulls (see the module docs), when this
    /// communicator's ranks can make them; `false` where every rank must
    /// take the point-to-point way instead (all answer alike).
    ///
    /// # Safety
    ///
    /// As `Comm::exchange_into`.
    pub(super) unsafe fn pull_into(
        &mut self,
        blocks: &[(usize, Segments)],
        into: &Scatter,
    ) -> bool {
        let me = self.pid;
        if self.pull.is_none() {
            self.pull = Some(probe(self.comm(), me));
        }
        if !matches!(self.pull, Some(Some(_))) {
            return false;
        }
        let lists: Blocks = blocks
            .iter()
            .filter(|(q, _)| *q != me)
            .map(|(q, block)| {
                let list: Vec<u8> = block
                    .iter()
                    .filter(|s| !s.is_empty())
                    .flat_map(|s| [s.as_ptr() as u64, s.len() as u64])
                    .flat_map(u64::to_ne_bytes)
                    .collect();
                (*q, vec![Bytes::from(list)])
            })
            .collect();
        let (_, fate) = self.fenced_allgather(&[], Some(lists));
        if !matches!(fate, Some(super::fenced::Fate::Published)) {
            return false;
        }
        let lists = Comm::take_offered(self, true);
        for (src, pieces) in &into.from {
            let done = if *src == me {
                copy_own(blocks, me, pieces)
            } else {
                // A list is one segment (copied out of the mailbox) of
                // (address, length) pairs.
                let word = |b: &[u8]| u64::from_ne_bytes(b.try_into().expect("8 bytes"));
                let remote: Vec<(u64, u64)> = lists
                    .iter()
                    .find(|(q, _)| q == src)
                    .into_iter()
                    .flat_map(|(_, list)| list.iter().flat_map(|b| b.chunks_exact(16)))
                    .map(|pair| (word(&pair[..8]), word(&pair[8..])))
                    .collect();
                let pids = &self
                    .pull
                    .as_ref()
                    .and_then(Option::as_ref)
                    .expect("probed")
                    .pids;
                // SAFETY: the pieces are valid for writes and untouched
                // until this returns (this function's contract); the
                // remote pieces are the sender's live segments, which it
                // keeps until the fence below.
                unsafe { read(pids[*src], pieces, &remote) }
            };
            if let Err(why) = done {
                let msg = format!(
                    "could not read the bytes processor {src} sends this one from its memory \
                     (process_vm_readv: {why}); set BSP_MPI_SYNC=allgather to send them as \
                     messages instead"
                );
                self.abort_job(Error::at(ErrorKind::Config, me, self.superstep, msg));
            }
        }
        // Every receiver has read its senders' segments once all pass this.
        self.fenced_allgather(&[], None);
        true
    }
}

/// Copies this rank's own block (the one `blocks` lists for `me`) into
/// `pieces`.
fn copy_own(
    blocks: &[(usize, Segments)],
    me: usize,
    pieces: &[(*const u8, usize)],
) -> io::Result<()> {
    let own = blocks.iter().find(|(q, _)| *q == me).map(|(_, b)| b);
    let mut reader = SegmentReader::new(own.map_or(&[][..], Vec::as_slice));
    for &(at, len) in pieces {
        // SAFETY: the piece is valid for writes of `len` bytes and touched
        // by nothing else (`pull_into`'s contract).
        let piece = unsafe { std::slice::from_raw_parts_mut(at.cast_mut(), len) };
        if !reader.read_into(piece) {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "own block too short",
            ));
        }
    }
    Ok(())
}

/// Copies the bytes of `remote` (address and length in process `pid`)
/// into `local`, in order, in as few `process_vm_readv` calls as
/// `IOV_MAX` allows. The two lists must hold the same number of bytes.
///
/// # Safety
///
/// The `local` pieces must be valid for writes and touched by nothing
/// else until this returns.
unsafe fn read(
    pid: libc::pid_t,
    local: &[(*const u8, usize)],
    remote: &[(u64, u64)],
) -> io::Result<()> {
    let total: usize = local.iter().map(|&(_, len)| len).sum();
    let sent: u64 = remote.iter().map(|&(_, len)| len).sum();
    if sent != total as u64 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{sent} bytes offered for {total} bytes of landing"),
        ));
    }
    let (mut here, mut there) = (Cursor::default(), Cursor::default());
    let mut done = 0;
    while done < total {
        let ours = here.iovecs(local.iter().map(|&(at, len)| (at as usize, len)));
        let theirs = there.iovecs(remote.iter().map(|&(at, len)| (at as usize, len as usize)));
        // SAFETY: `ours` names parts of the local pieces (valid for
        // writes, the caller's contract); `theirs` names memory of
        // process `pid`, which the kernel checks.
        let n = unsafe {
            libc::process_vm_readv(
                pid,
                ours.as_ptr(),
                ours.len() as libc::c_ulong,
                theirs.as_ptr(),
                theirs.len() as libc::c_ulong,
                0,
            )
        };
        if n < 0 {
            let error = io::Error::last_os_error();
            if error.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(error);
        }
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "no bytes read",
            ));
        }
        let n = n as usize;
        here.advance(local.iter().map(|&(_, len)| len), n);
        there.advance(remote.iter().map(|&(_, len)| len as usize), n);
        done += n;
    }
    Ok(())
}

/// A position in a list of pieces: the piece, and the offset in it.
#[derive(Default)]
struct Cursor {
    piece: usize,
    offset: usize,
}

impl Cursor {
    /// Up to [`IOV_MAX`] iovecs from the position on.
    fn iovecs(&self, pieces: impl Iterator<Item = (usize, usize)>) -> Vec<libc::iovec> {
        pieces
            .skip(self.piece)
            .enumerate()
            .map(|(i, (at, len))| {
                let skip = if i == 0 { self.offset } else { 0 };
                libc::iovec {
                    iov_base: (at + skip) as *mut libc::c_void,
                    iov_len: len - skip,
                }
            })
            .filter(|v| v.iov_len > 0)
            .take(IOV_MAX)
            .collect()
    }

    /// Moves the position `n` bytes on.
    fn advance(&mut self, lens: impl Iterator<Item = usize>, mut n: usize) {
        let mut lens = lens.skip(self.piece);
        while n > 0 {
            let len = lens.next().expect("bsp: read past the pieces");
            let left = len - self.offset;
            if n < left {
                self.offset += n;
                return;
            }
            n -= left;
            self.piece += 1;
            self.offset = 0;
        }
    }
}
