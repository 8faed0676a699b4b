//! One-to-all: k-level broadcast and scatter (personalized one-to-all).

use bsp_core::expert::Areas;
use bsp_core::{Ctx, Machine};
use bytemuck::Pod;

use super::{auto, tree_cost, whole_message_cost, Blocks, Combined, Levels};
#[cfg(doc)]
use crate::model::Model;
use crate::same_len::Lengths;

/// Broadcasts the root's `buf` into `buf` on every processor with a
/// `levels`-level algorithm: the root sends `buf` to the leader of each
/// block of consecutive pids, and each block broadcasts on its own, as a
/// sub-machine, with one level fewer. [`Levels::One`] sends straight to
/// all p − 1; [`Levels::Log`] is the binomial tree.
///
/// # Examples
///
/// ```
/// use bsp_algos::variants::{broadcast_k_level, Levels};
///
/// for levels in Levels::ALL {
///     let out = bsp_core::run(6, move |ctx| {
///         let mut buf = if ctx.pid() == 4 { [7u32, 8] } else { [0, 0] };
///         broadcast_k_level(ctx, 4, &mut buf, levels);
///         buf
///     })
///     .unwrap();
///     assert!(out.iter().all(|b| b == &[7, 8]), "{levels}");
/// }
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
/// With m bytes, k levels and blocks of g = ⌈p^(1/k)⌉: one superstep
/// with h = (g − 1)m at the root, a split into sub-machines of q = ⌈p/g⌉
/// ([`Model::split`]: l·(2 + 2/q)), then the same on the q processors
/// with k − 1 levels, each sub-machine superstep charged
/// [`Model::sub_superstep`]'s l·(1 + q/p)/2; the last level sends
/// straight, h = (p' − 1)m. The root's h is all a sub-machine moves, so
/// it is charged the lone g ([`Model::sparse_superstep`]). 1 level: 1
/// superstep, h = (p − 1)m; log p levels: ⌈log₂ p⌉ supersteps of h = m
/// and one split fewer. A sender puts its buffer to all its receivers
/// with one [`Areas::multicast_area`](bsp_core::expert::Areas::multicast_area), so on one node (threads, or MPI
/// ranks that share a node) it copies m once and the receivers copy
/// theirs at once: there its h is m ([`Model::multicast_h`]).
/// Predicted by [`broadcast_k_level_cost`].
pub fn broadcast_k_level<T: Pod + Send>(ctx: &mut Ctx, root: usize, buf: &mut [T], levels: Levels) {
    let p = ctx.nprocs();
    assert!(
        root < p,
        "bsp-algos: broadcast root {root} out of range (p = {p})"
    );
    broadcast_levels(ctx, root, buf, levels.count(p));
}

fn broadcast_levels<T: Pod + Send>(ctx: &mut Ctx, root: usize, buf: &mut [T], k: usize) {
    let (n, me) = (ctx.nprocs(), ctx.pid());
    // An empty buffer takes part like any other: only the root's length
    // is known here, so a processor that skipped would leave the others
    // waiting in a sync, and the lengths' check could not name it.
    if n == 1 {
        return;
    }
    let blocks = Blocks::new(n, k);
    // The root sends to every other processor (the last level) or to the
    // leader of every block, and never receives.
    let b = blocks.of(me);
    let leader = blocks.leader(b, root);
    let targets: Vec<usize> = match me == root {
        false => Vec::new(),
        true if blocks.direct() => (0..n).filter(|&d| d != me).collect(),
        true => (0..blocks.g)
            .map(|b| blocks.leader(b, root))
            .filter(|&d| d != root)
            .collect(),
    };
    let receives = me != root && (blocks.direct() || me == leader);
    pass_whole(ctx, buf, &targets, receives);
    if blocks.direct() {
        return;
    }
    let sub_root = leader - blocks.start(b);
    ctx.split(b, me, |sub| broadcast_levels(sub, sub_root, buf, k - 1));
}

/// The seconds [`broadcast_k_level`] is predicted to take on `p`
/// processors of `machine` for a message of `bytes` bytes, on the threads
/// transport (the model of [`Model::new`]).
///
/// # Examples
///
/// ```
/// use bsp_algos::variants::{broadcast_k_level_cost, Levels};
/// use bsp_core::{Cost, Machine};
///
/// let c = Cost { l_seconds: 1e-5, g_seconds_per_byte: 1e-9 };
/// let m = Machine::new(c, c);
/// // Long messages, on threads: the root's one copy is shared by all
/// // p − 1 receivers, which copy out of it at once; the binomial tree
/// // spends log p supersteps copying.
/// let direct = broadcast_k_level_cost(&m, 64, 1 << 20, Levels::One);
/// let tree = broadcast_k_level_cost(&m, 64, 1 << 20, Levels::Log);
/// assert!(direct < tree);
/// // Short ones: one superstep beats log p supersteps and splits.
/// assert!(broadcast_k_level_cost(&m, 64, 8, Levels::One) < broadcast_k_level_cost(&m, 64, 8, Levels::Log));
/// ```
pub fn broadcast_k_level_cost(machine: &Machine, p: usize, bytes: usize, levels: Levels) -> f64 {
    whole_message_cost(&auto(machine), p, bytes, levels, true)
}

/// Sends `parts[j]` from `root` to processor j with a `levels`-level
/// algorithm (the paper's one-to-all): the root combines the parts of each
/// block of consecutive pids into one message to the block's leader, and
/// each block scatters on its own, as a sub-machine, with one level fewer.
/// Returns this processor's part. Only the root's `parts` is read.
///
/// # Examples
///
/// ```
/// use bsp_algos::variants::{scatter_k_level, Levels};
///
/// let out = bsp_core::run(5, |ctx| {
///     let parts: Vec<Vec<u16>> = if ctx.pid() == 0 {
///         (0..5).map(|j| vec![j; j as usize]).collect()
///     } else {
///         vec![]
///     };
///     scatter_k_level(ctx, 0, &parts, Levels::Two)
/// })
/// .unwrap();
/// assert_eq!(out.get(3), Some(&vec![3, 3, 3]));
/// assert_eq!(out.get(0), Some(&vec![]));
/// ```
///
/// # Panics
///
/// If `root >= p`, or on the root if `parts.len() != p`.
///
/// # Cost
///
/// With parts of L bytes, k levels and g = ⌈p^(1/k)⌉: one superstep with
/// h = (g − 1)⌈p/g⌉L at the root (g − 1 combined messages), a split
/// (l·(2 + 2/q), q = ⌈p/g⌉), then the same on the q processors with
/// k − 1 levels, charged as in [`broadcast_k_level`]'s cost; the last level
/// sends straight, h = (p' − 1)L. 1 level: 1 superstep, h = (p − 1)L
/// (and 8 bytes of length per part), in p − 1 messages; more levels
/// move the bytes k times in fewer, longer messages. Predicted by [`scatter_k_level_cost`].
pub fn scatter_k_level<T: Pod>(
    ctx: &mut Ctx,
    root: usize,
    parts: &[Vec<T>],
    levels: Levels,
) -> Vec<T> {
    let (p, me) = (ctx.nprocs(), ctx.pid());
    assert!(
        root < p,
        "bsp-algos: scatter root {root} out of range (p = {p})"
    );
    let parts = if me == root {
        assert_eq!(
            parts.len(),
            p,
            "bsp-algos: scatter needs one part per processor"
        );
        parts.to_vec()
    } else {
        Vec::new()
    };
    scatter_levels(ctx, root, parts, levels.count(p))
}

fn scatter_levels<T: Pod>(ctx: &mut Ctx, root: usize, mut parts: Vec<Vec<T>>, k: usize) -> Vec<T> {
    let (n, me) = (ctx.nprocs(), ctx.pid());
    if n == 1 {
        return parts.pop().unwrap_or_default();
    }
    let blocks = Blocks::new(n, k);
    // Direct (blocks of one): the combined message to a leader is its part.
    let q = Combined::<(), T>::new(ctx);
    if me == root {
        for b in 0..blocks.g {
            let leader = blocks.leader(b, root);
            if leader != root {
                for part in &parts[blocks.start(b)..blocks.start(b + 1)] {
                    q.send(ctx, leader, &(), part);
                }
            }
        }
    }
    ctx.sync();
    let b = blocks.of(me);
    let leader = blocks.leader(b, root);
    let mine = if me == root {
        parts.drain(blocks.start(b)..blocks.start(b + 1)).collect()
    } else if me == leader {
        let mut received = q.receive(ctx);
        std::mem::take(&mut received[root])
            .into_iter()
            .map(|((), part)| part)
            .collect()
    } else {
        Vec::new()
    };
    q.release(ctx);
    if blocks.direct() {
        return mine.into_iter().next().unwrap_or_default();
    }
    let sub_root = leader - blocks.start(b);
    ctx.split(b, me, |sub| scatter_levels(sub, sub_root, mine, k - 1))
}

/// The seconds [`scatter_k_level`] is predicted to take on `p` processors
/// of `machine` for parts of `bytes` bytes each.
///
/// # Examples
///
/// ```
/// use bsp_algos::variants::{scatter_k_level_cost, Levels};
/// use bsp_core::{Cost, Machine};
///
/// let c = Cost { l_seconds: 1e-5, g_seconds_per_byte: 1e-9 };
/// let m = Machine::new(c, c);
/// // In the BSP model the root's h is at least (p − 1)L whatever the
/// // levels, so each level only adds: direct is cheapest.
/// let direct = scatter_k_level_cost(&m, 16, 64, Levels::One);
/// assert!(direct < scatter_k_level_cost(&m, 16, 64, Levels::Two));
/// ```
pub fn scatter_k_level_cost(machine: &Machine, p: usize, bytes: usize, levels: Levels) -> f64 {
    // Each leader gets its block's parts, each with its length (8 bytes).
    let to_leader = |blocks: Blocks| blocks.largest() as f64 * (bytes as f64 + 8.0);
    tree_cost(&auto(machine), p, p, levels.count(p), &to_leader, false)
}

/// One superstep of a broadcast that moves whole buffers: this processor
/// puts all of `buf` to each of `targets`, or, if it `receives`, takes the
/// buffer its sender puts straight into `buf` (registered as an area for
/// the superstep, so there is no copy out of a coarray); the lengths are
/// checked after the sync.
pub(crate) fn pass_whole<T: Pod + Send>(
    ctx: &mut Ctx,
    buf: &mut [T],
    targets: &[usize],
    receives: bool,
) {
    debug_assert!(!receives || targets.is_empty());
    let len = buf.len();
    let lengths = Lengths::new(ctx);
    let (sending, landing): (&[T], &mut [T]) = if receives { (&[], buf) } else { (buf, &mut []) };
    ctx.with_owned_area("broadcast", landing, |ctx, area| {
        let to_each = targets.iter().map(|&dst| (dst, area, 0));
        ctx.multicast_area(bytemuck::cast_slice(sending), to_each);
        for &dst in targets {
            lengths.send(ctx, dst, len);
        }
        ctx.sync();
    });
    lengths.check(ctx, "broadcast", len);
}
