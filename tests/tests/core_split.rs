//! Sub-machines (`Ctx::split`): property tests against an oracle of the
//! groups on every runtime (threads, and the MPI world under `mpirun`),
//! and the failures of misused splits on threads (`mpi_failures.rs` runs
//! the MPI ones as jobs).

mod support;

use bsp::algos::{self, Sum};
use bsp::{Ctx, ErrorKind, Runtime};
use proptest::prelude::*;
use support::{on_runtimes, watchdog, Rng};

/// Each processor's (color, key) for `p` processors, from `seed`.
fn choices(p: usize, colors: usize, seed: u64) -> Vec<(usize, usize)> {
    let mut rng = Rng(seed);
    (0..p)
        .map(|_| (rng.below(colors.max(1)), rng.below(3)))
        .collect()
}

/// The oracle: the members (run pids) of `q`'s group, in the group's pid order.
fn members(choices: &[(usize, usize)], q: usize) -> Vec<usize> {
    let mut m: Vec<usize> = (0..choices.len())
        .filter(|&r| choices[r].0 == choices[q].0)
        .collect();
    m.sort_by_key(|&r| (choices[r].1, r));
    m
}

/// What one processor sees inside its sub-machine, and after it.
#[derive(Debug, PartialEq)]
struct Seen {
    sub_pid: usize,
    sub_procs: usize,
    /// The run pids of the members, gathered by puts in the sub-machine.
    gathered: Vec<u64>,
    /// The sum of the members' run pids, by `algos::all_reduce` and by
    /// `algos::broadcast` from the sub-machine's last processor.
    total: u64,
    broadcast: u64,
    /// In a nested split of the sub-machine by its pid's parity: this
    /// processor's pid, the group's size and the sum of its run pids.
    nested: (usize, usize, u64),
    /// The sub-machine's supersteps start at 0 and are its own.
    first_superstep: usize,
    /// The parent's superstep on return from `split`, and the value put
    /// to this processor before the split, read after the parent's sync.
    parent_superstep: usize,
    put_before: u64,
}

fn check_split(rt: &Runtime, colors: usize, seed: u64) {
    let p = rt.nprocs();
    let choices = choices(p, colors, seed);
    let cs = choices.clone();
    let out = support::run_local(rt, move |ctx: &mut Ctx| {
        let me = ctx.pid();
        let p = ctx.nprocs();
        let before = ctx.coarray::<u64>(1);
        ctx.put((me + 1) % p, &before, 0, &[me as u64 + 100]);
        let (color, key) = cs[me];
        let (sub_pid, sub_procs, gathered, total, broadcast, nested, first_superstep) =
            ctx.split(color, key, |sub| {
                let first_superstep = sub.superstep();
                let n = sub.nprocs();
                let a = sub.coarray::<u64>(n);
                for t in 0..n {
                    sub.put(t, &a, sub.pid(), &[me as u64]);
                }
                sub.sync();
                let gathered = sub.local(&a).to_vec();
                // Groups run different numbers of supersteps.
                for _ in 0..color {
                    sub.sync();
                }
                let mut total = [me as u64];
                algos::all_reduce(sub, &mut total, &Sum);
                let mut b = [total[0] * u64::from(sub.pid() + 1 == n)];
                algos::broadcast(sub, n - 1, &mut b);
                let parity = sub.pid() % 2;
                let nested = sub.split(parity, 0, |inner| {
                    let mut s = [me as u64];
                    algos::all_reduce(inner, &mut s, &Sum);
                    (inner.pid(), inner.nprocs(), s[0])
                });
                (
                    sub.pid(),
                    n,
                    gathered,
                    total[0],
                    b[0],
                    nested,
                    first_superstep,
                )
            });
        let parent_superstep = ctx.superstep();
        ctx.sync();
        Seen {
            sub_pid,
            sub_procs,
            gathered,
            total,
            broadcast,
            nested,
            first_superstep,
            parent_superstep,
            put_before: ctx.local(&before)[0],
        }
    });
    for (q, seen) in out {
        let group = members(&choices, q);
        let sub_pid = group.iter().position(|&r| r == q).unwrap();
        let total: u64 = group.iter().map(|&r| r as u64).sum();
        let same_parity: Vec<usize> = (0..group.len()).filter(|i| i % 2 == sub_pid % 2).collect();
        let want = Seen {
            sub_pid,
            sub_procs: group.len(),
            gathered: group.iter().map(|&r| r as u64).collect(),
            total,
            broadcast: total,
            nested: (
                sub_pid / 2,
                same_parity.len(),
                same_parity.iter().map(|&i| group[i] as u64).sum(),
            ),
            first_superstep: 0,
            parent_superstep: 0,
            put_before: ((q + p - 1) % p) as u64 + 100,
        };
        assert_eq!(seen, want, "{}: processor {q}", support::describe(rt));
    }
}

proptest! {
    #![proptest_config(support::proptest_config(24))]

    #[test]
    fn sub_machines_match_the_oracle(p in 1usize..=12, colors in 1usize..=4, seed: u64) {
        on_runtimes(60, &[p], move |rt| check_split(rt, colors, seed));
    }
}

#[test]
fn every_processor_alone_and_all_together() {
    on_runtimes(60, &[1, 2, 7, 64], |rt| {
        let p = rt.nprocs();
        // Alone: p colors; together: one color, keys reversing the order.
        for (alone, together) in [(true, false), (false, true)] {
            let out = support::run_local(rt, move |ctx: &mut Ctx| {
                let me = ctx.pid();
                let color = if alone { me } else { 0 };
                let key = if together { p - me } else { 0 };
                ctx.split(color, key, |sub| {
                    let mut v = [me as u64];
                    algos::all_reduce(sub, &mut v, &Sum);
                    sub.sync();
                    (sub.pid(), sub.nprocs(), v[0])
                })
            });
            for (q, got) in out {
                let want = if alone {
                    (0, 1, q as u64)
                } else {
                    (p - 1 - q, p, (p * (p - 1) / 2) as u64)
                };
                assert_eq!(got, want, "{}: processor {q}", support::describe(rt));
            }
        }
    });
}

/// Large coarrays (under MPI on one node, memory that the other ranks of
/// the machine map) take puts in a sub-machine and in its parent after it.
#[test]
fn large_coarrays_take_puts_in_a_sub_machine_and_its_parent() {
    const N: usize = 1 << 14; // 128 KiB of u64
    on_runtimes(60, &[1, 3, 4], |rt| {
        let out = support::run_local(rt, |ctx: &mut Ctx| {
            let (me, p) = (ctx.pid(), ctx.nprocs());
            let inner = ctx.split(me % 2, 0, |sub| {
                let (s, q) = (sub.pid(), sub.nprocs());
                let a = sub.coarray::<u64>(N);
                sub.put((s + 1) % q, &a, 0, &vec![s as u64 + 1; N]);
                sub.sync();
                let want = ((s + q - 1) % q) as u64 + 1;
                sub.local(&a).iter().all(|&x| x == want)
            });
            let b = ctx.coarray::<u64>(N);
            ctx.put((me + 1) % p, &b, N / 2, &vec![me as u64 + 7; N / 2]);
            ctx.sync();
            let from = ((me + p - 1) % p) as u64 + 7;
            let outer = ctx.local(&b)[..N / 2].iter().all(|&x| x == 0)
                && ctx.local(&b)[N / 2..].iter().all(|&x| x == from);
            (inner, outer)
        });
        for (q, got) in out {
            assert_eq!(
                got,
                (true, true),
                "{}: processor {q}",
                support::describe(rt)
            );
        }
    });
}

/// Runs `program` on `p` threads under a watchdog and returns its error.
fn fails(p: usize, program: impl Fn(&mut Ctx) + Send + Sync + 'static) -> bsp::Error {
    watchdog(60, move || {
        Runtime::threads(p)
            .run(&program)
            .expect_err("the run must fail")
    })
}

fn assert_says(err: &bsp::Error, needles: &[&str]) {
    let text = err.to_string();
    for needle in needles {
        assert!(text.contains(needle), "{needle:?} not in {text}");
    }
}

#[test]
fn a_parent_sync_while_others_split_is_a_mismatch() {
    let err = fails(4, |ctx| {
        ctx.sync();
        if ctx.pid() == 3 {
            ctx.sync();
        } else {
            ctx.split(0, 0, |sub| sub.sync());
        }
        ctx.sync();
    });
    assert_eq!(err.kind(), ErrorKind::SyncMismatch, "{err}");
    assert_eq!((err.pid(), err.superstep()), (Some(3), Some(1)), "{err}");
    assert_says(
        &err,
        &["processor 0 called split", "processor 3 called sync"],
    );
}

#[test]
fn a_member_returning_early_is_named_by_its_run_pid() {
    let err = fails(4, |ctx| {
        ctx.sync();
        let me = ctx.pid();
        ctx.split(me % 2, 0, |sub| {
            if me != 3 {
                sub.sync();
            }
        });
    });
    assert_eq!(err.kind(), ErrorKind::SyncMismatch, "{err}");
    assert_eq!((err.pid(), err.superstep()), (Some(3), Some(1)), "{err}");
    assert_says(
        &err,
        &[
            "processor 1 returned from its closure",
            "[in the sub-machine of color 1 (2 processors): its processor 1, at its superstep 0]",
        ],
    );
}

#[test]
fn a_panic_in_one_sub_machine_releases_the_others() {
    let err = fails(6, |ctx| {
        let me = ctx.pid();
        ctx.split(me % 3, 0, |sub| {
            sub.sync();
            if me == 4 {
                std::thread::sleep(std::time::Duration::from_millis(50));
                panic!("bad sub-machine input");
            }
            // The other groups wait here, and in the parent's sync.
            sub.sync();
            sub.sync();
        });
        ctx.sync();
    });
    assert_eq!(err.kind(), ErrorKind::Panic, "{err}");
    assert_eq!((err.pid(), err.superstep()), (Some(4), Some(0)), "{err}");
    assert_says(
        &err,
        &[
            "bad sub-machine input",
            "color 1 (2 processors): its processor 1, at its superstep 1",
        ],
    );
}

#[test]
fn misuse_inside_a_sub_machine_names_the_run_pid() {
    let err = fails(4, |ctx| {
        ctx.split(ctx.pid() / 2, 0, |sub| {
            let a = sub.coarray::<u8>(1);
            if sub.pid() == 1 {
                sub.put(2, &a, 0, &[1]); // only 2 processors in the group
            }
            sub.sync();
        });
    });
    assert_eq!(err.kind(), ErrorKind::BadPid, "{err}");
    assert!(matches!(err.pid(), Some(1) | Some(3)), "{err}");
    assert_says(&err, &["only 2 processors", "sub-machine of color"]);

    let err = fails(3, |ctx| {
        let me = ctx.pid();
        ctx.split(0, 0, |sub| {
            let a = sub.coarray::<u8>(1);
            if me == 2 {
                sub.abort("stop here");
            }
            sub.put(0, &a, 0, &[1]);
            sub.sync();
        });
    });
    assert_eq!(err.kind(), ErrorKind::Abort, "{err}");
    assert_eq!(err.pid(), Some(2), "{err}");
    assert_says(&err, &["stop here"]);

    let err = fails(2, |ctx| {
        ctx.split(0, 0, |sub| {
            let a = sub.coarray::<u8>(1);
            sub.put(0, &a, 0, &[1]);
        });
    });
    assert_eq!(err.kind(), ErrorKind::PendingCommunication, "{err}");
}

#[test]
fn a_late_member_is_named_at_the_sync_time_limit() {
    let err = watchdog(60, || {
        Runtime::threads(4)
            .with_sync_timeout(std::time::Duration::from_millis(200))
            .run(|ctx| {
                let me = ctx.pid();
                ctx.split(me % 2, 0, |sub| {
                    if me == 3 {
                        std::thread::sleep(std::time::Duration::from_millis(1200));
                    }
                    sub.sync();
                });
                if me % 2 == 0 {
                    // Past the member's time limit, before this machine's.
                    std::thread::sleep(std::time::Duration::from_millis(600));
                }
                ctx.sync();
            })
            .expect_err("the run must time out")
    });
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert_eq!(err.pid(), Some(3), "{err}");
    assert_says(
        &err,
        &["processor 1 has not arrived", "sub-machine of color 1"],
    );
}
