//! The threads transport: one OS thread per processor, exchanging
//! reference-counted byte segments through shared mailboxes.

use std::sync::{Arc, Mutex};

use super::barrier::Barrier;
use super::{Aborted, Blocks, Body, Comm, Rows};
use crate::error::{Error, ErrorKind, Result};

/// State shared by the p processor threads of one run.
///
/// Mailboxes come in two sets used alternately by consecutive collectives.
/// A processor writes set `e % 2` in collective `e` and reads it after that
/// collective's barrier; it can only write the same set again in collective
/// `e + 2`, after passing the barrier of `e + 1`, which nobody passes before
/// every processor has finished reading collective `e`. One barrier per
/// collective is therefore enough.
///
/// Nothing here grows with p²: an all-gather fills one shared table of
/// rows, read as one shared snapshot, and an exchange leaves each block in
/// its receiver's inbox, so a processor touches only its own inbox and
/// the inboxes of the processors it sends to.
pub(crate) struct ThreadsShared {
    nprocs: usize,
    barrier: Barrier,
    rows: [Mutex<RowTable>; 2],
    /// `inboxes[set][to]`: the non-empty blocks sent to `to`, with their senders.
    inboxes: [Vec<Mutex<Blocks>>; 2],
    first_error: Mutex<Option<Error>>,
}

/// The rows of one all-gather, and the snapshot every processor returns.
#[derive(Default)]
struct RowTable {
    /// The collective (epoch) the table is for.
    epoch: usize,
    words: Vec<u64>,
    snapshot: Option<Rows>,
}

impl ThreadsShared {
    fn new(nprocs: usize) -> Arc<Self> {
        let inboxes = || (0..nprocs).map(|_| Mutex::new(Vec::new())).collect();
        Arc::new(ThreadsShared {
            nprocs,
            barrier: Barrier::new(nprocs),
            rows: Default::default(),
            inboxes: [inboxes(), inboxes()],
            first_error: Mutex::new(None),
        })
    }

    /// Records `error` unless an earlier one is recorded, and releases
    /// everyone waiting at the barrier.
    fn fail(&self, error: Error) {
        let mut first = lock(&self.first_error);
        if first.is_none() {
            *first = Some(error);
        }
        drop(first);
        self.barrier.poison();
    }

    /// The first error recorded during the run, if any.
    fn take_error(&self) -> Option<Error> {
        lock(&self.first_error).take()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned mailbox only means another processor panicked while holding
    // it; the run is being aborted anyway and the data is still valid.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One processor's endpoint of the threads transport.
pub(crate) struct ThreadsComm {
    shared: Arc<ThreadsShared>,
    pid: usize,
    /// Number of collectives this processor has entered.
    epoch: usize,
}

impl ThreadsComm {
    fn new(shared: Arc<ThreadsShared>, pid: usize) -> Self {
        ThreadsComm {
            shared,
            pid,
            epoch: 0,
        }
    }

    fn next_set(&mut self) -> usize {
        let set = self.epoch % 2;
        self.epoch += 1;
        set
    }

    fn exchange(&mut self, blocks: Blocks, expected: Option<&[u64]>) -> Result<Blocks, Aborted> {
        let set = self.next_set();
        let inboxes = &self.shared.inboxes[set];
        for (to, block) in blocks {
            if !block.is_empty() {
                lock(&inboxes[to]).push((self.pid, block));
            }
        }
        self.shared.barrier.wait()?;
        let mut received = std::mem::take(&mut *lock(&inboxes[self.pid]));
        received.sort_unstable_by_key(|&(from, _)| from);
        // The lengths a caller expects are what MPI would receive: check
        // them here, where the tests run at every p.
        if let Some(lens) = expected.filter(|_| cfg!(debug_assertions)) {
            let mut got = vec![0; lens.len()];
            for (from, block) in &received {
                got[*from] = crate::segments::segments_len(block) as u64;
            }
            for (from, (&want, &got)) in lens.iter().zip(&got).enumerate() {
                assert!(
                    from == self.pid || want == got,
                    "bsp: processor {} expected {want} bytes from {from}, got {got}",
                    self.pid
                );
            }
        }
        Ok(received)
    }
}

impl Comm for ThreadsComm {
    fn pid(&self) -> usize {
        self.pid
    }

    fn nprocs(&self) -> usize {
        self.shared.nprocs
    }

    fn allgather(&mut self, row: &[u64]) -> Result<Rows, Aborted> {
        let (p, epoch) = (self.shared.nprocs, self.epoch);
        let set = self.next_set();
        let table = &self.shared.rows[set];
        {
            let mut t = lock(table);
            if t.epoch != epoch || t.words.len() != p * row.len() {
                t.epoch = epoch;
                t.snapshot = None;
                t.words.clear();
                t.words.resize(p * row.len(), 0);
            }
            t.words[self.pid * row.len()..(self.pid + 1) * row.len()].copy_from_slice(row);
        }
        self.shared.barrier.wait()?;
        let mut t = lock(table);
        let t = &mut *t;
        Ok(t.snapshot
            .get_or_insert_with(|| Rows::from(&t.words[..]))
            .clone())
    }

    fn transpose(&mut self, blocks: Blocks, expected: Option<&[u64]>) -> Result<Blocks, Aborted> {
        self.exchange(blocks, expected)
    }

    fn alltoallv(&mut self, blocks: Blocks, expected: Option<&[u64]>) -> Result<Blocks, Aborted> {
        self.exchange(blocks, expected)
    }

    fn abort(&mut self, error: Error) -> ! {
        self.shared.fail(error);
        std::panic::resume_unwind(Box::new(Aborted))
    }
}

/// Runs `body` on `p` threads of this process and returns every
/// processor's result in pid order, or the run's first error.
pub(crate) fn launch<R: Send>(p: usize, body: &impl Body<R>) -> Result<Vec<R>> {
    if p == 0 {
        return Err(Error::new(
            ErrorKind::Config,
            None,
            None,
            "a run needs at least one processor (p = 0)",
        ));
    }
    let shared = ThreadsShared::new(p);
    let results: Vec<Option<R>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..p)
            .map(|pid| {
                let shared = Arc::clone(&shared);
                std::thread::Builder::new()
                    .name(format!("bsp-{pid}"))
                    .spawn_scoped(scope, move || body(Box::new(ThreadsComm::new(shared, pid))))
                    .expect("bsp: cannot spawn a processor thread")
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    if let Some(error) = shared.take_error() {
        return Err(error);
    }
    Ok(results
        .into_iter()
        .map(|r| r.expect("bsp: a processor ended without result or error"))
        .collect())
}
