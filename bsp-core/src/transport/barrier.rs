//! A reusable barrier that spins briefly, then blocks, can be poisoned,
//! and can give up at a deadline: a central counter, or a binomial tree
//! (*Collective Communication and Computation*, 13.4.2, Listings 13.1 and
//! 13.2), chosen by `BSP_BARRIER`.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use crossbeam_utils::{Backoff, CachePadded};

/// How the processors of the threads transport meet at a sync.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum BarrierKind {
    /// One shared arrival counter; the last arrival bumps a generation
    /// that everyone waits on (p atomic increments on one cache line).
    #[default]
    Central,
    /// A binomial tree: each processor waits for its children's ready
    /// epochs, publishes its own, and waits for processor 0's, so no cache
    /// line is written by more than one processor.
    Binomial,
}

impl BarrierKind {
    /// The kind `BSP_BARRIER` names (`central`, the default, or `binomial`).
    pub(crate) fn from_env() -> Result<Self, String> {
        match std::env::var(crate::env::BARRIER_ENV) {
            Err(_) => Ok(BarrierKind::default()),
            Ok(v) if v.trim().is_empty() => Ok(BarrierKind::default()),
            Ok(v) => v.parse(),
        }
    }
}

impl FromStr for BarrierKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "central" => Ok(BarrierKind::Central),
            "binomial" => Ok(BarrierKind::Binomial),
            _ => Err(format!(
                "{}: unknown barrier {s:?} (expected `central` or `binomial`)",
                crate::env::BARRIER_ENV
            )),
        }
    }
}

impl fmt::Display for BarrierKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BarrierKind::Central => "central",
            BarrierKind::Binomial => "binomial",
        })
    }
}

/// The per-processor state of the binomial-tree barrier.
struct Tree {
    /// `ready[i]`: the last barrier whose arrivals processor i's subtree
    /// has all made. Written only by processor i.
    ready: Vec<CachePadded<AtomicUsize>>,
    /// `epoch[i]`: the barriers processor i has entered (its own counter).
    epoch: Vec<CachePadded<AtomicUsize>>,
    /// `children[i]`: processor i's children are i + 2^c for c below this.
    children: Vec<u32>,
}

impl Tree {
    fn new(p: usize) -> Self {
        let mut children = vec![0u32; p];
        // The subtree of `root` spans `size` processors from it: children
        // at offsets 1, 2, 4, … below `size`, the one at offset i spanning
        // min(i, size − i).
        let mut stack = vec![(0usize, p)];
        while let Some((root, size)) = stack.pop() {
            let mut i = 1;
            while i < size {
                children[root] += 1;
                stack.push((root + i, i.min(size - i)));
                i *= 2;
            }
        }
        let zeros = || {
            (0..p)
                .map(|_| CachePadded::new(AtomicUsize::new(0)))
                .collect()
        };
        Tree {
            ready: zeros(),
            epoch: zeros(),
            children,
        }
    }
}

/// Why a wait ended without every party arriving.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Interrupted {
    /// The barrier was poisoned: the run is being aborted.
    Poisoned,
    /// The deadline passed first.
    TimedOut,
}

/// A barrier for `p` threads: a central counter or a binomial tree
/// ([`BarrierKind`]).
///
/// Central: arrivals increment a counter; the last one resets it and bumps
/// the generation. Binomial: each processor waits until its children in a
/// binomial tree have published the current epoch, publishes it itself,
/// and waits for processor 0 (the root) to publish it. Either way, waiters
/// first spin (cheap when every processor has a core of its own), then
/// sleep on a condition variable, so that p = 256 threads on two cores do
/// not steal time from the threads they are waiting for. Poisoning
/// releases every waiter with `Aborted`.
pub(crate) struct Barrier {
    parties: usize,
    /// The binomial tree, when that is the kind.
    tree: Option<Tree>,
    arrived: CachePadded<AtomicUsize>,
    generation: CachePadded<AtomicUsize>,
    poisoned: AtomicBool,
    /// Waiters asleep on `wake` (a binomial-tree arrival wakes them only
    /// when there are some).
    sleepers: AtomicUsize,
    sleep_lock: Mutex<()>,
    wake: Condvar,
    /// Backoff steps to spin before sleeping.
    spin_steps: u32,
}

impl Barrier {
    pub(crate) fn new(parties: usize, kind: BarrierKind) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Barrier {
            parties,
            tree: (kind == BarrierKind::Binomial).then(|| Tree::new(parties)),
            arrived: CachePadded::new(AtomicUsize::new(0)),
            generation: CachePadded::new(AtomicUsize::new(0)),
            poisoned: AtomicBool::new(false),
            sleepers: AtomicUsize::new(0),
            sleep_lock: Mutex::new(()),
            wake: Condvar::new(),
            // With a core per thread, spinning for a while is the fast path;
            // oversubscribed, a spinning thread only delays the late ones.
            spin_steps: if parties <= cores { 4000 } else { 2 },
        }
    }

    /// Waits until all parties have arrived, the barrier is poisoned, or
    /// `deadline` (if any) passes; `pid` is the caller's party, in
    /// `0..parties`, each party waiting from one thread. A waiter that
    /// times out has still counted as arrived: the caller must poison the
    /// barrier.
    pub(crate) fn wait(&self, pid: usize, deadline: Option<Instant>) -> Result<(), Interrupted> {
        match &self.tree {
            Some(tree) => self.wait_tree(tree, pid, deadline),
            None => self.wait_central(deadline),
        }
    }

    fn wait_tree(
        &self,
        tree: &Tree,
        pid: usize,
        deadline: Option<Instant>,
    ) -> Result<(), Interrupted> {
        // Only this thread writes epoch[pid].
        let epoch = tree.epoch[pid].load(Ordering::Relaxed) + 1;
        tree.epoch[pid].store(epoch, Ordering::Relaxed);
        for c in 0..tree.children[pid] {
            let child = &tree.ready[pid + (1 << c)];
            self.wait_until(deadline, || child.load(Ordering::Acquire) >= epoch)?;
        }
        tree.ready[pid].store(epoch, Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            // Taking the lock orders the store before any sleeper's re-check.
            drop(self.sleep_lock.lock().unwrap_or_else(|e| e.into_inner()));
            self.wake.notify_all();
        }
        if pid != 0 {
            let root = &tree.ready[0];
            self.wait_until(deadline, || root.load(Ordering::Acquire) >= epoch)?;
        }
        self.check()
    }

    /// Spins, then sleeps, until `done()`, the barrier is poisoned, or the
    /// deadline passes.
    fn wait_until(
        &self,
        deadline: Option<Instant>,
        done: impl Fn() -> bool,
    ) -> Result<(), Interrupted> {
        let backoff = Backoff::new();
        for _ in 0..self.spin_steps {
            if done() || self.is_poisoned() {
                return self.check();
            }
            if backoff.is_completed() {
                std::thread::yield_now();
            } else {
                backoff.snooze();
            }
        }
        let mut guard = self.sleep_lock.lock().unwrap_or_else(|e| e.into_inner());
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        let outcome = loop {
            if done() || self.is_poisoned() {
                break self.check();
            }
            guard = match deadline {
                None => self.wake.wait(guard).unwrap_or_else(|e| e.into_inner()),
                Some(deadline) => {
                    let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                        break Err(Interrupted::TimedOut);
                    };
                    self.wake
                        .wait_timeout(guard, left)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
            };
        };
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
        drop(guard);
        outcome
    }

    fn wait_central(&self, deadline: Option<Instant>) -> Result<(), Interrupted> {
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.parties {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation
                .store(generation.wrapping_add(1), Ordering::Release);
            // Taking the lock orders the bump before any sleeper's re-check.
            drop(self.sleep_lock.lock().unwrap_or_else(|e| e.into_inner()));
            self.wake.notify_all();
            return self.check();
        }
        let released = || self.generation.load(Ordering::Acquire) != generation;
        self.wait_until(deadline, released)
    }

    fn check(&self) -> Result<(), Interrupted> {
        if self.is_poisoned() {
            Err(Interrupted::Poisoned)
        } else {
            Ok(())
        }
    }

    fn is_poisoned(&self) -> bool {
        self.poisoned.load(Ordering::Acquire)
    }

    /// Releases all current and future waiters with `Aborted`.
    pub(crate) fn poison(&self) {
        self.poisoned.store(true, Ordering::Release);
        drop(self.sleep_lock.lock().unwrap_or_else(|e| e.into_inner()));
        self.wake.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    const KINDS: [BarrierKind; 2] = [BarrierKind::Central, BarrierKind::Binomial];

    #[test]
    fn many_rounds_many_threads() {
        for kind in KINDS {
            for parties in [1, 2, 3, 6, 17, 64] {
                let barrier = Barrier::new(parties, kind);
                let counter = AtomicU64::new(0);
                std::thread::scope(|s| {
                    for pid in 0..parties {
                        let (barrier, counter) = (&barrier, &counter);
                        s.spawn(move || {
                            for round in 0..200u64 {
                                counter.fetch_add(1, Ordering::SeqCst);
                                barrier.wait(pid, None).ok().unwrap();
                                // Everyone has incremented for this round.
                                let seen = counter.load(Ordering::SeqCst);
                                assert!(seen >= (round + 1) * parties as u64, "{kind}");
                                barrier.wait(pid, None).ok().unwrap();
                            }
                        });
                    }
                });
            }
        }
    }

    #[test]
    fn the_binomial_tree_has_p_minus_one_edges() {
        for p in 1..70 {
            let tree = Tree::new(p);
            let edges: u32 = tree.children.iter().sum();
            assert_eq!(edges as usize, p - 1, "p = {p}");
            for (i, &c) in tree.children.iter().enumerate() {
                assert!(c == 0 || i + (1 << (c - 1)) < p, "p = {p}, {i} has {c}");
            }
        }
    }

    #[test]
    fn poison_releases_waiters() {
        for kind in KINDS {
            let barrier = Barrier::new(3, kind);
            std::thread::scope(|s| {
                let a = s.spawn(|| barrier.wait(0, None).is_err());
                let b = s.spawn(|| barrier.wait(1, None).is_err());
                std::thread::sleep(std::time::Duration::from_millis(50));
                barrier.poison();
                assert!(a.join().unwrap());
                assert!(b.join().unwrap());
            });
            assert!(barrier.wait(2, None).is_err());
        }
    }

    #[test]
    fn a_deadline_ends_the_wait_of_an_incomplete_barrier() {
        for kind in KINDS {
            let barrier = Barrier::new(2, kind);
            let start = Instant::now();
            let deadline = start + std::time::Duration::from_millis(50);
            assert_eq!(barrier.wait(1, Some(deadline)), Err(Interrupted::TimedOut));
            assert!(start.elapsed() >= std::time::Duration::from_millis(50));
        }
    }

    #[test]
    fn kinds_parse() {
        assert_eq!(" Binomial".parse(), Ok(BarrierKind::Binomial));
        assert_eq!("central".parse(), Ok(BarrierKind::Central));
        assert!("tree".parse::<BarrierKind>().is_err());
    }
}
