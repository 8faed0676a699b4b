//! The serde collectives of `bsp-algos` (`bsp::algos::serde`) against
//! sequential oracles, on every router and transport; and their errors,
//! which name the collective.

mod support;

use bsp::algos::serde as sd;
use bsp::{Cost, Machine, Router, Runtime};
use proptest::prelude::*;
use support::{on_runtimes, Rng};

/// A value of processor `q` (for destination `j`): a string of up to
/// `max` characters, some of them beyond ASCII, with a number.
fn value(seed: u64, q: usize, j: usize, max: usize) -> (String, u64) {
    let mut rng = Rng(seed ^ ((q * 1000 + j) as u64));
    let len = rng.below(max + 1);
    let s = (0..len)
        .map(|_| ['a', 'é', '→', 'z'][rng.below(4)])
        .collect();
    (s, rng.next_u64())
}

fn check_all(rt: &Runtime, max: usize, seed: u64, root: usize) {
    let p = rt.nprocs();
    let root = root % p;
    let out = support::run_local(rt, |ctx| {
        let (q, p) = (ctx.pid(), ctx.nprocs());
        let mine = value(seed, q, p, max);
        let all = sd::all_gather(ctx, &mine);
        let gathered = sd::gather(ctx, root, &mine);
        let offered = (q == root).then(|| value(seed, p + 1, 0, max * 50));
        let broadcast = sd::broadcast(ctx, root, offered);
        let sends = (0..p)
            .map(|j| (0..j % 3).map(|k| value(seed, q, j * 7 + k, max)).collect())
            .collect();
        let exchanged = sd::all_to_all(ctx, sends);
        (all, gathered, broadcast, exchanged)
    });
    let everyone: Vec<_> = (0..p).map(|q| value(seed, q, p, max)).collect();
    for (q, (all, gathered, broadcast, exchanged)) in out {
        assert_eq!(all, everyone, "all_gather on {q}");
        assert_eq!(
            gathered,
            (q == root).then(|| everyone.clone()),
            "gather on {q}"
        );
        assert_eq!(
            broadcast,
            value(seed, p + 1, 0, max * 50),
            "broadcast on {q}"
        );
        let want: Vec<Vec<_>> = (0..p)
            .map(|src| {
                (0..q % 3)
                    .map(|k| value(seed, src, q * 7 + k, max))
                    .collect()
            })
            .collect();
        assert_eq!(exchanged, want, "all_to_all on {q}");
    }
}

proptest! {
    #![proptest_config(support::proptest_config(24))]

    #[test]
    fn serde_collectives_match_oracle(p in 1usize..=12, max in 0usize..60, seed: u64, root: usize) {
        on_runtimes(60, &[p], move |rt| check_all(rt, max, seed, root));
    }
}

#[test]
fn serde_collectives_at_64_processors() {
    on_runtimes(120, &[64], |rt| check_all(rt, 5, 1, 63));
}

/// The broadcast goes direct (1 superstep) where barriers are dear, and
/// in two phases (2 supersteps) where bandwidth is, for a long value and
/// p > 3 (at p = 3 both routes send 2B from the root); the value arrives
/// whole either way.
#[test]
fn broadcast_takes_the_cheaper_route() {
    if support::under_mpi() {
        return; // the machine is set per runtime on threads
    }
    let cost = |l: f64, g: f64| Cost {
        l_seconds: l,
        g_seconds_per_byte: g,
    };
    let long: Vec<String> = (0..5000).map(|i| format!("item {i}")).collect();
    for (l, g, two_phase) in [(1e-3, 1e-12, false), (1e-7, 1e-8, true)] {
        for p in [3, 4, 7] {
            let steps = if two_phase && p > 3 { 2 } else { 1 };
            let machine = Machine::new(cost(l, g), cost(l, g));
            let rt = Runtime::threads(p)
                .with_router(Router::TwoPhase)
                .with_machine(machine);
            let long = long.clone();
            let out = rt
                .run(move |ctx| {
                    let before = ctx.superstep();
                    let offered = (ctx.pid() == 1).then(|| long.clone());
                    let got = sd::broadcast(ctx, 1, offered);
                    (got == long, ctx.superstep() - before)
                })
                .unwrap();
            assert!(
                out.iter().all(|&r| r == (true, steps)),
                "l = {l}, g = {g}, p = {p}: {out:?}"
            );
        }
    }
}

/// Misuse ends the run with a message that names the collective.
#[test]
fn serde_misuse_names_the_collective() {
    if support::under_mpi() {
        return; // a panic under MPI aborts the job
    }
    let err = |f: fn(&mut bsp::Ctx)| Runtime::threads(3).run(f).unwrap_err().to_string();
    let text = err(|ctx| {
        let _ = sd::all_to_all(ctx, vec![vec![1u8]; 2]);
    });
    assert!(
        text.contains("all_to_all") && text.contains("passed 2 vectors"),
        "{text}"
    );
    let text = err(|ctx| {
        let _: u32 = sd::broadcast(ctx, 0, None);
    });
    assert!(
        text.contains("broadcast") && text.contains("passed None"),
        "{text}"
    );
    let text = err(|ctx| {
        let _ = sd::gather(ctx, 3, &1u8);
    });
    assert!(text.contains("gather") && text.contains("root 3"), "{text}");
    // Processor 0 sends a u64 where the others send Strings: it reads
    // theirs as u64s with bytes left over, they read its 5 as a String's
    // length with too few bytes after it.
    let text = err(|ctx| {
        if ctx.pid() == 0 {
            let _ = sd::all_gather(ctx, &5u64);
        } else {
            let _ = sd::all_gather(ctx, &"x".repeat(300));
        }
    });
    assert!(text.contains("all_gather"), "{text}");
}
