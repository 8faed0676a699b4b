//! The sync's all-gather as one-sided puts and one `MPI_Win_fence`, with
//! small blocks riding in the same epoch.
//!
//! A hand-written BSP superstep in MPI is a few `MPI_Put`s and one fence;
//! `MPI_Allgather` costs nearly twice that fence on one node (Open MPI
//! 4.1, BENCHMARKS.md section 14). So each communicator keeps one window
//! (`MPI_Win_allocate`), and an all-gather is: every rank puts its row
//! into a cell of every other rank's window, then all fence; after the
//! fence each rank reads the rows from its own window.
//!
//! # The window
//!
//! Two halves, used in turn by consecutive all-gathers; each half has one
//! cell per sender. A cell is two head words, then the row, then a
//! mailbox:
//!
//! ```text
//! [ wanted | length | row: row_cap words | mailbox: mail_cap bytes ]
//! ```
//!
//! * `wanted` is the longest block the sender offered to any other rank
//!   (0 when it offered none);
//! * `length` is the length of the block it put into this rank's mailbox
//!   (0 when its blocks did not all fit their mailboxes).
//!
//! A rank reads a half after the fence that ends its all-gather; the next
//! all-gather writes the other half, and the one after can only write
//! this half again once every rank has entered the fence in between (a
//! fence that ends an epoch of puts is a barrier), by which time the rank
//! has read it. So no rank overwrites rows that another has yet to read.
//!
//! # Offered blocks
//!
//! With [`allgather_offering`](crate::transport::Comm::allgather_offering),
//! each rank puts its block for every other rank into that rank's mailbox
//! in the same epoch as its row, when they all fit. After the fence every
//! rank knows every sender's `wanted`, so all agree, without a word more,
//! whether every block fitted: then the offer is
//! [`Published`](crate::transport::Offer::Published) everywhere, and a
//! direct routing of the superstep costs this one fence; otherwise every
//! rank keeps its blocks and routes them through the exchanges, as before.
//! The largest `wanted` also sizes the mailboxes: when a block did not fit
//! and [`MAIL_MOST`] would hold it, every rank grows its window before the
//! next all-gather (a collective `MPI_Win_free` and `MPI_Win_allocate`,
//! made at the same call on every rank, since every rank read the same
//! heads). A row longer than the cells hold grows them the same way (every
//! rank's row has the same length).
//!
//! Received blocks are copied out of the mailbox (the half is rewritten
//! two all-gathers later, and a message may outlive that), so a block
//! travels by two copies, `MPI_Put`'s and this one, which is why the
//! mailboxes stay small: larger blocks pay less in the exchanges, whose
//! large messages move by one copy.
//!
//! The timed all-gather (`timed.rs`) stays on point-to-point messages: a
//! fence cannot be given up on.

use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::Arc;

use bytes::Bytes;
use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::topology::SimpleCommunicator;

use crate::segments::segments_len;
use crate::transport::{Blocks, Rows};

/// The mailbox of each sender in a new window, in bytes.
const MAIL_FIRST: usize = 4 << 10;

/// The largest mailbox a window grows to, in bytes: blocks above it go
/// through the exchanges.
pub(super) const MAIL_MOST: usize = 16 << 10;

/// Head words of a cell: `wanted`, `length`.
const HEAD: usize = 2;

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
    /// The mailbox size every rank agreed on at the last fence, for the
    /// next all-gather.
    mail_next: usize,
    /// Where this rank stages each peer's row and heads.
    staging: Vec<u64>,
    /// While an offer is open: the half it was read from and this rank's
    /// own blocks.
    offered: Option<(usize, Blocks)>,
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
    /// A window on `comm` (collective), for rows of `row` words; shared
    /// memory when every rank of `comm` is on `one_node`.
    pub(super) fn new(
        comm: &SimpleCommunicator,
        one_node: bool,
        me: usize,
        p: usize,
        row: usize,
    ) -> Fenced {
        Fenced::allocate(comm, one_node, me, p, row.max(ROW_FIRST), MAIL_FIRST)
    }

    fn cell_bytes(&self) -> usize {
        8 * (HEAD + self.row_cap) + self.mail_cap
    }

    /// Byte offset of `sender`'s cell in `half`.
    fn cell(&self, half: usize, sender: usize) -> usize {
        (half * self.p + sender) * self.cell_bytes()
    }

    fn allocate(
        comm: &SimpleCommunicator,
        one_node: bool,
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
            staging: Vec::new(),
            offered: None,
        };
        let bytes = 2 * p * fenced.cell_bytes();
        let size = ffi::MPI_Aint::try_from(bytes).expect("bsp: a sync window fits an MPI_Aint");
        let base = (&mut fenced.base as *mut *mut u8).cast::<c_void>();
        // SAFETY: collective on `comm`, called by every rank at the same
        // point (see the module docs); MPI writes the base address into
        // `base` and the handle into `win`. NOPRECEDE opens the first
        // epoch: no RMA precedes it.
        unsafe {
            let (info, comm) = (ffi::RSMPI_INFO_NULL, comm.as_raw());
            if one_node {
                ffi::MPI_Win_allocate_shared(size, 1, info, comm, base, &mut fenced.win);
            } else {
                ffi::MPI_Win_allocate(size, 1, info, comm, base, &mut fenced.win);
            }
            ffi::MPI_Win_fence(ffi::MPI_MODE_NOPRECEDE as c_int, fenced.win);
        }
        if one_node {
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
    /// mailbox size agreed at the last fence needs it.
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
        // after the fence that completed the last puts into this window.
        unsafe { ffi::MPI_Win_free(&mut self.win) };
        let one_node = !self.peers.is_empty();
        *self = Fenced::allocate(comm, one_node, self.me, self.p, row_cap, self.mail_next);
    }

    /// All ranks' `row`s, concatenated in rank order, through one fence;
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
        let stride = HEAD + n;
        let mut staging = std::mem::take(&mut self.staging);
        staging.resize(stride * p, 0);
        // The blocks list pids ascending, as the peers are visited.
        let mut listed = blocks.iter().flatten().filter(|_| fits).peekable();
        let at = self.cell(self.half, me);
        let mail_at = at + 8 * (HEAD + self.row_cap);
        for q in (0..p).filter(|&q| q != me) {
            while listed.next_if(|(k, _)| *k < q).is_some() {}
            let block = listed.next_if(|(k, _)| *k == q).map(|(_, b)| b);
            let length = block.map_or(0, |b| segments_len(b));
            let staged = &mut staging[q * stride..(q + 1) * stride];
            staged[0] = wanted as u64;
            staged[1] = length as u64;
            staged[HEAD..].copy_from_slice(row);
            let staged = bytemuck::cast_slice::<u64, u8>(staged);
            // SAFETY: the target range (this rank's cell in q's window,
            // `stride` words) lies inside q's window, whose cells are as
            // large as this rank's (every rank grows alike); `staged`
            // stays unchanged until the fence below.
            unsafe { self.put(staged, q, at) };
            let mut mail = mail_at;
            for segment in block.into_iter().flatten() {
                // SAFETY: the block fits the mailbox (`fits`), so the
                // target range stays inside this rank's cell in q's
                // window; the segment is held (in `blocks`) until after
                // the fence.
                unsafe { self.put(segment, q, mail) };
                mail += segment.len();
            }
        }
        // SAFETY: every rank calls the fence at the same point; it
        // completes this epoch's puts, at their origins and targets.
        unsafe { ffi::MPI_Win_fence(0, self.win) };
        self.staging = staging;
        let read = self.half;
        self.half ^= 1;
        // Made in place, not copied out of a vector.
        let mut rows: Rows = std::iter::repeat_n(0, n * p).collect();
        let all = Arc::get_mut(&mut rows).expect("bsp: new rows are not shared");
        let mut most = wanted;
        for q in 0..p {
            if q == me {
                all[q * n..(q + 1) * n].copy_from_slice(row);
                continue;
            }
            let heads = self.words(read, q, HEAD + n);
            most = most.max(heads[0] as usize);
            all[q * n..(q + 1) * n].copy_from_slice(&heads[HEAD..]);
        }
        if most > self.mail_cap && most <= MAIL_MOST {
            self.mail_next = most.next_multiple_of(8).next_power_of_two();
        }
        let fate = blocks.map(|blocks| {
            if most <= self.mail_cap {
                self.offered = Some((read, blocks));
                Fate::Published
            } else {
                Fate::Kept(blocks)
            }
        });
        (rows, fate)
    }

    /// Writes `bytes` at byte `at` of rank `q`'s window: a copy into its
    /// memory on one node, an `MPI_Put` otherwise. Completed by the next
    /// fence.
    ///
    /// # Safety
    ///
    /// `at..at + bytes.len()` must lie inside q's window, in a cell of the
    /// half being written, and `bytes` must stay unchanged until the fence.
    unsafe fn put(&self, bytes: &[u8], q: usize, at: usize) {
        if let Some(&peer) = self.peers.get(q) {
            // SAFETY: the range lies in q's segment of the shared window
            // (the caller's contract), which no one else writes or reads
            // in this epoch: only this rank writes its cells, and q reads
            // this half after the fence.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), peer.add(at), bytes.len()) };
            return;
        }
        let len = c_int::try_from(bytes.len()).expect("bsp: mailboxes and rows are small");
        // SAFETY: as above; MPI reads `bytes` until the fence.
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

    /// The first `words` words of `sender`'s cell in `half`, as the last
    /// fence left them.
    fn words(&self, half: usize, sender: usize, words: usize) -> &[u64] {
        let at = self.cell(half, sender);
        // SAFETY: the cell lies inside this rank's window (allocated with
        // 2·p cells), is 8-aligned (the window is, and cells are whole
        // words), and no put writes this half until every rank has passed
        // the next fence, which this rank has not yet entered.
        unsafe { std::slice::from_raw_parts(self.base.add(at).cast::<u64>(), words) }
    }

    /// After an all-gather that published the offered blocks: with
    /// `exchange`, the blocks the others put into this rank's mailboxes,
    /// copied out, and its own block to itself; without, its own blocks.
    pub(super) fn take_offered(&mut self, exchange: bool) -> Blocks {
        let (read, mine) = self.offered.take().expect("bsp: no blocks were offered");
        if !exchange {
            return mine;
        }
        let mut own = mine.into_iter().find(|(q, _)| *q == self.me);
        let mut got = Blocks::new();
        for q in 0..self.p {
            if q == self.me {
                got.extend(own.take());
                continue;
            }
            let length = self.words(read, q, HEAD)[1] as usize;
            if length == 0 {
                continue;
            }
            let at = self.cell(read, q) + 8 * (HEAD + self.row_cap);
            // SAFETY: the sender's block lies inside its cell's mailbox
            // (it put it only when it fitted) and this half is not written
            // again before this rank's next fence.
            let bytes = unsafe { std::slice::from_raw_parts(self.base.add(at), length) };
            got.push((q, vec![Bytes::copy_from_slice(bytes)]));
        }
        got
    }

    /// Frees the window (collective), unless the job has lost a rank.
    pub(super) fn free(mut self, collective: bool) {
        if collective {
            // SAFETY: every rank frees its window at the same point (the
            // end of the communicator's run or sub-machine), after the
            // fence that completed the last puts.
            unsafe { ffi::MPI_Win_free(&mut self.win) };
        }
    }
}
