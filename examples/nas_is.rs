//! The NAS Parallel Benchmarks IS kernel on BSP: every iteration ranks all
//! keys with the counting sort's transposed prefix sums (radix = the
//! class's max key), checks five ranks against NPB's table; after the timed
//! loop the keys are moved to their ranks (step 6) and the whole sequence is
//! verified. `--move-keys` moves them in every iteration too.
//!
//! ```text
//! cargo run --release --example nas_is -- --class B --procs 2
//! ```

mod common;

use std::process::ExitCode;
use std::time::Instant;

use bsp::algos::{all_gather, all_reduce, gather, Max, Sum};
use bsp::prelude::*;
use bsp::sort::expert::BucketRanker;
use bsp::sort::inputs::block_range;
use bsp::sort::nas::Class;
use bsp::sort::CountingSort;
use common::{ran, verdict, Args, Progress};
use serde_json::json;

const ITERATIONS: usize = 10;

const HELP: &str = "\
nas_is: the NAS Parallel Benchmarks IS (integer sort) kernel

usage: nas_is [options]
  --class S|W|A|B|C   problem class (default A)
  --procs P           processors (default: BSP_PROCS or the number of cores)
  --router two-phase|direct   h-relation router (default: BSP_ROUTER or two-phase)
  --ranker buckets|counting   how keys are ranked (default buckets): by coarse
                      buckets (--buckets), each key moved once to the processor
                      owning its bucket and counted there (as NPB does), or by
                      the counting sort over all max_key values (transposes of
                      the count matrix)
  --move-keys         with the counting ranker (implied): also move every key to
                      its rank in every timed iteration (step 6 of the counting
                      sort); by default only the ranks are computed in the loop
  --buckets auto|N    with the bucket ranker: 2^N coarse buckets (N from 1 to
                      11; NPB uses 10), or auto (default): each width from 2^8
                      to 2^11 timed on the keys before the timed loop, like the
                      warm-up, and the fastest kept (BucketRanker::tune)
  --stores auto|lines|plain   how the scatter stores (default auto: timed,
                      the faster way kept; see bsp::expert::stores)
  --json              print one JSON object instead of text
  --help              this text";

/// The class named by `--class` (default A).
fn class(args: &Args) -> Class {
    let name: String = args.get("class", "A".to_owned());
    Class::from_name(&name).unwrap_or_else(|| {
        args.fail(&format!(
            "--class: unknown class {name:?} (expected S, W, A, B or C)"
        ))
    })
}

/// What processor 0 reports.
struct Outcome {
    seconds: f64,
    passed: u64,
    full: bool,
    /// The bucket ranker's bucket digit, in bits.
    bucket_bits: Option<u32>,
}

/// The whole benchmark on one processor; `Some` on processor 0.
///
/// Each timed iteration ranks all keys: steps 1–5 of the counting sort
/// (local counts, transposed prefix sums) give every key value's global rank
/// without moving a key. With `move_keys`, every iteration also runs step 6
/// and moves the keys to their ranks (as NPB's MPI version redistributes
/// keys every iteration); otherwise that happens once, after the timed
/// loop, for the full verification.
/// How the keys are ranked.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ranker {
    Buckets,
    Counting { move_keys: bool },
}

fn nas_is(
    ctx: &mut Ctx,
    class: Class,
    ranker: Ranker,
    bucket_bits: Option<u32>,
    progress: &Progress,
) -> Option<Outcome> {
    let (p, me) = (ctx.nprocs(), ctx.pid());
    let tick = |what: &str| {
        if me == 0 {
            progress.step(what);
            progress.tick();
        }
    };
    let range = block_range(me, p, class.total_keys);
    let mut keys = class.keys(range.clone());
    let mut sorted = vec![0u32; keys.len()];
    let mut counting = match ranker {
        Ranker::Counting { .. } => Some(CountingSort::new(ctx, keys.len(), class.max_key as usize)),
        Ranker::Buckets => None,
    };
    let mut buckets = match ranker {
        Ranker::Buckets => Some(match bucket_bits {
            Some(bits) => BucketRanker::new(ctx, class.max_key).with_bucket_bits(bits),
            None => BucketRanker::new(ctx, class.max_key),
        }),
        Ranker::Counting { .. } => None,
    };
    if let (Some(ranker), None) = (buckets.as_mut(), bucket_bits) {
        ranker.tune(ctx, &keys); // untimed, like the warm-up
    }

    let mut iteration = |ctx: &mut Ctx, it: usize| -> u64 {
        for (index, key) in class.modifications(it) {
            if range.contains(&index) {
                keys[index - range.start] = key;
            }
        }
        // The test keys, from the processors holding them.
        let held: Vec<u64> = class
            .test_index
            .iter()
            .map(|&i| {
                if range.contains(&i) {
                    u64::from(keys[i - range.start])
                } else {
                    u64::MAX
                }
            })
            .collect();
        if let Some(counting) = counting.as_mut() {
            if ranker == (Ranker::Counting { move_keys: true }) {
                counting.sort_into(ctx, &keys, &mut sorted, |&k| k as usize);
            } else {
                counting.rank(ctx, &keys, |&k| k as usize);
            }
            let ranks = counting.digit_starts();
            return (0..5)
                .filter(|&t| {
                    held[t] != u64::MAX && ranks[held[t] as usize] == class.expected_rank(t, it)
                })
                .count() as u64;
        }
        let buckets = buckets.as_mut().expect("one ranker");
        buckets.rank(ctx, &keys);
        // Each test key is checked where its rank is known.
        let test_keys = all_gather(ctx, &held);
        (0..5)
            .filter_map(|t| {
                test_keys
                    .iter()
                    .map(|row| row[t])
                    .find(|&k| k != u64::MAX)
                    .map(|k| (t, k))
            })
            .filter(|&(t, k)| buckets.rank_of(k as u32) == Some(class.expected_rank(t, it)))
            .count() as u64
    };
    tick("keys generated; warm-up");
    iteration(ctx, 1); // untimed warm-up, as NPB does
    ctx.label("start line");
    ctx.sync();
    let start = Instant::now();
    let passed: u64 = (1..=ITERATIONS)
        .map(|it| {
            let passed = iteration(ctx, it);
            tick("timed iterations");
            passed
        })
        .sum();
    let seconds = start.elapsed().as_secs_f64();
    match (ranker, counting.as_mut(), buckets.as_ref()) {
        (Ranker::Counting { move_keys: false }, Some(counting), _) => {
            counting.sort_into(ctx, &keys, &mut sorted, |&k| k as usize)
        }
        (Ranker::Buckets, _, Some(buckets)) => sorted = buckets.sorted_keys(),
        _ => {}
    }
    tick("full verification");
    if me == 0 {
        progress.finish();
    }

    let mut slowest = [seconds];
    ctx.label("figures over processors");
    all_reduce(ctx, &mut slowest, &Max);
    let mut passed = [passed];
    all_reduce(ctx, &mut passed, &Sum);
    let mut all_keys = [sorted.len() as u64];
    all_reduce(ctx, &mut all_keys, &Sum);
    let locally_sorted = sorted.windows(2).all(|w| w[0] <= w[1]);
    let first = sorted.first().map_or(u64::MAX, |&k| u64::from(k));
    let last = sorted.last().map_or(0, |&k| u64::from(k));
    let parts = gather(ctx, 0, &[first, last, u64::from(locally_sorted)])?;
    let mut full = parts.iter().all(|r| r[2] == 1) && all_keys[0] == class.total_keys as u64;
    let mut highest = 0;
    for r in parts.iter().filter(|r| r[0] != u64::MAX) {
        full &= r[0] >= highest;
        highest = r[1];
    }
    Some(Outcome {
        seconds: slowest[0],
        passed: passed[0],
        full,
        bucket_bits: buckets.as_ref().map(BucketRanker::bucket_bits),
    })
}

fn main() -> ExitCode {
    let args = Args::parse(HELP, &["json", "move-keys"]);
    args.reject_unknown(&[
        "class",
        "procs",
        "router",
        "ranker",
        "stores",
        "buckets",
        "json",
        "move-keys",
    ]);
    let (class, move_keys, json) = (class(&args), args.flag("move-keys"), args.flag("json"));
    // --move-keys alone means the counting sort, the ranker it applies to.
    let default_ranker = if move_keys { "counting" } else { "buckets" };
    let ranker = match args.get("ranker", default_ranker.to_owned()).as_str() {
        "buckets" if !move_keys => Ranker::Buckets,
        "buckets" => args.fail("--move-keys needs --ranker counting"),
        "counting" => Ranker::Counting { move_keys },
        other => args.fail(&format!(
            "--ranker: expected buckets or counting, not {other:?}"
        )),
    };
    let bucket_bits = match args.get("buckets", "auto".to_owned()).as_str() {
        "auto" => None,
        n => match n.parse::<u32>() {
            Ok(bits @ 1..=11) => Some(bits),
            _ => args.fail(&format!("--buckets: expected auto or 1 to 11, not {n:?}")),
        },
    };
    // Steps: key generation, each timed iteration, the full verification.
    let progress = Progress::new(ITERATIONS as u64 + 2, "nas_is", json);
    let result = args.runtime().run(|ctx| {
        let outcome = nas_is(ctx, class, ranker, bucket_bits, &progress)?;
        let verified = outcome.full && outcome.passed == 5 * ITERATIONS as u64;
        let mops = (ITERATIONS * class.total_keys) as f64 / outcome.seconds / 1e6;
        if json {
            println!(
                "{}",
                json!({
                    "class": class.name.to_string(),
                    "procs": ctx.nprocs(),
                    "router": ctx.router().to_string(),
                    "total_keys": class.total_keys,
                    "iterations": ITERATIONS,
                    "move_keys": move_keys,
                    "ranker": if ranker == Ranker::Buckets { "buckets" } else { "counting" },
                    "bucket_bits": outcome.bucket_bits,
                    "buckets_tuned": ranker == Ranker::Buckets && bucket_bits.is_none(),
                    "seconds": outcome.seconds,
                    "mops": mops,
                    "partial_passed": outcome.passed,
                    "full_verification": outcome.full,
                    "verified": verified,
                })
            );
        } else {
            let buckets = match (outcome.bucket_bits, bucket_bits) {
                (Some(bits), None) => format!(", 2^{bits} buckets (tuned)"),
                (Some(bits), Some(_)) => format!(", 2^{bits} buckets"),
                (None, _) => String::new(),
            };
            println!(
                "NAS IS class {}: {} keys in [0, {}), p = {}, router {}{buckets}\n  \
                 time {:.4} s for {ITERATIONS} iterations, {mops:.1} Mop/s\n  \
                 partial verification {}/{}, full verification {}: {}",
                class.name,
                class.total_keys,
                class.max_key,
                ctx.nprocs(),
                ctx.router(),
                outcome.seconds,
                outcome.passed,
                5 * ITERATIONS,
                if outcome.full { "passed" } else { "FAILED" },
                if verified {
                    "SUCCESSFUL"
                } else {
                    "UNSUCCESSFUL"
                }
            );
        }
        Some(verified)
    });
    verdict(&ran("nas_is", result))
}
