//! k-level collectives over sub-machines, after Hambrusch, Hameed and
//! Khokhar, *Communication Operations on Coarse-Grained Mesh
//! Architectures*.
//!
//! A k-level algorithm partitions the machine into sub-machines in one
//! superstep and runs a (k − 1)-level algorithm in each, independently
//! ([`Ctx::split`](bsp_core::Ctx::split)); a 1-level algorithm sends every
//! message straight to its destination. Levels above one *combine*
//! messages: the source sends one long message per sub-machine, to its
//! leader, instead of one per processor; the log p-level algorithm halves
//! the machine at every level (a binomial tree). Which is cheapest depends
//! on p, the message size and the machine's l and g: combining trades h
//! (moved once per level) for fewer messages per processor, and each level
//! adds a superstep and a split. Every function has a `_cost` companion
//! that predicts its seconds from a [`Machine`]'s g and l, charging a
//! sub-machine's superstep and each split as [`Model::sub_superstep`] and
//! [`Model::split`] do (a sub-machine's l is below the whole machine's,
//! a split costs about 2–3 l), and the rooted supersteps as
//! [`Model::sparse_superstep`] does. The collectives' tables
//! (`variants::broadcast_variants`, `variants::reduce_variants`,
//! `variants::all_to_all_uniform_variants`, which import this module)
//! list the k-level variants beside the others, so the defaults take one
//! where it is predicted cheapest.
//!
//! The one-to-all and all-to-one algorithms cut the machine into g blocks
//! of consecutive pids, g the smallest integer with gᵏ ≥ p (two for log p
//! levels); a block's leader is the root when the root lies in it, else
//! its first processor. The all-to-all algorithm views pids as digits in
//! a mixed radix r₁ × … × r_k = p (the factors of p, shared out over the
//! levels as evenly as they allow) and at level i exchanges within the
//! sub-machines of processors that differ in digit i only: each item
//! travels to the processor whose digit i is its destination's (the 2-step
//! algorithm of the paper at two levels, the hypercube exchange at log p
//! levels when p is a power of two). A p with fewer prime factors than k
//! gets fewer levels: a prime p is always exchanged directly.

mod all_to_all;
mod all_to_one;
mod one_to_all;

pub(crate) use all_to_all::levels_cost as all_to_all_levels_cost;
pub use all_to_all::{all_to_all_k_level, all_to_all_k_level_cost};
pub use all_to_one::{gather_k_level, gather_k_level_cost, reduce_k_level, reduce_k_level_cost};
pub(crate) use one_to_all::pass_whole;
pub use one_to_all::{
    broadcast_k_level, broadcast_k_level_cost, scatter_k_level, scatter_k_level_cost,
};

use std::fmt;

use bsp_core::{Ctx, Machine, Queue, Router, Tag, Tagged};
use bytemuck::Pod;

use crate::model::Model;

/// How many levels of sub-machines a k-level collective uses.
///
/// # Examples
///
/// ```
/// use bsp_algos::variants::Levels;
///
/// assert_eq!(Levels::Two.count(64), 2);
/// assert_eq!(Levels::Log.count(64), 6);
/// assert_eq!(Levels::ALL.map(Levels::name), ["1-level", "2-level", "3-level", "log-p-level"]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Levels {
    /// Direct: every message straight to its destination, no combining.
    One,
    /// Sub-machines of about √p processors.
    Two,
    /// Sub-machines of about p^(2/3), then p^(1/3) processors.
    Three,
    /// ⌈log₂ p⌉ levels: the machine halved at each (a binomial tree).
    Log,
}

impl Levels {
    /// Every variant, from direct to log p levels.
    pub const ALL: [Levels; 4] = [Levels::One, Levels::Two, Levels::Three, Levels::Log];

    /// The variant's name, as benchmarks print it.
    pub fn name(self) -> &'static str {
        match self {
            Levels::One => "1-level",
            Levels::Two => "2-level",
            Levels::Three => "3-level",
            Levels::Log => "log-p-level",
        }
    }

    /// The number of levels k on `p` processors (at least 1).
    pub fn count(self, p: usize) -> usize {
        match self {
            Levels::One => 1,
            Levels::Two => 2,
            Levels::Three => 3,
            Levels::Log => ceil_log2(p).max(1),
        }
    }
}

impl fmt::Display for Levels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

fn ceil_log2(n: usize) -> usize {
    n.next_power_of_two().trailing_zeros() as usize
}

/// The blocks of one level of a one-to-all or all-to-one algorithm on `n`
/// processors with `k` levels left: `g` blocks of consecutive pids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Blocks {
    n: usize,
    g: usize,
}

impl Blocks {
    /// The smallest g ≥ 2 with gᵏ ≥ n; `g == n` means direct (k ≤ 1, or a
    /// machine too small to divide).
    fn new(n: usize, k: usize) -> Blocks {
        if k <= 1 || n <= 2 {
            return Blocks { n, g: n };
        }
        let mut g: usize = 2;
        while g.checked_pow(k as u32).is_some_and(|x| x < n) {
            g += 1;
        }
        Blocks { n, g: g.min(n) }
    }

    fn direct(self) -> bool {
        self.g == self.n
    }

    /// The first pid of block `b` (`b == g` gives n).
    fn start(self, b: usize) -> usize {
        b * self.n / self.g
    }

    /// The block of pid `q`.
    fn of(self, q: usize) -> usize {
        let b = ((q + 1) * self.g - 1) / self.n;
        debug_assert!(self.start(b) <= q && q < self.start(b + 1));
        b
    }

    /// The largest block's size.
    fn largest(self) -> usize {
        self.n.div_ceil(self.g)
    }

    /// The leader of block `b` for a collective rooted at `root`.
    fn leader(self, b: usize, root: usize) -> usize {
        if self.of(root) == b {
            root
        } else {
            self.start(b)
        }
    }
}

/// The cost of the one-to-all (or all-to-one) variant with the levels
/// `Levels::ALL[K]` in a collective's table (a
/// [`CostFn`](crate::model::CostFn)): [`whole_message_cost`], the
/// broadcast's with `MULTICAST`, the reduce's (its mirror) without.
pub(crate) fn tree_levels_cost<const K: usize, const MULTICAST: bool>(
    model: &Model,
    p: usize,
    bytes: usize,
) -> Option<f64> {
    Some(whole_message_cost(
        model,
        p,
        bytes,
        Levels::ALL[K],
        MULTICAST,
    ))
}

/// Predicted seconds of a one-to-all (or all-to-one) algorithm with
/// `levels` in which every leader sends (or receives) the whole message of
/// `bytes` bytes: a broadcast's leader sends one buffer to all the others
/// at once (`multicast`), a reduce's receives one vector from each.
pub(crate) fn whole_message_cost(
    model: &Model,
    p: usize,
    bytes: usize,
    levels: Levels,
    multicast: bool,
) -> f64 {
    if bytes == 0 {
        return 0.0;
    }
    tree_cost(model, p, p, levels.count(p), &|_| bytes as f64, multicast)
}

/// The model the `_cost` functions charge on `machine`: its supersteps by
/// the router [`Router::Auto`] would pick.
fn auto(machine: &Machine) -> Model {
    Model::new(*machine, Router::Auto)
}

/// Predicted seconds of a one-to-all algorithm (or its all-to-one
/// mirror) on sub-machines of `n` of the `p` processors with `k` levels:
/// a level moves `to_leader(blocks)` bytes between the root and each of
/// the g − 1 other leaders (direct: blocks of one, g = n), in each of the
/// p/n sub-machines at once, then, unless direct, splits and runs k − 1
/// levels on the largest block.
fn tree_cost(
    model: &Model,
    p: usize,
    n: usize,
    k: usize,
    to_leader: &dyn Fn(Blocks) -> f64,
    multicast: bool,
) -> f64 {
    if n <= 1 {
        return 0.0;
    }
    let blocks = Blocks::new(n, k);
    let (targets, bytes) = (blocks.g - 1, to_leader(blocks));
    // A broadcast's leader sends one buffer to all the others at once.
    let (h, volume) = if multicast {
        let h = model.multicast_h(bytes, targets);
        (h, model.multicast_volume(bytes, targets))
    } else {
        (targets as f64 * bytes, targets as f64 * bytes)
    };
    let step = model.sub_superstep(p, n, h, volume * p as f64 / n as f64);
    if blocks.direct() {
        return step;
    }
    let q = blocks.largest();
    step + model.split(q) + tree_cost(model, p, q, k - 1, to_leader, multicast)
}

/// A queue for combined messages: one message to a destination is a list
/// of parts, each a tag `K` and a slice, sent whole (not element by
/// element) and received in send order.
struct Combined<K: Pod, T: Pod> {
    q: Queue<Tagged<K, T>, Tag>,
}

impl<K: Pod, T: Pod> Combined<K, T> {
    fn new(ctx: &mut Ctx) -> Self {
        Combined {
            q: ctx.tagged_queue::<K, T>(),
        }
    }

    /// Adds a part with `tag` to the combined message for `dst`.
    fn send(&self, ctx: &mut Ctx, dst: usize, tag: &K, part: &[T]) {
        ctx.send_tagged(dst, &self.q, tag, part);
    }

    /// After the sync: the combined message from each processor, by pid
    /// (empty where none came), as its parts with their tags.
    fn receive(&self, ctx: &mut Ctx) -> Vec<Vec<(K, Vec<T>)>> {
        let mut by_source: Vec<Vec<(K, Vec<T>)>> = (0..ctx.nprocs()).map(|_| Vec::new()).collect();
        for (src, m) in ctx.receive_with_source(&self.q) {
            by_source[src].push((m.tag, m.payload));
        }
        by_source
    }

    fn release(self, ctx: &mut Ctx) {
        ctx.release_queue(self.q);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cover_the_machine_in_order() {
        for n in 1..40 {
            for k in 1..7 {
                let b = Blocks::new(n, k);
                assert!(b.g >= 1 && b.g <= n);
                if !b.direct() {
                    assert!(b.g.pow(k as u32) >= n && (b.g - 1).pow(k as u32) < n);
                }
                for q in 0..n {
                    let i = b.of(q);
                    assert!(b.start(i) <= q && q < b.start(i + 1));
                }
                assert_eq!(b.start(b.g), n);
            }
        }
        // log p levels halve the machine.
        assert_eq!(Blocks::new(16, Levels::Log.count(16)).g, 2);
        assert_eq!(Blocks::new(16, 2).g, 4);
    }
}
