//! Sample sort (`bsp::sort::sample_sort`) against a sequential stable
//! sort, on every runtime of the shared harness: sorted in pid order,
//! every element once, stable in pid order, and within its balance bound,
//! for uniform, skewed, all-equal and string inputs and p = 1 up.

mod support;

use std::cmp::Ordering;

use bsp::Runtime;
use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use support::{on_runtimes, Rng};

/// A record that compares by `key` alone, so that the order of equal keys
/// shows whether the sort is stable; `from` says where it started.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Rec<K> {
    key: K,
    from: (usize, usize),
}

impl<K: Ord> PartialOrd for Rec<K> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<K: Ord> Ord for Rec<K> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key.cmp(&other.key)
    }
}

#[derive(Clone, Copy, Debug)]
enum Input {
    Uniform,
    /// Eight distinct keys.
    Skewed,
    AllEqual,
    /// Everything on processor 0.
    OnOne,
    Strings,
}

fn key(input: Input, rng: &mut Rng) -> String {
    match input {
        Input::Uniform | Input::OnOne => format!("{:020}", rng.next_u64()),
        Input::Skewed => format!("{}", rng.below(8)),
        Input::AllEqual => "same".into(),
        Input::Strings => (0..rng.below(6))
            .map(|_| ['a', 'b', 'é', 'z'][rng.below(4)])
            .collect(),
    }
}

/// Processor `q`'s input of `m` records (none but on processor 0 for
/// `OnOne`).
fn input(input_kind: Input, seed: u64, q: usize, p: usize, m: usize) -> Vec<Rec<String>> {
    let m = match input_kind {
        Input::OnOne if q == 0 => m * p,
        Input::OnOne => 0,
        _ => m,
    };
    let mut rng = Rng(seed ^ (q as u64).wrapping_mul(0x9e37_79b9));
    (0..m)
        .map(|i| Rec {
            key: key(input_kind, &mut rng),
            from: (q, i),
        })
        .collect()
}

fn check(rt: &Runtime, kind: Input, m: usize, seed: u64) {
    let p = rt.nprocs();
    let out = support::run_local(rt, |ctx| {
        let mine = input(kind, seed, ctx.pid(), ctx.nprocs(), m);
        let sorted = bsp::sort::sample_sort(ctx, mine);
        let lens = bsp::algos::all_gather(ctx, &[sorted.len() as u64]).concat();
        (sorted, lens)
    });
    let inputs: Vec<_> = (0..p).map(|q| input(kind, seed, q, p, m)).collect();
    let (n, max_in) = (
        inputs.iter().map(Vec::len).sum::<usize>(),
        inputs.iter().map(Vec::len).max().unwrap_or(0),
    );
    let mut oracle = inputs.concat();
    oracle.sort(); // stable
    for (q, (sorted, lens)) in out {
        let lens: Vec<usize> = lens.iter().map(|&l| l as usize).collect();
        assert_eq!(lens.iter().sum::<usize>(), n, "{kind:?}: count, p = {p}");
        let start: usize = lens[..q].iter().sum();
        assert!(
            sorted == oracle[start..start + lens[q]],
            "{kind:?}, p = {p}, m = {m}: processor {q}'s part is not its part of the stable sort"
        );
        // The documented balance: < 2n/p + p for equal inputs, else
        // < n/p + max nᵢ + p.
        let bound = match kind {
            Input::OnOne => n / p + max_in + p,
            _ => ((2 * p - 1) * n).div_ceil(p * p) + p,
        };
        assert!(
            sorted.len() <= bound,
            "{kind:?}, p = {p}, m = {m}: processor {q} received {} > {bound}",
            sorted.len()
        );
    }
}

const KINDS: [Input; 5] = [
    Input::Uniform,
    Input::Skewed,
    Input::AllEqual,
    Input::OnOne,
    Input::Strings,
];

proptest! {
    #![proptest_config(support::proptest_config(24))]

    #[test]
    fn sample_sort_matches_a_stable_sort(p in 1usize..=9, m in 0usize..300, seed: u64, kind in 0usize..5) {
        on_runtimes(60, &[p], move |rt| check(rt, KINDS[kind], m, seed));
    }
}

#[test]
fn sample_sort_every_input_at_several_p() {
    on_runtimes(120, &[1, 2, 3, 7, 16], |rt| {
        for kind in KINDS {
            for m in [0, 1, 5, 1000] {
                check(rt, kind, m, 7);
            }
        }
    });
}

/// Integers too, with the result of `Vec::sort` (unstable types need no
/// wrapper).
#[test]
fn sample_sort_sorts_integers() {
    let p = 5;
    let out = Runtime::threads(p)
        .run(|ctx| {
            let mut rng = Rng(ctx.pid() as u64);
            let mine: Vec<i64> = (0..777).map(|_| rng.next_u64() as i64 % 50).collect();
            bsp::sort::sample_sort(ctx, mine)
        })
        .unwrap();
    let mut all: Vec<i64> = (0..p)
        .flat_map(|q| {
            let mut rng = Rng(q as u64);
            (0..777).map(move |_| rng.next_u64() as i64 % 50)
        })
        .collect();
    all.sort();
    assert_eq!(out.concat(), all);
}
