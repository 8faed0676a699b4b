//! How a large scatter stores its output, chosen by measurement on the
//! machine at hand rather than by constants tuned on one processor.
//!
//! A scatter over many windows can store each element plainly (each store
//! may make the processor read its line first) or through
//! [`LineWriter`](super::line_writer::LineWriter)'s line buffers, written
//! out whole by non-temporal stores. Which is faster depends on the
//! machine, the number of processors sharing its memory and the size of
//! the output. On the 16-core Intel machine of BENCHMARKS.md (section 13),
//! NAS IS class B ran 1.30–1.34× faster through line buffers at p = 16.
//! The fixed 16 MiB threshold used before had them off there, at 8 MiB
//! per processor. At p = 2 they ran 1.28–1.47× faster. On the 2-core AMD
//! VM the two ways were within the noise for NAS IS (each ahead in one
//! run), and line buffers were ahead for the uniform radix sort.
//!
//! So under [`Stores::Auto`] (the default) each scatter that could take
//! either way is timed, and the choice of the next one of its kind follows
//! the times: the first takes the line buffers, the next plain stores,
//! and later ones whichever way has the better of its recent times. A
//! scatter that can change ways midway (see [`StoreChoice::lined`]) times
//! both in its first run instead, three quarters lined and the rest
//! plain, so that no later scatter is sent the slower way only to be
//! timed. Every scatter timed refreshes its way's times, so a way that
//! turns slow (the machine's state changed) loses to the other's older,
//! better time, and the other way is timed again. A kind is the element
//! size, the number of windows and the output's size, each to the power
//! of two: an NAS IS
//! iteration learns from the last, a radix sort's third pass from its
//! first two, and a program's later sorts from its earlier ones. The
//! processors of a threads run share what is learned, so all of them take
//! the same way in a superstep: none waits on another that was sent the
//! slower way to check it.
//!
//! The output is the same whichever way is taken; only the time differs.
//!
//! # Examples
//!
//! ```
//! use bsp_core::expert::stores::{set_stores, stores, Stores};
//!
//! assert_eq!(stores(), Stores::Auto);
//! set_stores(Stores::Plain); // process-wide, for a measurement
//! assert_eq!(stores(), Stores::Plain);
//! set_stores(Stores::Auto);
//! ```

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// How large scatters store their output (see the [module docs](self)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Stores {
    /// By measurement: each streaming scatter is timed and the next of its
    /// kind takes the faster way.
    #[default]
    Auto,
    /// Through line buffers and non-temporal stores whenever many windows
    /// are busy and the element size divides a line (x86-64), whatever the
    /// output's size.
    Lines,
    /// Plain stores, one per element.
    Plain,
}

impl Stores {
    /// The policy named `name`: `auto`, `lines` or `plain`.
    ///
    /// # Examples
    ///
    /// ```
    /// use bsp_core::expert::stores::Stores;
    ///
    /// assert_eq!(Stores::from_name("plain"), Some(Stores::Plain));
    /// assert_eq!(Stores::from_name("fast"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<Stores> {
        match name {
            "auto" => Some(Stores::Auto),
            "lines" => Some(Stores::Lines),
            "plain" => Some(Stores::Plain),
            _ => None,
        }
    }

    /// The policy's name, as [`from_name`](Stores::from_name) reads it.
    pub fn name(self) -> &'static str {
        match self {
            Stores::Auto => "auto",
            Stores::Lines => "lines",
            Stores::Plain => "plain",
        }
    }
}

static POLICY: AtomicU8 = AtomicU8::new(0);

/// Sets how the scatters of this process store (all processors of a
/// threads run share it). For measurements and experiments: the default,
/// [`Stores::Auto`], chooses by measurement.
///
/// # Examples
///
/// See the [module docs](self).
///
/// # Cost
///
/// O(1).
pub fn set_stores(policy: Stores) {
    let code = match policy {
        Stores::Auto => 0,
        Stores::Lines => 1,
        Stores::Plain => 2,
    };
    POLICY.store(code, Ordering::Relaxed);
}

/// How the scatters of this process store (see [`set_stores`]).
///
/// # Examples
///
/// See the [module docs](self).
///
/// # Cost
///
/// O(1).
pub fn stores() -> Stores {
    match POLICY.load(Ordering::Relaxed) {
        1 => Stores::Lines,
        2 => Stores::Plain,
        _ => Stores::Auto,
    }
}

/// How many recent times of each way a kind keeps; it judges by their best.
const KEPT: usize = 3;

/// What a kind of scatter has learned: recent seconds per byte of each
/// way (index 0: line buffers, 1: plain).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Learned {
    times: [[f64; KEPT]; 2],
    samples: [u32; 2],
}

impl Learned {
    /// The best recent time of way `w`, if it has been timed.
    fn best(&self, w: usize) -> Option<f64> {
        let n = (self.samples[w] as usize).min(KEPT);
        self.times[w][..n].iter().copied().reduce(f64::min)
    }

    /// Whether the next scatter of this kind takes the line buffers.
    fn choose(&self) -> bool {
        match (self.best(0), self.best(1)) {
            (None, _) => true,
            (_, None) => false,
            (Some(lines), Some(plain)) => lines <= plain,
        }
    }

    fn record(&mut self, lines: bool, seconds_per_byte: f64) {
        let w = usize::from(!lines);
        let slot = self.samples[w] as usize % KEPT;
        self.times[w][slot] = seconds_per_byte;
        self.samples[w] = self.samples[w].saturating_add(1);
    }
}

/// A kind of scatter: log2 of the element size, of the window count and
/// of the output's bytes.
type Kind = (u32, u32, u32);

static LEARNED: Mutex<Vec<(Kind, Learned)>> = Mutex::new(Vec::new());

fn with_learned<R>(kind: Kind, f: impl FnOnce(&mut Learned) -> R) -> R {
    let mut table = LEARNED.lock().unwrap_or_else(|e| e.into_inner());
    let at = match table.iter().position(|(k, _)| *k == kind) {
        Some(at) => at,
        None => {
            table.push((kind, Learned::default()));
            table.len() - 1
        }
    };
    f(&mut table[at].1)
}

/// One scatter's way of storing, timed when the choice was by
/// measurement: made by [`LineWriter::choose`](super::line_writer::LineWriter::choose), ended by
/// [`done`](StoreChoice::done).
///
/// The first measured scatter of its kind can time both ways at once: a
/// scatter that asks how many of its elements to line
/// ([`lined`](StoreChoice::lined)) then sends the first three quarters
/// through line buffers and the rest by plain stores, each part timed
/// (the parts meet at [`switch`](StoreChoice::switch)). Its kind then
/// knows both ways, and no later scatter is sent the slower way just to
/// time it.
#[derive(Debug)]
#[must_use = "a choice learns from its time only when it is done"]
pub struct StoreChoice {
    lines: bool,
    /// The kind, bytes and start of a measured choice.
    measured: Option<Measured>,
}

/// What a measured choice needs to learn its time.
#[derive(Debug)]
struct Measured {
    kind: Kind,
    bytes: f64,
    /// When the part being timed began.
    start: Instant,
    /// Whether neither way of this kind has been timed yet.
    first: bool,
    part: Part,
}

/// The part of a measured scatter being timed.
#[derive(Clone, Copy, Debug)]
enum Part {
    /// The whole scatter, one way.
    Whole,
    /// The lined front of a split scatter, this fraction of its elements.
    Lined(f64),
    /// The plain rest of a split scatter, after a lined front of this
    /// fraction.
    Plain(f64),
}

impl Measured {
    /// Records the time since `start` for `fraction` of the scatter's
    /// bytes, taken the `lines` way.
    fn record(&self, lines: bool, fraction: f64) {
        let per_byte = self.start.elapsed().as_secs_f64() / (self.bytes * fraction).max(1.0);
        with_learned(self.kind, |l| l.record(lines, per_byte));
    }
}

impl StoreChoice {
    pub(super) fn fixed(lines: bool) -> Self {
        StoreChoice {
            lines,
            measured: None,
        }
    }

    pub(super) fn measured(element_bytes: usize, windows: usize, bytes: f64) -> Self {
        let kind = (
            element_bytes.max(1).ilog2(),
            windows.max(1).next_power_of_two().ilog2(),
            (bytes.max(1.0) as u64).ilog2(),
        );
        let (lines, first) = with_learned(kind, |l| (l.choose(), l.samples == [0, 0]));
        StoreChoice {
            lines,
            measured: Some(Measured {
                kind,
                bytes,
                start: Instant::now(),
                first,
                part: Part::Whole,
            }),
        }
    }

    /// Whether this scatter goes through line buffers (all of it: a
    /// caller that asks this does not split; see
    /// [`lined`](StoreChoice::lined)).
    pub fn lines(&self) -> bool {
        self.lines
    }

    /// How many of the scatter's `n` elements, taken from the front, go
    /// through line buffers; the rest go by plain stores, after
    /// [`switch`](StoreChoice::switch). All or none, except in the first
    /// measured scatter of its kind, which lines the first three quarters
    /// and so times both ways.
    ///
    /// # Examples
    ///
    /// ```
    /// use bsp_core::expert::line_writer::LineWriter;
    /// use bsp_core::expert::stores::{set_stores, Stores};
    ///
    /// set_stores(Stores::Plain);
    /// let mut choice = LineWriter::<u64>::choose(&[1 << 20; 256]);
    /// assert_eq!(choice.lined(1000), 0);
    /// choice.switch();
    /// choice.done();
    /// set_stores(Stores::Auto);
    /// ```
    ///
    /// # Cost
    ///
    /// O(1).
    pub fn lined(&mut self, n: usize) -> usize {
        match &mut self.measured {
            Some(m) if m.first && n > 0 => {
                let lined = n - n / 4;
                m.part = Part::Lined(lined as f64 / n as f64);
                m.start = Instant::now();
                lined
            }
            _ if self.lines => n,
            _ => 0,
        }
    }

    /// Ends the lined part of a scatter that asked
    /// [`lined`](StoreChoice::lined), once its line buffers are written
    /// out; what follows is the plain part.
    ///
    /// # Cost
    ///
    /// O(1); for a split scatter, a lock of the process's table of what
    /// scatters learned.
    pub fn switch(&mut self) {
        if let Some(m) = &mut self.measured {
            if let Part::Lined(fraction) = m.part {
                m.record(true, fraction);
                m.part = Part::Plain(fraction);
                m.start = Instant::now();
            }
        }
    }

    /// Ends the scatter: a measured choice records its time per byte.
    pub fn done(self) {
        let Some(m) = self.measured else {
            return;
        };
        match m.part {
            Part::Whole => m.record(self.lines, 1.0),
            Part::Plain(lined) => m.record(false, 1.0 - lined),
            // Split, but the lined part never ended: nothing to learn.
            Part::Lined(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_ways_are_tried_then_the_faster_kept_until_it_turns_slow() {
        let mut l = Learned::default();
        assert!(l.choose(), "line buffers first");
        l.record(true, 2.0);
        assert!(!l.choose(), "then plain stores");
        l.record(false, 1.0);
        for _ in 0..100 {
            assert!(!l.choose(), "plain stores are faster");
            l.record(false, 1.0);
        }
        // Plain stores turn slow: once all their recent times are, the line
        // buffers' older time wins and they are timed again.
        for slow in 0..KEPT {
            assert!(!l.choose(), "after {slow} slow times");
            l.record(false, 3.0);
        }
        assert!(l.choose());
        l.record(true, 2.5);
        assert!(l.choose(), "still faster than 3.0");
    }

    #[test]
    fn a_kind_judges_by_its_best_recent_time() {
        let mut l = Learned::default();
        l.record(true, 1.0);
        l.record(true, 9.0);
        l.record(false, 2.0);
        assert_eq!(l.best(0), Some(1.0));
        for _ in 0..KEPT {
            l.record(true, 3.0); // the old 1.0 is forgotten
        }
        assert_eq!(l.best(0), Some(3.0));
    }

    #[test]
    fn the_first_measured_scatter_of_a_kind_times_both_ways() {
        // A kind no other test uses: 2^40 bytes.
        let bytes = (1u64 << 40) as f64;
        let mut first = StoreChoice::measured(8, 1 << 9, bytes);
        assert_eq!(first.lined(1000), 750, "three quarters lined");
        first.switch();
        first.done();
        let kind = (3, 9, 40);
        let learned = with_learned(kind, |l| *l);
        assert_eq!(learned.samples, [1, 1], "one time of each way");
        // The next scatter of the kind is not split: all or none lined.
        let mut next = StoreChoice::measured(8, 1 << 9, bytes);
        let lined = next.lined(1000);
        assert!(lined == 0 || lined == 1000);
        assert_eq!(lined == 1000, learned.choose());
        next.switch(); // nothing to end: not split
        next.done();
        assert_eq!(with_learned(kind, |l| l.samples.iter().sum::<u32>()), 3);
    }

    #[test]
    fn policies_have_names() {
        for s in [Stores::Auto, Stores::Lines, Stores::Plain] {
            assert_eq!(Stores::from_name(s.name()), Some(s));
        }
    }
}
