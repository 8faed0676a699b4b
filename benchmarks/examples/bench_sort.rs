//! Side-by-side sort benchmark: this project's distributed radix sort
//! (threads transport) against the sorters a Rust user would pick instead,
//! on the same inputs in one run. The repetitions are interleaved: each
//! round times every sorter once (starting one further along the list
//! each round), and a row's ratio to the base row (`bsp`, or `--base`) is
//! the median of its ratios within a round, so that a shared host's drift
//! slows both sides of a ratio alike. Times are medians over the rounds.
//! With `--isolate`, each repetition runs in a process of its own (this
//! program again), so that what one row costs does not depend on the
//! memory that the rows before it freed. Outputs are checked in O(n):
//! keys in order (records of equal keys in input order for the stable
//! sorts) and the same elements as the input, by an order-free digest.
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
  --reps R            rounds, each timing every sorter once; the medians of the
                      times and of the per-round ratios are reported (default 5)
  --base NAME         the row the ratios are against (default bsp, or the
                      first row where bsp does not run)
  --only NAME[,..]    run only these sorters (bsp: one-shot; bsp_reused: a kept
                      sorter on a Vec; bsp_slice: a kept sorter on a slice;
                      fresh_pages: not a sort, the time to map n/p fresh
                      elements per processor as a one-shot sort must, so that
                      bsp ~ bsp_reused + fresh_pages can be read in one run)
  --router two-phase|direct   router for bsp (default two-phase)
  --stores auto|lines|plain   how bsp's scatters store (default auto)
  --isolate           time every repetition of every sorter in a process of its
                      own (this program run again), so that no row's memory
                      depends on what the rows before it freed (see BENCHMARKS.md)
  --json              one JSON object per line instead of tables
  --help              this text";

/// The flag with which `--isolate` runs this program again for one
/// repetition of one sorter (`--only NAME`, one case): it prints the
/// seconds and whether the output was right, as `CHILD_LINE seconds ok`.
const CHILD_FLAG: &str = "child";
/// The start of a child's answer on its standard output.
const CHILD_LINE: &str = "bench_sort child:";

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
    /// The whole element as one word, ordered as a stable sort orders
    /// the inputs that `make` builds: by key, then by input index.
    fn word(&self) -> u64;
}

impl Item for u32 {
    fn sort_key(&self) -> u32 {
        *self
    }
    fn make(key: u32, _: usize) -> Self {
        key
    }
    fn word(&self) -> u64 {
        u64::from(*self)
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
    fn word(&self) -> u64 {
        u64::from(self.key) << 32 | u64::from(self.val)
    }
}

/// What any sort of an input must keep: its length and an order-free
/// digest of its elements (the sum of a mix of each element's word).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Digest {
    len: usize,
    sum: u64,
}

impl Digest {
    fn of<T: Item>(parts: &[&[T]]) -> Digest {
        let elements = parts.iter().flat_map(|part| part.iter());
        Digest {
            len: parts.iter().map(|part| part.len()).sum(),
            sum: elements.fold(0, |sum: u64, x| sum.wrapping_add(mix(x.word()))),
        }
    }
}

/// A 64-bit mix (splitmix64's finaliser): equal sums of mixed words from
/// two different multisets are a 2^-64 chance, not a pattern of inputs.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Whether `parts`, read in order, are a sort of the input of digest
/// `input`: the same elements, keys never decreasing, and where `stable`
/// the elements of equal keys in input order (their words increase).
/// O(n), without a reference sort.
fn sorted_from<T: Item>(parts: &[&[T]], input: Digest, stable: bool) -> bool {
    let rank = |x: &T| {
        if stable {
            x.word()
        } else {
            u64::from(x.sort_key())
        }
    };
    let mut ranks = parts.iter().flat_map(|part| part.iter()).map(rank);
    let first = ranks.next().unwrap_or(0);
    let in_order = ranks
        .try_fold(first, |prev, r| (r >= prev).then_some(r))
        .is_some();
    in_order && Digest::of(parts) == input
}

/// What the benchmark needs from the command line.
struct Opts {
    ns: Vec<usize>,
    procs: usize,
    dists: Vec<Dist>,
    kinds: Vec<String>,
    reps: usize,
    only: Option<Vec<String>>,
    /// `--base`, where given.
    base: Option<String>,
    router: Router,
    json: bool,
    isolate: bool,
    /// Where this run is one repetition for `--isolate`.
    child: bool,
    /// `--router` and `--stores` as given, for the children.
    passed_on: Vec<String>,
}

fn parse_opts() -> Opts {
    let args = Args::parse(HELP, &["json", "isolate", CHILD_FLAG]);
    args.reject_unknown(&[
        "n", "procs", "dist", "kind", "reps", "only", "base", "router", "stores", "json",
        "isolate", CHILD_FLAG,
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
        base: args.opt::<String>("base"),
        router: args.get("router", Router::TwoPhase),
        json: args.flag("json"),
        isolate: args.flag("isolate"),
        child: args.flag(CHILD_FLAG),
        passed_on: ["router", "stores"]
            .into_iter()
            .filter_map(|name| {
                let value = args.opt::<String>(name)?;
                Some([format!("--{name}"), value])
            })
            .flatten()
            .collect(),
    };
    if opts.procs == 0 || opts.reps == 0 {
        args.fail("--procs and --reps must be at least 1");
    }
    if opts.child && opts.only.as_ref().is_none_or(|only| only.len() != 1) {
        args.fail("--child runs one sorter: give it with --only");
    }
    opts
}

/// Times `sort` once on a fresh copy of `input`; returns the seconds and
/// whether the output was right (checked, and freed, untimed). `check`
/// says whether the output, in parts, is right.
fn time_peer_once<T: Item>(
    input: &[T],
    check: &dyn Fn(&[&[T]]) -> bool,
    sort: &dyn Fn(&mut Vec<T>),
) -> (f64, bool) {
    let mut v = input.to_vec();
    let t = Instant::now();
    sort(&mut v);
    let s = t.elapsed().as_secs_f64();
    (s, check(&[&v]))
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

/// This project's sort at p processors, called as `how` says, once, in a
/// runtime of its own; returns the slowest processor's seconds and whether
/// the output was right (checked, and freed, untimed, as the peers' are in
/// [`time_peer_once`]: keeping outputs would leave the next repetition
/// only memory the process never used).
///
/// A kept sorter is registered and sorts twice before the timed sort, so
/// that its buffers are mapped as a kept sorter's are from then on (its
/// first sort of a `Vec` maps only half its receive buffer, its second
/// the rest); a one-shot sorter is registered inside the timed region.
fn time_bsp_once<T: Item>(
    input: &[T],
    args: &Opts,
    how: Use,
    check: &dyn Fn(&[&[T]]) -> bool,
) -> (f64, bool) {
    let reuse = matches!(how, Use::Reused | Use::ReusedSlice);
    let p = args.procs;
    let rt = Runtime::from_env().with_procs(p).with_router(args.router);
    let outs = rt
        .run(|ctx| {
            let range = block_range(ctx.pid(), p, input.len());
            let mut data = input[range.clone()].to_vec();
            let mut sorter = None;
            if reuse {
                let kept = sorter.insert(RadixSorter::new(ctx, data.len()));
                for _ in 0..2 {
                    sort_as(how, kept, ctx, &mut data);
                    data.copy_from_slice(&input[range.clone()]);
                }
            }
            let mut mapped = None;
            ctx.sync();
            let t = Instant::now();
            match how {
                Use::FreshPages => {
                    // Freed after the clock stops, as a sort's buffers are.
                    // Zeroed as the sort's engine makes its buffers.
                    let fresh = mapped.insert(bytemuck::zeroed_vec::<T>(data.len()));
                    pages::populate(fresh);
                    std::hint::black_box(fresh);
                }
                Use::OneShot => {
                    let one_shot = sorter.insert(RadixSorter::new(ctx, data.len()));
                    sort_as(how, one_shot, ctx, &mut data);
                }
                Use::Reused | Use::ReusedSlice => {
                    let kept = sorter.as_mut().expect("a kept sorter");
                    sort_as(how, kept, ctx, &mut data);
                }
            }
            let mut time = [t.elapsed().as_secs_f64()];
            all_reduce(ctx, &mut time, &Max); // the slowest processor's
            (time[0], data)
        })
        .expect("bsp run failed")
        .into_vec();
    // Every processor holds the slowest time. The parts are checked where
    // they lie, in pid order, without a copy of the whole output.
    let seconds = outs[0].0;
    let parts: Vec<&[T]> = outs.iter().map(|(_, part)| &part[..]).collect();
    (seconds, how == Use::FreshPages || check(&parts))
}

/// Sorts `data` with `sorter` as `how` says: a `Vec` whose buffer the
/// sorter borrows, or a slice (`ReusedSlice`).
fn sort_as<T: Item>(how: Use, sorter: &mut RadixSorter<T>, ctx: &mut Ctx, data: &mut Vec<T>) {
    match how {
        Use::ReusedSlice => sorter.sort_by_key(ctx, data, |x| x.sort_key()),
        _ => sorter.sort_vec_by_key(ctx, data, |x| x.sort_key()),
    };
}

/// One row of a case: its name and one timed repetition (seconds, and
/// whether the output was right).
struct Contender<'a> {
    name: &'a str,
    once: Box<dyn Fn() -> (f64, bool) + 'a>,
}

/// A row's result: the median seconds, the median over rounds of its
/// time over the base row's in the same round, and whether every output
/// was right.
struct Row {
    name: String,
    seconds: f64,
    vs_base: f64,
    ok: bool,
}

/// Runs `reps` rounds of the contenders, each round one repetition of
/// every contender, starting one further along the list each round: a
/// host whose speed drifts during the run then slows every row alike,
/// and a row's ratio to the `base` row is taken within each round.
fn interleave(
    contenders: &[Contender<'_>],
    base: usize,
    reps: usize,
    progress: &dyn Fn(&str),
) -> Vec<Row> {
    let k = contenders.len();
    let mut times = vec![Vec::with_capacity(reps); k];
    let mut ok = vec![true; k];
    for round in 0..reps {
        for j in 0..k {
            let c = (round + j) % k;
            progress(contenders[c].name);
            let (s, good) = (contenders[c].once)();
            times[c].push(s);
            ok[c] &= good;
        }
    }
    (0..k)
        .map(|c| Row {
            name: contenders[c].name.to_owned(),
            seconds: upper_median(times[c].clone()),
            vs_base: upper_median((0..reps).map(|r| times[c][r] / times[base][r]).collect()),
            ok: ok[c],
        })
        .collect()
}

/// One repetition of sorter `name` on case (`kind`, `dist`, `n`), run
/// by this program in a process of its own (`--isolate`): the seconds
/// and whether the output was right, as the child reports them.
fn time_in_child(args: &Opts, (kind, dist, n): (&str, Dist, usize), name: &str) -> (f64, bool) {
    let exe = std::env::current_exe().expect("bench_sort: cannot find its own executable");
    let output = std::process::Command::new(exe)
        .args(["--n", &n.to_string(), "--procs", &args.procs.to_string()])
        .args(["--dist", &dist.to_string(), "--kind", kind, "--only", name])
        .args(["--reps", "1", "--json", &format!("--{CHILD_FLAG}")])
        .args(&args.passed_on)
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("bench_sort: cannot run a child");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let answer = stdout.lines().find_map(|line| {
        let mut words = line.strip_prefix(CHILD_LINE)?.split_whitespace();
        Some((words.next()?.parse().ok()?, words.next()?.parse().ok()?))
    });
    answer.unwrap_or_else(|| {
        eprintln!(
            "bench_sort: the child for {name} ({kind} [{dist}], n = {n}) gave no answer ({})",
            output.status
        );
        std::process::exit(1)
    })
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
    // Under `--isolate` the children build the input, each its own.
    let input: Vec<T> = if args.isolate {
        Vec::new()
    } else {
        (0..args.procs)
            .flat_map(|q| dist.keys_u32(q, args.procs, n))
            .enumerate()
            .map(|(i, k)| T::make(k, i))
            .collect()
    };
    let digest = Digest::of(&[&input]);
    let stable_ok = move |parts: &[&[T]]| sorted_from(parts, digest, true);
    let keys_ok = move |parts: &[&[T]]| sorted_from(parts, digest, false);
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
    let ours = [
        ("bsp", Use::OneShot),
        ("bsp_reused", Use::Reused),
        ("bsp_slice", Use::ReusedSlice),
        ("fresh_pages", Use::FreshPages),
    ];
    let (input, stable_ok, keys_ok) = (&input, &stable_ok, &keys_ok);
    let mut contenders: Vec<Contender<'_>> = Vec::new();
    for (name, how) in ours.into_iter().filter(|(name, _)| wanted(name)) {
        contenders.push(Contender {
            name,
            once: Box::new(move || time_bsp_once(input, args, how, stable_ok)),
        });
    }
    for (name, stable, sort) in peers.iter().filter(|(name, _, _)| wanted(name)) {
        let check: &dyn Fn(&[&[T]]) -> bool = if *stable { stable_ok } else { keys_ok };
        contenders.push(Contender {
            name,
            once: Box::new(move || time_peer_once(input, check, sort.as_ref())),
        });
    }
    if args.child {
        // One repetition of the one sorter `--only` names, for a parent.
        let (seconds, ok) = contenders.first().map_or((0.0, false), |c| (c.once)());
        println!("{CHILD_LINE} {seconds} {ok}");
        return ok;
    }
    if args.isolate {
        for c in &mut contenders {
            let name = c.name;
            c.once = Box::new(move || time_in_child(args, (kind, dist, n), name));
        }
    }
    let named = |name: &str| contenders.iter().position(|c| c.name == name);
    let base = match &args.base {
        Some(name) => named(name).unwrap_or_else(|| {
            eprintln!("bench_sort: --base {name}: no sorter of that name runs (see --only)");
            std::process::exit(2)
        }),
        None => named("bsp").unwrap_or(0),
    };
    let rows = interleave(&contenders, base, args.reps, &|name| {
        progress.step(format!("{kind} [{dist}] n = {n}: {name}"));
    });
    progress.tick();
    let base = rows.get(base).map_or("", |r| r.name.as_str());
    progress.suspend(|| print_rows(args, (kind, dist, n, p), base, &rows));
    rows.iter().all(|r| r.ok)
}

/// Prints one case's table (or JSON lines): each row's median time and
/// the median of its per-round ratios to the `base` row's time.
fn print_rows(
    args: &Opts,
    (kind, dist, n, p): (&str, Dist, usize, usize),
    base: &str,
    rows: &[Row],
) {
    if !args.json {
        println!(
            "\n{kind}, dist [{dist}], n = {n}, p = {p}, median of {} interleaved rounds",
            args.reps
        );
        println!(
            "{:<26}{:>12}{:>14}{:>14}",
            "sorter",
            "seconds",
            "Mkeys/s",
            format!("vs {base}")
        );
    }
    for row in rows {
        let rate = n as f64 / row.seconds;
        if args.json {
            println!(
                "{}",
                json!({
                    "sorter": row.name,
                    "kind": kind,
                    "dist": dist.to_string(),
                    "n": n,
                    "procs": p,
                    "seconds": row.seconds,
                    "keys_per_second": rate,
                    "base": base,
                    "time_vs_base": row.vs_base,
                    "correct": row.ok,
                })
            );
        } else {
            let flag = if row.ok { "" } else { "  WRONG OUTPUT" };
            println!(
                "{:<26}{:>12.4}{:>14.1}{:>13.2}x{flag}",
                row.name,
                row.seconds,
                rate / 1e6,
                row.vs_base
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
