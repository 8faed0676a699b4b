//! The programming model's guarantees, one by one, on both routers and (as
//! ranks of an `mpirun` job built with `--features mpi`) on MPI: every body
//! checks the processors it can see against what that processor must hold.

mod support;

use bsp::expert::Areas;
use bsp::{Ctx, Router, Runtime, SuperstepStats};
use support::{describe, on_runtimes, run_local, watchdog};

/// Checks `ok(pid, result)` for every visible processor (each test body
/// runs under [`on_runtimes`], whose ranks agree on the verdict).
fn verify<R>(rt: &Runtime, results: Vec<(usize, R)>, ok: impl Fn(usize, &R) -> bool)
where
    R: std::fmt::Debug,
{
    for (pid, r) in &results {
        assert!(ok(*pid, r), "{}: processor {pid} holds {r:?}", describe(rt));
    }
}

#[test]
fn get_sees_the_data_before_the_supersteps_puts() {
    on_runtimes(120, &[1, 2, 5], |rt| {
        let out = run_local(rt, |ctx| {
            let p = ctx.nprocs();
            let a = ctx.coarray_from(vec![ctx.pid() as u32 + 100; 4]);
            let next = (ctx.pid() + 1) % p;
            let h = ctx.get(next, &a, 0, 4);
            ctx.put(next, &a, 0, &[7; 4]);
            let h2 = ctx.get(next, &a, 1, 2); // issued after the put: still pre-put data
            ctx.sync();
            (ctx.take(h), ctx.take(h2), ctx.local(&a).to_vec())
        });
        let p = rt.nprocs();
        verify(rt, out, |pid, (got, got2, local)| {
            let next = (pid + 1) % p;
            *got == vec![next as u32 + 100; 4]
                && *got2 == vec![next as u32 + 100; 2]
                && *local == vec![7; 4]
        });
    });
}

#[test]
fn votes_ride_in_the_sync_with_the_superstep_s_puts() {
    on_runtimes(120, &[1, 3, 8], |rt| {
        let out = run_local(rt, |ctx| {
            let (me, p) = (ctx.pid(), ctx.nprocs());
            let a = ctx.coarray::<u64>(1);
            let mut seen = Vec::new();
            for step in 0..4u64 {
                ctx.put((me + 1) % p, &a, 0, &[step * 100 + me as u64]);
                // Step 1: processor 0 syncs plainly (it adds 0); step 3:
                // only the last processor votes true.
                let total = match step {
                    1 if me == 0 => {
                        ctx.sync();
                        None
                    }
                    3 => Some(u64::from(ctx.sync_any(me == p - 1))),
                    _ => Some(ctx.sync_sum(me as u64 + step)),
                };
                seen.push((total, ctx.local(&a)[0]));
            }
            let none = ctx.sync_any(false);
            (seen, none)
        });
        let p = rt.nprocs() as u64;
        verify(rt, out, |pid, (seen, none)| {
            let left = (pid as u64 + p - 1) % p;
            let want = |step: u64| match step {
                1 if pid == 0 => None,
                1 => Some(p * (p - 1) / 2 + (p - 1)),
                3 => Some(1),
                _ => Some(p * (p - 1) / 2 + p * step),
            };
            !*none
                && seen.len() == 4
                && seen
                    .iter()
                    .zip(0u64..)
                    .all(|(&(total, got), step)| total == want(step) && got == step * 100 + left)
        });
    });
}

#[test]
fn peeking_reads_through_a_shared_borrow_past_sources_all_taken() {
    on_runtimes(120, &[1, 3], |rt| {
        let out = run_local(rt, |ctx| {
            let (me, p) = (ctx.pid(), ctx.nprocs());
            let q = ctx.queue::<u32>();
            for k in 0..2 {
                ctx.send(0, &q, &(me as u32 * 10 + k));
            }
            ctx.sync();
            let mut seen = Vec::new();
            for _ in 0..2 * p {
                let reader: &Ctx = ctx; // queue_len and peek only read
                let (len, next) = (reader.queue_len(&q), reader.peek(&q));
                let taken = ctx.next_message(&q);
                seen.push((len, next, taken));
            }
            (seen, ctx.queue_len(&q), ctx.peek(&q))
        });
        let p = rt.nprocs();
        verify(rt, out, |pid, (seen, left, after)| {
            let want: Vec<u32> = (0..p as u32).flat_map(|s| [s * 10, s * 10 + 1]).collect();
            *left == 0
                && after.is_none()
                && seen.iter().enumerate().all(|(i, &(len, next, taken))| {
                    let w = if pid == 0 { want.get(i).copied() } else { None };
                    len == if pid == 0 { 2 * p - i } else { 0 } && next == w && taken == w
                })
        });
    });
}

#[test]
fn last_put_by_source_then_call_order_wins() {
    on_runtimes(120, &[1, 3, 4], |rt| {
        let out = run_local(rt, |ctx| {
            let a = ctx.coarray::<u64>(3);
            let me = ctx.pid() as u64;
            // Every processor writes element 0 of processor 0 twice, and
            // element 1 once; processor p-1 is the last source.
            ctx.put(0, &a, 0, &[me * 10]);
            ctx.put(0, &a, 0, &[me * 10 + 1]);
            ctx.put(0, &a, 1, &[me]);
            ctx.sync();
            ctx.local(&a).to_vec()
        });
        let last = rt.nprocs() as u64 - 1;
        verify(rt, out, |pid, local| {
            pid != 0 || *local == vec![last * 10 + 1, last, 0]
        });
    });
}

/// Runs of small puts to one coarray, of one to five elements each, with
/// puts to another coarray and a message between runs: the receivers read
/// such runs in place (`wire.rs`), and where a router cuts a stream into
/// parts a record may straddle two segments. Every element lands, last
/// put winning, on every router.
#[test]
fn runs_of_small_puts_land_every_element() {
    on_runtimes(120, &[1, 2, 3, 5], |rt| {
        for router in [Router::Direct, Router::TwoPhase, Router::Transportation] {
            let rt = rt.clone().with_router(router);
            let out = run_local(&rt, |ctx| {
                let (me, p) = (ctx.pid(), ctx.nprocs());
                let a = ctx.coarray::<u32>(64);
                let b = ctx.coarray::<u16>(8);
                let q = ctx.queue::<u8>();
                for dst in 0..p {
                    for k in 0..40usize {
                        let len = 1 + (k + me) % 5;
                        let at = (k * 7 + me * 3) % (64 - len);
                        let words: Vec<u32> =
                            (0..len).map(|i| (me * 1000 + k * 10 + i) as u32).collect();
                        ctx.put(dst, &a, at, &words);
                        if k % 13 == 12 {
                            ctx.put(dst, &b, k % 8, &[k as u16]);
                            ctx.send(dst, &q, &(k as u8));
                        }
                    }
                }
                ctx.sync();
                drop(ctx.receive(&q));
                (ctx.local(&a).to_vec(), ctx.local(&b).to_vec())
            });
            let p = rt.nprocs();
            verify(&rt, out, |_, (a, b)| {
                // The oracle: sources in pid order, each in call order.
                let mut want_a = vec![0u32; 64];
                let mut want_b = vec![0u16; 8];
                for src in 0..p {
                    for k in 0..40usize {
                        let len = 1 + (k + src) % 5;
                        let at = (k * 7 + src * 3) % (64 - len);
                        for i in 0..len {
                            want_a[at + i] = (src * 1000 + k * 10 + i) as u32;
                        }
                        if k % 13 == 12 {
                            want_b[k % 8] = k as u16;
                        }
                    }
                }
                *a == want_a && *b == want_b
            });
        }
    });
}

/// Gets into the same local bytes land in call order, whatever the order
/// of their sources, on every router (they landed by source pid).
#[test]
fn overlapping_get_areas_land_in_call_order() {
    on_runtimes(120, &[2, 3, 5], |rt| {
        for rt in [rt.clone(), rt.clone().with_router(Router::Transportation)] {
            let out = run_local(&rt, |ctx| {
                let p = ctx.nprocs();
                let mut mine = [ctx.pid() as u8 + 1; 4];
                let mut into = [0u8; 8];
                let at = into.as_mut_ptr();
                // SAFETY: `mine` and `into` outlive the sync below and are
                // touched by nothing else until it returns.
                unsafe {
                    let area = ctx.register_area(mine.as_mut_ptr(), mine.len());
                    // From the highest pid down: call order is the reverse
                    // of the sources' order. Processor 0's get, called
                    // last, wins.
                    for q in (0..p).rev() {
                        ctx.get_area(q, area, 0, at, 4);
                    }
                    // Called after them all, over half of those bytes.
                    ctx.get_area(p - 1, area, 0, at.add(2), 4);
                    ctx.sync();
                    ctx.release_area(area);
                }
                into
            });
            let p = rt.nprocs() as u8;
            verify(&rt, out, |_, into| *into == [1, 1, p, p, p, p, 0, 0]);
        }
    });
}

#[test]
fn messages_arrive_by_source_then_send_order_and_unread_ones_drop_at_sync() {
    on_runtimes(120, &[1, 2, 7], |rt| {
        let out = run_local(rt, |ctx| {
            // `kept` keeps what the sync after its delivery finds unread;
            // `dropped` holds one superstep's messages, as in BSPlib.
            let (dropped, kept) = (ctx.queue::<[u32; 2]>(), ctx.queue::<[u32; 2]>());
            ctx.keep_unread(&kept, true);
            let p = ctx.nprocs();
            let mut first_peeked = None;
            for round in 0..2u32 {
                for k in 0..3u32 {
                    for q in [&dropped, &kept] {
                        ctx.send(p - 1, q, &[ctx.pid() as u32, round * 3 + k]);
                    }
                }
                ctx.sync();
                // Reading a message without taking it does not keep it.
                first_peeked.get_or_insert(ctx.peek(&dropped));
            }
            (
                first_peeked.flatten(),
                ctx.receive_with_source(&dropped),
                ctx.receive_with_source(&kept),
            )
        });
        let p = rt.nprocs();
        let sent = |rounds: std::ops::Range<u32>| {
            let mut want = Vec::new();
            for round in rounds {
                for src in 0..p {
                    for k in 0..3u32 {
                        want.push((src, [src as u32, round * 3 + k]));
                    }
                }
            }
            want
        };
        verify(rt, out, |pid, (peeked, got, kept)| {
            if pid == p - 1 {
                *peeked == Some([0, 0]) && *got == sent(1..2) && *kept == sent(0..2)
            } else {
                peeked.is_none() && got.is_empty() && kept.is_empty()
            }
        });
    });
}

#[test]
fn zero_length_transfers_and_empty_supersteps_work() {
    on_runtimes(120, &[1, 2, 6], |rt| {
        let out = run_local(rt, |ctx| {
            let a = ctx.coarray::<u8>(0);
            let b = ctx.coarray::<u16>(2);
            let q = ctx.serde_queue::<Vec<u8>>();
            for _ in 0..5 {
                ctx.sync();
            }
            let p = ctx.nprocs();
            ctx.put(p - 1, &a, 0, &[]);
            ctx.put(0, &b, 2, &[]); // an empty range at the end is in bounds
            let h = ctx.get(0, &a, 0, 0);
            ctx.send(0, &q, &Vec::new());
            ctx.sync();
            (ctx.take(h).len(), ctx.receive(&q).len(), ctx.superstep())
        });
        let p = rt.nprocs();
        verify(rt, out, |pid, got| {
            *got == (0, if pid == 0 { p } else { 0 }, 6)
        });
    });
}

#[test]
fn local_lengths_may_differ_and_put_from_reads_at_the_sync() {
    on_runtimes(120, &[1, 2, 4], |rt| {
        let out = run_local(rt, |ctx| {
            let (me, p) = (ctx.pid(), ctx.nprocs());
            let a = ctx.coarray::<u32>(me + 1);
            let src = ctx.coarray_from(vec![0u32; p]);
            // Everyone writes its pid + 1 into slot `me` of processor p-1's
            // part, taken from its own coarray after changing it.
            ctx.put_from(p - 1, &a, me, &src, me..me + 1);
            ctx.local_mut(&src)[me] = me as u32 + 1;
            ctx.sync();
            ctx.local(&a).to_vec()
        });
        let p = rt.nprocs();
        verify(rt, out, |pid, local| {
            if pid == p - 1 {
                *local == (1..=p as u32).collect::<Vec<_>>()
            } else {
                local.len() == pid + 1
            }
        });
    });
}

#[test]
fn put_from_a_coarray_that_also_receives_puts() {
    on_runtimes(120, &[2, 3], |rt| {
        let out = run_local(rt, |ctx| {
            let (me, p) = (ctx.pid(), ctx.nprocs());
            let a = ctx.coarray_from(vec![me as u64; 2]);
            // Send my element 0 to the next processor's element 1: the read
            // happens before any put lands.
            ctx.put_from((me + 1) % p, &a, 1, &a, ..1);
            ctx.put((me + 1) % p, &a, 0, &[100 + me as u64]);
            ctx.sync();
            ctx.local(&a).to_vec()
        });
        let p = rt.nprocs();
        verify(rt, out, |pid, local| {
            let prev = (pid + p - 1) % p;
            *local == vec![100 + prev as u64, prev as u64]
        });
    });
}

#[test]
fn results_and_statistics_are_deterministic() {
    let program = |ctx: &mut bsp::Ctx| {
        let q = ctx.queue::<u64>();
        for step in 0..3u64 {
            for t in 0..ctx.nprocs() {
                for k in 0..(ctx.pid() + t + step as usize) % 4 {
                    ctx.send(t, &q, &(k as u64 * step));
                }
            }
            ctx.sync();
        }
        (ctx.receive_with_source(&q), ctx.stats())
    };
    let first = Runtime::threads(5).run(program).unwrap();
    for _ in 0..3 {
        let again = Runtime::threads(5).run(program).unwrap();
        for (a, b) in first.iter().zip(&again) {
            assert_eq!(a.0, b.0);
            for (x, y) in a.1.supersteps.iter().zip(&b.1.supersteps) {
                assert_eq!(
                    (
                        &x.sent_bytes,
                        &x.recv_bytes,
                        &x.sent_records,
                        &x.recv_records
                    ),
                    (
                        &y.sent_bytes,
                        &y.recv_bytes,
                        &y.sent_records,
                        &y.recv_records
                    )
                );
                assert_eq!(
                    (&x.first_block_bytes, &x.second_block_bytes),
                    (&y.first_block_bytes, &y.second_block_bytes)
                );
            }
        }
    }
}

/// The statistics within a small memory budget: the most recent
/// supersteps, each with its own figures and label (the same as a run that
/// keeps them all reports, times aside), and the count of those dropped.
#[test]
fn statistics_keep_the_latest_supersteps_within_their_budget() {
    const STEPS: usize = 200;
    // In superstep s, processor q puts (q + s) mod 3 times to the next.
    let program = |ctx: &mut bsp::Ctx| {
        let (me, p) = (ctx.pid(), ctx.nprocs());
        let a = ctx.coarray::<u64>(2);
        for s in 0..STEPS {
            ctx.label(format!("step {s}"));
            for k in 0..(me + s) % 3 {
                ctx.put((me + 1) % p, &a, k, &[s as u64]);
            }
            ctx.sync();
        }
        ctx.stats()
    };
    let untimed = |steps: &[SuperstepStats]| -> Vec<SuperstepStats> {
        let mut steps = steps.to_vec();
        for s in &mut steps {
            (s.work_seconds, s.sync_seconds) = (Vec::new(), Vec::new());
        }
        steps
    };
    on_runtimes(120, &[2, 5], move |rt| {
        // 16 KiB keep the rows of 10 (p = 5) to 28 (p = 2) exchanges; the
        // default budget keeps every superstep of this run.
        let all = run_local(rt, program);
        let kept = run_local(&rt.clone().with_stats_memory(16 << 10), program);
        let p = rt.nprocs();
        for ((pid, all), (_, kept)) in all.iter().zip(&kept) {
            let at = format!("{}, processor {pid}", describe(rt));
            // Superstep 199's figures come with the end of the run.
            assert_eq!(
                (all.dropped_supersteps, all.supersteps.len()),
                (0, STEPS - 1)
            );
            let dropped = kept.dropped_supersteps;
            assert!(dropped > 0, "{at}: nothing dropped");
            assert_eq!(dropped + kept.supersteps.len(), STEPS - 1, "{at}");
            assert_eq!(
                untimed(&kept.supersteps),
                untimed(&all.supersteps[dropped..]),
                "{at}"
            );
            for (s, step) in kept.supersteps.iter().zip(dropped..) {
                assert_eq!(s.superstep, step, "{at}");
                assert_eq!(s.label, Some(format!("step {step}")), "{at}");
                let puts: Vec<u64> = (0..p).map(|q| ((q + step) % 3) as u64).collect();
                assert_eq!(s.sent_records, puts, "{at}: superstep {step}");
            }
        }
    });
}

#[test]
fn two_hundred_fifty_six_processors_on_two_cores() {
    watchdog(120, || {
        let out = Runtime::threads(256)
            .run(|ctx| {
                let q = ctx.queue::<u32>();
                for _ in 0..20 {
                    ctx.sync();
                }
                let p = ctx.nprocs();
                ctx.send((ctx.pid() + 1) % p, &q, &(ctx.pid() as u32));
                ctx.sync();
                ctx.receive(&q)
            })
            .unwrap();
        for (pid, got) in out.iter().enumerate() {
            assert_eq!(got, &vec![((pid + 255) % 256) as u32]);
        }
    });
}

/// A large coarray made by `coarray` (under MPI on one node, memory that
/// the senders write straight into) behaves as any other: puts and
/// `put_from` land at the sync; `replace_local` hands back the old part,
/// with the same length (swapped in place) and with another; `release`
/// hands back the last part; `local_pair_mut` reads one while writing
/// another.
#[test]
fn large_coarrays_take_puts_replacements_and_releases() {
    const N: usize = 1 << 14; // 128 KiB of u64
    let word = |src: usize, step: u64, i: usize| (src as u64) << 40 | step << 32 | i as u64;
    on_runtimes(120, &[1, 2, 3], move |rt| {
        let out = run_local(rt, move |ctx| {
            let (me, p) = (ctx.pid(), ctx.nprocs());
            let (next, prev) = ((me + 1) % p, (me + p - 1) % p);
            let a = ctx.coarray::<u64>(N);
            let b = ctx.coarray::<u64>(N);
            let mut ok = ctx.local(&a).iter().all(|&x| x == 0);
            // Step 1: a put of the whole part, and a put_from of half.
            let mine: Vec<u64> = (0..N).map(|i| word(me, 1, i)).collect();
            ctx.put(next, &a, 0, &mine);
            ctx.local_mut(&b).copy_from_slice(&mine);
            ctx.put_from(next, &b, N / 2, &b, ..N / 2);
            ctx.sync();
            let want = |step, at: usize| word(prev, step, at);
            ok &= ctx
                .local(&a)
                .iter()
                .enumerate()
                .all(|(i, &x)| x == want(1, i));
            ok &= ctx.local(&b)[N / 2..]
                .iter()
                .enumerate()
                .all(|(i, &x)| x == want(1, i));
            // Step 2: swapped for a vector of the same length, then written.
            let fresh: Vec<u64> = (0..N).map(|i| i as u64).collect();
            let old = ctx.replace_local(&a, fresh);
            ok &= old.iter().enumerate().all(|(i, &x)| x == want(1, i));
            ok &= ctx
                .local(&a)
                .iter()
                .enumerate()
                .all(|(i, &x)| x == i as u64);
            let mine: Vec<u64> = (0..N / 4).map(|i| word(me, 2, i)).collect();
            ctx.put(next, &a, N / 2, &mine);
            ctx.sync();
            let (from, to) = ctx.local_pair_mut(&a, &b);
            to.copy_from_slice(from);
            ok &= ctx.local(&b).iter().enumerate().all(|(i, &x)| match i {
                _ if (N / 2..N / 2 + N / 4).contains(&i) => x == want(2, i - N / 2),
                _ => x == i as u64,
            });
            // Step 3: replaced by a shorter vector, which takes puts.
            let before = ctx.replace_local(&a, vec![0; 8]);
            ok &= before == ctx.local(&b);
            ctx.put(next, &a, 0, &[word(me, 3, 0); 8]);
            ctx.sync();
            ok &= ctx.local(&a) == [want(3, 0); 8];
            let last = ctx.release(b);
            ok &= last.len() == N && last[N / 2] == want(2, 0);
            ctx.sync();
            ok
        });
        verify(rt, out, |_, ok| *ok);
    });
}
