//! Personalized all-to-all exchange (*Collective Communication and Computation*, 13.6): with
//! variable sizes, routed by the run's router, and uniform (equal blocks)
//! by the routed exchange, the 1-factor schedule or the hypercube.

use bsp_core::expert::OwnedCoarrays;
use bsp_core::Ctx;
use bytemuck::{zeroed_vec, Pod};

use crate::klevel::{all_to_all_k_level, all_to_all_levels_cost, Levels};
use crate::model::{floor_log2, pick_for, Model, Variant};
use crate::puts_and_sends::{receive_by_source, send_all};
use crate::same_len::Lengths;

/// The collective's name in the lengths' check.
const UNIFORM: &str = "all_to_all_uniform";

/// Sends `sends[j]` to processor j, for every j; returns what every
/// processor sent to this one, indexed by source pid.
///
/// The exchange is one h-relation, delivered by the run's router (the
/// two-phase router of Bader, Helman and JáJá by default, which is the two-phase
/// non-uniform all-to-all of *Collective Communication and Computation*, 13.6.3).
///
/// # Examples
///
/// ```
/// let out = bsp_core::run(3, |ctx| {
///     let me = ctx.pid() as u32;
///     let sends: Vec<Vec<u32>> = (0..3).map(|j| vec![me * 10 + j; j as usize]).collect();
///     bsp_algos::all_to_all(ctx, sends)
/// })
/// .unwrap();
/// assert_eq!(out.get(2), Some(&vec![vec![2, 2], vec![12, 12], vec![22, 22]]));
/// assert_eq!(out.get(0), Some(&vec![Vec::<u32>::new(); 3]));
/// ```
///
/// # Panics
///
/// If `sends.len() != p`, naming `all_to_all`, the processor and both
/// lengths.
///
/// # Cost
///
/// 1 superstep; h = max over processors of the elements sent or received
/// (own part excluded), one record header per non-empty destination.
pub fn all_to_all<T: Pod>(ctx: &mut Ctx, mut sends: Vec<Vec<T>>) -> Vec<Vec<T>> {
    let (p, me) = (ctx.nprocs(), ctx.pid());
    assert!(
        sends.len() == p,
        "bsp-algos: all_to_all: processor {me} passed {} vectors, but there must be one per \
         processor (p = {p})",
        sends.len()
    );
    let q = ctx.queue::<T>();
    for (dst, part) in sends.iter().enumerate().filter(|&(d, _)| d != me) {
        send_all(ctx, dst, &q, part);
    }
    ctx.sync();
    let mut received = receive_by_source(ctx, &q);
    ctx.release_queue(q);
    received[me] = std::mem::take(&mut sends[me]);
    received
}

/// The signature of a uniform all-to-all variant.
pub type AllToAllUniformFn<T> = fn(&mut Ctx, &[T]) -> Vec<T>;

/// The uniform all-to-all variants [`all_to_all_uniform`] chooses from,
/// with their costs for blocks of `bytes` bytes:
/// [`all_to_all_uniform_routed`], [`all_to_all_one_factor`], where p
/// is a power of two, [`all_to_all_hypercube`], and the k-level
/// all-to-alls ([`all_to_all_k_level`] with 2, 3 and log p levels, named
/// as [`Levels::name`] names them; the 1-level one is a routed exchange
/// like [`all_to_all_uniform_routed`]).
///
/// # Examples
///
/// ```
/// let out = bsp_core::run(4, |ctx| {
///     let me = ctx.pid() as u32;
///     let data: Vec<u32> = (0..4).map(|j| 10 * me + j).collect();
///     let mut results = Vec::new();
///     for v in bsp_algos::variants::all_to_all_uniform_variants::<u32>() {
///         results.push((v.run)(ctx, &data));
///     }
///     results
/// })
/// .unwrap();
/// assert!(out.get(1).unwrap().iter().all(|r| r == &[1, 11, 21, 31]));
/// ```
pub fn all_to_all_uniform_variants<T: Pod + Send>() -> Vec<Variant<AllToAllUniformFn<T>>> {
    vec![
        Variant::new("routed", routed_cost, all_to_all_uniform_routed::<T>),
        Variant::new("one-factor", one_factor_cost, all_to_all_one_factor::<T>),
        Variant::new("hypercube", hypercube_cost, all_to_all_hypercube::<T>),
        Variant::new("2-level", levels_cost::<1>, uniform_levels::<T, 1>),
        Variant::new("3-level", levels_cost::<2>, uniform_levels::<T, 2>),
        Variant::new("log-p-level", levels_cost::<3>, uniform_levels::<T, 3>),
    ]
}

/// [`all_to_all_k_level`] with the levels `Levels::ALL[K]` on the blocks
/// of a uniform all-to-all.
fn uniform_levels<T: Pod + Send, const K: usize>(ctx: &mut Ctx, data: &[T]) -> Vec<T> {
    let p = ctx.nprocs();
    let b = block_len(data.len(), p);
    let sends = (0..p).map(|j| data[j * b..(j + 1) * b].to_vec()).collect();
    let received = all_to_all_k_level(ctx, sends, Levels::ALL[K]);
    // The k-level all-to-all carries blocks of any length: a uniform one
    // checks that each source's block has this processor's length.
    if let Some((q, block)) = received.iter().enumerate().find(|(_, r)| r.len() != b) {
        different_lengths(ctx.pid(), data.len(), q, block.len() * p);
    }
    received.concat()
}

/// Ends the run: processor `q` passed `theirs` elements to a uniform
/// all-to-all, this processor (`me`) `mine`.
fn different_lengths(me: usize, mine: usize, q: usize, theirs: usize) -> ! {
    panic!(
        "bsp-algos: {UNIFORM}: every processor must pass the same length, but processor {q} \
         passed {theirs} and processor {me} {mine}"
    )
}

fn levels_cost<const K: usize>(model: &Model, p: usize, bytes: usize) -> Option<f64> {
    Some(all_to_all_levels_cost(model, p, bytes, Levels::ALL[K]))
}

fn routed_cost(model: &Model, p: usize, bytes: usize) -> Option<f64> {
    Some(model.superstep(((p.max(1) - 1) * bytes) as f64))
}

fn one_factor_cost(model: &Model, p: usize, bytes: usize) -> Option<f64> {
    Some(model.supersteps(one_factor_rounds(p), bytes as f64))
}

fn hypercube_cost(model: &Model, p: usize, bytes: usize) -> Option<f64> {
    p.is_power_of_two()
        .then(|| model.supersteps(floor_log2(p), (bytes * p / 2) as f64))
}

/// Rounds of the 1-factor schedule: p − 1 for even p, p for odd p.
fn one_factor_rounds(p: usize) -> usize {
    if p <= 1 {
        0
    } else {
        p - usize::from(p % 2 == 0)
    }
}

/// The block length of a uniform all-to-all of `len` elements on p.
fn block_len(len: usize, p: usize) -> usize {
    assert!(
        len % p == 0,
        "bsp-algos: all_to_all_uniform needs p blocks of equal length, got {len} elements on p = {p}"
    );
    len / p
}

/// Uniform all-to-all (the textbook's personalized all-to-all with equal
/// messages, MPI's `MPI_Alltoall`): `data` holds p blocks of equal length
/// b, block j for processor j; returns p blocks of b, block i from
/// processor i. Runs the variant of least predicted cost
/// ([`all_to_all_uniform_variants`], [`pick`](crate::model::pick)) for b, p and the run's
/// machine ([`Model::of`]).
///
/// # Examples
///
/// ```
/// let out = bsp_core::run(3, |ctx| {
///     let me = ctx.pid() as u16;
///     let data: Vec<u16> = (0..3).flat_map(|j| [me, j]).collect();
///     bsp_algos::all_to_all_uniform(ctx, &data)
/// })
/// .unwrap();
/// assert_eq!(out.get(2), Some(&vec![0, 2, 1, 2, 2, 2]));
/// ```
///
/// # Panics
///
/// If `data.len()` is not a multiple of p. Every processor must pass the
/// same length; otherwise the run ends, in every variant: with an
/// out-of-bounds error where a longer vector's block runs past a
/// receiver's, otherwise with a panic naming both processors and their
/// lengths.
///
/// # Cost
///
/// The least of the variants' (B = bytes of one block, T(h) = l + g·h):
/// [`all_to_all_uniform_routed`] T((p − 1)B); [`all_to_all_one_factor`]
/// (p − 1 or p) · T(B); [`all_to_all_hypercube`] log₂ p · T(Bp/2). With g
/// and l fixed per superstep, T is subadditive, so the single routed
/// superstep is never predicted dearer: the other two are there for
/// machines and benchmarks where a superstep's cost is not l + g·h.
pub fn all_to_all_uniform<T: Pod + Send>(ctx: &mut Ctx, data: &[T]) -> Vec<T> {
    let bytes = std::mem::size_of_val(data) / ctx.nprocs().max(1);
    let variants = all_to_all_uniform_variants::<T>();
    let chosen = pick_for(ctx, bytes, &variants);
    (chosen.run)(ctx, data)
}

/// Uniform all-to-all in one superstep: every block put straight to its
/// processor, delivered by the run's router.
///
/// # Examples
///
/// ```
/// let out = bsp_core::run(2, |ctx| {
///     let data = [ctx.pid() as u8; 4];
///     bsp_algos::variants::all_to_all_uniform_routed(ctx, &data)
/// })
/// .unwrap();
/// assert_eq!(out.all(), Some(&vec![vec![0, 0, 1, 1]; 2][..]));
/// ```
///
/// # Panics
///
/// As [`all_to_all_uniform`].
///
/// # Cost
///
/// 1 superstep, h = (p − 1)b: predicted l + g·(p − 1)B for blocks of B
/// bytes.
pub fn all_to_all_uniform_routed<T: Pod + Send>(ctx: &mut Ctx, data: &[T]) -> Vec<T> {
    let (p, me) = (ctx.nprocs(), ctx.pid());
    let b = block_len(data.len(), p);
    let lengths = Lengths::new(ctx);
    let out = ctx.coarray_for(UNIFORM, zeroed_vec::<T>(data.len()));
    for dst in (0..p).filter(|&d| d != me) {
        ctx.put(dst, &out, me * b, &data[dst * b..(dst + 1) * b]);
        lengths.send(ctx, dst, data.len());
    }
    ctx.local_mut(&out)[me * b..(me + 1) * b].copy_from_slice(&data[me * b..(me + 1) * b]);
    ctx.sync();
    lengths.check(ctx, UNIFORM, data.len());
    ctx.release(out)
}

/// Uniform all-to-all by the 1-factor schedule: in each of p − 1 rounds
/// (p even) or p rounds (p odd) every processor exchanges one block with
/// one partner, the pairs of a round forming a perfect matching (for odd
/// p, round r pairs i with (2r − i) mod p and leaves r alone; for even p,
/// processor p − 1 takes the place of the one left alone).
///
/// # Examples
///
/// ```
/// let out = bsp_core::run(5, |ctx| {
///     let me = ctx.pid() as u32;
///     let data: Vec<u32> = (0..5).map(|j| 10 * me + j).collect();
///     bsp_algos::variants::all_to_all_one_factor(ctx, &data)
/// })
/// .unwrap();
/// assert_eq!(out.get(3), Some(&vec![3, 13, 23, 33, 43]));
/// ```
///
/// # Panics
///
/// As [`all_to_all_uniform`].
///
/// # Cost
///
/// p − 1 supersteps (p even) or p (p odd), h = b each: predicted
/// (p − 1 or p) · (l + g·B) for blocks of B bytes.
pub fn all_to_all_one_factor<T: Pod + Send>(ctx: &mut Ctx, data: &[T]) -> Vec<T> {
    let (p, me) = (ctx.nprocs(), ctx.pid());
    let b = block_len(data.len(), p);
    // Each partner stamps its length beside its block; the stamps of all
    // rounds are compared after the last.
    let lengths = Lengths::new(ctx);
    let out = ctx.coarray_for(UNIFORM, zeroed_vec::<T>(data.len()));
    ctx.local_mut(&out)[me * b..(me + 1) * b].copy_from_slice(&data[me * b..(me + 1) * b]);
    for r in 0..one_factor_rounds(p) {
        let j = one_factor_partner(p, me, r);
        if j != me {
            ctx.put(j, &out, me * b, &data[j * b..(j + 1) * b]);
            lengths.send(ctx, j, data.len());
        }
        ctx.sync();
    }
    lengths.check(ctx, UNIFORM, data.len());
    ctx.release(out)
}

/// Processor `i`'s partner in round `r` of the 1-factor schedule on p.
fn one_factor_partner(p: usize, i: usize, r: usize) -> usize {
    let even = p % 2 == 0;
    let odd_p = p - usize::from(even); // the schedule of an odd number of processors
    if even && i == p - 1 {
        return r;
    }
    let k = (2 * r) % odd_p;
    let j = (k + odd_p - i) % odd_p;
    if even && j == i {
        p - 1
    } else {
        j
    }
}

/// Uniform all-to-all on a hypercube (p a power of two): in round k
/// (k = log₂ p − 1 down to 0) every processor sends its partner across
/// dimension k the p/2 blocks it holds whose destination lies on the
/// partner's side, so that after log₂ p rounds every block has arrived.
///
/// # Examples
///
/// ```
/// let out = bsp_core::run(4, |ctx| {
///     let me = ctx.pid() as u32;
///     let data: Vec<u32> = (0..4).flat_map(|j| [me, j]).collect();
///     bsp_algos::variants::all_to_all_hypercube(ctx, &data)
/// })
/// .unwrap();
/// assert_eq!(out.get(2), Some(&vec![0, 2, 1, 2, 2, 2, 3, 2]));
/// ```
///
/// # Panics
///
/// If p is not a power of two, and as [`all_to_all_uniform`].
///
/// # Cost
///
/// log₂ p supersteps, h = bp/2 each: predicted log₂ p · (l + g·Bp/2) for
/// blocks of B bytes (the same data crosses up to log₂ p links: fewer
/// supersteps, more volume).
pub fn all_to_all_hypercube<T: Pod + Send>(ctx: &mut Ctx, data: &[T]) -> Vec<T> {
    let (p, me) = (ctx.nprocs(), ctx.pid());
    assert!(
        p.is_power_of_two(),
        "bsp-algos: all_to_all_hypercube needs p to be a power of two (p = {p})"
    );
    let b = block_len(data.len(), p);
    // The blocks held, as (destination, source), in that order; initially
    // this processor's own, one per destination, read from `data` until
    // the first round has built a vector of its own.
    let mut held: Vec<(usize, usize)> = (0..p).map(|j| (j, me)).collect();
    let mut blocks: Option<Vec<T>> = None;
    let inbox = ctx.coarray::<T>(b * p / 2);
    let mut done = 0usize; // the dimensions already crossed
    for k in (0..floor_log2(p)).rev() {
        let bit = 1 << k;
        let partner = me ^ bit;
        let current: &[T] = blocks.as_deref().unwrap_or(data);
        let mut sent = Vec::with_capacity(b * p / 2);
        let mut kept = Vec::with_capacity(p / 2);
        for (n, &(dst, src)) in held.iter().enumerate() {
            if dst & bit != me & bit {
                sent.extend_from_slice(&current[n * b..(n + 1) * b]);
            } else {
                kept.push((n, (dst, src)));
            }
        }
        ctx.put_vec(partner, &inbox, 0, sent);
        ctx.sync();
        // What the partner sent: its holdings whose destination is on
        // this side, in its order.
        let theirs: Vec<(usize, usize)> = holdings(partner, done, p)
            .into_iter()
            .filter(|&(dst, _)| dst & bit == me & bit)
            .collect();
        let received = ctx.local(&inbox);
        let mut next: Vec<((usize, usize), &[T])> = kept
            .iter()
            .map(|&(n, key)| (key, &current[n * b..(n + 1) * b]))
            .chain(
                theirs
                    .iter()
                    .enumerate()
                    .map(|(n, &key)| (key, &received[n * b..(n + 1) * b])),
            )
            .collect();
        next.sort_by_key(|&(key, _)| key);
        held = next.iter().map(|&(key, _)| key).collect();
        // Block by block (a copy each), into a vector of the final size.
        let mut gathered = Vec::with_capacity(p * b);
        for &(_, block) in &next {
            gathered.extend_from_slice(block);
        }
        blocks = Some(gathered);
        done |= bit;
    }
    ctx.discard(inbox);
    // Every block held is now for this processor, sorted by (destination,
    // source): in source order, as the result wants them.
    debug_assert!(held.iter().enumerate().all(|(n, &key)| key == (me, n)));
    blocks.unwrap_or_else(|| data.to_vec())
}

/// The blocks processor `x` holds once the dimensions in `done` are
/// crossed, sorted: destinations that agree with x on `done`, sources
/// that agree with x elsewhere.
fn holdings(x: usize, done: usize, p: usize) -> Vec<(usize, usize)> {
    let dsts = (0..p).filter(|d| d & done == x & done);
    let srcs: Vec<usize> = (0..p).filter(|s| s & !done == x & !done).collect();
    dsts.flat_map(|d| srcs.iter().map(move |&s| (d, s)))
        .collect()
}
