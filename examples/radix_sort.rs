//! Distributed stable radix sort of n keys on p processors, checked against
//! a sequential sort of the same input.
//!
//! ```text
//! cargo run --release --example radix_sort -- --n 16777216 --procs 2 --dist R
//! ```

use std::process::ExitCode;
use std::time::Instant;

use bsp::prelude::*;
use bsp::sort::inputs::{block_range, Dist};
use bsp::sort::{RadixKey, RadixOptions, RadixSorter, SortInfo};
use bytemuck::Pod;

const HELP: &str = "\
radix_sort: stable distributed LSD radix sort (Bader, Helman and JaJa 1995)

usage: radix_sort [options]
  --n N               total number of keys (default 4194304)
  --procs P           processors (default: BSP_PROCS or the number of cores)
  --dist R|S|C|N|G    input distribution (default R): [R] uniform 31-bit, [S] AND of
                      five [R] keys, [C] consecutive values placed cyclically,
                      [N] NAS IS keys, [G] mean of four [R] keys
  --bits 32|64        key width (default 32)
  --digit-bits B      bits per counting-sort pass (default: chosen from n/p)
  --router two-phase|direct   h-relation router (default: BSP_ROUTER or two-phase)
  --no-verify         skip the check against a sequential sort
  --json              print one JSON object instead of text
  --help              this text";

struct Args {
    n: usize,
    procs: Option<usize>,
    dist: Dist,
    bits: u32,
    digit_bits: Option<u32>,
    router: Option<Router>,
    verify: bool,
    json: bool,
}

fn parse_args() -> Result<Option<Args>, String> {
    let mut args = Args {
        n: 1 << 22,
        procs: None,
        dist: Dist::Uniform,
        bits: 32,
        digit_bits: None,
        router: None,
        verify: true,
        json: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--help" | "-h" => return Ok(None),
            "--n" => args.n = number(&flag, &value()?)?,
            "--procs" => args.procs = Some(number(&flag, &value()?)?),
            "--dist" => args.dist = value()?.parse().map_err(|e| format!("--dist: {e}"))?,
            "--bits" => {
                args.bits = match value()?.as_str() {
                    "32" => 32,
                    "64" => 64,
                    other => return Err(format!("--bits must be 32 or 64, not {other:?}")),
                }
            }
            "--digit-bits" => args.digit_bits = Some(number(&flag, &value()?)?),
            "--router" => {
                args.router = Some(value()?.parse().map_err(|e| format!("--router: {e}"))?)
            }
            "--no-verify" => args.verify = false,
            "--json" => args.json = true,
            other => return Err(format!("unknown option {other:?} (try --help)")),
        }
    }
    if args
        .digit_bits
        .is_some_and(|b| !(1..=bsp::sort::MAX_DIGIT_BITS).contains(&b))
    {
        return Err(format!(
            "--digit-bits must be in 1..={}",
            bsp::sort::MAX_DIGIT_BITS
        ));
    }
    Ok(Some(args))
}

fn number<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, String> {
    v.parse()
        .map_err(|_| format!("{flag}: {v:?} is not a valid number"))
}

/// Sorts processor `ctx.pid()`'s keys; returns `Some(verified)` on pid 0.
fn sort_and_check<K>(
    ctx: &mut Ctx,
    args: &Args,
    keys_of: impl Fn(usize, usize) -> Vec<K>,
) -> Option<bool>
where
    K: RadixKey + Pod + Ord + Send + Sync,
{
    let (p, me) = (ctx.nprocs(), ctx.pid());
    let mut keys = keys_of(me, p);
    let options = RadixOptions {
        digit_bits: args.digit_bits,
        ..RadixOptions::default()
    };
    let mut sorter = RadixSorter::with_options(ctx, keys.len(), options);
    let gather = ctx.coarray::<K>(if me == 0 { args.n } else { 0 });
    let times = ctx.coarray::<f64>(if me == 0 { p } else { 0 });
    ctx.sync();
    let start = Instant::now();
    let info = sorter.sort_vec(ctx, &mut keys);
    let seconds = start.elapsed().as_secs_f64();
    ctx.put(0, &times, me, &[seconds]);
    if args.verify {
        ctx.put_vec(0, &gather, block_range(me, p, args.n).start, keys);
    }
    ctx.sync();
    if me != 0 {
        return None;
    }
    let seconds = ctx.local(&times).iter().copied().fold(0.0, f64::max);
    let verified = args.verify.then(|| {
        let mut expected: Vec<K> = (0..p).flat_map(|q| keys_of(q, p)).collect();
        expected.sort();
        expected == ctx.local(&gather)
    });
    report(args, p, ctx.router(), &info, seconds, verified);
    Some(verified != Some(false))
}

fn report(
    args: &Args,
    p: usize,
    router: Router,
    info: &SortInfo,
    seconds: f64,
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
        println!(
            "{{\"n\":{},\"procs\":{p},\"dist\":\"{}\",\"bits\":{},\"router\":\"{router}\",\"passes\":{},\
             \"seconds\":{seconds:.6},\"keys_per_second\":{rate:.0},\"verified\":{}}}",
            args.n,
            args.dist,
            args.bits,
            info.passes.len(),
            match verified {
                Some(v) => v.to_string(),
                None => "null".to_owned(),
            }
        );
    } else {
        println!(
            "radix_sort: {} {}-bit keys, dist [{}], p = {p}, router {router}: {} passes ({} bits), \
             {:.3} s, {:.1} Mkeys/s, {verdict}",
            args.n,
            args.bits,
            args.dist,
            info.passes.len(),
            digits.join("+"),
            seconds,
            rate / 1e6
        );
    }
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(Some(args)) => args,
        Ok(None) => {
            println!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("radix_sort: {e}");
            return ExitCode::from(2);
        }
    };
    let mut rt = Runtime::from_env();
    if let Some(p) = args.procs {
        rt = rt.procs(p);
    }
    if let Some(r) = args.router {
        rt = rt.router(r);
    }
    let (n, dist) = (args.n, args.dist);
    let outcome = rt.run(|ctx| match args.bits {
        32 => sort_and_check(ctx, &args, |q, p| dist.keys_u32(q, p, n)),
        _ => sort_and_check(ctx, &args, |q, p| dist.keys_u64(q, p, n, 64)),
    });
    match outcome {
        Ok(results) if results.iter().all(|r| *r != Some(false)) => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("radix_sort: {e}");
            ExitCode::FAILURE
        }
    }
}
