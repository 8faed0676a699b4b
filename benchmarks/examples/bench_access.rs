//! Random access write (sum) with hot spots: this crate's bucket-stretching
//! RAW against the naive RAW (every write straight to its owner), on
//! uniform, zipf and single-element destinations, side by side.
//!
//! ```text
//! cargo run --release -p bsp-benchmarks --example bench_access -- [--n N] [--procs P[,P...]] [--reps R] [--json]
//! ```
//!
//! Each configuration runs both variants on the same data `--reps` times
//! (alternating) and reports the median seconds (the slowest processor's
//! time of each run) and the median on-CPU seconds of all processors
//! together (Linux; what a loaded machine does not distort as much). It
//! checks itself: both variants must produce the same array, whose sum
//! must be n; otherwise it exits with status 1.

#[path = "../../examples/common/mod.rs"]
mod common;

use std::process::ExitCode;
use std::time::Instant;

use bsp::algos::{self, Block, Combine, Max, Sum};
use bsp::prelude::*;
use common::{upper_median, Args, Progress};
use serde_json::json;

const HELP: &str = "bench_access: RAW (sum) with hot spots, bucket stretching vs naive

usage: bench_access [--n N] [--procs P[,P...]] [--reps R] [--json]

  --n N        number of writes and array length (default 16777216 = 2^24)
  --procs P    processor counts, comma separated (default 2,8; under MPI
               the mpirun size is used)
  --reps R     repetitions per variant, median reported (default 3)
  --json       one JSON object per line instead of a table
  --help       this text";

/// What the benchmark needs from the command line.
struct Opts {
    n: usize,
    procs: Vec<usize>,
    reps: usize,
    json: bool,
}

fn parse_opts() -> Opts {
    let args = Args::parse(HELP, &["json"]);
    args.reject_unknown(&["n", "procs", "reps", "json"]);
    let procs = args.list("procs", &[2, 8]);
    if procs.contains(&0) {
        args.fail("--procs: need at least one processor");
    }
    Opts {
        n: args.get("n", 1 << 24),
        procs,
        reps: args.get("reps", 3usize).max(1),
        json: args.flag("json"),
    }
}

/// splitmix64
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Destination of global write `i` among `n` elements.
fn destination(dist: &str, i: u64, n: u64) -> usize {
    let r = mix(i);
    let g = match dist {
        "uniform" => r % n,
        // Zipf with exponent 1: log-uniform ranks, scattered over the array.
        "zipf" => {
            let u = (r >> 11) as f64 / (1u64 << 53) as f64;
            let rank = ((n as f64 + 1.0).powf(u) as u64)
                .saturating_sub(1)
                .min(n - 1);
            rank.wrapping_mul(0x9e37_79b9_7f4a_7c15 | 1) % n
        }
        _ => n / 2,
    };
    g as usize
}

/// Seconds this thread has spent on a CPU (the first field of Linux's
/// `/proc/thread-self/schedstat`, in ns); 0 elsewhere.
fn on_cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let ns = stat.split_whitespace().next().and_then(|f| f.parse().ok());
    ns.unwrap_or(0.0) / 1e9
}

/// Median seconds of one variant: wall (slowest processor) and on-CPU
/// (all processors).
#[derive(Clone, Copy)]
struct Timing {
    wall: f64,
    cpu: f64,
}

/// Runs both variants `reps` times on `p` processors; returns the median
/// timings of (bsp, naive) (`None` on MPI ranks other than 0), or an error
/// if the results are wrong.
fn measure(
    p: usize,
    n: usize,
    dist: &str,
    reps: usize,
) -> Result<Option<(Timing, Timing)>, String> {
    let out = Runtime::from_env()
        .with_procs(p)
        .run(|ctx| {
            let blocks = Block::new(n, ctx.nprocs());
            let mine = blocks.range(ctx.pid());
            let index: Vec<usize> = mine
                .clone()
                .map(|i| destination(dist, i as u64, n as u64))
                .collect();
            let values = vec![1u64; index.len()];
            let mut times = (Vec::new(), Vec::new());
            let mut cpu = (Vec::new(), Vec::new());
            let mut results = (Vec::new(), Vec::new());
            for _ in 0..reps {
                for naive in [false, true] {
                    let mut a = vec![0u64; mine.len()];
                    ctx.sync();
                    let (start, cpu_start) = (Instant::now(), on_cpu());
                    if naive {
                        algos::variants::raw_direct(ctx, &mut a, n, &index, &values, &Combine(Sum))
                    } else {
                        algos::raw(ctx, &mut a, n, &index, &values, &Combine(Sum))
                    }
                    .expect("sum cannot conflict");
                    let mut t = [start.elapsed().as_secs_f64()];
                    let mut c = [on_cpu() - cpu_start];
                    algos::all_reduce(ctx, &mut t, &Max);
                    algos::all_reduce(ctx, &mut c, &Sum);
                    if naive {
                        times.1.push(t[0]);
                        cpu.1.push(c[0]);
                        results.1 = a;
                    } else {
                        times.0.push(t[0]);
                        cpu.0.push(c[0]);
                        results.0 = a;
                    }
                }
            }
            let mut check = [
                u64::from(results.0 != results.1),
                results.0.iter().sum::<u64>(),
            ];
            algos::all_reduce(ctx, &mut check, &Sum);
            (ctx.pid() == 0).then(|| {
                if check[0] != 0 {
                    Err(format!("p = {p}, {dist}: bsp and naive RAW disagree"))
                } else if check[1] != n as u64 {
                    Err(format!(
                        "p = {p}, {dist}: sum of the array is {} instead of {n}",
                        check[1]
                    ))
                } else {
                    let timing = |wall, cpu| Timing {
                        wall: upper_median(wall),
                        cpu: upper_median(cpu),
                    };
                    Ok((timing(times.0, cpu.0), timing(times.1, cpu.1)))
                }
            })
        })
        .map_err(|e| e.to_string())?;
    out.into_iter().flatten().next().transpose()
}

fn main() -> ExitCode {
    let args = parse_opts();
    let header = || {
        println!(
            "RAW (sum), n = {} writes into {} elements, median of {}",
            args.n, args.n, args.reps
        );
        println!(
            "{:>5} {:>8} {:>8} {:>8} {:>10} {:>12} {:>10} {:>10} {:>14}",
            "procs",
            "dist",
            "bsp s",
            "naive s",
            "naive/bsp",
            "bsp/uniform",
            "bsp cpu s",
            "naive cpu",
            "bsp cpu/unif."
        );
    };
    let mut done = Vec::new();
    let progress = Progress::new(3 * args.procs.len() as u64, "bench_access", args.json);
    for &asked in &args.procs {
        // Under MPI every count is the mpirun size: measure it once.
        let p = Runtime::from_env().with_procs(asked).nprocs();
        if done.contains(&p) {
            continue;
        }
        done.push(p);
        let mut uniform = None;
        for dist in ["uniform", "zipf", "single"] {
            progress.step(format!("p = {p}, {dist}"));
            let measured = measure(p, args.n, dist, args.reps);
            progress.tick();
            let (bsp, naive) = match measured {
                Ok(Some(t)) => t,
                Ok(None) => continue, // not rank 0 under MPI
                Err(e) => {
                    eprintln!("bench_access: FAILED: {e}");
                    return ExitCode::FAILURE;
                }
            };
            progress.suspend(|| {
                if done.len() == 1 && uniform.is_none() && !args.json {
                    header();
                }
                let base = *uniform.get_or_insert(bsp);
                if args.json {
                    for (variant, t) in [("bsp", bsp), ("naive", naive)] {
                        println!(
                            "{}",
                            json!({
                                "variant": variant,
                                "dist": dist,
                                "procs": p,
                                "n": args.n,
                                "seconds": t.wall,
                                "cpu_seconds": t.cpu,
                                "verified": true,
                            })
                        );
                    }
                } else {
                    println!(
                    "{p:>5} {dist:>8} {:>8.4} {:>8.4} {:>10.2} {:>12.2} {:>10.4} {:>10.4} {:>14.2}",
                    bsp.wall,
                    naive.wall,
                    naive.wall / bsp.wall,
                    bsp.wall / base.wall,
                    bsp.cpu,
                    naive.cpu,
                    bsp.cpu / base.cpu
                );
                }
            });
        }
    }
    progress.finish();
    ExitCode::SUCCESS
}
