//! All-to-one: k-level gather and reduce, the one-to-all algorithms run
//! backwards.

use bsp_core::{Ctx, Machine};
use bytemuck::Pod;

use super::{auto, whole_message_cost, Blocks, Combined, Levels};
use crate::ops::Op;
use crate::rows::fold_with_mine;
use crate::same_len::Lengths;

/// Every processor's `data` on `root`, in pid order (`Some` on the root,
/// `None` elsewhere), with a `levels`-level algorithm: each block of
/// consecutive pids first gathers at its leader, as a sub-machine with
/// one level fewer, then the leaders send their blocks' parts to the root
/// as one combined message each. Lengths may differ between processors.
///
/// # Examples
///
/// ```
/// use bsp_algos::variants::{gather_k_level, Levels};
///
/// let out = bsp_core::run(7, |ctx| {
///     let mine = vec![ctx.pid() as u8; ctx.pid() % 3];
///     gather_k_level(ctx, 5, &mine, Levels::Log)
/// })
/// .unwrap();
/// let want: Vec<Vec<u8>> = (0..7).map(|q| vec![q as u8; q % 3]).collect();
/// assert_eq!(out.get(5), Some(&Some(want)));
/// assert_eq!(out.get(0), Some(&None));
/// ```
///
/// # Panics
///
/// If `root >= p`.
///
/// # Cost
///
/// The mirror of [`scatter_k_level`](crate::klevel::scatter_k_level): with parts
/// of L bytes, k levels and g = ⌈p^(1/k)⌉, the (k − 1)-level gathers in
/// blocks of ⌈p/g⌉ (after a split, 2l), then one superstep with
/// h = (g − 1)⌈p/g⌉L at the root. 1 level: 1 superstep, h = (p − 1)L.
/// Predicted by [`gather_k_level_cost`].
pub fn gather_k_level<T: Pod>(
    ctx: &mut Ctx,
    root: usize,
    data: &[T],
    levels: Levels,
) -> Option<Vec<Vec<T>>> {
    let p = ctx.nprocs();
    assert!(
        root < p,
        "bsp-algos: gather root {root} out of range (p = {p})"
    );
    gather_levels(ctx, root, data, levels.count(p))
}

fn gather_levels<T: Pod>(ctx: &mut Ctx, root: usize, data: &[T], k: usize) -> Option<Vec<Vec<T>>> {
    let (n, me) = (ctx.nprocs(), ctx.pid());
    if n == 1 {
        return Some(vec![data.to_vec()]);
    }
    let blocks = Blocks::new(n, k);
    let b = blocks.of(me);
    let leader = blocks.leader(b, root);
    let sub_root = leader - blocks.start(b);
    // Direct (blocks of one): every processor is its block's leader.
    let mut mine = if blocks.direct() {
        Some(vec![data.to_vec()])
    } else {
        ctx.split(b, me, |sub| gather_levels(sub, sub_root, data, k - 1))
    };
    let q = Combined::<(), T>::new(ctx);
    if me == leader && me != root {
        for part in mine.as_deref().unwrap_or_default() {
            q.send(ctx, root, &(), part);
        }
    }
    ctx.sync();
    let out = (me == root).then(|| {
        let mut received = q.receive(ctx);
        let mut all = Vec::with_capacity(n);
        for c in 0..blocks.g {
            if c == b {
                all.extend(mine.take().unwrap_or_default());
            } else {
                let from = std::mem::take(&mut received[blocks.leader(c, root)]);
                all.extend(from.into_iter().map(|((), part)| part));
            }
        }
        all
    });
    q.release(ctx);
    out
}

/// The seconds [`gather_k_level`] is predicted to take on `p` processors
/// of `machine` for parts of `bytes` bytes each.
///
/// # Examples
///
/// ```
/// use bsp_algos::variants::{gather_k_level_cost, scatter_k_level_cost, Levels};
/// use bsp_core::{Cost, Machine};
///
/// let c = Cost { l_seconds: 1e-5, g_seconds_per_byte: 1e-9 };
/// let m = Machine::new(c, c);
/// let (g, s) = (gather_k_level_cost(&m, 8, 100, Levels::Two), scatter_k_level_cost(&m, 8, 100, Levels::Two));
/// assert!((g - s).abs() < 1e-12);
/// ```
pub fn gather_k_level_cost(machine: &Machine, p: usize, bytes: usize, levels: Levels) -> f64 {
    super::scatter_k_level_cost(machine, p, bytes, levels)
}

/// Element-wise `data₀ ⊕ … ⊕ data_{p−1}` (in pid order) on `root`
/// (`Some` there, `None` elsewhere), with a `levels`-level algorithm:
/// each block of consecutive pids reduces at its leader, as a sub-machine
/// with one level fewer, then the leaders send their partial results to
/// the root, which combines them in block order. Blocks are consecutive,
/// so `op` need only be associative.
///
/// # Examples
///
/// ```
/// use bsp_algos::Sum;
/// use bsp_algos::variants::{reduce_k_level, Levels};
///
/// let out = bsp_core::run(9, |ctx| {
///     let mine = [ctx.pid() as u64, 1];
///     reduce_k_level(ctx, 0, &mine, &Sum, Levels::Three)
/// })
/// .unwrap();
/// assert_eq!(out.get(0), Some(&Some(vec![36, 9])));
/// ```
///
/// # Panics
///
/// If `root >= p`. Every processor must pass the same length; otherwise
/// the run ends, at the sync that moves the vectors: with an out-of-bounds
/// error where a longer one runs past a receiver's buffer, otherwise with
/// a panic naming both processors and their lengths.
///
/// # Cost
///
/// The mirror of [`broadcast_k_level`](crate::klevel::broadcast_k_level): with m
/// bytes, k levels and g = ⌈p^(1/k)⌉, the (k − 1)-level reduces in blocks
/// of q = ⌈p/g⌉ (after a split, l·(2 + 2/q), each sub-machine superstep
/// charged l·(1 + q/p)/2), then one superstep with h = (g − 1)m at the
/// root, charged the lone g ([`Model::sparse_superstep`](crate::model::Model::sparse_superstep)). 1 level: 1 superstep, h = (p − 1)m; log p levels: ⌈log₂ p⌉
/// supersteps of h = m. Predicted by [`reduce_k_level_cost`].
pub fn reduce_k_level<T: Pod + Send, O: Op<T>>(
    ctx: &mut Ctx,
    root: usize,
    data: &[T],
    op: &O,
    levels: Levels,
) -> Option<Vec<T>> {
    let p = ctx.nprocs();
    assert!(
        root < p,
        "bsp-algos: reduce root {root} out of range (p = {p})"
    );
    reduce_levels(ctx, root, data, op, levels.count(p))
}

fn reduce_levels<T: Pod + Send, O: Op<T>>(
    ctx: &mut Ctx,
    root: usize,
    data: &[T],
    op: &O,
    k: usize,
) -> Option<Vec<T>> {
    let (n, me) = (ctx.nprocs(), ctx.pid());
    if n == 1 {
        return Some(data.to_vec());
    }
    let blocks = Blocks::new(n, k);
    let b = blocks.of(me);
    let leader = blocks.leader(b, root);
    let sub_root = leader - blocks.start(b);
    // Direct (blocks of one): every processor is its block's leader, and
    // its partial fold is its own vector.
    let folded = if blocks.direct() {
        None
    } else {
        ctx.split(b, me, |sub| reduce_levels(sub, sub_root, data, op, k - 1))
    };
    let partial = if blocks.direct() {
        data
    } else {
        folded.as_deref().unwrap_or_default()
    };
    // The root receives the other g − 1 leaders' partials, in block order,
    // and folds its own in from where it is (see `fold_with_mine`).
    let root_block = blocks.of(root);
    let len = partial.len();
    let others = ctx.coarray::<T>(if me == root { (blocks.g - 1) * len } else { 0 });
    let lengths = Lengths::new(ctx);
    if me == leader && me != root {
        let slot = if b < root_block { b } else { b - 1 };
        ctx.put(root, &others, slot * len, partial);
        lengths.send(ctx, root, len);
    }
    ctx.sync();
    let others = ctx.release(others);
    lengths.check(ctx, "reduce", len);
    (me == root).then(|| fold_with_mine(op, others, root_block, partial))
}

/// The seconds [`reduce_k_level`] is predicted to take on `p` processors
/// of `machine` for vectors of `bytes` bytes (the combining itself not
/// counted), on the threads transport (the model of [`Model::new`](crate::model::Model::new)): the
/// broadcast's supersteps run backwards, except that a leader receives a
/// separate vector from each of the others, where the broadcast's sender
/// shares one copy among its receivers.
///
/// # Examples
///
/// ```
/// use bsp_algos::variants::{broadcast_k_level_cost, reduce_k_level_cost, Levels};
/// use bsp_core::{Cost, Machine};
///
/// let c = Cost { l_seconds: 1e-5, g_seconds_per_byte: 1e-9 };
/// let m = Machine::new(c, c);
/// // The binomial tree: one vector per receiver either way.
/// let r = reduce_k_level_cost(&m, 32, 4096, Levels::Log);
/// assert!((r - broadcast_k_level_cost(&m, 32, 4096, Levels::Log)).abs() < 1e-12);
/// // Sent straight: the root takes 31 vectors in.
/// assert!(reduce_k_level_cost(&m, 32, 4096, Levels::One) > broadcast_k_level_cost(&m, 32, 4096, Levels::One));
/// ```
pub fn reduce_k_level_cost(machine: &Machine, p: usize, bytes: usize, levels: Levels) -> f64 {
    whole_message_cost(&auto(machine), p, bytes, levels, false)
}
