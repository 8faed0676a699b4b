//! bsp's side of the one-sided comparison: the four measurements of
//! `benchmarks/one_sided/put_fence.c` (a hand-written BSP superstep in MPI
//! one-sided communication, `MPI_Put` into `MPI_Win_allocate` windows and
//! one `MPI_Win_fence`), made with bsp's own puts and syncs, printed as
//! the same JSON lines. `benchmarks/one_sided.sh` runs both and prints the
//! ratios.
//!
//! ```text
//! cargo build --release -p bsp-benchmarks --features mpi --example bench_one_sided
//! mpirun -np 2 target/release/examples/bench_one_sided [--rounds 7]
//! ```
//!
//! Each processor puts to processor (pid + 1) mod p:
//!
//! * `empty`: an empty superstep (`sync` alone);
//! * `one`: one 8-byte `put`, then `sync`;
//! * `g`: h `put`s of one 8-byte word each, then `sync`, for each h of the
//!   list; g is the slope of the least-squares line through T(h), and
//!   `h<N>` lines give each h's time per put (a step in them shows a
//!   change of protocol, such as an MPI library's eager limit);
//! * `bulk<KiB>`: one `put_from` of 64 KiB, 1 MiB and 8 MiB (no copy at the
//!   call, as `MPI_Put` makes none), then `sync`, in GB/s put per processor.
//!
//! Rounds interleave the measurements, so drift touches each alike; a
//! round's time is processor 0's for a batch of supersteps. The received
//! words are checked, and a wrong one exits with status 1. Under threads
//! (`--procs P`, without `mpirun`) it measures the threads transport.

#[path = "../../examples/common/mod.rs"]
mod common;

use std::time::Instant;

use bsp::prelude::*;
use common::{fit_line, median, Args};
use serde_json::json;

const USAGE: &str = "bench_one_sided: bsp supersteps measured as put_fence.c measures MPI one-sided

usage: bench_one_sided [--rounds 7] [--procs P]

  --rounds  rounds over which the minimum and median are taken (1 to 64)
  --procs   processors on threads (ignored under mpirun)";

/// The h of the g measurement: put_fence.c's list.
const HS: [usize; 10] = [1, 8, 32, 64, 128, 192, 256, 512, 1024, 2048];
/// Bytes of the bulk puts.
const BULK: [usize; 3] = [64 << 10, 1 << 20, 8 << 20];

/// One round's times in seconds per superstep.
struct Round {
    empty: f64,
    one: f64,
    g: Vec<f64>,
    bulk: Vec<f64>,
}

/// The word processor `pid` sends as element `i`.
fn word(pid: usize, i: usize) -> u64 {
    (pid as u64) << 32 | i as u64
}

/// Seconds per superstep of `steps` supersteps, each made by `body`.
fn supersteps(ctx: &mut Ctx, steps: usize, mut body: impl FnMut(&mut Ctx)) -> f64 {
    ctx.sync();
    let t = Instant::now();
    for _ in 0..steps {
        body(ctx);
        ctx.sync();
    }
    t.elapsed().as_secs_f64() / steps as f64
}

fn rounds_on(ctx: &mut Ctx, rounds: usize) -> (Vec<Round>, bool) {
    let (s, p) = (ctx.pid(), ctx.nprocs());
    let to = (s + 1) % p;
    let most = BULK[BULK.len() - 1] / 8;
    let src = ctx.coarray_from((0..most).map(|i| word(s, i)).collect::<Vec<u64>>());
    let dst = ctx.coarray::<u64>(most);
    let words: Vec<u64> = (0..HS[HS.len() - 1]).map(|i| word(s, i)).collect();
    let mut out = Vec::new();
    for _ in 0..rounds {
        let empty = supersteps(ctx, 20000, |_| {});
        let one = supersteps(ctx, 20000, |ctx| ctx.put(to, &dst, 0, &words[..1]));
        let g = HS
            .iter()
            .map(|&h| {
                let steps = if h > 256 { 200 } else { 2000 };
                supersteps(ctx, steps, |ctx| {
                    for (i, w) in words[..h].iter().enumerate() {
                        ctx.put(to, &dst, i, std::slice::from_ref(w));
                    }
                })
            })
            .collect();
        let bulk = BULK
            .iter()
            .map(|&bytes| {
                let steps = if bytes > 1 << 20 { 20 } else { 200 };
                supersteps(ctx, steps, |ctx| {
                    ctx.put_from(to, &dst, 0, &src, ..bytes / 8)
                })
            })
            .collect();
        out.push(Round {
            empty,
            one,
            g,
            bulk,
        });
    }
    let from = (s + p - 1) % p;
    let ok = ctx
        .local(&dst)
        .iter()
        .enumerate()
        .all(|(i, &w)| w == word(from, i));
    (out, ok)
}

fn least(xs: &[f64]) -> f64 {
    xs.iter().copied().fold(f64::INFINITY, f64::min)
}

fn main() -> std::process::ExitCode {
    let args = Args::parse(USAGE, &[]);
    args.reject_unknown(&["rounds", "procs"]);
    let rounds: usize = args.get("rounds", 7);
    if !(1..=64).contains(&rounds) {
        args.fail("--rounds must be 1 to 64");
    }
    let rt = args.runtime();
    let transport = rt.transport().name();
    let outcome = common::ran(
        "bench_one_sided",
        rt.run(move |ctx| {
            let (rounds, ok) = rounds_on(ctx, rounds);
            (ctx.pid(), ctx.nprocs(), rounds, ok)
        }),
    );
    let mut wrong = false;
    for (pid, np, rounds, ok) in outcome.iter() {
        if !ok {
            eprintln!("bench_one_sided: processor {pid} received wrong words");
            wrong = true;
        }
        if *pid != 0 {
            continue;
        }
        let line = |what: &str, unit: &str, best: f64, med: f64| {
            let mut j = json!({"impl": "bsp", "transport": transport, "np": np, "what": what});
            // The bulk figures' best is their most GB/s, as in put_fence.c.
            let key = if unit == "gbs" { "max" } else { "min" };
            j[format!("{unit}_{key}")] = json!(best);
            j[format!("{unit}_median")] = json!(med);
            println!("{j}");
        };
        let series = |f: &dyn Fn(&Round) -> f64| rounds.iter().map(f).collect::<Vec<f64>>();
        let mut empty = series(&|r| r.empty * 1e6);
        line("empty", "us", least(&empty), median(&mut empty));
        let mut one = series(&|r| r.one * 1e6);
        line("one", "us", least(&one), median(&mut one));
        let mut g = series(&|r| {
            let points: Vec<(usize, f64)> = HS.iter().copied().zip(r.g.iter().copied()).collect();
            1e9 * fit_line(&points).1
        });
        line("g", "ns", least(&g), median(&mut g));
        for (k, h) in HS.iter().enumerate() {
            let mut per = series(&|r| r.g[k] * 1e9 / *h as f64);
            line(
                &format!("h{h}"),
                "ns_per_put",
                least(&per),
                median(&mut per),
            );
        }
        for (k, bytes) in BULK.iter().enumerate() {
            let mut t = series(&|r| r.bulk[k]);
            let gbs = |t: f64| *bytes as f64 / t / 1e9;
            let fastest = gbs(least(&t));
            line(
                &format!("bulk{}", bytes >> 10),
                "gbs",
                fastest,
                gbs(median(&mut t)),
            );
        }
    }
    if wrong {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    }
}
