//! Random access read with hot spots (seed 002, Sect. 7): the write's
//! machinery run with requests, then in reverse with the data.

use bsp_core::{Ctx, GetHandle};
use bytemuck::Pod;

use super::plan::{Buckets, Plan, Run};
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

/// Gets issued for runs of bucket-sorted requests, with their start in
/// the bucket-sorted order.
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
    let hits = buckets.hits(index);
    let plan = Plan::build(ctx, buckets, hits, stretch);
    let held = (plan.inter[me + 1] - plan.inter[me]) as usize;
    let sparse_req = ctx.coarray::<u32>(plan.sparse_len[me] as usize);
    let dense_req = ctx.coarray::<u32>(held);
    let asks = ctx.queue::<u64>();
    let answers = ctx.queue::<T>();

    // Stage 1: requests (offsets in their bucket), counting-sorted by
    // bucket straight into the send buffer, to the owners (sparse) or the
    // intermediates (dense).
    let mut offs = vec![0u32; index.len()];
    plan.buckets
        .place(index, &plan.mine, |_, pos, off| offs[pos] = off);
    let runs = plan.runs();
    let requests = |r: &Run| if r.dense { dense_req } else { sparse_req };
    for r in runs.iter().filter(|r| r.to == me) {
        ctx.local_mut(&requests(r))[r.at..r.at + r.len]
            .copy_from_slice(&offs[r.from..r.from + r.len]);
    }
    let out = ctx.coarray_from(offs);
    for r in runs.iter().filter(|r| r.to != me) {
        ctx.put_from(r.to, &requests(r), r.at, &out, r.from, r.len);
    }
    ctx.sync();

    // Stage 2: owners answer sparse requests in place, bucket by bucket;
    // readers fetch them. Intermediates merge equal requests of each piece
    // of a dense bucket (a dense window of the bucket's width) and send the
    // distinct ones to the owners.
    let mut answered = bytemuck::zeroed_vec(plan.sparse_len[me] as usize);
    let asked_sparse = ctx.local(&sparse_req);
    for b in (me * plan.buckets.k..(me + 1) * plan.buckets.k).filter(|&b| !plan.dense[b]) {
        let base = plan.buckets.range(b).start - start;
        let at = plan.slot[b] as usize..(plan.slot[b] + plan.hits[b]) as usize;
        for (a, &o) in answered[at.clone()].iter_mut().zip(&asked_sparse[at]) {
            *a = data[base + o as usize];
        }
    }
    let sparse_ans = ctx.coarray_from(answered);
    let mut sorted: Vec<T> = bytemuck::zeroed_vec(index.len());
    let sparse_gets = fetch(ctx, &runs, false, &sparse_ans, &mut sorted);
    let mut asked: Vec<Vec<u64>> = (0..p).map(|_| Vec::new()).collect();
    let mut ask_of = vec![0u32; held]; // position -> its request in asked[owner]
    let mut first = Vec::new(); // offset in the bucket -> its request, + 1
    let pieces = plan.pieces(me);
    let asked_dense = ctx.local(&dense_req);
    for (b, range) in &pieces {
        let (cover, list) = (plan.buckets.range(*b), &mut asked[plan.buckets.owner(*b)]);
        first.clear();
        first.resize(cover.len(), 0u32);
        for (a, &o) in ask_of[range.clone()]
            .iter_mut()
            .zip(&asked_dense[range.clone()])
        {
            let f = &mut first[o as usize];
            if *f == 0 {
                list.push((cover.start + o as usize) as u64);
                *f = u32::try_from(list.len()).expect("bsp-algos: fewer than 2^32 requests");
            }
            *a = *f - 1;
        }
    }
    for (owner, list) in asked.iter().enumerate() {
        send_all(ctx, owner, &asks, list);
    }
    ctx.sync();
    take_all(ctx, sparse_gets, &mut sorted);
    if plan.any_dense() {
        // Stage 3: owners answer the merged requests, in the order received.
        for (src, list) in receive_by_source(ctx, &asks).into_iter().enumerate() {
            let values: Vec<T> = list.iter().map(|&g| data[g as usize - start]).collect();
            send_all(ctx, src, &answers, &values);
        }
        ctx.sync();

        // Stage 4: intermediates spread the answers over their positions;
        // the readers fetch them.
        let by_owner = receive_by_source(ctx, &answers);
        let mut filled = bytemuck::zeroed_vec(held);
        for (b, range) in pieces {
            let from = &by_owner[plan.buckets.owner(b)];
            for (f, &a) in filled[range.clone()].iter_mut().zip(&ask_of[range]) {
                *f = from[a as usize];
            }
        }
        let dense_ans = ctx.coarray_from(filled);
        let dense_gets = fetch(ctx, &runs, true, &dense_ans, &mut sorted);
        ctx.sync();
        take_all(ctx, dense_gets, &mut sorted);
    }
    // Back from bucket order to request order.
    let mut result = bytemuck::zeroed_vec(index.len());
    plan.buckets
        .place(index, &plan.mine, |i, pos, _| result[i] = sorted[pos]);
    result
}

/// Issues gets for the runs into sparse or dense buckets; runs held by this
/// processor are copied at once.
fn fetch<T: Pod + Send + Sync>(
    ctx: &mut Ctx,
    runs: &[Run],
    dense: bool,
    answers: &bsp_core::Coarray<T>,
    sorted: &mut [T],
) -> Pending<T> {
    let me = ctx.pid();
    let mut pending = Vec::new();
    for r in runs.iter().filter(|r| r.dense == dense) {
        if r.to == me {
            sorted[r.from..r.from + r.len].copy_from_slice(&ctx.local(answers)[r.at..r.at + r.len]);
        } else {
            pending.push((r.from, ctx.get(r.to, answers, r.at, r.len)));
        }
    }
    pending
}

fn take_all<T: Pod>(ctx: &mut Ctx, pending: Pending<T>, sorted: &mut [T]) {
    for (from, handle) in pending {
        let values = ctx.take(handle);
        sorted[from..from + values.len()].copy_from_slice(&values);
    }
}
