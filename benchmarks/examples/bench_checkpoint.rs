//! Checkpoint bandwidth against the floor: every processor saves a coarray
//! of `--mib` MiB with `Ctx::checkpoint`, against as many threads each
//! writing and flushing a plain file of the same bytes (in 1 MiB writes),
//! on the same disk, alternately and in alternating order. Prints the bandwidth of both and their ratio (the target:
//! a checkpoint at 0.8× a plain write or better).
//!
//! ```text
//! cargo run --release -p bsp-benchmarks --example bench_checkpoint -- --procs 2 --mib 256 --dir /tmp
//! ```

#[path = "../../examples/common/mod.rs"]
mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use bsp::algos::{all_reduce, Max};
use bsp::prelude::*;
use common::{median, ran, Args};
use serde_json::json;

const USAGE: &str =
    "bench_checkpoint: Ctx::checkpoint against a plain write and fsync of the same bytes

usage: bench_checkpoint [--procs P] [--mib M] [--reps R] [--dir DIR] [--json]

  --procs  processors, and plain writer threads (default 2)
  --mib    MiB each processor saves (default 256)
  --reps   alternating rounds; the median of each is reported (default 5)
  --dir    the directory written to (default: the system's temporary directory)
  --json   one JSON object";

/// Seconds for `p` threads to each write `bytes` bytes to a file of its
/// own in `dir` and flush it to disk.
fn plain(dir: &Path, p: usize, bytes: &[u8]) -> f64 {
    let start = Instant::now();
    std::thread::scope(|s| {
        for q in 0..p {
            s.spawn(move || {
                let path = dir.join(format!("plain-{q}"));
                let mut f = std::fs::File::create(&path).expect("a plain file");
                // In 1 MiB writes, as the checkpoint's buffered writer does.
                for chunk in bytes.chunks(1 << 20) {
                    f.write_all(chunk).expect("a plain write");
                }
                f.sync_all().expect("a plain fsync");
            });
        }
    });
    let seconds = start.elapsed().as_secs_f64();
    for q in 0..p {
        std::fs::remove_file(dir.join(format!("plain-{q}"))).ok();
    }
    seconds
}

/// The slowest processor's seconds in one `Ctx::checkpoint` of a coarray
/// of `words` words.
fn checkpoint(dir: &Path, p: usize, words: usize) -> f64 {
    let rt = Runtime::threads(p).with_checkpoint_dir(dir);
    let out = ran(
        "bench_checkpoint",
        rt.run(|ctx| {
            let a = ctx.coarray_from(vec![ctx.pid() as u64 ^ 0x5a5a; words]);
            ctx.sync();
            let start = Instant::now();
            ctx.checkpoint(&ctx.superstep());
            let mut secs = [start.elapsed().as_secs_f64()];
            all_reduce(ctx, &mut secs, &Max);
            assert_eq!(ctx.local(&a).len(), words);
            secs[0]
        }),
    );
    std::fs::remove_dir_all(dir).ok();
    *out.local()
}

fn main() {
    let args = Args::parse(USAGE, &["json"]);
    args.reject_unknown(&["procs", "mib", "reps", "dir", "json"]);
    let (p, mib, reps): (usize, usize, usize) = (
        args.get("procs", 2),
        args.get("mib", 256),
        args.get("reps", 5),
    );
    let base: PathBuf = args
        .opt::<String>("dir")
        .map_or_else(std::env::temp_dir, PathBuf::from);
    let json = args.flag("json");
    args.require_memory(((p * mib * 3) as u128) << 20, "bench_checkpoint");
    let bytes = vec![0xa5u8; mib << 20];
    let dir = base.join(format!("bsp-bench-checkpoint-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("the benchmark's directory");
    let (mut ours, mut floor) = (Vec::new(), Vec::new());
    for round in 0..reps {
        // Alternate which goes first, so that the disk's state favours neither.
        if round % 2 == 0 {
            floor.push(plain(&dir, p, &bytes));
        }
        ours.push(checkpoint(&dir.join("ckpt"), p, (mib << 20) / 8));
        if round % 2 == 1 {
            floor.push(plain(&dir, p, &bytes));
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    let (ours, floor) = (median(&mut ours), median(&mut floor));
    let total = (p * (mib << 20)) as f64;
    let (ours_gbs, floor_gbs) = (total / ours / 1e9, total / floor / 1e9);
    if json {
        let report = json!({"bench": "checkpoint", "procs": p, "mib_per_processor": mib,
            "checkpoint_seconds": ours, "plain_seconds": floor, "checkpoint_gb_per_second": ours_gbs,
            "plain_gb_per_second": floor_gbs, "ratio_to_plain": ours_gbs / floor_gbs});
        println!("{report}");
    } else {
        println!("{p} processors x {mib} MiB to {}", base.display());
        println!("  plain write + fsync: {floor:.3} s  {floor_gbs:.2} GB/s");
        println!("  Ctx::checkpoint:     {ours:.3} s  {ours_gbs:.2} GB/s");
        println!(
            "  checkpoint / plain bandwidth: {:.2}",
            ours_gbs / floor_gbs
        );
    }
}
