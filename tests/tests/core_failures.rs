//! Failure behaviour on the threads transport: every misuse ends the run
//! with a clear error naming processor and superstep; nothing hangs. Each
//! body runs under a watchdog, so a regression that hangs fails instead of
//! stalling CI. (Under MPI a failure ends the whole job; `mpi_failures.rs`
//! runs the same cases as `mpirun` jobs.)

mod support;

use bsp::expert::Areas;
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
        for router in [Router::TwoPhase, Router::Direct, Router::Transportation] {
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
fn a_sum_of_votes_past_u64_max_names_the_processor_that_overflows_it() {
    let want = Failure::at(ErrorKind::Panic, 1, 1).says(&["sync_sum", "processor 1's value"]);
    fails(3, want, |ctx| {
        ctx.sync();
        ctx.sync_sum(u64::MAX / 2 + 1);
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

/// A put out of range in the middle of a run of word puts to one coarray
/// (which the receiver reads in place, see `wire.rs`) is reported, not
/// skipped.
#[test]
fn an_out_of_bounds_put_inside_a_run_of_small_puts_is_reported() {
    let want = Failure::at(ErrorKind::OutOfBounds, 1, 0).says(&[
        "put from processor 1 to processor 0 of elements 50..51",
        "local length 50 on processor 0",
    ]);
    fails(2, want, |ctx| {
        let a = ctx.coarray::<u64>(if ctx.pid() == 0 { 50 } else { 100 });
        if ctx.pid() == 1 {
            for i in 0..100u64 {
                ctx.put(0, &a, i as usize, &[i]);
            }
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

/// A run on `p` threads with a sync time limit of `limit_ms`, under a
/// watchdog; returns the error and how long the run took.
fn timed_out(
    p: usize,
    limit_ms: u64,
    program: impl Fn(&mut Ctx) + Send + Sync + 'static,
) -> (bsp::Error, std::time::Duration) {
    watchdog(60, move || {
        let start = std::time::Instant::now();
        let err = Runtime::threads(p)
            .with_sync_timeout(std::time::Duration::from_millis(limit_ms))
            .run(&program)
            .expect_err("the run must time out");
        (err, start.elapsed())
    })
}

#[test]
fn a_late_processor_is_named_when_the_sync_time_limit_passes() {
    let (err, took) = timed_out(4, 200, |ctx| {
        ctx.sync();
        if ctx.pid() == 2 {
            std::thread::sleep(std::time::Duration::from_millis(1500));
        }
        ctx.sync();
    });
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert_eq!((err.pid(), err.superstep()), (Some(2), Some(1)), "{err}");
    let text = err.to_string();
    assert!(text.contains("processor 2 has not arrived"), "{text}");
    assert!(text.contains("sync timeout"), "{text}");
    // The run ends once the late processor reaches bsp and unwinds.
    assert!(took < std::time::Duration::from_secs(10), "{took:?}");
}

#[test]
fn a_time_limit_names_every_missing_processor_and_spares_punctual_runs() {
    let (err, _) = timed_out(5, 150, |ctx| {
        if ctx.pid() % 2 == 1 {
            std::thread::sleep(std::time::Duration::from_millis(900));
        }
        ctx.sync();
    });
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(
        err.message().contains("processors 1, 3 have not arrived"),
        "{err}"
    );
    // A limit well above the time between syncs changes nothing.
    let sums = Runtime::threads(4)
        .with_sync_timeout(std::time::Duration::from_secs(30))
        .run(|ctx| {
            let a = ctx.coarray::<u64>(1);
            for _ in 0..20 {
                ctx.put((ctx.pid() + 1) % ctx.nprocs(), &a, 0, &[1]);
                ctx.sync();
            }
            ctx.local(&a)[0]
        })
        .unwrap();
    assert_eq!(sums.all(), Some(&[1; 4][..]));
}

#[test]
fn abort_ends_the_run_with_its_own_kind() {
    let want = Failure::at(ErrorKind::Abort, 1, 2).says(&["processor 1, superstep 2", "no input"]);
    fails(3, want, |ctx| {
        ctx.sync();
        ctx.sync();
        if ctx.pid() == 1 {
            ctx.abort("no input");
        }
        ctx.sync();
    });
}

#[test]
fn try_run_carries_the_application_error_out() {
    watchdog(60, || {
        #[derive(Debug)]
        struct Bad(u32);
        impl std::fmt::Display for Bad {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "record {} is corrupt", self.0)
            }
        }
        impl std::error::Error for Bad {}
        let err = Runtime::threads(3)
            .try_run(|ctx| {
                ctx.sync();
                if ctx.pid() == 0 {
                    return Err(Bad(17));
                }
                ctx.sync();
                Ok(ctx.pid())
            })
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Application);
        assert_eq!((err.pid(), err.superstep()), (Some(0), Some(1)));
        assert_eq!(err.message(), "record 17 is corrupt");
        let source = std::error::Error::source(&err).expect("the application's error");
        assert_eq!(source.downcast_ref::<Bad>().map(|b| b.0), Some(17));
        let ok = Runtime::threads(3)
            .try_run(|ctx| Ok::<_, std::io::Error>(ctx.pid()))
            .unwrap();
        assert_eq!(ok.all(), Some(&[0, 1, 2][..]));
    });
}

#[test]
fn taking_a_get_before_its_sync_is_its_own_kind() {
    let want = Failure::at(ErrorKind::NotDelivered, 0, 0).says(&["before the sync"]);
    fails(2, want, |ctx| {
        let a = ctx.coarray::<u8>(2);
        let h = ctx.get(1 - ctx.pid(), &a, 0, 2);
        if ctx.pid() == 0 {
            let _ = ctx.take(h);
        }
        ctx.sync();
    });
}

#[test]
fn using_a_released_handle_names_the_superstep_of_its_release() {
    let want = Failure::at(ErrorKind::Released, 1, 2).says(&["released in superstep 1"]);
    fails(2, want, |ctx| {
        let a = ctx.coarray::<u8>(2);
        let copy = a;
        ctx.sync();
        drop(ctx.release(a));
        ctx.sync();
        if ctx.pid() == 1 {
            let _ = ctx.local(&copy);
        }
        ctx.sync();
    });
}

#[test]
fn a_put_to_a_coarray_released_in_an_earlier_superstep() {
    let want = Failure::at(ErrorKind::Released, 0, 2).says(&["released in superstep 0"]);
    fails(2, want, |ctx| {
        let a = ctx.coarray::<u32>(4);
        let copy = a;
        drop(ctx.release(a));
        ctx.sync();
        ctx.sync();
        if ctx.pid() == 0 {
            ctx.put(1, &copy, 0, &[1]);
        }
        ctx.sync();
    });
}

#[test]
fn a_bad_put_from_range_is_out_of_bounds_with_the_true_range() {
    let want = Failure::at(ErrorKind::OutOfBounds, 1, 0).says(&[
        "put_from on processor 1 reads elements 3..=4 of coarray #0",
        "local length is 4",
    ]);
    fails(2, want, |ctx| {
        let src = ctx.coarray::<u8>(4);
        let dst = ctx.coarray::<u8>(4);
        if ctx.pid() == 1 {
            ctx.put_from(0, &dst, 0, &src, 3..=4);
        }
        ctx.sync();
    });
}

#[test]
fn oversized_gets_are_out_of_bounds_and_allocate_nothing() {
    // 2^36 elements of u32 would be 256 GiB if allocated at the call.
    let want = Failure::at(ErrorKind::OutOfBounds, 0, 0).says(&["local length 4"]);
    fails(2, want, |ctx| {
        let a = ctx.coarray::<u32>(4);
        if ctx.pid() == 0 {
            let _ = ctx.get(1, &a, 0, 1 << 36);
        }
        ctx.sync();
    });
    let want = Failure::at(ErrorKind::OutOfBounds, 1, 0).says(&["more bytes than"]);
    fails(2, want, |ctx| {
        let a = ctx.coarray::<u32>(4);
        if ctx.pid() == 1 {
            let _ = ctx.get(0, &a, 0, usize::MAX);
        }
        ctx.sync();
    });
}

#[test]
fn a_coarray_larger_than_memory_is_a_configuration_error() {
    let want = Failure::at(ErrorKind::Config, 1, 0).says(&["cannot allocate a coarray"]);
    fails(2, want, |ctx| {
        let n = if ctx.pid() == 1 { 1 << 60 } else { 4 };
        let _ = ctx.coarray::<u64>(n);
        ctx.sync();
    });
}

#[test]
fn more_processors_than_the_machine_can_run_is_a_configuration_error() {
    let err = Runtime::threads(50_000_000)
        .run(|ctx| ctx.pid())
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config, "{err}");
    assert!(err.message().contains("exceed"), "{err}");
}

#[test]
fn a_registration_mismatch_lists_the_registrations_of_the_processors_it_names() {
    let want = Failure::at(ErrorKind::RegistrationMismatch, 1, 0).says(&[
        "Processor 1 registered and released: [coarray<u32>]",
        "processor 0: [coarray<u64>]",
    ]);
    fails(4, want, |ctx| {
        if ctx.pid() == 1 {
            let _ = ctx.coarray::<u32>(1);
        } else {
            let _ = ctx.coarray::<u64>(1);
        }
        ctx.sync();
    });
}

#[test]
fn a_panic_message_carries_its_location() {
    let want = Failure::at(ErrorKind::Panic, 0, 0).says(&["core_failures.rs:"]);
    fails(2, want, |ctx| {
        if ctx.pid() == 0 {
            panic!("here");
        }
        ctx.sync();
    });
}

/// A handle made by one run: used in any later run it ends that run.
#[test]
fn a_handle_from_an_earlier_run_is_refused() {
    let earlier = Runtime::threads(2)
        .run(|ctx| (ctx.coarray::<u32>(4), ctx.queue::<u32>()))
        .unwrap();
    let (a, q) = *earlier.local();
    let want = Failure::at(ErrorKind::RegistrationMismatch, 0, 0)
        .says(&["coarray #0 was registered by another machine"]);
    fails(2, want, move |ctx| {
        let b = ctx.coarray::<u32>(4);
        if ctx.pid() == 0 {
            ctx.put(1, &a, 0, &[7]);
        }
        ctx.sync();
        assert_eq!(
            ctx.local(&b),
            [0; 4],
            "the put landed in this run's coarray"
        );
    });
    let want = Failure::at(ErrorKind::RegistrationMismatch, 1, 1)
        .says(&["queue #1 was registered by another machine"]);
    fails(2, want, move |ctx| {
        let _mine = ctx.coarray::<u32>(1);
        let _ours = ctx.queue::<u32>();
        ctx.sync();
        if ctx.pid() == 1 {
            ctx.send(0, &q, &5);
        }
        ctx.sync();
    });
    // Reading the local part of a foreign handle is refused too, not only
    // communication.
    let want = Failure::at(ErrorKind::RegistrationMismatch, 1, 0).says(&["coarray #0"]);
    fails(2, want, move |ctx| {
        let _b = ctx.coarray::<u32>(4);
        if ctx.pid() == 1 {
            let _ = ctx.local(&a);
        }
        ctx.sync();
    });
}

/// The parent's handles do not reach into a sub-machine, and a
/// sub-machine's handles do not survive it.
#[test]
fn handles_do_not_cross_a_split() {
    let want = Failure::at(ErrorKind::RegistrationMismatch, 3, 1).says(&[
        "coarray #0 was registered by another machine",
        "sub-machine of color 1",
    ]);
    fails(4, want, |ctx| {
        let parent = ctx.coarray::<u8>(4);
        ctx.sync();
        let me = ctx.pid();
        ctx.split(me % 2, 0, |sub| {
            let own = sub.coarray::<u8>(4);
            if me == 3 {
                sub.put(0, &parent, 0, &[1]);
            }
            sub.sync();
            sub.local(&own).to_vec()
        });
        ctx.sync();
    });
    let want = Failure::at(ErrorKind::RegistrationMismatch, 1, 1)
        .says(&["coarray #0 was registered by another machine"]);
    fails(2, want, |ctx| {
        let parent = ctx.coarray::<u8>(4);
        ctx.sync();
        let escaped = ctx.split(0, 0, |sub| sub.coarray::<u8>(4));
        if ctx.pid() == 1 {
            ctx.put(0, &escaped, 0, &[1]);
        }
        ctx.sync();
        assert_eq!(
            ctx.local(&parent),
            [0; 4],
            "the put landed in the parent's coarray"
        );
    });
    // A get requested in a sub-machine cannot be taken by the parent.
    let want =
        Failure::at(ErrorKind::RegistrationMismatch, 0, 1).says(&["requested on another machine"]);
    fails(2, want, |ctx| {
        let _parent = ctx.coarray::<u8>(1);
        let got = ctx.split(0, 0, |sub| {
            let a = sub.coarray::<u8>(1);
            let got = sub.get(1 - sub.pid(), &a, 0, 1);
            sub.sync();
            got
        });
        ctx.sync();
        if ctx.pid() == 0 {
            let _ = ctx.take(got);
        }
        ctx.sync();
    });
    // Nor does a sub-machine's area (successive splits differ too).
    let want = Failure::at(ErrorKind::RegistrationMismatch, 0, 0).says(&["area #0"]);
    fails(2, want, |ctx| {
        let mut first = [0u8; 4];
        let area = ctx.split(0, 0, |sub| {
            // SAFETY: `first` outlives the area, which no put reaches
            // before the run ends.
            unsafe { sub.register_area(first.as_mut_ptr(), first.len()) }
        });
        ctx.split(0, 0, |sub| {
            let mut second = [0u8; 4];
            // SAFETY: as above, for `second`.
            let _own = unsafe { sub.register_area(second.as_mut_ptr(), second.len()) };
            if sub.pid() == 0 {
                sub.put_area(1, area, 0, &[1]);
            }
            sub.sync();
        });
    });
}

/// Swapping out a coarray that a put_from of the same superstep reads is
/// refused, naming the put_from (it ended in a panic inside `bytes`).
#[test]
fn replacing_a_coarray_that_a_put_from_reads() {
    let want = Failure::at(ErrorKind::PendingCommunication, 1, 1)
        .says(&["replace_local of coarray #0 while a put_from"]);
    fails(2, want, |ctx| {
        let a = ctx.coarray_from(vec![1u32; 64]);
        let b = ctx.coarray::<u32>(64);
        ctx.sync();
        ctx.put_from(1 - ctx.pid(), &b, 0, &a, ..64);
        if ctx.pid() == 1 {
            ctx.replace_local(&a, Vec::new());
        }
        ctx.sync();
    });
}
