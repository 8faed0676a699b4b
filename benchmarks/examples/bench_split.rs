//! What a sub-machine costs: the seconds of a `Ctx::split` (entering and
//! leaving a sub-machine that does nothing) and of one superstep inside a
//! sub-machine of q processors, beside the whole machine's superstep (one
//! word to the right neighbour, as the probe measures l), for sub-machines
//! of 2, 4, ... up to p processors. The k-level collectives' cost
//! functions charge from these figures.
//!
//! ```text
//! cargo run --release -p bsp-benchmarks --example bench_split -- [--procs 4,8,16] [--reps R] [--json]
//! ```
//!
//! Every figure is the median over the reps of the slowest processor's
//! seconds.

#[path = "../../examples/common/mod.rs"]
mod common;

use std::time::Instant;

use bsp::algos::{self, Max};
use bsp::prelude::*;
use common::{median, ran, Args};
use serde_json::json;

const HELP: &str = "bench_split: the seconds of a split and of a sub-machine's superstep

usage: bench_split [--procs P[,P...]] [--reps R] [--json]

  --procs P    processor counts, comma separated (default 4,8,16; under MPI
               the mpirun size is used)
  --reps R     repetitions per figure, median reported (default 200)
  --json       one JSON object per line instead of a table
  --help       this text";

/// The median of `reps` timings of `f`, each the slowest processor's,
/// each from a sync of the whole machine.
fn time(ctx: &mut Ctx, reps: usize, f: &mut dyn FnMut(&mut Ctx)) -> f64 {
    f(ctx);
    let mut secs = Vec::with_capacity(reps);
    for _ in 0..reps {
        ctx.sync();
        let start = Instant::now();
        f(ctx);
        secs.push(start.elapsed().as_secs_f64());
    }
    algos::variants::all_reduce_direct(ctx, &mut secs, &Max);
    median(&mut secs)
}

/// One superstep putting a word to the right neighbour.
fn step(ctx: &mut Ctx, word: &Coarray<u64>) {
    let (p, me) = (ctx.nprocs(), ctx.pid());
    ctx.put((me + 1) % p, word, 0, &[1]);
    ctx.sync();
}

fn main() {
    let args = Args::parse(HELP, &["json"]);
    args.reject_unknown(&["procs", "reps", "json"]);
    let rt = Runtime::from_env();
    let mpi = rt.transport() != bsp::Transport::Threads;
    let procs: Vec<usize> = if mpi {
        vec![rt.nprocs()]
    } else {
        args.list("procs", &[4, 8, 16])
    };
    let reps: usize = args.get("reps", 200);
    let json = args.flag("json");
    for p in procs {
        // Sub-machine sizes: 2, 4, ... below p, then p itself.
        let mut sizes: Vec<usize> = (1..).map(|k| 1 << k).take_while(|&q| q < p).collect();
        sizes.push(p);
        let out = ran(
            "bench_split",
            rt.clone().with_procs(p).run(|ctx| {
                let me = ctx.pid();
                let word = ctx.coarray::<u64>(1);
                let whole = time(ctx, reps, &mut |ctx| step(ctx, &word));
                let mut rows = Vec::new();
                for &q in &sizes {
                    let split = time(ctx, reps, &mut |ctx| ctx.split(me / q, me, |_| ()));
                    let mut sub_step = [0.0];
                    ctx.split(me / q, me, |sub| {
                        let w = sub.coarray::<u64>(1);
                        sub_step[0] = time(sub, reps, &mut |sub| step(sub, &w));
                        sub.release(w);
                    });
                    algos::variants::all_reduce_direct(ctx, &mut sub_step, &Max);
                    rows.push((q, split, sub_step[0]));
                }
                (me == 0).then_some((whole, rows))
            }),
        );
        for (whole, rows) in out.into_iter().flatten() {
            for (q, split, sub_step) in rows {
                if json {
                    let row = json!({
                        "procs": p,
                        "members": q,
                        "superstep_seconds": whole,
                        "split_seconds": split,
                        "sub_superstep_seconds": sub_step,
                        "transport": rt.transport().name(),
                    });
                    println!("{row}");
                } else {
                    println!(
                        "p = {p:>3}, sub-machines of {q:>3}: superstep {:>8.1} µs, split {:>8.1} µs ({:.2} l), sub-machine superstep {:>8.1} µs ({:.2} l)",
                        whole * 1e6,
                        split * 1e6,
                        split / whole,
                        sub_step * 1e6,
                        sub_step / whole
                    );
                }
            }
        }
    }
}
