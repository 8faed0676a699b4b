//! Distributed stable radix sort of n keys on p processors, checked against
//! a sequential sort of the same input.
//!
//! ```text
//! cargo run --release --example radix_sort -- --n 16777216 --procs 2 --dist R
//! ```

mod common;

use std::process::ExitCode;
use std::time::Instant;

use bsp::algos::{all_reduce, Max};
use bsp::prelude::*;
use bsp::sort::expert::DigitOrder;
use bsp::sort::inputs::{block_range, Dist};
use bsp::sort::{RadixKey, RadixOptions, RadixSorter, SortInfo};
use bytemuck::Pod;
use common::{ran, verdict, Args};
use serde_json::json;

const HELP: &str = "\
radix_sort: stable distributed radix sort (Bader, Helman and JaJa 1995), LSD or top digit first

usage: radix_sort [options]
  --n N               total number of keys (default 4194304)
  --procs P           processors (default: BSP_PROCS or the number of cores)
  --dist R|S|C|N|G    input distribution (default R): [R] uniform 31-bit, [S] AND of
                      five [R] keys, [C] consecutive values placed cyclically,
                      [N] NAS IS keys, [G] mean of four [R] keys
  --bits 32|64        key width (default 32)
  --digit-bits B      bits per counting-sort pass (default: chosen from n/p)
  --keep-constant-digits  sort on every digit of the key, also those in which no
                      key differs (by default they are skipped)
  --order auto|lsd|top  digit order (default auto): lsd is the paper's radix sort,
                      one distributed pass per digit; top sorts the top digit
                      across processors, then each bucket locally
  --router two-phase|direct   h-relation router (default: BSP_ROUTER or two-phase)
  --stores auto|lines|plain   how the scatters store (default auto: timed, the
                      faster way kept; see bsp::expert::stores)
  --rounds R          sort R times with one sorter, each time a fresh copy of the
                      input, and report the median round (the first maps the
                      sorter's buffers; later ones reuse them) (default 1)
  --no-verify         skip the check against a sequential sort
  --json              print one JSON object instead of text
  --help              this text";

/// What the sort needs from the command line.
struct Opts {
    n: usize,
    dist: Dist,
    bits: u32,
    digit_bits: Option<u32>,
    keep_constant_digits: bool,
    order: DigitOrder,
    rounds: usize,
    verify: bool,
    json: bool,
}

fn parse_opts(args: &Args) -> Opts {
    args.reject_unknown(&[
        "n",
        "procs",
        "dist",
        "bits",
        "digit-bits",
        "keep-constant-digits",
        "order",
        "router",
        "stores",
        "rounds",
        "no-verify",
        "json",
    ]);
    let bits = args.get("bits", 32);
    if bits != 32 && bits != 64 {
        args.fail(&format!("--bits must be 32 or 64, not {bits}"));
    }
    let digit_bits = args.opt("digit-bits");
    if digit_bits.is_some_and(|b| !(1..=bsp::sort::expert::MAX_DIGIT_BITS).contains(&b)) {
        args.fail(&format!(
            "--digit-bits must be in 1..={}",
            bsp::sort::expert::MAX_DIGIT_BITS
        ));
    }
    let order = args.get("order", "auto".to_owned());
    let order = ORDERS
        .iter()
        .find(|(name, _)| *name == order)
        .map(|&(_, o)| o)
        .unwrap_or_else(|| args.fail(&format!("--order must be auto, lsd or top, not {order:?}")));
    let n: usize = args.get("n", 1 << 22);
    let rounds: usize = args.get("rounds", 1);
    if rounds == 0 {
        args.fail("--rounds must be at least 1");
    }
    let verify = !args.flag("no-verify");
    // The keys, the sorter's receive buffer and scratch; with --verify also
    // processor 0's gathered copy and the sequential oracle's.
    let copies = if verify { 5 } else { 3 };
    args.require_memory(
        n as u128 * u128::from(bits / 8) * copies,
        &format!("sorting n = {n} keys of {bits} bits"),
    );
    Opts {
        n,
        dist: args.get("dist", Dist::Uniform),
        bits,
        digit_bits,
        keep_constant_digits: args.flag("keep-constant-digits"),
        order,
        rounds,
        verify,
        json: args.flag("json"),
    }
}

/// Sorts processor `ctx.pid()`'s keys; returns `Some(verified)` on pid 0.
fn sort_and_check<K>(
    ctx: &mut Ctx,
    args: &Opts,
    keys_of: impl Fn(usize, usize) -> Vec<K>,
) -> Option<bool>
where
    K: RadixKey + Pod + Ord + Send + Sync,
{
    let (p, me) = (ctx.nprocs(), ctx.pid());
    let mut keys = keys_of(me, p);
    let options = RadixOptions {
        digit_bits: args.digit_bits,
        keep_constant_digits: args.keep_constant_digits,
        order: args.order,
        ..RadixOptions::default()
    };
    let mut sorter = RadixSorter::with_options(ctx, keys.len(), options);
    let gather = ctx.coarray::<K>(if me == 0 { args.n } else { 0 });
    let mut times = Vec::with_capacity(args.rounds);
    let mut info = SortInfo::default();
    for round in 0..args.rounds {
        if round > 0 {
            keys = keys_of(me, p);
        }
        ctx.label("start line");
        ctx.sync();
        let start = Instant::now();
        info = sorter.sort_vec(ctx, &mut keys);
        // The sort's time is the slowest processor's.
        let mut seconds = [start.elapsed().as_secs_f64()];
        ctx.label("slowest time");
        all_reduce(ctx, &mut seconds, &Max);
        times.push(seconds[0]);
    }
    ctx.label("gather for verification");
    if args.verify {
        ctx.put_vec(0, &gather, block_range(me, p, args.n).start, keys);
    }
    ctx.sync();
    ctx.label("verify on processor 0");
    if me != 0 {
        return None;
    }
    let first = times[0];
    times.sort_by(f64::total_cmp);
    let seconds = times[times.len() / 2];
    let verified = args.verify.then(|| {
        let mut expected: Vec<K> = (0..p).flat_map(|q| keys_of(q, p)).collect();
        expected.sort();
        expected == ctx.local(&gather)
    });
    report(args, p, ctx.router(), &info, (seconds, first), verified);
    Some(verified != Some(false))
}

/// The `--order` names of the digit orders.
const ORDERS: [(&str, DigitOrder); 3] = [
    ("auto", DigitOrder::Auto),
    ("lsd", DigitOrder::LeastFirst),
    ("top", DigitOrder::TopFirst),
];

/// The `--order` name of `order`.
fn order_name(order: DigitOrder) -> &'static str {
    ORDERS
        .iter()
        .find(|&&(_, o)| o == order)
        .map_or("auto", |&(name, _)| name)
}

fn report(
    args: &Opts,
    p: usize,
    router: Router,
    info: &SortInfo,
    (seconds, first): (f64, f64),
    verified: Option<bool>,
) {
    let rate = args.n as f64 / seconds;
    let digits: Vec<String> = info.passes.iter().map(|d| d.bits.to_string()).collect();
    let verdict = match verified {
        Some(true) => "verified",
        Some(false) => "WRONG",
        None => "not verified",
    };
    if args.json {
        let json = json!({
            "n": args.n,
            "procs": p,
            "dist": args.dist.to_string(),
            "bits": args.bits,
            "router": router.to_string(),
            "passes": info.passes.len(),
            "digit_bits": info.passes.iter().map(|d| d.bits).collect::<Vec<_>>(),
            "top_first": info.top_first,
            "keep_constant_digits": args.keep_constant_digits,
            "order": order_name(args.order),
            "rounds": args.rounds,
            "seconds": seconds,
            "first_round_seconds": first,
            "keys_per_second": rate,
            "verified": verified,
        });
        println!("{json}");
    } else {
        println!(
            "radix_sort: {} {}-bit keys, dist [{}], p = {p}, router {router}: {} passes ({} bits{}), \
             {:.3} s{}, {:.1} Mkeys/s, {verdict}",
            args.n,
            args.bits,
            args.dist,
            info.passes.len(),
            digits.join("+"),
            if info.top_first {
                ", top digit first"
            } else {
                ""
            },
            seconds,
            if args.rounds > 1 {
                format!(" (median of {} rounds; the first {first:.3} s)", args.rounds)
            } else {
                String::new()
            },
            rate / 1e6
        );
    }
}

fn main() -> ExitCode {
    let args = Args::parse(HELP, &["no-verify", "json", "keep-constant-digits"]);
    let opts = parse_opts(&args);
    let (n, dist) = (opts.n, opts.dist);
    let outcome = args.runtime().run(|ctx| match opts.bits {
        32 => sort_and_check(ctx, &opts, |q, p| dist.keys_u32(q, p, n)),
        _ => sort_and_check(ctx, &opts, |q, p| dist.keys_u64(q, p, n, 64)),
    });
    verdict(&ran("radix_sort", outcome))
}
