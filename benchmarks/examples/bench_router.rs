//! Router benchmark: delivers h-relations of the shapes of Bader, Helman and
//! JáJá (Eq. 7: h = n/p, 2n/p, 4n/p, 8n/p), plus `shift`, `random` and
//! `skew` (the first ⌈p/8⌉ processors send 3/4 of the data), with
//! the two-phase router, the direct router, the transportation primitive
//! (Ranka, Shankar and Alsabti), the automatic choice and a baseline, and prints
//! seconds, GB/s and the ratio to the baseline. Every time is the slowest
//! processor's, from a barrier to the end of its delivery; the median over
//! all reps is reported.
//!
//! On threads the baseline is each receiver memcpy'ing its data straight
//! out of the senders' buffers (one copy per byte, nothing else). Under MPI
//! (built with `--features mpi`, started by `mpirun`; `--procs` is then
//! ignored) it is one `MPI_Alltoallv` of the same words between contiguous
//! buffers (router `alltoallv` in the `--json` rows). Two more MPI rows
//! show the floor under any BSP superstep: the same exchange after an
//! `MPI_Allgather` of a 32-word row, as every sync agrees on what moves
//! before moving it (`allgather+alltoallv`), and that followed by a copy of
//! every word received (`allgather+alltoallv+copy`), as a delivery that
//! receives into a buffer pays.
//!
//! ```text
//! cargo run --release -p bsp-benchmarks --example bench_router -- --procs 2,8 --mib 1024
//! cargo build --release -p bsp-benchmarks --features mpi --example bench_router
//! mpirun -np 2 target/release/examples/bench_router --mib 256
//! ```

#[path = "../../examples/common/mod.rs"]
mod common;

use std::time::Instant;

use bsp::algos::{all_reduce, Max};
use bsp::prelude::*;
use common::{median, Args, Progress};
use serde_json::json;

const USAGE: &str = "bench_router: h-relation routing, two-phase vs direct vs transportation vs auto vs a baseline (memcpy; MPI_Alltoallv under MPI)

usage: bench_router [--procs 2,8] [--mib 1024 | --kib K] [--reps 5] [--rounds 3] [--shapes h1,h2,h4,h8,shift,random,skew] [--routers two-phase,direct,transportation,auto] [--json]

  --procs   processor counts to measure (threads; under mpirun, -np decides)
  --mib     total payload of one h-relation, in MiB (n = mib * 2^20 / 8 words)
  --kib     the same in KiB (instead of --mib)
  --reps    routings per run (the median of all is reported)
  --rounds  runs per contender, interleaved with the other contenders
  --shapes  which h-relations to route
  --routers which routers to measure (all four by default)
  --json    one JSON object per measurement";

/// Words (u64) processor i sends to processor j, for each shape.
fn counts(shape: &str, n: usize, p: usize) -> Option<Vec<Vec<usize>>> {
    let per = n / p;
    let mut c = vec![vec![0usize; p]; p];
    match shape {
        "shift" => (0..p).for_each(|i| c[i][(i + 1) % p] = per),
        "random" => {
            let mut state = 0x9e37_79b9_7f4a_7c15u64;
            for row in c.iter_mut() {
                for _ in 0..per {
                    // xorshift64*
                    state ^= state >> 12;
                    state ^= state << 25;
                    state ^= state >> 27;
                    let r = state.wrapping_mul(0x2545_f491_4f6c_dd1d);
                    row[(((r >> 32) * p as u64) >> 32) as usize] += 1;
                }
            }
        }
        "skew" => {
            // Few processors send most of the data: the first q = ⌈p/8⌉
            // send 3/4 of it between them, the others the rest, each
            // spreading its words evenly over all destinations.
            let heavy = p.div_ceil(8);
            let total = p * per;
            for (i, row) in c.iter_mut().enumerate() {
                let words = if p == heavy {
                    per
                } else if i < heavy {
                    total * 3 / 4 / heavy
                } else {
                    (total - total * 3 / 4) / (p - heavy)
                };
                for (j, cell) in row.iter_mut().enumerate() {
                    *cell = words / p + usize::from(j < words % p);
                }
            }
        }
        _ => {
            let k: usize = shape.strip_prefix('h')?.parse().ok()?;
            if k == 0 || k > p {
                return None; // h = k n/p cannot exceed n
            }
            // Eq. 7: global destination run lengths v_j, then the global
            // sequence is dealt cyclically over the processors. For h = n/p
            // the paper takes v_j = n/p for every j (a transpose); the
            // formula below is its case h > n/p.
            let (nf, h) = (n as f64, (k * per) as f64);
            let mut v = vec![per; p];
            if k > 1 {
                // v_j for j < 2n/h (j ≠ p − 1), 0 up to p − 1, the rest last.
                let limit = (2.0 * nf / h).ceil() as usize;
                for (j, vj) in v.iter_mut().enumerate().take(p - 1) {
                    *vj = if j < limit {
                        (h * (1.0 - h / (2.0 * nf - h) * j as f64)).floor().max(0.0) as usize
                    } else {
                        0
                    };
                }
                let used: usize = v[..p - 1].iter().sum();
                v[p - 1] = (p * per).saturating_sub(used);
            }
            let mut start = 0;
            for (j, &vj) in v.iter().enumerate() {
                // Elements g in [start, start + vj) with g % p == i.
                for (i, row) in c.iter_mut().enumerate() {
                    let below = |x: usize| (x + p - 1 - i) / p; // #{g < x : g % p == i}
                    row[j] = below(start + vj) - below(start);
                }
                start += vj;
            }
        }
    }
    Some(c)
}

fn word(src: usize, dst: usize, k: usize) -> u64 {
    ((src as u64) << 48) | ((dst as u64) << 40) | k as u64
}

/// Routes the h-relation `reps` times through bsp; seconds of each, as the
/// slowest processor saw it (every rep starts after a sync, a barrier),
/// and the routers that carried the routings (for `auto`, its choices).
///
/// Each processor's outgoing words lie in one coarray, grouped by
/// destination, and go out with `put_from`, so on threads the only copy of
/// the payload is the receiver's, as in the baseline.
fn run_bsp(rt: &Runtime, router: Router, c: &[Vec<usize>], reps: usize) -> (Vec<f64>, String) {
    let p = c.len();
    let times = rt
        .clone()
        .with_procs(p) // ignored under MPI, where the plan is for the world size
        .with_router(router)
        .run(|ctx| {
            assert_eq!(ctx.nprocs(), p, "the plan is for {p} processors");
            let me = ctx.pid();
            let incoming: usize = (0..p).map(|i| c[i][me]).sum();
            // Touch every buffer now so page faults are not timed.
            let inbox = ctx.coarray_from(vec![u64::MAX; incoming]);
            let outgoing: Vec<u64> = (0..p)
                .flat_map(|j| (0..c[me][j]).map(move |k| word(me, j, k)))
                .collect();
            let outbox = ctx.coarray_from(outgoing);
            // Offset of my block in j's inbox: what lower pids send to j.
            let offsets: Vec<usize> = (0..p).map(|j| (0..me).map(|i| c[i][j]).sum()).collect();
            let mut secs = Vec::with_capacity(reps);
            for _ in 0..reps {
                ctx.sync();
                let start = Instant::now();
                let mut from = 0;
                for (j, &len) in c[me].iter().enumerate() {
                    if len > 0 {
                        ctx.put_from(j, &inbox, offsets[j], &outbox, from..from + len);
                    }
                    from += len;
                }
                ctx.sync();
                secs.push(start.elapsed().as_secs_f64());
            }
            let got = ctx.local(&inbox);
            let mut at = 0;
            for (i, row) in c.iter().enumerate() {
                for k in 0..row[me] {
                    assert_eq!(
                        got[at],
                        word(i, me, k),
                        "processor {me}: wrong word from {i}"
                    );
                    at += 1;
                }
            }
            // The slowest processor's time of each repetition.
            all_reduce(ctx, &mut secs, &Max);
            let mut used: Vec<&str> = ctx
                .stats()
                .supersteps
                .iter()
                .flat_map(|s| s.routes.iter().map(|r| r.router.name()))
                .collect();
            used.sort_unstable();
            used.dedup();
            (secs, used.join("+"))
        })
        .unwrap_or_else(|e| {
            eprintln!("bench_router: {e}");
            std::process::exit(1)
        });
    times.into_iter().next().expect("one result at least")
}

/// The baseline: p threads; after a barrier each receiver copies every
/// sender's block for it straight into its own buffer. Seconds of each rep.
fn run_baseline(c: &[Vec<usize>], reps: usize) -> Vec<f64> {
    let p = c.len();
    let outgoing: Vec<Vec<Vec<u64>>> = (0..p)
        .map(|i| {
            (0..p)
                .map(|j| (0..c[i][j]).map(|k| word(i, j, k)).collect())
                .collect()
        })
        .collect();
    let barrier = std::sync::Barrier::new(p);
    let times: Vec<Vec<f64>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..p)
            .map(|me| {
                let (outgoing, barrier) = (&outgoing, &barrier);
                s.spawn(move || {
                    let incoming: usize = (0..p).map(|i| c[i][me]).sum();
                    let mut inbox = vec![u64::MAX; incoming];
                    let mut secs = Vec::with_capacity(reps);
                    for _ in 0..reps {
                        barrier.wait();
                        let start = Instant::now();
                        let mut at = 0;
                        for from in outgoing.iter() {
                            let block = &from[me];
                            inbox[at..at + block.len()].copy_from_slice(block);
                            at += block.len();
                        }
                        // Done when every receiver is done, as a sync is.
                        barrier.wait();
                        secs.push(start.elapsed().as_secs_f64());
                    }
                    assert_eq!(
                        inbox.last(),
                        outgoing.iter().rev().find_map(|f| f[me].last())
                    );
                    secs
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    (0..reps)
        .map(|r| times.iter().map(|t| t[r]).fold(0.0, f64::max))
        .collect()
}

/// What an MPI baseline does besides its `MPI_Alltoallv`.
#[cfg(feature = "mpi")]
#[derive(Clone, Copy, PartialEq)]
enum Floor {
    /// Nothing: the exchange alone (router `alltoallv`).
    Exchange,
    /// First an `MPI_Allgather` of a row of [`ROW_WORDS`] words, as every
    /// sync agrees on what moves before moving it (`allgather+alltoallv`):
    /// the least a superstep of these puts can cost on MPI.
    Agreed,
    /// That, and then a copy of every word received into a second buffer
    /// (`allgather+alltoallv+copy`): the least a superstep costs that
    /// receives into a buffer and then copies into place.
    AgreedCopied,
}

/// The words of the row that [`Floor::Agreed`] all-gathers: about a sync
/// row's at p = 2 (its 28 fixed words plus two counts per processor).
#[cfg(feature = "mpi")]
const ROW_WORDS: usize = 32;

/// An MPI baseline: one `MPI_Alltoallv` (rsmpi's
/// `all_to_all_varcount_into`) of the same words, from one contiguous send
/// buffer grouped by destination into one receive buffer grouped by source,
/// with what `floor` adds. Seconds of each rep, the maximum over ranks (each
/// rep starts after an `MPI_Barrier`).
#[cfg(feature = "mpi")]
fn run_alltoallv(c: &[Vec<usize>], reps: usize, floor: Floor) -> Vec<f64> {
    use bsp::mpi::collective::SystemOperation;
    use bsp::mpi::datatype::{Partition, PartitionMut};
    use bsp::mpi::topology::SimpleCommunicator;
    use bsp::mpi::traits::*;
    use bsp::mpi::Count;

    let world = SimpleCommunicator::world();
    let (me, p) = (world.rank() as usize, world.size() as usize);
    assert_eq!(c.len(), p, "the plan is for {} processors", c.len());
    let prefix = |counts: &[Count]| -> Vec<Count> {
        counts
            .iter()
            .scan(0, |at, &n| {
                let d = *at;
                *at += n;
                Some(d)
            })
            .collect()
    };
    let count = |n: usize| Count::try_from(n).expect("block too large for an MPI count");
    let send_counts: Vec<Count> = (0..p).map(|j| count(c[me][j])).collect();
    let recv_counts: Vec<Count> = (0..p).map(|i| count(c[i][me])).collect();
    let (send_displs, recv_displs) = (prefix(&send_counts), prefix(&recv_counts));
    let send: Vec<u64> = (0..p)
        .flat_map(|j| (0..c[me][j]).map(move |k| word(me, j, k)))
        .collect();
    let mut recv = vec![u64::MAX; recv_counts.iter().map(|&n| n as usize).sum()];
    let mut placed = vec![0u64; recv.len()];
    let row = [me as u64; ROW_WORDS];
    let mut rows = vec![0u64; ROW_WORDS * p];
    let mut secs = Vec::with_capacity(reps);
    for _ in 0..reps {
        world.barrier();
        let start = Instant::now();
        if floor != Floor::Exchange {
            world.all_gather_into(&row[..], &mut rows[..]);
        }
        {
            let s = Partition::new(&send[..], &send_counts[..], &send_displs[..]);
            let mut r = PartitionMut::new(&mut recv[..], &recv_counts[..], &recv_displs[..]);
            world.all_to_all_varcount_into(&s, &mut r);
        }
        if floor == Floor::AgreedCopied {
            placed.copy_from_slice(&recv);
        }
        secs.push(start.elapsed().as_secs_f64());
    }
    if floor != Floor::Exchange {
        let senders = rows.iter().step_by(ROW_WORDS).copied();
        assert!(senders.eq(0..p as u64), "rank {me}: wrong rows");
    }
    if floor == Floor::AgreedCopied {
        assert_eq!(placed, recv, "rank {me}: the copy differs");
    }
    let mut at = 0;
    for (i, row) in c.iter().enumerate() {
        for k in 0..row[me] {
            assert_eq!(recv[at], word(i, me, k), "rank {me}: wrong word from {i}");
            at += 1;
        }
    }
    let mut slowest = vec![0.0f64; reps];
    world.all_reduce_into(&secs[..], &mut slowest[..], SystemOperation::max());
    slowest
}

/// Where this process runs: the threads transport (all processors here) or
/// one rank of an MPI job.
struct Launch {
    rt: Runtime,
    /// Under MPI: this rank and the world size.
    mpi: Option<(usize, usize)>,
}

impl Launch {
    fn new() -> Launch {
        let rt = Runtime::from_env();
        #[cfg(feature = "mpi")]
        if rt.transport() == bsp::Transport::Mpi {
            use bsp::mpi::traits::Communicator;
            let world = bsp::mpi::topology::SimpleCommunicator::world();
            let mpi = Some((world.rank() as usize, world.size() as usize));
            return Launch { rt, mpi };
        }
        Launch { rt, mpi: None }
    }

    /// Whether this process prints (threads, or MPI rank 0).
    fn lead(&self) -> bool {
        self.mpi.is_none_or(|(rank, _)| rank == 0)
    }

    /// The baselines' names: the first is the one the routers are
    /// compared with; under MPI the others are the floors of [`Floor`].
    fn baselines(&self) -> &'static [&'static str] {
        if self.mpi.is_some() {
            &[
                "alltoallv",
                "allgather+alltoallv",
                "allgather+alltoallv+copy",
            ]
        } else {
            &["baseline"]
        }
    }

    /// The seconds per rep of every baseline, in the order of
    /// [`baselines`](Self::baselines).
    fn run_baselines(&self, c: &[Vec<usize>], reps: usize) -> Vec<Vec<f64>> {
        #[cfg(feature = "mpi")]
        if self.mpi.is_some() {
            return [Floor::Exchange, Floor::Agreed, Floor::AgreedCopied]
                .map(|floor| run_alltoallv(c, reps, floor))
                .into();
        }
        vec![run_baseline(c, reps)]
    }
}

fn main() {
    let args = Args::parse(USAGE, &["json"]);
    args.reject_unknown(&[
        "procs", "mib", "kib", "reps", "rounds", "shapes", "routers", "json",
    ]);
    let launch = Launch::new();
    let procs: Vec<usize> = match launch.mpi {
        // Under MPI, `mpirun -np` decides p and --procs is ignored.
        Some((_, size)) => vec![size],
        None => args.list("procs", &[2, 8]),
    };
    let kib: usize = args.opt("kib").unwrap_or(args.get("mib", 1024usize) << 10);
    let reps: usize = args.get("reps", 5).max(1);
    let rounds: usize = args.get("rounds", 3).max(1);
    let default_shapes = ["h1", "h2", "h4", "h8", "shift", "random", "skew"].map(String::from);
    let shapes: Vec<String> = args.list("shapes", &default_shapes);
    let json = args.flag("json");
    let lead = launch.lead();
    let transport = launch.rt.transport().name();
    let n = kib << 7; // words of 8 bytes
    if lead && !json {
        if launch.mpi.is_some() {
            println!(
                "bench_router: MPI, np = {}; baseline: MPI_Alltoallv (and two floors of a sync)",
                procs[0]
            );
        }
        println!(
            "{:>5} {:>7} {:>7} {:>24} {:>12} {:>12} {:>8} {:>9}  auto took",
            "procs", "shape", "h/(n/p)", "router", "bytes", "seconds", "GB/s", "vs base"
        );
    }
    let routers: Vec<Router> = args.list(
        "routers",
        &[
            Router::TwoPhase,
            Router::Direct,
            Router::Transportation,
            Router::Auto,
        ],
    );
    let steps = (procs.len() * shapes.len() * rounds) as u64;
    let progress = Progress::new(steps, "bench_router", json || !lead);
    for &p in &procs {
        // (h / (n/p) in tenths, router, seconds) of every shape, for the spreads.
        let mut rows: Vec<(usize, &str, f64)> = Vec::new();
        for shape in &shapes {
            let Some(c) = counts(shape, n, p) else {
                if lead && !json {
                    progress.suspend(|| {
                        println!("{p:>5} {shape:>7}  (skipped: h = k·n/p needs k <= p)")
                    });
                }
                progress.tick();
                continue;
            };
            let words = c.iter().flatten().sum::<usize>();
            let bytes = 8 * words;
            // h: the most words a processor sends or receives.
            let h = (0..p)
                .map(|q| {
                    c[q].iter()
                        .sum::<usize>()
                        .max((0..p).map(|i| c[i][q]).sum())
                })
                .max()
                .unwrap_or(0);
            let baselines = launch.baselines();
            let mut samples: Vec<Vec<f64>> = vec![Vec::new(); baselines.len() + routers.len()];
            let mut took = String::new();
            for round in 0..rounds {
                progress.step(format!("p = {p}, {shape}, round {}", round + 1));
                // Interleave the contenders so drift on a shared machine hits all alike.
                for (k, secs) in launch.run_baselines(&c, reps).into_iter().enumerate() {
                    samples[k].extend(secs);
                }
                for (k, &router) in routers.iter().enumerate() {
                    let (secs, used) = run_bsp(&launch.rt, router, &c, reps);
                    samples[baselines.len() + k].extend(secs);
                    if router == Router::Auto {
                        took = used;
                    }
                }
                progress.tick();
            }
            if !lead {
                continue;
            }
            let base = median(&mut samples[0]);
            let names = (baselines.iter().copied()).chain(routers.iter().map(|r| r.name()));
            progress.suspend(|| {
                for (name, s) in names.zip(samples.iter_mut()) {
                    let secs = median(s);
                    let gbs = bytes as f64 / secs / 1e9;
                    let tenths = (10.0 * h as f64 * p as f64 / words as f64).round() as usize;
                    rows.push((tenths, name, secs));
                    let took = if name == Router::Auto.name() { took.as_str() } else { "" };
                    if json {
                        let mut row = json!({
                            "router": name,
                            "shape": shape,
                            "procs": p,
                            "bytes": bytes,
                            "h_bytes": 8 * h,
                            "seconds": secs,
                            "gb_per_second": gbs,
                            "ratio_to_baseline": base / secs,
                            "transport": transport,
                        });
                        if !took.is_empty() {
                            row["auto_took"] = json!(took);
                        }
                        println!("{row}");
                    } else {
                        println!(
                        "{p:>5} {shape:>7} {:>7.2} {name:>24} {bytes:>12} {secs:>12.8} {gbs:>8.2} {:>8.2}x  {took}",
                        h as f64 * p as f64 / words as f64,
                        base / secs
                    );
                    }
                }
            });
        }
        if lead {
            progress.suspend(|| print_spreads(p, &rows, json));
        }
    }
    progress.finish();
}

/// For every h (as h/(n/p) to a tenth) shared by several shapes, each
/// router's spread: its slowest time over its fastest among those shapes.
fn print_spreads(p: usize, rows: &[(usize, &str, f64)], json: bool) {
    let mut hs: Vec<usize> = rows.iter().map(|r| r.0).collect();
    hs.sort_unstable();
    hs.dedup();
    for h in hs {
        for name in ["two-phase", "direct", "transportation", "auto"] {
            let times: Vec<f64> = rows
                .iter()
                .filter(|r| r.0 == h && r.1 == name)
                .map(|r| r.2)
                .collect();
            if times.len() < 2 {
                continue;
            }
            let spread = times.iter().copied().fold(0.0, f64::max)
                / times.iter().copied().fold(f64::INFINITY, f64::min);
            if json {
                let row = json!({
                    "router": name,
                    "shape": "spread",
                    "procs": p,
                    "h_over_n_per_p": h as f64 / 10.0,
                    "shapes": times.len(),
                    "spread": spread,
                });
                println!("{row}");
            } else {
                println!(
                    "  p = {p}: {name} over the {} shapes with h = {:.1} n/p: slowest / fastest = {spread:.2}",
                    times.len(),
                    h as f64 / 10.0
                );
            }
        }
    }
}
