//! [`Machine::of`]: the parameters of a runtime's machine, as the runtime
//! gives them, or from this process's earlier runs, the cache file, or a probe
//! that runs a short BSP program on the runtime. It lives with the runtime
//! because each needs the other: [`Runtime::run`] asks for the parameters
//! when [`Router::Auto`] has none, and the probe is a run.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{LazyLock, Mutex, MutexGuard};
use std::time::Instant;

use super::Runtime;
use crate::ctx::Ctx;
use crate::error::Result;
use crate::machine::{from_words, parse, to_words, Cost, Machine, WORDS};
use crate::router::Router;
use crate::transport::Transport;

impl Machine {
    /// The parameters of `rt`'s machine, transport and processor count:
    /// the runtime's ([`Runtime::with_machine`], or `BSP_MACHINE` for
    /// [`Runtime::from_env`]), this process's earlier runs, the cache file
    /// ([`Runtime::with_machine_cache`]), or
    /// a probe (see the type's docs). Under MPI every rank must call it
    /// (it runs collectively), and every rank gets rank 0's parameters.
    ///
    /// # Errors
    ///
    /// The error of the probe's run.
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
        if let Some(m) = rt.machine().or_else(|| known().get(&key).copied()) {
            return Ok(m);
        }
        let cache = rt.machine_cache();
        let cached = match rt.reprobes() {
            true => None,
            false => cache.as_deref().and_then(|file| load(file, &key)),
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
                if let (true, Some(file)) = (lead, &cache) {
                    store(file, &key, &m);
                }
                m
            }
        };
        known().insert(key, machine);
        Ok(machine)
    }
}

/// The revision of the transports' costs, part of every cache line's key:
/// raised when a transport's l or g change enough that parameters cached
/// by an older bsp would mislead the cost model (2: the lock-free threads
/// transport, whose direct routing rides in the rows' all-gather).
const COSTS_REVISION: u32 = 2;

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
            "{} {}/{COSTS_REVISION} {} {} ",
            self.host, self.transport, self.procs, self.build
        )
    }
}

/// The parameters found so far in this process.
fn known() -> MutexGuard<'static, HashMap<Key, Machine>> {
    static KNOWN: LazyLock<Mutex<HashMap<Key, Machine>>> = LazyLock::new(Default::default);
    KNOWN.lock().unwrap_or_else(|e| e.into_inner())
}

/// The cached parameters for `key`: the last line `HOST TRANSPORT/REVISION P BUILD
/// two-phase=L,G,G1;direct=L,G,G1` that names it. Lines without the lone
/// g (written by older builds) do not count: their machine is probed
/// again.
fn load(file: &Path, key: &Key) -> Option<Machine> {
    find_cached(&std::fs::read_to_string(file).ok()?, key)
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
fn store(path: &Path, key: &Key, machine: &Machine) {
    if key.procs <= 1 {
        return;
    }
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let line = format!("{}{machine}\n", key.prefix());
    let _ = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
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
const PROBE_BYTES: usize = Machine::PROBE_BYTES;
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
}
