//! The clock of the figures every sync records: how long the superstep's
//! work took and how long its sync.
//!
//! A sync reads the clock twice, once where the work ends and once where
//! the sync ends. Through `Instant::now()` (`clock_gettime`) each read
//! cost 20 ns on the 2-core Zen 5 VM of BENCHMARKS.md (AMD-2b), a tenth of
//! an empty superstep under MPI between them. Where the processor has an
//! invariant time-stamp counter (x86-64, reported by `cpuid`) and, on
//! Linux, the kernel keeps time by it too (its clock source is `tsc`, so
//! it found the counters of all cores in step), a [`Tick`] is a reading
//! of it instead (9 ns there), turned into nanoseconds by a
//! rate measured once per process against `Instant` over a millisecond
//! (so the figures are within about 10^-4 of `Instant`'s). Elsewhere a
//! tick is a nanosecond since a process-wide `Instant`.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A point in time on this processor, for differences only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Tick(u64);

/// Where ticks come from.
#[derive(Clone, Copy, Debug)]
enum Source {
    /// The time-stamp counter, at `ns_per_tick` nanoseconds a tick.
    Counter { ns_per_tick: f64 },
    /// Nanoseconds since `base`.
    Since { base: Instant },
}

/// How long the counter's rate is measured.
const CALIBRATION: Duration = Duration::from_millis(1);

fn source() -> Source {
    static SOURCE: OnceLock<Source> = OnceLock::new();
    *SOURCE.get_or_init(|| match counter::invariant() {
        true => Source::Counter {
            ns_per_tick: calibrate(),
        },
        false => Source::Since {
            base: Instant::now(),
        },
    })
}

/// Nanoseconds per tick of the counter: the counter and `Instant` read
/// together at the start and after [`CALIBRATION`], spinning.
fn calibrate() -> f64 {
    let (start, ticks) = read_together();
    while start.elapsed() < CALIBRATION {
        std::hint::spin_loop();
    }
    let (end, later) = read_together();
    let counted = later.saturating_sub(ticks).max(1);
    end.duration_since(start).as_nanos() as f64 / counted as f64
}

/// The counter, and the `Instant` halfway between two reads around it
/// that lie at most [`TOGETHER`] apart: a thread descheduled between the
/// reads (a loaded machine, more processors than cores) reads again, so
/// that the pause does not enter the rate.
fn read_together() -> (Instant, u64) {
    let mut closest = None;
    for _ in 0..1000 {
        let (before, ticks, after) = (Instant::now(), counter::read(), Instant::now());
        let apart = after.duration_since(before);
        let read = (before + apart / 2, ticks);
        if apart <= TOGETHER {
            return read;
        }
        if closest.is_none_or(|(gap, _)| apart < gap) {
            closest = Some((apart, read));
        }
    }
    closest.expect("at least one reading").1
}

/// How far apart the two `Instant` reads around a counter read may be.
const TOGETHER: Duration = Duration::from_micros(5);

impl Source {
    #[inline]
    fn now(self) -> Tick {
        match self {
            Source::Counter { .. } => Tick(counter::read()),
            Source::Since { base } => Tick(base.elapsed().as_nanos() as u64),
        }
    }

    fn nanos(self, from: Tick, to: Tick) -> u64 {
        let ticks = to.0.saturating_sub(from.0);
        match self {
            Source::Counter { ns_per_tick } => (ticks as f64 * ns_per_tick) as u64,
            Source::Since { .. } => ticks,
        }
    }
}

impl Tick {
    /// Now.
    #[inline]
    pub(crate) fn now() -> Tick {
        source().now()
    }

    /// Nanoseconds from `earlier` to `self`, 0 if `earlier` is later.
    pub(crate) fn nanos_since(self, earlier: Tick) -> u64 {
        source().nanos(earlier, self)
    }
}

#[cfg(target_arch = "x86_64")]
mod counter {
    use std::arch::x86_64::{__cpuid, _rdtsc};

    /// Whether the time-stamp counter measures time: it runs at a
    /// constant rate in every power state, and the kernel trusts it.
    pub(super) fn invariant() -> bool {
        constant_rate() && kernel_keeps_time_by_it()
    }

    /// `cpuid` leaf 0x8000_0007, EDX bit 8: the invariant counter.
    fn constant_rate() -> bool {
        // SAFETY: `cpuid` exists on every x86-64 processor and only
        // reports; leaf 0x8000_0000 gives the highest extended leaf, and
        // 0x8000_0007 is asked only when it is supported. (Newer Rust
        // declares `__cpuid` safe; the declared minimum version does not.)
        #[allow(unused_unsafe)]
        unsafe {
            __cpuid(0x8000_0000).eax >= 0x8000_0007 && __cpuid(0x8000_0007).edx & (1 << 8) != 0
        }
    }

    /// Whether Linux's clock source is the counter: the kernel checked
    /// that the cores' counters agree (in a VM, that the host keeps them
    /// so), and would have left it otherwise.
    #[cfg(target_os = "linux")]
    fn kernel_keeps_time_by_it() -> bool {
        const SOURCE: &str = "/sys/devices/system/clocksource/clocksource0/current_clocksource";
        std::fs::read_to_string(SOURCE).is_ok_and(|source| source.trim() == "tsc")
    }

    #[cfg(not(target_os = "linux"))]
    fn kernel_keeps_time_by_it() -> bool {
        true
    }

    /// The counter.
    #[inline]
    pub(super) fn read() -> u64 {
        // SAFETY: `rdtsc` exists on every x86-64 processor and only reads
        // the counter.
        unsafe { _rdtsc() }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod counter {
    pub(super) fn invariant() -> bool {
        false
    }

    pub(super) fn read() -> u64 {
        unreachable!("no counter is used where it is not invariant")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks that `source`'s ticks measure a 20 ms sleep as `Instant`
    /// does: each tick is read between two `Instant` reads, so the ticks'
    /// interval lies between the inner and the outer `Instant` intervals,
    /// however long a thread is descheduled between the reads.
    fn measures_what_instant_measures(source: Source) {
        let (before, tick, after) = (Instant::now(), source.now(), Instant::now());
        std::thread::sleep(Duration::from_millis(20));
        let (before_end, tock, after_end) = (Instant::now(), source.now(), Instant::now());
        let ns = source.nanos(tick, tock) as f64;
        let inner = before_end.duration_since(after).as_nanos() as f64;
        let outer = after_end.duration_since(before).as_nanos() as f64;
        assert!(
            inner * 0.99 <= ns && ns <= outer * 1.01,
            "ticks {ns} ns, Instant {inner}..{outer} ns ({source:?})"
        );
        assert_eq!(source.nanos(tock, tick), 0, "an earlier tick is 0 ns later");
    }

    #[test]
    fn both_sources_measure_what_instant_measures() {
        measures_what_instant_measures(Source::Since {
            base: Instant::now(),
        });
        if counter::invariant() {
            measures_what_instant_measures(Source::Counter {
                ns_per_tick: calibrate(),
            });
        }
        // And the one the syncs use.
        measures_what_instant_measures(source());
    }
}
