//! The k-level collectives of Hambrusch, Hameed and Khokhar on
//! sub-machines: every collective (broadcast, scatter, gather, reduce,
//! all-to-all) with each number of levels (direct, 2, 3, log p), measured
//! beside the time its cost function predicts from this machine's g and l.
//!
//! ```text
//! cargo run --release -p bsp-benchmarks --example bench_k_level -- [--procs P[,P...]] [--bytes B[,B...]] [--reps R] [--json]
//! ```
//!
//! Each configuration runs every variant `--reps` times and reports the
//! median seconds (the slowest processor's time of each run) and the
//! prediction. It checks itself: every result is compared with what the
//! collective must produce; on a wrong answer it exits with status 1.

#[path = "../../examples/common/mod.rs"]
mod common;

use std::process::ExitCode;
use std::time::Instant;

use bsp::algos::variants::Levels;
use bsp::algos::{self, Max, Sum};
use bsp::prelude::*;
use bsp::Machine;
use common::{ran, upper_median, Args, Progress};
use serde_json::json;

const HELP: &str = "bench_k_level: k-level collectives on sub-machines, measured and predicted

usage: bench_k_level [--procs P[,P...]] [--bytes B[,B...]] [--reps R] [--json]

  --procs P    processor counts, comma separated (default 2,4,8; under MPI
               the mpirun size is used)
  --bytes B    message sizes in bytes, comma separated (default 8,1024,65536):
               the broadcast and reduce vector, each part of scatter and
               gather, each message of all-to-all
  --reps R     repetitions per variant, median reported (default 5)
  --json       one JSON object per line instead of a table
  --help       this text";

const COLLECTIVES: [&str; 5] = ["broadcast", "scatter", "gather", "reduce", "all_to_all"];

/// Element `i` of the message from `src` to `dst`.
fn word(src: usize, dst: usize, i: usize) -> u64 {
    (src * 1_000_003 + dst * 1009 + i) as u64
}

fn message(src: usize, dst: usize, n: usize) -> Vec<u64> {
    (0..n).map(|i| word(src, dst, i)).collect()
}

/// Runs `collective` once with `levels` on `m` words per message (root 0)
/// and says whether this processor's result is right.
fn once(ctx: &mut Ctx, collective: &str, levels: Levels, m: usize) -> bool {
    let (p, me) = (ctx.nprocs(), ctx.pid());
    match collective {
        "broadcast" => {
            let mut buf = if me == 0 {
                message(0, 0, m)
            } else {
                vec![0; m]
            };
            algos::variants::broadcast_k_level(ctx, 0, &mut buf, levels);
            buf == message(0, 0, m)
        }
        "scatter" => {
            let parts: Vec<Vec<u64>> = if me == 0 {
                (0..p).map(|d| message(0, d, m)).collect()
            } else {
                Vec::new()
            };
            algos::variants::scatter_k_level(ctx, 0, &parts, levels) == message(0, me, m)
        }
        "gather" => {
            let got = algos::variants::gather_k_level(ctx, 0, &message(me, 0, m), levels);
            got == (me == 0).then(|| (0..p).map(|s| message(s, 0, m)).collect())
        }
        "reduce" => {
            let got = algos::variants::reduce_k_level(ctx, 0, &message(me, 0, m), &Sum, levels);
            let want = || {
                (0..m)
                    .map(|i| (0..p).map(|s| word(s, 0, i)).sum())
                    .collect()
            };
            got == (me == 0).then(want)
        }
        _ => {
            let sends = (0..p).map(|d| message(me, d, m)).collect();
            let got = algos::variants::all_to_all_k_level(ctx, sends, levels);
            got == (0..p).map(|s| message(s, me, m)).collect::<Vec<_>>()
        }
    }
}

/// The predicted seconds of `collective` with `levels`.
fn predicted(machine: &Machine, collective: &str, p: usize, bytes: usize, levels: Levels) -> f64 {
    let cost = match collective {
        "broadcast" => algos::variants::broadcast_k_level_cost,
        "scatter" => algos::variants::scatter_k_level_cost,
        "gather" => algos::variants::gather_k_level_cost,
        "reduce" => algos::variants::reduce_k_level_cost,
        _ => algos::variants::all_to_all_k_level_cost,
    };
    cost(machine, p, bytes, levels)
}

/// One row: a collective and variant on p processors and messages of
/// `bytes` bytes.
struct Row {
    collective: &'static str,
    levels: Levels,
    seconds: f64,
    predicted: f64,
}

/// Every variant on `rt`: the rows (on processor 0's process), or `Err` if
/// some result was wrong.
fn measure(rt: &Runtime, machine: &Machine, bytes: usize, reps: usize) -> Result<Vec<Row>, String> {
    let m = bytes.div_ceil(8).max(1);
    let out = ran(
        "bench_k_level",
        rt.run(|ctx| {
            let p = ctx.nprocs();
            let mut rows = Vec::new();
            let mut wrong = 0u64;
            for collective in COLLECTIVES {
                for levels in Levels::ALL {
                    let mut times = Vec::new();
                    for _ in 0..reps {
                        ctx.sync();
                        let start = Instant::now();
                        let right = once(ctx, collective, levels, m);
                        let mut t = [start.elapsed().as_secs_f64()];
                        algos::all_reduce(ctx, &mut t, &Max);
                        times.push(t[0]);
                        wrong += u64::from(!right);
                    }
                    rows.push(Row {
                        collective,
                        levels,
                        seconds: upper_median(times),
                        predicted: predicted(machine, collective, p, m * 8, levels),
                    });
                }
            }
            let mut wrong = [wrong];
            algos::all_reduce(ctx, &mut wrong, &Sum);
            (ctx.pid() == 0).then_some((wrong[0], rows))
        }),
    );
    match out.into_iter().flatten().next() {
        Some((0, rows)) => Ok(rows),
        Some((wrong, _)) => Err(format!("{wrong} wrong results")),
        None => Ok(Vec::new()), // not rank 0 under MPI
    }
}

fn main() -> ExitCode {
    let args = Args::parse(HELP, &["json"]);
    args.reject_unknown(&["procs", "bytes", "reps", "json"]);
    let procs = args.list("procs", &[2, 4, 8]);
    if procs.contains(&0) {
        args.fail("--procs: need at least one processor");
    }
    let sizes = args.list("bytes", &[8, 1024, 65536]);
    let reps = args.get("reps", 5usize).max(1);
    let json = args.flag("json");
    let progress = Progress::new((procs.len() * sizes.len()) as u64, "bench_k_level", json);
    let mut done = Vec::new();
    for &asked in &procs {
        let rt = Runtime::from_env().with_procs(asked);
        let p = rt.nprocs();
        if done.contains(&p) {
            continue; // under MPI every count is the mpirun size
        }
        done.push(p);
        let machine = ran("bench_k_level", Machine::of(&rt));
        for &bytes in &sizes {
            progress.step(format!("p = {p}, {bytes} bytes"));
            let rows = match measure(&rt, &machine, bytes, reps) {
                Ok(rows) => rows,
                Err(e) => {
                    eprintln!("bench_k_level: FAILED at p = {p}, {bytes} bytes: {e}");
                    return ExitCode::FAILURE;
                }
            };
            progress.tick();
            progress.suspend(|| {
                if !json && !rows.is_empty() {
                    println!("p = {p}, {bytes} bytes per message, median of {reps} (ms)");
                    print!("{:>12}", "");
                    for levels in Levels::ALL {
                        print!(" {:>22}", format!("{levels} meas/pred"));
                    }
                    println!();
                }
                for chunk in rows.chunks(Levels::ALL.len()) {
                    if !json {
                        print!("{:>12}", chunk[0].collective);
                    }
                    for row in chunk {
                        if json {
                            let line = json!({
                                "collective": row.collective,
                                "variant": row.levels.name(),
                                "procs": p,
                                "bytes": bytes.div_ceil(8).max(1) * 8,
                                "seconds": row.seconds,
                                "predicted_seconds": row.predicted,
                                "verified": true,
                            });
                            println!("{line}");
                        } else {
                            let ms = |s: f64| s * 1e3;
                            let cell = format!("{:.3} / {:.3}", ms(row.seconds), ms(row.predicted));
                            print!(" {cell:>22}");
                        }
                    }
                    if !json {
                        println!();
                    }
                }
            });
        }
    }
    progress.finish();
    ExitCode::SUCCESS
}
