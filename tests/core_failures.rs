//! Failure behaviour on the threads transport: every misuse ends the run
//! with a clear error naming processor and superstep; nothing hangs. Each
//! body runs under a watchdog, so a regression that hangs fails instead of
//! stalling CI. (Under MPI a failure ends the whole job; `mpi_failures.rs`
//! runs the same cases as `mpirun` jobs.)

mod support;

use bsp::{ErrorKind, Router, Runtime};
use support::watchdog;

fn on_both_routers(p: usize, check: impl Fn(&Runtime) + Send + Sync + 'static) {
    watchdog(60, move || {
        for router in [Router::TwoPhase, Router::Direct] {
            check(&Runtime::threads(p).with_router(router));
        }
    });
}

#[test]
fn a_panic_releases_everyone_and_names_pid_superstep_and_message() {
    on_both_routers(4, |rt| {
        let err = rt
            .run(|ctx| {
                ctx.sync();
                ctx.sync();
                if ctx.pid() == 2 {
                    panic!("processor two gives up");
                }
                // The others wait in sync forever unless released.
                for _ in 0..10 {
                    ctx.sync();
                }
            })
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Panic);
        assert_eq!((err.pid(), err.superstep()), (Some(2), Some(2)));
        assert!(err.to_string().contains("processor two gives up"), "{err}");
        assert!(
            err.to_string().contains("processor 2, superstep 2"),
            "{err}"
        );
    });
}

#[test]
fn a_panic_while_others_are_still_computing() {
    on_both_routers(3, |rt| {
        let err = rt
            .run(|ctx| {
                if ctx.pid() == 0 {
                    panic!("early");
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
                ctx.sync();
            })
            .unwrap_err();
        assert_eq!((err.kind(), err.pid()), (ErrorKind::Panic, Some(0)));
    });
}

#[test]
fn returning_while_others_sync_names_both_superstep_counts() {
    on_both_routers(3, |rt| {
        let err = rt
            .run(|ctx| {
                ctx.sync();
                if ctx.pid() != 1 {
                    ctx.sync();
                }
            })
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::SyncMismatch);
        assert_eq!((err.pid(), err.superstep()), (Some(1), Some(1)));
        let text = err.to_string();
        assert!(
            text.contains("processor 1 returned from its closure after 1 syncs"),
            "{text}"
        );
        assert!(
            text.contains("processor 0 called sync for the 2nd time"),
            "{text}"
        );
    });
}

#[test]
fn registration_count_mismatch() {
    on_both_routers(2, |rt| {
        let err = rt
            .run(|ctx| {
                let _a = ctx.coarray::<u32>(4);
                if ctx.pid() == 1 {
                    let _b = ctx.coarray::<u32>(4);
                }
                ctx.sync();
            })
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::RegistrationMismatch);
        assert_eq!((err.pid(), err.superstep()), (Some(1), Some(0)));
        assert!(
            err.to_string().contains("processor 1 has registered 2"),
            "{err}"
        );
    });
}

#[test]
fn registration_type_mismatch() {
    on_both_routers(3, |rt| {
        let err = rt
            .run(|ctx| {
                if ctx.pid() == 2 {
                    let _a = ctx.coarray::<u64>(4);
                } else {
                    let _a = ctx.coarray::<u32>(4);
                }
                ctx.sync();
            })
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::RegistrationMismatch);
        assert_eq!(err.pid(), Some(2));
        assert!(
            err.to_string().contains("different kinds or element types"),
            "{err}"
        );
    });
}

#[test]
fn a_bad_pid_is_caught_at_the_call() {
    on_both_routers(2, |rt| {
        for op in 0..3 {
            let err = rt
                .run(|ctx| {
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
                })
                .unwrap_err();
            assert_eq!(err.kind(), ErrorKind::BadPid);
            assert_eq!((err.pid(), err.superstep()), (Some(1), Some(1)));
            assert!(err.to_string().contains("only 2 processors"), "{err}");
        }
    });
}

#[test]
fn out_of_bounds_put_names_source_destination_and_superstep() {
    on_both_routers(3, |rt| {
        let err = rt
            .run(|ctx| {
                // Local lengths differ: 0 → 1, 1 → 2, 2 → 3.
                let a = ctx.coarray::<u32>(ctx.pid() + 1);
                ctx.sync();
                if ctx.pid() == 2 {
                    ctx.put(0, &a, 1, &[5]); // processor 0 has one element
                }
                ctx.sync();
            })
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::OutOfBounds);
        assert_eq!((err.pid(), err.superstep()), (Some(2), Some(1)));
        let text = err.to_string();
        assert!(
            text.contains("put from processor 2 to processor 0 of elements 1..2"),
            "{text}"
        );
        assert!(text.contains("local length 1 on processor 0"), "{text}");
    });
}

#[test]
fn out_of_bounds_get_names_requester_and_source() {
    on_both_routers(2, |rt| {
        let err = rt
            .run(|ctx| {
                let a = ctx.coarray::<u16>(4);
                if ctx.pid() == 0 {
                    drop(ctx.get(1, &a, 3, 2));
                }
                ctx.sync();
            })
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::OutOfBounds);
        assert_eq!((err.pid(), err.superstep()), (Some(0), Some(0)));
        assert!(
            err.to_string()
                .contains("get by processor 0 from processor 1 of elements 3..5"),
            "{err}"
        );
    });
}

#[test]
fn returning_with_undelivered_communication_is_an_error() {
    on_both_routers(2, |rt| {
        let err = rt
            .run(|ctx| {
                let q = ctx.queue::<u8>();
                ctx.send(0, &q, &1);
            })
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::PendingCommunication);
        assert!(
            err.to_string().contains("call sync before returning"),
            "{err}"
        );
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
    on_both_routers(2, |rt| {
        let err = rt
            .run(|ctx| {
                let a = ctx.coarray::<u32>(4);
                ctx.sync();
                if ctx.pid() == 0 {
                    ctx.put(1, &a, 0, &[1]);
                }
                drop(ctx.release(a));
                ctx.sync();
            })
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Released);
        assert_eq!((err.pid(), err.superstep()), (Some(0), Some(1)));
        assert!(
            err.to_string()
                .contains("put from processor 0 to processor 1"),
            "{err}"
        );
    });
}

#[test]
fn releases_are_collective() {
    on_both_routers(3, |rt| {
        let err = rt
            .run(|ctx| {
                let a = ctx.coarray::<u32>(4);
                if ctx.pid() != 1 {
                    drop(ctx.release(a));
                }
                ctx.sync();
            })
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::RegistrationMismatch);
        assert_eq!(err.pid(), Some(1));
    });
}

#[test]
fn messages_to_a_queue_released_in_the_same_superstep() {
    on_both_routers(2, |rt| {
        let err = rt
            .run(|ctx| {
                let q = ctx.queue::<u8>();
                ctx.sync();
                if ctx.pid() == 1 {
                    ctx.send(0, &q, &7);
                }
                ctx.release_queue(q);
                ctx.sync();
            })
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Released);
        assert_eq!((err.pid(), err.superstep()), (Some(1), Some(1)));
    });
}
