//! Broadcast: one root's buffer copied to every processor (*Collective Communication and Computation*, 13.1).

use bsp_core::Ctx;
use bytemuck::Pod;

use crate::dist::Block;
use crate::puts_and_sends::put_to_others;

/// Data of at least this many bytes (with p > 2) takes the two-phase route.
const TWO_PHASE_BYTES: usize = 8 << 10;

fn check_root(ctx: &Ctx, root: usize) {
    assert!(
        root < ctx.nprocs(),
        "bsp-algos: broadcast root {root} out of range (p = {})",
        ctx.nprocs()
    );
}

/// Copies the root's `buf` into `buf` on every processor, choosing the
/// algorithm by size: [`broadcast_tree`] for short data (or p ≤ 2),
/// [`broadcast_two_phase`] from 8 KiB on.
///
/// As in MPI, every processor passes a buffer of the same length (the
/// receivers' contents are overwritten). Use [`broadcast_vec`] when only
/// the root knows the length.
///
/// # Examples
///
/// ```
/// let out = bsp_core::run(5, |ctx| {
///     let mut buf = if ctx.pid() == 3 { vec![1u32, 2, 3] } else { vec![0; 3] };
///     bsp_algos::broadcast(ctx, 3, &mut buf);
///     buf
/// })
/// .unwrap();
/// assert!(out.iter().all(|b| b == &[1, 2, 3]));
/// ```
///
/// # Panics
///
/// If `root >= p`. Buffers of different lengths end the run with an
/// out-of-bounds error when a receiver's buffer is shorter than the root's.
///
/// # Cost
///
/// As the algorithm chosen: ⌈log₂ p⌉ supersteps of h = m, or 2 supersteps
/// of h ≈ 2m (m = `buf.len()` elements).
pub fn broadcast<T: Pod + Send>(ctx: &mut Ctx, root: usize, buf: &mut [T]) {
    let bytes = std::mem::size_of_val(buf);
    if ctx.nprocs() > 2 && bytes >= TWO_PHASE_BYTES {
        broadcast_two_phase(ctx, root, buf);
    } else {
        broadcast_tree(ctx, root, buf);
    }
}

/// Binomial-tree broadcast: in round r (r = 1..⌈log₂ p⌉) every processor
/// that already holds the data sends it to the one 2^(⌈log₂ p⌉ − r)
/// positions further (counted from the root), the largest subtree first.
///
/// # Examples
///
/// ```
/// let out = bsp_core::run(6, |ctx| {
///     let mut buf = [ctx.pid() as u8 * 10];
///     bsp_algos::broadcast_tree(ctx, 0, &mut buf);
///     buf[0]
/// })
/// .unwrap();
/// assert_eq!(out, vec![0; 6]);
/// ```
///
/// # Panics
///
/// As [`broadcast`].
///
/// # Cost
///
/// ⌈log₂ p⌉ supersteps, each an h-relation of h = m elements (one put).
pub fn broadcast_tree<T: Pod + Send>(ctx: &mut Ctx, root: usize, buf: &mut [T]) {
    check_root(ctx, root);
    let p = ctx.nprocs();
    let a = ctx.coarray_from(buf.to_vec());
    let v = (ctx.pid() + p - root) % p; // rank relative to the root
    for round in (0..ceil_log2(p)).rev() {
        let mask = 1usize << round;
        if v % (2 * mask) == 0 && v + mask < p {
            let data = ctx.local(&a).to_vec();
            ctx.put_vec((v + mask + root) % p, &a, 0, data);
        }
        ctx.sync();
    }
    buf.copy_from_slice(&ctx.release(a));
}

/// Two-phase broadcast for long data: the root scatters the buffer in p
/// blocks (processor j gets block j), then every processor sends its block
/// to all others (an all-gather).
///
/// # Examples
///
/// ```
/// let out = bsp_core::run(4, |ctx| {
///     let mut buf = vec![ctx.pid() as u64; 1000];
///     bsp_algos::broadcast_two_phase(ctx, 2, &mut buf);
///     buf.iter().all(|&x| x == 2)
/// })
/// .unwrap();
/// assert!(out.iter().all(|&ok| ok));
/// ```
///
/// # Panics
///
/// As [`broadcast`].
///
/// # Cost
///
/// 2 supersteps: a scatter (h = m − ⌈m/p⌉ at the root) and an all-gather
/// (h ≈ m(p − 1)/p), with p − 1 put records per processor in each.
pub fn broadcast_two_phase<T: Pod + Send>(ctx: &mut Ctx, root: usize, buf: &mut [T]) {
    check_root(ctx, root);
    let (p, me) = (ctx.nprocs(), ctx.pid());
    let blocks = Block::new(buf.len(), p);
    let a = ctx.coarray_from(buf.to_vec());
    if me == root {
        for dst in (0..p).filter(|&d| d != me) {
            ctx.put(dst, &a, blocks.start(dst), &buf[blocks.range(dst)]);
        }
    }
    ctx.sync();
    let mine = ctx.local(&a)[blocks.range(me)].to_vec();
    put_to_others(ctx, &a, blocks.start(me), &mine);
    ctx.sync();
    buf.copy_from_slice(&ctx.release(a));
}

/// Broadcast when only the root knows the length: returns the root's
/// `data` on every processor (the others' `data` is ignored).
///
/// # Examples
///
/// ```
/// let out = bsp_core::run(3, |ctx| {
///     let mine: Vec<i16> = if ctx.pid() == 1 { vec![-1, 5] } else { vec![] };
///     bsp_algos::broadcast_vec(ctx, 1, &mine)
/// })
/// .unwrap();
/// assert!(out.iter().all(|v| v == &[-1, 5]));
/// ```
///
/// # Panics
///
/// If `root >= p`.
///
/// # Cost
///
/// A tree broadcast of the length (⌈log₂ p⌉ supersteps, h = 1 word), then
/// [`broadcast`] of the data.
pub fn broadcast_vec<T: Pod + Send>(ctx: &mut Ctx, root: usize, data: &[T]) -> Vec<T> {
    let mut len = [data.len() as u64];
    broadcast_tree(ctx, root, &mut len);
    let mut buf = if ctx.pid() == root {
        data.to_vec()
    } else {
        vec![T::zeroed(); len[0] as usize]
    };
    broadcast(ctx, root, &mut buf);
    buf
}

/// `ceil(log2(p))`.
fn ceil_log2(p: usize) -> u32 {
    p.next_power_of_two().trailing_zeros()
}
