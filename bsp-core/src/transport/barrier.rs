//! The barrier of the threads transport: a central counter, a
//! dissemination barrier or a binomial tree (*Collective Communication and
//! Computation*, 13.4.2), chosen by `BSP_BARRIER` or, by default, by the
//! number of processors and cores. Every kind waits through
//! [`Parking`](super::waiting::Parking): it spins while the processors
//! have cores of their own, then parks each waiter by itself; it can be
//! poisoned, and a wait can give up at a deadline.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use crossbeam_utils::CachePadded;

use super::waiting::{Interrupted, Parking, Signal};

/// How the processors of the threads transport meet at a sync.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum BarrierKind {
    /// Picked from the processors and the cores ([`BarrierKind::resolve`]).
    #[default]
    Auto,
    /// One shared arrival counter; the last arrival raises a generation
    /// that everyone waits on (p atomic increments on one cache line; the
    /// last arrival wakes every sleeper).
    Central,
    /// ⌈log₂ p⌉ rounds; in round k processor i signals processor
    /// i + 2ᵏ (mod p) and waits for i − 2ᵏ. No word is written by two
    /// processors, nobody waits for a single hot spot, and the wakes of
    /// sleepers are spread over every processor.
    Dissemination,
    /// A binomial tree: arrivals go up (each processor waits for its
    /// children, then tells its parent) and the release comes down the
    /// same tree, so each word has one writer and one reader.
    Binomial,
}

impl BarrierKind {
    /// The kind `BSP_BARRIER` names (`auto`, the default, `central`,
    /// `dissemination` or `binomial`).
    pub(crate) fn from_env() -> Result<Self, String> {
        match std::env::var(crate::env::BARRIER_ENV) {
            Err(_) => Ok(BarrierKind::default()),
            Ok(v) if v.trim().is_empty() => Ok(BarrierKind::default()),
            Ok(v) => v.parse(),
        }
    }

    /// The kind to use, given whether every processor of the run has a
    /// core of its own. With a core each, the dissemination barrier: its
    /// critical path is ⌈log₂ p⌉ one-way cache-line transfers, against
    /// 2·log₂ p for the tree and a serialised line for the counter. With
    /// more processors than cores, the central counter: every waiter parks
    /// at once and one wake by the last arrival releases them all, where
    /// the others make each processor sleep once per round. A sub-machine
    /// follows its run: its members share the run's cores.
    pub(crate) fn resolve(self, cores_each: bool) -> BarrierKind {
        match self {
            BarrierKind::Auto if cores_each => BarrierKind::Dissemination,
            BarrierKind::Auto => BarrierKind::Central,
            kind => kind,
        }
    }
}

impl FromStr for BarrierKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(BarrierKind::Auto),
            "central" => Ok(BarrierKind::Central),
            "dissemination" => Ok(BarrierKind::Dissemination),
            "binomial" => Ok(BarrierKind::Binomial),
            _ => Err(format!(
                "{}: unknown barrier {s:?} (expected `auto`, `central`, `dissemination` \
                 or `binomial`)",
                crate::env::BARRIER_ENV
            )),
        }
    }
}

impl fmt::Display for BarrierKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BarrierKind::Auto => "auto",
            BarrierKind::Central => "central",
            BarrierKind::Dissemination => "dissemination",
            BarrierKind::Binomial => "binomial",
        })
    }
}

/// The words of one barrier algorithm.
enum Shape {
    Central(Box<Central>),
    /// `flags[i * rounds + k]`: raised by processor i − 2ᵏ in round k.
    Dissemination {
        rounds: usize,
        flags: Vec<CachePadded<Signal>>,
    },
    /// `ready[i]`: processor i's subtree has arrived (read by its parent);
    /// `release[i]`: its parent has been released (read by i).
    Binomial {
        ready: Vec<CachePadded<Signal>>,
        release: Vec<CachePadded<Signal>>,
    },
}

/// The central counter's words, each on a cache line of its own.
struct Central {
    arrived: CachePadded<AtomicUsize>,
    generation: CachePadded<Signal>,
}

/// A reusable barrier for `parties` processors, each waiting from one
/// thread at a time. Barriers are numbered from 1; every word holds the
/// number of the last barrier it announced, so no word needs resetting
/// and no sense is reversed.
pub(crate) struct Barrier {
    parties: usize,
    shape: Shape,
    /// `entered[i]`: the barriers processor i has entered (written by i).
    entered: Vec<CachePadded<AtomicUsize>>,
    parking: Parking,
}

/// Processor i's children in the binomial tree: i + 2ᶜ below p, for 2ᶜ
/// below i's lowest set bit (any c for the root), largest subtree first.
fn children(i: usize, p: usize) -> impl Iterator<Item = usize> {
    let limit = if i == 0 {
        usize::MAX
    } else {
        1 << i.trailing_zeros()
    };
    (0..usize::BITS)
        .rev()
        .map(|c| 1usize << c)
        .filter(move |&d| d < limit && i.checked_add(d).is_some_and(|j| j < p))
        .map(move |d| i + d)
}

/// Processor i's parent in the binomial tree (i > 0): i without its
/// lowest set bit.
fn parent(i: usize) -> usize {
    i & (i - 1)
}

impl Barrier {
    /// A barrier for `parties` processors of `kind` (already resolved),
    /// whose waiters spin before parking when `spin` holds.
    pub(crate) fn new(parties: usize, kind: BarrierKind, spin: bool) -> Self {
        let signals = |n: usize| (0..n).map(|_| CachePadded::default()).collect();
        let shape = match kind {
            BarrierKind::Central | BarrierKind::Auto => Shape::Central(Box::new(Central {
                arrived: CachePadded::default(),
                generation: CachePadded::new(Signal::for_many()),
            })),
            BarrierKind::Dissemination => {
                let rounds = parties.next_power_of_two().trailing_zeros() as usize;
                Shape::Dissemination {
                    rounds,
                    flags: signals(parties * rounds),
                }
            }
            BarrierKind::Binomial => Shape::Binomial {
                ready: signals(parties),
                release: signals(parties),
            },
        };
        Barrier {
            parties,
            shape,
            entered: (0..parties).map(|_| CachePadded::default()).collect(),
            parking: Parking::new(parties, spin),
        }
    }

    /// How this barrier's processors wait, for waits of their own between
    /// two barriers.
    pub(crate) fn parking(&self) -> &Parking {
        &self.parking
    }

    /// The barriers processor `q` has entered.
    pub(crate) fn entered(&self, q: usize) -> usize {
        self.entered[q].load(Ordering::Acquire)
    }

    /// Waits until all parties have arrived, the barrier is poisoned, or
    /// `deadline` (if any) passes; `me` is the caller's party, in
    /// `0..parties`. A waiter that times out may have let others through:
    /// the caller must poison the barrier.
    ///
    /// `last`, when the kind has a moment at which every party has arrived
    /// and none is released (the central counter's last arrival, the
    /// tree's root), runs there, on one party's thread, before anyone
    /// leaves; every party passes the same. The dissemination barrier has
    /// no such moment and runs it nowhere.
    pub(crate) fn wait(
        &self,
        me: usize,
        deadline: Option<Instant>,
        last: Option<&dyn Fn()>,
    ) -> Result<(), Interrupted> {
        // Only processor `me` writes its count.
        let epoch = self.entered[me].load(Ordering::Relaxed) + 1;
        self.entered[me].store(epoch, Ordering::Release);
        let parking = &self.parking;
        match &self.shape {
            Shape::Central(central) => {
                let Central {
                    arrived,
                    generation,
                } = &**central;
                if arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.parties {
                    // Reset before the raise lets anyone into the next one.
                    arrived.store(0, Ordering::Relaxed);
                    if let Some(last) = last {
                        last();
                    }
                    parking.raise(generation, epoch, None);
                } else {
                    parking.wait(me, generation, epoch, deadline)?;
                }
            }
            Shape::Dissemination { rounds, flags } => {
                let p = self.parties;
                for k in 0..*rounds {
                    let to = (me + (1 << k)) % p;
                    parking.raise(&flags[to * rounds + k], epoch, Some(to));
                    parking.wait(me, &flags[me * rounds + k], epoch, deadline)?;
                }
            }
            Shape::Binomial { ready, release } => {
                for child in children(me, self.parties) {
                    parking.wait(me, &ready[child], epoch, deadline)?;
                }
                if me != 0 {
                    parking.raise(&ready[me], epoch, Some(parent(me)));
                    parking.wait(me, &release[me], epoch, deadline)?;
                } else if let Some(last) = last {
                    last();
                }
                for child in children(me, self.parties) {
                    parking.raise(&release[child], epoch, Some(child));
                }
            }
        }
        if parking.is_poisoned() {
            return Err(Interrupted::Poisoned);
        }
        Ok(())
    }

    /// Releases all current and future waiters with
    /// [`Interrupted::Poisoned`].
    pub(crate) fn poison(&self) {
        self.parking.poison();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    const KINDS: [BarrierKind; 3] = [
        BarrierKind::Central,
        BarrierKind::Dissemination,
        BarrierKind::Binomial,
    ];

    #[test]
    fn many_rounds_many_threads() {
        for kind in KINDS {
            for spin in [false, true] {
                for parties in [1, 2, 3, 6, 17, 64] {
                    let barrier = Barrier::new(parties, kind, spin && parties <= 3);
                    let counter = AtomicU64::new(0);
                    std::thread::scope(|s| {
                        for pid in 0..parties {
                            let (barrier, counter) = (&barrier, &counter);
                            s.spawn(move || {
                                for round in 0..200u64 {
                                    counter.fetch_add(1, Ordering::SeqCst);
                                    barrier.wait(pid, None, None).ok().unwrap();
                                    // Everyone has incremented for this round.
                                    let seen = counter.load(Ordering::SeqCst);
                                    assert!(seen >= (round + 1) * parties as u64, "{kind}");
                                    barrier.wait(pid, None, None).ok().unwrap();
                                }
                            });
                        }
                    });
                }
            }
        }
    }

    #[test]
    fn the_last_step_runs_once_before_anyone_leaves() {
        for kind in [BarrierKind::Central, BarrierKind::Binomial] {
            let parties = 5;
            let barrier = Barrier::new(parties, kind, false);
            let (arrived, ran) = (AtomicU64::new(0), AtomicU64::new(0));
            std::thread::scope(|s| {
                for pid in 0..parties {
                    let (barrier, arrived, ran) = (&barrier, &arrived, &ran);
                    s.spawn(move || {
                        for round in 1..=50u64 {
                            arrived.fetch_add(1, Ordering::SeqCst);
                            let last = || {
                                assert_eq!(arrived.load(Ordering::SeqCst), round * parties as u64);
                                ran.fetch_add(1, Ordering::SeqCst);
                            };
                            barrier.wait(pid, None, Some(&last)).ok().unwrap();
                            assert_eq!(ran.load(Ordering::SeqCst), round, "{kind}");
                            barrier.wait(pid, None, None).ok().unwrap();
                        }
                    });
                }
            });
        }
    }

    #[test]
    fn the_binomial_tree_spans_every_processor_once() {
        for p in 1..70 {
            let mut seen = vec![0; p];
            for i in 0..p {
                for c in children(i, p) {
                    assert_eq!(parent(c), i, "p = {p}");
                    seen[c] += 1;
                }
            }
            assert_eq!(seen[0], 0);
            assert!(seen[1..].iter().all(|&n| n == 1), "p = {p}: {seen:?}");
        }
    }

    #[test]
    fn poison_releases_waiters() {
        for kind in KINDS {
            let barrier = Barrier::new(3, kind, false);
            std::thread::scope(|s| {
                let a = s.spawn(|| barrier.wait(0, None, None).is_err());
                let b = s.spawn(|| barrier.wait(1, None, None).is_err());
                std::thread::sleep(std::time::Duration::from_millis(50));
                barrier.poison();
                assert!(a.join().unwrap(), "{kind}");
                assert!(b.join().unwrap(), "{kind}");
            });
            assert!(barrier.wait(2, None, None).is_err());
        }
    }

    #[test]
    fn a_deadline_ends_the_wait_of_an_incomplete_barrier() {
        for kind in KINDS {
            let barrier = Barrier::new(2, kind, true);
            let start = Instant::now();
            let deadline = start + std::time::Duration::from_millis(50);
            // Processor 1 waits for processor 0 in every kind.
            assert_eq!(
                barrier.wait(1, Some(deadline), None),
                Err(Interrupted::TimedOut)
            );
            assert!(start.elapsed() >= std::time::Duration::from_millis(50));
        }
    }

    #[test]
    fn kinds_parse_and_resolve() {
        assert_eq!(" Binomial".parse(), Ok(BarrierKind::Binomial));
        assert_eq!("dissemination".parse(), Ok(BarrierKind::Dissemination));
        assert_eq!("central".parse(), Ok(BarrierKind::Central));
        assert!("tree".parse::<BarrierKind>().is_err());
        assert_eq!(BarrierKind::Auto.resolve(false), BarrierKind::Central);
        assert_eq!(BarrierKind::Auto.resolve(true), BarrierKind::Dissemination);
        assert_eq!(BarrierKind::Binomial.resolve(false), BarrierKind::Binomial);
    }
}
