//! Level-synchronous breadth-first search on a seeded random graph whose
//! vertices are block-distributed: one superstep per level.
//!
//! The lesson: each superstep, every processor expands its frontier (its
//! vertices of the current level) and sends each neighbour it does not own
//! to its owner through a queue of `usize` messages (`ctx.queue`: raw
//! bytes, no serialization); after the sync, the vertices not seen before
//! are the next frontier. The sync also carries a vote (`ctx.sync_any`:
//! "my frontier was not empty"), so all learn in that same sync when every
//! frontier was empty, at no superstep of its own. Checked against a
//! sequential BFS (exit status 1 if wrong).
//!
//! ```text
//! cargo run --release --example bfs -- [--n N] [--degree D] [--procs P] [--json]
//! ```

mod common;

use std::collections::VecDeque;

use bsp::algos::Block;
use bsp::prelude::*;
use common::{checked, mix, ran, verdict, whole_on_root, Args};
use serde_json::json;

const USAGE: &str = "bfs: breadth-first search from vertex 0 of a random directed graph

usage: bfs [--n N] [--degree D] [--procs P] [--json]

  --n N       number of vertices, at least 1 (default 500000)
  --degree D  edges out of each vertex, to pseudo-random vertices (default 4)
  --procs P   processors (default: BSP_PROCS or the number of cores; set by mpirun under MPI)
  --json      print one JSON object";

/// The level of a vertex that the search does not reach.
const UNREACHED: u32 = u32::MAX;

/// The graph: the `degree` out-neighbours of vertex v, computed from v
/// alone, so that no processor stores any other processor's edges.
fn neighbours(v: usize, n: usize, degree: usize) -> impl Iterator<Item = usize> {
    (0..degree).map(move |j| (mix((v * degree + j) as u64) % n as u64) as usize)
}

/// The level of every vertex, by the textbook sequential BFS.
fn sequential_bfs(n: usize, degree: usize) -> Vec<u32> {
    let mut level = vec![UNREACHED; n];
    level[0] = 0;
    let mut queue = VecDeque::from([0]);
    while let Some(v) = queue.pop_front() {
        for w in neighbours(v, n, degree) {
            if level[w] == UNREACHED {
                level[w] = level[v] + 1;
                queue.push_back(w);
            }
        }
    }
    level
}

/// The levels of this processor's vertices (its block of 0..n), and the
/// supersteps the run has taken (the search's, and those before it).
fn bfs(ctx: &mut Ctx, n: usize, degree: usize) -> (Vec<u32>, usize) {
    let (me, p) = (ctx.pid(), ctx.nprocs());
    let blocks = Block::new(n, p);
    let first = blocks.start(me); // my vertices are first..first + level.len()
    let mut level = vec![UNREACHED; blocks.local_len(me)];
    // The registration is collective: every processor makes it.
    let found = ctx.queue::<usize>(); // vertices found, sent to their owner
    let mut frontier = Vec::new();
    if blocks.owner(0) == me {
        level[0] = 0; // the source, vertex 0, is the first vertex of processor 0
        frontier.push(0);
    }
    let mut depth = 0; // the level of the frontier
    loop {
        // Expand the frontier: keep my neighbours, send the others away.
        let mut candidates = Vec::new();
        for &v in &frontier {
            for w in neighbours(v, n, degree) {
                let owner = blocks.owner(w);
                if owner == me {
                    candidates.push(w);
                } else {
                    ctx.send(owner, &found, &w);
                }
            }
        }
        // Messages delivered, and the vote counted: every processor gets
        // the same answer, so all stop in the same superstep. (An
        // `all_reduce` of the sizes would do as well, with supersteps of
        // its own.)
        let anyone_busy = ctx.sync_any(!frontier.is_empty());
        if !anyone_busy {
            return (level, ctx.superstep());
        }
        candidates.extend(ctx.receive(&found));
        frontier.clear();
        for w in candidates {
            if level[w - first] == UNREACHED {
                level[w - first] = depth + 1;
                frontier.push(w);
            }
        }
        depth += 1;
    }
}

fn main() -> std::process::ExitCode {
    let args = Args::parse(USAGE, &["json"]);
    args.reject_unknown(&["n", "degree", "procs", "json"]);
    let (n, degree): (usize, usize) = (args.get("n", 500_000), args.get("degree", 4));
    if n == 0 {
        args.fail("--n must be at least 1");
    }
    let result = args.runtime().run(|ctx| {
        let p = ctx.nprocs();
        let (mine, supersteps) = bfs(ctx, n, degree);
        // Check: all levels on processor 0, against a sequential BFS there.
        let levels = whole_on_root(ctx, &mine)?; // processor 0 goes on
        let ok = levels == sequential_bfs(n, degree);
        let mut per_level = Vec::new(); // how many vertices each level holds
        for &l in levels.iter().filter(|&&l| l != UNREACHED) {
            per_level.resize(per_level.len().max(l as usize + 1), 0);
            per_level[l as usize] += 1;
        }
        let reached: usize = per_level.iter().sum();
        if args.flag("json") {
            let report = json!({"example": "bfs", "n": n, "degree": degree, "procs": p,
                "supersteps": supersteps, "reached": reached, "per_level": per_level,
                "verified": ok});
            println!("{report}");
        } else {
            let sizes: Vec<String> = per_level.iter().map(usize::to_string).collect();
            println!("bfs from vertex 0 of {n} vertices, out-degree {degree}, on {p} processors");
            println!(
                "  reached {reached} vertices in {} levels ({supersteps} supersteps)",
                sizes.len()
            );
            println!("  vertices per level: {}", sizes.join(" "));
            println!("  {}", checked(ok, "a sequential BFS"));
        }
        Some(ok)
    });
    verdict(&ran("bfs", result))
}
