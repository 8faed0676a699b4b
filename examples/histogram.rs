//! Histogram of u32 values into K bins with `bsp_algos::histogram` (a
//! random access write with `+`), checked against a sequential count, and
//! timed against it.
//!
//! ```text
//! cargo run --release --example histogram -- [--n N] [--bins K] [--dist uniform|zipf|single] [--procs P] [--json]
//! ```
//!
//! Prints the seconds and elements/s of the parallel histogram and of the
//! sequential single-threaded count, and the parallel throughput per
//! processor relative to the sequential one. Exits with status 1 if the
//! counts differ.

use std::process::ExitCode;
use std::time::Instant;

use bsp::algos::{self, Max};
use bsp::prelude::*;

const HELP: &str = "histogram: counts of u32 values into K bins, checked against a sequential count

usage: histogram [--n N] [--bins K] [--dist uniform|zipf|single] [--procs P] [--reps R] [--json]

  --n N        number of values (default 67108864 = 2^26)
  --bins K     number of bins, at least 1 (default 256)
  --dist D     uniform, zipf (exponent 1) or single (all in one bin); default uniform
  --procs P    processors (default: BSP_PROCS or the number of cores; ignored under MPI)
  --reps R     repetitions, median reported (default 5)
  --json       one JSON object instead of text
  --help       this text";

struct Args {
    n: usize,
    bins: usize,
    dist: String,
    procs: Option<usize>,
    reps: usize,
    json: bool,
}

fn number(s: &str, name: &str) -> Result<usize, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("{name}: `{s}` is not a non-negative integer"))
}

fn parse() -> Result<Option<Args>, String> {
    let mut args = Args {
        n: 1 << 26,
        bins: 256,
        dist: "uniform".into(),
        procs: None,
        reps: 5,
        json: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--help" | "-h" => return Ok(None),
            "--json" => args.json = true,
            "--n" => args.n = number(&value("--n")?, "--n")?,
            "--bins" => args.bins = number(&value("--bins")?, "--bins")?,
            "--reps" => args.reps = number(&value("--reps")?, "--reps")?.max(1),
            "--procs" => args.procs = Some(number(&value("--procs")?, "--procs")?),
            "--dist" => args.dist = value("--dist")?,
            other => return Err(format!("unknown argument `{other}` (try --help)")),
        }
    }
    if args.bins == 0 {
        return Err("--bins must be at least 1".into());
    }
    if !["uniform", "zipf", "single"].contains(&args.dist.as_str()) {
        return Err(format!(
            "--dist: `{}` is not uniform, zipf or single",
            args.dist
        ));
    }
    Ok(Some(args))
}

/// Value i of the global input (the same whatever p).
fn value(dist: &str, i: u64) -> u32 {
    let mut z = i
        .wrapping_add(0x9e37_79b9_7f4a_7c15)
        .wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    match dist {
        "uniform" => z as u32,
        // log-uniform over 1..2^32: value v has probability ~ 1/v
        "zipf" => 2f64.powf((z >> 11) as f64 / (1u64 << 53) as f64 * 32.0) as u32,
        _ => 12345,
    }
}

/// The bin of a value: the value scaled to 0..bins.
fn bin(v: u32, bins: usize) -> usize {
    ((v as u64 * bins as u64) >> 32) as usize
}

fn sequential(values: &[u32], bins: usize) -> Vec<u64> {
    let mut counts = vec![0u64; bins];
    for &v in values {
        counts[bin(v, bins)] += 1;
    }
    counts
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(Some(a)) => a,
        Ok(None) => {
            println!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("histogram: {e}");
            return ExitCode::from(2);
        }
    };
    let mut rt = Runtime::from_env();
    if let Some(p) = args.procs {
        rt = rt.procs(p);
    }
    let (n, bins, dist) = (args.n, args.bins, args.dist.as_str());
    let result = rt.run(|ctx| {
        let blocks = algos::Block::new(n, ctx.nprocs());
        let mine: Vec<u32> = blocks
            .range(ctx.pid())
            .map(|i| value(dist, i as u64))
            .collect();
        // Parallel histogram, timed by the slowest processor; median of reps.
        let mut times = Vec::new();
        let mut counts = Vec::new();
        for _ in 0..args.reps {
            ctx.sync();
            let start = Instant::now();
            counts = algos::histogram(ctx, &mine, bins, |&v| bin(v, bins));
            let mut t = [start.elapsed().as_secs_f64()];
            algos::all_reduce(ctx, &mut t, &Max);
            times.push(t[0]);
        }
        let seconds = [median(times)];
        let all = algos::gather(ctx, 0, &counts);
        // The sequential peer and the check, on processor 0 only.
        all.map(|parts| {
            let values: Vec<u32> = (0..n as u64).map(|i| value(dist, i)).collect();
            let mut want = Vec::new();
            let mut times = Vec::new();
            for _ in 0..args.reps {
                let start = Instant::now();
                want = sequential(&values, bins);
                times.push(start.elapsed().as_secs_f64());
            }
            let seq_seconds = median(times);
            (
                parts.concat() == want,
                seconds[0],
                seq_seconds,
                ctx.nprocs(),
            )
        })
    });
    let (verified, seconds, seq_seconds, p) = match result {
        Ok(out) => match out.into_iter().flatten().next() {
            Some(r) => r,
            None => return ExitCode::SUCCESS, // not rank 0 under MPI
        },
        Err(e) => {
            eprintln!("histogram: {e}");
            return ExitCode::FAILURE;
        }
    };
    let rate = n as f64 / seconds;
    let seq_rate = n as f64 / seq_seconds;
    let per_proc = rate / p as f64 / seq_rate;
    if args.json {
        println!(
            "{{\"n\":{n},\"bins\":{bins},\"dist\":\"{dist}\",\"procs\":{p},\"seconds\":{seconds:.6},\
             \"elements_per_second\":{rate:.1},\"sequential_seconds\":{seq_seconds:.6},\
             \"per_processor_vs_sequential\":{per_proc:.3},\"verified\":{verified}}}"
        );
    } else {
        println!("histogram of {n} {dist} u32 values into {bins} bins on {p} processors");
        println!("  bsp        {seconds:>9.4} s  {rate:>14.0} elements/s");
        println!("  sequential {seq_seconds:>9.4} s  {seq_rate:>14.0} elements/s");
        println!("  per-processor throughput / sequential: {per_proc:.2}");
        println!("  verified: {verified}");
    }
    if verified {
        ExitCode::SUCCESS
    } else {
        eprintln!("histogram: WRONG counts");
        ExitCode::FAILURE
    }
}
