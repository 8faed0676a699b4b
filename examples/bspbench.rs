//! Measures the BSP machine parameters of this runtime, as bspbench does
//! for BSPlib: l, the seconds of an empty superstep, and g, the seconds per
//! byte of a full h-relation (every processor sends h bytes, spread evenly
//! over all processors, and receives h bytes), fitted as
//! `T(h) = l_h + g·h` by least squares over several h.
//!
//! ```text
//! cargo run --release --example bspbench -- --procs 2 --router two-phase
//! ```

mod common;

use std::time::Instant;

use bsp::prelude::*;
use common::{median, Args, Json};

const USAGE: &str =
    "bspbench: measure l (empty superstep) and g (seconds per byte of an h-relation)

usage: bspbench [--procs P] [--router two-phase|direct] [--max-kib 4096] [--json]

  --procs    processor count (threads; default: BSP_PROCS or the number of cores)
  --router   h-relation router (default two-phase)
  --max-kib  largest h per processor, in KiB (h doubles from 1 KiB up to it)
  --json     print one JSON object";

struct Fit {
    l_seconds: f64,
    l_h_seconds: f64,
    g_seconds_per_byte: f64,
    points: Vec<(usize, f64)>,
}

/// Least-squares line through `(x, y)` points: (intercept, slope).
fn fit_line(points: &[(usize, f64)]) -> (f64, f64) {
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0 as f64).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxy: f64 = points.iter().map(|p| (p.0 as f64 - mx) * (p.1 - my)).sum();
    let sxx: f64 = points.iter().map(|p| (p.0 as f64 - mx).powi(2)).sum();
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    (my - slope * mx, slope)
}

fn measure(ctx: &mut Ctx, max_bytes: usize) -> Fit {
    let p = ctx.nprocs();
    // l: median over batches of the mean time of many empty syncs.
    let syncs = if p <= 8 { 2000 } else { 200 };
    let mut batches = Vec::new();
    for _ in 0..7 {
        ctx.sync();
        let start = Instant::now();
        for _ in 0..syncs {
            ctx.sync();
        }
        batches.push(start.elapsed().as_secs_f64() / syncs as f64);
    }
    let l_seconds = median(&mut batches);

    // g: full h-relations of h bytes per processor, h/p to each processor.
    let words = (max_bytes / 8).max(p);
    let src = ctx.coarray_from(vec![ctx.pid() as u64; words]);
    let dst = ctx.coarray_from(vec![0u64; words]);
    let mut points = Vec::new();
    let mut h = (1024 / 8).max(p) * 8;
    while h <= max_bytes {
        let per = h / 8 / p; // words to each processor
        let reps = (64 << 20) / h.max(1 << 16);
        let mut samples = Vec::new();
        for _ in 0..3 {
            ctx.sync();
            let start = Instant::now();
            for _ in 0..reps.max(4) {
                for t in 0..p {
                    ctx.put_from(t, &dst, ctx.pid() * per, &src, t * per, per);
                }
                ctx.sync();
            }
            samples.push(start.elapsed().as_secs_f64() / reps.max(4) as f64);
        }
        points.push((per * p * 8, median(&mut samples)));
        h *= 2;
    }
    let (l_h_seconds, g_seconds_per_byte) = fit_line(&points);
    Fit {
        l_seconds,
        l_h_seconds,
        g_seconds_per_byte,
        points,
    }
}

fn main() {
    let args = Args::parse(USAGE, &["json"]);
    args.reject_unknown(&["procs", "router", "max-kib", "json"]);
    let mut rt = Runtime::from_env();
    if let Some(p) = args.opt("procs") {
        rt = rt.procs(p);
    }
    let router: Router = args.get("router", rt.router_kind());
    let max_bytes = args.get::<usize>("max-kib", 4096) << 10;
    let json = args.flag("json");
    let rt = rt.router(router);
    let transport = rt.transport().name();
    let result = rt.run(|ctx| {
        let fit = measure(ctx, max_bytes);
        if ctx.pid() != 0 {
            return;
        }
        if json {
            Json::new()
                .str("backend", transport)
                .num("procs", ctx.nprocs())
                .str("router", router.name())
                .num("l_seconds", fit.l_seconds)
                .num("g_seconds_per_byte", fit.g_seconds_per_byte)
                .num("l_h_seconds", fit.l_h_seconds)
                .num("gb_per_second_per_processor", 1e-9 / fit.g_seconds_per_byte)
                .print();
        } else {
            println!(
                "bspbench: backend {transport}, p = {}, router {router}",
                ctx.nprocs()
            );
            println!(
                "{:>12} {:>14} {:>12}",
                "h bytes", "seconds", "GB/s per proc"
            );
            for &(h, t) in &fit.points {
                println!("{h:>12} {t:>14.9} {:>12.2}", h as f64 / t / 1e9);
            }
            println!("l (empty superstep)      = {:.3} us", fit.l_seconds * 1e6);
            println!(
                "g (per byte, fitted)     = {:.3e} s ({:.2} GB/s per processor)",
                fit.g_seconds_per_byte,
                1e-9 / fit.g_seconds_per_byte
            );
            println!("intercept of the h fit   = {:.3} us", fit.l_h_seconds * 1e6);
        }
        assert!(
            fit.l_seconds > 0.0 && fit.g_seconds_per_byte.is_finite(),
            "measurement failed"
        );
    });
    if let Err(e) = result {
        eprintln!("bspbench: {e}");
        std::process::exit(1);
    }
}
