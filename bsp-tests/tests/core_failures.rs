//! Failure behaviour on the threads transport: every misuse ends the run
//! with a clear error naming processor and superstep; nothing hangs. Each
//! body runs under a watchdog, so a regression that hangs fails instead of
//! stalling CI. (Under MPI a failure ends the whole job; `mpi_failures.rs`
//! runs the same cases as `mpirun` jobs.)

mod support;

use bsp::{Ctx, ErrorKind, Router, Runtime};
use support::watchdog;

/// What a failed run must report: its kind, the processor and superstep
/// it names (where set), and text its message contains.
#[derive(Clone, Copy)]
struct Failure {
    kind: ErrorKind,
    pid: Option<usize>,
    superstep: Option<usize>,
    says: &'static [&'static str],
}

impl Failure {
    /// An error of `kind`; nothing else checked.
    fn of(kind: ErrorKind) -> Self {
        Failure {
            kind,
            pid: None,
            superstep: None,
            says: &[],
        }
    }

    /// An error of `kind` naming processor `pid` and superstep `superstep`.
    fn at(kind: ErrorKind, pid: usize, superstep: usize) -> Self {
        Failure {
            pid: Some(pid),
            superstep: Some(superstep),
            ..Failure::of(kind)
        }
    }

    /// Naming processor `pid`.
    fn pid(self, pid: usize) -> Self {
        Failure {
            pid: Some(pid),
            ..self
        }
    }

    /// With every string of `says` in the message.
    fn says(self, says: &'static [&'static str]) -> Self {
        Failure { says, ..self }
    }
}

/// Runs `program` on `p` threads with each router, under a watchdog, and
/// checks that the run fails as `want` says.
fn fails(p: usize, want: Failure, program: impl Fn(&mut Ctx) + Send + Sync + 'static) {
    watchdog(60, move || {
        for router in [Router::TwoPhase, Router::Direct] {
            let err = Runtime::threads(p)
                .with_router(router)
                .run(&program)
                .expect_err("the run must fail");
            let text = format!("router {router}: {err}");
            assert_eq!(err.kind(), want.kind, "{text}");
            if want.pid.is_some() {
                assert_eq!(err.pid(), want.pid, "{text}");
            }
            if want.superstep.is_some() {
                assert_eq!(err.superstep(), want.superstep, "{text}");
            }
            for needle in want.says {
                assert!(err.to_string().contains(needle), "{text}");
            }
        }
    });
}

#[test]
fn a_panic_releases_everyone_and_names_pid_superstep_and_message() {
    let want = Failure::at(ErrorKind::Panic, 2, 2)
        .says(&["processor two gives up", "processor 2, superstep 2"]);
    fails(4, want, |ctx| {
        ctx.sync();
        ctx.sync();
        if ctx.pid() == 2 {
            panic!("processor two gives up");
        }
        // The others wait in sync forever unless released.
        for _ in 0..10 {
            ctx.sync();
        }
    });
}

#[test]
fn a_panic_while_others_are_still_computing() {
    let want = Failure::of(ErrorKind::Panic).pid(0);
    fails(3, want, |ctx| {
        if ctx.pid() == 0 {
            panic!("early");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        ctx.sync();
    });
}

#[test]
fn returning_while_others_sync_names_both_superstep_counts() {
    let want = Failure::at(ErrorKind::SyncMismatch, 1, 1).says(&[
        "processor 1 returned from its closure after 1 syncs",
        "processor 0 called sync for the 2nd time",
    ]);
    fails(3, want, |ctx| {
        ctx.sync();
        if ctx.pid() != 1 {
            ctx.sync();
        }
    });
}

#[test]
fn registration_count_mismatch() {
    let want =
        Failure::at(ErrorKind::RegistrationMismatch, 1, 0).says(&["processor 1 has registered 2"]);
    fails(2, want, |ctx| {
        let _a = ctx.coarray::<u32>(4);
        if ctx.pid() == 1 {
            let _b = ctx.coarray::<u32>(4);
        }
        ctx.sync();
    });
}

#[test]
fn registration_type_mismatch() {
    let want = Failure::of(ErrorKind::RegistrationMismatch)
        .pid(2)
        .says(&["different kinds or element types"]);
    fails(3, want, |ctx| {
        if ctx.pid() == 2 {
            let _a = ctx.coarray::<u64>(4);
        } else {
            let _a = ctx.coarray::<u32>(4);
        }
        ctx.sync();
    });
}

#[test]
fn a_bad_pid_is_caught_at_the_call() {
    let want = Failure::at(ErrorKind::BadPid, 1, 1).says(&["only 2 processors"]);
    for op in 0..3 {
        fails(2, want, move |ctx| {
            let a = ctx.coarray::<u8>(1);
            let q = ctx.queue::<u8>();
            ctx.sync();
            if ctx.pid() == 1 {
                match op {
                    0 => ctx.put(2, &a, 0, &[1]),
                    1 => drop(ctx.get(5, &a, 0, 1)),
                    _ => ctx.send(9, &q, &1),
                }
            }
            ctx.sync();
        });
    }
}

#[test]
fn out_of_bounds_put_names_source_destination_and_superstep() {
    let want = Failure::at(ErrorKind::OutOfBounds, 2, 1).says(&[
        "put from processor 2 to processor 0 of elements 1..2",
        "local length 1 on processor 0",
    ]);
    fails(3, want, |ctx| {
        // Local lengths differ: 0 → 1, 1 → 2, 2 → 3.
        let a = ctx.coarray::<u32>(ctx.pid() + 1);
        ctx.sync();
        if ctx.pid() == 2 {
            ctx.put(0, &a, 1, &[5]); // processor 0 has one element
        }
        ctx.sync();
    });
}

#[test]
fn out_of_bounds_get_names_requester_and_source() {
    let want = Failure::at(ErrorKind::OutOfBounds, 0, 0)
        .says(&["get by processor 0 from processor 1 of elements 3..5"]);
    fails(2, want, |ctx| {
        let a = ctx.coarray::<u16>(4);
        if ctx.pid() == 0 {
            drop(ctx.get(1, &a, 3, 2));
        }
        ctx.sync();
    });
}

#[test]
fn returning_with_undelivered_communication_is_an_error() {
    let want = Failure::of(ErrorKind::PendingCommunication).says(&["call sync before returning"]);
    fails(2, want, |ctx| {
        let q = ctx.queue::<u8>();
        ctx.send(0, &q, &1);
    });
}

#[test]
fn zero_processors_is_a_configuration_error() {
    let err = Runtime::threads(0).run(|ctx| ctx.pid()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config);
    assert!(err.to_string().contains("at least one processor"), "{err}");
}

#[test]
fn a_failure_among_many_oversubscribed_processors_does_not_hang() {
    watchdog(120, || {
        let err = Runtime::threads(128)
            .run(|ctx| {
                for step in 0..5 {
                    if ctx.pid() == 77 && step == 3 {
                        panic!("deep failure");
                    }
                    ctx.sync();
                }
            })
            .unwrap_err();
        assert_eq!(
            (err.kind(), err.pid(), err.superstep()),
            (ErrorKind::Panic, Some(77), Some(3))
        );
    });
}

#[test]
fn a_put_to_a_coarray_released_in_the_same_superstep() {
    let want =
        Failure::at(ErrorKind::Released, 0, 1).says(&["put from processor 0 to processor 1"]);
    fails(2, want, |ctx| {
        let a = ctx.coarray::<u32>(4);
        ctx.sync();
        if ctx.pid() == 0 {
            ctx.put(1, &a, 0, &[1]);
        }
        drop(ctx.release(a));
        ctx.sync();
    });
}

#[test]
fn releases_are_collective() {
    let want = Failure::of(ErrorKind::RegistrationMismatch).pid(1);
    fails(3, want, |ctx| {
        let a = ctx.coarray::<u32>(4);
        if ctx.pid() != 1 {
            drop(ctx.release(a));
        }
        ctx.sync();
    });
}

#[test]
fn messages_to_a_queue_released_in_the_same_superstep() {
    let want = Failure::at(ErrorKind::Released, 1, 1);
    fails(2, want, |ctx| {
        let q = ctx.queue::<u8>();
        ctx.sync();
        if ctx.pid() == 1 {
            ctx.send(0, &q, &7);
        }
        ctx.release_queue(q);
        ctx.sync();
    });
}
