//! The machine's BSP parameters: l and g of each router, measured once per
//! machine, transport and processor count by a short probe, cached, and
//! used by [`Router::Auto`] to pick each superstep's router from the cost
//! model (and by the profile to print predicted against measured cost).

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::{LazyLock, Mutex, MutexGuard};
use std::time::Instant;

use crate::ctx::Ctx;
use crate::env::{MACHINE_CACHE_ENV, MACHINE_ENV};
use crate::error::{Error, ErrorKind, Result};
use crate::router::Router;
use crate::runtime::Runtime;
use crate::transport::Transport;

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
    lone: Option<[f64; 2]>,
}

/// How much cheaper the direct router must be predicted before
/// [`Router::Auto`] leaves the two-phase router: 5%.
pub const DIRECT_MARGIN: f64 = 0.05;

impl Machine {
    /// The most bytes a processor sends or receives in one of the probe's
    /// supersteps (1 MiB): the measured g and lone g are those of messages
    /// up to this size, which stay in cache; larger ones stream through
    /// memory, and a model should not carry the lone g beyond it.
    pub const PROBE_BYTES: usize = PROBE_BYTES;

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

    /// The parameters of `rt`'s machine, transport and processor count:
    /// from `BSP_MACHINE`, this process's earlier runs, the cache file, or
    /// a probe (see the type's docs). Under MPI every rank must call it
    /// (it runs collectively), and every rank gets rank 0's parameters.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Config`] for a malformed `BSP_MACHINE`, or the error of
    /// the probe's run.
    ///
    /// # Examples
    ///
    /// ```
    /// let m = bsp_core::Machine::of(&bsp_core::Runtime::threads(2)).unwrap();
    /// assert!(m.cost(bsp_core::Router::Direct).unwrap().l_seconds >= 0.0);
    /// ```
    ///
    /// # Cost
    ///
    /// The first call per processor count in a process without a cached
    /// value runs the probe: 3 × 16 supersteps of each router.
    pub fn of(rt: &Runtime) -> Result<Machine> {
        let key = Key::of(rt);
        let setting = std::env::var(MACHINE_ENV).ok();
        let given = match setting.as_deref() {
            None | Some("probe") => None,
            Some(text) => Some(parse(text).map_err(|msg| config(format!("{MACHINE_ENV}: {msg}")))?),
        };
        if let Some(m) = given.or_else(|| known().get(&key).copied()) {
            return Ok(m);
        }
        let cached = match setting.as_deref() {
            Some("probe") => None,
            _ => load(&key),
        };
        // Every rank must take the same path: under MPI, processor 0's
        // cached value (or its lack) decides for all.
        let agreed = if rt.transport() == Transport::Threads {
            cached
        } else {
            agree(rt, cached)?
        };
        let machine = match agreed {
            Some(m) => m,
            None => {
                let (m, lead) = probe(rt)?;
                // One writer per job: processor 0's process.
                if lead {
                    store(&key, &m);
                }
                m
            }
        };
        known().insert(key, machine);
        Ok(machine)
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

fn config(msg: String) -> Error {
    Error::new(ErrorKind::Config, None, None, msg)
}

/// Reads `two-phase=L,G;direct=L,G`, each router with an optional third
/// figure G1 (the [`Display`](fmt::Display) form).
fn parse(text: &str) -> std::result::Result<Machine, String> {
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

/// What a machine's parameters are for: the host, the transport, p, and
/// whether the code measured was built with debug assertions (a test
/// build) or without (a release build), whose costs differ.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    host: String,
    transport: &'static str,
    procs: usize,
    build: &'static str,
}

impl Key {
    fn of(rt: &Runtime) -> Key {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_owned())
            .or_else(|_| std::env::var("HOSTNAME"))
            .unwrap_or_else(|_| "localhost".into());
        Key {
            host: host.replace(char::is_whitespace, "_"),
            transport: rt.transport().name(),
            procs: rt.nprocs(),
            build: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            },
        }
    }

    fn prefix(&self) -> String {
        format!(
            "{} {} {} {} ",
            self.host, self.transport, self.procs, self.build
        )
    }
}

/// The parameters found so far in this process.
fn known() -> MutexGuard<'static, HashMap<Key, Machine>> {
    static KNOWN: LazyLock<Mutex<HashMap<Key, Machine>>> = LazyLock::new(Default::default);
    KNOWN.lock().unwrap_or_else(|e| e.into_inner())
}

/// The cache file, if any.
fn cache_file() -> Option<PathBuf> {
    match std::env::var_os(MACHINE_CACHE_ENV) {
        Some(v) if v == "off" || v.is_empty() => None,
        Some(v) => Some(PathBuf::from(v)),
        None => std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .map(|dir| dir.join("bsp").join("machine")),
    }
}

/// The cached parameters for `key`: the last line `HOST TRANSPORT P BUILD
/// two-phase=L,G,G1;direct=L,G,G1` that names it. Lines without the lone
/// g (written by older builds) do not count: their machine is probed
/// again.
fn load(key: &Key) -> Option<Machine> {
    find_cached(&std::fs::read_to_string(cache_file()?).ok()?, key)
}

/// [`load`]'s reading of the cache file's `text`.
fn find_cached(text: &str, key: &Key) -> Option<Machine> {
    let prefix = key.prefix();
    text.lines()
        .rev()
        .filter_map(|line| line.strip_prefix(&prefix))
        .filter_map(|rest| parse(rest).ok())
        .find(|m| m.lone.is_some())
}

/// Appends `machine` to the cache file (best effort: a cache that cannot
/// be written only means probing again in the next process).
fn store(key: &Key, machine: &Machine) {
    let Some(path) = cache_file().filter(|_| key.procs > 1) else {
        return;
    };
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let line = format!("{}{machine}\n", key.prefix());
    let _ = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
}

/// Figures in [`to_words`]: l, g and the lone g of each router.
const WORDS: usize = 6;

fn to_words(m: &Machine) -> [f64; WORDS] {
    [
        m.two_phase.l_seconds,
        m.two_phase.g_seconds_per_byte,
        m.lone_g(Router::TwoPhase).unwrap_or_default(),
        m.direct.l_seconds,
        m.direct.g_seconds_per_byte,
        m.lone_g(Router::Direct).unwrap_or_default(),
    ]
}

fn from_words(w: &[f64]) -> Machine {
    let cost = |l, g| Cost {
        l_seconds: l,
        g_seconds_per_byte: g,
    };
    Machine::new(cost(w[0], w[1]), cost(w[3], w[4])).with_lone_g(w[2], w[5])
}

/// Processor 0's `cached` value, on every processor (one small run).
fn agree(rt: &Runtime, cached: Option<Machine>) -> Result<Option<Machine>> {
    let words = cached.map_or([f64::NAN; WORDS], |m| to_words(&m));
    let out = rt.clone().with_router(Router::Direct).run(|ctx| {
        let (me, p) = (ctx.pid(), ctx.nprocs());
        let mine = ctx.coarray::<f64>(WORDS);
        if me == 0 {
            for q in 0..p {
                ctx.put(q, &mine, 0, &words);
            }
        }
        ctx.sync();
        ctx.local(&mine).to_vec()
    })?;
    let w = out.local();
    Ok((!w[0].is_nan()).then(|| from_words(w)))
}

/// Supersteps the probe times per router and figure, after one untimed
/// (the fastest counts: the machine's capability, not its noise), up to
/// `PROBE_REPS_UP_TO` processors; beyond, fewer (at least
/// `PROBE_REPS_LEAST`), as the probe's supersteps grow with p and their
/// noise shrinks in proportion.
const PROBE_REPS: usize = 7;
const PROBE_REPS_UP_TO: usize = 256;
const PROBE_REPS_LEAST: usize = 3;

/// Supersteps the probe times per figure on p processors.
fn probe_reps(p: usize) -> usize {
    (PROBE_REPS * PROBE_REPS_UP_TO / p.max(1)).clamp(PROBE_REPS_LEAST, PROBE_REPS)
}

/// Bytes each processor sends in the probe's full h-relation, at most.
const PROBE_BYTES: usize = 1 << 20;
/// Bytes all processors together send in it, at most.
const PROBE_TOTAL: usize = 4 << 20;
/// Destinations of each processor in it, at most.
const PROBE_FAN: usize = 64;

/// Measures l and g of both routers on `rt`: l from supersteps in which
/// every processor puts one word to its right neighbour, g from
/// supersteps in which every processor puts B bytes, spread evenly over
/// itself and the next processors, up to 64 in all (B = 1 MiB, or 4 MiB / p
/// when smaller), per byte that leaves the processor, and the lone g from
/// supersteps in which those processors put their block for processor 0
/// only (the same h, at one processor). Each figure is the slowest
/// processor's fastest superstep of 7 (fewer beyond 256 processors, at
/// least 3), after one to warm up.
///
/// Returns the parameters, and whether this process holds processor 0.
fn probe(rt: &Runtime) -> Result<(Machine, bool)> {
    let p = rt.nprocs();
    // Destinations of each processor: itself and the next ones, as in a
    // transpose (h = n/p), up to 64.
    let fan = p.min(PROBE_FAN);
    if fan <= 1 {
        // One processor (or none, which the run reports): nothing is routed.
        return Ok((Machine::new(Cost::default(), Cost::default()), true));
    }
    let per = (PROBE_BYTES.min(PROBE_TOTAL / p) / 8 / fan).max(1); // words per destination
                                                                   // h counts what leaves the processor (its part to itself stays local).
    let h = 8 * per * (fan - 1);
    let reps = probe_reps(p);
    let out = rt.clone().with_router(Router::TwoPhase).run(|ctx| {
        let me = ctx.pid();
        let word = ctx.coarray::<u64>(1);
        let inbox = ctx.coarray::<u64>(per * fan);
        let data = vec![me as u64; per];
        let times = ctx.coarray::<f64>(if me == 0 { WORDS * p } else { 0 });
        let result = ctx.coarray::<f64>(WORDS);
        let mut mine = [0.0; WORDS];
        for (r, router) in [Router::TwoPhase, Router::Direct].into_iter().enumerate() {
            ctx.set_router(router);
            // Each timed superstep starts as the one before it ends: its
            // sync is the barrier that lines the processors up.
            let time = |ctx: &mut Ctx, step: &dyn Fn(&mut Ctx)| {
                let mut fastest = f64::INFINITY;
                ctx.sync();
                for rep in 0..=reps {
                    let start = Instant::now();
                    step(ctx);
                    ctx.sync();
                    if rep > 0 {
                        fastest = fastest.min(start.elapsed().as_secs_f64());
                    }
                }
                fastest
            };
            let l = time(ctx, &|ctx| ctx.put((me + 1) % p, &word, 0, &[1]));
            let full = time(ctx, &|ctx| {
                for k in 0..fan {
                    // Processor me is the k-th source of me + k.
                    ctx.put((me + k) % p, &inbox, k * per, &data);
                }
            });
            // The same h at processor 0 alone: the other processors of
            // the full h-relation each send it their block.
            let lone = time(ctx, &|ctx| {
                if me > 0 && me < fan {
                    ctx.put(0, &inbox, me * per, &data);
                }
            });
            mine[3 * r] = l;
            mine[3 * r + 1] = ((full - l) / h as f64).max(0.0);
            mine[3 * r + 2] = ((lone - l) / h as f64).max(0.0);
        }
        ctx.put(0, &times, WORDS * me, &mine);
        ctx.sync();
        if me == 0 {
            let all = ctx.local(&times).to_vec();
            let slowest: Vec<f64> = (0..WORDS)
                .map(|i| (0..p).map(|q| all[WORDS * q + i]).fold(0.0, f64::max))
                .collect();
            for q in 0..p {
                ctx.put(q, &result, 0, &slowest);
            }
        }
        ctx.sync();
        (me, ctx.local(&result).to_vec())
    })?;
    let (me, words) = out.local();
    Ok((from_words(words), *me == 0))
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
    fn the_cache_skips_lines_without_the_lone_g() {
        let key = Key {
            host: "h".into(),
            transport: "threads",
            procs: 4,
            build: "release",
        };
        let cost = Cost {
            l_seconds: 1e-5,
            g_seconds_per_byte: 1e-9,
        };
        let new = Machine::new(cost, cost).with_lone_g(1e-10, 2e-10);
        let text = format!(
            "{p}{new}\n{p}two-phase=1e-5,1e-9;direct=1e-5,1e-9\n",
            p = key.prefix()
        );
        // The last line is an older build's: the one before it counts.
        assert_eq!(find_cached(&text, &key), Some(new));
        let other = Key { procs: 8, ..key };
        assert_eq!(find_cached(&text, &other), None);
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
