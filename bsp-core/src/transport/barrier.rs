//! A reusable barrier that spins briefly, then blocks, can be poisoned,
//! and can give up at a deadline.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use crossbeam_utils::{Backoff, CachePadded};

/// Why a wait ended without every party arriving.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Interrupted {
    /// The barrier was poisoned: the run is being aborted.
    Poisoned,
    /// The deadline passed first.
    TimedOut,
}

/// A centralised generation-counting barrier for `p` threads.
///
/// Arrivals increment a counter; the last one resets it and bumps the
/// generation. Waiters first spin on the generation (cheap when every
/// processor has a core of its own), then sleep on a condition variable, so
/// that p = 256 threads on two cores do not steal time from the threads
/// they are waiting for. Poisoning releases every waiter with `Aborted`.
pub(crate) struct Barrier {
    parties: usize,
    arrived: CachePadded<AtomicUsize>,
    generation: CachePadded<AtomicUsize>,
    poisoned: AtomicBool,
    sleep_lock: Mutex<()>,
    wake: Condvar,
    /// Backoff steps to spin before sleeping.
    spin_steps: u32,
}

impl Barrier {
    pub(crate) fn new(parties: usize) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Barrier {
            parties,
            arrived: CachePadded::new(AtomicUsize::new(0)),
            generation: CachePadded::new(AtomicUsize::new(0)),
            poisoned: AtomicBool::new(false),
            sleep_lock: Mutex::new(()),
            wake: Condvar::new(),
            // With a core per thread, spinning for a while is the fast path;
            // oversubscribed, a spinning thread only delays the late ones.
            spin_steps: if parties <= cores { 4000 } else { 2 },
        }
    }

    /// Waits until all parties have arrived, the barrier is poisoned, or
    /// `deadline` (if any) passes. A waiter that times out has still
    /// counted as arrived: the caller must poison the barrier.
    pub(crate) fn wait(&self, deadline: Option<Instant>) -> Result<(), Interrupted> {
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
        let backoff = Backoff::new();
        for _ in 0..self.spin_steps {
            if released() || self.is_poisoned() {
                return self.check();
            }
            if backoff.is_completed() {
                std::thread::yield_now();
            } else {
                backoff.snooze();
            }
        }
        let mut guard = self.sleep_lock.lock().unwrap_or_else(|e| e.into_inner());
        while !released() && !self.is_poisoned() {
            guard = match deadline {
                None => self.wake.wait(guard).unwrap_or_else(|e| e.into_inner()),
                Some(deadline) => {
                    let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                        return Err(Interrupted::TimedOut);
                    };
                    let (guard, _) = self
                        .wake
                        .wait_timeout(guard, left)
                        .unwrap_or_else(|e| e.into_inner());
                    guard
                }
            };
        }
        drop(guard);
        self.check()
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

    #[test]
    fn many_rounds_many_threads() {
        for parties in [1, 2, 3, 17, 64] {
            let barrier = Barrier::new(parties);
            let counter = AtomicU64::new(0);
            std::thread::scope(|s| {
                for _ in 0..parties {
                    s.spawn(|| {
                        for round in 0..200u64 {
                            counter.fetch_add(1, Ordering::SeqCst);
                            barrier.wait(None).ok().unwrap();
                            // Everyone has incremented for this round.
                            assert!(counter.load(Ordering::SeqCst) >= (round + 1) * parties as u64);
                            barrier.wait(None).ok().unwrap();
                        }
                    });
                }
            });
        }
    }

    #[test]
    fn poison_releases_waiters() {
        let barrier = Barrier::new(3);
        std::thread::scope(|s| {
            let a = s.spawn(|| barrier.wait(None).is_err());
            let b = s.spawn(|| barrier.wait(None).is_err());
            std::thread::sleep(std::time::Duration::from_millis(50));
            barrier.poison();
            assert!(a.join().unwrap());
            assert!(b.join().unwrap());
        });
        assert!(barrier.wait(None).is_err());
    }

    #[test]
    fn a_deadline_ends_the_wait_of_an_incomplete_barrier() {
        let barrier = Barrier::new(2);
        let start = Instant::now();
        let deadline = start + std::time::Duration::from_millis(50);
        assert_eq!(barrier.wait(Some(deadline)), Err(Interrupted::TimedOut));
        assert!(start.elapsed() >= std::time::Duration::from_millis(50));
    }
}
