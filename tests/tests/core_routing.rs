//! Property tests of delivery: random h-relations of puts, gets and
//! messages, on both routers, against a sequential oracle; and the
//! two-phase router's block-size bounds, read from the statistics. Under
//! `mpirun` (built with `--features mpi`) the same bodies run on the MPI
//! world, whose p is fixed by `-np`.

mod support;

use bsp::{Cost, Ctx, Machine, Router, Runtime, Stats};
use proptest::prelude::*;
use support::{agree, describe, on_runtimes, proptest_config, run_local, runtimes, watchdog, Rng};

/// How destinations and sizes are drawn.
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// Every processor sends to every processor, sizes uniform in 0..max.
    Uniform,
    /// Everything goes to processor 0.
    AllToOne,
    /// Random destinations, sizes heavily skewed (mostly 0 or tiny, a few large).
    Skewed,
}

/// One request of a processor during the superstep.
#[derive(Clone, Debug)]
enum Op {
    Put {
        dst: usize,
        offset: usize,
        data: Vec<u8>,
    },
    Get {
        src: usize,
        offset: usize,
        len: usize,
    },
    Send {
        dst: usize,
        msg: Vec<u8>,
    },
    SendWord {
        dst: usize,
        word: u64,
    },
}

const LOCAL: usize = 64;

fn plan(p: usize, shape: Shape, seed: u64, max_len: usize) -> Vec<Vec<Op>> {
    let mut rng = Rng(seed);
    (0..p)
        .map(|me| {
            let ops = rng.below(12);
            (0..ops)
                .map(|_| {
                    let dst = match shape {
                        Shape::AllToOne => 0,
                        Shape::Uniform | Shape::Skewed => rng.below(p),
                    };
                    let len = match shape {
                        Shape::Skewed if rng.below(8) == 0 => rng.below(max_len * 8 + 1),
                        Shape::Skewed => rng.below(3),
                        _ => rng.below(max_len + 1),
                    };
                    match rng.below(4) {
                        0 => {
                            let len = len.min(LOCAL);
                            let offset = rng.below(LOCAL - len + 1);
                            let data = (0..len)
                                .map(|k| (me * 31 + k + rng.below(7)) as u8)
                                .collect();
                            Op::Put { dst, offset, data }
                        }
                        1 => {
                            let len = len.min(LOCAL);
                            Op::Get {
                                src: dst,
                                offset: rng.below(LOCAL - len + 1),
                                len,
                            }
                        }
                        2 => Op::Send {
                            dst,
                            msg: (0..len).map(|k| (k ^ me) as u8).collect(),
                        },
                        _ => Op::SendWord {
                            dst,
                            word: rng.next_u64(),
                        },
                    }
                })
                .collect()
        })
        .collect()
}

/// What one processor ends with.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    local: Vec<u8>,
    gets: Vec<Vec<u8>>,
    messages: Vec<(usize, Vec<u8>)>,
    words: Vec<(usize, u64)>,
}

fn initial(pid: usize) -> Vec<u8> {
    (0..LOCAL).map(|k| (pid * 7 + k) as u8).collect()
}

/// The sequential oracle.
fn oracle(plan: &[Vec<Op>]) -> Vec<Outcome> {
    let p = plan.len();
    let before: Vec<Vec<u8>> = (0..p).map(initial).collect();
    let mut out: Vec<Outcome> = (0..p)
        .map(|me| Outcome {
            local: before[me].clone(),
            gets: Vec::new(),
            messages: Vec::new(),
            words: Vec::new(),
        })
        .collect();
    for (me, ops) in plan.iter().enumerate() {
        for op in ops {
            match op {
                Op::Get { src, offset, len } => out[me]
                    .gets
                    .push(before[*src][*offset..offset + len].to_vec()),
                Op::Put { dst, offset, data } => {
                    out[*dst].local[*offset..offset + data.len()].copy_from_slice(data)
                }
                Op::Send { dst, msg } => out[*dst].messages.push((me, msg.clone())),
                Op::SendWord { dst, word } => out[*dst].words.push((me, *word)),
            }
        }
    }
    out
}

fn execute(ctx: &mut Ctx, plan: &[Vec<Op>]) -> (Outcome, Stats) {
    let me = ctx.pid();
    let a = ctx.coarray_from(initial(me));
    let q = ctx.serde_queue::<Vec<u8>>();
    let w = ctx.queue::<u64>();
    ctx.sync(); // an empty superstep first
    let mut handles = Vec::new();
    for op in &plan[me] {
        match op {
            Op::Put { dst, offset, data } => ctx.put(*dst, &a, *offset, data),
            Op::Get { src, offset, len } => handles.push(ctx.get(*src, &a, *offset, *len)),
            Op::Send { dst, msg } => ctx.send(*dst, &q, msg),
            Op::SendWord { dst, word } => ctx.send(*dst, &w, word),
        }
    }
    ctx.sync();
    let gets = handles.into_iter().map(|h| ctx.take(h)).collect();
    let outcome = Outcome {
        local: ctx.local(&a).to_vec(),
        gets,
        messages: ctx.receive_with_source(&q),
        words: ctx.receive_with_source(&w),
    };
    ctx.sync(); // completes the statistics of the routed superstep
    (outcome, ctx.stats())
}

/// Checks the bounds of Bader, Helman and JáJá on every two-phase route of
/// every superstep, route by route (a sync with gets routes twice), in the
/// unit the router deals in (words of 8 bytes of the routed streams):
/// stage-1 block ≤ s/p + (p−1)/2 with s the words the processor dealt,
/// stage-2 block ≤ h/p + (p−1)/2 with h the words it received through the
/// intermediates. Every route also conserves words: what was dealt is what
/// arrived, and a block's words cover its bytes.
fn check_bounds(stats: &Stats) {
    let p = stats.nprocs as f64;
    let slack = (p - 1.0) / 2.0;
    for s in &stats.supersteps {
        for (k, route) in s.routes.iter().enumerate() {
            assert_eq!(
                route.dealt_words.iter().sum::<u64>(),
                route.through_words.iter().sum::<u64>(),
                "superstep {}, route {k}: words dealt and received differ",
                s.superstep
            );
            for q in 0..stats.nprocs {
                for (bytes, words) in [
                    (route.first_block_bytes[q], route.first_block_words[q]),
                    (route.second_block_bytes[q], route.second_block_words[q]),
                ] {
                    assert!(
                        bytes <= 8 * words && words <= bytes,
                        "{bytes} bytes in {words} words"
                    );
                }
            }
            if route.router == Router::Transportation {
                // Ranka, Shankar and Alsabti: stage-1 block ≤ ⌈s/p⌉,
                // stage-2 block ≤ h/p + (p − 1).
                let p = stats.nprocs as u64;
                for q in 0..stats.nprocs {
                    let (first, second) = (route.first_block_words[q], route.second_block_words[q]);
                    let (dealt, through) = (route.dealt_words[q], route.through_words[q]);
                    assert!(
                        first <= dealt.div_ceil(p),
                        "superstep {}, route {k}: transportation stage-1 block {first} of processor {q} exceeds ⌈s/p⌉ with s = {dealt}",
                        s.superstep
                    );
                    assert!(
                        p * second <= through + p * (p - 1),
                        "superstep {}, route {k}: transportation stage-2 block {second} at processor {q} exceeds h/p + p - 1 with h = {through}",
                        s.superstep
                    );
                }
                assert!(route.within_bounds());
                continue;
            }
            if route.router != Router::TwoPhase {
                continue;
            }
            for q in 0..stats.nprocs {
                let first = route.first_block_words[q] as f64;
                let second = route.second_block_words[q] as f64;
                let (dealt, through) = (route.dealt_words[q], route.through_words[q]);
                assert!(
                    first <= dealt as f64 / p + slack,
                    "superstep {}, route {k}: stage-1 block {first} of processor {q} exceeds s/p + (p-1)/2 with s = {dealt}",
                    s.superstep
                );
                assert!(
                    second <= through as f64 / p + slack,
                    "superstep {}, route {k}: stage-2 block {second} at processor {q} exceeds h/p + (p-1)/2 with h = {through}",
                    s.superstep
                );
            }
            assert!(route.within_bounds());
        }
    }
}

/// Runs `plan` on `rt`, checks every visible processor against the oracle
/// and the statistics against the bounds; returns one processor's statistics.
fn check(rt: &Runtime, plan: &[Vec<Op>]) -> Stats {
    let expected = oracle(plan);
    let results = run_local(rt, |ctx| execute(ctx, plan));
    agree(rt, || {
        for (pid, (got, _)) in &results {
            assert!(
                *got == expected[*pid],
                "{}: processor {pid} got {got:?}, expected {:?}",
                describe(rt),
                expected[*pid]
            );
        }
    });
    // Every processor holds the same statistics.
    let stats: Vec<&Stats> = results.iter().map(|r| &r.1 .1).collect();
    for s in &stats[1..] {
        assert_eq!(s.supersteps.len(), stats[0].supersteps.len());
        for (a, b) in s.supersteps.iter().zip(&stats[0].supersteps) {
            assert_eq!(
                (a.superstep, &a.sent_bytes, &a.recv_bytes),
                (b.superstep, &b.sent_bytes, &b.recv_bytes)
            );
        }
    }
    check_bounds(stats[0]);
    stats[0].clone()
}

/// A machine on which the direct router is cheaper below about 850 bytes
/// of h and the two-phase router above: the automatic router then takes
/// both within the sizes of the random plans, whatever this machine
/// measures.
fn crossover() -> Machine {
    Machine::new(
        Cost {
            l_seconds: 2e-6,
            g_seconds_per_byte: 1e-9,
        },
        Cost {
            l_seconds: 1e-6,
            g_seconds_per_byte: 2e-9,
        },
    )
}

/// Runs a random plan on both routers and on the automatic one (threads
/// with p processors, or the MPI world) and checks that they carry the same
/// traffic, and that the automatic router took, in every superstep, the
/// router the cost model picks for the h every processor could estimate.
fn check_both(p: usize, shape: Shape, seed: u64, max_len: usize) {
    let runtimes = runtimes(&[p]);
    for pair in runtimes.chunks(2) {
        let plan = plan(pair[0].nprocs(), shape, seed, max_len);
        let auto = pair[0]
            .clone()
            .with_router(Router::Auto)
            .with_machine(crossover());
        let a = check(&pair[0], &plan);
        let b = check(&pair[1], &plan);
        let c = check(&auto, &plan);
        // The transportation primitive: the same deliveries (`check`
        // compares them with the oracle) and the same traffic.
        let t = check(&pair[0].clone().with_router(Router::Transportation), &plan);
        for (x, y) in a.supersteps.iter().zip(&t.supersteps) {
            assert_eq!(
                (&x.sent_bytes, &x.recv_bytes, &x.recv_records),
                (&y.sent_bytes, &y.recv_bytes, &y.recv_records)
            );
            assert!(y.routes.iter().all(|r| r.router == Router::Transportation));
        }
        for (x, (y, z)) in a
            .supersteps
            .iter()
            .zip(b.supersteps.iter().zip(&c.supersteps))
        {
            assert_eq!(x.sent_bytes, y.sent_bytes);
            assert_eq!(x.recv_bytes, y.recv_bytes);
            assert_eq!(x.recv_records, y.recv_records);
            assert_eq!(
                (&x.sent_bytes, &x.recv_bytes),
                (&z.sent_bytes, &z.recv_bytes)
            );
            assert_eq!(x.requested_bytes, z.requested_bytes);
            assert_eq!(x.known_h_bytes, z.known_h_bytes);
            // Before routing, every processor knows what each requested. Up
            // to 64 processors that is the whole matrix, and h is exact: the
            // requests' route moved between h/8 and h words through some
            // processor. Replies go by the router chosen for the requests.
            let h = z.known_h_bytes;
            if let Some(route) = z.routes.first() {
                let words = (0..route.dealt_words.len())
                    .map(|q| route.dealt_words[q].max(route.through_words[q]))
                    .max()
                    .unwrap_or(0);
                assert!(words <= h && h <= 8 * words, "h = {h} bytes, {words} words");
            }
            let (expected, predicted) = crossover().choose(h);
            for route in &z.routes {
                assert_eq!(route.router, expected, "superstep {}, h = {h}", z.superstep);
            }
            if !z.routes.is_empty() {
                assert_eq!(z.predicted_seconds, Some(predicted));
            }
        }
    }
}

fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        Just(Shape::Uniform),
        Just(Shape::AllToOne),
        Just(Shape::Skewed)
    ]
}

proptest! {
    #![proptest_config(proptest_config(48))]

    #[test]
    fn random_h_relations_match_the_oracle(p in 1usize..=16, shape in shape(), seed: u64, max_len in 0usize..200) {
        watchdog(60, move || check_both(p, shape, seed, max_len));
    }
}

proptest! {
    #![proptest_config(proptest_config(3))]

    #[test]
    fn sixty_four_processors(shape in shape(), seed: u64) {
        watchdog(120, move || check_both(64, shape, seed, 40));
    }
}

/// Beyond 64 processors the sync rows carry no counts, so the
/// transportation primitive's blocks carry headers: the same deliveries.
#[test]
fn transportation_with_headers_beyond_sixty_four_processors() {
    if support::under_mpi() {
        return;
    }
    watchdog(120, || {
        for (shape, seed) in [
            (Shape::Uniform, 1),
            (Shape::AllToOne, 2),
            (Shape::Skewed, 3),
        ] {
            let plan = plan(80, shape, seed, 60);
            for router in [Router::TwoPhase, Router::Transportation] {
                check(&Runtime::threads(80).with_router(router), &plan);
            }
        }
    });
}

/// Large messages, all to one processor: the bound of the second stage is
/// the tight one here.
#[test]
fn all_to_one_large_messages_respect_the_bounds() {
    watchdog(60, || {
        for p in [2, 3, 5, 8] {
            let plan: Vec<Vec<Op>> = (0..p)
                .map(|me| {
                    vec![Op::Send {
                        dst: 0,
                        msg: vec![me as u8; 10_000 + 37 * me],
                    }]
                })
                .collect();
            for router in [Router::TwoPhase, Router::Transportation] {
                let stats = check(&Runtime::threads(p).with_router(router), &plan);
                let step = &stats.supersteps[1];
                assert!(step.second_block_bytes[0] > 0);
                assert_eq!(step.h_bytes(), step.recv_bytes[0]);
            }
        }
    });
}

/// The automatic router takes the direct router for a small h-relation and
/// the two-phase router for a large one on the crossover machine, with the
/// same deliveries as both (checked against the oracle by `check`).
#[test]
fn auto_takes_each_router_where_the_model_says() {
    watchdog(60, || {
        for rt in runtimes(&[4]).into_iter().step_by(2) {
            let auto = rt.with_router(Router::Auto).with_machine(crossover());
            let p = auto.nprocs();
            if p < 2 {
                continue; // one processor sends only to itself: nothing is routed
            }
            let sends = |len: usize| -> Vec<Vec<Op>> {
                (0..p)
                    .map(|me| {
                        vec![Op::Send {
                            dst: (me + 1) % p,
                            msg: vec![me as u8; len],
                        }]
                    })
                    .collect()
            };
            for (len, expected) in [(100, Router::Direct), (4000, Router::TwoPhase)] {
                let stats = check(&auto, &sends(len));
                let routed: Vec<Router> = stats.supersteps[1]
                    .routes
                    .iter()
                    .map(|r| r.router)
                    .collect();
                assert_eq!(routed, vec![expected], "{len}-byte messages");
            }
        }
    });
}

/// On one processor every stream goes to itself, so the automatic router
/// takes the direct router (one copy) whatever the model predicts: here a
/// machine on which two phases cost less at every h.
#[test]
fn auto_routes_directly_on_one_processor() {
    let two_phase_cheaper = Machine::new(
        Cost {
            l_seconds: 1e-6,
            g_seconds_per_byte: 1e-9,
        },
        Cost {
            l_seconds: 2e-6,
            g_seconds_per_byte: 2e-9,
        },
    );
    watchdog(60, move || {
        for rt in runtimes(&[1]) {
            let auto = rt.with_router(Router::Auto).with_machine(two_phase_cheaper);
            if auto.nprocs() != 1 {
                continue; // an MPI world of several ranks
            }
            for len in [100, 4000] {
                let ops = vec![vec![Op::Send {
                    dst: 0,
                    msg: vec![7; len],
                }]];
                let stats = check(&auto, &ops);
                let routed: Vec<Router> = stats.supersteps[1]
                    .routes
                    .iter()
                    .map(|r| r.router)
                    .collect();
                assert_eq!(routed, vec![Router::Direct], "{len}-byte message");
            }
        }
    });
}

/// Bytes of each large put in `large_puts_land_as_in_order_delivery`: on
/// MPI, the direct router's receivers place records this large straight
/// into the coarray (`BSP_MPI_RECEIVE=auto`).
const CHUNK: usize = 64 << 10;

fn chunk_byte(src: usize, dst: usize, step: usize, k: usize) -> u8 {
    (src * 31 + dst * 7 + step * 13 + k) as u8
}

/// What `large_puts` ends with on one processor.
#[derive(Debug, PartialEq, Eq)]
struct LargePuts {
    /// Coarray `a` after each of the first three supersteps.
    after: Vec<Vec<u8>>,
    /// The messages of the third.
    messages: Vec<(usize, u64)>,
    /// Both coarrays after the fourth.
    a: Vec<u8>,
    b: Vec<u8>,
}

/// Four supersteps of 64 KiB puts from every processor to every processor:
/// disjoint; with one overlapping put; beside a message; from a lent
/// coarray while another processor puts into it.
fn large_puts(ctx: &mut Ctx) -> LargePuts {
    let (p, me) = (ctx.nprocs(), ctx.pid());
    let a = ctx.coarray::<u8>(p * CHUNK);
    let b = ctx.coarray_from(
        (0..CHUNK)
            .map(|k| chunk_byte(me, me, 9, k))
            .collect::<Vec<u8>>(),
    );
    let q = ctx.queue::<u64>();
    let chunk = |dst: usize, step: usize| -> Vec<u8> {
        (0..CHUNK).map(|k| chunk_byte(me, dst, step, k)).collect()
    };
    let mut after = Vec::new();
    for step in 0..3 {
        for dst in 0..p {
            ctx.put(dst, &a, me * CHUNK, &chunk(dst, step));
        }
        // Overlapping puts: the last processor's lands last.
        if step == 1 && me == p - 1 {
            ctx.put(0, &a, 10, &[0xab; 100]);
        }
        if step == 2 && me == 0 {
            ctx.send(p - 1, &q, &77);
        }
        ctx.sync();
        after.push(ctx.local(&a).to_vec());
    }
    let messages = ctx.receive_with_source(&q);
    for dst in 0..p {
        ctx.put_from(dst, &a, me * CHUNK, &b, ..CHUNK);
    }
    if me == 0 {
        for dst in 0..p {
            ctx.put(dst, &b, 100, &chunk(dst, 3)[..8192]);
        }
    }
    ctx.sync();
    LargePuts {
        after,
        messages,
        a: ctx.local(&a).to_vec(),
        b: ctx.local(&b).to_vec(),
    }
}

/// [`large_puts`] done in order, one put at a time.
fn large_puts_oracle(p: usize, me: usize) -> LargePuts {
    let from_all = |step: usize| -> Vec<u8> {
        (0..p)
            .flat_map(|src| (0..CHUNK).map(move |k| chunk_byte(src, me, step, k)))
            .collect()
    };
    let mut after: Vec<Vec<u8>> = (0..3).map(from_all).collect();
    if me == 0 {
        after[1][10..110].fill(0xab);
    }
    let messages = if me == p - 1 {
        vec![(0, 77)]
    } else {
        Vec::new()
    };
    let a = (0..p)
        .flat_map(|src| (0..CHUNK).map(move |k| chunk_byte(src, src, 9, k)))
        .collect();
    let mut b: Vec<u8> = (0..CHUNK).map(|k| chunk_byte(me, me, 9, k)).collect();
    for k in 0..8192 {
        b[100 + k] = chunk_byte(0, me, 3, k);
    }
    LargePuts {
        after,
        messages,
        a,
        b,
    }
}

/// Large puts (where the MPI transport's direct receivers place payloads
/// straight into the coarray, with no copy) land exactly as puts applied
/// in order: disjoint ones, overlapping ones (the later sender wins), ones
/// beside a message, ones from and into a lent coarray.
#[test]
fn large_puts_land_as_in_order_delivery() {
    on_runtimes(120, &[2, 4], |rt| {
        support::check(rt, large_puts, large_puts_oracle);
    });
}
