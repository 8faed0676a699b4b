//! The small primitives BSPlib and Bulk users expect: a clock, a queue's
//! length, peek and one-at-a-time reading, tagged messages and gets into
//! a local coarray. Each is checked against what `receive_with_source` and
//! `get` + `take` deliver for the same sends, on both routers and (as ranks
//! of an `mpirun` job) on MPI.

mod support;

use bsp::{Ctx, Tagged};
use support::{check, on_runtimes, run_local, Rng};

/// Processor `me`'s sends for a seed: to a few destinations, a few
/// messages each, of varying length.
fn sends(seed: u64, me: usize, p: usize) -> Vec<(usize, u32, Vec<u16>)> {
    let mut rng = Rng(seed ^ ((me as u64 + 1) * 0x9e37_79b9));
    (0..rng.below(6))
        .map(|k| {
            let len = rng.below(4);
            let dst = rng.below(p);
            (dst, (me * 100 + k) as u32, vec![me as u16; len])
        })
        .collect()
}

/// Every way of reading a queue yields the same messages in the same
/// order: `receive_with_source` against `queue_len` + `peek` +
/// `next_message`, and against the `messages` iterator.
#[test]
fn queue_reads_agree_with_receive() {
    on_runtimes(120, &[1, 2, 3, 5], |rt| {
        for seed in 0..4 {
            let out = run_local(rt, |ctx: &mut Ctx| {
                let (me, p) = (ctx.pid(), ctx.nprocs());
                let [a, b, c] = [(); 3].map(|()| ctx.tagged_queue::<u32, u16>());
                for (dst, tag, payload) in sends(seed, me, p) {
                    for q in [&a, &b, &c] {
                        ctx.send_tagged(dst, q, &tag, &payload);
                    }
                }
                ctx.sync();
                let all = ctx.receive_with_source(&a);
                let mut one_by_one = Vec::new();
                let len = ctx.queue_len(&b);
                while let Some(peeked) = ctx.peek(&b) {
                    let left = ctx.queue_len(&b);
                    let taken = ctx.next_message(&b).expect("peeked, so there is one");
                    assert_eq!(peeked, taken, "peek shows the next message");
                    assert_eq!(ctx.queue_len(&b), left - 1);
                    one_by_one.push(taken);
                }
                let mut messages = ctx.messages(&c);
                assert_eq!(
                    ctx.queue_len(&c),
                    0,
                    "messages() takes the queue's messages"
                );
                let half: Vec<_> = messages.by_ref().take(len / 2).collect();
                assert_eq!(messages.len(), len - len / 2, "an exact size");
                let from_iterator = [half, messages.collect()].concat();
                (all, len, one_by_one, from_iterator)
            });
            for (pid, (all, len, one_by_one, from_iterator)) in out {
                assert_eq!(len, all.len(), "processor {pid}: queue_len");
                let msgs: Vec<_> = all.iter().map(|(_, m)| m.clone()).collect();
                assert_eq!(one_by_one, msgs, "processor {pid}: next_message order");
                assert_eq!(from_iterator, all, "processor {pid}: messages()");
            }
        }
    });
}

/// A tagged message carries its tag and payload whatever their sizes,
/// zero-sized and empty included.
#[test]
fn tagged_messages_round_trip() {
    on_runtimes(60, &[2, 3], |rt| {
        check(
            rt,
            |ctx| {
                let (me, p) = (ctx.pid(), ctx.nprocs());
                let wide = ctx.tagged_queue::<[u64; 3], u8>();
                let unit = ctx.tagged_queue::<(), ()>();
                ctx.send_tagged((me + 1) % p, &wide, &[me as u64; 3], &[]);
                ctx.send_tagged((me + 1) % p, &wide, &[7; 3], &[me as u8; 5]);
                ctx.send((me + 1) % p, &unit, &Tagged::new((), vec![(); me]));
                ctx.sync();
                (ctx.receive(&wide), ctx.receive(&unit))
            },
            |p, pid| {
                let from = (pid + p - 1) % p;
                (
                    vec![
                        Tagged::new([from as u64; 3], vec![]),
                        Tagged::new([7; 3], vec![from as u8; 5]),
                    ],
                    vec![Tagged::new((), vec![(); from])],
                )
            },
        );
    });
}

/// `get_into` lands what `get` + `take` return, after the superstep's puts.
#[test]
fn get_into_lands_what_get_returns() {
    on_runtimes(60, &[1, 2, 4], |rt| {
        check(
            rt,
            |ctx| {
                let (me, p) = (ctx.pid(), ctx.nprocs());
                let src = ctx.coarray_from((0..4).map(|i| (me * 10 + i) as u32).collect());
                let into = ctx.coarray::<u32>(4 * p + 1);
                let next = (me + 1) % p;
                let h = ctx.get(next, &src, 1, 3);
                ctx.get_into(next, &src, 1..4, &into, 1);
                ctx.put(me, &into, 1, &[99; 4]); // lands first: the get overwrites 1..4
                ctx.put(next, &src, 0, &[5; 4]); // after the gets have read
                ctx.sync();
                (ctx.take(h), ctx.local(&into)[..5].to_vec())
            },
            |p, pid| {
                let next = (pid + 1) % p;
                let got: Vec<u32> = (1..4).map(|i| (next * 10 + i) as u32).collect();
                let mut landed = vec![0];
                landed.extend(&got);
                landed.push(99);
                (got, landed)
            },
        );
    });
}

#[test]
fn time_runs_forward_on_every_processor() {
    on_runtimes(60, &[2], |rt| {
        check(
            rt,
            |ctx| {
                let t0 = ctx.time();
                std::thread::sleep(std::time::Duration::from_millis(5));
                ctx.sync();
                let t1 = ctx.time();
                t0 >= 0.0 && t1 - t0 >= 0.005
            },
            |_, _| true,
        );
    });
}

/// On threads only: under MPI the error would abort the job.
#[test]
fn get_into_past_the_local_part_ends_the_run_at_the_call() {
    if support::launched_by_mpirun() {
        return;
    }
    let err = bsp::run(1, |ctx| {
        let a = ctx.coarray::<u8>(3);
        ctx.get_into(0, &a, 0..3, &a, 2);
    })
    .unwrap_err();
    assert_eq!(err.kind(), bsp::ErrorKind::OutOfBounds);
    assert_eq!((err.pid(), err.superstep()), (Some(0), Some(0)));
    assert!(
        err.message().contains(
            "get_into on processor 0 reads elements 0..3 of processor 0's part into \
             elements from 2 of coarray #0, whose local length is 3"
        ),
        "{err}"
    );
}
