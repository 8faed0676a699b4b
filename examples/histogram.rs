//! Histogram of u32 values into K bins with `bsp_algos::histogram` (a
//! random access write with `+`), checked against a sequential count, and
//! timed against it.
//!
//! ```text
//! cargo run --release --example histogram -- [--n N] [--bins K] [--dist uniform|zipf|single] [--procs P] [--json]
//! ```
//!
//! Prints the seconds and elements/s of the parallel histogram and of the
//! sequential single-threaded count (same data, same bin function, same
//! loop, repetitions interleaved, medians), the parallel throughput per
//! processor relative to the sequential one, and the same ratio for each
//! processor's local count alone (what the machine allows with no
//! reduction at all). Exits with status 1 if the counts differ.

mod common;

use std::process::ExitCode;
use std::time::Instant;

use bsp::algos::{self, Max};
use bsp::prelude::*;
use common::{mix, ran, upper_median, Args, Progress};
use serde_json::json;

const HELP: &str = "histogram: counts of u32 values into K bins, checked against a sequential count

usage: histogram [--n N] [--bins K] [--dist uniform|zipf|single] [--procs P] [--reps R] [--json]

  --n N        number of values (default 67108864 = 2^26)
  --bins K     number of bins, at least 1 (default 256)
  --dist D     uniform, zipf (exponent 1) or single (all in one bin); default uniform
  --procs P    processors (default: BSP_PROCS or the number of cores; ignored under MPI)
  --reps R     repetitions, median reported (default 9)
  --json       one JSON object instead of text
  --help       this text";

/// What the benchmark needs from the command line.
struct Opts {
    n: usize,
    bins: usize,
    dist: String,
    reps: usize,
    json: bool,
}

fn parse_opts(args: &Args) -> Opts {
    args.reject_unknown(&["n", "bins", "dist", "procs", "reps", "json"]);
    let opts = Opts {
        n: args.get("n", 1 << 26),
        bins: args.get("bins", 256),
        dist: args.get("dist", "uniform".to_owned()),
        reps: args.get("reps", 9usize).max(1),
        json: args.flag("json"),
    };
    if opts.bins == 0 {
        args.fail("--bins must be at least 1");
    }
    if !["uniform", "zipf", "single"].contains(&opts.dist.as_str()) {
        args.fail(&format!(
            "--dist: `{}` is not uniform, zipf or single",
            opts.dist
        ));
    }
    opts
}

/// Value i of the global input (the same whatever p).
fn value(dist: &str, i: u64) -> u32 {
    let z = mix(i);
    match dist {
        "uniform" => z as u32,
        // log-uniform over 1..2^32: value v has probability ~ 1/v
        "zipf" => 2f64.powf((z >> 11) as f64 / (1u64 << 53) as f64 * 32.0) as u32,
        _ => 12345,
    }
}

/// The bin of a value: the value scaled to 0..bins.
fn bin(v: u32, bins: usize) -> usize {
    ((v as u64 * bins as u64) >> 32) as usize
}

fn sequential(values: &[u32], bins: usize) -> Vec<u64> {
    let mut counts = vec![0u64; bins];
    for &v in values {
        counts[bin(v, bins)] += 1;
    }
    counts
}

/// Seconds this thread has spent on a CPU (Linux: the first field of
/// `/proc/thread-self/schedstat`); 0 where that is unavailable.
fn on_cpu() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |ns| ns / 1e9)
}

/// Wall time and time on a CPU.
#[derive(Clone, Copy, Default)]
struct Seconds {
    wall: f64,
    cpu: f64,
}

impl Seconds {
    /// The median of each.
    fn median(all: &[Seconds]) -> Seconds {
        Seconds {
            wall: upper_median(all.iter().map(|s| s.wall).collect()),
            cpu: upper_median(all.iter().map(|s| s.cpu).collect()),
        }
    }
}

struct Clock {
    wall: Instant,
    cpu: f64,
}

impl Clock {
    fn start() -> Self {
        Clock {
            wall: Instant::now(),
            cpu: on_cpu(),
        }
    }

    /// The slowest processor's seconds since the start (this processor's
    /// alone if `mine_only`); collective.
    fn slowest(self, ctx: &mut Ctx, mine_only: bool) -> Seconds {
        let mut t = [self.wall.elapsed().as_secs_f64(), on_cpu() - self.cpu];
        if !mine_only {
            algos::all_reduce(ctx, &mut t, &Max);
        }
        Seconds {
            wall: t[0],
            cpu: t[1],
        }
    }
}

fn main() -> ExitCode {
    let cmdline = Args::parse(HELP, &["json"]);
    let args = parse_opts(&cmdline);
    let (n, bins, dist) = (args.n, args.bins, args.dist.as_str());
    let progress = Progress::new(args.reps as u64, "histogram", args.json);
    let result = cmdline.runtime().run(|ctx| {
        let (p, me) = (ctx.nprocs(), ctx.pid());
        let blocks = algos::Block::new(n, p);
        let mine: Vec<u32> = blocks.range(me).map(|i| value(dist, i as u64)).collect();
        // The sequential peer's input: the same values, on processor 0.
        let values: Vec<u32> = if me == 0 {
            (0..n as u64).map(|i| value(dist, i)).collect()
        } else {
            Vec::new()
        };
        // Each repetition times three things, each from a barrier: the
        // parallel histogram and the local count alone (the slowest
        // processor's wall time), and the sequential count of all n values
        // on processor 0 while the others wait. All three count with the
        // same bin function and the same loop. The order rotates from one
        // repetition to the next, so that none always runs right after
        // the processors slept (the load of a shared machine then hits
        // all three alike).
        let mut times: [Vec<Seconds>; 3] = Default::default(); // bsp, local, sequential
        let (mut counts, mut want) = (Vec::new(), Vec::new());
        for rep in 0..args.reps {
            for which in (0..3).map(|i| (i + rep) % 3) {
                ctx.sync();
                let clock = Clock::start();
                match which {
                    0 => counts = algos::histogram(ctx, &mine, bins, |&v| bin(v, bins)),
                    1 => drop(std::hint::black_box(sequential(&mine, bins))),
                    _ if me == 0 => want = sequential(&values, bins),
                    _ => {}
                }
                // The sequential count is processor 0's alone.
                times[which].push(clock.slowest(ctx, which == 2));
            }
            if me == 0 {
                progress.tick();
            }
        }
        let all = algos::gather(ctx, 0, &counts);
        if me == 0 {
            progress.finish();
        }
        all.map(|parts| {
            (
                parts.concat() == want,
                times.map(|t| Seconds::median(&t)),
                p,
            )
        })
    });
    let Some((verified, [bsp, local, seq], p)) =
        ran("histogram", result).into_iter().flatten().next()
    else {
        return ExitCode::SUCCESS; // not rank 0 under MPI
    };
    let rate = n as f64 / bsp.wall;
    // Throughput per processor relative to the sequential count, in wall
    // time and in time on a CPU.
    let per_proc = |t: Seconds| (seq.wall / (p as f64 * t.wall), seq.cpu / (p as f64 * t.cpu));
    let ((wall_ratio, cpu_ratio), (local_wall, local_cpu)) = (per_proc(bsp), per_proc(local));
    if args.json {
        let json = json!({
            "n": n,
            "bins": bins,
            "dist": dist.to_string(),
            "procs": p,
            "seconds": bsp.wall,
            "elements_per_second": rate,
            "cpu_seconds": bsp.cpu,
            "local_count_seconds": local.wall,
            "sequential_seconds": seq.wall,
            "sequential_cpu_seconds": seq.cpu,
            "per_processor_vs_sequential": wall_ratio,
            "per_processor_cpu_vs_sequential": cpu_ratio,
            "local_count_per_processor_vs_sequential": local_wall,
            "verified": verified,
        });
        println!("{json}");
    } else {
        println!(
            "histogram of {n} {dist} u32 values into {bins} bins on {p} processors, median of {}",
            args.reps
        );
        println!("                     wall s    on-CPU s   elements/s (wall)");
        for (name, t) in [
            ("bsp histogram", bsp),
            ("local count only", local),
            ("sequential", seq),
        ] {
            println!(
                "  {name:<16} {:>9.4}   {:>9.4}   {:>14.0}",
                t.wall,
                t.cpu,
                n as f64 / t.wall
            );
        }
        println!(
            "  per-processor throughput / sequential: {wall_ratio:.2} wall, {cpu_ratio:.2} on-CPU"
        );
        println!(
            "  local count alone (no reduction):      {local_wall:.2} wall, {local_cpu:.2} on-CPU"
        );
        println!("  verified: {verified}");
    }
    if verified {
        ExitCode::SUCCESS
    } else {
        eprintln!("histogram: WRONG counts");
        ExitCode::FAILURE
    }
}
