//! Placed payloads on one node, copied once: pushed by their senders into
//! mapped memory, or pulled by their receivers.
//!
//! A placed routing (`router/placed.rs`) knows, on the receiving rank,
//! where every byte from each sender lands; the sender knows where its
//! bytes are. On one node one of the two can then make the only copy:
//!
//! * **Pushed**, where every landing region of a sender lies in memory
//!   that other processes can map (a large coarray's local part,
//!   `shared_memory.rs`): the receiver tells the sender where, and the
//!   sender maps that memory (once; the mapping is kept) and copies its
//!   segments in with `memcpy`, as `MPI_Put` into a shared-memory window
//!   does. Where it cannot map it, it writes with `process_vm_writev`.
//! * **Pulled** otherwise: the receiver copies the bytes out of the
//!   sender's memory with Linux's cross-memory attach
//!   (`process_vm_readv`), one copy by the kernel, as an MPI library's
//!   single-copy transfers make. On the AMD VM of BENCHMARKS.md (section
//!   14), 1 MiB moved at about 7 GB/s this way, and at 15 GB/s pushed.
//!
//! Neither has a message protocol, eager cut or rendezvous around it. An
//! exchange is two fenced all-gathers of the sync window (`fenced.rs`):
//! the first carries, in each mailbox from one rank to another, the
//! writer's segments for the reader as (address, length) pairs, and where
//! the reader's bytes land at the writer when they are to be pushed;
//! between the two, the senders push and the receivers pull; the second
//! tells every rank that the copies are done, so that senders may free
//! their segments and receivers read their landings. Where a list does
//! not fit a mailbox, every rank learns it from the same fence and the
//! exchange goes point to point instead (`p2p.rs`), as it does where the
//! kernel refuses cross-memory access (a ptrace policy such as Yama's,
//! or ranks in other containers): a probe at the first exchange of each
//! communicator asks every rank, collectively.
//!
//! An iterative program often repeats a placed superstep: the same puts
//! into coarrays that have not moved. Where the caller says an exchange
//! repeats the last one (`Scatter::repeats`, which the sync finds from
//! its rows, see `Matrix::repeats`) and every byte of that one was
//! pushed, the senders push where they were told then, and the first
//! all-gather is spared: the exchange costs one. The second all-gather
//! carries one word from each rank, whether everything it received was
//! pushed, so that every rank knows alike whether the next exchange may
//! repeat this one; a receiver checks that a repeat lands where the one
//! it repeats did, and ends the job if not.

use std::io;

use bytes::Bytes;
use mpi::traits::*;

use super::MpiComm;
use crate::error::{Error, ErrorKind};
use crate::segments::{one_segment, segments_len, SegmentReader, Segments};
use crate::shared_memory::{self, Freed, Peers, Place};
use crate::transport::{Aborted, Blocks, Comm, Scatter};

/// The most pieces one `process_vm_readv` call takes on either side
/// (Linux's `IOV_MAX`).
const IOV_MAX: usize = 1024;

/// What every rank reads from another in the probe.
static PROBE: u64 = 0x6273_705f_7075_6c6c;

/// The operating-system process of every rank of a communicator whose
/// ranks may read each other's memory.
pub(super) struct Pull {
    pids: Vec<libc::pid_t>,
    /// The peers' mapped memory written so far.
    peers: Peers,
    /// What the last exchange learned, where every rank pushed all its
    /// bytes in it (every rank knows alike), for an exchange that
    /// repeats it.
    last: Option<Learned>,
}

/// What an exchange in which every byte was pushed learned, for one that
/// repeats it ([`Scatter::repeats`]).
struct Learned {
    /// Where, by the mail of each receiver, this rank's bytes land.
    mails: Mails,
    /// Where the bytes of each sender landed here (addresses and
    /// lengths, in order), to check that a repeat lands in the same
    /// places.
    pieces: Vec<(usize, usize)>,
}

/// The pieces of `into`, sender by sender, as (address, length); each
/// sender's are led by (sender, number of pieces).
fn pieces_of(into: &Scatter) -> impl Iterator<Item = (usize, usize)> + '_ {
    into.from.iter().flat_map(|(src, pieces)| {
        let each = pieces.iter().map(|&(at, len)| (at as usize, len));
        std::iter::once((*src, pieces.len())).chain(each)
    })
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
    let read = unsafe { transfer(Way::Read, pids[next], &local, &[(all[2 * next + 1], 8)]) };
    let works = u64::from(read.is_ok() && word == PROBE);
    let mut agreed = vec![0u64; p];
    comm.all_gather_into(&works, &mut agreed[..]);
    agreed.iter().all(|&w| w == 1).then(|| Pull {
        pids,
        peers: Peers::default(),
        last: None,
    })
}

/// Words of a rank's row in [`MpiComm::map_peer_parts`]: whether its part
/// lies in mapped memory, the part's place (descriptor, serial, offset)
/// and byte length, what the rank has freed (count, how many serials
/// follow) and those serials.
const PART_ROW: usize = 7 + shared_memory::RECENT;

impl MpiComm {
    /// Whether this communicator's ranks may read and map each other's
    /// memory: the probe, made (collectively) at the first call.
    fn can_pull(&mut self) -> bool {
        if self.pull.is_none() {
            let me = self.pid;
            self.pull = Some(probe(self.comm(), me));
        }
        matches!(self.pull, Some(Some(_)))
    }

    /// `Comm::map_parts` on this transport: every rank's part mapped into
    /// this process, where every part lies in a memory file and every rank
    /// may map every other's (the probe of the exchange by pulls). Two
    /// all-gathers: the parts' places, then whether every rank mapped
    /// them all.
    pub(super) fn map_peer_parts(
        &mut self,
        part: (*const u8, usize),
    ) -> Result<Option<Vec<usize>>, Aborted> {
        if !(self.shares_window() && self.publishes_with_rows()) {
            return Ok(None);
        }
        if !self.can_pull() {
            return Ok(None);
        }
        let me = self.pid;
        let mut row = [0u64; PART_ROW];
        if let Some(place) = shared_memory::locate(part.0, part.1) {
            let head = [
                1,
                place.fd as u64,
                place.serial,
                place.offset,
                part.1 as u64,
            ];
            let freed = shared_memory::freed();
            for (word, value) in row.iter_mut().zip(head.into_iter().chain(freed.words())) {
                *word = value;
            }
        }
        let rows = Comm::allgather(self, &row)?;
        if rows.chunks(PART_ROW).any(|r| r[0] == 0) {
            return Ok(None);
        }
        let Some(Some(pull)) = self.pull.as_mut() else {
            unreachable!("bsp: probed above")
        };
        let mut addresses = vec![0usize; self.nprocs];
        let mut mapped = true;
        for (q, r) in rows.chunks(PART_ROW).enumerate() {
            if q == me {
                addresses[q] = part.0.expose_provenance();
                continue;
            }
            let place = Place {
                fd: r[1] as i32,
                serial: r[2],
                offset: r[3],
            };
            let mut rest = r[5..].iter().copied();
            let freed = Freed::read(|| rest.next().unwrap_or(0));
            match pull.peers.map(pull.pids[q], &freed, place, r[4] as usize) {
                Ok(at) => addresses[q] = at.expose_provenance(),
                Err(_) => mapped = false,
            }
        }
        let all = Comm::allgather(self, &[u64::from(mapped)])?;
        Ok(all.iter().all(|&w| w == 1).then_some(addresses))
    }
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
        if !self.can_pull() {
            return false;
        }
        // What the last exchange learned serves this one only if it
        // repeats that one; either way it is spent.
        let last = match &mut self.pull {
            Some(Some(pull)) => pull.last.take(),
            _ => None,
        };
        let mut pieces = None;
        let (mails, pushed) = match last.filter(|_| into.repeats) {
            Some(learned) => {
                if !learned.pieces.iter().copied().eq(pieces_of(into)) {
                    let msg = "internal error: a repeated exchange lands in other places \
                               than the one it repeats";
                    self.abort_job(Error::at(ErrorKind::Transport, me, self.superstep, msg));
                }
                #[cfg(test)]
                REPEATED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                pieces = Some(learned.pieces);
                // Every sender pushes in a repeat.
                (learned.mails, None)
            }
            None => match self.learn_landings(blocks, into) {
                Some((mails, pushed)) => (mails, Some(pushed)),
                None => return false,
            },
        };
        let mail_from = |q: usize| mails.iter().find(|(k, _)| *k == q).map(|(_, m)| m);
        let pushes = |q: usize| pushed.as_ref().is_none_or(|pushed| pushed[q]);
        // Out of `self` while the copies go on (an abort needs `self`).
        let Some(Some(mut pull)) = self.pull.take() else {
            unreachable!("bsp: probed above")
        };
        // As a sender: into the receivers that said where (each checks
        // that what it sends fills what the receiver expects, none too).
        let nothing = Segments::new();
        for (dst, mail) in mails.iter().filter(|(_, m)| !m.places.is_empty()) {
            let block = blocks
                .iter()
                .find(|(q, _)| q == dst)
                .map_or(&nothing, |(_, b)| b);
            let pid = pull.pids[*dst];
            if let Err(why) = push(&mut pull.peers, pid, &mail.freed, block, &mail.places) {
                let msg = format!(
                    "could not write the bytes this processor sends processor {dst} into its \
                     memory ({why}); set BSP_MPI_SYNC=allgather to send them as messages instead"
                );
                self.abort_job(Error::at(ErrorKind::Config, me, self.superstep, msg));
            }
        }
        // As a receiver: the rest is read out of the senders' memory.
        for (src, pieces) in &into.from {
            let done = if *src == me {
                copy_own(blocks, me, pieces)
            } else if pushes(*src) {
                Ok(())
            } else {
                let remote = mail_from(*src).map_or(&[][..], |m| &m.pairs[..]);
                // SAFETY: the pieces are valid for writes and untouched
                // until this returns (this function's contract); the
                // remote pieces are the sender's live segments, which it
                // keeps until the fence below.
                unsafe { transfer(Way::Read, pull.pids[*src], pieces, remote) }
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
        // Every receiver has read its senders' segments once all pass
        // this, and each says whether all it received was pushed: where
        // all say so, a repeat of this exchange needs no landing lists.
        let all_pushed = into.from.iter().all(|(src, _)| *src == me || pushes(*src));
        let (said, _) = self.fenced_allgather(&[u64::from(all_pushed)], None);
        pull.last = said.iter().all(|&w| w == 1).then(|| Learned {
            mails,
            pieces: pieces.unwrap_or_else(|| pieces_of(into).collect()),
        });
        self.pull = Some(Some(pull));
        true
    }

    /// The first all-gather of an exchange by pulls: each rank writes
    /// every peer it sends to or receives from its segments for the peer
    /// and, where everything the peer sends it lands in mapped memory,
    /// where that is. Returns the mails received and, by sender, whether
    /// its bytes are to be pushed; `None` where the lists did not fit the
    /// mailboxes (every rank alike), and the exchange must go point to
    /// point.
    fn learn_landings(
        &mut self,
        blocks: &[(usize, Segments)],
        into: &Scatter,
    ) -> Option<(Mails, Vec<bool>)> {
        let me = self.pid;
        let mut places: Vec<Option<Vec<Landing>>> = vec![None; self.nprocs];
        for (src, pieces) in into.from.iter().filter(|(q, _)| *q != me) {
            places[*src] = landings(pieces);
        }
        let pushed: Vec<bool> = places.iter().map(Option::is_some).collect();
        let freed = shared_memory::freed();
        let lists: Blocks = (0..self.nprocs)
            .filter(|&q| q != me)
            .filter_map(|q| {
                let block = blocks.iter().find(|(k, _)| *k == q).map(|(_, b)| b);
                let places = places[q].take();
                (block.is_some() || places.is_some()).then(|| {
                    let list = Mail::list(block.map_or(&[][..], |b| &b[..]), places, &freed);
                    (q, one_segment(Bytes::from(list)))
                })
            })
            .collect();
        let (_, fate) = self.fenced_allgather(&[], Some(lists));
        if !matches!(fate, Some(super::fenced::Fate::Published)) {
            return None;
        }
        let mails = Comm::take_offered(self, true)
            .iter()
            .map(|(q, list)| (*q, Mail::read(list)))
            .collect();
        Some((mails, pushed))
    }
}

/// Under test: how many exchanges repeated the last one's landings.
#[cfg(test)]
pub(crate) static REPEATED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Copies this rank's own block (the one `blocks` lists for `me`) into
/// `pieces`.
fn copy_own(
    blocks: &[(usize, Segments)],
    me: usize,
    pieces: &[(*const u8, usize)],
) -> io::Result<()> {
    let own = blocks.iter().find(|(q, _)| *q == me).map(|(_, b)| b);
    let mut reader = SegmentReader::new(own.map_or(&[][..], |b| &b[..]));
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

/// One place of a landing in mapped memory: where it lies, its length,
/// and its address in the receiver (for a write by the kernel where the
/// sender cannot map it).
type Landing = (Place, u64, u64);

/// Where `pieces` (landing regions of this process) lie in mapped memory,
/// if every one of them lies in it.
fn landings(pieces: &[(*const u8, usize)]) -> Option<Vec<Landing>> {
    pieces
        .iter()
        .map(|&(at, len)| shared_memory::locate(at, len).map(|p| (p, len as u64, at as u64)))
        .collect()
}

/// The mails a rank received, by writer.
type Mails = Vec<(usize, Mail)>;

/// What one rank writes another in the first all-gather of an exchange.
struct Mail {
    /// The writer's segments for the reader, as (address, length) in the
    /// writer's memory.
    pairs: Vec<(u64, u64)>,
    /// Where everything the reader sends the writer lands, when all of it
    /// lands in mapped memory (else empty).
    places: Vec<Landing>,
    /// What the writer has freed (`shared_memory::freed`).
    freed: Freed,
}

impl Mail {
    /// The mail of `segments` and `places`, as words: the number of
    /// pairs, the pairs, the number of places, the count of freed regions
    /// and the serials of the last freed (their number, then each), and
    /// each place as (descriptor, serial, offset, length, address).
    fn list(segments: &[Bytes], places: Option<Vec<Landing>>, freed: &Freed) -> Vec<u8> {
        let pairs: Vec<u64> = segments
            .iter()
            .filter(|s| !s.is_empty())
            .flat_map(|s| [s.as_ptr() as u64, s.len() as u64])
            .collect();
        let places = places.unwrap_or_default();
        let mut words = Vec::with_capacity(pairs.len() + 3 + 5 * places.len());
        words.push(pairs.len() as u64 / 2);
        words.extend(pairs);
        words.push(places.len() as u64);
        words.extend(freed.words());
        for (place, len, at) in places {
            words.extend([place.fd as u64, place.serial, place.offset, len, at]);
        }
        words.iter().flat_map(|w| w.to_ne_bytes()).collect()
    }

    /// The mail in `list` (one or more segments, concatenated).
    fn read(list: &[Bytes]) -> Mail {
        let bytes: Vec<u8> = list.iter().flat_map(|b| b.iter().copied()).collect();
        let mut words = bytes
            .chunks_exact(8)
            .map(|b| u64::from_ne_bytes(b.try_into().expect("8 bytes")));
        let mut next = || words.next().expect("bsp: a short pull list");
        let pairs = (0..next()).map(|_| (next(), next())).collect();
        let count = next();
        let freed = Freed::read(&mut next);
        let places = (0..count)
            .map(|_| {
                let (fd, serial, offset) = (next() as i32, next(), next());
                let place = Place { fd, serial, offset };
                (place, next(), next())
            })
            .collect();
        Mail {
            pairs,
            places,
            freed,
        }
    }
}

/// Copies `block` (this rank's segments for process `pid`) into the
/// `places` that process gave, in order: through a mapping of its memory
/// where this process may make one, else by the kernel.
fn push(
    peers: &mut Peers,
    pid: libc::pid_t,
    freed: &Freed,
    block: &Segments,
    places: &[Landing],
) -> io::Result<()> {
    let total: u64 = places.iter().map(|&(_, len, _)| len).sum();
    if total != segments_len(block) as u64 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} bytes sent to {total} bytes of landing",
                segments_len(block)
            ),
        ));
    }
    let mapped: io::Result<Vec<*mut u8>> = places
        .iter()
        .map(|&(place, len, _)| peers.map(pid, freed, place, len as usize))
        .collect();
    match mapped {
        Ok(starts) => {
            let mut reader = SegmentReader::new(block);
            for (&start, &(_, len, _)) in starts.iter().zip(places) {
                // SAFETY: `start` maps `len` bytes of the receiver's
                // landing region, which it leaves untouched until the
                // exchange's last all-gather and which nothing else here
                // writes.
                let into = unsafe { std::slice::from_raw_parts_mut(start, len as usize) };
                reader.read_into(into);
            }
            Ok(())
        }
        Err(_) => {
            #[cfg(test)]
            WRITTEN_BY_SYSCALL.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let ours: Vec<(*const u8, usize)> =
                block.iter().map(|s| (s.as_ptr(), s.len())).collect();
            let theirs: Vec<(u64, u64)> = places.iter().map(|&(_, len, at)| (at, len)).collect();
            // SAFETY: `ours` are this rank's live segments, only read;
            // `theirs` are the receiver's landing regions, which the
            // kernel checks.
            unsafe { transfer(Way::Write, pid, &ours, &theirs) }
        }
    }
}

/// Under test: how many pushes have been written with
/// `process_vm_writev` (where the receiver's memory could not be mapped).
#[cfg(test)]
pub(crate) static WRITTEN_BY_SYSCALL: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(0);

/// Which way [`transfer`] copies.
#[derive(Clone, Copy)]
enum Way {
    /// From the remote process into the local pieces (`process_vm_readv`).
    Read,
    /// From the local pieces into the remote process (`process_vm_writev`).
    Write,
}

/// Copies between `local` and `remote` (address and length in process
/// `pid`), in order, in as few calls as `IOV_MAX` allows. The two lists
/// must hold the same number of bytes.
///
/// # Safety
///
/// For [`Way::Read`], the `local` pieces must be valid for writes and
/// touched by nothing else until this returns; for [`Way::Write`], valid
/// for reads.
unsafe fn transfer(
    way: Way,
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
        let call = match way {
            Way::Read => libc::process_vm_readv,
            Way::Write => libc::process_vm_writev,
        };
        // SAFETY: `ours` names parts of the local pieces (valid for the
        // access, the caller's contract); `theirs` names memory of
        // process `pid`, which the kernel checks.
        let n = unsafe {
            call(
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
                "no bytes moved",
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
