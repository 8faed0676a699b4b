//! Random access writes with sorted destinations (Shankar and Ranka, Sect. 6):
//! monotonic RAW (Fig. 11) and generalize (Fig. 12).

use bsp_core::Ctx;
use bytemuck::Pod;

use super::checks::{check_sorted, check_writes};
use super::collision::{Collision, Conflict, Resolver};
use super::pairs::{outgoing, Pairs};
use crate::ops::Max;
use crate::puts_and_sends::put_to_others;
use crate::scan::exclusive_scan;

/// [`raw`](crate::raw) for destinations sorted in writer order: `index`
/// is nondecreasing on each processor and across processors (in pid
/// order). Same arguments, semantics and results.
///
/// Each processor first combines its runs of writes to one element, so
/// it sends at most one write per element; a write run that continues
/// over several processors is completed by the last of them, which gets
/// the others' partial results from one all-gather of the boundary
/// elements. What remains goes straight to the owners; no processor sends
/// or receives more than ⌈len/p⌉ + its own writes' worth.
///
/// # Examples
///
/// ```
/// use bsp_algos::{Combine, Sum};
///
/// let out = bsp_core::run(3, |ctx| {
///     // globally: 0 0 | 0 1 1 | 1 5 5 -> element 0 gets 3, 1 gets 3, 5 gets 2
///     let index = [vec![0, 0], vec![0, 1, 1], vec![1, 5, 5]][ctx.pid()].clone();
///     let ones = vec![1u64; index.len()];
///     let mut a = vec![0u64; 2];
///     bsp_algos::monotonic_raw(ctx, &mut a, 6, &index, &ones, &Combine(Sum)).unwrap();
///     a
/// })
/// .unwrap();
/// assert_eq!(out.concat(), vec![3, 3, 0, 0, 0, 2]);
/// ```
///
/// # Errors
///
/// As [`raw`](crate::raw).
///
/// # Panics
///
/// As [`raw`](crate::raw), and if the destinations are not sorted (on the
/// processor that finds it).
///
/// # Cost
///
/// 2 supersteps: an all-gather of 3 words and 2 values per processor, then
/// h ≤ max(local writes, ⌈len/p⌉) (+ [`Unique`](crate::Unique): 1 more).
pub fn monotonic_raw<T: Pod + Send, C: Collision<T>>(
    ctx: &mut Ctx,
    target: &mut [T],
    len: usize,
    index: &[usize],
    values: &[T],
    policy: &C,
) -> Result<(), Conflict> {
    let dist = check_writes(ctx, "monotonic_raw", target, len, index, values);
    check_sorted(index, len, "monotonic_raw");
    let (p, me) = (ctx.nprocs(), ctx.pid());
    let mut res = Resolver::new(policy);
    // Local segmented combine: one write per distinct destination.
    let (mut gs, mut vs): (Vec<usize>, Vec<T>) = (Vec::new(), Vec::new());
    for (&g, &v) in index.iter().zip(values) {
        match gs.last() {
            Some(&last) if last == g => {
                let acc = vs.last_mut().expect("same length");
                *acc = res.merge(g, *acc, v);
            }
            _ => {
                gs.push(g);
                vs.push(v);
            }
        }
    }
    // Boundaries: [nonempty, first, last] and [first value, last value].
    let words = ctx.coarray::<u64>(3 * p);
    let ends = ctx.coarray::<T>(2 * p);
    let finals = Pairs::<T>::new(ctx);
    let mine_w = match (gs.first(), gs.last()) {
        (Some(&f), Some(&l)) => [1, f as u64, l as u64],
        _ => [0, 0, 0],
    };
    let mine_v = match (vs.first(), vs.last()) {
        (Some(&f), Some(&l)) => [f, l],
        _ => [T::zeroed(); 2],
    };
    put_to_others(ctx, &words, 3 * me, &mine_w);
    put_to_others(ctx, &ends, 2 * me, &mine_v);
    ctx.sync();
    let (w, e) = (ctx.release(words), ctx.release(ends));
    let nonempty = |q: usize| q != me && w[3 * q] == 1;
    if let (Some(&first), Some(&last)) = (gs.first(), gs.last()) {
        if let Some(q) = (0..me)
            .rev()
            .find(|&q| nonempty(q) && w[3 * q + 2] as usize > first)
        {
            panic!(
                "bsp-algos: monotonic_raw needs destinations sorted across processors, but processor {q} \
                 writes to {} and processor {me} then to {first}",
                w[3 * q + 2]
            );
        }
        // Complete the run continuing from earlier processors...
        let carry = (0..me)
            .filter(|&q| nonempty(q) && w[3 * q + 2] as usize == first)
            .map(|q| e[2 * q + 1])
            .reduce(|a, b| res.merge(first, a, b));
        if let Some(c) = carry {
            vs[0] = res.merge(first, c, vs[0]);
        }
        // ...and leave a run continuing on later processors to them.
        if (me + 1..p).any(|q| nonempty(q) && w[3 * q + 1] as usize == last) {
            gs.pop();
            vs.pop();
        }
    }
    let mut out = outgoing::<T>(p);
    for (g, v) in gs.into_iter().zip(vs) {
        let o = &mut out[dist.owner(g)];
        o.0.push(g as u64);
        o.1.push(v);
    }
    finals.send_each(ctx, &out);
    ctx.sync();
    let start = dist.start(me);
    let (gs, vs) = finals.receive(ctx);
    finals.release(ctx);
    for (g, v) in gs.into_iter().zip(vs) {
        target[g as usize - start] = v;
    }
    res.finish::<T>(ctx)
}

/// Generalize (Shankar and Ranka, Fig. 12): global writer i (in pid order, then
/// input order) writes `values[i]` to every element `ends[i − 1] + 1 ..=
/// ends[i]` of the block-distributed global array (with `ends[−1] = −1`),
/// so that each element receives a copy of one value. `ends` must be
/// nondecreasing globally; a writer whose range is empty writes nothing,
/// and elements after the last end keep their value.
///
/// # Examples
///
/// ```
/// // Figure 12 of Shankar and Ranka: P = 1 4 5 7, D(i) = 10 + i.
/// let out = bsp_core::run(2, |ctx| {
///     let (ends, values) = if ctx.pid() == 0 { (vec![1, 4], vec![10u8, 11]) } else { (vec![5, 7], vec![12, 13]) };
///     let mut a = vec![0u8; 4];
///     bsp_algos::generalize(ctx, &mut a, 8, &ends, &values);
///     a
/// })
/// .unwrap();
/// assert_eq!(out.concat(), vec![10, 10, 11, 11, 11, 12, 13, 13]);
/// ```
///
/// # Panics
///
/// If `ends` and `values` differ in length, `ends` is not sorted or holds
/// an index ≥ `len`, or `target` is not this processor's block.
///
/// # Cost
///
/// 2 supersteps: an exclusive max-scan of one word, then h ≤ local writers
/// + p (each range split at block boundaries) sent, ≤ ⌈len/p⌉ received.
pub fn generalize<T: Pod + Send>(
    ctx: &mut Ctx,
    target: &mut [T],
    len: usize,
    ends: &[usize],
    values: &[T],
) {
    let dist = check_writes(ctx, "generalize", target, len, ends, values);
    check_sorted(ends, len, "generalize");
    let (p, me) = (ctx.nprocs(), ctx.pid());
    // The first element not yet covered by earlier processors.
    let reach = ends.last().map_or(0, |&g| g as u64 + 1);
    let (before, _) = exclusive_scan(ctx, &[reach], &Max);
    let finals = Pairs::<T>::new(ctx);
    let mut lo = before[0] as usize;
    let mut out = outgoing::<T>(p);
    for (&hi, &v) in ends.iter().zip(values) {
        // Send the range lo..=hi (if not empty) to each owner it touches,
        // as its clipped last index: the ranges tile the array in order.
        while lo <= hi {
            let q = dist.owner(lo);
            let end = hi.min(dist.start(q + 1) - 1);
            out[q].0.push(end as u64);
            out[q].1.push(v);
            lo = end + 1;
        }
    }
    finals.send_each(ctx, &out);
    ctx.sync();
    let start = dist.start(me);
    let mut at = start;
    let (gs, vs) = finals.receive(ctx);
    finals.release(ctx);
    for (end, v) in gs.into_iter().zip(vs) {
        let end = end as usize + 1;
        target[at - start..end - start].fill(v);
        at = end;
    }
}
