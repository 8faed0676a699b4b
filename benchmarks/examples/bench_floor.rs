//! The superstep against its floor, side by side in one run, in the manner
//! of bspbench: for each processor count p, rounds that alternate the C
//! floor program (`benchmarks/floor/omp_barrier.c`: p OpenMP threads, each
//! writing its own cache line, a barrier, every thread reading every line,
//! a second barrier) with bsp on p threads, timing an *empty* superstep
//! (`ctx.sync()` alone) and a superstep in which every processor puts one
//! 8-byte word to its right neighbour (checked on arrival). See
//! `benchmarks/floor/README.md` for what the floor means and the targets.
//!
//! A bsp figure is processor 0's wall time per superstep, the median over
//! the steps of a round after the first; a floor figure is the program's
//! own: the median of 3 runs of as many steps, each run's mean time per
//! step. Each round gives a floor, an empty and a one-put figure and their
//! ratios; the harness prints the median over rounds of each, and the
//! range of the ratios (`--json`: one object per p with `floor_ns`,
//! `empty_ns`, `put_ns`, `empty_over_floor`, `put_over_floor`, their
//! `_range`s, and `cpu`, `nproc`, `router`, `barrier`). The router is the
//! runtime's default (`auto`) unless `--router` names one; `BSP_BARRIER`
//! picks the threads barrier.
//!
//! The floor program is `--floor PATH`, or by default `omp_barrier` in the
//! directory of this executable (where `benchmarks/bundle.sh` puts both),
//! or else `benchmarks/floor/omp_barrier` under the working directory:
//!
//! ```text
//! gcc -O2 -fopenmp benchmarks/floor/omp_barrier.c -o benchmarks/floor/omp_barrier
//! cargo build --release -p bsp-benchmarks --example bench_floor
//! target/release/examples/bench_floor --procs 2,4 --rounds 5 --steps 20000
//! ```

#[path = "../../examples/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use bsp::prelude::*;
use common::{median, ran, Args};
use serde_json::{json, Value};

const USAGE: &str = "bench_floor: empty and one-put supersteps against the OpenMP floor, alternately

usage: bench_floor [--procs 2,4,8,16] [--rounds 5] [--steps 20000] [--router auto|two-phase|direct|transportation]
                   [--floor PATH] [--json]

  --procs   processor counts (threads; default 2)
  --rounds  rounds per p, each one floor run and one bsp run
  --steps   supersteps per kind per round (the floor program runs as many steps)
  --router  router of the bsp runs (default: the runtime's default)
  --floor   the floor program (default: omp_barrier beside this executable,
            else benchmarks/floor/omp_barrier)
  --json    one JSON object per p";

/// Runs of `--steps` steps the floor program makes per round; it reports
/// their median.
const FLOOR_RUNS: usize = 3;

/// The command that builds the floor program at `path`.
fn build_hint(path: &Path) -> String {
    format!(
        "build it with: gcc -O2 -fopenmp benchmarks/floor/omp_barrier.c -o {}",
        path.display()
    )
}

/// The floor program: `--floor`, else `omp_barrier` beside this
/// executable, else `benchmarks/floor/omp_barrier`. Fails with the command
/// that builds it when it is missing.
fn floor_program(args: &Args) -> PathBuf {
    if let Some(path) = args.opt::<PathBuf>("floor") {
        if !path.is_file() {
            args.fail(&format!(
                "no floor program at {}; {}",
                path.display(),
                build_hint(&path)
            ));
        }
        return path;
    }
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join("omp_barrier")));
    let in_tree = PathBuf::from("benchmarks/floor/omp_barrier");
    beside
        .into_iter()
        .chain([in_tree.clone()])
        .find(|path| path.is_file())
        .unwrap_or_else(|| {
            args.fail(&format!(
                "no floor program beside this executable or at {}; {} (or pass --floor PATH)",
                in_tree.display(),
                build_hint(&in_tree)
            ))
        })
}

/// One run of the floor program with `p` threads: its nanoseconds per step.
fn floor_ns(program: &Path, p: usize, steps: usize) -> f64 {
    let fail = |message: String| -> ! {
        eprintln!("bench_floor: {}: {message}", program.display());
        std::process::exit(1)
    };
    let out = Command::new(program)
        .args([p.to_string(), steps.to_string(), FLOOR_RUNS.to_string()])
        .output()
        .unwrap_or_else(|e| fail(format!("cannot start it: {e}")));
    if !out.status.success() {
        fail(format!(
            "{}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line.trim()).ok())
        .find_map(|row| row.get("sync_ns")?.as_f64())
        .unwrap_or_else(|| fail(format!("no \"sync_ns\" in its output {stdout:?}")))
}

/// One bsp run on `p` threads: processor 0's median seconds per empty
/// superstep and per one-put superstep, over `steps` of each (the first
/// of each not counted).
fn bsp_round(p: usize, router: Option<Router>, steps: usize) -> (f64, f64) {
    let mut rt = Runtime::from_env().with_procs(p);
    if let Some(router) = router {
        rt = rt.with_router(router);
    }
    let results = ran(
        "bench_floor",
        rt.run(|ctx| {
            let (me, p) = (ctx.pid(), ctx.nprocs());
            let cell = ctx.coarray::<u64>(1);
            let mut empty = Vec::with_capacity(steps);
            for _ in 0..steps {
                let start = Instant::now();
                ctx.sync();
                empty.push(start.elapsed().as_secs_f64());
            }
            let mut put = Vec::with_capacity(steps);
            for step in 0..steps {
                let start = Instant::now();
                ctx.put((me + 1) % p, &cell, 0, &[(me + step) as u64]);
                ctx.sync();
                put.push(start.elapsed().as_secs_f64());
                let left = (me + p - 1) % p;
                assert_eq!(ctx.local(&cell)[0], (left + step) as u64);
            }
            (median(&mut empty[1..]), median(&mut put[1..]))
        }),
    );
    *results.local()
}

/// The CPU's model name from `/proc/cpuinfo` (Linux), or "unknown".
fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            let line = info.lines().find(|l| l.starts_with("model name"))?;
            Some(line.split_once(':')?.1.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned())
}

/// The median of `xs` and its range, (median, min, max).
fn summary(mut xs: Vec<f64>) -> (f64, f64, f64) {
    let mid = median(&mut xs);
    (mid, xs[0], xs[xs.len() - 1])
}

fn main() {
    let args = Args::parse(USAGE, &["json"]);
    args.reject_unknown(&["procs", "rounds", "steps", "router", "floor", "json"]);
    let procs: Vec<usize> = args.list("procs", &[2]);
    if let Some(&p) = procs.iter().find(|&&p| !(1..=1024).contains(&p)) {
        args.fail(&format!("--procs {p}: the floor program takes 1 to 1024"));
    }
    let rounds: usize = args.get("rounds", 5).max(1);
    let steps: usize = args.get("steps", 20_000).max(2);
    let router: Option<Router> = args.opt("router");
    let json = args.flag("json");
    let program = floor_program(&args);
    let router_name = router
        .unwrap_or_else(|| Runtime::threads(1).router())
        .name();
    let barrier = std::env::var("BSP_BARRIER")
        .ok()
        .filter(|b| !b.trim().is_empty())
        .unwrap_or_else(|| "default".to_owned());
    let cpu = cpu_model();
    let nproc = std::thread::available_parallelism().map_or(1, |n| n.get());
    if !json {
        println!(
            "{cpu}, {nproc} cores; router {router_name}, barrier {barrier}; floor {}",
            program.display()
        );
        println!("{rounds} rounds of {steps} steps; medians over rounds, ratio ranges in brackets");
        println!(
            "{:>5} {:>10} {:>10} {:>10}  {:>22}  {:>22}",
            "procs", "floor ns", "empty ns", "put ns", "empty/floor", "put/floor"
        );
    }
    for &p in &procs {
        let (mut floors, mut empties, mut puts) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            floors.push(floor_ns(&program, p, steps));
            let (empty, put) = bsp_round(p, router, steps);
            empties.push(empty * 1e9);
            puts.push(put * 1e9);
        }
        let ratios = |xs: &[f64]| summary(xs.iter().zip(&floors).map(|(x, f)| x / f).collect());
        let (empty_ratio, empty_lo, empty_hi) = ratios(&empties);
        let (put_ratio, put_lo, put_hi) = ratios(&puts);
        let (floor, empty, put) = (
            summary(floors.clone()).0,
            summary(empties).0,
            summary(puts).0,
        );
        if json {
            let row = json!({
                "procs": p,
                "router": router_name,
                "barrier": barrier,
                "rounds": rounds,
                "steps": steps,
                "floor_ns": floor,
                "empty_ns": empty,
                "put_ns": put,
                "empty_over_floor": empty_ratio,
                "empty_over_floor_range": [empty_lo, empty_hi],
                "put_over_floor": put_ratio,
                "put_over_floor_range": [put_lo, put_hi],
                "cpu": cpu,
                "nproc": nproc,
            });
            println!("{row}");
        } else {
            let cell = |m: f64, lo: f64, hi: f64| format!("{m:.2}x ({lo:.2}-{hi:.2})");
            println!(
                "{p:>5} {floor:>10.1} {empty:>10.1} {put:>10.1}  {:>22}  {:>22}",
                cell(empty_ratio, empty_lo, empty_hi),
                cell(put_ratio, put_lo, put_hi)
            );
        }
    }
}
