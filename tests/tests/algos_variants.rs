//! Property tests of every named variant of the collectives (broadcast,
//! reduce, all-reduce, the scans, the uniform all-to-all) against
//! sequential oracles, on threads and, as ranks of an `mpirun` job, on
//! MPI; and of the default's choice by the cost model.

mod support;

use bsp::algos::variants::Model;
use bsp::algos::{self, Sum};
use bsp::{Cost, Machine, Router, Runtime};
use std::time::Duration;

use proptest::prelude::*;
use support::{affine, affine_input, on_runtimes};

fn fold(inputs: &[Vec<[u32; 2]>], range: std::ops::Range<usize>) -> Option<Vec<[u32; 2]>> {
    let mut it = inputs[range].iter();
    let mut acc = it.next()?.clone();
    for v in it {
        for (a, b) in acc.iter_mut().zip(v) {
            *a = affine(*a, *b);
        }
    }
    Some(acc)
}

/// The identity of [`affine`] (x ↦ 1·x + 0), for the exclusive scans.
fn affine_monoid() -> impl algos::Monoid<[u32; 2]> {
    algos::monoid([1u32, 0], affine)
}

fn check_broadcasts(rt: &Runtime, m: usize, seed: u64, root: usize) {
    let p = rt.nprocs();
    let root = root % p;
    let want = affine_input(seed, root, m);
    let out = support::run_local(rt, |ctx| {
        let mine = affine_input(seed, ctx.pid(), m);
        let mut got = Vec::new();
        for v in algos::variants::broadcast_variants::<[u32; 2]>() {
            let mut buf = mine.clone();
            (v.run)(ctx, root, &mut buf);
            got.push((v.name, buf));
        }
        got
    });
    for (q, got) in out {
        for (name, buf) in got {
            assert_eq!(
                buf,
                want,
                "broadcast {name} on {q}, {}",
                support::describe(rt)
            );
        }
    }
}

fn check_reductions(rt: &Runtime, m: usize, seed: u64, root: usize) {
    let p = rt.nprocs();
    let root = root % p;
    let inputs: Vec<_> = (0..p).map(|q| affine_input(seed, q, m)).collect();
    let out = support::run_local(rt, |ctx| {
        let mine = affine_input(seed, ctx.pid(), m);
        let mut reduced = Vec::new();
        for v in algos::variants::reduce_variants::<[u32; 2], _>() {
            reduced.push((v.name, (v.run)(ctx, root, &mine, &affine)));
        }
        let mut all = Vec::new();
        for v in algos::variants::all_reduce_variants::<[u32; 2], _>() {
            let mut buf = mine.clone();
            (v.run)(ctx, &mut buf, &affine);
            all.push((v.name, buf));
        }
        let monoid = affine_monoid();
        let mut scans = Vec::new();
        for v in algos::variants::exclusive_scan_variants::<[u32; 2], _>() {
            scans.push((v.name, false, (v.run)(ctx, &mine, &monoid)));
        }
        for v in algos::variants::inclusive_scan_variants::<[u32; 2], _>() {
            scans.push((v.name, true, (v.run)(ctx, &mine, &affine)));
        }
        (reduced, all, scans)
    });
    let total = fold(&inputs, 0..p).unwrap();
    for (q, (reduced, all, scans)) in out {
        let on = || format!("on {q}, {}", support::describe(rt));
        for (name, got) in reduced {
            assert_eq!(
                got,
                (q == root).then(|| total.clone()),
                "reduce {name} {}",
                on()
            );
        }
        for (name, got) in all {
            assert_eq!(got, total, "all_reduce {name} {}", on());
        }
        for (name, inclusive, (scan, tot)) in scans {
            let want = if inclusive {
                fold(&inputs, 0..q + 1).unwrap()
            } else {
                fold(&inputs, 0..q).unwrap_or_else(|| vec![[1, 0]; m])
            };
            assert_eq!(scan, want, "scan {name} (inclusive {inclusive}) {}", on());
            assert_eq!(tot, total, "scan {name} total {}", on());
        }
    }
}

/// Processor `src`'s block for processor `dst`.
fn block(seed: u64, src: usize, dst: usize, b: usize) -> Vec<u64> {
    (0..b)
        .map(|i| seed ^ ((src as u64) << 40) ^ ((dst as u64) << 20) ^ i as u64)
        .collect()
}

fn check_uniform_all_to_all(rt: &Runtime, b: usize, seed: u64) {
    let p = rt.nprocs();
    let out = support::run_local(rt, |ctx| {
        let me = ctx.pid();
        let data: Vec<u64> = (0..p).flat_map(|j| block(seed, me, j, b)).collect();
        let mut got = vec![("default", algos::all_to_all_uniform(ctx, &data))];
        for v in algos::variants::all_to_all_uniform_variants::<u64>() {
            if v.name == "hypercube" && !p.is_power_of_two() {
                continue;
            }
            got.push((v.name, (v.run)(ctx, &data)));
        }
        got
    });
    for (q, got) in out {
        let want: Vec<u64> = (0..p).flat_map(|src| block(seed, src, q, b)).collect();
        for (name, result) in got {
            assert_eq!(
                result,
                want,
                "all_to_all {name} on {q}, {}",
                support::describe(rt)
            );
        }
    }
}

proptest! {
    #![proptest_config(support::proptest_config(20))]

    #[test]
    fn broadcast_variants_match_oracle(p in 1usize..=16, m in 0usize..2000, seed: u64, root: usize) {
        on_runtimes(60, &[p], move |rt| check_broadcasts(rt, m, seed, root));
    }

    #[test]
    fn reduction_and_scan_variants_match_oracle(p in 1usize..=16, m in 0usize..300, seed: u64, root: usize) {
        on_runtimes(60, &[p], move |rt| check_reductions(rt, m, seed, root));
    }

    #[test]
    fn uniform_all_to_all_variants_match_oracle(p in 1usize..=16, b in 0usize..40, seed: u64) {
        on_runtimes(60, &[p], move |rt| check_uniform_all_to_all(rt, b, seed));
    }
}

#[test]
fn variants_at_64_processors() {
    on_runtimes(120, &[64], |rt| {
        check_broadcasts(rt, 700, 1, 9);
        check_reductions(rt, 5, 2, 63);
        check_uniform_all_to_all(rt, 3, 3);
    });
}

#[test]
fn the_hypercube_all_to_all_refuses_other_p() {
    if support::under_mpi() {
        return; // a panic under MPI aborts the job
    }
    let err = Runtime::threads(3)
        .run(|ctx| algos::variants::all_to_all_hypercube(ctx, &[0u8; 3]))
        .unwrap_err();
    assert!(err.to_string().contains("power of two"), "{err}");
}

/// A processor whose vector is one element longer or shorter than the
/// others', or empty, ends the run, under every variant of every collective that
/// needs equal lengths: with `OutOfBounds` where its data runs past a
/// receiver's buffer, else with the receiver's panic naming both lengths.
/// Nothing is folded or copied silently from a vector of another length.
#[test]
fn a_vector_of_another_length_ends_the_run() {
    if support::under_mpi() {
        return; // a panic under MPI aborts the job
    }
    type Collective = (&'static str, fn(&mut bsp::Ctx, usize, usize, usize));
    fn vector(ctx: &bsp::Ctx, len: usize) -> Vec<u64> {
        vec![ctx.pid() as u64 + 1; len]
    }
    let collectives: Vec<Collective> = vec![
        ("broadcast", |ctx, v, root, len| {
            let f = algos::variants::broadcast_variants::<u64>()[v].run;
            f(ctx, root, &mut vector(ctx, len));
        }),
        ("reduce", |ctx, v, root, len| {
            let f = algos::variants::reduce_variants::<u64, Sum>()[v].run;
            f(ctx, root, &vector(ctx, len), &Sum);
        }),
        ("all-reduce", |ctx, v, _, len| {
            let f = algos::variants::all_reduce_variants::<u64, Sum>()[v].run;
            f(ctx, &mut vector(ctx, len), &Sum);
        }),
        ("exclusive scan", |ctx, v, _, len| {
            let f = algos::variants::exclusive_scan_variants::<u64, Sum>()[v].run;
            f(ctx, &vector(ctx, len), &Sum);
        }),
        ("inclusive scan", |ctx, v, _, len| {
            let f = algos::variants::inclusive_scan_variants::<u64, Sum>()[v].run;
            f(ctx, &vector(ctx, len), &Sum);
        }),
        // p blocks of 6, against p blocks of 5, 7 or 0 (len · p elements).
        ("uniform all-to-all", |ctx, v, _, len| {
            let f = algos::variants::all_to_all_uniform_variants::<u64>()[v].run;
            let p = ctx.nprocs();
            f(ctx, &vector(ctx, len * p));
        }),
        ("default broadcast", |ctx, _, root, len| {
            algos::broadcast(ctx, root, &mut vector(ctx, len));
        }),
    ];
    let counts = [
        algos::variants::broadcast_variants::<u64>().len(),
        algos::variants::reduce_variants::<u64, Sum>().len(),
        algos::variants::all_reduce_variants::<u64, Sum>().len(),
        algos::variants::exclusive_scan_variants::<u64, Sum>().len(),
        algos::variants::inclusive_scan_variants::<u64, Sum>().len(),
        algos::variants::all_to_all_uniform_variants::<u64>().len(),
        1,
    ];
    let hypercube = algos::variants::all_to_all_uniform_variants::<u64>()
        .iter()
        .position(|v| v.name == "hypercube")
        .expect("the hypercube all-to-all is a variant");
    let mut wrong = Vec::new();
    for ((name, run), variants) in collectives.into_iter().zip(counts) {
        for v in 0..variants {
            for p in [2usize, 3, 4, 5, 8] {
                if name == "uniform all-to-all" && v == hypercube && !p.is_power_of_two() {
                    continue;
                }
                for (odd, root) in [(p - 1, 0), (0, p - 1), (p / 2, p / 2)] {
                    for len in [0, 5, 7] {
                        let case =
                            format!("{name} variant {v}, p = {p}, processor {odd} with {len} of 6");
                        let outcome = Runtime::threads(p).run(move |ctx| {
                            let mine = if ctx.pid() == odd { len } else { 6 };
                            run(ctx, v, root, mine);
                        });
                        match outcome {
                            Ok(_) => wrong.push(format!("{case}: Ok")),
                            Err(err) => {
                                let text = err.to_string();
                                if err.kind() != bsp::ErrorKind::OutOfBounds
                                    && !text.contains("every processor must pass the same length")
                                {
                                    wrong.push(format!("{case}: {text}"));
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} cases:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// The supersteps the default of each collective takes equal those of
/// the variant the model predicts cheapest, on machines whose l and g
/// favour different variants.
#[test]
fn defaults_take_the_variant_of_least_predicted_cost() {
    let cost = |l: f64, g: f64| Cost {
        l_seconds: l,
        g_seconds_per_byte: g,
    };
    let machines = [
        Machine::new(cost(1e-3, 1e-12), cost(1e-3, 1e-12)), // barriers dear
        Machine::new(cost(1e-7, 1e-8), cost(1e-7, 1e-8)),   // bandwidth dear
        Machine::new(cost(2e-5, 5e-10), cost(2e-5, 5e-10)),
    ];
    let ps: &[usize] = if support::under_mpi() {
        &[0]
    } else {
        &[2, 5, 8, 13]
    };
    for machine in machines {
        for &p in ps {
            let rt = if support::under_mpi() {
                support::runtimes(&[]).remove(0)
            } else {
                Runtime::threads(p)
            };
            let rt = rt.with_router(Router::TwoPhase).with_machine(machine);
            let p = rt.nprocs();
            // The model the run's defaults use: its machine and router, on
            // its transport, on one node or not (as the run says).
            let one_node = support::run_local(&rt, |ctx| ctx.on_one_node())
                .into_iter()
                .all(|(_, one)| one);
            let model = Model::new(machine, Router::TwoPhase)
                .with_transport(rt.transport())
                .with_one_node(one_node);
            for m in [1usize, 100, 10_000, 200_000] {
                let bytes = 8 * m;
                let out = support::run_local(&rt, |ctx| {
                    let steps = |ctx: &mut bsp::Ctx, f: &dyn Fn(&mut bsp::Ctx)| {
                        let before = ctx.superstep();
                        f(ctx);
                        ctx.superstep() - before
                    };
                    let mut buf = vec![1u64; m];
                    let b = steps(ctx, &|ctx| algos::broadcast(ctx, 0, &mut buf.clone()));
                    let bt = algos::variants::broadcast_variants::<u64>()
                        .iter()
                        .map(|v| steps(ctx, &|ctx| (v.run)(ctx, 0, &mut buf.clone())))
                        .collect::<Vec<_>>();
                    let a = steps(ctx, &|ctx| algos::all_reduce(ctx, &mut buf.clone(), &Sum));
                    let at = algos::variants::all_reduce_variants::<u64, Sum>()
                        .iter()
                        .map(|v| steps(ctx, &|ctx| (v.run)(ctx, &mut buf.clone(), &Sum)))
                        .collect::<Vec<_>>();
                    let s = steps(ctx, &|ctx| drop(algos::exclusive_scan(ctx, &buf, &Sum)));
                    let st = algos::variants::exclusive_scan_variants::<u64, Sum>()
                        .iter()
                        .map(|v| steps(ctx, &|ctx| drop((v.run)(ctx, &buf, &Sum))))
                        .collect::<Vec<_>>();
                    buf.clear();
                    assert_eq!(Model::of(ctx), model);
                    (b, bt, a, at, s, st)
                });
                let picked = |names: Vec<&'static str>, costs: Vec<Option<f64>>| {
                    let best = costs
                        .iter()
                        .enumerate()
                        .filter_map(|(i, c)| c.map(|c| (i, c)))
                        .fold(None, |acc: Option<(usize, f64)>, (i, c)| match acc {
                            Some((_, b)) if b <= c => acc,
                            _ => Some((i, c)),
                        })
                        .unwrap()
                        .0;
                    (best, names[best])
                };
                let bv = algos::variants::broadcast_variants::<u64>();
                let (bi, _) = picked(
                    bv.iter().map(|v| v.name).collect(),
                    bv.iter().map(|v| (v.cost)(&model, p, bytes)).collect(),
                );
                let av = algos::variants::all_reduce_variants::<u64, Sum>();
                let (ai, _) = picked(
                    av.iter().map(|v| v.name).collect(),
                    av.iter().map(|v| (v.cost)(&model, p, bytes)).collect(),
                );
                let sv = algos::variants::exclusive_scan_variants::<u64, Sum>();
                let (si, _) = picked(
                    sv.iter().map(|v| v.name).collect(),
                    sv.iter().map(|v| (v.cost)(&model, p, bytes)).collect(),
                );
                assert_eq!(
                    algos::variants::pick(&model, p, bytes, &bv).name,
                    bv[bi].name
                );
                for (_, (b, bt, a, at, s, st)) in out {
                    let at_p = format!("p = {p}, m = {m}, machine {machine}");
                    assert_eq!(b, bt[bi], "broadcast took {b} supersteps, {at_p}");
                    assert_eq!(a, at[ai], "all_reduce took {a} supersteps, {at_p}");
                    assert_eq!(s, st[si], "exclusive_scan took {s} supersteps, {at_p}");
                }
            }
        }
    }
}

/// The model's choice moves with the machine: short messages go to the
/// variants with few supersteps, long ones to those with little volume.
#[test]
fn the_choice_follows_l_and_g() {
    let cost = |l: f64, g: f64| Cost {
        l_seconds: l,
        g_seconds_per_byte: g,
    };
    let model = |l, g| Model::new(Machine::new(cost(l, g), cost(l, g)), Router::TwoPhase);
    let typical = model(20e-6, 0.5e-9);
    let bv = algos::variants::broadcast_variants::<u8>();
    assert_eq!(algos::variants::pick(&typical, 2, 8, &bv).name, "1-level");
    // Long buffers on threads: the root's one copy is shared by all 15
    // receivers (one superstep of h = B), where the two-phase broadcast
    // moves about as much in two. Under MPI the root sends 15 copies.
    assert_eq!(
        algos::variants::pick(&typical, 16, 64 << 20, &bv).name,
        "1-level"
    );
    // Under MPI across nodes the root sends 15 copies; on one node the
    // receivers copy out of the root's memory, as on threads.
    #[cfg(feature = "mpi")]
    {
        let mpi = typical.with_transport(bsp::Transport::Mpi);
        assert_eq!(
            algos::variants::pick(&mpi, 16, 64 << 20, &bv).name,
            "two-phase"
        );
        assert_eq!(mpi.multicast_h(1000.0, 15), 15000.0);
        let node = mpi.with_one_node(true);
        assert_eq!(node.multicast_h(1000.0, 15), 1000.0);
        assert_eq!(
            algos::variants::pick(&node, 16, 64 << 20, &bv).name,
            "1-level"
        );
    }
    let av = algos::variants::all_reduce_variants::<u8, Sum>();
    assert_eq!(algos::variants::pick(&typical, 16, 8, &av).name, "direct");
    assert_eq!(
        algos::variants::pick(&typical, 16, 64 << 20, &av).name,
        "two-phase"
    );
    // At p = 4 the hypercube scan's 2 supersteps of h = B beat the
    // two-phase scan's h = 3B/4 and 3B/2 once g·B outweighs l.
    let sv = algos::variants::exclusive_scan_variants::<u8, Sum>();
    assert_eq!(
        algos::variants::pick(&typical, 4, 1 << 20, &sv).name,
        "hypercube"
    );
    assert_eq!(algos::variants::pick(&typical, 4, 8, &sv).name, "direct");
    assert_eq!(
        algos::variants::pick(&typical, 16, 1 << 20, &sv).name,
        "two-phase"
    );
    let uv = algos::variants::all_to_all_uniform_variants::<u8>();
    for bytes in [8, 4096, 1 << 20] {
        for p in [2, 3, 4, 8, 16] {
            assert_eq!(
                algos::variants::pick(&typical, p, bytes, &uv).name,
                "routed"
            );
        }
    }
}

/// Where a superstep that gathers h at one processor costs less per byte
/// than a full h-relation (a machine whose processors share cores), the
/// rooted variants stay ahead longer: the direct reduce over the
/// two-phase one at p = 16 and 32 KiB; and a machine whose supersteps
/// are dear takes the k-level broadcast of one superstep over the tree's
/// four.
#[test]
fn the_lone_g_and_the_k_level_variants_move_the_choice() {
    let c = Cost {
        l_seconds: 20e-6,
        g_seconds_per_byte: 1e-9,
    };
    let full = Model::new(Machine::new(c, c), Router::TwoPhase);
    let shared = Model::new(
        Machine::new(c, c).with_lone_g(1e-10, 1e-10),
        Router::TwoPhase,
    );
    let rv = algos::variants::reduce_variants::<u64, Sum>();
    assert_eq!(
        algos::variants::pick(&full, 16, 32 << 10, &rv).name,
        "two-phase"
    );
    assert_eq!(
        algos::variants::pick(&shared, 16, 32 << 10, &rv).name,
        "direct"
    );
    let bv = algos::variants::broadcast_variants::<u64>();
    assert_eq!(algos::variants::pick(&shared, 16, 8, &bv).name, "1-level");
}

/// A model on MPI charges a split 6 l and a sub-machine's superstep
/// 1.5 l (what `bench_split` measured there), where one on threads charges
/// `l·(2 + 2/q)` and `l·(1 + q/p)/2`; a sub-machine of all p is the whole
/// machine on both.
#[cfg(feature = "mpi")]
#[test]
fn sub_machines_cost_what_their_transport_measured() {
    let c = Cost {
        l_seconds: 1e-4,
        g_seconds_per_byte: 0.0,
    };
    let threads = Model::new(Machine::new(c, c), Router::TwoPhase);
    let mpi = threads.with_transport(bsp::Transport::Mpi);
    let near = |a: f64, b: f64| (a - b).abs() < 1e-12;
    assert!(near(threads.split(2), 3e-4));
    assert!(near(mpi.split(2), 6e-4));
    assert!(near(threads.sub_superstep(8, 2, 0.0, 0.0), 0.625e-4));
    assert!(near(mpi.sub_superstep(8, 2, 0.0, 0.0), 1.5e-4));
    assert!(near(mpi.sub_superstep(8, 8, 0.0, 0.0), 1e-4));
    // The dearer sub-machines move the MPI broadcast of 8 bytes on 16
    // further from the k-level variants.
    let bv = algos::variants::broadcast_variants::<u64>();
    let cost = |m: &Model, name: &str| {
        let v = bv.iter().find(|v| v.name == name).expect("listed");
        (v.cost)(m, 16, 8).expect("applies")
    };
    assert!(cost(&mpi, "2-level") > cost(&threads, "2-level"));
    assert_eq!(algos::variants::pick(&mpi, 16, 8, &bv).name, "1-level");
}

/// The variants again, in child processes whose syncs meet at the
/// barriers the default does not pick on this machine: the binomial tree,
/// and the dissemination barrier with more processors than cores
/// (`BSP_BARRIER`).
#[test]
fn every_barrier_carries_the_collectives() {
    if support::under_mpi() || std::env::var_os(bsp::env::BARRIER_ENV).is_some() {
        return;
    }
    for kind in ["binomial", "dissemination"] {
        for name in [
            "variants_at_64_processors",
            "reduction_and_scan_variants_match_oracle",
        ] {
            let run = support::rerun_test(
                name,
                &[(bsp::env::BARRIER_ENV, kind)],
                Duration::from_secs(300),
            );
            assert!(
                run.status.is_some_and(|s| s.success()) && run.stdout.contains("1 passed"),
                "{name} on the {kind} barrier: {}\n{}",
                run.stdout,
                run.stderr
            );
        }
    }
}

/// A `BSP_BARRIER` that names no barrier ends the run with a
/// configuration error naming the variable.
#[test]
fn an_unknown_barrier_is_a_configuration_error() {
    if support::under_mpi() {
        return;
    }
    match std::env::var(bsp::env::BARRIER_ENV).as_deref() {
        Ok("no-such-barrier") => {
            let err = Runtime::from_env()
                .with_procs(2)
                .run(|ctx| ctx.pid())
                .unwrap_err();
            assert_eq!(err.kind(), bsp::ErrorKind::Config, "{err}");
            assert!(err.to_string().contains(bsp::env::BARRIER_ENV), "{err}");
        }
        Ok(_) => {}
        Err(_) => {
            let run = support::rerun_test(
                "an_unknown_barrier_is_a_configuration_error",
                &[(bsp::env::BARRIER_ENV, "no-such-barrier")],
                Duration::from_secs(60),
            );
            assert!(
                run.status.is_some_and(|s| s.success()) && run.stdout.contains("1 passed"),
                "{}\n{}",
                run.stdout,
                run.stderr
            );
        }
    }
}
