//! The sync's all-gather as one-sided writes into a window, with small
//! blocks riding along.
//!
//! A hand-written BSP superstep in MPI is a few `MPI_Put`s and one
//! `MPI_Win_fence`; `MPI_Allgather` costs nearly twice that fence on one
//! node (Open MPI 4.1, BENCHMARKS.md section 14). So each communicator
//! keeps one window, and an all-gather is: every rank writes its row into
//! a cell of every other rank's window, then waits for the others'; each
//! rank then reads the rows from its own window.
//!
//! * **Across nodes** the window is `MPI_Win_allocate`'s, the writes are
//!   `MPI_Put`s and the wait is one `MPI_Win_fence`.
//! * **On one node** it is `MPI_Win_allocate_shared`'s: every rank maps
//!   every segment, a write is a copy into the peer's memory, and the
//!   wait is on sequence words, no MPI call at all. A rank copies its
//!   row (and mail) into its cell in the peer's segment, then stores the
//!   all-gather's number into the cell's sequence word with release
//!   ordering; the peer waits until the sequence word of each other rank's
//!   cell in its own segment reads that number (acquire), spinning up to
//!   [`SPIN`] and then yielding its core at each look, at once where the
//!   ranks outnumber the cores. An MPI fence would cost about twice as
//!   much at `MPI_THREAD_SERIALIZED` (section 14).
//!
//! # The window
//!
//! Two halves, used in turn by consecutive all-gathers; each half has one
//! cell per sender. A cell is the sequence word, two head words, then the
//! row, then a mailbox, padded to whole cache lines so that every cell
//! starts one:
//!
//! ```text
//! [ seq | wanted | length | row: row_cap words, mailbox: mail_cap bytes | pad ]
//! ```
//!
//! * `wanted` is the longest block the sender offered to any other rank
//!   (0 when it offered none);
//! * `length` is the length of the block it put into this rank's mailbox
//!   (0 when its blocks did not all fit their mailboxes).
//!
//! The mailbox starts right after the words of this all-gather's row, not
//! after `row_cap` of them (every rank's row has the same length, so the
//! reader knows where): a small block then shares the row's last cache
//! line, and the reader, which has just copied the row, finds it in its
//! cache. A one-put superstep under MPI went from 0.408 to 0.400 µs
//! (median of 12 launches, np = 2, AMD-2b, BENCHMARKS.md section 14f).
//!
//! A rank reads a half once its all-gather's wait is over; the next
//! all-gather writes the other half, and the one after can only write
//! this half again once every rank has started the one in between (a
//! rank waits for every other's writes, and a fence that ends an epoch of
//! puts is a barrier), by which time each rank has read it: it reads its
//! rows and mail before it starts another all-gather. So no rank
//! overwrites rows that another has yet to read.
//!
//! # Offered blocks
//!
//! With [`allgather_offering`](crate::transport::Comm::allgather_offering),
//! each rank puts its block for every other rank into that rank's mailbox
//! in the same epoch as its row, when they all fit. After the wait every
//! rank knows every sender's `wanted`, so all agree, without a word more,
//! whether every block fitted: then the offer is
//! [`Published`](crate::transport::Offer::Published) everywhere, and a
//! direct routing of the superstep costs this one wait; otherwise every
//! rank keeps its blocks and routes them through the exchanges, as before.
//! The largest `wanted` also sizes the mailboxes: when a block did not fit
//! and [`mail_most`] would hold it, every rank grows its window before the
//! next all-gather (a collective `MPI_Win_free` and `MPI_Win_allocate`,
//! made at the same call on every rank, since every rank read the same
//! heads). A row longer than the cells hold grows them the same way (every
//! rank's row has the same length).
//!
//! Received blocks are copied out of the mailbox (the half is rewritten
//! two all-gathers later, and a message may outlive that), so a block
//! travels by two copies, `MPI_Put`'s and this one, which is why the
//! mailboxes stay small ([`mail_most`]: 32 KiB, less at large p): larger
//! blocks pay less placed straight into their coarrays, which from that
//! size on lie in memory the senders map.
//!
//! The timed all-gather (`timed.rs`) stays on point-to-point messages: a
//! fence cannot be given up on, and a wait for a rank that is stuck must
//! name it.

use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::topology::SimpleCommunicator;

use crate::segments::{one_segment, segments_len};
use crate::ticks::Tick;
use crate::transport::{concatenate, Blocks, Rows};

/// The mailbox of each sender in a new window, in bytes.
const MAIL_FIRST: usize = 4 << 10;

/// The largest mailbox a window grows to, in bytes, at small p: blocks
/// above it go through the exchanges (or are placed, from 32 KiB a rank
/// on). On AMD-2b (np = 2, BENCHMARKS.md section 14g) a superstep of one
/// put of 16 to 31 KiB took 3.5-5.1 us through the exchanges, with
/// mailboxes of 16 KiB, and 1.2-2.0 us through mailboxes of this size.
const MAIL_MOST: usize = 32 << 10;

/// The smallest bound on a mailbox, at any p.
const MAIL_MOST_FLOOR: usize = 16 << 10;

/// Bytes all mailboxes of one rank's window may take together (two
/// halves of p cells each), which lowers [`MAIL_MOST`] from p = 64 on.
const MAIL_BUDGET: usize = 4 << 20;

/// The largest mailbox a window of `p` ranks grows to, in bytes.
pub(super) fn mail_most(p: usize) -> usize {
    (MAIL_BUDGET / (2 * p.max(1))).clamp(MAIL_MOST_FLOOR, MAIL_MOST)
}

/// Head words of a cell: `wanted`, `length`.
const HEAD: usize = 2;

/// Bytes before the heads of a cell: the sequence word of the
/// shared-memory all-gather (see the module docs).
const SEQ_BYTES: usize = 8;

/// How long a rank spins for its peers' sequence words on one node
/// before it yields its core at each look (when the ranks outnumber the
/// cores it yields at once).
const SPIN: Duration = Duration::from_micros(50);

/// Bytes of a cache line: a cell starts on one.
const LINE: usize = 64;

/// Rows of fewer words than this still get cells of this many.
const ROW_FIRST: usize = 64;

/// One communicator's window for its all-gathers.
pub(super) struct Fenced {
    win: ffi::MPI_Win,
    base: *mut u8,
    /// On one node, every rank's window as this rank sees it (the window
    /// is then `MPI_Win_allocate_shared`'s), so that a put is a copy into
    /// the peer's memory; empty otherwise (puts are `MPI_Put`s).
    peers: Vec<*mut u8>,
    p: usize,
    me: usize,
    /// Words of row a cell holds.
    row_cap: usize,
    /// Bytes of mailbox a cell holds (a multiple of 8).
    mail_cap: usize,
    /// The half the next all-gather writes.
    half: usize,
    /// The mailbox size every rank agreed on at the last all-gather, for the
    /// next all-gather.
    mail_next: usize,
    /// Where this rank stages each peer's heads (the row goes out from
    /// the caller's slice, as it is).
    heads: Vec<u64>,
    /// All-gathers made on this window, the sequence word of the last.
    count: u64,
    /// How long to spin for the peers on one node before yielding, in
    /// nanoseconds.
    spin_ns: u64,
    /// While an offer is open: the half it was read from and this rank's
    /// own blocks.
    offered: Option<Offered>,
    /// Rows given back ([`recycle_rows`](Fenced::recycle_rows)) for the
    /// next all-gather to write into.
    spare_rows: Option<Rows>,
}

/// An offer still open: where its mail lies and this rank's own blocks.
struct Offered {
    /// The half the mail was read from.
    half: usize,
    /// Words of the rows it came with: each mailbox starts right after
    /// its sender's row.
    row: usize,
    /// This rank's blocks.
    mine: Blocks,
}

// SAFETY: the window handle and its base pointer are used only by the
// thread running this rank's processor, inside a run, while the world's
// run lock is held (MPI is initialised `MPI_THREAD_SERIALIZED`).
unsafe impl Send for Fenced {}

/// What came of an all-gather's offered blocks.
pub(super) enum Fate {
    /// Every rank's blocks fitted and were put into their mailboxes.
    Published,
    /// Some rank's did not: every rank keeps its own.
    Kept(Blocks),
}

impl Fenced {
    /// A window on `comm` (collective), for rows of `row` words: shared
    /// memory, mapped by every rank, where `shared` (every rank of `comm`
    /// is on one node); `MPI_Put`s and fences otherwise.
    pub(super) fn new(
        comm: &SimpleCommunicator,
        shared: bool,
        me: usize,
        p: usize,
        row: usize,
    ) -> Fenced {
        Fenced::allocate(comm, shared, me, p, row.max(ROW_FIRST), MAIL_FIRST)
    }

    /// Bytes of a cell: whole cache lines, so that every cell starts a
    /// line and a row crosses no more lines than it fills.
    fn cell_bytes(&self) -> usize {
        (SEQ_BYTES + 8 * (HEAD + self.row_cap) + self.mail_cap).next_multiple_of(LINE)
    }

    /// Byte offset of `sender`'s cell in `half`.
    fn cell(&self, half: usize, sender: usize) -> usize {
        (half * self.p + sender) * self.cell_bytes()
    }

    /// Byte offset of `sender`'s mailbox in `half`, in an all-gather of
    /// rows of `row` words: right after the row (see the module docs).
    fn mailbox(&self, half: usize, sender: usize, row: usize) -> usize {
        self.cell(half, sender) + SEQ_BYTES + 8 * (HEAD + row)
    }

    fn allocate(
        comm: &SimpleCommunicator,
        shared: bool,
        me: usize,
        p: usize,
        row_cap: usize,
        mail_cap: usize,
    ) -> Fenced {
        let mut fenced = Fenced {
            // SAFETY: a window handle is plain data, written by
            // MPI_Win_allocate below before any use.
            win: unsafe { ffi::RSMPI_WIN_NULL },
            base: std::ptr::null_mut(),
            peers: Vec::new(),
            p,
            me,
            row_cap,
            mail_cap,
            half: 0,
            mail_next: mail_cap,
            heads: Vec::new(),
            count: 0,
            spin_ns: spin_budget(p).as_nanos() as u64,
            offered: None,
            spare_rows: None,
        };
        let bytes = 2 * p * fenced.cell_bytes();
        let size = ffi::MPI_Aint::try_from(bytes).expect("bsp: a sync window fits an MPI_Aint");
        let base = (&mut fenced.base as *mut *mut u8).cast::<c_void>();
        // SAFETY: collective on `comm`, called by every rank at the same
        // point (see the module docs); MPI writes the base address into
        // `base` and the handle into `win`. On one node this rank zeroes
        // its segment (no one else touches it yet), and the barrier makes
        // every segment zero before anyone writes a sequence word; across
        // nodes, NOPRECEDE opens the first epoch (no RMA precedes it).
        unsafe {
            let (info, comm) = (ffi::RSMPI_INFO_NULL, comm.as_raw());
            if shared {
                ffi::MPI_Win_allocate_shared(size, 1, info, comm, base, &mut fenced.win);
                std::ptr::write_bytes(fenced.base, 0, bytes);
                ffi::MPI_Barrier(comm);
            } else {
                ffi::MPI_Win_allocate(size, 1, info, comm, base, &mut fenced.win);
                ffi::MPI_Win_fence(ffi::MPI_MODE_NOPRECEDE as c_int, fenced.win);
            }
        }
        if shared {
            fenced.peers = (0..p)
                .map(|q| {
                    let (mut size, mut unit, mut at) = (0, 0, std::ptr::null_mut::<u8>());
                    // SAFETY: a query of a shared window's segment of rank
                    // q, which MPI writes into the three locals.
                    unsafe {
                        ffi::MPI_Win_shared_query(
                            fenced.win,
                            q as c_int,
                            &mut size,
                            &mut unit,
                            (&mut at as *mut *mut u8).cast::<c_void>(),
                        );
                    }
                    at
                })
                .collect();
        }
        fenced
    }

    /// Grows the cells, collectively, when this all-gather's row or the
    /// mailbox size agreed at the last all-gather needs it.
    fn fit(&mut self, comm: &SimpleCommunicator, row: usize) {
        if row <= self.row_cap && self.mail_next <= self.mail_cap {
            return;
        }
        let row_cap = if row > self.row_cap {
            row.next_power_of_two()
        } else {
            self.row_cap
        };
        // SAFETY: every rank grows at the same call (see the module docs),
        // after the wait that completed the last writes into this window.
        unsafe { ffi::MPI_Win_free(&mut self.win) };
        let shared = !self.peers.is_empty();
        *self = Fenced::allocate(comm, shared, self.me, self.p, row_cap, self.mail_next);
    }

    /// All ranks' `row`s, concatenated in rank order, through one wait;
    /// `blocks`, when given, are offered to their receivers beside the row
    /// (see the module docs). Collective on `comm`; every rank passes a
    /// row of the same length, and blocks or none alike.
    pub(super) fn allgather(
        &mut self,
        comm: &SimpleCommunicator,
        row: &[u64],
        blocks: Option<Blocks>,
    ) -> (Rows, Option<Fate>) {
        // An offer still open is abandoned: the sync that made it found a
        // failure in the rows, and its reports take more all-gathers.
        self.offered = None;
        self.fit(comm, row.len());
        let (p, me, n) = (self.p, self.me, row.len());
        let wanted = blocks.as_ref().map_or(0, |blocks| {
            blocks
                .iter()
                .filter(|(q, _)| *q != me)
                .map(|(_, b)| segments_len(b))
                .max()
                .unwrap_or(0)
        });
        let fits = wanted <= self.mail_cap;
        let mut heads = std::mem::take(&mut self.heads);
        heads.resize(HEAD * p, 0);
        // The blocks list pids ascending, as the peers are visited.
        let mut listed = blocks.iter().flatten().filter(|_| fits).peekable();
        let cell = self.cell(self.half, me);
        let at = cell + SEQ_BYTES;
        let mail_at = self.mailbox(self.half, me, n);
        self.count += 1;
        for q in (0..p).filter(|&q| q != me) {
            while listed.next_if(|(k, _)| *k < q).is_some() {}
            let block = listed.next_if(|(k, _)| *k == q).map(|(_, b)| b);
            let length = block.map_or(0, |b| segments_len(b));
            let staged = &mut heads[q * HEAD..(q + 1) * HEAD];
            staged.copy_from_slice(&[wanted as u64, length as u64]);
            // SAFETY: the target ranges (this rank's cell in q's window:
            // the heads, then the row, which fits `row_cap`) lie inside
            // q's window, whose cells are as large as this rank's (every
            // rank grows alike); `heads` and `row` stay unchanged until
            // the wait below.
            unsafe {
                self.put(bytemuck::cast_slice(staged), q, at);
                self.put(bytemuck::cast_slice(row), q, at + 8 * HEAD);
            }
            let mut mail = mail_at;
            for segment in block.into_iter().flatten() {
                // SAFETY: the block fits the mailbox (`fits`), so the
                // target range stays inside this rank's cell in q's
                // window; the segment is held (in `blocks`) until after
                // the fence.
                unsafe { self.put(segment, q, mail) };
                mail += segment.len();
            }
            if let Some(&peer) = self.peers.get(q) {
                // SAFETY: the sequence word of this rank's cell in q's
                // segment, 8-aligned; only this rank writes it, q reads it.
                let seq = unsafe { &*peer.add(cell).cast::<AtomicU64>() };
                // Releases the row and mail copied above to q.
                seq.store(self.count, Ordering::Release);
            }
        }
        if self.peers.is_empty() {
            // SAFETY: every rank calls the fence at the same point; it
            // completes this epoch's puts, at their origins and targets.
            unsafe { ffi::MPI_Win_fence(0, self.win) };
        } else {
            self.wait_for_peers();
        }
        self.heads = heads;
        let read = self.half;
        self.half ^= 1;
        let most = (0..p)
            .filter(|&q| q != me)
            .map(|q| self.words(read, q, HEAD)[0] as usize)
            .fold(wanted, usize::max);
        let rows = concatenate(self.spare_rows.take(), p, n, |q| match q == me {
            true => row,
            false => &self.words(read, q, HEAD + n)[HEAD..],
        });
        if most > self.mail_cap && most <= mail_most(p) {
            self.mail_next = most.next_multiple_of(8).next_power_of_two();
        }
        let fate = blocks.map(|blocks| {
            if most <= self.mail_cap {
                self.offered = Some(Offered {
                    half: read,
                    row: n,
                    mine: blocks,
                });
                Fate::Published
            } else {
                Fate::Kept(blocks)
            }
        });
        (rows, fate)
    }

    /// Writes `bytes` at byte `at` of rank `q`'s window: a copy into its
    /// memory on one node, an `MPI_Put` otherwise. Completed by the
    /// all-gather's wait.
    ///
    /// # Safety
    ///
    /// `at..at + bytes.len()` must lie inside q's window, in a cell of the
    /// half being written, and `bytes` must stay unchanged until the wait.
    unsafe fn put(&self, bytes: &[u8], q: usize, at: usize) {
        if let Some(&peer) = self.peers.get(q) {
            // SAFETY: the range lies in q's segment of the shared window
            // (the caller's contract), which no one else writes or reads
            // in this all-gather: only this rank writes its cells, and q
            // reads this half after its wait.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), peer.add(at), bytes.len()) };
            return;
        }
        let len = c_int::try_from(bytes.len()).expect("bsp: mailboxes and rows are small");
        // SAFETY: as above; MPI reads `bytes` until the fence that ends
        // the wait.
        unsafe {
            ffi::MPI_Put(
                bytes.as_ptr().cast::<c_void>(),
                len,
                ffi::RSMPI_UINT8_T,
                q as c_int,
                at as ffi::MPI_Aint,
                len,
                ffi::RSMPI_UINT8_T,
                self.win,
            );
        }
    }

    /// On one node: waits until every other rank has released its cell of
    /// this all-gather in this rank's segment (its sequence word reads
    /// `count`).
    fn wait_for_peers(&self) {
        let half = self.half;
        for q in (0..self.p).filter(|&q| q != self.me) {
            // SAFETY: the sequence word of q's cell in this rank's
            // segment, 8-aligned; q writes it, this rank only reads it.
            let seq = unsafe { &*self.base.add(self.cell(half, q)).cast::<AtomicU64>() };
            // The clock starts at the first look that fails: most waits
            // end before it. It is the sync's clock (`ticks.rs`): a read
            // of the time-stamp counter where it keeps time, 9 ns on
            // AMD-2b where `Instant::now` took 20.
            let mut start = None;
            let mut looks = 0u32;
            while seq.load(Ordering::Acquire) != self.count {
                let since = *start.get_or_insert_with(Tick::now);
                looks = looks.wrapping_add(1);
                if looks % 64 == 0 && Tick::now().nanos_since(since) >= self.spin_ns {
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
            }
        }
    }

    /// The first `words` words after `sender`'s sequence word in `half`,
    /// as the last all-gather left them.
    fn words(&self, half: usize, sender: usize, words: usize) -> &[u64] {
        let at = self.cell(half, sender) + SEQ_BYTES;
        // SAFETY: the cell lies inside this rank's window (allocated with
        // 2·p cells), is 8-aligned (the window is, and cells are whole
        // words), and no rank writes this half again before this rank has
        // started its next all-gather (see the module docs).
        unsafe { std::slice::from_raw_parts(self.base.add(at).cast::<u64>(), words) }
    }

    /// After an all-gather that published the offered blocks: with
    /// `exchange`, the blocks the others put into this rank's mailboxes,
    /// copied out, and its own block to itself; without, its own blocks.
    pub(super) fn take_offered(&mut self, exchange: bool) -> Blocks {
        let Offered {
            half: read,
            row,
            mine,
        } = self.offered.take().expect("bsp: no blocks were offered");
        if !exchange {
            return mine;
        }
        // The list of this rank's blocks is reused for the blocks it got.
        let mut got = mine;
        let mut own = got
            .iter()
            .position(|(q, _)| *q == self.me)
            .map(|at| got.swap_remove(at));
        got.clear();
        for q in 0..self.p {
            if q == self.me {
                got.extend(own.take());
                continue;
            }
            // The length of the block q put into this rank's mailbox.
            let length = self.words(read, q, HEAD)[1] as usize;
            if length > 0 {
                let at = self.mailbox(read, q, row);
                // SAFETY: the sender's block lies inside its cell's
                // mailbox (it put it only when it fitted) and this half is
                // not written again before this rank's next all-gather.
                let mail = unsafe { std::slice::from_raw_parts(self.base.add(at), length) };
                got.push((q, one_segment(Bytes::copy_from_slice(mail))));
            }
        }
        got
    }

    /// Keeps `rows`, which an all-gather returned and nobody reads any
    /// more, for the next all-gather to write into.
    pub(super) fn recycle_rows(&mut self, rows: Rows) {
        self.spare_rows = Some(rows);
    }

    /// Frees the window (collective), unless the job has lost a rank.
    pub(super) fn free(mut self, collective: bool) {
        if collective {
            // SAFETY: every rank frees its window at the same point (the
            // end of the communicator's run or sub-machine), after the
            // wait that completed the last writes.
            unsafe { ffi::MPI_Win_free(&mut self.win) };
        }
    }
}

/// How long a rank spins for its peers before yielding: [`SPIN`] where
/// every rank of the `p` on this node can have a core, nothing where they
/// outnumber the cores (a spinning rank would hold the core its peer
/// needs).
fn spin_budget(p: usize) -> Duration {
    // SAFETY: sysconf has no preconditions.
    let cores = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if cores > 0 && p <= cores as usize {
        SPIN
    } else {
        Duration::ZERO
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mailboxes_shrink_with_p_within_their_budget_and_floor() {
        assert_eq!(mail_most(1), MAIL_MOST);
        assert_eq!(mail_most(2), 32 << 10);
        assert_eq!(mail_most(64), 32 << 10);
        assert_eq!(mail_most(65), (MAIL_BUDGET / 130).max(MAIL_MOST_FLOOR));
        assert_eq!(mail_most(128), 16 << 10);
        assert_eq!(mail_most(4096), MAIL_MOST_FLOOR);
        for p in 1..=300 {
            // Both halves of p mailboxes fit the budget, or sit at the floor.
            let most = mail_most(p);
            assert!(2 * p * most <= MAIL_BUDGET || most == MAIL_MOST_FLOOR);
        }
    }
}
