//! Waiting on shared memory without locks: a processor spins on a word
//! for a time budget, then parks its own thread until the word's writer
//! wakes it (one wake per sleeper, no shared condition variable).
//!
//! A [`Signal`] is a counter one processor raises and others wait to see
//! reach a value. The fast path, when every processor has a core, is a
//! store on one side and loads on the other: no lock, no system call. A
//! waiter that has spun its budget away announces itself on the signal
//! (its `sleepers` count) and parks; the writer, having raised the
//! counter, looks at that count and unparks the sleepers only when there
//! are some. Both sides use sequentially consistent operations, so that
//! either the writer sees the sleeper or the sleeper sees the new value
//! (Dekker's argument): no wake is lost.
//!
//! A signal many processors wait on (a central barrier's release) is, on
//! Linux, also a futex word: its sleepers sleep in the kernel on that word
//! and one system call wakes them all, where waking p − 1 threads one by
//! one would cost the last arrival p − 1 system calls.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread::Thread;
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

/// How long a waiter spins before it parks, when every processor of the
/// run has a core of its own. Parking and waking cost a few microseconds
/// each and the wake-up latency of the scheduler besides; spinning for
/// several times that keeps a sync with small imbalance off the kernel,
/// while a processor that waits far longer (for a slow one) wastes at
/// most this much of its core per sync.
pub(crate) const SPIN_BUDGET: Duration = Duration::from_micros(50);

/// Iterations of the spin loop between two readings of the clock.
const SPINS_PER_CLOCK: u32 = 64;

/// Why a wait ended without its condition being met.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Interrupted {
    /// The barrier was poisoned: the run is being aborted.
    Poisoned,
    /// The deadline passed first.
    TimedOut,
}

/// A counter that one processor raises and others wait on.
#[derive(Default)]
pub(crate) struct Signal {
    value: AtomicUsize,
    /// Waiters parked (or about to park) on this signal.
    sleepers: AtomicUsize,
    /// Whether several processors wait on it (they sleep on `word`).
    many: bool,
    /// The futex word of a signal with many waiters: bumped by every
    /// raise that finds sleepers.
    word: AtomicU32,
}

impl Signal {
    /// A signal that several processors wait on at once.
    pub(crate) fn for_many() -> Signal {
        Signal {
            many: true,
            ..Signal::default()
        }
    }

    /// The counter's value.
    #[inline]
    pub(crate) fn get(&self) -> usize {
        self.value.load(Ordering::Acquire)
    }
}

/// The processors' threads, for waking them one by one, the spin budget,
/// and the poison flag that ends every wait.
pub(crate) struct Parking {
    /// `threads[q]`: the thread processor q last parked on, and whether
    /// it is parked (or about to park) now.
    threads: Vec<CachePadded<Sleeper>>,
    /// The spin budget: [`SPIN_BUDGET`], or zero when processors share
    /// cores (then a spinning waiter only delays the ones it waits for).
    spin: Duration,
    poisoned: AtomicBool,
}

#[derive(Default)]
struct Sleeper {
    asleep: AtomicBool,
    /// Taken only by a processor about to park and by whoever wakes it:
    /// never on the fast path.
    thread: Mutex<Option<Thread>>,
    /// The signal with many waiters this processor sleeps on, if any, for
    /// [`Parking::poison`] to wake.
    sleeping_on: AtomicPtr<Signal>,
}

impl Parking {
    /// Parking for `p` processors, spinning first when `spin` holds.
    pub(crate) fn new(p: usize, spin: bool) -> Self {
        Parking {
            threads: (0..p).map(|_| CachePadded::default()).collect(),
            spin: if spin { SPIN_BUDGET } else { Duration::ZERO },
            poisoned: AtomicBool::new(false),
        }
    }

    /// Raises `signal` to `value` and wakes its sleepers: `waiter` when
    /// only that processor ever waits on it, else every parked processor
    /// (a processor woken for nothing looks and parks again).
    #[inline]
    pub(crate) fn raise(&self, signal: &Signal, value: usize, waiter: Option<usize>) {
        signal.value.store(value, Ordering::SeqCst);
        if signal.sleepers.load(Ordering::SeqCst) > 0 {
            self.wake(signal, waiter);
        }
    }

    #[cold]
    fn wake(&self, signal: &Signal, waiter: Option<usize>) {
        match waiter {
            Some(q) => self.unpark(q),
            None if signal.many && futex::WORKS => {
                signal.word.fetch_add(1, Ordering::SeqCst);
                futex::wake_all(&signal.word);
            }
            None => {
                for q in 0..self.threads.len() {
                    if self.threads[q].asleep.load(Ordering::SeqCst) {
                        self.unpark(q);
                    }
                }
            }
        }
    }

    fn unpark(&self, q: usize) {
        let thread = self.threads[q]
            .thread
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(thread) = thread.as_ref() {
            thread.unpark();
        }
    }

    /// Whether the run is being aborted.
    #[inline]
    pub(crate) fn is_poisoned(&self) -> bool {
        self.poisoned.load(Ordering::Acquire)
    }

    /// Ends every current and future wait with [`Interrupted::Poisoned`].
    pub(crate) fn poison(&self) {
        self.poisoned.store(true, Ordering::SeqCst);
        for q in 0..self.threads.len() {
            self.unpark(q);
            let signal = self.threads[q].sleeping_on.load(Ordering::SeqCst);
            // SAFETY: a processor registers only signals of the run state
            // that owns this parking (its barrier and slots), which lives
            // as long as anyone can poison it.
            if let Some(signal) = unsafe { signal.as_ref() } {
                self.wake(signal, None);
            }
        }
    }

    /// Processor `me` waits until `signal` reaches `target`, the run is
    /// poisoned, or `deadline` passes.
    #[inline]
    pub(crate) fn wait(
        &self,
        me: usize,
        signal: &Signal,
        target: usize,
        deadline: Option<Instant>,
    ) -> Result<(), Interrupted> {
        if signal.get() >= target {
            return self.check();
        }
        self.wait_slowly(me, signal, target, deadline)
    }

    #[inline(never)]
    fn wait_slowly(
        &self,
        me: usize,
        signal: &Signal,
        target: usize,
        deadline: Option<Instant>,
    ) -> Result<(), Interrupted> {
        if !self.spin.is_zero() {
            let start = Instant::now();
            'spin: loop {
                for _ in 0..SPINS_PER_CLOCK {
                    if signal.get() >= target || self.is_poisoned() {
                        return self.check();
                    }
                    std::hint::spin_loop();
                }
                if start.elapsed() >= self.spin {
                    break 'spin;
                }
            }
        }
        self.park(me, signal, target, deadline)
    }

    #[cold]
    fn park(
        &self,
        me: usize,
        signal: &Signal,
        target: usize,
        deadline: Option<Instant>,
    ) -> Result<(), Interrupted> {
        let sleeper = &self.threads[me];
        {
            let mut thread = sleeper.thread.lock().unwrap_or_else(|e| e.into_inner());
            let current = std::thread::current();
            if thread.as_ref().is_none_or(|t| t.id() != current.id()) {
                *thread = Some(current);
            }
        }
        let on_word = signal.many && futex::WORKS;
        if on_word {
            let at = std::ptr::from_ref(signal).cast_mut();
            sleeper.sleeping_on.store(at, Ordering::SeqCst);
        }
        sleeper.asleep.store(true, Ordering::SeqCst);
        signal.sleepers.fetch_add(1, Ordering::SeqCst);
        let outcome = loop {
            // Read before the check: a raise after it changes the word.
            let word = signal.word.load(Ordering::SeqCst);
            // After announcing the sleep: a raise from now on sees it.
            if signal.value.load(Ordering::SeqCst) >= target || self.is_poisoned() {
                break self.check();
            }
            let left = match deadline {
                None => None,
                Some(deadline) => match deadline.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => Some(left),
                    _ => break Err(Interrupted::TimedOut),
                },
            };
            match (on_word, left) {
                (true, left) => futex::wait(&signal.word, word, left),
                (false, None) => std::thread::park(),
                (false, Some(left)) => std::thread::park_timeout(left),
            }
        };
        signal.sleepers.fetch_sub(1, Ordering::SeqCst);
        sleeper.asleep.store(false, Ordering::SeqCst);
        if on_word {
            sleeper
                .sleeping_on
                .store(std::ptr::null_mut(), Ordering::SeqCst);
        }
        outcome
    }

    fn check(&self) -> Result<(), Interrupted> {
        if self.is_poisoned() {
            Err(Interrupted::Poisoned)
        } else {
            Ok(())
        }
    }
}

/// The cores this process may run on: its CPU affinity mask (what
/// `taskset` and `mpirun --bind-to` set), not a cgroup's CPU quota, since
/// a quota throttles threads without taking their cores away. Elsewhere
/// than on Linux, what std reports.
pub(crate) fn cores() -> usize {
    #[cfg(target_os = "linux")]
    // SAFETY: `set` is a plain bit mask, zeroed before the call, which
    // writes at most `size_of::<cpu_set_t>()` bytes into it.
    let counted = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        (libc::sched_getaffinity(0, size, &mut set) == 0).then(|| libc::CPU_COUNT(&set) as usize)
    };
    #[cfg(not(target_os = "linux"))]
    let counted: Option<usize> = None;
    counted
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Sleeping in the kernel on a 32-bit word (Linux futexes).
#[cfg(target_os = "linux")]
mod futex {
    use std::sync::atomic::AtomicU32;
    use std::time::Duration;

    /// Whether this platform has them.
    pub(super) const WORKS: bool = true;

    /// Sleeps while `word` holds `expected`, for at most `left`; may
    /// return early (the caller checks again).
    pub(super) fn wait(word: &AtomicU32, expected: u32, left: Option<Duration>) {
        let timeout = left.map(|d| libc::timespec {
            tv_sec: d.as_secs().min(i64::MAX as u64) as libc::time_t,
            tv_nsec: d.subsec_nanos() as libc::c_long,
        });
        let timeout = timeout
            .as_ref()
            .map_or(std::ptr::null(), std::ptr::from_ref);
        // SAFETY: `word` is a live, aligned 32-bit atomic for the whole
        // call, and `timeout` is null or points to a timespec that
        // outlives it. The kernel only reads both.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                expected,
                timeout,
            );
        }
    }

    /// Wakes every thread sleeping on `word`.
    pub(super) fn wake_all(word: &AtomicU32) {
        // SAFETY: `word` is a live, aligned 32-bit atomic; waking touches
        // no memory.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                i32::MAX,
            );
        }
    }
}

/// Elsewhere, sleepers on a signal with many waiters park like the others.
#[cfg(not(target_os = "linux"))]
mod futex {
    use std::sync::atomic::AtomicU32;
    use std::time::Duration;

    pub(super) const WORKS: bool = false;

    pub(super) fn wait(_: &AtomicU32, _: u32, _: Option<Duration>) {
        unreachable!("no futexes here")
    }

    pub(super) fn wake_all(_: &AtomicU32) {
        unreachable!("no futexes here")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raise_wakes_a_parked_waiter() {
        for spin in [false, true] {
            let parking = Parking::new(2, spin);
            let signal = Signal::default();
            std::thread::scope(|s| {
                let waiter = s.spawn(|| parking.wait(1, &signal, 1, None));
                std::thread::sleep(Duration::from_millis(20));
                parking.raise(&signal, 1, Some(1));
                assert_eq!(waiter.join().unwrap(), Ok(()));
            });
        }
    }

    #[test]
    fn a_raise_for_anyone_wakes_every_waiter() {
        let parking = Parking::new(4, false);
        let signal = Signal::for_many();
        std::thread::scope(|s| {
            let waiters: Vec<_> = (1..4)
                .map(|q| {
                    let (parking, signal) = (&parking, &signal);
                    s.spawn(move || parking.wait(q, signal, 5, None))
                })
                .collect();
            std::thread::sleep(Duration::from_millis(20));
            parking.raise(&signal, 5, None);
            for w in waiters {
                assert_eq!(w.join().unwrap(), Ok(()));
            }
        });
    }

    #[test]
    fn a_deadline_and_poison_end_waits() {
        let parking = Parking::new(2, true);
        let signal = Signal::default();
        let deadline = Instant::now() + Duration::from_millis(30);
        assert_eq!(
            parking.wait(0, &signal, 1, Some(deadline)),
            Err(Interrupted::TimedOut)
        );
        assert!(Instant::now() >= deadline);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| parking.wait(1, &signal, 1, None));
            std::thread::sleep(Duration::from_millis(20));
            parking.poison();
            assert_eq!(waiter.join().unwrap(), Err(Interrupted::Poisoned));
        });
    }

    #[test]
    fn the_affinity_mask_has_a_core() {
        assert!(cores() >= 1);
    }
}
