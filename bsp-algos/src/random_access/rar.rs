//! Random access read with hot spots (seed 002, Sect. 7): the write's
//! machinery run with requests, then in reverse with the data.

use std::collections::HashMap;

use bsp_core::{Ctx, GetHandle};
use bytemuck::Pod;

use super::plan::{Buckets, Plan};
use super::raw::check_block;
use crate::comm::{receive_by_source, send_all};

/// Reads element `index[i]` of a block-distributed global array of `len`
/// elements, of which `data` is this processor's block, for every i;
/// returns the values in the order of `index`.
///
/// Requests are bucketed as in [`raw`](crate::raw): one exclusive scan of
/// per-bucket request counts; requests to sparse buckets go straight to
/// the owner, requests to dense buckets (hot spots: many readers of few
/// elements) are stretched over intermediate processors, which merge equal
/// requests so that the owner answers each element once per piece; the
/// answers travel back the same way. No processor sends or receives much
/// more than its share of the requests, however hot the hot spots.
///
/// # Examples
///
/// ```
/// // Figure 1 of seed 002 with D(i) = 10·i, 8 elements on 2 processors.
/// let out = bsp_core::run(2, |ctx| {
///     let d: Vec<u32> = (0..4).map(|i| 10 * (4 * ctx.pid() as u32 + i)).collect();
///     let reads = if ctx.pid() == 0 { vec![7, 0, 7] } else { vec![1, 6, 3, 0] };
///     bsp_algos::rar(ctx, &d, 8, &reads)
/// })
/// .unwrap();
/// assert_eq!(out.concat(), vec![70, 0, 70, 10, 60, 30, 0]);
/// ```
///
/// # Panics
///
/// If an index is ≥ `len`, or `data` is not this processor's block of
/// `len` elements ([`Block`](crate::Block)).
///
/// # Cost
///
/// The exclusive scan of kp ≈ √len counts (1–2 supersteps), then 1
/// superstep carrying the requests (h ≤ about n/p indices), and, when a
/// bucket is dense, 2 more: merged requests to owners (h ≤ about
/// 2·len/p + len/k), answers back (the same), with the replies to the
/// readers travelling as gets (h ≤ about n/p values).
pub fn rar<T: Pod + Send + Sync>(ctx: &mut Ctx, data: &[T], len: usize, index: &[usize]) -> Vec<T> {
    let buckets = Buckets::balanced(len, ctx.nprocs());
    rar_with(ctx, buckets, true, data, index)
}

/// The naive random access read: every request goes straight to the owner
/// of its element, which answers it (seed 002, Sect. 3). Same arguments and
/// results as [`rar`]; the owner of a hot spot answers all its readers.
///
/// # Examples
///
/// ```
/// let out = bsp_core::run(3, |ctx| {
///     let d = [ctx.pid() as u8 + 1];
///     bsp_algos::rar_direct(ctx, &d, 3, &[2, 0])
/// })
/// .unwrap();
/// assert!(out.iter().all(|v| v == &[3, 1]));
/// ```
///
/// # Panics
///
/// As [`rar`].
///
/// # Cost
///
/// An exclusive scan of p counts (1 superstep), then 1 superstep: requests
/// (h ≤ n at a hot spot's owner) and the answers as gets.
pub fn rar_direct<T: Pod + Send + Sync>(
    ctx: &mut Ctx,
    data: &[T],
    len: usize,
    index: &[usize],
) -> Vec<T> {
    let buckets = Buckets::one_per_processor(len, ctx.nprocs());
    rar_with(ctx, buckets, false, data, index)
}

/// Gets issued for runs of sorted requests, with their start in the sorted
/// order.
type Pending<T> = Vec<(usize, GetHandle<T>)>;

fn rar_with<T: Pod + Send + Sync>(
    ctx: &mut Ctx,
    buckets: Buckets,
    stretch: bool,
    data: &[T],
    index: &[usize],
) -> Vec<T> {
    let (p, me) = (ctx.nprocs(), ctx.pid());
    let dist = check_block(ctx, data.len(), buckets.dist.len(), "rar");
    let start = dist.start(me);
    let (counts, order) = buckets.sort(index);
    let plan = Plan::build(ctx, buckets, counts, stretch);
    let held = (plan.inter[me + 1] - plan.inter[me]) as usize;
    let sparse_len = plan.sparse_len[me] as usize;
    let sparse_req = ctx.coarray::<u64>(sparse_len);
    let sparse_ans = ctx.coarray::<T>(sparse_len);
    let dense_req = ctx.coarray::<u64>(held);
    let dense_ans = ctx.coarray::<T>(held);
    let asks = ctx.queue::<u64>();
    let answers = ctx.queue::<T>();

    // Stage 1: requests to the owners (sparse) or intermediates (dense).
    let sorted: Vec<u64> = order.iter().map(|&i| index[i] as u64).collect();
    let mut runs = Vec::new(); // (bucket, processor, offset, count, start in sorted)
    let mut from = 0;
    for b in 0..plan.buckets.count() {
        for (q, off, n) in plan.runs(b) {
            let coarray = if plan.dense[b] {
                &dense_req
            } else {
                &sparse_req
            };
            if q == me {
                ctx.local_mut(coarray)[off..off + n].copy_from_slice(&sorted[from..from + n]);
            } else {
                ctx.put(q, coarray, off, &sorted[from..from + n]);
            }
            runs.push((b, q, off, n, from));
            from += n;
        }
    }
    ctx.sync();

    // Stage 2: owners answer sparse requests in place; readers fetch them.
    // Intermediates send each piece's distinct requests to the owners.
    let answered: Vec<T> = ctx
        .local(&sparse_req)
        .iter()
        .map(|&g| data[g as usize - start])
        .collect();
    ctx.local_mut(&sparse_ans).copy_from_slice(&answered);
    let mut result = vec![T::zeroed(); index.len()];
    let sparse_gets = fetch(ctx, &runs, &plan, false, &sparse_ans, &mut result);
    let mut asked: Vec<Vec<u64>> = (0..p).map(|_| Vec::new()).collect();
    let mut slot: HashMap<u64, (usize, usize)> = HashMap::new(); // index -> (owner, position)
    let requests = ctx.local(&dense_req);
    for (b, range) in plan.pieces(me) {
        let owner = plan.buckets.owner(b);
        for &g in &requests[range] {
            slot.entry(g).or_insert_with(|| {
                asked[owner].push(g);
                (owner, asked[owner].len() - 1)
            });
        }
    }
    for (owner, list) in asked.iter().enumerate() {
        send_all(ctx, owner, &asks, list);
    }
    ctx.sync();
    take_all(ctx, sparse_gets, &mut result);
    if !plan.any_dense() {
        return unsort(&order, result);
    }

    // Stage 3: owners answer the merged requests, in the order received.
    for (src, list) in receive_by_source(ctx, &asks).into_iter().enumerate() {
        let values: Vec<T> = list.iter().map(|&g| data[g as usize - start]).collect();
        send_all(ctx, src, &answers, &values);
    }
    ctx.sync();

    // Stage 4: intermediates spread the answers over their positions; the
    // readers fetch them.
    let by_owner = receive_by_source(ctx, &answers);
    let filled: Vec<T> = ctx
        .local(&dense_req)
        .iter()
        .map(|g| {
            let (owner, k) = slot[g];
            by_owner[owner][k]
        })
        .collect();
    ctx.local_mut(&dense_ans).copy_from_slice(&filled);
    let dense_gets = fetch(ctx, &runs, &plan, true, &dense_ans, &mut result);
    ctx.sync();
    take_all(ctx, dense_gets, &mut result);
    unsort(&order, result)
}

/// Issues gets for the runs into sparse or dense buckets; runs held by this
/// processor are copied at once.
fn fetch<T: Pod + Send + Sync>(
    ctx: &mut Ctx,
    runs: &[(usize, usize, usize, usize, usize)],
    plan: &Plan,
    dense: bool,
    answers: &bsp_core::Coarray<T>,
    result: &mut [T],
) -> Pending<T> {
    let me = ctx.pid();
    let mut pending = Vec::new();
    for &(_, q, off, n, from) in runs.iter().filter(|r| plan.dense[r.0] == dense) {
        if q == me {
            result[from..from + n].copy_from_slice(&ctx.local(answers)[off..off + n]);
        } else {
            pending.push((from, ctx.get(q, answers, off, n)));
        }
    }
    pending
}

fn take_all<T: Pod>(ctx: &mut Ctx, pending: Pending<T>, result: &mut [T]) {
    for (from, handle) in pending {
        let values = ctx.take(handle);
        result[from..from + values.len()].copy_from_slice(&values);
    }
}

/// Puts the answers, in bucket-sorted order, back into request order.
fn unsort<T: Pod>(order: &[usize], sorted: Vec<T>) -> Vec<T> {
    let mut out = vec![T::zeroed(); order.len()];
    for (&i, v) in order.iter().zip(sorted) {
        out[i] = v;
    }
    out
}
