//! A Jacobi relaxation of a 1-D heat rod that survives the loss of its
//! process: every `--checkpoint-every K` iterations it saves a checkpoint,
//! and a run started again with the same `--checkpoint-dir` resumes from
//! the last complete one. The answer is checked against a sequential
//! relaxation; a resumed run gives the same bytes as one never stopped.
//!
//! ```text
//! cargo run --release --example jacobi -- --checkpoint-dir /tmp/rod --checkpoint-every 50 --die-at 120
//! cargo run --release --example jacobi -- --checkpoint-dir /tmp/rod --checkpoint-every 50   # resumes at 100
//! ```
//!
//! `--die-at I` makes processor 1 abort the whole process at iteration I
//! (a killed process, for trying the restart); kill the process any other
//! way and the next run resumes just the same.

mod common;

use bsp::algos::{all_reduce, Block, Max};
use common::{checked, ran, verdict, whole_on_root, Args};
use serde_json::json;

const USAGE: &str = "jacobi: a 1-D heat rod relaxed by Jacobi iterations, with checkpoints

usage: jacobi [--n N] [--iterations T] [--checkpoint-dir DIR] [--checkpoint-every K]
              [--die-at I] [--procs P] [--json]

  --n N                 cells of the rod (default 100000)
  --iterations T        Jacobi iterations (default 500)
  --checkpoint-dir DIR  where checkpoints go and are resumed from (default: BSP_CHECKPOINT_DIR; none: no checkpoints)
  --checkpoint-every K  a checkpoint every K iterations (default 50)
  --die-at I            processor 1 aborts the whole process at iteration I (to try the restart)
  --procs P             processors (default: BSP_PROCS or the number of cores; set by mpirun under MPI)
  --json                print one JSON object";

/// The rod's initial temperature at cell `i` of `n`: a hot middle third.
fn initial(i: usize, n: usize) -> f64 {
    if (n / 3..2 * n / 3).contains(&i) {
        100.0
    } else {
        0.0
    }
}

/// One Jacobi step of cells `cells` with the neighbours `left` and
/// `right` (the ends of the rod are held at 0).
fn relax(cells: &[f64], left: f64, right: f64) -> Vec<f64> {
    (0..cells.len())
        .map(|k| {
            let l = if k == 0 { left } else { cells[k - 1] };
            let r = if k + 1 == cells.len() {
                right
            } else {
                cells[k + 1]
            };
            (l + 2.0 * cells[k] + r) / 4.0
        })
        .collect()
}

/// Ends this process at once, as a crash would: SIGKILL under MPI (one
/// rank lost), an abort on threads (the whole run lost).
fn die(me: usize, iteration: u64) -> ! {
    eprintln!("jacobi: processor {me} dies at iteration {iteration}");
    if bsp::launched_by_mpirun() {
        let pid = std::process::id().to_string();
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid])
            .status();
    }
    std::process::abort()
}

/// What the program saves with each checkpoint: the iteration reached.
type State = u64;

fn main() -> std::process::ExitCode {
    let args = Args::parse(USAGE, &["json"]);
    args.reject_unknown(&[
        "n",
        "iterations",
        "checkpoint-dir",
        "checkpoint-every",
        "die-at",
        "procs",
        "json",
    ]);
    let (n, iterations): (usize, u64) = (args.get("n", 100_000), args.get("iterations", 500));
    let every: u64 = args.get("checkpoint-every", 50).max(1);
    let die_at: Option<u64> = args.opt("die-at");
    let json = args.flag("json");
    let mut rt = args.runtime();
    if let Some(dir) = args.opt::<String>("checkpoint-dir") {
        rt = rt.with_checkpoint_dir(dir);
    }
    let checkpoints = rt.checkpoint_dir().is_some();
    let result = rt.run(|ctx| {
        let (me, p) = (ctx.pid(), ctx.nprocs());
        let range = Block::new(n, p).range(me);
        // The rod's block, and one ghost cell from each neighbour.
        let rod = ctx.coarray_from(range.clone().map(|i| initial(i, n)).collect::<Vec<f64>>());
        let ghosts = ctx.coarray::<f64>(2); // [from the left, from the right]
        let resumed: Option<State> = ctx.restore();
        let mut iteration = resumed.unwrap_or(0);
        while iteration < iterations {
            if die_at == Some(iteration) && me == 1 % p {
                die(me, iteration);
            }
            let block = ctx.local(&rod);
            if let (Some(&first), Some(&last)) = (block.first(), block.last()) {
                if me > 0 {
                    ctx.put(me - 1, &ghosts, 1, &[first]);
                }
                if me + 1 < p {
                    ctx.put(me + 1, &ghosts, 0, &[last]);
                }
            }
            ctx.sync();
            let [left, right] = [ctx.local(&ghosts)[0], ctx.local(&ghosts)[1]];
            let next = relax(ctx.local(&rod), left, right);
            ctx.local_mut(&rod).copy_from_slice(&next);
            iteration += 1;
            if checkpoints && iteration % every == 0 && iteration < iterations {
                ctx.checkpoint(&iteration);
            }
        }
        // Check: the whole rod on processor 0 against a sequential run.
        let mut hottest = [ctx.local(&rod).iter().cloned().fold(0.0, f64::max)];
        all_reduce(ctx, &mut hottest, &Max);
        let mine = ctx.local(&rod).to_vec();
        let whole = whole_on_root(ctx, &mine)?;
        let mut want: Vec<f64> = (0..n).map(|i| initial(i, n)).collect();
        for _ in 0..iterations {
            want = relax(&want, 0.0, 0.0);
        }
        let ok = whole == want; // bit for bit: the same operations in the same order
        let from = resumed.map_or("the start".to_owned(), |i| format!("iteration {i}"));
        if json {
            let report = json!({"example": "jacobi", "n": n, "iterations": iterations,
                "procs": p, "resumed_from": resumed, "hottest": hottest[0], "verified": ok});
            println!("{report}");
        } else {
            println!("jacobi: {n} cells, {iterations} iterations on {p} processors, from {from}");
            println!(
                "  hottest cell {:.6}: {}",
                hottest[0],
                checked(ok, "a sequential relaxation")
            );
        }
        Some(ok)
    });
    verdict(&ran("jacobi", result))
}
