//! Collectives benchmark: every variant of broadcast, reduce, all-reduce,
//! exclusive scan and the uniform all-to-all, over message sizes and
//! processor counts, measured against the time the BSP cost model
//! predicts from the machine's measured l and g (`bsp::Machine`), with
//! the variant the collective's default picks marked `*`. Also the two
//! barriers of the threads transport (central counter and binomial tree)
//! on a diffusion loop, as in the collectives chapter's barrier table.
//!
//! `bytes` is each processor's message: the buffer broadcast, the vector
//! reduced or scanned, or all p blocks of the all-to-all together. Every
//! time is the slowest processor's, from a sync to the end of the call;
//! the variants of a collective run interleaved (one timed call of each
//! per round, right after an untimed call of the same variant, in an order
//! shuffled anew each round) and each one's median over the rounds is
//! reported.
//! Every variant's result is checked.
//!
//! ```text
//! cargo run --release -p bsp-benchmarks --example bench_collectives
//! cargo run --release -p bsp-benchmarks --example bench_collectives -- --full --json
//! cargo build --release -p bsp-benchmarks --features mpi --example bench_collectives
//! mpirun -np 4 target/release/examples/bench_collectives
//! ```

#[path = "../../examples/common/mod.rs"]
mod common;

use std::time::Instant;

use bsp::algos::variants::{pick, Model};
use bsp::algos::{self, Max, Sum};
use bsp::prelude::*;
use common::{median, Args, Progress};
use serde_json::json;

const USAGE: &str = "bench_collectives: every collective variant, measured against the cost model's prediction

usage: bench_collectives [--procs 2,4,8,16] [--bytes 8,1024,65536,1048576 | --full] [--reps R]
                         [--collectives broadcast,reduce,all_reduce,exclusive_scan,all_to_all,barrier] [--json]

  --procs        processor counts (threads; under mpirun, -np decides)
  --bytes        message sizes per processor (default 8 B, 1 KiB, 64 KiB, 1 MiB)
  --full         sizes 8 B, 64 B, ... (x8) ... 16 MiB and 64 MiB
  --reps         timed calls per variant (default: 7 to 100, fewer for long messages)
  --collectives  which to measure (barrier: threads only)
  --json         one JSON object per row";

/// The collectives measured, in order.
const ALL: [&str; 6] = [
    "broadcast",
    "reduce",
    "all_reduce",
    "exclusive_scan",
    "all_to_all",
    "barrier",
];

/// One measured row.
struct Row {
    collective: &'static str,
    variant: &'static str,
    seconds: f64,
    predicted: f64,
    default: bool,
}

/// The fewest timed calls per variant by default, for the longest
/// messages. With 3, two variants that run the same superstep (the routed
/// and the 1-factor all-to-all at p = 2, 16 MiB, threads) came out 1.11 to
/// 1.44x apart in seven runs; with 15, 1.00 and 1.02x.
const MIN_REPS: usize = 7;

/// The most calls timed per variant (small messages, where a call takes
/// microseconds): at 30, the single-superstep reduce variants at p = 2
/// and 4 KiB, the same superstep in all but name, came out up to 1.24×
/// apart in one sweep and within 1.05× in runs of 200.
const MAX_REPS: usize = 100;

/// One variant's call: runs the variant once, and with `true` also checks
/// its result (outside the timed calls).
type Call<'a> = Box<dyn FnMut(&mut Ctx, bool) + 'a>;

/// Times every call of `calls` `reps` times, interleaved (round r runs
/// every variant once, in the order [`round_order`] gives, so that drift in the machine's speed
/// during the measurement falls on all variants alike), each call from a
/// sync, as the slowest processor saw it, after one untimed call of each
/// that checks its result; returns each variant's median.
///
/// Each timed call follows an untimed call of the same variant, so that
/// it finds the memory it allocates already faulted in, as a program
/// calling the collective in a loop does. Without it a variant pays for
/// the pages its predecessor in the round left unmapped (a routed
/// all-to-all of 16 MiB after a k-level one measured 2–3× slower than the
/// same superstep run after itself).
fn time_interleaved(ctx: &mut Ctx, reps: usize, calls: &mut [Call<'_>]) -> Vec<f64> {
    // One untimed call of each first, which checks its result.
    for call in calls.iter_mut() {
        call(ctx, true);
    }
    let n = calls.len();
    let mut secs = vec![0.0; n * reps];
    for round in 0..reps {
        for v in round_order(n, round) {
            let call = &mut calls[v];
            call(ctx, false);
            ctx.sync();
            let start = Instant::now();
            call(ctx, false);
            secs[v * reps + round] = start.elapsed().as_secs_f64();
        }
    }
    algos::variants::all_reduce_direct(ctx, &mut secs, &Max);
    secs.chunks_mut(reps.max(1)).map(median).take(n).collect()
}

/// The order of the variants in round `round`: a shuffle that every
/// processor computes alike, so that no variant always runs after the same
/// one (what a variant leaves behind, such as freed memory or MPI's
/// caches, then falls on different variants in different rounds).
fn round_order(n: usize, round: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut state = (round as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    for i in (1..n).rev() {
        state ^= state >> 31;
        state = state.wrapping_mul(0xbf58_476d_1ce4_e5b9);
        state ^= state >> 29;
        order.swap(i, (state % (i as u64 + 1)) as usize);
    }
    order
}

/// The rows of one collective for one p and size, each variant's result
/// checked; without the direct variants of reduce, all-reduce and scan
/// when `direct` is false (their h = (p − 1)m would not fit in memory).
/// Runs on every processor; the rows are processor 0's.
fn measure(
    ctx: &mut Ctx,
    collective: &'static str,
    bytes: usize,
    reps: usize,
    direct: bool,
) -> Vec<Row> {
    let (p, me) = (ctx.nprocs(), ctx.pid());
    let model = Model::of(ctx);
    let m = (bytes / 8).max(1); // u64 elements
    let mine = vec![me as u64 + 1; m];
    let mine = &mine;
    let all_sum = (p * (p + 1) / 2) as u64;
    // The all-to-all's blocks, made in its arm (kept here to outlive the
    // calls that borrow them).
    let mut blocks: Option<Vec<u64>> = None;
    // Per variant: name, predicted seconds, whether the default picks it,
    // and its call.
    let mut chosen: Vec<(&'static str, Option<f64>, bool)> = Vec::new();
    let mut calls: Vec<Call<'_>> = Vec::new();
    let skip = |name: &str| name == "direct" && !direct;
    match collective {
        "broadcast" => {
            let variants = algos::variants::broadcast_variants::<u64>();
            let pick = pick(&model, p, 8 * m, &variants).name;
            for v in variants {
                chosen.push((v.name, (v.cost)(&model, p, 8 * m), v.name == pick));
                let mut buf = mine.clone();
                calls.push(Box::new(move |ctx, check| {
                    buf.copy_from_slice(mine);
                    (v.run)(ctx, 0, &mut buf);
                    assert!(
                        !check || buf.iter().all(|&x| x == 1),
                        "broadcast {}",
                        v.name
                    );
                }));
            }
        }
        "reduce" => {
            let variants = algos::variants::reduce_variants::<u64, Sum>();
            let pick = pick(&model, p, 8 * m, &variants).name;
            for v in variants.into_iter().filter(|v| !skip(v.name)) {
                chosen.push((v.name, (v.cost)(&model, p, 8 * m), v.name == pick));
                calls.push(Box::new(move |ctx, check| {
                    let out = (v.run)(ctx, 0, mine, &Sum);
                    if check {
                        assert_eq!(out.is_some(), ctx.pid() == 0, "reduce {}", v.name);
                        let ok = out.iter().flatten().all(|&x| x == all_sum);
                        assert!(ok, "reduce {}", v.name);
                    }
                }));
            }
        }
        "all_reduce" => {
            let variants = algos::variants::all_reduce_variants::<u64, Sum>();
            let pick = pick(&model, p, 8 * m, &variants).name;
            for v in variants.into_iter().filter(|v| !skip(v.name)) {
                chosen.push((v.name, (v.cost)(&model, p, 8 * m), v.name == pick));
                let mut buf = mine.clone();
                calls.push(Box::new(move |ctx, check| {
                    buf.copy_from_slice(mine);
                    (v.run)(ctx, &mut buf, &Sum);
                    let ok = !check || buf.iter().all(|&x| x == all_sum);
                    assert!(ok, "all_reduce {}", v.name);
                }));
            }
        }
        "exclusive_scan" => {
            let variants = algos::variants::exclusive_scan_variants::<u64, Sum>();
            let pick = pick(&model, p, 8 * m, &variants).name;
            let before = (me * (me + 1) / 2) as u64;
            for v in variants.into_iter().filter(|v| !skip(v.name)) {
                chosen.push((v.name, (v.cost)(&model, p, 8 * m), v.name == pick));
                calls.push(Box::new(move |ctx, check| {
                    let out = (v.run)(ctx, mine, &Sum);
                    if check {
                        assert!(out.0.iter().all(|&x| x == before), "scan {}", v.name);
                        assert!(out.1.iter().all(|&x| x == all_sum), "scan {}", v.name);
                    }
                }));
            }
        }
        "all_to_all" => {
            let b = (m / p).max(1); // elements per block
            let data: &[u64] = blocks.insert((0..p * b).map(|k| (me * p + k / b) as u64).collect());
            let variants = algos::variants::all_to_all_uniform_variants::<u64>();
            let pick = pick(&model, p, 8 * b, &variants).name;
            for v in variants {
                let Some(predicted) = (v.cost)(&model, p, 8 * b) else {
                    continue; // the hypercube needs p a power of two
                };
                chosen.push((v.name, Some(predicted), v.name == pick));
                calls.push(Box::new(move |ctx, check| {
                    let out = (v.run)(ctx, data);
                    let me = ctx.pid();
                    let ok = !check || (0..p * b).all(|k| out[k] == ((k / b) * p + me) as u64);
                    assert!(ok, "all_to_all {}", v.name);
                }));
            }
        }
        other => unreachable!("no collective {other}"),
    }
    let seconds = time_interleaved(ctx, reps, &mut calls);
    chosen
        .into_iter()
        .zip(seconds)
        .map(|((variant, predicted, default), seconds)| Row {
            collective,
            variant,
            seconds,
            predicted: predicted.unwrap_or(f64::NAN),
            default,
        })
        .collect()
}

/// Seconds per iteration of a diffusion loop of `per` doubles per
/// processor (average with the neighbours, then sync, twice per
/// iteration), on threads with the barrier `kind`.
fn diffusion(p: usize, kind: &str, per: usize, iterations: usize) -> (f64, f64) {
    // Read by Runtime::from_env, which the threads transport takes the
    // barrier from.
    std::env::set_var(bsp::env::BARRIER_ENV, kind);
    let rt = Runtime::from_env().with_procs(p);
    std::env::remove_var(bsp::env::BARRIER_ENV);
    let out = rt
        .run(|ctx| {
            let model = Model::of(ctx);
            let mut a = vec![1.0f64; per + 2];
            let mut b = a.clone();
            let mut secs = [0.0];
            ctx.sync();
            let start = Instant::now();
            for _ in 0..iterations {
                for j in 1..=per {
                    b[j] = (a[j - 1] + a[j] + a[j + 1]) / 3.0;
                }
                ctx.sync();
                for j in 1..=per {
                    a[j] = (b[j - 1] + b[j] + b[j + 1]) / 3.0;
                }
                ctx.sync();
            }
            secs[0] = start.elapsed().as_secs_f64() / iterations as f64;
            assert!((a[per / 2 + 1] - 1.0).abs() < 1e-9, "diffusion of ones");
            algos::variants::all_reduce_direct(ctx, &mut secs, &Max);
            (secs[0], model.supersteps(2, 0.0))
        })
        .unwrap_or_else(|e| {
            eprintln!("bench_collectives: {e}");
            std::process::exit(1)
        });
    *out.local()
}

/// Whether the direct variants (every processor receives p vectors, and
/// the router holds them twice) fit in half the available memory.
fn direct_fits(p: usize, bytes: usize) -> bool {
    let available = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            let line = m.lines().find(|l| l.starts_with("MemAvailable:"))?;
            line.split_whitespace().nth(1)?.parse::<u128>().ok()
        })
        .map_or(u128::MAX, |kib| kib * 1024);
    2 * (p * p * bytes) as u128 <= available / 2
}

fn main() {
    let args = Args::parse(USAGE, &["json", "full"]);
    args.reject_unknown(&["procs", "bytes", "full", "reps", "collectives", "json"]);
    let rt = Runtime::from_env();
    let mpi = rt.transport() != bsp::Transport::Threads;
    let procs: Vec<usize> = if mpi {
        vec![rt.nprocs()]
    } else {
        args.list("procs", &[2, 4, 8, 16])
    };
    let sizes: Vec<usize> = if args.flag("full") {
        let mut s: Vec<usize> = (0..8).map(|k| 8usize << (3 * k)).collect();
        s.push(64 << 20);
        s
    } else {
        args.list("bytes", &[8, 1 << 10, 64 << 10, 1 << 20])
    };
    let collectives: Vec<String> = args.list("collectives", &ALL.map(String::from));
    for c in &collectives {
        if !ALL.contains(&c.as_str()) {
            args.fail(&format!("unknown collective {c:?}"));
        }
    }
    let largest = sizes.iter().max().copied().unwrap_or(0) as u128;
    let most_procs = procs.iter().max().copied().unwrap_or(1) as u128;
    if !mpi {
        // Each processor holds the message about four times over (the
        // direct variants, p times: they are left out where that does not
        // fit, see `direct_fits`).
        args.require_memory(4 * largest * most_procs, "the largest messages");
    }
    let reps_given: Option<usize> = args.opt("reps");
    let json = args.flag("json");
    let lead = !mpi
        || rt
            .run(|ctx| ctx.pid() == 0)
            .map(|o| *o.local())
            .unwrap_or(false);
    if lead && !json {
        println!(
            "{:>14} {:>10} {:>5} {:>9} {:>11} {:>11} {:>6}  default",
            "collective", "variant", "procs", "bytes", "seconds", "predicted", "ratio"
        );
    }
    let timed: Vec<&'static str> = ALL[..5]
        .iter()
        .copied()
        .filter(|c| collectives.iter().any(|x| x == c))
        .collect();
    let steps = (procs.len() * sizes.len()) as u64;
    let progress = Progress::new(steps, "bench_collectives", json || !lead);
    let print = |rows: &[Row], p: usize, bytes: usize| {
        let best = rows.iter().map(|r| r.seconds).fold(f64::INFINITY, f64::min);
        for r in rows {
            if json {
                let row = json!({
                    "collective": r.collective,
                    "variant": r.variant,
                    "procs": p,
                    "bytes": bytes,
                    "seconds": r.seconds,
                    "predicted_seconds": r.predicted,
                    "default": r.default,
                    "transport": rt.transport().name(),
                });
                println!("{row}");
            } else {
                let mark = if r.default {
                    format!("*  {:.2}x best", r.seconds / best)
                } else {
                    String::new()
                };
                progress.suspend(|| {
                    println!(
                        "{:>14} {:>10} {p:>5} {bytes:>9} {:>11.3e} {:>11.3e} {:>6.2}  {mark}",
                        r.collective,
                        r.variant,
                        r.seconds,
                        r.predicted,
                        r.seconds / r.predicted
                    )
                });
            }
        }
    };
    for &p in &procs {
        for &bytes in &sizes {
            progress.step(format!("p = {p}, {bytes} B"));
            let direct = mpi || direct_fits(p, bytes);
            if !direct && lead && !json {
                progress.suspend(|| {
                    println!("  (p = {p}, {bytes} B: direct reduce, all-reduce and scan left out: p²·m does not fit in memory)")
                });
            }
            let reps = reps_given.unwrap_or(
                (30usize << 20)
                    .div_ceil(bytes * p)
                    .clamp(MIN_REPS, MAX_REPS),
            );
            if !timed.is_empty() {
                let out = rt
                    .clone()
                    .with_procs(p)
                    .run(|ctx| {
                        let mut rows = Vec::new();
                        for c in &timed {
                            let mine = measure(ctx, c, bytes, reps, direct);
                            rows.push(mine);
                        }
                        rows
                    })
                    .unwrap_or_else(|e| {
                        eprintln!("bench_collectives: {e}");
                        std::process::exit(1)
                    });
                if lead {
                    for rows in out.into_iter().next().expect("a result") {
                        print(&rows, p, bytes);
                    }
                }
            }
            progress.tick();
        }
        if !mpi && collectives.iter().any(|c| c == "barrier") {
            for per in [100usize, 10_000] {
                let iterations = (20_000_000 / (per * p).max(1)).clamp(100, 20_000);
                // What `BSP_BARRIER=auto` picks: dissemination with a core
                // per processor (std's count stands for the affinity mask).
                let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
                let auto = if p <= cores {
                    "dissemination"
                } else {
                    "central"
                };
                let rows: Vec<Row> = ["dissemination", "central", "binomial"]
                    .into_iter()
                    .map(|kind| {
                        let (seconds, predicted) = diffusion(p, kind, per, iterations);
                        Row {
                            collective: "barrier",
                            variant: kind,
                            seconds,
                            predicted,
                            default: kind == auto,
                        }
                    })
                    .collect();
                // `bytes` of a barrier row: the doubles each processor works on
                // between two syncs.
                print(&rows, p, 8 * per);
            }
        }
    }
    progress.finish();
}
