//! Property tests of the k-level collectives (`bsp::algos::*_k_level`)
//! against sequential oracles, for every number of levels, on every
//! runtime (threads with both routers, and the MPI world under `mpirun`).

mod support;

use bsp::algos::variants::Levels;
use bsp::algos::{self};
use bsp::{Cost, Machine, Runtime};
use proptest::prelude::*;
use support::{affine, affine_input, on_runtimes, Rng};

/// The message from `src` to `dst` (lengths vary, some empty).
fn message(seed: u64, src: usize, dst: usize, m: usize) -> Vec<u32> {
    let mut rng = Rng(seed ^ ((src * 1009 + dst) as u64).wrapping_mul(0x9e37_79b9));
    let len = rng.below(m + 1);
    (0..len).map(|_| rng.next_u64() as u32).collect()
}

fn check_all(rt: &Runtime, m: usize, seed: u64, root: usize) {
    let p = rt.nprocs();
    let root = root % p;
    let out = support::run_local(rt, move |ctx| {
        let me = ctx.pid();
        let mut results = Vec::new();
        for levels in Levels::ALL {
            let mut buf = affine_input(seed, me, m);
            algos::variants::broadcast_k_level(ctx, root, &mut buf, levels);
            let parts: Vec<Vec<u32>> = if me == root {
                (0..p).map(|d| message(seed, root, d, m)).collect()
            } else {
                Vec::new()
            };
            let scattered = algos::variants::scatter_k_level(ctx, root, &parts, levels);
            let gathered =
                algos::variants::gather_k_level(ctx, root, &message(seed, me, root, m), levels);
            let mine = affine_input(seed, me, m);
            let reduced = algos::variants::reduce_k_level(ctx, root, &mine, &affine, levels);
            let sends = (0..p).map(|d| message(seed, me, d, m)).collect();
            let exchanged = algos::variants::all_to_all_k_level(ctx, sends, levels);
            results.push((levels, buf, scattered, gathered, reduced, exchanged));
        }
        results
    });
    let inputs: Vec<_> = (0..p).map(|q| affine_input(seed, q, m)).collect();
    let mut total = inputs[0].clone();
    for v in &inputs[1..] {
        for (a, b) in total.iter_mut().zip(v) {
            *a = affine(*a, *b);
        }
    }
    for (q, results) in out {
        for (levels, buf, scattered, gathered, reduced, exchanged) in results {
            let at = format!("{}, {levels}, processor {q}", support::describe(rt));
            assert_eq!(buf, inputs[root], "broadcast: {at}");
            assert_eq!(scattered, message(seed, root, q, m), "scatter: {at}");
            let want_gathered = (0..p)
                .map(|s| message(seed, s, root, m))
                .collect::<Vec<_>>();
            assert_eq!(
                gathered,
                (q == root).then_some(want_gathered),
                "gather: {at}"
            );
            assert_eq!(reduced, (q == root).then(|| total.clone()), "reduce: {at}");
            let want: Vec<_> = (0..p).map(|s| message(seed, s, q, m)).collect();
            assert_eq!(exchanged, want, "all_to_all: {at}");
        }
    }
}

proptest! {
    #![proptest_config(support::proptest_config(16))]

    #[test]
    fn k_level_collectives_match_the_oracles(p in 1usize..=16, m in 0usize..40, seed: u64, root: usize) {
        on_runtimes(120, &[p], move |rt| check_all(rt, m, seed, root));
    }
}

#[test]
fn many_levels_on_larger_machines() {
    // Powers of two (the hypercube all-to-all at log p levels), a prime
    // (direct whatever the levels) and a product of three factors.
    on_runtimes(120, &[32, 31, 30], |rt| check_all(rt, 5, 7, 3));
}

#[test]
fn the_cost_functions_follow_the_bsp_model() {
    let c = Cost {
        l_seconds: 10e-6,
        g_seconds_per_byte: 1e-9,
    };
    let machine = Machine::new(c, c);
    for p in [2, 4, 8, 16] {
        // Direct is one superstep. A broadcast's root multicasts m: on
        // threads it copies m once and every receiver copies m, so h = m
        // (the lone g is g here). A reduce's root takes (p − 1)·m in.
        let direct = algos::variants::broadcast_k_level_cost(&machine, p, 1000, Levels::One);
        assert!(
            (direct - (10e-6 + 1000.0 * 1e-9)).abs() < 1e-12,
            "p = {p}: {direct}"
        );
        let gather = algos::variants::reduce_k_level_cost(&machine, p, 1000, Levels::One);
        assert!((gather - (10e-6 + (p - 1) as f64 * 1000.0 * 1e-9)).abs() < 1e-12);
        // The binomial tree: ⌈log₂ p⌉ supersteps of h = m, level i on
        // sub-machines of n = p/2^i (l charged l·(1 + n/p)/2), and as many
        // splits into halves q = n/2 (l·(2 + 2/q) each) but the last
        // level's.
        let tree = algos::variants::broadcast_k_level_cost(&machine, p, 1000, Levels::Log);
        let want: f64 = (0..p.trailing_zeros())
            .map(|i| {
                let n = (p >> i) as f64;
                let step = 10e-6 * (1.0 + n / p as f64) / 2.0 + 1000.0 * 1e-9;
                let split = if n > 2.0 {
                    10e-6 * (2.0 + 4.0 / n)
                } else {
                    0.0
                };
                step + split
            })
            .sum();
        assert!((tree - want).abs() < 1e-12, "p = {p}: {tree} vs {want}");
        for levels in Levels::ALL {
            // More bytes never cost less; every cost is positive.
            let small = algos::variants::all_to_all_k_level_cost(&machine, p, 8, levels);
            let large = algos::variants::all_to_all_k_level_cost(&machine, p, 1 << 20, levels);
            assert!(0.0 < small && small < large, "{levels}, p = {p}");
            let g = algos::variants::gather_k_level_cost(&machine, p, 64, levels);
            assert!(g >= algos::variants::scatter_k_level_cost(&machine, p, 64, Levels::One));
        }
    }
    // Long messages on many processors: the tree beats direct sends into
    // one root; out of one root, on threads, one multicast beats the tree.
    assert!(
        algos::variants::reduce_k_level_cost(&machine, 16, 1 << 20, Levels::Log)
            < algos::variants::reduce_k_level_cost(&machine, 16, 1 << 20, Levels::One)
    );
    assert!(
        algos::variants::broadcast_k_level_cost(&machine, 16, 1 << 20, Levels::One)
            < algos::variants::broadcast_k_level_cost(&machine, 16, 1 << 20, Levels::Log)
    );
}
