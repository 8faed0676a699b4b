//! Measures the BSP machine parameters of this runtime, as bspbench does
//! for BSPlib: l, the seconds of an empty superstep, and g, the seconds per
//! byte of a full h-relation (every processor sends h bytes, spread evenly
//! over all processors, and receives h bytes), fitted as
//! `T(h) = l_h + g·h` by least squares over several h.
//!
//! Every time is the slowest processor's, so the figures mean the same on
//! threads and under MPI. Under MPI (built with `--features mpi`, started
//! by `mpirun`; `--procs` is then ignored) it also prints an `MPI_Barrier`
//! plus a p-integer `MPI_Alltoall`, measured the same way, beside l.
//!
//! ```text
//! cargo run --release -p bsp-benchmarks --example bspbench -- --procs 2 --router two-phase
//! cargo build --release -p bsp-benchmarks --features mpi --example bspbench
//! mpirun -np 2 target/release/examples/bspbench
//! ```

#[path = "../../examples/common/mod.rs"]
mod common;

use std::time::Instant;

use bsp::algos::{all_reduce, Max};
use bsp::prelude::*;
use common::{fit_line, median, Args, Progress};
use serde_json::json;

const USAGE: &str =
    "bspbench: measure l (empty superstep) and g (seconds per byte of an h-relation)

usage: bspbench [--procs P] [--router two-phase|direct] [--max-kib 4096] [--json]

  --procs    processor count (threads; default: BSP_PROCS or the number of cores;
             ignored under mpirun)
  --router   h-relation router (default two-phase)
  --max-kib  largest h per processor, in KiB (h doubles from 1 KiB up to it)
  --json     print one JSON object";

struct Fit {
    l_seconds: f64,
    l_h_seconds: f64,
    g_seconds_per_byte: f64,
    points: Vec<(usize, f64)>,
}

/// Batches of the l measurement, and how many empty syncs each holds.
const L_BATCHES: usize = 7;

fn l_syncs(p: usize) -> usize {
    if p <= 8 {
        2000
    } else {
        200
    }
}

fn measure(ctx: &mut Ctx, max_bytes: usize, progress: &Progress) -> Fit {
    let p = ctx.nprocs();
    let lead = ctx.pid() == 0;
    // Every time below is measured on every processor, starting right after
    // a sync (a barrier), and the slowest processor's is kept: under MPI,
    // ranks do not share a clock, and rank 0 alone could be early or late.
    // l: median over batches of the mean time of many empty syncs.
    let syncs = l_syncs(p);
    let mut batches = Vec::new();
    ctx.label("measure l");
    if lead {
        progress.step("l: empty supersteps");
    }
    for _ in 0..L_BATCHES {
        ctx.sync();
        let start = Instant::now();
        for _ in 0..syncs {
            ctx.sync();
        }
        batches.push(start.elapsed().as_secs_f64() / syncs as f64);
        if lead {
            progress.tick();
        }
    }
    all_reduce(ctx, &mut batches, &Max); // the slowest processor's times
    let l_seconds = median(&mut batches);

    // g: full h-relations of h bytes per processor, h/p to each processor.
    let words = (max_bytes / 8).max(p);
    let src = ctx.coarray_from(vec![ctx.pid() as u64; words]);
    let dst = ctx.coarray_from(vec![0u64; words]);
    let mut points = Vec::new();
    let mut h = (1024 / 8).max(p) * 8;
    while h <= max_bytes {
        let per = h / 8 / p; // words to each processor
        let reps = ((64 << 20) / h.max(1 << 16)).max(4);
        let mut samples = Vec::new();
        ctx.label("measure g");
        if lead {
            progress.step(format!("g: h = {h} bytes"));
        }
        for _ in 0..3 {
            ctx.sync();
            let start = Instant::now();
            for _ in 0..reps {
                for t in 0..p {
                    ctx.put_from(t, &dst, ctx.pid() * per, &src, t * per..(t + 1) * per);
                }
                ctx.sync();
            }
            samples.push(start.elapsed().as_secs_f64() / reps as f64);
        }
        all_reduce(ctx, &mut samples, &Max);
        points.push((per * p * 8, median(&mut samples)));
        h *= 2;
        if lead {
            progress.tick();
        }
    }
    if lead {
        progress.finish();
    }
    let (l_h_seconds, g_seconds_per_byte) = fit_line(&points);
    Fit {
        l_seconds,
        l_h_seconds,
        g_seconds_per_byte,
        points,
    }
}

/// Under MPI: seconds of an `MPI_Barrier` followed by an `MPI_Alltoall` of
/// p integers (what a hand-written MPI superstep needs at least), measured
/// like l. Collective over the world; `None` on threads.
fn mpi_barrier_alltoall(rt: &Runtime) -> Option<f64> {
    #[cfg(feature = "mpi")]
    if rt.transport() == bsp::Transport::Mpi {
        use bsp::mpi::collective::SystemOperation;
        use bsp::mpi::topology::SimpleCommunicator;
        use bsp::mpi::traits::*;

        let world = SimpleCommunicator::world();
        let p = world.size() as usize;
        let syncs = l_syncs(p);
        let out = vec![1i32; p];
        let mut back = vec![0i32; p];
        let mut batches = Vec::new();
        for _ in 0..L_BATCHES {
            world.barrier();
            let start = Instant::now();
            for _ in 0..syncs {
                world.barrier();
                world.all_to_all_into(&out[..], &mut back[..]);
            }
            batches.push(start.elapsed().as_secs_f64() / syncs as f64);
        }
        let mut slowest = vec![0.0f64; L_BATCHES];
        world.all_reduce_into(&batches[..], &mut slowest[..], SystemOperation::max());
        return Some(median(&mut slowest));
    }
    let _ = rt;
    None
}

fn main() {
    let args = Args::parse(USAGE, &["json"]);
    args.reject_unknown(&["procs", "router", "max-kib", "json"]);
    let mut rt = Runtime::from_env();
    if let Some(p) = args.opt("procs") {
        rt = rt.with_procs(p); // ignored under MPI: mpirun -np decides
    }
    let router: Router = args.get("router", rt.router());
    let max_bytes = args.get::<usize>("max-kib", 4096) << 10;
    let json = args.flag("json");
    let rt = rt.with_router(router);
    let transport = rt.transport().name();
    // L_BATCHES steps for l, one per doubling of h from 1 KiB for g.
    let g_steps = (max_bytes.max(1024) / 1024).ilog2() as u64 + 1;
    let progress = Progress::new(L_BATCHES as u64 + g_steps, "bspbench", json);
    let fits = rt
        .run(|ctx| (ctx.pid(), measure(ctx, max_bytes, &progress)))
        .unwrap_or_else(|e| {
            eprintln!("bspbench: {e}");
            std::process::exit(1)
        });
    let mpi_floor = mpi_barrier_alltoall(&rt);
    // Threads: every processor's result is here; MPI: this rank's only.
    // Processor 0 prints.
    let Some((_, fit)) = fits.into_iter().find(|(pid, _)| *pid == 0) else {
        return;
    };
    assert!(
        fit.l_seconds > 0.0 && fit.g_seconds_per_byte.is_finite(),
        "measurement failed"
    );
    let p = rt.nprocs();
    if json {
        let mut out = json!({
            "backend": transport,
            "procs": p,
            "router": router.name(),
            "l_seconds": fit.l_seconds,
            "g_seconds_per_byte": fit.g_seconds_per_byte,
            "l_h_seconds": fit.l_h_seconds,
            "gb_per_second_per_processor": 1e-9 / fit.g_seconds_per_byte,
        });
        if let Some(floor) = mpi_floor {
            out["mpi_barrier_alltoall_seconds"] = json!(floor);
            out["l_ratio_to_mpi"] = json!(fit.l_seconds / floor);
        }
        println!("{out}");
    } else {
        println!("bspbench: backend {transport}, p = {p}, router {router}");
        println!(
            "{:>12} {:>14} {:>12}",
            "h bytes", "seconds", "GB/s per proc"
        );
        for &(h, t) in &fit.points {
            println!("{h:>12} {t:>14.9} {:>12.2}", h as f64 / t / 1e9);
        }
        println!("l (empty superstep)      = {:.3} us", fit.l_seconds * 1e6);
        if let Some(floor) = mpi_floor {
            println!(
                "MPI_Barrier + Alltoall   = {:.3} us (l is {:.2}x that; target <= 2)",
                floor * 1e6,
                fit.l_seconds / floor
            );
        }
        println!(
            "g (per byte, fitted)     = {:.3e} s ({:.2} GB/s per processor)",
            fit.g_seconds_per_byte,
            1e-9 / fit.g_seconds_per_byte
        );
        println!("intercept of the h fit   = {:.3} us", fit.l_h_seconds * 1e6);
    }
}
