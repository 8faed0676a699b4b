//! The hypercube pattern of all-reduce and prefix sums for any p: the
//! q = 2^⌊log₂ p⌋ processors of a hypercube, where for p not a power of
//! two the first 2r processors (r = p − q) work in pairs, so that every
//! hypercube node stands for a contiguous range of pids.

use bsp_core::{Coarray, Ctx};
use bytemuck::Pod;

use crate::model::{floor_log2, Model};
use crate::ops::{fold_before, fold_into, Op};
use crate::same_len::Lengths;

/// The hypercube over p processors: processors 2j and 2j + 1 (j < r) are
/// node j, processor i ≥ 2r is node i − r.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cube {
    /// Nodes: the largest power of two ≤ p.
    pub(crate) nodes: usize,
    /// Pairs of processors that share a node: p − nodes.
    pub(crate) pairs: usize,
}

impl Cube {
    pub(crate) fn new(p: usize) -> Self {
        let nodes = 1 << floor_log2(p);
        Cube {
            nodes,
            pairs: p.saturating_sub(nodes),
        }
    }

    /// The dimensions: log₂ of the nodes.
    pub(crate) fn dims(&self) -> usize {
        self.nodes.trailing_zeros() as usize
    }

    /// Processor `i`'s node; `None` for the second processor of a pair,
    /// whose data its partner `i − 1` carries.
    pub(crate) fn node_of(&self, i: usize) -> Option<usize> {
        if i < 2 * self.pairs {
            (i % 2 == 0).then_some(i / 2)
        } else {
            Some(i - self.pairs)
        }
    }

    /// The processor that carries node `v`.
    pub(crate) fn carrier(&self, v: usize) -> usize {
        if v < self.pairs {
            2 * v
        } else {
            v + self.pairs
        }
    }

    /// Whether processor `i` is the second of a pair.
    pub(crate) fn is_passenger(&self, i: usize) -> bool {
        self.node_of(i).is_none()
    }

    /// The predicted seconds of the hypercube rounds (h = `bytes` each),
    /// plus, when pairs exist, one superstep of h = `bytes` to join them
    /// and one of h = `back` bytes to part them.
    pub(crate) fn seconds(&self, model: &Model, bytes: usize, back: usize) -> f64 {
        let rounds = model.supersteps(self.dims(), bytes as f64);
        if self.pairs > 0 {
            rounds + model.superstep(bytes as f64) + model.superstep(back as f64)
        } else {
            rounds
        }
    }
}

/// The first superstep of a run over the cube: the second processor of
/// each pair sends `acc` (its vector) to the first, which folds it in:
/// `acc ⊕ partner's`; the others keep `acc`. One superstep when pairs
/// exist, none otherwise. `inbox` holds at least `acc.len()` elements;
/// `what` names the collective in the error that ends the run when the
/// lengths differ.
pub(crate) fn join_pairs<T: Pod + Send, O: Op<T>>(
    ctx: &mut Ctx,
    what: &str,
    cube: &Cube,
    inbox: &Coarray<T>,
    acc: &mut [T],
    op: &O,
) {
    let me = ctx.pid();
    if cube.pairs == 0 {
        return;
    }
    let lengths = Lengths::new(ctx);
    if cube.is_passenger(me) {
        ctx.put(me - 1, inbox, 0, acc);
        lengths.send(ctx, me - 1, acc.len());
    }
    ctx.sync();
    lengths.check(ctx, what, acc.len());
    if me < 2 * cube.pairs && !cube.is_passenger(me) {
        fold_into(op, acc, &ctx.local(inbox)[..acc.len()]);
    }
}

/// The hypercube rounds: every node sends `total` to its neighbour
/// along each dimension in turn and folds in what it receives, lower
/// node first, leaving the fold over all nodes in `total`. Returns, for
/// an exclusive prefix, the fold over the nodes below this one (`None` on
/// node 0 or when `prefix` is false). dims() supersteps; `what` names
/// the collective in the error that ends the run when the lengths differ.
pub(crate) fn rounds<T: Pod + Send, O: Op<T>>(
    ctx: &mut Ctx,
    what: &str,
    cube: &Cube,
    inbox: &Coarray<T>,
    total: &mut [T],
    op: &O,
    prefix: bool,
) -> Option<Vec<T>> {
    let node = cube.node_of(ctx.pid());
    let m = total.len();
    let mut below: Option<Vec<T>> = None;
    for d in 0..cube.dims() {
        let bit = 1 << d;
        let lengths = Lengths::new(ctx);
        if let Some(v) = node {
            let partner = cube.carrier(v ^ bit);
            ctx.put(partner, inbox, 0, total);
            lengths.send(ctx, partner, m);
        }
        ctx.sync();
        lengths.check(ctx, what, m);
        if let Some(v) = node {
            let theirs = &ctx.local(inbox)[..m];
            if v & bit != 0 {
                if prefix {
                    match below.as_mut() {
                        Some(acc) => fold_before(op, theirs, acc),
                        None => below = Some(theirs.to_vec()),
                    }
                }
                fold_before(op, theirs, total);
            } else {
                fold_into(op, total, theirs);
            }
        }
    }
    below
}
