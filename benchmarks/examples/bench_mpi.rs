//! MPI micro-benchmark: bsp under MPI against MPI's own collectives, in one
//! run, as ratios.
//!
//! ```text
//! cargo build --release -p bsp-benchmarks --features mpi --example bench_mpi
//! mpirun -np 2 target/release/examples/bench_mpi [--json] [--quick]
//! ```
//!
//! * **Empty sync**: the latency of `ctx.sync()` with nothing to deliver
//!   (its rows through the sync window, `transport/mpi/fenced.rs` in
//!   bsp-core; one `MPI_Allgather` of them with `BSP_MPI_SYNC=allgather`)
//!   against an `MPI_Barrier` followed by an `MPI_Alltoall` of p integers
//!   — what a hand-written superstep of MPI collectives needs at least.
//!   Target: ratio ≤ 2. `one_sided.sh` compares with one-sided MPI.
//! * **Routing**: every processor puts `n/p` bytes into every processor
//!   (n bytes per processor per superstep), routed by the two-phase router
//!   and by the direct router, against one `MPI_Alltoallv` of the same bytes between
//!   contiguous buffers through rsmpi (`all_to_all_varcount_into`). GB/s is
//!   the bytes all processors send per second. Target at np = 2: two-phase
//!   ≥ 0.6 × `MPI_Alltoallv`.
//!
//! Each figure is the best of several trials of many iterations, timed on
//! rank 0 between barriers. The program checks the delivered data and exits
//! non-zero on a wrong answer.

use std::time::Instant;

use bsp::mpi::datatype::{Partition, PartitionMut};
use bsp::mpi::topology::SimpleCommunicator;
use bsp::mpi::traits::*;
use bsp::mpi::Count;
use bsp::{Router, Runtime};
use serde_json::json;

const TRIALS: usize = 5;
/// The words of the row each processor contributes to the all-gather
/// that opens a sync (bsp-core's `protocol.rs`, `SyncRow::WORDS`).
const SYNC_ROW_WORDS: usize = 28;

/// Best (smallest) seconds per iteration over `TRIALS` trials of `iters`.
fn best_of(world: &SimpleCommunicator, iters: usize, mut body: impl FnMut()) -> f64 {
    body(); // warm-up
    let mut best = f64::INFINITY;
    for _ in 0..TRIALS {
        world.barrier();
        let t = Instant::now();
        for _ in 0..iters {
            body();
        }
        world.barrier();
        best = best.min(t.elapsed().as_secs_f64() / iters as f64);
    }
    best
}

/// Seconds per empty sync, best of `TRIALS` trials (timed inside the run).
fn bsp_empty_sync(rt: &Runtime, iters: usize) -> f64 {
    let mine = rt
        .run(|ctx| {
            let mut best = f64::INFINITY;
            ctx.sync();
            for _ in 0..TRIALS {
                ctx.sync();
                let t = Instant::now();
                for _ in 0..iters {
                    ctx.sync();
                }
                best = best.min(t.elapsed().as_secs_f64() / iters as f64);
            }
            best
        })
        .expect("bsp run");
    *mine.local()
}

fn byte(src: usize, dst: usize, i: usize) -> u8 {
    (src * 131 + dst * 31 + i) as u8
}

/// Seconds per superstep of the all-to-all put pattern, and a correctness
/// check. The data goes out with `put_from` (no copy at the call), so what
/// is measured is the router and the transport.
fn bsp_route(rt: &Runtime, n: usize, iters: usize) -> (f64, bool) {
    let mine = rt
        .run(|ctx| {
            let (me, p) = (ctx.pid(), ctx.nprocs());
            let m = n / p;
            let a = ctx.coarray::<u8>(m * p);
            let src: Vec<u8> = (0..p)
                .flat_map(|dst| (0..m).map(move |i| byte(me, dst, i)))
                .collect();
            let src = ctx.coarray_from(src);
            let step = |ctx: &mut bsp::Ctx| {
                for dst in 0..p {
                    ctx.put_from(dst, &a, me * m, &src, dst * m..(dst + 1) * m);
                }
                ctx.sync();
            };
            step(ctx);
            let mut best = f64::INFINITY;
            for _ in 0..TRIALS {
                ctx.sync();
                let t = Instant::now();
                for _ in 0..iters {
                    step(ctx);
                }
                best = best.min(t.elapsed().as_secs_f64() / iters as f64);
            }
            let local = ctx.local(&a);
            let ok = (0..p).all(|s| (0..m).all(|i| local[s * m + i] == byte(s, me, i)));
            (best, ok)
        })
        .expect("bsp run");
    *mine.local()
}

/// Seconds per `MPI_Alltoallv` of the same pattern, and a correctness check.
fn mpi_alltoallv(world: &SimpleCommunicator, n: usize, iters: usize) -> (f64, bool) {
    let (me, p) = (world.rank() as usize, world.size() as usize);
    let m = n / p;
    let send: Vec<u8> = (0..p)
        .flat_map(|dst| (0..m).map(move |i| byte(me, dst, i)))
        .collect();
    let mut recv = vec![0u8; m * p];
    let counts: Vec<Count> = vec![m as Count; p];
    let displs: Vec<Count> = (0..p).map(|k| (k * m) as Count).collect();
    let t = best_of(world, iters, || {
        let s = Partition::new(&send[..], &counts[..], &displs[..]);
        let mut r = PartitionMut::new(&mut recv[..], &counts[..], &displs[..]);
        world.all_to_all_varcount_into(&s, &mut r);
    });
    let ok = (0..p).all(|s| (0..m).all(|i| recv[s * m + i] == byte(s, me, i)));
    (t, ok)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let json = args.iter().any(|a| a == "--json");
    let quick = args.iter().any(|a| a == "--quick");
    let rt = Runtime::mpi();
    let world = SimpleCommunicator::world();
    let (me, p) = (world.rank() as usize, world.size() as usize);
    let lead = me == 0;
    let mut ok = true;

    // ----- empty sync ----------------------------------------------------
    let iters = if quick { 200 } else { 2000 };
    let sync = bsp_empty_sync(&rt, iters);
    let counts_out = vec![1 as Count; p];
    let mut counts_in = vec![0 as Count; p];
    let barrier_a2a = best_of(&world, iters, || {
        world.barrier();
        world.all_to_all_into(&counts_out[..], &mut counts_in[..]);
    });
    let barrier = best_of(&world, iters, || world.barrier());
    let row = [0u64; SYNC_ROW_WORDS];
    let mut rows = vec![0u64; SYNC_ROW_WORDS * p];
    let allgather = best_of(&world, iters, || {
        world.all_gather_into(&row[..], &mut rows[..])
    });
    let ratio = sync / barrier_a2a;
    if lead {
        if json {
            let json = json!({
                "bench": "empty_sync",
                "transport": "mpi",
                "np": p,
                "bsp_us": sync * 1e6,
                "barrier_alltoall_us": barrier_a2a * 1e6,
                "barrier_us": barrier * 1e6,
                "allgather_row_us": allgather * 1e6,
                "ratio": ratio,
            });
            println!("{json}");
        } else {
            println!("bench_mpi: np = {p}");
            println!();
            println!("empty superstep latency (best of {TRIALS} × {iters})");
            println!("  {:<36} {:>10.2} µs", "bsp sync (empty)", sync * 1e6);
            println!(
                "  {:<36} {:>10.2} µs",
                "MPI_Barrier + MPI_Alltoall(p ints)",
                barrier_a2a * 1e6
            );
            println!("  {:<36} {:>10.2} µs", "MPI_Barrier", barrier * 1e6);
            let allgather_row = format!("MPI_Allgather({SYNC_ROW_WORDS} words)");
            println!("  {allgather_row:<36} {:>10.2} µs", allgather * 1e6);
            println!("  ratio bsp / (barrier + alltoall) = {ratio:.2}  (target ≤ 2)");
            println!();
            println!("routing: n bytes per processor per superstep, n/p to every processor");
            println!(
                "  {:>10} {:<28} {:>10} {:>9} {:>8}",
                "n", "method", "ms/step", "GB/s", "ratio"
            );
        }
    }

    // ----- routing -------------------------------------------------------
    let sizes: &[usize] = if quick {
        &[1 << 16, 1 << 20]
    } else {
        &[1 << 16, 1 << 20, 8 << 20]
    };
    let rounds = if quick { 1 } else { 3 };
    for &n in sizes {
        let n = n / p * p;
        let iters = ((64 << 20) / n.max(1)).clamp(3, 200) / if quick { 4 } else { 1 };
        let iters = iters.max(2);
        let variants = [("two-phase", Router::TwoPhase), ("direct", Router::Direct)];
        // Rounds interleave the contenders, so that drift on a shared
        // machine hits all alike; each keeps its best.
        let mut base = f64::INFINITY;
        let mut best = vec![f64::INFINITY; variants.len()];
        for _ in 0..rounds {
            let (t, base_ok) = mpi_alltoallv(&world, n, iters);
            ok &= base_ok;
            base = base.min(t);
            for (v, &(_, router)) in variants.iter().enumerate() {
                let (t, route_ok) = bsp_route(&rt.clone().with_router(router), n, iters);
                ok &= route_ok;
                best[v] = best[v].min(t);
            }
        }
        let gbps = |t: f64| (n * p) as f64 / t / 1e9;
        let mut rows = vec![("MPI_Alltoallv (rsmpi)", "mpi", base)];
        for (&(label, router), &t) in variants.iter().zip(&best) {
            rows.push((label, router.name(), t));
        }
        if lead {
            for (label, router, t) in rows {
                if json {
                    let json = json!({
                        "bench": "route",
                        "transport": "mpi",
                        "np": p,
                        "bytes_per_proc": n,
                        "router": router,
                        "seconds": t,
                        "gbps": gbps(t),
                        "baseline_gbps": gbps(base),
                        "ratio": base / t,
                    });
                    println!("{json}");
                } else {
                    println!(
                        "  {:>10} {:<28} {:>10.3} {:>9.3} {:>8.2}",
                        n,
                        label,
                        t * 1e3,
                        gbps(t),
                        base / t
                    );
                }
            }
        }
    }

    // Every rank checked its own data; agree on the verdict.
    let mine = u8::from(ok);
    let mut all = vec![0u8; p];
    world.all_gather_into(&mine, &mut all[..]);
    if all.contains(&0) {
        if lead {
            eprintln!("bench_mpi: WRONG delivered data");
        }
        std::process::exit(1);
    }
}
