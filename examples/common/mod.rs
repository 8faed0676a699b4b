//! Helpers shared by the examples: command-line parsing and medians. JSON
//! output is serde_json's, and figures across processors come from
//! `bsp::algos` collectives.
//!
//! Each example includes this module with `mod common;`, and so do the
//! benchmark harnesses in `benchmarks/examples/` (through `#[path]`). Not
//! every program uses every helper.
#![allow(dead_code)]

use std::collections::HashMap;
use std::fmt::Display;
use std::io::IsTerminal;
use std::str::FromStr;

use indicatif::{ProgressBar, ProgressStyle};

/// Command-line flags of the form `--name value` and `--switch`.
pub struct Args {
    program: String,
    values: HashMap<String, String>,
    switches: Vec<String>,
    usage: &'static str,
}

impl Args {
    /// Parses `std::env::args()`; `switches` are the flags that take no value.
    /// Prints `usage` and exits on `--help`; exits with status 2 on a malformed line.
    pub fn parse(usage: &'static str, switches: &[&str]) -> Args {
        let mut raw = std::env::args();
        let program = raw.next().unwrap_or_default();
        let mut args = Args {
            program,
            values: HashMap::new(),
            switches: Vec::new(),
            usage,
        };
        while let Some(flag) = raw.next() {
            if flag == "--help" || flag == "-h" {
                println!("{usage}");
                std::process::exit(0);
            }
            let Some(name) = flag.strip_prefix("--") else {
                args.fail(&format!("unexpected argument {flag:?}"));
            };
            if switches.contains(&name) {
                args.switches.push(name.to_owned());
            } else {
                match raw.next() {
                    Some(value) => {
                        args.values.insert(name.to_owned(), value);
                    }
                    None => args.fail(&format!("--{name} needs a value")),
                }
            }
        }
        args
    }

    /// Prints `message` and the usage, then exits with status 2.
    pub fn fail(&self, message: &str) -> ! {
        eprintln!("{}: {message}\n\n{}", self.program, self.usage);
        std::process::exit(2)
    }

    /// Whether `--name` was given.
    pub fn flag(&self, name: &str) -> bool {
        self.switches.iter().any(|s| s == name)
    }

    /// The value of `--name`, parsed, or `default`.
    pub fn get<T: FromStr>(&self, name: &str, default: T) -> T
    where
        T::Err: Display,
    {
        match self.values.get(name) {
            None => default,
            Some(v) => v
                .parse()
                .unwrap_or_else(|e| self.fail(&format!("--{name} {v:?}: {e}"))),
        }
    }

    /// The value of `--name`, parsed, if given.
    pub fn opt<T: FromStr>(&self, name: &str) -> Option<T>
    where
        T::Err: Display,
    {
        self.values.get(name).map(|v| {
            v.parse()
                .unwrap_or_else(|e| self.fail(&format!("--{name} {v:?}: {e}")))
        })
    }

    /// The value of `--name` as a comma-separated list, or `default`.
    pub fn list<T>(&self, name: &str, default: &[T]) -> Vec<T>
    where
        T: FromStr + Clone,
        T::Err: Display,
    {
        match self.values.get(name) {
            None => default.to_vec(),
            Some(v) => v
                .split(',')
                .map(|x| {
                    x.trim()
                        .parse()
                        .unwrap_or_else(|e| self.fail(&format!("--{name} {x:?}: {e}")))
                })
                .collect(),
        }
    }

    /// `Runtime::from_env()` with `--procs` and `--router` applied where
    /// given (under MPI the processor count is mpirun's).
    pub fn runtime(&self) -> bsp::Runtime {
        let mut rt = bsp::Runtime::from_env();
        if let Some(p) = self.opt("procs") {
            rt = rt.with_procs(p);
        }
        if let Some(r) = self.opt::<bsp::Router>("router") {
            rt = rt.with_router(r);
        }
        self.apply_stores();
        rt
    }

    /// Applies `--stores auto|lines|plain`, where given, process-wide
    /// (`bsp::expert::stores`).
    pub fn apply_stores(&self) {
        use bsp::expert::stores::{set_stores, Stores};
        if let Some(name) = self.opt::<String>("stores") {
            match Stores::from_name(&name) {
                Some(policy) => set_stores(policy),
                None => self.fail(&format!(
                    "--stores: expected auto, lines or plain, not {name:?}"
                )),
            }
        }
    }

    /// Fails with a clear message, before anything is allocated, when a run
    /// needs about `bytes` bytes (for `what`) and this machine has less
    /// memory available (`MemAvailable` in `/proc/meminfo`, where readable).
    pub fn require_memory(&self, bytes: u128, what: &str) {
        let available = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
            let line = m.lines().find(|l| l.starts_with("MemAvailable:"))?;
            let kib: u128 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        });
        let gib = |b: u128| b as f64 / f64::from(1u32 << 30);
        if let Some(available) = available.filter(|&a| bytes > a) {
            self.fail(&format!(
                "{what} needs about {:.1} GiB of memory, and this machine has {:.1} GiB available",
                gib(bytes),
                gib(available)
            ));
        }
    }

    /// Whether a flag other than `known` was given (for a clear error).
    pub fn reject_unknown(&self, known: &[&str]) {
        for name in self.values.keys().chain(self.switches.iter()) {
            if !known.contains(&name.as_str()) {
                self.fail(&format!("unknown flag --{name}"));
            }
        }
    }
}

/// The value of a finished run, or: prints `{name}: {error}` and exits
/// with status 1.
pub fn ran<T, E: Display>(name: &str, outcome: Result<T, E>) -> T {
    outcome.unwrap_or_else(|e| {
        eprintln!("{name}: {e}");
        std::process::exit(1)
    })
}

/// Exit status 1 if any processor reported a wrong answer (`Some(false)`;
/// `None` is a processor that had nothing to check), success otherwise.
pub fn verdict(results: &bsp::Outcome<Option<bool>>) -> std::process::ExitCode {
    if results.iter().all(|r| *r != Some(false)) {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    }
}

/// Least-squares line through `(x, y)` points: (intercept, slope).
pub fn fit_line(points: &[(usize, f64)]) -> (f64, f64) {
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0 as f64).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxy: f64 = points.iter().map(|p| (p.0 as f64 - mx) * (p.1 - my)).sum();
    let sxx: f64 = points.iter().map(|p| (p.0 as f64 - mx).powi(2)).sum();
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    (my - slope * mx, slope)
}

/// The median of `xs` (which must not be empty).
pub fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

/// The upper median of `v` (its element `len / 2` once sorted; `v` must not
/// be empty): what the sort, histogram and random access benchmarks report.
pub fn upper_median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// A progress bar on standard error for a long benchmark: drawn only when
/// standard error is a terminal, `quiet` is false (pass `--json`) and this
/// process prints (processor 0's); otherwise every call does nothing.
pub struct Progress(Option<ProgressBar>);

impl Progress {
    /// A bar of `steps` steps, described by `what`.
    pub fn new(steps: u64, what: &str, quiet: bool) -> Progress {
        let shown = !quiet && std::io::stderr().is_terminal() && !under_mpi_rank_other_than_0();
        Progress(shown.then(|| {
            let bar = ProgressBar::new(steps);
            bar.set_style(
                ProgressStyle::with_template(
                    "{prefix} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg} (eta {eta})",
                )
                .expect("a valid template"),
            );
            bar.set_prefix(what.to_owned());
            bar
        }))
    }

    /// Says what runs now.
    pub fn step(&self, now: impl Into<String>) {
        if let Some(bar) = &self.0 {
            bar.set_message(now.into());
        }
    }

    /// One step done.
    pub fn tick(&self) {
        if let Some(bar) = &self.0 {
            bar.inc(1);
        }
    }

    /// Runs `f` (which prints results) with the bar hidden.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.0 {
            Some(bar) => bar.suspend(f),
            None => f(),
        }
    }

    /// Removes the bar, so that the results print on a clean screen.
    pub fn finish(&self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}

/// Whether this process is an MPI rank other than 0 (which print nothing).
fn under_mpi_rank_other_than_0() -> bool {
    ["OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .any(|rank| rank != "0")
}

/// A pseudo-random 64-bit number, the `i`-th of a fixed sequence
/// (splitmix64's finaliser): the examples' inputs, the same whatever p.
pub fn mix(i: u64) -> u64 {
    let mut z = i
        .wrapping_add(0x9e37_79b9_7f4a_7c15)
        .wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A block-distributed array (`mine`: this processor's block) whole on
/// processor 0, `None` elsewhere. Collective: every processor calls it.
pub fn whole_on_root<T: bytemuck::Pod>(ctx: &mut bsp::Ctx, mine: &[T]) -> Option<Vec<T>> {
    bsp::algos::gather(ctx, 0, mine).map(|parts| parts.concat())
}

/// What a lesson prints of its check: `verified against {oracle}`, or
/// `WRONG: differs from {oracle}`.
pub fn checked(ok: bool, oracle: &str) -> String {
    if ok {
        format!("verified against {oracle}")
    } else {
        format!("WRONG: differs from {oracle}")
    }
}
