//! Property tests of the collectives of `bsp-algos` against sequential
//! oracles. Every body takes the runtime, so the same checks run on each
//! router on threads and, as ranks of an `mpirun` job, on MPI.

mod support;

use bsp::algos::{self, Max, Min, Sum};
use bsp::Runtime;
use proptest::prelude::*;
use support::{affine, affine_input, on_runtimes, Rng};

fn oracle_fold(inputs: &[Vec<[u32; 2]>], range: std::ops::Range<usize>) -> Option<Vec<[u32; 2]>> {
    let mut it = inputs[range].iter();
    let mut acc = it.next()?.clone();
    for v in it {
        for (a, b) in acc.iter_mut().zip(v) {
            *a = affine(*a, *b);
        }
    }
    Some(acc)
}

fn check_reduce_and_scan(rt: &Runtime, m: usize, seed: u64, root: usize) {
    let p = rt.nprocs();
    let root = root % p;
    let inputs: Vec<_> = (0..p).map(|q| affine_input(seed, q, m)).collect();
    let out = support::run_local(rt, |ctx| {
        let mine = affine_input(seed, ctx.pid(), m);
        let reduced = algos::reduce(ctx, root, &mine, &affine);
        let mut all = mine.clone();
        algos::all_reduce(ctx, &mut all, &affine);
        let (upto, total) = algos::inclusive_scan(ctx, &mine, &affine);
        let counts: Vec<u64> = mine.iter().map(|x| u64::from(x[1] >> 8)).collect();
        let (before, sum) = algos::exclusive_scan(ctx, &counts, &Sum);
        let mut lo = counts.clone();
        algos::all_reduce(ctx, &mut lo, &Min);
        let mut hi = counts.clone();
        algos::all_reduce(ctx, &mut hi, &Max);
        (reduced, all, upto, total, before, sum, lo, hi)
    });
    let total = oracle_fold(&inputs, 0..p).unwrap();
    let counts: Vec<Vec<u64>> = inputs
        .iter()
        .map(|v| v.iter().map(|x| u64::from(x[1] >> 8)).collect())
        .collect();
    let column = |j: usize| counts.iter().map(move |c| c[j]);
    for (q, (reduced, all, upto, tot, before, sum, lo, hi)) in out {
        assert_eq!(reduced, (q == root).then(|| total.clone()), "reduce on {q}");
        assert_eq!(all, total, "all_reduce on {q}");
        assert_eq!(tot, total, "inclusive_scan total on {q}");
        assert_eq!(
            upto,
            oracle_fold(&inputs, 0..q + 1).unwrap(),
            "inclusive_scan on {q}"
        );
        let want_before: Vec<u64> = (0..m).map(|j| column(j).take(q).sum()).collect();
        assert_eq!(before, want_before, "exclusive_scan on {q}");
        let want_sum: Vec<u64> = (0..m).map(|j| column(j).sum()).collect();
        assert_eq!(sum, want_sum, "exclusive_scan total on {q}");
        let want_lo: Vec<u64> = (0..m).map(|j| column(j).min().unwrap()).collect();
        let want_hi: Vec<u64> = (0..m).map(|j| column(j).max().unwrap()).collect();
        assert_eq!((lo, hi), (want_lo, want_hi), "min/max on {q}");
    }
}

fn check_broadcast(rt: &Runtime, m: usize, seed: u64, root: usize) {
    let p = rt.nprocs();
    let root = root % p;
    let data = affine_input(seed, root, m);
    let out = support::run_local(rt, |ctx| {
        let mine = affine_input(seed, ctx.pid(), m);
        let mut results = Vec::new();
        for variant in 0..3 {
            let mut buf = mine.clone();
            match variant {
                0 => algos::broadcast(ctx, root, &mut buf),
                1 => algos::variants::broadcast_tree(ctx, root, &mut buf),
                _ => algos::variants::broadcast_two_phase(ctx, root, &mut buf),
            }
            results.push(buf);
        }
        let short = if ctx.pid() == root {
            &mine[..m / 2]
        } else {
            &[][..]
        };
        results.push(algos::broadcast_vec(ctx, root, short));
        results
    });
    for (q, results) in out {
        for (variant, got) in results.iter().enumerate().take(3) {
            assert_eq!(got, &data, "broadcast variant {variant} on {q}");
        }
        assert_eq!(results[3], data[..m / 2], "broadcast_vec on {q}");
    }
}

/// Processor `q`'s part for processor `j` in the variable-size tests.
fn part(seed: u64, q: usize, j: usize, max: usize) -> Vec<u32> {
    let mut rng = Rng(seed ^ ((q * 1000 + j) as u64));
    let len = rng.below(max + 1);
    (0..len).map(|_| rng.next_u64() as u32).collect()
}

fn check_gather_family(rt: &Runtime, max: usize, seed: u64, root: usize) {
    let p = rt.nprocs();
    let root = root % p;
    let out = support::run_local(rt, |ctx| {
        let (q, p) = (ctx.pid(), ctx.nprocs());
        let mine = part(seed, q, p, max);
        let gathered = algos::gather(ctx, root, &mine);
        let all = algos::all_gather(ctx, &mine);
        let parts: Vec<Vec<u32>> = if q == root {
            (0..p).map(|j| part(seed, p + 1, j, max)).collect()
        } else {
            Vec::new()
        };
        let scattered = algos::scatter(ctx, root, &parts);
        let sends = (0..p).map(|j| part(seed, q, j, max)).collect();
        let exchanged = algos::all_to_all(ctx, sends);
        (gathered, all, scattered, exchanged)
    });
    let everyone: Vec<Vec<u32>> = (0..p).map(|q| part(seed, q, p, max)).collect();
    for (q, (gathered, all, scattered, exchanged)) in out {
        assert_eq!(
            gathered,
            (q == root).then(|| everyone.clone()),
            "gather on {q}"
        );
        assert_eq!(all, everyone, "all_gather on {q}");
        assert_eq!(scattered, part(seed, p + 1, q, max), "scatter on {q}");
        let want: Vec<Vec<u32>> = (0..p).map(|src| part(seed, src, q, max)).collect();
        assert_eq!(exchanged, want, "all_to_all on {q}");
    }
}

fn check_segmented(rt: &Runtime, max: usize, seed: u64, density: usize) {
    let p = rt.nprocs();
    let input = |q: usize| {
        let mut rng = Rng(seed.wrapping_add(q as u64));
        let len = rng.below(max + 1);
        let flags: Vec<bool> = (0..len).map(|_| rng.below(100) < density).collect();
        (affine_input(seed, q, len), flags)
    };
    let out = support::run_local(rt, |ctx| {
        let (data, flags) = input(ctx.pid());
        algos::segmented_scan(ctx, &data, &flags, &affine)
    });
    let (mut data, mut flags) = (Vec::new(), Vec::new());
    for q in 0..p {
        let (d, f) = input(q);
        data.extend(d);
        flags.extend(f);
    }
    let mut want: Vec<[u32; 2]> = Vec::new();
    for (i, (&x, &s)) in data.iter().zip(&flags).enumerate() {
        want.push(if i == 0 || s {
            x
        } else {
            affine(want[i - 1], x)
        });
    }
    let mut at = 0;
    let mut starts = Vec::new();
    for q in 0..p {
        starts.push(at);
        at += input(q).0.len();
    }
    for (q, got) in out {
        let len = input(q).0.len();
        assert_eq!(
            got,
            want[starts[q]..starts[q] + len],
            "segmented scan on {q}"
        );
    }
}

proptest! {
    #![proptest_config(support::proptest_config(24))]

    #[test]
    fn reduce_and_scan_match_oracle(p in 1usize..=16, m in 0usize..700, seed: u64, root: usize) {
        on_runtimes(60, &[p], move |rt| check_reduce_and_scan(rt, m, seed, root));
    }

    #[test]
    fn broadcasts_match_oracle(p in 1usize..=16, m in 0usize..3000, seed: u64, root: usize) {
        on_runtimes(60, &[p], move |rt| check_broadcast(rt, m, seed, root));
    }

    #[test]
    fn gather_family_matches_oracle(p in 1usize..=16, max in 0usize..40, seed: u64, root: usize) {
        on_runtimes(60, &[p], move |rt| check_gather_family(rt, max, seed, root));
    }

    #[test]
    fn segmented_scan_matches_oracle(p in 1usize..=16, max in 0usize..12, seed: u64, density in 0usize..100) {
        on_runtimes(60, &[p], move |rt| check_segmented(rt, max, seed, density));
    }
}

#[test]
fn collectives_at_64_processors() {
    on_runtimes(120, &[64], |rt| {
        check_reduce_and_scan(rt, 3, 1, 5);
        check_reduce_and_scan(rt, 200, 2, 63);
        check_broadcast(rt, 1500, 3, 17);
        check_gather_family(rt, 3, 4, 40);
        check_segmented(rt, 2, 5, 30);
    });
}

/// Misuse that a collective detects itself ends the run with a message
/// naming the collective: a wrong number of vectors or parts, a root out
/// of range.
#[test]
fn misuse_names_the_collective() {
    if support::under_mpi() {
        return; // a panic under MPI aborts the job
    }
    let err = |f: fn(&mut bsp::Ctx)| Runtime::threads(3).run(f).unwrap_err().to_string();
    type Case = (&'static str, &'static str, fn(&mut bsp::Ctx));
    let cases: [Case; 5] = [
        ("all_to_all", "passed 2 vectors", |ctx| {
            let _ = algos::all_to_all(ctx, vec![vec![1u8]; 2]);
        }),
        ("scatter", "passed 4 parts", |ctx| {
            let _ = algos::scatter(ctx, 0, &vec![vec![1u8]; 4]);
        }),
        ("gather", "root 3", |ctx| {
            let _ = algos::gather(ctx, 3, &[1u8]);
        }),
        ("broadcast", "root 5", |ctx| {
            algos::broadcast(ctx, 5, &mut [1u8]);
        }),
        ("scatter", "root 3", |ctx| {
            let _ = algos::scatter::<u8>(ctx, 3, &[]);
        }),
    ];
    for (name, detail, f) in cases {
        let text = err(f);
        assert!(
            text.contains(name) && text.contains(detail),
            "{name}: {text}"
        );
    }
}

/// Processors that pass vectors of different lengths to a collective that
/// needs equal ones end the run with an error that names the collective,
/// whichever variant runs and whether the odd vector is longer or shorter.
#[test]
fn unequal_lengths_name_the_collective() {
    if support::under_mpi() {
        return; // a failure under MPI aborts the job
    }
    use bsp::algos::variants;
    type Case = (&'static str, fn(&mut bsp::Ctx, usize));
    let cases: [Case; 12] = [
        ("all_reduce", |ctx, m| {
            algos::all_reduce(ctx, &mut vec![1u32; m], &Sum)
        }),
        ("all_reduce", |ctx, m| {
            variants::all_reduce_direct(ctx, &mut vec![1u32; m], &Sum)
        }),
        ("all_reduce", |ctx, m| {
            variants::all_reduce_two_phase(ctx, &mut vec![1u32; m], &Sum)
        }),
        ("all_reduce", |ctx, m| {
            variants::all_reduce_hypercube(ctx, &mut vec![1u32; m], &Sum)
        }),
        ("reduce", |ctx, m| {
            drop(algos::reduce(ctx, 0, &vec![1u32; m], &Sum))
        }),
        ("reduce", |ctx, m| {
            drop(variants::reduce_two_phase(ctx, 0, &vec![1u32; m], &Sum))
        }),
        ("scan", |ctx, m| {
            drop(algos::exclusive_scan(ctx, &vec![1u32; m], &Sum))
        }),
        ("scan", |ctx, m| {
            drop(variants::inclusive_scan_two_phase(
                ctx,
                &vec![1u32; m],
                &Sum,
            ))
        }),
        ("scan", |ctx, m| {
            drop(variants::exclusive_scan_hypercube(
                ctx,
                &vec![1u32; m],
                &Sum,
            ))
        }),
        ("broadcast", |ctx, m| {
            algos::broadcast(ctx, 0, &mut vec![1u32; m])
        }),
        ("broadcast", |ctx, m| {
            variants::broadcast_two_phase(ctx, 0, &mut vec![1u32; m])
        }),
        ("all_to_all_uniform", |ctx, m| {
            drop(algos::all_to_all_uniform(
                ctx,
                &vec![1u32; ctx.nprocs() * m],
            ))
        }),
    ];
    for (name, f) in cases {
        for odd in [3, 7] {
            for p in [3, 4] {
                let err = Runtime::threads(p)
                    .run(move |ctx| f(ctx, if ctx.pid() == 1 { odd } else { 5 }))
                    .unwrap_err()
                    .to_string();
                assert!(
                    err.contains(name),
                    "{name}, p = {p}, odd length {odd}: {err}"
                );
            }
        }
    }
}
