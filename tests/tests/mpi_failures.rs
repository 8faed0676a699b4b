//! Failure behaviour under MPI (DESIGN §5): each scenario runs as a small
//! job under `mpirun` (this test binary, re-launched with
//! `BSP_TEST_SCENARIO` set), with a time limit. The job must end with a
//! non-zero exit within seconds, and print the error naming processor and
//! superstep. Skipped, with a note, when `mpirun` is not installed.

mod support;

use std::time::Duration;

use bsp::Runtime;

const SCENARIO_ENV: &str = "BSP_TEST_SCENARIO";
const LIMIT: Duration = Duration::from_secs(60);

/// The job side: runs the scenario named by `BSP_TEST_SCENARIO` on the MPI
/// world. Without the variable (a plain `cargo test`) it does nothing.
#[test]
fn scenario() {
    let Ok(name) = std::env::var(SCENARIO_ENV) else {
        return;
    };
    let rt = Runtime::from_env(); // the MPI world, with BSP_ON_FAILURE and BSP_SYNC_TIMEOUT
    let last = rt.nprocs() - 1;
    match name.as_str() {
        "ok" => {
            // Two runs in one process, then a clean exit (MPI finalised at exit).
            for _ in 0..2 {
                let mine = rt
                    .run(|ctx| {
                        let p = ctx.nprocs();
                        let a = ctx.coarray::<u64>(p);
                        for t in 0..p {
                            ctx.put(t, &a, ctx.pid(), &[ctx.pid() as u64]);
                        }
                        ctx.sync();
                        ctx.local(&a).iter().sum::<u64>()
                    })
                    .unwrap();
                let p = rt.nprocs() as u64;
                assert_eq!(*mine.local(), p * (p - 1) / 2);
            }
            println!("scenario ok done");
        }
        "panic" => {
            rt.run(|ctx| {
                ctx.sync();
                if ctx.pid() == last {
                    panic!("boom on the last rank");
                }
                ctx.sync();
                ctx.sync();
            })
            .unwrap();
        }
        "collective-length" => {
            rt.run(|ctx| {
                let len = if ctx.pid() == last { 5 } else { 6 };
                bsp::algos::variants::reduce_direct(ctx, 0, &vec![1u64; len], &bsp::algos::Sum);
            })
            .unwrap();
        }
        // The uniform all-to-all (the default, whichever variant it picks)
        // with p blocks of 4 on the last rank and of 3 elsewhere.
        "all-to-all-length" => {
            rt.run(|ctx| {
                let b = if ctx.pid() == last { 4 } else { 3 };
                bsp::algos::all_to_all_uniform(ctx, &vec![1u32; b * ctx.nprocs()]);
            })
            .unwrap();
        }
        // The default broadcast with an empty buffer on the last rank.
        "broadcast-empty" => {
            rt.run(|ctx| {
                let len = if ctx.pid() == last { 0 } else { 6 };
                bsp::algos::broadcast(ctx, 0, &mut vec![7u64; len]);
            })
            .unwrap();
        }
        // replace_local of a coarray that a put_from of the superstep reads.
        "replace-lent" => {
            rt.run(|ctx| {
                let a = ctx.coarray_from(vec![1u32; 64]);
                let b = ctx.coarray::<u32>(64);
                ctx.sync();
                ctx.put_from((ctx.pid() + 1) % ctx.nprocs(), &b, 0, &a, ..64);
                if ctx.pid() == last {
                    ctx.replace_local(&a, Vec::new());
                }
                ctx.sync();
            })
            .unwrap();
        }
        "early-return" => {
            rt.run(|ctx| {
                ctx.sync();
                if ctx.pid() == last {
                    return;
                }
                ctx.sync();
                ctx.sync();
            })
            .unwrap();
        }
        "registration" => {
            rt.run(|ctx| {
                if ctx.pid() == last {
                    let _ = ctx.coarray::<u32>(4);
                } else {
                    let _ = ctx.coarray::<u64>(4);
                }
                ctx.sync();
            })
            .unwrap();
        }
        "out-of-bounds" => {
            rt.run(|ctx| {
                let a = ctx.coarray::<u8>(2);
                if ctx.pid() == 0 {
                    ctx.put(last, &a, 1, &[1, 2, 3]);
                }
                ctx.sync();
            })
            .unwrap();
        }
        "exit" => {
            rt.run(|ctx| {
                for s in 0..10 {
                    if ctx.pid() == ctx.nprocs() - 1 && s == 2 {
                        std::process::exit(3);
                    }
                    ctx.sync();
                }
            })
            .unwrap();
        }
        // A handle of the parent used inside a sub-machine (issue: it wrote
        // into the sub-machine's coarray of the same index).
        "foreign-handle" => {
            rt.run(|ctx| {
                let parent = ctx.coarray::<u8>(4);
                ctx.sync();
                ctx.split(0, 0, |sub| {
                    let _own = sub.coarray::<u8>(4);
                    if sub.pid() == sub.nprocs() - 1 {
                        sub.put(0, &parent, 0, &[1]);
                    }
                    sub.sync();
                });
            })
            .unwrap();
        }
        // A handle of an earlier run used in the next one.
        "earlier-run-handle" => {
            let earlier = *rt.run(|ctx| ctx.coarray::<u32>(4)).unwrap().local();
            rt.run(move |ctx| {
                let _b = ctx.coarray::<u32>(4);
                if ctx.pid() == 0 {
                    ctx.put(last, &earlier, 0, &[7]);
                }
                ctx.sync();
            })
            .unwrap();
        }
        // Two threads per rank start different runs at once, in opposite
        // orders on even and odd ranks: every run must fail (or be right),
        // never pair with another rank's other run.
        "concurrent" => {
            let runs = |first: bool| {
                let rt = rt.clone();
                move || {
                    let rank =
                        std::env::var("OMPI_COMM_WORLD_RANK").map_or(0, |r| r.parse().unwrap_or(0));
                    let odd = rank % 2 == 1;
                    if first == odd {
                        std::thread::sleep(Duration::from_millis(300));
                    }
                    let (name, outcome) = if first {
                        ("A", rt.run(|ctx| sum_of_pids(ctx, 1)))
                    } else {
                        ("B", rt.run(|ctx| sum_of_pids(ctx, 100)))
                    };
                    let want = if first { 1 } else { 100 } * sum_below(rt.nprocs());
                    match outcome {
                        Ok(got) if *got.local() == want => println!("concurrent {name}: right"),
                        Ok(got) => println!("concurrent {name}: WRONG {}", got.local()),
                        Err(e) => println!("concurrent {name}: refused: {e}"),
                    }
                }
            };
            let a = std::thread::spawn(runs(true));
            let b = std::thread::spawn(runs(false));
            a.join().unwrap();
            b.join().unwrap();
            // A run started from another thread while this one is in its
            // closure is refused at once.
            rt.run(|ctx| {
                let other = Runtime::mpi();
                let refused = std::thread::spawn(move || other.run(|c| c.pid()).unwrap_err());
                println!("concurrent C: refused: {}", refused.join().unwrap());
                ctx.sync();
            })
            .unwrap();
            println!("scenario concurrent done");
        }
        "nested" => {
            rt.run(|ctx| {
                let inner = Runtime::mpi().run(|c| c.pid());
                println!("nested: {}", inner.unwrap_err());
                ctx.sync();
            })
            .unwrap();
            println!("scenario nested done");
        }
        "stuck" => {
            rt.run(|ctx| {
                ctx.sync();
                if ctx.pid() == last {
                    loop {
                        std::thread::sleep(Duration::from_secs(1));
                    }
                }
                ctx.sync();
            })
            .unwrap();
        }
        "oversized-get" => {
            rt.run(|ctx| {
                let a = ctx.coarray::<u32>(4);
                if ctx.pid() == 0 {
                    let _ = ctx.get(last, &a, 0, 1 << 36);
                }
                ctx.sync();
            })
            .unwrap();
        }
        "abort" => {
            rt.run(|ctx| {
                ctx.sync();
                if ctx.pid() == 0 {
                    ctx.abort("stop here");
                }
                ctx.sync();
            })
            .unwrap();
        }
        "split-mismatch" => {
            rt.run(|ctx| {
                ctx.sync();
                if ctx.pid() == last {
                    ctx.sync();
                } else {
                    ctx.split(0, 0, |sub| sub.sync());
                }
                ctx.sync();
            })
            .unwrap();
        }
        "sub-early-return" => {
            rt.run(|ctx| {
                ctx.sync();
                let me = ctx.pid();
                ctx.split(0, 0, |sub| {
                    if me != last {
                        sub.sync();
                    }
                });
            })
            .unwrap();
        }
        "sub-stuck" => {
            rt.run(|ctx| {
                let me = ctx.pid();
                ctx.split(0, 0, |sub| {
                    sub.sync();
                    if me == last {
                        loop {
                            std::thread::sleep(Duration::from_secs(1));
                        }
                    }
                    sub.sync();
                });
            })
            .unwrap();
        }
        // Also under BSP_ON_FAILURE=return: a failure in a sub-machine
        // ends the job.
        "sub-panic" => {
            let outcome = rt.run(|ctx| {
                ctx.sync();
                let me = ctx.pid();
                ctx.split(me % 2, 0, |sub| {
                    sub.sync();
                    if me == last {
                        panic!("boom in a sub-machine");
                    }
                    sub.sync();
                });
                ctx.sync();
            });
            println!("returned: {outcome:?}");
        }
        // Under BSP_ON_FAILURE=return: every rank gets the error and exits 7.
        "return-panic" | "return-out-of-bounds" | "return-stuck" => {
            let outcome = rt.run(|ctx| {
                let a = ctx.coarray::<u8>(2);
                ctx.sync();
                match name.as_str() {
                    "return-panic" if ctx.pid() == last => panic!("boom on the last rank"),
                    "return-out-of-bounds" if ctx.pid() == 0 => ctx.put(last, &a, 1, &[1, 2, 3]),
                    "return-stuck" if ctx.pid() == last => loop {
                        std::thread::sleep(Duration::from_secs(1));
                    },
                    _ => {}
                }
                ctx.sync();
                ctx.sync();
            });
            let err = outcome.expect_err("the run fails");
            println!("returned: {err}");
            std::process::exit(7);
        }
        other => panic!("unknown scenario {other:?}"),
    }
}

/// Every processor puts `scale · pid` to every other; returns the sum it
/// received. Sleeps first, so that a run started on another thread meets
/// this one in progress.
fn sum_of_pids(ctx: &mut bsp::Ctx, scale: u64) -> u64 {
    std::thread::sleep(Duration::from_millis(600));
    let p = ctx.nprocs();
    let a = ctx.coarray::<u64>(p);
    for t in 0..p {
        ctx.put(t, &a, ctx.pid(), &[scale * ctx.pid() as u64]);
    }
    ctx.sync();
    ctx.local(&a).iter().sum()
}

/// 0 + 1 + ... + (p − 1).
fn sum_below(p: usize) -> u64 {
    (p * p.saturating_sub(1) / 2) as u64
}

/// Runs `name` on `np` ranks; `None` when MPI tests are skipped.
fn job(name: &str, np: usize) -> Option<support::MpiRun> {
    job_with(name, np, &[])
}

/// Runs `name` on `np` ranks with extra environment variables.
fn job_with(name: &str, np: usize, env: &[(&str, &str)]) -> Option<support::MpiRun> {
    let exe = std::env::current_exe().expect("test binary path");
    let mut all = vec![(SCENARIO_ENV, name)];
    all.extend_from_slice(env);
    support::mpirun(
        np,
        &exe,
        &["--exact", "scenario", "--nocapture", "--test-threads=1"],
        &all,
        LIMIT,
    )
}

/// Asserts that the job failed promptly, and returns the `bsp:` lines.
fn assert_failed(name: &str, np: usize, run: &support::MpiRun) -> Vec<String> {
    let status = run.status.unwrap_or_else(|| {
        panic!(
            "scenario {name} on {np} ranks hung (killed after {LIMIT:?})\nstderr:\n{}",
            run.stderr
        )
    });
    assert!(
        !status.success(),
        "scenario {name} on {np} ranks exited 0\nstderr:\n{}",
        run.stderr
    );
    assert!(
        run.elapsed < Duration::from_secs(30),
        "scenario {name} took {:?}",
        run.elapsed
    );
    run.stderr
        .lines()
        .filter(|l| l.starts_with("bsp: "))
        .map(str::to_owned)
        .collect()
}

#[test]
fn clean_runs_exit_zero() {
    for np in [1, 2, 3] {
        let Some(run) = job("ok", np) else { return };
        assert_eq!(
            run.status.map(|s| s.success()),
            Some(true),
            "np = {np}\nstdout:\n{}\nstderr:\n{}",
            run.stdout,
            run.stderr
        );
        assert_eq!(run.stdout.matches("scenario ok done").count(), np);
        assert!(
            !run.stderr.contains("exiting improperly"),
            "MPI was not finalised:\n{}",
            run.stderr
        );
    }
}

#[test]
fn a_panic_on_one_rank_ends_the_job() {
    for np in [2, 3] {
        let Some(run) = job("panic", np) else { return };
        let lines = assert_failed("panic", np, &run);
        let want = format!(
            "bsp: processor {}, superstep 1: panicked: boom on the last rank",
            np - 1
        );
        assert!(
            lines.iter().any(|l| l.starts_with(&want)),
            "np = {np}: no {want:?} in\n{}",
            run.stderr
        );
    }
}

/// Runs scenario `name` on 2 and 3 ranks and checks that it fails with a
/// line starting with `want(np)` on every rank.
fn assert_reported_on_every_rank(name: &str, want: impl Fn(usize) -> String) {
    for np in [2, 3] {
        let Some(run) = job(name, np) else {
            return;
        };
        let lines = assert_failed(name, np, &run);
        let want = want(np);
        let n = lines.iter().filter(|l| l.starts_with(&want)).count();
        assert_eq!(
            n, np,
            "np = {np}: want {np} lines starting {want:?} in\n{}",
            run.stderr
        );
    }
}

#[test]
fn an_early_return_is_reported_on_every_rank() {
    assert_reported_on_every_rank("early-return", |np| {
        format!(
            "bsp: processor {}, superstep 1: superstep mismatch: processor {} returned from its closure after 1 syncs",
            np - 1,
            np - 1
        )
    });
}

#[test]
fn a_registration_mismatch_is_reported_on_every_rank() {
    assert_reported_on_every_rank("registration", |np| {
        format!(
            "bsp: processor {}, superstep 0: registration mismatch: processors {} and 0 have each registered 1",
            np - 1,
            np - 1
        )
    });
}

#[test]
fn an_out_of_bounds_put_ends_the_job() {
    let np = 2;
    let Some(run) = job("out-of-bounds", np) else {
        return;
    };
    let lines = assert_failed("out-of-bounds", np, &run);
    assert!(
        lines.iter().any(|l| l.starts_with(
            "bsp: processor 0, superstep 0: out of bounds: put from processor 0 to processor 1"
        )),
        "no out-of-bounds line in\n{}",
        run.stderr
    );
}

#[test]
fn a_reduce_over_vectors_of_different_lengths_ends_the_job() {
    for np in [2, 3] {
        let Some(run) = job("collective-length", np) else {
            return;
        };
        let lines = assert_failed("collective-length", np, &run);
        let want = format!(
            "bsp: processor 0, superstep 1: panicked: bsp-algos: reduce: every processor must \
             pass the same length, but processor {} passed 5 and processor 0 6",
            np - 1
        );
        assert!(
            lines.iter().any(|l| l.starts_with(&want)),
            "np = {np}: no {want:?} in\n{}",
            run.stderr
        );
    }
}

#[test]
fn a_rank_that_exits_mid_run_ends_the_job() {
    for np in [2, 3] {
        let Some(run) = job("exit", np) else { return };
        let lines = assert_failed("exit", np, &run);
        let want = format!(
            "bsp: processor {}, superstep 2: exited during a run (status 3); ending the whole \
             job with status 3",
            np - 1
        );
        assert!(
            lines.iter().any(|l| l.starts_with(&want)),
            "np = {np}: no {want:?} in\n{}",
            run.stderr
        );
        // The job ends with the status the rank gave exit.
        assert_eq!(
            run.status.and_then(|s| s.code()),
            Some(3),
            "np = {np}\n{}",
            run.stderr
        );
    }
}

#[test]
fn a_nested_mpi_run_is_refused_on_every_rank() {
    let np = 2;
    let Some(run) = job("nested", np) else { return };
    assert_eq!(
        run.status.map(|s| s.success()),
        Some(true),
        "stderr:\n{}",
        run.stderr
    );
    let want =
        "nested: configuration error: an MPI run cannot start inside another MPI run's closure";
    assert_eq!(
        run.stdout.matches(want).count(),
        np,
        "stdout:\n{}",
        run.stdout
    );
    assert_eq!(run.stdout.matches("scenario nested done").count(), np);
}

#[test]
fn a_rank_stuck_in_its_own_code_is_named_at_the_time_limit() {
    for np in [2, 3] {
        let Some(run) = job_with("stuck", np, &[("BSP_SYNC_TIMEOUT", "0.5")]) else {
            return;
        };
        let lines = assert_failed("stuck", np, &run);
        let want = format!("bsp: processor {}, superstep 1: sync timeout", np - 1);
        let named = format!("processor {} has not arrived", np - 1);
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with(&want) && l.contains(&named)),
            "np = {np}: no {want:?} in\n{}",
            run.stderr
        );
    }
}

#[test]
fn an_oversized_get_is_out_of_bounds_not_an_allocation_failure() {
    let Some(run) = job("oversized-get", 2) else {
        return;
    };
    let lines = assert_failed("oversized-get", 2, &run);
    assert!(
        lines
            .iter()
            .any(|l| l
                .starts_with("bsp: processor 0, superstep 0: out of bounds: get by processor 0")),
        "stderr:\n{}",
        run.stderr
    );
}

#[test]
fn abort_ends_the_job_with_its_message() {
    let Some(run) = job("abort", 2) else { return };
    let lines = assert_failed("abort", 2, &run);
    assert!(
        lines
            .iter()
            .any(|l| l == "bsp: processor 0, superstep 1: aborted: stop here"),
        "stderr:\n{}",
        run.stderr
    );
}

#[test]
fn a_split_meeting_a_sync_is_reported_on_every_rank() {
    // Two ranks: one splits, one syncs (the splitter is blamed on a tie);
    // three: the one that syncs.
    assert_reported_on_every_rank("split-mismatch", |np| {
        format!(
            "bsp: processor {}, superstep 1: superstep mismatch: processor 0 called split",
            if np == 2 { 0 } else { np - 1 }
        )
    });
}

#[test]
fn an_early_return_from_a_sub_machine_is_reported_on_every_rank() {
    assert_reported_on_every_rank("sub-early-return", |np| {
        format!(
            "bsp: processor {}, superstep 1: superstep mismatch: processor {} returned from its closure after 0 syncs",
            np - 1,
            np - 1
        )
    });
}

#[test]
fn a_rank_stuck_in_a_sub_machine_is_named_at_the_time_limit() {
    for np in [2, 3] {
        let Some(run) = job_with("sub-stuck", np, &[("BSP_SYNC_TIMEOUT", "0.5")]) else {
            return;
        };
        let lines = assert_failed("sub-stuck", np, &run);
        let last = np - 1;
        let want = format!("bsp: processor {last}, superstep 0: sync timeout");
        let named = format!("processor {last} has not arrived");
        let place = format!("[in the sub-machine of color 0 ({np} processors): its processor {last}, at its superstep 1]");
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with(&want) && l.contains(&named) && l.contains(&place)),
            "np = {np}: no {want:?} with {place:?} in\n{}",
            run.stderr
        );
    }
}

#[test]
fn a_panic_in_a_sub_machine_ends_the_job_in_either_failure_mode() {
    for mode in ["abort", "return"] {
        for np in [2, 3] {
            let Some(run) = job_with("sub-panic", np, &[("BSP_ON_FAILURE", mode)]) else {
                return;
            };
            let lines = assert_failed("sub-panic", np, &run);
            let last = np - 1;
            let want =
                format!("bsp: processor {last}, superstep 1: panicked: boom in a sub-machine");
            let place = format!(
                "[in the sub-machine of color {} ({} processors): its processor {}, at its superstep 1]",
                last % 2,
                (np - last % 2).div_ceil(2),
                last / 2
            );
            assert!(
                lines
                    .iter()
                    .any(|l| l.starts_with(&want) && l.contains(&place)),
                "{mode}, np = {np}: no {want:?} with {place:?} in\n{}",
                run.stderr
            );
            assert!(!run.stdout.contains("returned:"), "{}", run.stdout);
        }
    }
}

/// Runs `name` under `BSP_ON_FAILURE=return` (and `env`) and checks that
/// the ranks in `ranks_reporting` each printed `returned: <want>` and the
/// job ended with the program's own status 7 (or, after a timeout, with
/// the exit hook's abort).
fn assert_returned(name: &str, np: usize, env: &[(&str, &str)], reporting: usize, want: &str) {
    let mut all = vec![("BSP_ON_FAILURE", "return")];
    all.extend_from_slice(env);
    let Some(run) = job_with(name, np, &all) else {
        return;
    };
    let status = run
        .status
        .unwrap_or_else(|| panic!("{name} hung\nstderr:\n{}", run.stderr));
    assert!(!status.success(), "{name} exited 0");
    let want = format!("returned: {want}");
    assert_eq!(
        run.stdout.matches(&want).count(),
        reporting,
        "np = {np}: want {reporting} lines starting {want:?}\nstdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
}

#[test]
fn in_return_mode_every_rank_returns_the_same_error() {
    for np in [2, 3] {
        let last = np - 1;
        assert_returned(
            "return-panic",
            np,
            &[],
            np,
            &format!("processor {last}, superstep 1: panicked: boom on the last rank"),
        );
        assert_returned(
            "return-out-of-bounds",
            np,
            &[],
            np,
            &format!(
                "processor 0, superstep 1: out of bounds: put from processor 0 to processor {last}"
            ),
        );
    }
}

#[test]
fn in_return_mode_the_waiting_ranks_return_a_timeout() {
    let np = 3;
    assert_returned(
        "return-stuck",
        np,
        &[("BSP_SYNC_TIMEOUT", "0.5")],
        np - 1,
        "processor 2, superstep 1: sync timeout",
    );
}

#[test]
fn a_handle_used_on_another_machine_ends_the_job() {
    for (name, np, rank, superstep, what) in [
        ("foreign-handle", 2, 1, 1, "coarray #0"),
        ("foreign-handle", 3, 2, 1, "coarray #0"),
        ("earlier-run-handle", 2, 0, 0, "coarray #0"),
    ] {
        let Some(run) = job(name, np) else { return };
        let lines = assert_failed(name, np, &run);
        let want = format!(
            "bsp: processor {rank}, superstep {superstep}: registration mismatch: {what} was \
             registered by another machine"
        );
        assert!(
            lines.iter().any(|l| l.starts_with(&want)),
            "{name}, np = {np}: no {want:?} in\n{}",
            run.stderr
        );
    }
}

#[test]
fn concurrent_runs_are_refused_never_paired() {
    let np = 2;
    let Some(run) = job("concurrent", np) else {
        return;
    };
    assert_eq!(
        run.status.map(|s| s.success()),
        Some(true),
        "stdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
    assert!(!run.stdout.contains("WRONG"), "stdout:\n{}", run.stdout);
    let refused = run.stdout.matches("refused: configuration error").count();
    assert_eq!(refused, 3 * np, "every run fails cleanly:\n{}", run.stdout);
    assert!(
        run.stdout
            .contains("another MPI run (or session) is in progress on this rank")
            && run.stdout.contains("the ranks start different runs"),
        "stdout:\n{}",
        run.stdout
    );
    assert_eq!(run.stdout.matches("scenario concurrent done").count(), np);
}

#[test]
fn collectives_of_unequal_lengths_end_the_job() {
    for (name, np) in [
        ("all-to-all-length", 2),
        ("all-to-all-length", 3),
        ("broadcast-empty", 2),
        ("broadcast-empty", 4),
    ] {
        let Some(run) = job(name, np) else { return };
        let lines = assert_failed(name, np, &run);
        assert!(
            lines.iter().any(|l| l.contains("out of bounds")
                || l.contains("every processor must pass the same length, but processor")),
            "{name}, np = {np}: no lengths' error in\n{}",
            run.stderr
        );
    }
}

#[test]
fn replacing_a_coarray_that_a_put_from_reads_ends_the_job() {
    for np in [2, 3] {
        let Some(run) = job("replace-lent", np) else {
            return;
        };
        let lines = assert_failed("replace-lent", np, &run);
        let want = format!(
            "bsp: processor {}, superstep 1: undelivered communication: replace_local of coarray #0 \
             while a put_from",
            np - 1
        );
        assert!(
            lines.iter().any(|l| l.starts_with(&want)),
            "np = {np}: no {want:?} in\n{}",
            run.stderr
        );
    }
}
