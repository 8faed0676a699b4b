//! The program of the README: every processor puts a value into a slot of
//! every processor's coarray, syncs, and sums what it received.
//!
//! ```text
//! cargo run --release --example hello -- --procs 4
//! ```

mod common;

use bsp::algos::{all_reduce, Min};
use bsp::prelude::*;
use common::Args;
use serde_json::json;

const USAGE: &str = "hello: the smallest BSP program

usage: hello [--procs P] [--json]

  --procs  processor count (default: BSP_PROCS or the number of cores; set by mpirun under MPI)
  --json   print one JSON object";

fn main() {
    let args = Args::parse(USAGE, &["json"]);
    args.reject_unknown(&["procs", "json"]);
    let mut rt = Runtime::from_env();
    if let Some(p) = args.opt("procs") {
        rt = rt.with_procs(p);
    }
    let json = args.flag("json");
    let transport = rt.transport().name();
    let result = rt.run(|ctx| {
        let (s, p) = (ctx.pid(), ctx.nprocs());
        let partial = ctx.coarray::<u64>(p); // collective registration
        for t in 0..p {
            ctx.put(t, &partial, s, &[s as u64 * 10]);
        }
        ctx.sync(); // all puts delivered here
        let sum: u64 = ctx.local(&partial).iter().sum();
        let expected = 10 * (p as u64) * (p as u64 - 1) / 2;
        if !json {
            println!("hello from processor {s} of {p}: sum = {sum}");
        }
        // Agree on the verdict: the minimum over processors of "mine is right".
        let mut ok = [u8::from(sum == expected)];
        all_reduce(ctx, &mut ok, &Min);
        let all_ok = ok[0] == 1;
        if s == 0 {
            if json {
                println!(
                    "{}",
                    json!({
                        "example": "hello",
                        "backend": transport,
                        "procs": p,
                        "sum": sum,
                        "verified": all_ok,
                    })
                );
            } else {
                println!(
                    "{} sums of {expected} on {p} processors",
                    if all_ok { "verified:" } else { "WRONG:" }
                );
            }
        }
        all_ok
    });
    match result {
        Ok(oks) if oks.iter().all(|&ok| ok) => {}
        Ok(_) => std::process::exit(1),
        Err(e) => {
            eprintln!("hello: {e}");
            std::process::exit(1);
        }
    }
}
