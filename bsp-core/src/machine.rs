//! The machine's BSP parameters: l and g of each router, used by
//! [`Router::Auto`] to pick each superstep's router from the cost model
//! (and by the profile to print predicted against measured cost), and
//! their text form (`BSP_MACHINE`, the cache file). They are measured once
//! per machine, transport and processor count by a short probe run on the
//! runtime, and cached: [`Machine::of`], in `runtime/probe.rs`.

use std::fmt;

use crate::router::Router;

/// The BSP cost of one router on one machine: a superstep that routes h
/// bytes (the most any processor sends or receives) costs about
/// `l + g·h` seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Cost {
    /// Seconds of a superstep that routes almost nothing (one word to a
    /// neighbour): the all-gather of the sync rows plus the router's
    /// exchanges.
    pub l_seconds: f64,
    /// Seconds per byte of h.
    pub g_seconds_per_byte: f64,
}

impl Cost {
    /// The predicted seconds of a superstep that routes `h_bytes`.
    ///
    /// # Examples
    ///
    /// ```
    /// let c = bsp_core::Cost { l_seconds: 1e-6, g_seconds_per_byte: 1e-9 };
    /// assert!((c.predict(1000) - 2e-6).abs() < 1e-12);
    /// ```
    pub fn predict(&self, h_bytes: u64) -> f64 {
        self.l_seconds + self.g_seconds_per_byte * h_bytes as f64
    }
}

/// What [`Router::Auto`] needs to know of the machine: l and g of each
/// router, for one transport and processor count.
///
/// [`Machine::of`] gives the parameters of a runtime: from the environment
/// variable `BSP_MACHINE` if set, else from this process's earlier runs,
/// else from the cache file (`BSP_MACHINE_CACHE`, by default
/// `$XDG_CACHE_HOME/bsp/machine` or `~/.cache/bsp/machine`, one line per
/// host, transport, p and build — debug or release), else from a probe
/// that it runs and caches. The probe takes a few milliseconds at p = 2
/// and about a second at p = 1024 on two cores.
///
/// `BSP_MACHINE` is `two-phase=L,G;direct=L,G` (l in seconds, g in seconds
/// per byte) to give the parameters, or `probe` to measure afresh once per
/// process (and refresh the cache). `BSP_MACHINE_CACHE=off` keeps the parameters in the
/// process only. Each router may carry a third figure,
/// `two-phase=L,G,G1;direct=L,G,G1`: g of a superstep whose h is all its
/// traffic ([`lone_g`](Machine::lone_g)); without it, G stands for it.
/// The probe measures all three, and the cache keeps only lines that have
/// them (a line of an older build, without G1, is probed again).
///
/// Why two g: g is measured on a full h-relation, in which every processor
/// sends and receives h at once; where the processors share cores and
/// memory (threads, or more MPI ranks than cores), a superstep in which
/// one processor receives h and the others little (a gather to a root, a
/// tree's round) moves h far faster than that. The lone g is measured on
/// such a superstep: every processor sends its block to processor 0.
///
/// # Examples
///
/// ```
/// use bsp_core::{Cost, Machine, Router};
///
/// let m = Machine::new(
///     Cost { l_seconds: 20e-6, g_seconds_per_byte: 1e-10 },
///     Cost { l_seconds: 10e-6, g_seconds_per_byte: 2e-10 },
/// );
/// // Little data: direct's smaller l wins; much data: two-phase's smaller g.
/// assert_eq!(m.choose(1_000).0, Router::Direct);
/// assert_eq!(m.choose(10_000_000).0, Router::TwoPhase);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Machine {
    two_phase: Cost,
    direct: Cost,
    /// g of a lone receiver, per router (two-phase, direct), where given
    /// or measured.
    pub(crate) lone: Option<[f64; 2]>,
}

/// How much cheaper the direct router must be predicted before
/// [`Router::Auto`] leaves the two-phase router: 5%.
pub const DIRECT_MARGIN: f64 = 0.05;

impl Machine {
    /// The most bytes a processor sends or receives in one of the probe's
    /// supersteps (1 MiB): the measured g and lone g are those of messages
    /// up to this size, which stay in cache; larger ones stream through
    /// memory, and a model should not carry the lone g beyond it.
    pub const PROBE_BYTES: usize = 1 << 20;

    /// A machine with the given costs of the two-phase and the direct router.
    pub const fn new(two_phase: Cost, direct: Cost) -> Self {
        Machine {
            two_phase,
            direct,
            lone: None,
        }
    }

    /// This machine with the g of a superstep whose h is all its traffic
    /// (one processor receives h bytes, the others send their parts to
    /// it) given for each router, in seconds per byte.
    ///
    /// # Examples
    ///
    /// ```
    /// use bsp_core::{Cost, Machine, Router};
    ///
    /// let c = Cost { l_seconds: 1e-5, g_seconds_per_byte: 1e-9 };
    /// let m = Machine::new(c, c);
    /// assert_eq!(m.lone_g(Router::Direct), Some(1e-9));
    /// let m = m.with_lone_g(2e-10, 3e-10);
    /// assert_eq!(m.lone_g(Router::Direct), Some(3e-10));
    /// ```
    pub const fn with_lone_g(self, two_phase: f64, direct: f64) -> Self {
        Machine {
            lone: Some([two_phase, direct]),
            ..self
        }
    }

    /// g, in seconds per byte, of a superstep on `router` in which one
    /// processor receives h bytes and that is all that moves (the
    /// processors that share cores and memory are not all copying at
    /// once): measured by the probe, given by `BSP_MACHINE`'s third figure
    /// per router, or, where neither, the router's full-h-relation g.
    /// `None` for the routers [`cost`](Machine::cost) has no cost for.
    ///
    /// # Examples
    ///
    /// ```
    /// use bsp_core::{Cost, Machine, Router};
    ///
    /// let c = Cost { l_seconds: 1e-5, g_seconds_per_byte: 1e-9 };
    /// let m = Machine::new(c, c).with_lone_g(2e-10, 3e-10);
    /// assert_eq!(m.lone_g(Router::TwoPhase), Some(2e-10));
    /// assert_eq!(m.lone_g(Router::Auto), None);
    /// ```
    pub fn lone_g(&self, router: Router) -> Option<f64> {
        let slot = match router {
            Router::TwoPhase => 0,
            Router::Direct => 1,
            Router::Auto | Router::Transportation => return None,
        };
        match self.lone {
            Some(g) => Some(g[slot]),
            None => self.cost(router).map(|c| c.g_seconds_per_byte),
        }
    }

    /// The cost of `router`; `None` for [`Router::Auto`], which is not a
    /// router of its own, and for [`Router::Transportation`], which the
    /// probe does not measure.
    pub fn cost(&self, router: Router) -> Option<Cost> {
        match router {
            Router::TwoPhase => Some(self.two_phase),
            Router::Direct => Some(self.direct),
            // Not probed: the model states no cost for it.
            Router::Auto | Router::Transportation => None,
        }
    }

    /// The router [`Router::Auto`] picks for a superstep that routes
    /// `h_bytes`, and the seconds the model predicts for it: the two-phase
    /// router unless the direct router is predicted at least
    /// [`DIRECT_MARGIN`] cheaper.
    ///
    /// # Cost
    ///
    /// Constant.
    pub fn choose(&self, h_bytes: u64) -> (Router, f64) {
        let two_phase = self.two_phase.predict(h_bytes);
        let direct = self.direct.predict(h_bytes);
        if direct < (1.0 - DIRECT_MARGIN) * two_phase {
            (Router::Direct, direct)
        } else {
            (Router::TwoPhase, two_phase)
        }
    }
}

impl fmt::Display for Machine {
    /// `two-phase=L,G;direct=L,G`, with the lone g as a third figure per
    /// router where it was given or measured: what `BSP_MACHINE` reads.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lone = |slot: usize| match self.lone {
            Some(g) => format!(",{:e}", g[slot]),
            None => String::new(),
        };
        write!(
            f,
            "two-phase={:e},{:e}{};direct={:e},{:e}{}",
            self.two_phase.l_seconds,
            self.two_phase.g_seconds_per_byte,
            lone(0),
            self.direct.l_seconds,
            self.direct.g_seconds_per_byte,
            lone(1)
        )
    }
}

/// Reads `two-phase=L,G;direct=L,G`, each router with an optional third
/// figure G1 (the [`Display`](fmt::Display) form).
pub(crate) fn parse(text: &str) -> std::result::Result<Machine, String> {
    let mut costs: [Option<Cost>; 2] = [None, None];
    let mut lone: [Option<f64>; 2] = [None, None];
    for item in text.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, values) = item
            .split_once('=')
            .ok_or_else(|| format!("{item:?} is not ROUTER=L,G"))?;
        let slot = match name.trim().parse::<Router>() {
            Ok(Router::TwoPhase) => 0,
            Ok(Router::Direct) => 1,
            _ => return Err(format!("{name:?} is not `two-phase` or `direct`")),
        };
        let numbers: Vec<f64> = values
            .split(',')
            .map(|v| v.trim().parse::<f64>())
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| format!("{values:?}: {e}"))?;
        let fine = numbers.iter().all(|&x| x >= 0.0 && x.is_finite());
        match numbers[..] {
            [l, g] | [l, g, _] if fine => {
                costs[slot] = Some(Cost {
                    l_seconds: l,
                    g_seconds_per_byte: g,
                });
                lone[slot] = numbers.get(2).copied();
            }
            _ => {
                return Err(format!(
                    "{values:?} is not two or three non-negative numbers L,G[,G1]"
                ))
            }
        }
    }
    match costs {
        [Some(two_phase), Some(direct)] => {
            let machine = Machine::new(two_phase, direct);
            match lone {
                [Some(t), Some(d)] => Ok(machine.with_lone_g(t, d)),
                [None, None] => Ok(machine),
                _ => Err(format!("{text:?}: give G1 for both routers or neither")),
            }
        }
        _ => Err(format!(
            "{text:?} must give both routers: two-phase=L,G;direct=L,G (seconds, seconds per byte)"
        )),
    }
}

/// Figures in [`to_words`]: l, g and the lone g of each router.
pub(crate) const WORDS: usize = 6;

/// The figures of `m`, in the order of [`WORDS`].
pub(crate) fn to_words(m: &Machine) -> [f64; WORDS] {
    [
        m.two_phase.l_seconds,
        m.two_phase.g_seconds_per_byte,
        m.lone_g(Router::TwoPhase).unwrap_or_default(),
        m.direct.l_seconds,
        m.direct.g_seconds_per_byte,
        m.lone_g(Router::Direct).unwrap_or_default(),
    ]
}

/// The machine of [`to_words`]' figures.
pub(crate) fn from_words(w: &[f64]) -> Machine {
    let cost = |l, g| Cost {
        l_seconds: l,
        g_seconds_per_byte: g,
    };
    Machine::new(cost(w[0], w[1]), cost(w[3], w[4])).with_lone_g(w[2], w[5])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip_and_bad_ones_are_named() {
        let m = Machine::new(
            Cost {
                l_seconds: 1.5e-6,
                g_seconds_per_byte: 2e-11,
            },
            Cost {
                l_seconds: 1e-6,
                g_seconds_per_byte: 3e-11,
            },
        );
        assert_eq!(parse(&m.to_string()), Ok(m));
        assert_eq!(
            parse(" direct = 1e-6 , 3e-11 ; two-phase=1.5e-6,2e-11"),
            Ok(m)
        );
        // The lone g: a third figure per router, kept through the text form.
        let lone = m.with_lone_g(4e-12, 5e-12);
        assert_eq!(parse(&lone.to_string()), Ok(lone));
        assert_eq!(
            parse("two-phase=1.5e-6,2e-11,4e-12;direct=1e-6,3e-11,5e-12"),
            Ok(lone)
        );
        assert_eq!(lone.lone_g(Router::Direct), Some(5e-12));
        assert_eq!(m.lone_g(Router::Direct), Some(3e-11));
        assert_eq!(from_words(&to_words(&lone)), lone);
        for bad in [
            "",
            "two-phase=1,2,3;direct=1,2",
            "two-phase=1,2,-3;direct=1,2,3",
            "two-phase=1,2,3,4;direct=1,2,3",
            "two-phase=1,2",
            "two-phase=1;direct=1,2",
            "auto=1,2;direct=1,2",
            "two-phase=-1,2;direct=1,2",
            "two-phase=x,2;direct=1,2",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn the_choice_prefers_two_phase_within_the_margin() {
        let flat = |l| Cost {
            l_seconds: l,
            g_seconds_per_byte: 0.0,
        };
        assert_eq!(
            Machine::new(flat(1.0), flat(0.96)).choose(0).0,
            Router::TwoPhase
        );
        assert_eq!(
            Machine::new(flat(1.0), flat(0.94)).choose(0),
            (Router::Direct, 0.94)
        );
    }
}
