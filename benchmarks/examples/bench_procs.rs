//! Scaling in p: the router's overhead when every processor puts one 8-byte
//! word to its right neighbour in every superstep, on threads with many
//! more processors than cores. Prints seconds per superstep (processor 0's
//! wall time between syncs, median over the steps after the first) and the
//! process's peak resident memory (`VmHWM`), which covers every run made
//! by the process so far: give one p and one router per invocation for a
//! clean memory figure.
//!
//! ```text
//! cargo build --release -p bsp-benchmarks --example bench_procs
//! target/release/examples/bench_procs --procs 1024 --router two-phase --steps 20
//! ```

#[path = "../../examples/common/mod.rs"]
mod common;

use std::time::Instant;

use bsp::prelude::*;
use common::{median, ran, Args};
use serde_json::json;

const USAGE: &str = "bench_procs: one 8-byte put per processor per superstep, for large p

usage: bench_procs [--procs 256,1024] [--router two-phase,direct,auto] [--steps 20] [--json]

  --procs   processor counts (threads)
  --router  routers to measure
  --steps   supersteps per run (the first is not counted)
  --json    one JSON object per measurement";

/// Peak resident memory of this process so far, in bytes (Linux; 0 elsewhere).
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn main() {
    let args = Args::parse(USAGE, &["json"]);
    args.reject_unknown(&["procs", "router", "steps", "json"]);
    let procs: Vec<usize> = args.list("procs", &[256, 1024]);
    let routers: Vec<Router> =
        args.list("router", &[Router::TwoPhase, Router::Direct, Router::Auto]);
    let steps: usize = args.get("steps", 20).max(2);
    let json = args.flag("json");
    if !json {
        println!(
            "{:>6} {:>10} {:>12} {:>12}",
            "procs", "router", "s/superstep", "peak MiB"
        );
    }
    for &p in &procs {
        for &router in &routers {
            let rt = Runtime::from_env().with_procs(p).with_router(router);
            let results = ran(
                "bench_procs",
                rt.run(|ctx| {
                    let (me, p) = (ctx.pid(), ctx.nprocs());
                    let cell = ctx.coarray::<u64>(1);
                    let mut secs = Vec::with_capacity(steps);
                    for step in 0..steps {
                        let start = Instant::now();
                        ctx.put((me + 1) % p, &cell, 0, &[(me + step) as u64]);
                        ctx.sync();
                        secs.push(start.elapsed().as_secs_f64());
                        let left = (me + p - 1) % p;
                        assert_eq!(ctx.local(&cell)[0], (left + step) as u64);
                    }
                    secs
                }),
            );
            let mut secs = results.local()[1..].to_vec();
            let per_step = median(&mut secs);
            let peak = peak_rss();
            if json {
                let row = json!({
                    "router": router.name(),
                    "procs": p,
                    "steps": steps,
                    "seconds_per_superstep": per_step,
                    "peak_rss_bytes": peak,
                });
                println!("{row}");
            } else {
                println!(
                    "{p:>6} {:>10} {per_step:>12.6} {:>12.1}",
                    router.name(),
                    peak as f64 / (1u64 << 20) as f64
                );
            }
        }
    }
}
