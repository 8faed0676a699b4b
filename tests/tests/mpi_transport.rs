//! Transport-level delivery tests, run through the shared harness: on
//! threads with several p under `cargo test`, and on the MPI world when the
//! binary runs under `mpirun` (see `.ci/mpi-tests.sh`). Sizes are chosen to
//! cover the MPI transport's paths: empty exchanges, blocks that fit the
//! eager slot, blocks that overflow it, and slot sizes that shrink and grow
//! between supersteps.

mod support;

use bsp::{Ctx, Router};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;

/// splitmix64: the deterministic source of every size and byte below.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

const FNV0: u64 = 0xcbf2_9ce4_8422_2325;

/// The bytes of message `k` from `src` to `dst` in superstep `step`.
fn message(seed: u64, step: usize, src: usize, dst: usize, k: usize, len: usize) -> Vec<u8> {
    let base =
        mix(seed ^ mix((step as u64) << 40 ^ (src as u64) << 20 ^ (dst as u64) << 8) ^ k as u64);
    (0..len)
        .map(|i| (mix(base ^ (i as u64 / 8)) >> (8 * (i % 8))) as u8)
        .collect()
}

/// A traffic pattern: how many messages of which sizes `src` sends `dst`.
#[derive(Clone, Copy, Debug)]
struct Pattern {
    seed: u64,
    max_msgs: usize,
    max_len: usize,
    /// Send only to processor 0 (a hot spot).
    all_to_zero: bool,
}

impl Pattern {
    fn lens(&self, step: usize, src: usize, dst: usize) -> Vec<usize> {
        if self.all_to_zero && dst != 0 {
            return Vec::new();
        }
        let r = mix(self.seed ^ mix(((step as u64) << 32) ^ ((src as u64) << 16) ^ dst as u64));
        let n = (r % (self.max_msgs as u64 + 1)) as usize;
        (0..n)
            .map(|k| (mix(r ^ k as u64) % (self.max_len as u64 + 1)) as usize)
            .collect()
    }
}

/// Sends the pattern's messages on a byte queue for `steps` supersteps and
/// returns the hash of everything received, in delivery order.
fn exchange(ctx: &mut Ctx, pat: &Pattern, steps: usize) -> u64 {
    let (me, p) = (ctx.pid(), ctx.nprocs());
    let q = ctx.queue::<u8>();
    let mut h = FNV0;
    for step in 0..steps {
        for dst in 0..p {
            for (k, len) in pat.lens(step, me, dst).into_iter().enumerate() {
                for b in message(pat.seed, step, me, dst, k, len) {
                    ctx.send(dst, &q, &b);
                }
            }
        }
        ctx.sync();
        for (src, b) in ctx.receive_with_source(&q) {
            h = fnv(h, &[src as u8, b]);
        }
    }
    h
}

/// What processor `me` must receive from [`exchange`].
fn exchange_oracle(pat: &Pattern, steps: usize, p: usize, me: usize) -> u64 {
    let mut h = FNV0;
    for step in 0..steps {
        for src in 0..p {
            for (k, len) in pat.lens(step, src, me).into_iter().enumerate() {
                for b in message(pat.seed, step, src, me, k, len) {
                    h = fnv(h, &[src as u8, b]);
                }
            }
        }
    }
    h
}

/// Puts of whole byte blocks of the given sizes into every processor, one
/// superstep per size, and returns the hash of every block received.
fn blocks(ctx: &mut Ctx, sizes: &[usize]) -> u64 {
    let (me, p) = (ctx.pid(), ctx.nprocs());
    let largest = sizes.iter().copied().max().unwrap_or(0);
    let a = ctx.coarray::<u8>(p * largest);
    let mut h = FNV0;
    for (step, &len) in sizes.iter().enumerate() {
        for dst in 0..p {
            ctx.put_vec(dst, &a, me * len, message(7, step, me, dst, 0, len));
        }
        ctx.sync();
        h = fnv(h, &ctx.local(&a)[..p * len]);
    }
    h
}

fn blocks_oracle(sizes: &[usize], p: usize, me: usize) -> u64 {
    let mut h = FNV0;
    for (step, &len) in sizes.iter().enumerate() {
        for src in 0..p {
            h = fnv(h, &message(7, step, src, me, 0, len));
        }
    }
    h
}

#[test]
fn every_pair_puts_gets_and_sends() {
    for rt in support::runtimes(&[1, 2, 3, 4, 7]) {
        support::check(
            &rt,
            |ctx| {
                let (me, p) = (ctx.pid(), ctx.nprocs());
                let a = ctx.coarray_from(vec![me as u64; p]);
                let q = ctx.serde_queue::<String>();
                let next = (me + 1) % p;
                let got = ctx.get(next, &a, 0, p);
                for t in 0..p {
                    ctx.put(t, &a, me, &[(me * 1000 + t) as u64]);
                    ctx.send(t, &q, &format!("{me}->{t}"));
                }
                ctx.sync();
                (ctx.local(&a).to_vec(), ctx.take(got), ctx.receive(&q))
            },
            |p, me| {
                (
                    (0..p).map(|s| (s * 1000 + me) as u64).collect(),
                    vec![((me + 1) % p) as u64; p],
                    (0..p).map(|s| format!("{s}->{me}")).collect(),
                )
            },
        );
    }
}

#[test]
fn empty_supersteps_and_empty_messages() {
    for rt in support::runtimes(&[1, 2, 3]) {
        support::check(
            &rt,
            |ctx| {
                let q = ctx.queue::<[u8; 0]>();
                ctx.sync();
                ctx.sync();
                let p = ctx.nprocs();
                for t in 0..p {
                    ctx.send(t, &q, &[]);
                }
                ctx.sync();
                (ctx.superstep(), ctx.receive(&q).len())
            },
            |p, _| (3, p),
        );
    }
}

#[test]
fn hot_spot_and_large_blocks() {
    let hot = Pattern {
        seed: 3,
        max_msgs: 3,
        max_len: 40_000,
        all_to_zero: true,
    };
    for rt in support::runtimes(&[1, 2, 3, 4]) {
        support::check(
            &rt,
            |ctx| exchange(ctx, &hot, 2),
            |p, me| exchange_oracle(&hot, 2, p, me),
        );
    }
}

/// Block sizes that make the eager slot shrink, overflow and grow again.
#[test]
fn block_sizes_that_change_between_supersteps() {
    let sizes = [0, 10, 1 << 20, 3, 0, 700_000, 700_001, 1, 2 << 20, 64];
    for rt in support::runtimes(&[1, 2, 3]) {
        support::check(
            &rt,
            |ctx| blocks(ctx, &sizes),
            |p, me| blocks_oracle(&sizes, p, me),
        );
    }
}

#[test]
fn random_h_relations_match_the_oracle() {
    let config = support::proptest_config(if support::under_mpi() { 24 } else { 12 });
    let mut runner = TestRunner::new(config);
    let strategy = (
        any::<u64>(),
        0usize..4,
        prop_oneof![Just(0usize), 1usize..64, 1usize..5000],
        any::<bool>(),
    );
    runner
        .run(&strategy, |(seed, max_msgs, max_len, all_to_zero)| {
            let pat = Pattern {
                seed,
                max_msgs,
                max_len,
                all_to_zero,
            };
            for rt in support::runtimes(&[1, 2, 3, 5]) {
                support::check(
                    &rt,
                    |ctx| exchange(ctx, &pat, 3),
                    |p, me| exchange_oracle(&pat, 3, p, me),
                );
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn routers_agree_on_statistics() {
    // Every statistic except times is transport-independent; the two
    // routers differ only in block sizes and router headers.
    for rt in support::runtimes(&[2, 3]) {
        let direct = rt.router() == Router::Direct;
        support::check(
            &rt,
            |ctx| {
                let pat = Pattern {
                    seed: 11,
                    max_msgs: 3,
                    max_len: 300,
                    all_to_zero: false,
                };
                exchange(ctx, &pat, 2);
                let s = ctx.stats();
                let step = &s.supersteps[0];
                (
                    step.sent_bytes.clone(),
                    step.recv_bytes.clone(),
                    // Two-phase's second stage carries what crosses between
                    // processors: nothing at p = 1 (a stream to self stays local).
                    step.second_block_bytes
                        .iter()
                        .all(|&b| (b == 0) == (direct || ctx.nprocs() == 1)),
                )
            },
            |p, _| {
                let pat = Pattern {
                    seed: 11,
                    max_msgs: 3,
                    max_len: 300,
                    all_to_zero: false,
                };
                // A byte queue sends one 24-byte record header per run of
                // messages, plus one byte per message.
                let sent = (0..p)
                    .map(|s| (0..p).map(|d| record_bytes(&pat.lens(0, s, d))).sum())
                    .collect();
                let recv = (0..p)
                    .map(|d| (0..p).map(|s| record_bytes(&pat.lens(0, s, d))).sum())
                    .collect();
                (sent, recv, true)
            },
        );
    }
}

fn record_bytes(lens: &[usize]) -> u64 {
    let bytes: usize = lens.iter().sum();
    if bytes == 0 {
        0
    } else {
        24 + bytes as u64
    }
}

/// The sizes of the `put_from` pieces processor `src` sends to `dst` in
/// `step` of [`mixed_segments`].
fn mixed_sizes(step: usize, src: usize, dst: usize) -> Vec<usize> {
    let r = mix(((step as u64) << 32) ^ ((src as u64) << 16) ^ dst as u64);
    let pick = [0, 1, 100, (64 << 10) - 1, 64 << 10, 200_000, 3 << 20];
    (0..1 + r as usize % 4)
        .map(|k| pick[(mix(r ^ k as u64) % pick.len() as u64) as usize])
        .collect()
}

/// Room for the pieces from one source in [`mixed_segments`].
const MIXED_MOST: usize = 4 * (3 << 20) + 64;

/// `put_from` pieces of mixed sizes (tiny, just below and above the MPI
/// transport's large-segment threshold of 64 KiB, several MiB) interleaved
/// with small buffered puts and messages, into every processor: the
/// transport sends the large ones in their own messages and the rest
/// inline, and every stream must come back together in order.
fn mixed_segments(ctx: &mut Ctx, steps: usize) -> u64 {
    let (me, p) = (ctx.pid(), ctx.nprocs());
    let (sizes, most) = (mixed_sizes, MIXED_MOST);
    let src = ctx.coarray::<u8>(most * p);
    let dst = ctx.coarray::<u8>(most * p);
    let small = ctx.coarray::<u64>(p * 4);
    let q = ctx.queue::<u64>();
    let mut h = FNV0;
    for step in 0..steps {
        let bytes: Vec<u8> = (0..most * p)
            .map(|i| mix(((step * p + me) as u64) << 40 ^ i as u64) as u8)
            .collect();
        ctx.local_mut(&src).copy_from_slice(&bytes);
        for t in 0..p {
            let mut at = 0;
            for (k, len) in sizes(step, me, t).into_iter().enumerate() {
                let from = t * most + at;
                ctx.put_from(t, &dst, me * most + at, &src, from..from + len);
                ctx.put(t, &small, me * 4 + k, &[(step * 1000 + me * 10 + k) as u64]);
                ctx.send(t, &q, &(len as u64));
                at += len;
            }
        }
        ctx.sync();
        for s in 0..p {
            let len: usize = sizes(step, s, me).iter().sum();
            h = fnv(h, &ctx.local(&dst)[s * most..s * most + len]);
        }
        h = fnv(h, bytemuck::cast_slice(ctx.local(&small)));
        for (s, len) in ctx.receive_with_source(&q) {
            h = fnv(h, &[s as u8, len as u8]);
        }
    }
    h
}

/// What processor `me` must see from [`mixed_segments`], computed the same
/// way but sequentially.
fn mixed_segments_oracle(steps: usize, p: usize, me: usize) -> u64 {
    let (sizes, most) = (mixed_sizes, MIXED_MOST);
    let mut small = vec![0u64; p * 4];
    let mut h = FNV0;
    for step in 0..steps {
        for s in 0..p {
            let len: usize = sizes(step, s, me).iter().sum();
            let bytes: Vec<u8> = (me * most..me * most + len)
                .map(|i| mix(((step * p + s) as u64) << 40 ^ i as u64) as u8)
                .collect();
            h = fnv(h, &bytes);
        }
        for s in 0..p {
            for k in 0..sizes(step, s, me).len() {
                small[s * 4 + k] = (step * 1000 + s * 10 + k) as u64;
            }
        }
        h = fnv(h, bytemuck::cast_slice(&small));
        for s in 0..p {
            for len in sizes(step, s, me) {
                h = fnv(h, &[s as u8, len as u8]);
            }
        }
    }
    h
}

#[test]
fn large_and_small_segments_in_one_stream() {
    for rt in support::runtimes(&[1, 2, 3]) {
        support::check(
            &rt,
            |ctx| mixed_segments(ctx, 3),
            |p, me| mixed_segments_oracle(3, p, me),
        );
    }
}

/// Bytes of the puts of [`placed_in_a_row`]: 36 KiB, or 4 KiB in the
/// superstep of many records, large enough for the MPI transport to
/// place them (4 KiB a record on average, 32 KiB a processor), and odd,
/// so that the payloads end off the word boundaries.
const BIG_PIECE: usize = (36 << 10) + 13;
const SMALL_PIECE: usize = (4 << 10) + 13;

/// The records from every processor to every processor in each
/// superstep of [`placed_in_a_row`], and their size. From the second
/// superstep on, the MPI transport sends the record heads of a placed
/// superstep (direct or two-phase) inside the sync rows, in a slot sized
/// by the superstep before: one record fits a slot sized for one, 3 outgrow
/// it (their heads are exchanged, and the slot grows), 45 records to
/// each processor outgrow the most a slot holds (2 KiB), and the
/// supersteps with a get and a message in them (`step % 5 == 4`) are not
/// placed at all, and clear the slot.
const PLACED_PLAN: [(usize, usize); 12] = [
    (1, BIG_PIECE),
    (1, BIG_PIECE),
    (3, BIG_PIECE),
    (3, BIG_PIECE),
    (2, BIG_PIECE),
    (45, SMALL_PIECE),
    (1, BIG_PIECE),
    (2, BIG_PIECE),
    (2, BIG_PIECE),
    (0, BIG_PIECE),
    (1, BIG_PIECE),
    (1, BIG_PIECE),
];

/// Bytes of the region each processor writes into the others' coarrays.
fn placed_room() -> usize {
    PLACED_PLAN
        .iter()
        .map(|&(r, len)| r * len)
        .max()
        .unwrap_or(0)
}

/// Large puts, half by `put_from` and half by `put_vec`, with empty
/// supersteps and other traffic between; returns the hash of this
/// processor's coarray after each superstep.
fn placed_in_a_row(ctx: &mut Ctx) -> u64 {
    let (me, p) = (ctx.pid(), ctx.nprocs());
    let room = placed_room();
    let target = ctx.coarray::<u8>(p * room);
    let source = ctx.coarray::<u8>(p * room);
    let q = ctx.queue::<u64>();
    let mut h = FNV0;
    for (step, &(records, len)) in PLACED_PLAN.iter().enumerate() {
        for dst in 0..p {
            for k in 0..records {
                let bytes = message(11, step, me, dst, k, len);
                let at = me * room + k * len;
                if k % 2 == 0 {
                    let from = dst * room + k * len;
                    ctx.local_mut(&source)[from..from + len].copy_from_slice(&bytes);
                    ctx.put_from(dst, &target, at, &source, from..from + len);
                } else {
                    ctx.put_vec(dst, &target, at, bytes);
                }
            }
        }
        let ticket = (step % 5 == 4).then(|| {
            ctx.send((me + 1) % p, &q, &(step as u64));
            ctx.get(p - 1 - me, &target, 0, 8)
        });
        ctx.sync();
        h = fnv(h, ctx.local(&target));
        if let Some(ticket) = ticket {
            h = fnv(h, &ctx.take(ticket));
            for (s, v) in ctx.receive_with_source(&q) {
                h = fnv(h, &[s as u8, v as u8]);
            }
        }
        if step % 3 == 1 {
            ctx.sync();
        }
    }
    h
}

/// What processor `me` must see from [`placed_in_a_row`].
fn placed_in_a_row_oracle(p: usize, me: usize) -> u64 {
    let room = placed_room();
    let mut target = vec![0u8; p * room];
    let mut h = FNV0;
    for (step, &(records, len)) in PLACED_PLAN.iter().enumerate() {
        // The get reads the first 8 bytes of processor p - 1 - me's
        // coarray before this superstep's puts: processor 0's first
        // record of the last superstep that had any.
        let got = (0..step)
            .rev()
            .find(|&s| PLACED_PLAN[s].0 > 0)
            .map_or(vec![0; 8], |s| {
                message(11, s, 0, p - 1 - me, 0, PLACED_PLAN[s].1)[..8].to_vec()
            });
        for src in 0..p {
            for k in 0..records {
                let at = src * room + k * len;
                target[at..at + len].copy_from_slice(&message(11, step, src, me, k, len));
            }
        }
        h = fnv(h, &target);
        if step % 5 == 4 {
            h = fnv(h, &got);
            let from = (me + p - 1) % p;
            h = fnv(h, &[from as u8, step as u8]);
        }
    }
    h
}

#[test]
fn placed_supersteps_in_a_row_carry_their_heads_in_the_rows() {
    for router in [Router::Direct, Router::TwoPhase] {
        for rt in support::runtimes_with(&[1, 2, 3, 4], router) {
            support::check(&rt, placed_in_a_row, placed_in_a_row_oracle);
        }
    }
}

/// Bytes each processor puts into each other's coarray in
/// [`repeats_across_moves`]: one record, large enough to be placed.
const REPEAT_LEN: usize = 40 << 10;

/// What [`repeats_across_moves`] does to its target coarray after the
/// sync of each superstep: the same puts every superstep, so that each
/// placed superstep may repeat the one before it, while the receivers'
/// memory changes under some of them.
#[derive(Clone, Copy, PartialEq)]
enum Move {
    Nothing,
    /// `replace_local` with a part of the same length (a mapped part
    /// keeps its place and swaps contents; a heap part moves).
    SameLength,
    /// `replace_local` with a longer part (it moves, and leaves mapped
    /// memory for the heap).
    Longer,
    /// A coarray registered and released (no part moves).
    Register,
    /// The target is lent by a `put_from` of the next superstep, so it
    /// cannot take placed payloads in that superstep.
    Lend,
    /// `n` syncs with nothing to send: a few keep the slot for record
    /// heads in the rows, so the next superstep may still repeat this
    /// one; more drop it, and it cannot.
    Idle(usize),
}

/// Each move follows supersteps that repeat the one before, so that the
/// superstep after it would repeat too if the move went unnoticed.
const MOVES: [Move; 21] = [
    Move::Nothing,
    Move::Nothing,
    Move::Nothing,
    Move::SameLength,
    Move::Nothing,
    Move::Nothing,
    Move::Register,
    Move::Nothing,
    Move::Nothing,
    Move::Lend,
    Move::Nothing,
    Move::Nothing,
    Move::Longer,
    Move::Nothing,
    Move::SameLength,
    Move::Nothing,
    Move::Idle(2),
    Move::Nothing,
    Move::Idle(6),
    Move::Nothing,
    Move::Nothing,
];

/// The same puts in every superstep (a placed superstep repeats the last
/// one, and the MPI transport pushes into the places it learned then),
/// with the receivers' coarrays moved between some of them; returns the
/// hash of the target after each superstep.
fn repeats_across_moves(ctx: &mut Ctx) -> u64 {
    let (me, p) = (ctx.pid(), ctx.nprocs());
    let target = ctx.coarray::<u8>(p * REPEAT_LEN);
    let spare = ctx.coarray::<u8>(8);
    let mut h = FNV0;
    let mut lend = false;
    for (step, &moved) in MOVES.iter().enumerate() {
        for dst in 0..p {
            let bytes = message(23, step, me, dst, 0, REPEAT_LEN);
            ctx.put_vec(dst, &target, me * REPEAT_LEN, bytes);
        }
        if lend {
            ctx.put_from(me, &spare, 0, &target, 0..8);
        }
        ctx.sync();
        h = fnv(h, ctx.local(&target));
        h = fnv(h, ctx.local(&spare));
        let len = ctx.local(&target).len();
        lend = moved == Move::Lend;
        match moved {
            Move::Nothing | Move::Lend => {}
            Move::SameLength => drop(ctx.replace_local(&target, vec![7u8; len])),
            Move::Longer => drop(ctx.replace_local(&target, vec![9u8; len + 8])),
            Move::Register => {
                let extra = ctx.coarray::<u8>(REPEAT_LEN * 2);
                ctx.release(extra);
            }
            Move::Idle(n) => (0..n).for_each(|_| ctx.sync()),
        }
    }
    h
}

/// What processor `me` must see from [`repeats_across_moves`].
fn repeats_across_moves_oracle(p: usize, me: usize) -> u64 {
    let mut target = vec![0u8; p * REPEAT_LEN];
    let mut spare = [0u8; 8];
    let mut h = FNV0;
    let mut lend = false;
    for (step, &moved) in MOVES.iter().enumerate() {
        for src in 0..p {
            let at = src * REPEAT_LEN;
            target[at..at + REPEAT_LEN].copy_from_slice(&message(23, step, src, me, 0, REPEAT_LEN));
        }
        if lend {
            // The put_from reads the target as it was before the sync.
            spare.copy_from_slice(&message(23, step - 1, 0, me, 0, 8));
        }
        h = fnv(h, &target);
        h = fnv(h, &spare);
        lend = moved == Move::Lend;
        match moved {
            Move::SameLength => target.fill(7),
            Move::Longer => {
                target.fill(9);
                target.extend([9u8; 8]);
            }
            _ => {}
        }
    }
    h
}

#[test]
fn a_repeated_placed_superstep_follows_its_coarrays_when_they_move() {
    for rt in support::runtimes_with(&[1, 2, 3, 4], Router::Direct) {
        support::check(&rt, repeats_across_moves, repeats_across_moves_oracle);
    }
}

/// Bytes of each placed put of [`one_sender_after_placed`]: large enough
/// to be placed.
const LONE_PLACED: usize = 64 << 10;

/// Placed supersteps, each followed by one in which processor 0 alone
/// puts a word (to every other processor): after a placed superstep the
/// rows keep a slot for record heads, which processor 0 fills while the
/// others have nothing to send. Returns what arrived from processor 0.
fn one_sender_after_placed(ctx: &mut Ctx) -> Vec<u64> {
    let (me, p) = (ctx.pid(), ctx.nprocs());
    let source = ctx.coarray_from(vec![me as u8 + 1; LONE_PLACED]);
    let target = ctx.coarray::<u8>(LONE_PLACED);
    let word = ctx.coarray::<u64>(1);
    let mut got = Vec::new();
    for step in 0..6u64 {
        ctx.put_from((me + 1) % p, &target, 0, &source, ..);
        ctx.sync();
        if me == 0 {
            for dst in 1..p {
                ctx.put(dst, &word, 0, &[100 + step]);
            }
        }
        ctx.sync();
        got.push(ctx.local(&word)[0]);
    }
    got.push(u64::from(ctx.local(&target)[0]));
    got
}

/// What processor `me` must see from [`one_sender_after_placed`].
fn one_sender_after_placed_oracle(p: usize, me: usize) -> Vec<u64> {
    let mut want: Vec<u64> = (0..6).map(|s| if me == 0 { 0 } else { 100 + s }).collect();
    want.push(((me + p - 1) % p) as u64 + 1);
    want
}

/// Under MPI this hung: processor 0 cut its streams for the rows' heads
/// slot while the others, with nothing to send, offered theirs beside
/// the rows, and the two routed the superstep differently.
#[test]
fn a_lone_sender_after_a_placed_superstep_is_delivered() {
    for router in [Router::Direct, Router::TwoPhase] {
        for rt in support::runtimes_with(&[1, 2, 3], router) {
            support::check(&rt, one_sender_after_placed, one_sender_after_placed_oracle);
        }
    }
}
