//! All-to-all: the k-level index algorithm over a mixed radix of p.

use bsp_core::{Ctx, Machine};
use bytemuck::Pod;

use super::{auto, Combined, Levels};
use crate::model::Model;

/// The radices of a k-level all-to-all on `p` processors: the prime
/// factors of p, shared out over at most `k` levels so that their
/// products are as even as the factors allow (largest factor first to
/// the smallest level). Levels of radix 1 are dropped.
fn radices(p: usize, k: usize) -> Vec<usize> {
    let mut primes = Vec::new();
    let (mut rest, mut f) = (p, 2);
    while f * f <= rest {
        while rest % f == 0 {
            primes.push(f);
            rest /= f;
        }
        f += 1;
    }
    if rest > 1 {
        primes.push(rest);
    }
    primes.sort_unstable_by(|a, b| b.cmp(a));
    let mut levels = vec![1usize; k.max(1)];
    for prime in primes {
        let smallest = (0..levels.len()).min_by_key(|&i| levels[i]).unwrap_or(0);
        levels[smallest] *= prime;
    }
    levels.retain(|&r| r > 1);
    levels
}

/// One message in flight: its source, its destination and its elements.
struct Item<T> {
    src: usize,
    dst: usize,
    data: Vec<T>,
}

/// Sends `sends[j]` to processor j, for every j, with a `levels`-level
/// algorithm; returns what every processor sent to this one, by source.
///
/// Pids are read as digits in a mixed radix r₁ × … × r_k = p (see
/// [`klevel`](crate::klevel::Levels)). At level i the processors that differ in
/// digit i only form a sub-machine of r_i processors, and each message
/// moves, combined with the others bound the same way, to the member
/// whose digit i is its destination's. After the last level every message
/// is home. [`Levels::One`] (or a prime p) is one direct exchange.
///
/// # Examples
///
/// ```
/// use bsp_algos::variants::{all_to_all_k_level, Levels};
///
/// let out = bsp_core::run(6, |ctx| {
///     let me = ctx.pid() as u32;
///     let sends: Vec<Vec<u32>> = (0..6).map(|j| vec![10 * me + j; j as usize % 2]).collect();
///     all_to_all_k_level(ctx, sends, Levels::Two)
/// })
/// .unwrap();
/// assert_eq!(out.get(3), Some(&(0..6).map(|i| vec![10 * i + 3]).collect::<Vec<_>>()));
/// assert_eq!(out.get(2), Some(&vec![Vec::<u32>::new(); 6]));
/// ```
///
/// # Panics
///
/// If `sends.len() != p`.
///
/// # Cost
///
/// With messages of L bytes and radices r₁ … r_k: per level a split into
/// sub-machines of r_i ([`Model::split`](crate::model::Model::split):
/// l·(2 + 2/r_i)) and one superstep of the sub-machines
/// ([`Model::sub_superstep`](crate::model::Model::sub_superstep): l·(1 + r_i/p)/2)
/// in which each processor sends and receives
/// (r_i − 1)·(p / r_i) messages, h = (r_i − 1)(p / r_i)(L + 24) bytes
/// (24 bytes of source, destination and length per message), in
/// r_i − 1 combined messages. 1 level: 1 superstep, h = (p − 1)(L + 24)
/// in p − 1 messages. Predicted by [`all_to_all_k_level_cost`].
pub fn all_to_all_k_level<T: Pod>(
    ctx: &mut Ctx,
    sends: Vec<Vec<T>>,
    levels: Levels,
) -> Vec<Vec<T>> {
    let (p, me) = (ctx.nprocs(), ctx.pid());
    assert_eq!(
        sends.len(),
        p,
        "bsp-algos: all_to_all needs one vector per processor"
    );
    let radices = radices(p, levels.count(p));
    let mut items: Vec<Item<T>> = sends
        .into_iter()
        .enumerate()
        .map(|(dst, data)| Item { src: me, dst, data })
        .collect();
    if radices.len() <= 1 {
        // Direct: one exchange on the whole machine, each item to its
        // destination.
        items = exchange(ctx, items, |q| q);
    } else {
        let mut weight = 1;
        for r in radices {
            let digit = |q: usize| (q / weight) % r;
            let mine = digit(me);
            let color = me - mine * weight;
            items = ctx.split(color, mine, |sub| exchange(sub, items, digit));
            weight *= r;
        }
    }
    let mut out: Vec<Vec<T>> = (0..p).map(|_| Vec::new()).collect();
    for item in items {
        debug_assert_eq!(item.dst, me);
        out[item.src] = item.data;
    }
    out
}

/// One level: every item goes to the member of this sub-machine whose
/// pid is the digit of the item's destination.
fn exchange<T: Pod>(
    sub: &mut Ctx,
    items: Vec<Item<T>>,
    digit: impl Fn(usize) -> usize,
) -> Vec<Item<T>> {
    let me = sub.pid();
    let q = Combined::<[u64; 2], T>::new(sub);
    let mut kept = Vec::new();
    for item in items {
        let to = digit(item.dst);
        if to == me {
            kept.push(item);
        } else {
            q.send(sub, to, &[item.src as u64, item.dst as u64], &item.data);
        }
    }
    sub.sync();
    for ([src, dst], data) in q.receive(sub).into_iter().flatten() {
        let (src, dst) = (src as usize, dst as usize);
        kept.push(Item { src, dst, data });
    }
    q.release(sub);
    kept
}

/// The seconds [`all_to_all_k_level`] is predicted to take on `p`
/// processors of `machine` for messages of `bytes` bytes each.
///
/// # Examples
///
/// ```
/// use bsp_algos::variants::{all_to_all_k_level_cost, Levels};
/// use bsp_core::{Cost, Machine};
///
/// let c = Cost { l_seconds: 1e-5, g_seconds_per_byte: 1e-9 };
/// let m = Machine::new(c, c);
/// // The BSP model charges h and l, not messages: direct is cheapest,
/// // and more levels only add supersteps and bytes.
/// let direct = all_to_all_k_level_cost(&m, 16, 1024, Levels::One);
/// let two = all_to_all_k_level_cost(&m, 16, 1024, Levels::Two);
/// assert!(direct < two && two < all_to_all_k_level_cost(&m, 16, 1024, Levels::Log));
/// ```
pub fn all_to_all_k_level_cost(machine: &Machine, p: usize, bytes: usize, levels: Levels) -> f64 {
    levels_cost(&auto(machine), p, bytes, levels)
}

/// [`all_to_all_k_level_cost`] under `model` (and so under its router).
pub(crate) fn levels_cost(model: &Model, p: usize, bytes: usize, levels: Levels) -> f64 {
    let radices = radices(p, levels.count(p));
    if radices.len() <= 1 {
        return model.superstep(p.saturating_sub(1) as f64 * (bytes as f64 + 24.0));
    }
    radices
        .iter()
        .map(|&r| {
            let moved = (r - 1) as f64 * (p / r) as f64 * (bytes as f64 + 24.0);
            model.split(r) + model.sub_superstep(p, r, moved, moved * p as f64)
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn radices_multiply_to_p_over_at_most_k_levels() {
        for p in 1..200 {
            for k in 1..9 {
                let r = radices(p, k);
                assert_eq!(r.iter().product::<usize>(), p, "p = {p}, k = {k}");
                assert!(r.len() <= k);
            }
        }
        assert_eq!(radices(16, 2), vec![4, 4]);
        assert_eq!(radices(64, 3), vec![4, 4, 4]);
        assert_eq!(radices(16, 4), vec![2, 2, 2, 2]);
        assert_eq!(radices(12, 2), vec![3, 4]);
        assert_eq!(radices(7, 3), vec![7]);
    }
}
