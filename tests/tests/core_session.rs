//! Sessions (`Runtime::begin`: the calling thread is a processor, the
//! others run a function) and registered foreign areas (memory the program
//! owns, addressed by byte offset), on every transport: threads with
//! several p and both routers, or the MPI world when run as ranks.

mod support;

use bsp::expert::Areas;
use bsp::{Ctx, ErrorKind, Router, Runtime, Session};
use support::{agree, on_runtimes, under_mpi, watchdog};

/// Every processor sends its pid to every processor and returns what it
/// received: the same SPMD body for the caller and for the others.
fn exchange_pids(s: &mut Session) -> bsp::Result<Vec<u64>> {
    s.with(|ctx| {
        let q = ctx.queue::<u64>();
        for t in 0..ctx.nprocs() {
            ctx.send(t, &q, &(ctx.pid() as u64));
        }
        ctx.sync();
        let got = ctx.receive(&q);
        ctx.release_queue(q);
        got
    })
}

/// The check every processor makes of [`exchange_pids`].
fn check_pids(s: &mut Session) {
    let got = exchange_pids(s).expect("the run does not fail");
    let want: Vec<u64> = (0..s.nprocs() as u64).collect();
    assert_eq!(got, want, "processor {}", s.pid());
}

#[test]
fn the_calling_thread_is_a_processor_and_the_others_run_the_function() {
    on_runtimes(60, &[1, 2, 3, 5], |rt| {
        let mut s = rt.begin(check_pids).expect("begin");
        let first = if under_mpi() { s.pid() } else { 0 };
        assert_eq!(s.pid(), first);
        assert_eq!(s.nprocs(), rt.nprocs());
        check_pids(&mut s);
        assert!(s.is_open());
        s.end().expect("end");
        assert!(!s.is_open());
        s.end().expect("ending twice does nothing");
        assert_eq!(
            s.with(|ctx| ctx.pid()).unwrap_err().kind(),
            ErrorKind::Config
        );
    });
}

#[test]
fn a_session_of_fewer_processors_runs_on_the_first_ranks() {
    on_runtimes(60, &[1, 2, 3], |rt| {
        // Under MPI the world's first ranks take part and the rest stand
        // by; on threads, every processor of the smaller run is a member.
        let all = rt.nprocs();
        let p = if under_mpi() { all.div_ceil(2) } else { all };
        let rank = if under_mpi() { rt_rank(rt) } else { 0 };
        let session = rt.begin_first(p, check_pids).expect("begin_first");
        match session {
            Some(mut s) => {
                assert!(rank < p, "rank {rank} is a member of a run of {p}");
                assert_eq!((s.pid(), s.nprocs()), (rank, p));
                check_pids(&mut s);
                s.end().expect("end");
            }
            None => assert!(rank >= p, "rank {rank} stands by in a run of {p}"),
        }
        // Every rank goes on to a run of all of them.
        let mut s = rt.begin(check_pids).expect("begin");
        check_pids(&mut s);
        s.end().expect("end");
    });
}

/// This rank's place in the MPI world (a run of all of them).
fn rt_rank(rt: &Runtime) -> usize {
    *rt.run(|ctx| ctx.pid()).expect("a run").local()
}

#[test]
fn a_session_of_more_processors_than_ranks_is_a_configuration_error() {
    if !under_mpi() {
        return;
    }
    on_runtimes(60, &[1], |rt| {
        let err = rt
            .begin_first(rt.nprocs() + 1, |_| {})
            .map(|_| ())
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Config, "{err}");
        assert!(err.to_string().contains("MPI ranks"), "{err}");
    });
}

/// Each processor registers `4 + pid` bytes of its own memory, puts its pid
/// into byte 1 of the next processor's area and gets byte 0 of the previous
/// one's into a local variable, in each of a few supersteps; a put and a
/// get of the same superstep to the same local bytes: the put wins.
fn areas(s: &mut Session) -> Vec<u8> {
    s.with(|ctx| {
        let (me, p) = (ctx.pid(), ctx.nprocs());
        let mut mine = vec![100 + me as u8; 4 + me];
        let mut fetched = [0u8; 2];
        // SAFETY: `mine` and `fetched` outlive the area and the gets
        // (released and synced below), and are only touched between calls.
        let area = unsafe { ctx.register_area(mine.as_mut_ptr(), mine.len()) };
        assert_eq!(ctx.area_len(area), 4 + me);
        ctx.sync();
        ctx.put_area((me + 1) % p, area, 1, &[me as u8]);
        // SAFETY: as above.
        unsafe { ctx.get_area((me + p - 1) % p, area, 0, fetched.as_mut_ptr(), 2) };
        ctx.sync();
        let after_first = mine.clone();
        // Get my own bytes 2..4 into bytes 0..2, and have the previous
        // processor put into byte 0 in the same superstep: gets land first.
        // SAFETY: as above (bytes 0..2 of my own area, written at the sync).
        unsafe { ctx.get_area(me, area, 2, mine.as_mut_ptr(), 2) };
        ctx.put_area((me + 1) % p, area, 0, &[200 + me as u8]);
        ctx.sync();
        ctx.release_area(area);
        ctx.sync();
        let mut out = after_first;
        out.extend_from_slice(&fetched);
        out.extend_from_slice(&mine);
        out
    })
    .expect("the run does not fail")
}

fn areas_expected(p: usize, me: usize) -> Vec<u8> {
    let prev = (me + p - 1) % p;
    let mut first = vec![100 + me as u8; 4 + me];
    first[1] = prev as u8;
    // The get read the previous processor's area before that sync's puts.
    let fetched = [100 + prev as u8, 100 + prev as u8];
    let mut second = first.clone();
    second[1] = first[3]; // the get of bytes 2..4 into 0..2 ...
    second[0] = 200 + prev as u8; // ... then the put into byte 0
    [first, fetched.to_vec(), second].concat()
}

fn areas_checked(s: &mut Session) {
    let (p, me) = (s.nprocs(), s.pid());
    assert_eq!(areas(s), areas_expected(p, me), "processor {me}");
}

#[test]
fn foreign_areas_are_put_to_and_read_by_offset_and_gets_land_before_puts() {
    on_runtimes(60, &[1, 2, 3, 4], |rt| {
        let mut s = rt.begin(areas_checked).expect("begin");
        areas_checked(&mut s);
        s.end().expect("end");
    });
}

#[test]
fn foreign_areas_work_in_a_run_closure_too() {
    on_runtimes(60, &[2, 3], |rt| {
        let out = rt
            .run(|ctx: &mut Ctx| {
                let mut x = [0u64; 2];
                // SAFETY: `x` outlives the area, released before it goes.
                let area = unsafe { ctx.register_area(x.as_mut_ptr().cast(), 16) };
                let v = (ctx.pid() as u64 + 1).to_ne_bytes();
                ctx.put_area((ctx.pid() + 1) % ctx.nprocs(), area, 8, &v);
                ctx.sync();
                ctx.release_area(area);
                x[1]
            })
            .expect("run");
        let p = rt.nprocs() as u64;
        for (pid, got) in out.into_iter_with_pids() {
            assert_eq!(got, (pid as u64 + p - 1) % p + 1);
        }
    });
}

/// `with_area` lends a slice for the length of a closure: puts land in it
/// at the syncs inside, it is released when the closure returns, and a
/// put that reaches it afterwards ends the run instead of writing it.
#[test]
fn a_scoped_area_takes_puts_inside_its_closure_only() {
    on_runtimes(60, &[1, 2, 3], |rt| {
        let out = rt
            .run(|ctx: &mut Ctx| {
                let (p, me) = (ctx.nprocs(), ctx.pid());
                let mut mine = vec![0u16; p];
                ctx.with_area(&mut mine, |ctx, area| {
                    assert_eq!(ctx.area_len(area), 2 * p);
                    for q in 0..p {
                        ctx.put_area(q, area, 2 * me, &(me as u16 + 1).to_ne_bytes());
                    }
                    ctx.sync();
                });
                (mine, ctx.superstep())
            })
            .expect("run");
        let p = rt.nprocs();
        for (pid, (mine, superstep)) in out.into_iter_with_pids() {
            let want: Vec<u16> = (1..=p as u16).collect();
            assert_eq!((mine, superstep), (want, 1), "processor {pid}");
        }
    });
}

/// `multicast_area` writes one payload to several processors' areas at
/// their own offsets, copied at the call (a change to the source after it
/// is not seen), both for payloads shared by the targets and for short
/// ones copied into each stream.
#[test]
fn a_multicast_lands_at_every_target_as_it_was_at_the_call() {
    const LONG: usize = 5000;
    on_runtimes(60, &[1, 2, 3, 4], |rt| {
        let out = rt
            .run(|ctx: &mut Ctx| {
                let (p, me) = (ctx.nprocs(), ctx.pid());
                let mut long = vec![0u8; p * LONG];
                let mut short = vec![0u8; p * 3];
                ctx.with_area(&mut long, |ctx, long_area| {
                    ctx.with_area(&mut short, |ctx, short_area| {
                        let others = (0..p).filter(|&q| q != me);
                        let mut payload = vec![me as u8 + 1; LONG];
                        ctx.multicast_area(
                            &payload,
                            others.clone().map(|q| (q, long_area, me * LONG)),
                        );
                        payload.fill(0);
                        ctx.multicast_area(&payload[..3], []);
                        let tiny = [me as u8 + 11; 3];
                        ctx.multicast_area(&tiny, others.map(|q| (q, short_area, 3 * me)));
                        ctx.sync();
                    })
                });
                (long, short)
            })
            .expect("run");
        let p = rt.nprocs();
        for (pid, (long, short)) in out.into_iter_with_pids() {
            for q in 0..p {
                let (l, s) = if q == pid {
                    (0, 0)
                } else {
                    (q as u8 + 1, q as u8 + 11)
                };
                assert!(
                    long[q * LONG..(q + 1) * LONG].iter().all(|&b| b == l),
                    "processor {pid}, from {q}"
                );
                assert_eq!(short[3 * q..3 * q + 3], [s; 3], "processor {pid}, from {q}");
            }
        }
    });
}

/// Every processor sees the same answer to `on_one_node`: true on threads,
/// and under MPI whatever `MPI_COMM_TYPE_SHARED` says of the whole world
/// (these tests run on one machine, so true there too).
#[test]
fn every_processor_agrees_that_the_run_is_on_one_node() {
    on_runtimes(60, &[1, 3], |rt| {
        let out = rt.run(|ctx: &mut Ctx| ctx.on_one_node()).expect("run");
        for (pid, one) in out.into_iter_with_pids() {
            assert!(one, "processor {pid}");
        }
    });
}

/// The failures below end an MPI job (abort mode); they run on threads.
fn threads_only() -> bool {
    !under_mpi()
}

/// The error that ends a run of `body` on `p` threads, under the
/// watchdog; `None` under MPI, where such a failure ends the job.
fn threads_run_error<R: Send + std::fmt::Debug + 'static>(
    p: usize,
    body: impl Fn(&mut Ctx) -> R + Send + Sync + 'static,
) -> Option<bsp::Error> {
    if !threads_only() {
        return None;
    }
    Some(watchdog(60, move || {
        Runtime::threads(p).run(body).unwrap_err()
    }))
}

#[test]
fn a_put_beyond_a_foreign_area_names_the_sender_and_superstep() {
    if !threads_only() {
        return;
    }
    watchdog(60, || {
        for router in [Router::TwoPhase, Router::Direct] {
            let rt = Runtime::threads(3).with_router(router);
            let body = |s: &mut Session| {
                let _ = s.with(|ctx| {
                    let mut mine = [0u8; 4];
                    // SAFETY: `mine` outlives every use: the run fails at
                    // the sync below and nothing touches it afterwards.
                    let area = unsafe { ctx.register_area(mine.as_mut_ptr(), 4) };
                    ctx.sync();
                    if ctx.pid() == 2 {
                        ctx.put_area(0, area, 3, &[1, 2]);
                    }
                    ctx.sync();
                    mine
                });
            };
            let mut s = rt.begin(body).expect("begin");
            body(&mut s);
            let err = s.end().unwrap_err();
            assert_eq!(err.kind(), ErrorKind::OutOfBounds, "{err}");
            assert_eq!((err.pid(), err.superstep()), (Some(2), Some(1)), "{err}");
            assert_eq!(s.failure(), Some(&err));
        }
    });
}

#[test]
fn a_panic_in_another_processor_comes_back_from_the_callers_session() {
    if !threads_only() {
        return;
    }
    watchdog(60, || {
        let mut s = Runtime::threads(4)
            .begin(|s: &mut Session| {
                let _ = s.with(|ctx| ctx.sync());
                if s.pid() == 3 {
                    panic!("worker 3 gives up");
                }
                let _ = s.with(|ctx| ctx.sync());
            })
            .expect("begin");
        // Processor 3 fails right after the first sync, which processor 0
        // may see before it leaves that sync or at the second.
        let err = s
            .with(|ctx| ctx.sync())
            .and_then(|()| s.with(|ctx| ctx.sync()))
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Panic, "{err}");
        assert_eq!(err.pid(), Some(3));
        assert!(err.message().contains("worker 3 gives up"), "{err}");
        // A failed session stays failed.
        assert_eq!(s.with(|ctx| ctx.pid()).unwrap_err(), err);
        assert_eq!(s.end().unwrap_err(), err);
    });
}

#[test]
fn a_processor_at_end_while_another_syncs_is_a_sync_mismatch() {
    if !threads_only() {
        return;
    }
    watchdog(60, || {
        let mut s = Runtime::threads(2)
            .begin(|s: &mut Session| {
                let _ = s.with(|ctx| ctx.sync());
            })
            .expect("begin");
        let err = s.end().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::SyncMismatch, "{err}");
        assert_eq!(err.superstep(), Some(0), "{err}");
    });
}

#[test]
fn others_that_leave_their_session_open_end_it_and_abort_at_names_a_past_superstep() {
    if !threads_only() {
        return;
    }
    watchdog(60, || {
        // The others return without `end`: their sessions end for them.
        let mut s = Runtime::threads(3)
            .begin(|s: &mut Session| {
                let _ = s.with(|ctx| ctx.sync());
            })
            .expect("begin");
        s.with(|ctx| ctx.sync()).expect("sync");
        s.end().expect("end");

        let mut s = Runtime::threads(2)
            .begin(|s: &mut Session| {
                let _ = s.with(|ctx| ctx.sync());
                let _ = s.with(|ctx| ctx.sync());
            })
            .expect("begin");
        s.with(|ctx| ctx.sync()).expect("sync");
        let err = s
            .with(|ctx| ctx.abort_at(0, "found after the sync"))
            .unwrap_err();
        assert_eq!(
            (err.kind(), err.pid(), err.superstep()),
            (ErrorKind::Abort, Some(0), Some(0))
        );
    });
}

#[test]
fn a_session_holds_its_results_like_a_run() {
    // The pids every processor sees, gathered by processor 0 (or per rank).
    let rt = if under_mpi() {
        support::runtimes(&[])[0].clone()
    } else {
        Runtime::threads(3)
    };
    let mut s = rt.begin(|s: &mut Session| check_pids(s)).expect("begin");
    let got = exchange_pids(&mut s).expect("exchange");
    s.end().expect("end");
    agree(&rt, || assert_eq!(got.len(), rt.nprocs()));
}

#[test]
fn a_put_to_a_scoped_area_after_its_closure_ends_the_run() {
    let Some(err) = threads_run_error(2, |ctx: &mut Ctx| {
        let mut mine = [0u8; 4];
        let area = ctx.with_area(&mut mine, |ctx, area| {
            ctx.sync();
            area
        });
        if ctx.pid() == 1 {
            ctx.put_area(0, area, 0, &[9]);
        }
        ctx.sync();
        mine
    }) else {
        return;
    };
    assert_eq!(err.kind(), ErrorKind::Released, "{err}");
    assert_eq!((err.pid(), err.superstep()), (Some(1), Some(1)), "{err}");
}

#[test]
fn a_multicast_to_a_bad_pid_names_the_sender() {
    let Some(err) = threads_run_error(3, |ctx: &mut Ctx| {
        let mut mine = [0u8; 8192];
        ctx.with_area(&mut mine, |ctx, area| {
            if ctx.pid() == 1 {
                let payload = [5u8; 8192];
                ctx.multicast_area(&payload, [(0, area, 0), (7, area, 0)]);
            }
            ctx.sync();
        });
    }) else {
        return;
    };
    assert_eq!(err.kind(), ErrorKind::BadPid, "{err}");
    assert_eq!((err.pid(), err.superstep()), (Some(1), Some(0)), "{err}");
}

#[test]
fn a_panic_inside_a_scoped_area_ends_the_run_with_that_panic() {
    let Some(err) = threads_run_error(3, |ctx: &mut Ctx| {
        let mut mine = [0u8; 4];
        ctx.with_area(&mut mine, |ctx, area| {
            if ctx.pid() == 2 {
                panic!("processor 2 fails with its area registered");
            }
            ctx.put_area(2, area, 0, &[1, 2]);
            ctx.sync();
        });
        ctx.sync();
        mine
    }) else {
        return;
    };
    assert_eq!(err.kind(), ErrorKind::Panic, "{err}");
    assert_eq!(err.pid(), Some(2), "{err}");
    assert!(err.message().contains("fails with its area"), "{err}");
}
