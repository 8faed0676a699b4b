//! Word count: the words of a text are split over the processors; each
//! counts its own, then sends every (word, count) pair to the processor
//! that owns the word, which adds up what it receives.
//!
//! The lesson: the serde collectives (`bsp::algos::serde`, here an
//! all-to-all of `(String, u64)` pairs and a gather of each owner's
//! counts), and an owner computed alike on every processor (a hash of the
//! word, mod p), so that all counts of one word meet in one place. The
//! merged counts are checked against a sequential count; a wrong one exits
//! with status 1.
//!
//! ```text
//! cargo run --release --example word_count -- [--words N] [--procs P] [--json]
//! ```

mod common;

use std::collections::HashMap;

use bsp::algos::{self, Block};
use bsp::prelude::*;
use common::{checked, mix, ran, verdict, Args};
use serde_json::json;

const USAGE: &str = "word_count: counts of the words of a generated text, merged by owner

usage: word_count [--words N] [--procs P] [--json]

  --words N  number of words in the text (default 500000)
  --procs P  processors (default: BSP_PROCS or the number of cores; set by mpirun under MPI)
  --json     print one JSON object";

const SYLLABLES: [&str; 8] = ["ka", "lo", "mi", "nu", "re", "si", "to", "vu"];

/// Word i of the text (the same whatever p): one of 4095 words of one to
/// four syllables, the frequent ones far more frequent (log-uniform ranks).
fn word(i: usize) -> String {
    let u = (mix(i as u64) >> 11) as f64 / (1u64 << 53) as f64; // uniform in [0, 1)
    let mut rank = 4096f64.powf(u) as usize - 1; // 0..4095, small ones likelier
    let mut spelling = String::new();
    loop {
        spelling.push_str(SYLLABLES[rank % 8]); // rank's base-8 digits
        rank /= 8;
        if rank == 0 {
            return spelling;
        }
    }
}

/// The processor that owns `word`: an FNV-1a hash mod p. Every processor
/// must compute the same owner, so no per-process random seed is used.
fn owner(word: &str, p: usize) -> usize {
    let hash = word.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    (hash % p as u64) as usize
}

/// Adds one to the count of each word.
fn count(words: &[String]) -> HashMap<String, u64> {
    let mut counts = HashMap::new();
    for w in words {
        *counts.entry(w.clone()).or_insert(0) += 1;
    }
    counts
}

/// The counts of the words this processor owns, over the whole text.
fn count_by_owner(ctx: &mut Ctx, text: &[String]) -> HashMap<String, u64> {
    let p = ctx.nprocs();
    // Superstep 1: count locally, and send each pair to the word's owner
    // (element j of `sends` goes to processor j).
    let mut sends: Vec<Vec<(String, u64)>> = vec![Vec::new(); p];
    for (w, c) in count(text) {
        sends[owner(&w, p)].push((w, c));
    }
    let received = algos::serde::all_to_all(ctx, sends);

    // Merge what arrived (from p senders at most per word).
    let mut merged = HashMap::new();
    for (w, c) in received.into_iter().flatten() {
        *merged.entry(w).or_insert(0) += c;
    }
    merged
}

/// Gathers every owner's counts on processor 0, which compares them with a
/// sequential count of the n words: `Some(verified, the five most frequent)`
/// on processor 0, `None` elsewhere.
fn check(
    ctx: &mut Ctx,
    merged: HashMap<String, u64>,
    n: usize,
) -> Option<(bool, Vec<(String, u64)>)> {
    let p = ctx.nprocs();
    let mine: Vec<(String, u64)> = merged.into_iter().collect();
    let by_owner = algos::serde::gather(ctx, 0, &mine)?;
    let want = count(&(0..n).map(word).collect::<Vec<_>>());
    // Right if each word came from its owner (whose map holds it once)
    // with its count, and none is missing.
    let got: usize = by_owner.iter().map(Vec::len).sum();
    let ok = got == want.len()
        && by_owner.iter().enumerate().all(|(src, pairs)| {
            pairs
                .iter()
                .all(|(w, c)| src == owner(w, p) && want.get(w) == Some(c))
        });
    let mut top: Vec<(String, u64)> = by_owner.into_iter().flatten().collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0))); // most frequent first
    top.truncate(5);
    Some((ok, top))
}

fn main() -> std::process::ExitCode {
    let args = Args::parse(USAGE, &["json"]);
    args.reject_unknown(&["words", "procs", "json"]);
    let (n, json): (usize, bool) = (args.get("words", 500_000), args.flag("json"));
    let result = args.runtime().run(|ctx| {
        let (me, p) = (ctx.pid(), ctx.nprocs());
        let text: Vec<String> = Block::new(n, p).range(me).map(word).collect();
        let merged = count_by_owner(ctx, &text);
        let owned = merged.len();
        let (ok, top) = check(ctx, merged, n)?; // processor 0 goes on
        if json {
            let report = json!({"example": "word_count", "words": n, "procs": p,
                "owned_by_0": owned, "top": top, "verified": ok});
            println!("{report}");
        } else {
            let top: Vec<String> = top.iter().map(|(w, c)| format!("{w} {c}")).collect();
            println!(
                "word_count: {n} words on {p} processors, {owned} distinct owned by processor 0"
            );
            println!("  most frequent: {}", top.join(", "));
            println!("  {}", checked(ok, "a sequential count"));
        }
        Some(ok)
    });
    verdict(&ran("word_count", result))
}
