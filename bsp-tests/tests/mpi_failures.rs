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
    let rt = Runtime::mpi();
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
        other => panic!("unknown scenario {other:?}"),
    }
}

/// Runs `name` on `np` ranks; `None` when MPI tests are skipped.
fn job(name: &str, np: usize) -> Option<support::MpiRun> {
    let exe = std::env::current_exe().expect("test binary path");
    support::mpirun(
        np,
        &exe,
        &["--exact", "scenario", "--nocapture", "--test-threads=1"],
        &[(SCENARIO_ENV, name)],
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
            lines.contains(&want),
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
