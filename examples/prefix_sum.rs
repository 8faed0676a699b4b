//! Prefix sums of a block-distributed array, twice: by hand in two
//! supersteps, then with the `bsp::algos::exclusive_scan` collective.
//!
//! The lesson: a parallel scan is a local scan of each block, plus one
//! offset per block, the sum of the blocks before it. By hand, each
//! processor puts its block's total into a slot of every later processor's
//! coarray; after the sync, each adds the totals it received. Both results
//! are checked against a sequential scan; a wrong one exits with status 1.
//!
//! ```text
//! cargo run --release --example prefix_sum -- [--n N] [--procs P] [--json]
//! ```

mod common;

use bsp::algos::{exclusive_scan, Block, Sum};
use bsp::prelude::*;
use common::{checked, mix, ran, verdict, whole_on_root, Args};
use serde_json::json;

const USAGE: &str = "prefix_sum: inclusive prefix sums of n values, by hand and with exclusive_scan

usage: prefix_sum [--n N] [--procs P] [--json]

  --n N      number of values (default 1000000)
  --procs P  processors (default: BSP_PROCS or the number of cores; set by mpirun under MPI)
  --json     print one JSON object";

/// Value i of the global array (the same whatever p): a number below 1000.
fn value(i: usize) -> u64 {
    mix(i as u64) % 1000
}

/// Replaces `xs` by its inclusive prefix sums, sequentially; returns the total.
fn scan_in_place(xs: &mut [u64]) -> u64 {
    let mut running = 0;
    for x in xs {
        running += *x;
        *x = running;
    }
    running
}

/// Superstep 1 puts each block's total to the later processors; after the
/// sync, each processor adds the totals of the blocks before its own.
fn by_hand(ctx: &mut Ctx, mine: &[u64]) -> Vec<u64> {
    let (me, p) = (ctx.pid(), ctx.nprocs());
    // totals[q] on this processor will hold block q's total, for q < me.
    let totals = ctx.coarray::<u64>(p); // collective: every processor registers it
    let mut scanned = mine.to_vec();
    let my_total = scan_in_place(&mut scanned); // local work
    for later in me + 1..p {
        ctx.put(later, &totals, me, &[my_total]); // buffered: lands at the sync
    }
    ctx.sync(); // end of superstep 1: every put has landed
    let offset: u64 = ctx.local(&totals)[..me].iter().sum();
    for x in &mut scanned {
        *x += offset; // superstep 2: local work only
    }
    ctx.release(totals);
    scanned
}

/// The same with the library: `exclusive_scan` of the block totals gives,
/// on processor `me`, the sum of the totals of processors `0..me`.
fn with_exclusive_scan(ctx: &mut Ctx, mine: &[u64]) -> (Vec<u64>, u64) {
    let mut scanned = mine.to_vec();
    let my_total = scan_in_place(&mut scanned);
    let (before, total) = exclusive_scan(ctx, &[my_total], &Sum);
    for x in &mut scanned {
        *x += before[0];
    }
    (scanned, total[0])
}

fn main() -> std::process::ExitCode {
    let args = Args::parse(USAGE, &["json"]);
    args.reject_unknown(&["n", "procs", "json"]);
    let (n, json): (usize, bool) = (args.get("n", 1_000_000), args.flag("json"));
    let result = args.runtime().run(|ctx| {
        let (me, p) = (ctx.pid(), ctx.nprocs());
        // Processor me holds the block Block::new(n, p).range(me) of the array.
        let mine: Vec<u64> = Block::new(n, p).range(me).map(value).collect();
        let hand = by_hand(ctx, &mine);
        let (library, total) = with_exclusive_scan(ctx, &mine);
        // Check: gather both whole on processor 0 (collective, so every
        // processor takes part), and compare there with a sequential scan.
        let (hand, library) = (whole_on_root(ctx, &hand), whole_on_root(ctx, &library));
        let (Some(hand), Some(library)) = (hand, library) else {
            return None; // not processor 0: nothing to check
        };
        let mut want: Vec<u64> = (0..n).map(value).collect();
        scan_in_place(&mut want);
        let (hand_ok, library_ok) = (hand == want, library == want);
        if json {
            let report = json!({"example": "prefix_sum", "n": n, "procs": p,
                "total": total, "by_hand": hand_ok, "exclusive_scan": library_ok,
                "verified": hand_ok && library_ok});
            println!("{report}");
        } else {
            let oracle = "a sequential scan";
            println!("prefix_sum of {n} values on {p} processors: total {total}");
            println!("  by hand:        {}", checked(hand_ok, oracle));
            println!("  exclusive_scan: {}", checked(library_ok, oracle));
        }
        Some(hand_ok && library_ok)
    });
    verdict(&ran("prefix_sum", result))
}
