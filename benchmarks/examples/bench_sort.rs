//! Side-by-side sort benchmark: this project's distributed radix sort
//! (threads transport) against the sorters a Rust user would pick instead,
//! on the same inputs in one run; median of several repetitions, with
//! ratios to `bsp`.
//!
//! ```text
//! cargo run --release -p bsp-benchmarks --example bench_sort -- --n 16777216,67108864 --procs 2
//! ```

#[path = "../../examples/common/mod.rs"]
mod common;

use std::cmp::Ordering;
use std::process::ExitCode;
use std::time::Instant;

use bsp::algos::{all_reduce, Max};
use bsp::expert::pages;
use bsp::prelude::*;
use bsp::sort::inputs::{block_range, Dist};
use bsp::sort::RadixSorter;
use bytemuck::{Pod, Zeroable};
use common::{upper_median, Args, Progress};
use rayon::prelude::*;
use serde_json::json;
use voracious_radix_sort::{RadixSort as _, Radixable};

const HELP: &str = "\
bench_sort: this project's radix sort against rdst, voracious_radix_sort, radsort, rayon and std

usage: bench_sort [options]
  --n N[,N..]         total keys per case (default 16777216,67108864)
  --procs P           processors for bsp and threads for the parallel peers (default 2)
  --dist D[,D..]      distributions among R,S,C,N,G (default R,S)
  --kind K[,K..]      keys (u32) and/or pairs (u32 key + u32 payload) (default keys,pairs)
  --reps R            repetitions, the median is reported (default 5)
  --only NAME[,..]    run only these sorters (bsp: one-shot; bsp_reused: a kept
                      sorter on a Vec; bsp_slice: a kept sorter on a slice;
                      fresh_pages: not a sort, the time to map n/p fresh
                      elements per processor as a one-shot sort must, so that
                      bsp ~ bsp_reused + fresh_pages can be read in one run)
  --router two-phase|direct   router for bsp (default two-phase)
  --stores auto|lines|plain   how bsp's scatters store (default auto)
  --json              one JSON object per line instead of tables
  --help              this text";

/// A u32 key with a u32 payload.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
struct Rec {
    key: u32,
    val: u32,
}

impl PartialEq for Rec {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl PartialOrd for Rec {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        self.key.partial_cmp(&other.key)
    }
}

impl Radixable<u32> for Rec {
    type Key = u32;
    fn key(&self) -> u32 {
        self.key
    }
}

impl rdst::RadixKey for Rec {
    const LEVELS: usize = 4;
    fn get_level(&self, level: usize) -> u8 {
        (self.key >> (level * 8)) as u8
    }
}

/// What the benchmark sorts: plain keys or records, with their key.
trait Item: Pod + Send + Sync + PartialOrd + std::fmt::Debug {
    fn sort_key(&self) -> u32;
    fn make(key: u32, index: usize) -> Self;
}

impl Item for u32 {
    fn sort_key(&self) -> u32 {
        *self
    }
    fn make(key: u32, _: usize) -> Self {
        key
    }
}

impl Item for Rec {
    fn sort_key(&self) -> u32 {
        self.key
    }
    fn make(key: u32, index: usize) -> Self {
        Rec {
            key,
            val: index as u32,
        }
    }
}

/// What the benchmark needs from the command line.
struct Opts {
    ns: Vec<usize>,
    procs: usize,
    dists: Vec<Dist>,
    kinds: Vec<String>,
    reps: usize,
    only: Option<Vec<String>>,
    router: Router,
    json: bool,
}

fn parse_opts() -> Opts {
    let args = Args::parse(HELP, &["json"]);
    args.reject_unknown(&[
        "n", "procs", "dist", "kind", "reps", "only", "router", "stores", "json",
    ]);
    args.apply_stores();
    let kinds: Vec<String> = args.list("kind", &["keys".to_owned(), "pairs".to_owned()]);
    if let Some(k) = kinds
        .iter()
        .find(|k| !matches!(k.as_str(), "keys" | "pairs"))
    {
        args.fail(&format!("--kind: cannot parse {k:?}"));
    }
    let opts = Opts {
        ns: args.list("n", &[1 << 24, 1 << 26]),
        // a list is accepted for --procs and --reps: its first element counts
        procs: args.list("procs", &[2])[0],
        dists: args.list("dist", &[Dist::Uniform, Dist::Sparse]),
        kinds,
        reps: args.list("reps", &[5])[0],
        only: args.opt::<String>("only").map(|_| args.list("only", &[])),
        router: args.get("router", Router::TwoPhase),
        json: args.flag("json"),
    };
    if opts.procs == 0 || opts.reps == 0 {
        args.fail("--procs and --reps must be at least 1");
    }
    opts
}

/// Times `sort` on a fresh copy of `input` `reps` times; returns the median
/// and whether every output was right.
fn time_peer<T: Item>(
    input: &[T],
    reps: usize,
    check: &dyn Fn(&[T]) -> bool,
    sort: &dyn Fn(&mut Vec<T>),
) -> (f64, bool) {
    let mut ok = true;
    let times = (0..reps)
        .map(|_| {
            let mut v = input.to_vec();
            let t = Instant::now();
            sort(&mut v);
            let s = t.elapsed().as_secs_f64();
            ok &= check(&v);
            s
        })
        .collect();
    (upper_median(times), ok)
}

/// How the benchmark calls this project's sort.
#[derive(Clone, Copy, PartialEq)]
enum Use {
    /// A fresh runtime per repetition, registering the sorter inside the
    /// timed region (`sort_vec_by_key` on a new `RadixSorter`).
    OneShot,
    /// One sorter for every repetition, sorting the processor's `Vec`
    /// (`sort_vec_by_key`: buffers are swapped, not copied).
    Reused,
    /// One sorter for every repetition, sorting a slice in place
    /// (`sort_by_key`: the result must land in the caller's memory).
    ReusedSlice,
    /// No sort: a fresh runtime per repetition, in which each processor
    /// allocates and maps the n/p fresh elements a one-shot sort receives
    /// into (the memory a stable sort out of place cannot do without).
    FreshPages,
}

/// This project's sort at p processors, called as `how` says. Times are
/// the slowest processor's.
fn time_bsp<T: Item>(
    input: &[T],
    args: &Opts,
    how: Use,
    check: &dyn Fn(&[T]) -> bool,
) -> (f64, bool) {
    let reuse = matches!(how, Use::Reused | Use::ReusedSlice);
    let p = args.procs;
    let rt = Runtime::from_env().with_procs(p).with_router(args.router);
    let one_run = |reps: usize| {
        rt.run(|ctx| {
            let range = block_range(ctx.pid(), p, input.len());
            let mut data = input[range.clone()].to_vec();
            // A kept sorter is registered once, before the timed region;
            // a one-shot one inside it, and kept past it, as a kept one is.
            let mut sorter = reuse.then(|| RadixSorter::new(ctx, data.len()));
            let mut times = Vec::new();
            for rep in 0..reps {
                if rep > 0 {
                    data.copy_from_slice(&input[range.clone()]);
                }
                ctx.sync();
                let t = Instant::now();
                match how {
                    Use::OneShot => {
                        let one_shot = sorter.insert(RadixSorter::new(ctx, data.len()));
                        one_shot.sort_vec_by_key(ctx, &mut data, |x| x.sort_key());
                    }
                    Use::Reused => {
                        let kept = sorter.as_mut().expect("a kept sorter");
                        kept.sort_vec_by_key(ctx, &mut data, |x| x.sort_key());
                    }
                    Use::ReusedSlice => {
                        let kept = sorter.as_mut().expect("a kept sorter");
                        kept.sort_by_key(ctx, &mut data, |x| x.sort_key());
                    }
                    Use::FreshPages => {
                        let mut fresh = vec![T::zeroed(); data.len()];
                        pages::populate(&mut fresh);
                        std::hint::black_box(&mut fresh);
                    }
                }
                times.push(t.elapsed().as_secs_f64());
            }
            all_reduce(ctx, &mut times, &Max); // the slowest processor's
            (times, data)
        })
        .expect("bsp run failed")
        .into_vec()
    };
    // A kept sorter sorts every repetition in one run; otherwise each
    // repetition has a fresh runtime (so registrations do not pile up),
    // and its output is checked and freed before the next, as the peers'
    // are in `time_peer`: keeping every repetition's output would leave
    // the next one only memory that the process never used.
    let (runs, reps_per_run) = if reuse {
        (1, args.reps)
    } else {
        (args.reps, 1)
    };
    let mut per_rep = Vec::new();
    let mut ok = true;
    for _ in 0..runs {
        let outs = one_run(reps_per_run);
        // Every processor holds the slowest times (all_reduce above).
        per_rep.extend_from_slice(&outs[0].0);
        if how != Use::FreshPages {
            let all: Vec<T> = outs.into_iter().flat_map(|(_, d)| d).collect();
            ok &= check(&all);
        }
    }
    (upper_median(per_rep), ok)
}

fn run_case<T>(
    args: &Opts,
    kind: &str,
    dist: Dist,
    n: usize,
    pool: &rayon::ThreadPool,
    progress: &Progress,
) -> bool
where
    T: Item + rdst::RadixKey + Radixable<u32>,
{
    let keys: Vec<u32> = (0..args.procs)
        .flat_map(|q| dist.keys_u32(q, args.procs, n))
        .collect();
    let input: Vec<T> = keys
        .iter()
        .enumerate()
        .map(|(i, &k)| T::make(k, i))
        .collect();
    let mut reference = input.clone();
    reference.sort_by_key(|x| x.sort_key());
    let stable_ok = |v: &[T]| {
        v.len() == reference.len()
            && v.iter()
                .zip(&reference)
                .all(|(a, b)| bytemuck::bytes_of(a) == bytemuck::bytes_of(b))
    };
    let keys_ok = |v: &[T]| {
        v.len() == reference.len()
            && v.iter()
                .zip(&reference)
                .all(|(a, b)| a.sort_key() == b.sort_key())
    };
    let p = args.procs;
    type Peer<'a, T> = (&'a str, bool, Box<dyn Fn(&mut Vec<T>) + 'a>);
    let peers: Vec<Peer<'_, T>> = vec![
        (
            "rdst",
            false,
            Box::new(|v| pool.install(|| rdst::RadixSort::radix_sort_unstable(v))),
        ),
        (
            "voracious_mt",
            false,
            Box::new(|v| pool.install(|| v.voracious_mt_sort(p))),
        ),
        (
            "voracious_stable",
            true,
            Box::new(|v| v.voracious_stable_sort()),
        ),
        (
            "radsort",
            true,
            Box::new(|v| radsort::sort_by_key(v, |x| x.sort_key())),
        ),
        (
            "rayon_par_sort",
            true,
            Box::new(|v| pool.install(|| v.par_sort_by_key(|x| x.sort_key()))),
        ),
        (
            "rayon_par_sort_unstable",
            false,
            Box::new(|v| pool.install(|| v.par_sort_unstable_by_key(|x| x.sort_key()))),
        ),
        (
            "std_sort",
            true,
            Box::new(|v| v.sort_by_key(|x| x.sort_key())),
        ),
        (
            "std_sort_unstable",
            false,
            Box::new(|v| v.sort_unstable_by_key(|x| x.sort_key())),
        ),
    ];
    let wanted = |name: &str| {
        args.only
            .as_ref()
            .is_none_or(|o| o.iter().any(|w| w == name))
    };
    let mut rows: Vec<(String, f64, bool)> = Vec::new();
    let ours = [
        ("bsp", Use::OneShot),
        ("bsp_reused", Use::Reused),
        ("bsp_slice", Use::ReusedSlice),
        ("fresh_pages", Use::FreshPages),
    ];
    for (name, how) in ours {
        if wanted(name) {
            progress.step(format!("{kind} [{dist}] n = {n}: {name}"));
            let (s, ok) = time_bsp(&input, args, how, &stable_ok);
            rows.push((name.to_owned(), s, ok));
        }
    }
    for (name, stable, sort) in &peers {
        if wanted(name) {
            let check: &dyn Fn(&[T]) -> bool = if *stable { &stable_ok } else { &keys_ok };
            progress.step(format!("{kind} [{dist}] n = {n}: {name}"));
            let (s, ok) = time_peer(&input, args.reps, check, sort.as_ref());
            rows.push(((*name).to_owned(), s, ok));
        }
    }
    progress.tick();
    progress.suspend(|| print_rows(args, kind, dist, n, p, &rows));
    rows.iter().all(|r| r.2)
}

/// Prints one case's table (or JSON lines).
fn print_rows(
    args: &Opts,
    kind: &str,
    dist: Dist,
    n: usize,
    p: usize,
    rows: &[(String, f64, bool)],
) {
    let base = rows.first().map_or(f64::NAN, |r| r.1);
    if !args.json {
        println!(
            "\n{kind}, dist [{dist}], n = {n}, p = {p}, median of {}",
            args.reps
        );
        println!(
            "{:<26}{:>12}{:>14}{:>12}",
            "sorter", "seconds", "Mkeys/s", "vs bsp"
        );
    }
    for (name, s, ok) in rows {
        let rate = n as f64 / s;
        if args.json {
            println!(
                "{}",
                json!({
                    "sorter": name,
                    "kind": kind,
                    "dist": dist.to_string(),
                    "n": n,
                    "procs": p,
                    "seconds": s,
                    "keys_per_second": rate,
                    "time_vs_bsp": s / base,
                    "correct": ok,
                })
            );
        } else {
            let flag = if *ok { "" } else { "  WRONG OUTPUT" };
            println!(
                "{name:<26}{s:>12.4}{:>14.1}{:>11.2}x{flag}",
                rate / 1e6,
                s / base
            );
        }
    }
}

fn main() -> ExitCode {
    let args = parse_opts();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.procs)
        .build()
        .expect("cannot build the rayon pool");
    let mut all_ok = true;
    let cases = args.kinds.len() * args.dists.len() * args.ns.len();
    let progress = Progress::new(cases as u64, "bench_sort", args.json);
    for kind in &args.kinds {
        for &dist in &args.dists {
            for &n in &args.ns {
                all_ok &= match kind.as_str() {
                    "keys" => run_case::<u32>(&args, kind, dist, n, &pool, &progress),
                    _ => run_case::<Rec>(&args, kind, dist, n, &pool, &progress),
                };
            }
        }
    }
    progress.finish();
    if all_ok {
        ExitCode::SUCCESS
    } else {
        eprintln!("bench_sort: some sorter produced a wrong output");
        ExitCode::FAILURE
    }
}
