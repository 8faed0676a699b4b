//! What the processors of a threads run publish to one another in a
//! collective, without locks: each processor writes its row and its
//! outgoing blocks into a slot of its own, links each block into its
//! receiver's inbox with one compare-and-swap, passes the barrier, and
//! then reads every row and takes the blocks linked to it straight out of
//! their senders' slots (the blocks are moved, not copied: the only copy
//! of a payload is the receiver's, into its destination).
//!
//! The slots come in two sets, used by collectives of even and odd
//! number. In collective e a processor writes set e mod 2 and, after that
//! collective's barrier, reads it. It writes the same set again in
//! collective e + 2, which it enters only after the barrier of e + 1, and
//! nobody passes that barrier before finishing its reads of collective e.
//! So one barrier per collective is all the synchronisation there is, and
//! the next collective's barrier is what tells a sender its blocks have
//! been taken.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crossbeam_utils::CachePadded;

use crate::segments::Segments;
use crate::transport::waiting::{Interrupted, Parking, Signal};
use crate::transport::{concatenate, Blocks, Rows};

/// All-gathers whose rows add up to more words than this are copied once,
/// by processor 0, into a snapshot every processor shares (the statistics
/// keep it, so p processors cost p rows, not p²); smaller ones are copied
/// by every processor for itself, which spares the wait for processor 0.
const SHARED_ROWS_WORDS: usize = 4096;

/// One processor's part of one set.
#[derive(Default)]
struct Slot {
    /// Its row in the all-gather of the collective using this set.
    row: UnsafeCell<Vec<u64>>,
    /// Its non-empty outgoing blocks in the exchange using this set.
    out: UnsafeCell<Vec<Outgoing>>,
}

/// A published block and the link to the next block for its receiver.
struct Outgoing {
    /// The receiver.
    to: usize,
    /// Taken by the receiver (the only one to touch it after the barrier).
    block: UnsafeCell<Option<Segments>>,
    /// The inbox's previous head: the next block to the same receiver.
    next: AtomicU64,
}

/// The slots, inboxes and shared snapshot of the collectives of one
/// parity.
struct Set {
    slots: Vec<CachePadded<Slot>>,
    /// `inbox[q]`: the last block linked for processor q, as
    /// [`link`]`(sender, index)`, or 0 for none.
    inbox: Vec<CachePadded<AtomicU64>>,
    /// The rows of a large all-gather, copied by processor 0 …
    snapshot: UnsafeCell<Option<Rows>>,
    /// … which raises this to the collective's number plus one when done.
    snapshot_ready: CachePadded<Signal>,
}

// SAFETY: the cells of a set are accessed under the protocol of the module
// documentation: in a collective, a slot's cells are written by their
// processor before the barrier and only read (rows) or taken from by their
// receiver (blocks, each by one processor) after it; the snapshot is
// written by processor 0 after the barrier and read by the others once
// `snapshot_ready` says so. The next write to a set follows a barrier that
// every reader passes only after its reads.
unsafe impl Sync for Set {}

impl Set {
    /// Processor `q`'s published row.
    ///
    /// # Safety
    ///
    /// Only between the barrier of the collective that published it and
    /// the next barrier (module protocol).
    unsafe fn row(&self, q: usize) -> &[u64] {
        // SAFETY: the caller's promise: nobody writes the row meanwhile.
        unsafe { &*self.slots[q].row.get() }
    }

    /// Whether the rows are large enough to be shared in one snapshot
    /// (`me`'s width is everyone's). Safety as [`row`](Set::row).
    unsafe fn large(&self, me: usize) -> bool {
        // SAFETY: passed on to the caller.
        self.slots.len() * unsafe { self.row(me) }.len() > SHARED_ROWS_WORDS
    }

    /// Every row, concatenated in pid order (into `spare` where it fits,
    /// see [`concatenate`]). Safety as [`row`](Set::row).
    unsafe fn concatenated(&self, me: usize, spare: Option<Rows>) -> Rows {
        // SAFETY: passed on to the caller.
        let width = unsafe { self.row(me) }.len();
        // SAFETY: passed on to the caller.
        concatenate(spare, self.slots.len(), width, |q| unsafe { self.row(q) })
    }
}

/// The code of `sender`'s block number `index` in an inbox (never 0).
fn link(sender: usize, index: usize) -> u64 {
    ((sender as u64 + 1) << 32) | index as u64
}

/// The sender and index of a nonzero inbox code.
fn unlink(code: u64) -> (usize, usize) {
    (
        (code >> 32) as usize - 1,
        (code & u64::from(u32::MAX)) as usize,
    )
}

/// The two sets of a run (or sub-machine) of `p` processors.
pub(super) struct Slots {
    sets: [Set; 2],
}

impl Slots {
    pub(super) fn new(p: usize) -> Self {
        assert!(
            p < u32::MAX as usize,
            "bsp: too many processors for one process"
        );
        let set = || Set {
            slots: (0..p).map(|_| CachePadded::default()).collect(),
            inbox: (0..p).map(|_| CachePadded::default()).collect(),
            snapshot: UnsafeCell::new(None),
            snapshot_ready: CachePadded::new(Signal::for_many()),
        };
        Slots {
            sets: [set(), set()],
        }
    }

    /// Publishes processor `me`'s `row` for collective `epoch` (before its
    /// barrier).
    pub(super) fn publish_row(&self, epoch: usize, me: usize, row: &[u64]) {
        let set = &self.sets[epoch % 2];
        // SAFETY: only processor `me` writes its slot, and in collective
        // `epoch` nobody reads it before the barrier (module protocol).
        let mine = unsafe { &mut *set.slots[me].row.get() };
        mine.clear();
        mine.extend_from_slice(row);
    }

    /// Every processor's row of collective `epoch`, in pid order (after
    /// its barrier), as processor `me` returns them.
    pub(super) fn rows(
        &self,
        epoch: usize,
        me: usize,
        parking: &Parking,
        deadline: Option<Instant>,
        spare: Option<Rows>,
    ) -> Result<Rows, Interrupted> {
        let set = &self.sets[epoch % 2];
        // SAFETY: called after the barrier of collective `epoch`.
        if !unsafe { set.large(me) } {
            // SAFETY: as above.
            return Ok(unsafe { set.concatenated(me, spare) });
        }
        if me == 0 && set.snapshot_ready.get() <= epoch {
            self.make_snapshot(epoch, me, parking);
        }
        parking.wait(me, &set.snapshot_ready, epoch + 1, deadline)?;
        // SAFETY: processor 0 wrote the snapshot before raising the signal
        // and writes it again only after the next barrier.
        let rows = unsafe { &*set.snapshot.get() };
        Ok(Rows::clone(rows.as_ref().expect("raised with a snapshot")))
    }

    /// Makes the shared snapshot of collective `epoch`'s rows, if they are
    /// large, once every row is published and before anyone reads them:
    /// run by one processor (`me`), either inside the barrier (its last
    /// step) or, where the barrier has none, by processor 0 after it while
    /// the others wait.
    pub(super) fn make_snapshot(&self, epoch: usize, me: usize, parking: &Parking) {
        let set = &self.sets[epoch % 2];
        // SAFETY: every row is published and none is written before the
        // next barrier.
        if !unsafe { set.large(me) } {
            return;
        }
        // SAFETY: as above; one processor makes the snapshot, and nobody
        // reads it before the raise below (module protocol).
        unsafe { *set.snapshot.get() = Some(set.concatenated(me, None)) };
        parking.raise(&set.snapshot_ready, epoch + 1, None);
    }

    /// Publishes processor `me`'s `blocks` for collective `epoch` and links
    /// each non-empty one into its receiver's inbox (before the barrier).
    pub(super) fn publish_blocks(&self, epoch: usize, me: usize, blocks: Blocks) {
        let set = &self.sets[epoch % 2];
        // SAFETY: as in `publish_row`; receivers take from these entries
        // only after the barrier.
        let out = unsafe { &mut *set.slots[me].out.get() };
        out.clear();
        for (to, block) in blocks {
            if !block.is_empty() {
                out.push(Outgoing {
                    to,
                    block: UnsafeCell::new(Some(block)),
                    next: AtomicU64::new(0),
                });
            }
        }
        for (index, entry) in out.iter().enumerate() {
            let inbox = &set.inbox[entry.to];
            let mut head = inbox.load(Ordering::Relaxed);
            loop {
                entry.next.store(head, Ordering::Relaxed);
                match inbox.compare_exchange_weak(
                    head,
                    link(me, index),
                    Ordering::Release,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => break,
                    Err(now) => head = now,
                }
            }
        }
    }

    /// The non-empty blocks sent to processor `me` in collective `epoch`,
    /// by sender (after its barrier), taken out of the senders' slots.
    pub(super) fn take_blocks(&self, epoch: usize, me: usize) -> Blocks {
        let set = &self.sets[epoch % 2];
        let mut code = set.inbox[me].swap(0, Ordering::Acquire);
        let mut received = Vec::new();
        while code != 0 {
            let (from, index) = unlink(code);
            // SAFETY: the sender published its entries before the barrier
            // and rewrites them only after the next; this processor alone
            // takes the entries linked into its inbox, and no one holds a
            // mutable reference to the list meanwhile.
            let entry = unsafe { &(&*set.slots[from].out.get())[index] };
            // SAFETY: this entry's block is taken by its receiver only.
            let block = unsafe { (*entry.block.get()).take() };
            received.push((from, block.expect("a block is taken once")));
            code = entry.next.load(Ordering::Relaxed);
        }
        received.sort_unstable_by_key(|&(from, _)| from);
        received
    }
}

impl Slots {
    /// Processor `me`'s own blocks of collective `epoch`, back (after its
    /// barrier, when the processors have decided not to exchange them);
    /// empties its inbox, whose links nobody follows.
    pub(super) fn take_back(&self, epoch: usize, me: usize) -> Blocks {
        let set = &self.sets[epoch % 2];
        set.inbox[me].store(0, Ordering::Relaxed);
        // SAFETY: nobody takes from this processor's entries in a
        // collective whose blocks are not exchanged, and only this
        // processor writes them.
        let out = unsafe { &mut *set.slots[me].out.get() };
        out.drain(..)
            .map(|entry| (entry.to, entry.block.into_inner().expect("not taken")))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_round_trip() {
        for (s, i) in [(0, 0), (5, 17), (70_000, 69_999)] {
            assert_eq!(unlink(link(s, i)), (s, i));
            assert_ne!(link(s, i), 0);
        }
    }
}
