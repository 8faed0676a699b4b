//! Broadcast: one root's buffer copied to every processor (*Collective Communication and Computation*, 13.1).

use bsp_core::expert::Areas;
use bsp_core::Ctx;
use bytemuck::Pod;

use crate::dist::Block;
use crate::klevel::{broadcast_k_level, pass_whole, tree_levels_cost, Levels};
use crate::model::{all_but_own, ceil_log2, floor_log2, pick_for, Model, Variant};
use crate::rows::gather_in_place;
use crate::same_len::Lengths;

/// The signature of a broadcast variant.
pub type BroadcastFn<T> = fn(&mut Ctx, usize, &mut [T]);

/// The broadcast variants [`broadcast`] chooses from, with their costs
/// for a buffer of `bytes` bytes: [`broadcast_tree`],
/// [`broadcast_two_phase`], [`broadcast_pipelined`] and the k-level
/// broadcasts ([`broadcast_k_level`] with 1, 2, 3 and log p levels, named
/// as [`Levels::name`] names them).
///
/// # Examples
///
/// ```
/// let out = bsp_core::run(3, |ctx| {
///     let mut results = Vec::new();
///     for v in bsp_algos::variants::broadcast_variants::<u32>() {
///         let mut buf = [ctx.pid() as u32; 4];
///         (v.run)(ctx, 1, &mut buf);
///         results.push(buf);
///     }
///     results
/// })
/// .unwrap();
/// assert!(out.iter().flatten().all(|b| b == &[1; 4]));
/// ```
pub fn broadcast_variants<T: Pod + Send>() -> Vec<Variant<BroadcastFn<T>>> {
    vec![
        // First, as it wins ties (at p = 2 every variant but the two-phase
        // one is the same superstep of h = B, with the same copies): the
        // simplest of them.
        Variant::new(
            "1-level",
            tree_levels_cost::<0, true>,
            broadcast_levels::<T, 0>,
        ),
        Variant::new("tree", tree_cost, broadcast_tree::<T>),
        Variant::new("two-phase", two_phase_cost, broadcast_two_phase::<T>),
        Variant::new("pipelined", pipelined_cost, broadcast_pipelined::<T>),
        Variant::new(
            "2-level",
            tree_levels_cost::<1, true>,
            broadcast_levels::<T, 1>,
        ),
        Variant::new(
            "3-level",
            tree_levels_cost::<2, true>,
            broadcast_levels::<T, 2>,
        ),
        Variant::new(
            "log-p-level",
            tree_levels_cost::<3, true>,
            broadcast_levels::<T, 3>,
        ),
    ]
}

/// [`broadcast_k_level`] with the levels `Levels::ALL[K]`.
fn broadcast_levels<T: Pod + Send, const K: usize>(ctx: &mut Ctx, root: usize, buf: &mut [T]) {
    broadcast_k_level(ctx, root, buf, Levels::ALL[K]);
}

/// Round r of the tree sends from min(2^r, p − 2^r) processors.
fn tree_cost(model: &Model, p: usize, bytes: usize) -> Option<f64> {
    let b = bytes as f64;
    let rounds = (0..ceil_log2(p)).map(|r| {
        let senders = (1usize << r).min(p - (1 << r));
        model.sparse_superstep(p, b, senders as f64 * b)
    });
    Some(rounds.sum())
}

/// The scatter moves h from the root alone; the all-gather is a full
/// h-relation, each processor's block multicast. The root receives
/// nothing in the scatter, so it leaves that sync as soon as its blocks
/// are out and packs its block for the
/// all-gather while the receivers unpack theirs: the packing of one block
/// (half of what g charges for a byte, which pays for packing and
/// unpacking both) is off the critical path.
fn two_phase_cost(model: &Model, p: usize, bytes: usize) -> Option<f64> {
    let h = all_but_own(bytes, p);
    let block = bytes as f64 / p as f64;
    let overlap = model.transfer(block) / 2.0;
    Some(model.sparse_superstep(p, h, h) + model.all_gather_superstep(p, h) - overlap)
}

fn pipelined_cost(model: &Model, p: usize, bytes: usize) -> Option<f64> {
    Some(pipeline_seconds(
        model,
        p,
        bytes,
        pipeline_packets(model, p, bytes),
    ))
}

/// Children of a node of the pipeline's binary tree, at most.
fn fan_out(p: usize) -> usize {
    (p.max(1) - 1).min(2)
}

/// Supersteps of the pipelined broadcast with `k` packets: the first
/// packet needs one superstep per level of the tree below the root
/// (⌊log₂ p⌋), the others follow one superstep apart.
fn pipeline_supersteps(p: usize, k: usize) -> usize {
    if p <= 1 {
        0
    } else {
        k + floor_log2(p) - 1
    }
}

/// Each superstep: h = two packets (an inner node's), charged as a full
/// h-relation: in the steady state every inner node sends at once.
fn pipeline_seconds(model: &Model, p: usize, bytes: usize, k: usize) -> f64 {
    let h = fan_out(p) as f64 * bytes as f64 / k as f64;
    model.supersteps(pipeline_supersteps(p, k), h)
}

/// The number of packets that minimises the pipelined broadcast's
/// predicted cost: searched over a geometric grid (ratio 2^¼) from 1 to
/// one packet per 8-byte word.
fn pipeline_packets(model: &Model, p: usize, bytes: usize) -> usize {
    let most = (bytes / 8).max(1);
    let mut best = (1, pipeline_seconds(model, p, bytes, 1));
    let mut k = 1.0f64;
    while (k as usize) < most {
        k = (k * 1.189_207).max(k + 1.0);
        let packets = (k as usize).min(most);
        let t = pipeline_seconds(model, p, bytes, packets);
        if t < best.1 {
            best = (packets, t);
        }
    }
    best.0
}

fn check_root(ctx: &Ctx, root: usize) {
    assert!(
        root < ctx.nprocs(),
        "bsp-algos: broadcast root {root} out of range (p = {})",
        ctx.nprocs()
    );
}

/// Copies the root's `buf` into `buf` on every processor, by the variant
/// of least predicted cost ([`broadcast_variants`], [`pick`](crate::model::pick)) for the
/// buffer's size, p and the run's machine ([`Model::of`]).
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
/// If `root >= p`. Buffers of different lengths end the run, at the sync
/// that moves the root's data: with an out-of-bounds error where a
/// receiver's buffer is shorter than the root's, otherwise with a panic
/// naming both processors and their lengths.
///
/// # Cost
///
/// The least of the variants' (B = `buf`'s bytes, T(h) = l + g·h the
/// model's superstep, S(h, V) = l + max(g₁·h, g·V/p) its
/// [`sparse_superstep`](Model::sparse_superstep) for supersteps that move
/// V < p·h bytes in all):
///
/// * [`broadcast_tree`]: Σ over its ⌈log₂ p⌉ rounds of S(B, sB), s the
///   round's senders (1, 2, 4, ...);
/// * [`broadcast_two_phase`]: S(B', B') + A(B') − g·B/2p, B' = B(p − 1)/p
///   (the root packs its all-gather block while the others unpack the
///   scatter's), A the all-gather's
///   [`all_gather_superstep`](Model::all_gather_superstep);
/// * [`broadcast_pipelined`]: (k + ⌊log₂ p⌋ − 1) · T(2B/k), k chosen to
///   minimise it;
/// * [`broadcast_k_level`] with 1, 2, 3 and log p levels: as its `# Cost`
///   says (sub-machine supersteps and splits charged by
///   [`Model::sub_superstep`] and [`Model::split`]).
///
/// The tree or the one-superstep direct (1-level) broadcast wins short
/// buffers; the two-phase broadcast long ones; the pipeline only where l
/// is small against g·B and p is large.
pub fn broadcast<T: Pod + Send>(ctx: &mut Ctx, root: usize, buf: &mut [T]) {
    check_root(ctx, root);
    let variants = broadcast_variants::<T>();
    let chosen = pick_for(ctx, std::mem::size_of_val(buf), &variants);
    (chosen.run)(ctx, root, buf);
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
///     bsp_algos::variants::broadcast_tree(ctx, 0, &mut buf);
///     buf[0]
/// })
/// .unwrap();
/// assert_eq!(out.all(), Some(&vec![0; 6][..]));
/// ```
///
/// # Panics
///
/// As [`broadcast`].
///
/// # Cost
///
/// ⌈log₂ p⌉ supersteps, each an h-relation of h = m elements (one put):
/// predicted ⌈log₂ p⌉ · (l + g·B) for B bytes, where every processor
/// sends; round r has only min(2^r, p − 2^r) senders, charged by
/// [`Model::sparse_superstep`].
pub fn broadcast_tree<T: Pod + Send>(ctx: &mut Ctx, root: usize, buf: &mut [T]) {
    check_root(ctx, root);
    let p = ctx.nprocs();
    let v = (ctx.pid() + p - root) % p; // rank relative to the root
    for round in (0..ceil_log2(p) as u32).rev() {
        let mask = 1usize << round;
        // Rank v holds the data from the round in which it received it on.
        let child = (v % (2 * mask) == 0 && v + mask < p).then(|| (v + mask + root) % p);
        let receives = v % (2 * mask) == mask;
        pass_whole(ctx, buf, child.as_slice(), receives);
    }
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
///     bsp_algos::variants::broadcast_two_phase(ctx, 2, &mut buf);
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
/// (h ≈ m(p − 1)/p), with p − 1 put records per processor in each:
/// predicted 2 · (l + g·B(p − 1)/p) for B bytes, the scatter's h
/// (the root's alone) charged by [`Model::sparse_superstep`], less
/// g·B/2p: the root receives nothing in the scatter, so it packs its
/// block for the all-gather while the others unpack theirs. Each
/// processor's all-gather block is one [`Areas::multicast_area`](bsp_core::expert::Areas::multicast_area), copied
/// once on one node ([`Model::all_gather_superstep`]). Every block
/// lands straight in the receivers' buffers (no copy out of a coarray).
pub fn broadcast_two_phase<T: Pod + Send>(ctx: &mut Ctx, root: usize, buf: &mut [T]) {
    check_root(ctx, root);
    let (p, me) = (ctx.nprocs(), ctx.pid());
    let len = buf.len();
    let blocks = Block::new(len, p);
    let mine = blocks.range(me);
    // The scatter: block d lands straight in its place in d's buffer. The
    // root holds every block from the start and receives nothing.
    let lengths = Lengths::new(ctx);
    if me == root {
        ctx.with_owned_area::<T, _>("broadcast", &mut [], |ctx, area| {
            for dst in (0..p).filter(|&d| d != me) {
                let block = &buf[blocks.range(dst)];
                if !block.is_empty() {
                    ctx.put_area(dst, area, 0, bytemuck::cast_slice(block));
                }
                lengths.send(ctx, dst, len);
            }
            ctx.sync();
        });
    } else {
        ctx.with_owned_area("broadcast", &mut buf[mine.clone()], |ctx, _| ctx.sync());
    }
    lengths.check(ctx, "broadcast", len);
    // The all-gather: every processor sends its block to every receiver
    // but itself, straight into the receivers' buffers.
    gather_in_place(ctx, "broadcast", blocks, buf, |d| d != root);
}

/// Pipelined binary-tree broadcast for long data: the buffer is cut into
/// k packets that flow down a binary tree (processor v places from the
/// root has children 2v + 1 and 2v + 2), one level per superstep, so
/// that the levels work on successive packets at once.
///
/// k is the number of packets that minimises the predicted cost below on
/// this run's machine ([`Model::of`]); every processor computes the same.
///
/// # Examples
///
/// ```
/// let out = bsp_core::run(7, |ctx| {
///     let mut buf: Vec<u32> = if ctx.pid() == 4 { (0..500).collect() } else { vec![0; 500] };
///     bsp_algos::variants::broadcast_pipelined(ctx, 4, &mut buf);
///     buf.iter().enumerate().all(|(i, &x)| x == i as u32)
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
/// k + ⌊log₂ p⌋ − 1 supersteps (none for p = 1), each an h-relation of
/// h = 2⌈m/k⌉ elements (an inner node sends a packet to each of two
/// children): predicted (k + ⌊log₂ p⌋ − 1) · (l + 2g·B/k) for B bytes.
pub fn broadcast_pipelined<T: Pod + Send>(ctx: &mut Ctx, root: usize, buf: &mut [T]) {
    check_root(ctx, root);
    let (p, me) = (ctx.nprocs(), ctx.pid());
    if p <= 1 {
        return;
    }
    let model = Model::of(ctx);
    let k = pipeline_packets(&model, p, std::mem::size_of_val(buf)).min(buf.len().max(1));
    let packets = Block::new(buf.len(), k);
    let v = (me + p - root) % p; // place in the tree, counted from the root
    let depth = floor_log2(v + 1);
    let children: Vec<usize> = [2 * v + 1, 2 * v + 2]
        .into_iter()
        .filter(|&c| c < p)
        .map(|c| (c + root) % p)
        .collect();
    let len = buf.len();
    for step in 0..pipeline_supersteps(p, k) {
        // A node at depth d sends its first packet in superstep d (the
        // deepest, ⌊log₂ p⌋ − 1), with its length.
        let lengths = (step < floor_log2(p)).then(|| Lengths::new(ctx));
        // A node at depth d forwards packet `step − d`, received in the
        // superstep before (the root holds every packet from the start),
        // and receives packet `step − d + 1` from its parent, straight
        // into its place: the two are disjoint.
        let sends = step.checked_sub(depth).filter(|&j| j < k);
        let receives = (step + 1)
            .checked_sub(depth)
            .filter(|&j| depth > 0 && j < k)
            .map(|j| packets.range(j));
        let split = receives.as_ref().map_or(len, |r| r.start);
        let (front, back) = buf.split_at_mut(split);
        let landing: &mut [T] = match &receives {
            Some(r) => &mut back[..r.len()],
            None => &mut [],
        };
        let front: &[T] = front;
        ctx.with_owned_area("broadcast", landing, |ctx, area| {
            if let Some(j) = sends {
                let packet = &front[packets.range(j)];
                for &c in &children {
                    if !packet.is_empty() {
                        ctx.put_area(c, area, 0, bytemuck::cast_slice(packet));
                    }
                    if let Some(lengths) = lengths.as_ref().filter(|_| j == 0) {
                        lengths.send(ctx, c, len);
                    }
                }
            }
            ctx.sync();
        });
        if let Some(lengths) = lengths {
            lengths.check(ctx, "broadcast", len);
        }
    }
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
