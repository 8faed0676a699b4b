//! The threads transport: one OS thread per processor, exchanging
//! reference-counted byte segments through shared mailboxes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

use super::barrier::{Barrier, BarrierKind, Interrupted};
use super::split::Frame;
use super::{
    timeout_message, Aborted, Blocks, Capabilities, Comm, Group, Launcher, OpenRun, Opened,
    Purpose, Rows, RunLimits,
};
use crate::error::{Error, ErrorKind, Result};

/// After a run with a sync time limit has failed, how long the processors
/// still in their own code get to reach bsp (where they unwind) before
/// the process exits: the limit, but at least this.
const MIN_GRACE: Duration = Duration::from_secs(5);

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
    rows: [Mutex<RowTable>; 2],
    /// `inboxes[set][to]`: the non-empty blocks sent to `to`, with their senders.
    inboxes: [Vec<Mutex<Blocks>>; 2],
    /// `entered[q]`: the number of collectives processor q has entered,
    /// to name the missing ones when a wait times out.
    entered: Vec<AtomicUsize>,
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
    /// The barrier every machine of the run uses (`BSP_BARRIER`).
    barrier: BarrierKind,
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

/// The rows of one all-gather, and the snapshot every processor returns.
#[derive(Default)]
struct RowTable {
    /// The collective (epoch) the table is for.
    epoch: usize,
    words: Vec<u64>,
    snapshot: Option<Rows>,
}

impl ThreadsShared {
    fn new(nprocs: usize, limits: RunLimits, barrier: BarrierKind) -> Arc<Self> {
        let family = Arc::new(Family {
            barrier,
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
        let inboxes = || (0..nprocs).map(|_| Mutex::new(Vec::new())).collect();
        let id = family.next_id.fetch_add(1, Ordering::Relaxed);
        ThreadsShared {
            nprocs,
            id,
            root,
            frame,
            barrier: Barrier::new(nprocs, family.barrier),
            family,
            rows: Default::default(),
            inboxes: [inboxes(), inboxes()],
            entered: (0..nprocs).map(|_| AtomicUsize::new(0)).collect(),
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
        let newest = self.entered[..started]
            .iter()
            .map(|e| e.load(Ordering::Acquire))
            .max()
            .unwrap_or(0);
        let stuck: Vec<String> = (0..started)
            .filter(|&q| self.entered[q].load(Ordering::Acquire) < newest)
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
    /// The superstep of the coming collectives, for error reports.
    superstep: usize,
}

impl ThreadsComm {
    fn new(shared: Arc<ThreadsShared>, pid: usize) -> Self {
        ThreadsComm {
            shared,
            pid,
            epoch: 0,
            superstep: 0,
        }
    }

    fn next_set(&mut self) -> usize {
        let set = self.epoch % 2;
        self.epoch += 1;
        set
    }

    /// Arrives at the barrier of the current collective and waits for the
    /// others, within the run's time limit.
    fn arrive(&self) -> Result<(), Aborted> {
        let shared = &*self.shared;
        shared.entered[self.pid].store(self.epoch, Ordering::Release);
        let deadline = shared.limits.sync_timeout.map(|t| Instant::now() + t);
        match shared.barrier.wait(self.pid, deadline) {
            Ok(()) => Ok(()),
            Err(Interrupted::Poisoned) => Err(Aborted),
            Err(Interrupted::TimedOut) => {
                let limit = shared.limits.sync_timeout.unwrap_or_default();
                let missing: Vec<usize> = (0..shared.nprocs)
                    .filter(|&q| shared.entered[q].load(Ordering::Acquire) < self.epoch)
                    .collect();
                let culprit = missing.first().copied().unwrap_or(self.pid);
                let msg = timeout_message(&missing, shared.nprocs, limit);
                shared.fail(Error::at(ErrorKind::Timeout, culprit, self.superstep, msg));
                Err(Aborted)
            }
        }
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
        self.arrive()?;
        let mut t = lock(table);
        let t = &mut *t;
        Ok(t.snapshot
            .get_or_insert_with(|| Rows::from(&t.words[..]))
            .clone())
    }

    fn exchange(&mut self, blocks: Blocks, expected: Option<&[u64]>) -> Result<Blocks, Aborted> {
        let set = self.next_set();
        let inboxes = &self.shared.inboxes[set];
        for (to, block) in blocks {
            if !block.is_empty() {
                lock(&inboxes[to]).push((self.pid, block));
            }
        }
        self.arrive()?;
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

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            shares_memory: true,
            one_node: true,
            scatter_receive: false,
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

/// The most processor threads this process may start: the kernel's
/// limits on threads (`/proc/sys/kernel/threads-max`) and on this user's
/// processes (`ulimit -u`), where they can be read.
fn thread_limit() -> Option<(usize, String)> {
    let threads_max = std::fs::read_to_string("/proc/sys/kernel/threads-max")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .map(|n| (n, format!("the kernel's threads-max ({n})")));
    let user_max = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("Max processes"))?;
            line.split_whitespace().nth(2)?.parse::<usize>().ok()
        })
        .map(|n| (n, format!("this user's process limit, ulimit -u ({n})")));
    [threads_max, user_max]
        .into_iter()
        .flatten()
        .min_by_key(|(n, _)| *n)
}

/// The stack each processor thread gets: `RUST_MIN_STACK` where set (as
/// for any thread std starts), else std's default of 2 MiB.
fn processor_stack_bytes() -> usize {
    std::env::var("RUST_MIN_STACK")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .unwrap_or(2 << 20)
}

/// Address space a processor thread takes besides its stack: a guard
/// page, the signal stack std maps for it and room for its first
/// allocations.
const THREAD_OVERHEAD_BYTES: usize = 256 << 10;

/// The stack of a session's processor threads: `RUST_MIN_STACK` where set;
/// else the main thread's soft limit (`ulimit -s`), between 2 MiB and
/// 256 MiB, and 8 MiB where it is unlimited or unreadable. Code written
/// for processes (C programs, under a BSPlib layer) expects the main
/// thread's stack, not std's 2 MiB.
fn session_stack_bytes() -> usize {
    if let Some(bytes) = std::env::var("RUST_MIN_STACK")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
    {
        return bytes;
    }
    std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("Max stack size"))?;
            line.split_whitespace().nth(3)?.parse::<usize>().ok()
        })
        .map_or(8 << 20, |soft| soft.clamp(2 << 20, 256 << 20))
}

/// Checks `p` processor threads against the address-space limit
/// (`ulimit -v`), so that a run too large for it fails with a clear error
/// before the first thread starts rather than part way: a thread that
/// starts but cannot map its signal stack aborts the whole process.
fn check_address_space(p: usize, stack: usize) -> Result<()> {
    let field = |text: &str, prefix: &str, index: usize| -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(prefix))?;
        line.split_whitespace().nth(index)?.parse::<u64>().ok()
    };
    let Some(limit) = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|s| field(&s, "Max address space", 3))
    else {
        return Ok(()); // unlimited, or not readable here
    };
    let used = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| field(&s, "VmSize:", 1))
        .map_or(0, |kib| kib * 1024);
    let needed = p as u64 * (stack + THREAD_OVERHEAD_BYTES) as u64;
    let left = limit.saturating_sub(used);
    if needed > left {
        let gib = |b: u64| b as f64 / f64::from(1u32 << 30);
        return Err(config_error(format!(
            "cannot start p = {p} processor threads: their stacks need {:.2} GiB of address space \
             and the address-space limit (ulimit -v) leaves {:.2} GiB; use fewer processors \
             (BSP_PROCS), smaller stacks (RUST_MIN_STACK) or the MPI transport",
            gib(needed),
            gib(left)
        )));
    }
    Ok(())
}

fn config_error(msg: String) -> Error {
    Error::new(ErrorKind::Config, None, None, msg)
}

/// The checks before a run's threads start, for runs and sessions: p > 0, within the limits on threads and on address space
/// (for stacks of `stack` bytes), and a valid `BSP_BARRIER`. Returns the
/// stack size and the barrier kind to use.
fn preflight(p: usize, stack: usize) -> Result<(usize, BarrierKind)> {
    if p == 0 {
        return Err(config_error(
            "a run needs at least one processor (p = 0)".to_owned(),
        ));
    }
    // Small runs are far below any limit; skip reading /proc for them.
    if let Some((max, what)) = (p > 1024).then(thread_limit).flatten() {
        if p > max {
            return Err(config_error(format!(
                "p = {p} processor threads exceed {what}; use fewer processors \
                 (BSP_PROCS) or the MPI transport"
            )));
        }
    }
    if p > 64 {
        check_address_space(p, stack)?;
    }
    let barrier = BarrierKind::from_env().map_err(config_error)?;
    Ok((stack, barrier))
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
            Purpose::Run => processor_stack_bytes(),
            Purpose::Session => session_stack_bytes(),
        };
        let (stack, barrier) = preflight(p, stack)?;
        let shared = ThreadsShared::new(p, limits, barrier);
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
