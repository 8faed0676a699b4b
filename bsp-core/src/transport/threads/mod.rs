//! The threads transport: one OS thread per processor, publishing rows and
//! reference-counted byte segments to one another in shared memory.
//!
//! A collective is one barrier and no lock: each processor publishes its
//! part in a slot of its own (`slots.rs`), passes the barrier
//! (`../barrier.rs`, which spins while the processors have cores and parks
//! each waiter by itself otherwise) and reads what the others published.

mod limits;
mod slots;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

use super::barrier::{Barrier, BarrierKind};
use super::split::Frame;
use super::waiting::{cores, Interrupted};
use super::{
    timeout_message, Aborted, Blocks, Capabilities, Comm, Group, Launcher, Offer, OpenRun, Opened,
    Purpose, Rows, RunLimits,
};
use crate::error::{Error, ErrorKind, Result};

/// After a run with a sync time limit has failed, how long the processors
/// still in their own code get to reach bsp (where they unwind) before
/// the process exits: the limit, but at least this.
const MIN_GRACE: Duration = Duration::from_secs(5);

/// State shared by the p processor threads of one run: the barrier and
/// the published slots of every collective (see `slots.rs`).
///
/// Nothing here grows with p²: a large all-gather is read as one shared
/// snapshot, and an exchange links each block into its receiver's inbox,
/// so a processor touches only its own inbox and the slots of the
/// processors that send to it.
///
/// A sub-machine (a group formed by a split) has a `ThreadsShared` of its
/// own, over its members only, linked to the run's (its `root`): its
/// failures are recorded there, in the run's numbering (its `frame`),
/// and a failure anywhere poisons every barrier of the run.
pub(crate) struct ThreadsShared {
    nprocs: usize,
    /// This state's number within the run (0 for the run itself).
    id: u64,
    /// For a sub-machine: the run's state, and where the sub-machine sits.
    root: Option<Arc<ThreadsShared>>,
    frame: Option<Arc<Frame>>,
    /// The run's sub-machines, shared by all states of the run.
    family: Arc<Family>,
    barrier: Barrier,
    slots: slots::Slots,
    limits: RunLimits,
    /// The run's first error, and when it was recorded.
    first_error: Mutex<Option<(Error, Instant)>>,
    /// Processors whose body has returned, and its signal.
    finished: Mutex<usize>,
    finished_signal: Condvar,
}

/// A group being formed: the parent state's number, the parent's epoch
/// (collectives entered) at the split, and the color.
type GroupKey = (u64, usize, u64);

/// What the states of one run share to form sub-machines.
#[derive(Default)]
struct Family {
    /// The barrier asked for (`BSP_BARRIER`).
    barrier: BarrierKind,
    /// Whether every processor of the run has a core of the process's CPU
    /// affinity: waiters then spin before parking, and `auto` picks the
    /// dissemination barrier.
    cores_each: bool,
    /// The number of the next sub-machine.
    next_id: AtomicU64,
    /// Groups being formed, by (parent state, parent epoch, color): the
    /// group's state, created by its first member to arrive, and how many
    /// members have still to take it.
    forming: Mutex<HashMap<GroupKey, (Arc<ThreadsShared>, usize)>>,
    /// Every sub-machine of the run, to release its waiters when the run
    /// fails.
    subs: Mutex<Vec<Weak<ThreadsShared>>>,
}

impl ThreadsShared {
    fn new(nprocs: usize, limits: RunLimits, barrier: BarrierKind) -> Arc<Self> {
        let family = Arc::new(Family {
            barrier,
            cores_each: nprocs <= cores(),
            ..Family::default()
        });
        Arc::new(Self::state(nprocs, limits, None, None, family))
    }

    fn state(
        nprocs: usize,
        limits: RunLimits,
        root: Option<Arc<ThreadsShared>>,
        frame: Option<Arc<Frame>>,
        family: Arc<Family>,
    ) -> Self {
        let id = family.next_id.fetch_add(1, Ordering::Relaxed);
        let kind = family.barrier.resolve(family.cores_each);
        ThreadsShared {
            nprocs,
            id,
            root,
            frame,
            barrier: Barrier::new(nprocs, kind, family.cores_each),
            family,
            slots: slots::Slots::new(nprocs),
            limits,
            first_error: Mutex::new(None),
            finished: Mutex::new(0),
            finished_signal: Condvar::new(),
        }
    }

    /// The state of the sub-machine `group` formed from `parent` (whose
    /// processors are at `superstep`), registered with the run so that a
    /// failure releases its waiters.
    fn sub(parent: &Arc<ThreadsShared>, group: &Group, superstep: usize) -> Arc<Self> {
        let root = parent.root.clone().unwrap_or_else(|| Arc::clone(parent));
        let frame = Frame::nested(parent.frame.as_ref(), group, superstep);
        let family = Arc::clone(&parent.family);
        let state = Self::state(
            group.members.len(),
            parent.limits,
            Some(Arc::clone(&root)),
            Some(frame),
            family,
        );
        let state = Arc::new(state);
        {
            let mut subs = lock(&state.family.subs);
            subs.retain(|s| s.strong_count() > 0);
            subs.push(Arc::downgrade(&state));
        }
        // Registered first, checked second: a failure recorded after the
        // check finds the new state in the list.
        if lock(&root.first_error).is_some() {
            state.barrier.poison();
        }
        state
    }

    /// Records `error` unless an earlier one is recorded, and releases
    /// everyone waiting at a barrier of the run. A sub-machine records it
    /// in the run's state, translated to the run's numbering.
    fn fail(&self, error: Error) {
        if let (Some(root), Some(frame)) = (&self.root, &self.frame) {
            return root.fail(frame.translate(error));
        }
        let mut first = lock(&self.first_error);
        if first.is_none() {
            *first = Some((error, Instant::now()));
        }
        drop(first);
        self.barrier.poison();
        let subs = lock(&self.family.subs);
        for sub in subs.iter().filter_map(Weak::upgrade) {
            sub.barrier.poison();
        }
    }

    fn exit_with_stuck_processors(&self, started: usize, grace: Duration) -> ! {
        let error = lock(&self.first_error).as_ref().map(|(e, _)| e.clone());
        let newest = (0..started)
            .map(|q| self.barrier.entered(q))
            .max()
            .unwrap_or(0);
        let stuck: Vec<String> = (0..started)
            .filter(|&q| self.barrier.entered(q) < newest)
            .map(|q| q.to_string())
            .collect();
        let mut report = String::new();
        if let Some(error) = error {
            report.push_str(&self.limits.report_line(&error));
        }
        report.push_str(&format!(
            "bsp: processors [{}] are still in their own code {:.1} s after the run failed; \
             they cannot be stopped safely, so the process exits (the run of {})\n",
            stuck.join(", "),
            grace.as_secs_f64(),
            self.limits.program
        ));
        let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), report.as_bytes());
        std::process::exit(1)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned mutex only means another processor panicked while holding
    // it; the run is being aborted anyway and the data is still valid.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One processor's endpoint of the threads transport.
pub(crate) struct ThreadsComm {
    shared: Arc<ThreadsShared>,
    pid: usize,
    /// Number of collectives this processor has entered.
    epoch: usize,
    /// The superstep of the coming collectives, for error reports.
    superstep: usize,
    /// The collective whose offered blocks are published and not yet
    /// taken.
    offered: Option<usize>,
    /// Rows given back ([`Comm::recycle_rows`]) for the next all-gather of
    /// rows small enough that each processor concatenates its own.
    spare_rows: Option<Rows>,
}

impl ThreadsComm {
    fn new(shared: Arc<ThreadsShared>, pid: usize) -> Self {
        ThreadsComm {
            shared,
            pid,
            epoch: 0,
            superstep: 0,
            offered: None,
            spare_rows: None,
        }
    }

    /// The number of the collective being entered, counting it as entered.
    fn enter(&mut self) -> usize {
        self.epoch += 1;
        self.epoch - 1
    }

    /// The deadline of a wait starting now, under the run's time limit.
    fn deadline(&self) -> Option<Instant> {
        self.shared.limits.sync_timeout.map(|t| Instant::now() + t)
    }

    /// Arrives at the barrier of the current collective and waits for the
    /// others until `deadline`; `last` as [`Barrier::wait`] runs it.
    fn arrive(&self, deadline: Option<Instant>, last: Option<&dyn Fn()>) -> Result<(), Aborted> {
        let waited = self.shared.barrier.wait(self.pid, deadline, last);
        waited.map_err(|why| self.interrupted(why))
    }

    /// The end of a wait cut short: when the time limit ran out, records
    /// the timeout, naming the processors that have not arrived.
    fn interrupted(&self, why: Interrupted) -> Aborted {
        let shared = &*self.shared;
        if why == Interrupted::TimedOut {
            let limit = shared.limits.sync_timeout.unwrap_or_default();
            let missing: Vec<usize> = (0..shared.nprocs)
                .filter(|&q| shared.barrier.entered(q) < self.epoch)
                .collect();
            let culprit = missing.first().copied().unwrap_or(self.pid);
            let msg = timeout_message(&missing, shared.nprocs, limit);
            shared.fail(Error::at(ErrorKind::Timeout, culprit, self.superstep, msg));
        }
        Aborted
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
        let epoch = self.enter();
        let deadline = self.deadline();
        let shared = &*self.shared;
        shared.slots.publish_row(epoch, self.pid, row);
        // A large all-gather's shared snapshot is made before anyone
        // leaves the barrier, where the barrier allows.
        let parking = shared.barrier.parking();
        let snapshot = || shared.slots.make_snapshot(epoch, self.pid, parking);
        self.arrive(deadline, Some(&snapshot))?;
        let spare = self.spare_rows.take();
        let rows = shared.slots.rows(epoch, self.pid, parking, deadline, spare);
        rows.map_err(|why| self.interrupted(why))
    }

    fn recycle_rows(&mut self, rows: Rows) {
        self.spare_rows = Some(rows);
    }

    fn allgather_offering(
        &mut self,
        row: &[u64],
        blocks: Blocks,
    ) -> Result<(Rows, Offer), Aborted> {
        debug_assert!(self.offered.is_none(), "bsp: offered blocks not taken");
        self.shared
            .slots
            .publish_blocks(self.epoch, self.pid, blocks);
        self.offered = Some(self.epoch);
        Ok((self.allgather(row)?, Offer::Published))
    }

    fn take_offered(&mut self, exchange: bool) -> Blocks {
        let epoch = self.offered.take().expect("bsp: no blocks were offered");
        let slots = &self.shared.slots;
        if exchange {
            slots.take_blocks(epoch, self.pid)
        } else {
            slots.take_back(epoch, self.pid)
        }
    }

    fn exchange(&mut self, blocks: Blocks, expected: Option<&[u64]>) -> Result<Blocks, Aborted> {
        let epoch = self.enter();
        let deadline = self.deadline();
        self.shared.slots.publish_blocks(epoch, self.pid, blocks);
        self.arrive(deadline, None)?;
        let received = self.shared.slots.take_blocks(epoch, self.pid);
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

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            shares_memory: true,
            one_node: true,
            scatter_receive: false,
            publishes_with_rows: true,
            // Blocks are published as shared references, of any size.
            publishes_up_to: usize::MAX,
            maps_memory: false,
        }
    }

    fn set_superstep(&mut self, superstep: usize) {
        self.superstep = superstep;
    }

    fn abort(&mut self, error: Error) -> ! {
        self.shared.fail(error);
        std::panic::resume_unwind(Box::new(Aborted))
    }

    /// The first member of `group` to arrive creates the group's state;
    /// the others find it under the same (state, epoch, color), which
    /// every member of this communicator agrees on after the split's
    /// all-gather. No collective: the group's first sync is its first.
    fn split(&mut self, group: &Group, superstep: usize) -> Result<Box<dyn Comm>, Aborted> {
        let key = (self.shared.id, self.epoch, group.color);
        let state = {
            let mut forming = lock(&self.shared.family.forming);
            let entry = forming.entry(key).or_insert_with(|| {
                let state = ThreadsShared::sub(&self.shared, group, superstep);
                (state, group.members.len())
            });
            entry.1 -= 1;
            let state = Arc::clone(&entry.0);
            if entry.1 == 0 {
                forming.remove(&key);
            }
            state
        };
        Ok(Box::new(ThreadsComm::new(state, group.me)))
    }

    fn recorded_failure(&self) -> Option<Error> {
        lock(&self.shared.first_error)
            .as_ref()
            .map(|(e, _)| e.clone())
    }
}

/// The threads transport's way in: p endpoints on one shared state, each
/// run on a thread of its own.
pub(crate) struct Threads;

impl Launcher for Threads {
    fn name(&self) -> &'static str {
        "threads"
    }

    fn program_chooses_procs(&self) -> bool {
        true
    }

    fn open(&self, p: usize, limits: RunLimits, purpose: Purpose) -> Result<Option<Opened>> {
        let stack = match purpose {
            Purpose::Run => limits::processor_stack_bytes(),
            Purpose::Session => limits::session_stack_bytes(),
        };
        let stack = limits::preflight(p, stack)?;
        let shared = ThreadsShared::new(p, limits, limits.barrier);
        let endpoints = (0..p)
            .map(|pid| Box::new(ThreadsComm::new(Arc::clone(&shared), pid)) as Box<dyn Comm>)
            .collect();
        Ok(Some(Opened {
            endpoints,
            on_caller: false,
            stack,
            run: shared,
            held: Box::new(()),
        }))
    }
}

impl OpenRun for ThreadsShared {
    fn fail(&self, error: Error) {
        ThreadsShared::fail(self, error);
    }

    /// The first error recorded during the run, if any.
    fn take_error(&self) -> Option<Error> {
        lock(&self.first_error).take().map(|(error, _)| error)
    }

    /// Counts one processor's body as returned.
    fn body_returned(&self) {
        *lock(&self.finished) += 1;
        self.finished_signal.notify_all();
    }

    /// Waits until `started` bodies have returned. With a time limit, a run
    /// that has failed waits at most the grace period for processors still
    /// in their own code (they unwind when they next reach bsp); past it,
    /// they cannot be stopped safely, so the process prints the error and
    /// exits with status 1.
    fn await_bodies(&self, started: usize) {
        let Some(limit) = self.limits.sync_timeout else {
            return; // the scope's join waits, for ever if need be
        };
        let grace = limit.max(MIN_GRACE);
        let mut finished = lock(&self.finished);
        while *finished < started {
            let failed_at = lock(&self.first_error).as_ref().map(|(_, at)| *at);
            if let Some(at) = failed_at {
                if at.elapsed() >= grace {
                    self.exit_with_stuck_processors(started, grace);
                }
            }
            let pause = Duration::from_millis(100);
            finished = self
                .finished_signal
                .wait_timeout(finished, pause)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}
