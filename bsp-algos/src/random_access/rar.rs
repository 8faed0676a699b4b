//! Random access read with hot spots (Shankar and Ranka, Sect. 7): the write's
//! machinery run with requests, then in reverse with the data.

use std::ops::Range;

use bsp_core::{Ctx, GetHandle};
use bytemuck::Pod;

use super::checks::check_block;
use super::plan::{Plan, Route, Run};
use crate::dist::Block;

/// Reads element `index[i]` of a block-distributed global array of `len`
/// elements, of which `data` is this processor's block, for every i;
/// returns the values in the order of `index`.
///
/// Requests are bucketed as in [`raw`](crate::raw): one exclusive scan of
/// per-bucket request counts, then a counting sort scatters each request
/// (its offset in its bucket, 4 bytes) straight into the send buffer.
/// Requests to sparse buckets go straight to the owner, which answers
/// them in place. Requests to dense buckets (hot spots: many readers of
/// few elements) are stretched over intermediate processors, and the owner
/// sends each dense bucket's data (one bucket width) to them instead of
/// answering requests (Shankar and Ranka, Sect. 7); a bucket stretched over several
/// intermediates is sent in slices, one per intermediate, which they then
/// all-gather. Readers fetch their answers with gets. No processor sends
/// or receives much more than its share, however hot the hot spots.
///
/// # Examples
///
/// ```
/// // Figure 1 of Shankar and Ranka with D(i) = 10·i, 8 elements on 2 processors.
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
/// Three local passes over the requests; the exclusive scan of the kp
/// counts (1–2 supersteps); 1 superstep carrying the requests (h ≤ about
/// 2n/p offsets of 4 bytes); 1 superstep with the answers to sparse
/// requests as gets (h ≤ about 2n/p values) and the dense buckets' data
/// (an owner sends at most its block, an intermediate receives at most
/// about half the requests it holds plus 2w values, w ≈ len/(kp)); when a
/// dense bucket spans intermediates, 1 superstep of all-gather (h ≤ about
/// 2w values); when a bucket is dense, 1 superstep with the answers as
/// gets (h ≤ about 2n/p values).
pub fn rar<T: Pod + Send>(ctx: &mut Ctx, data: &[T], len: usize, index: &[usize]) -> Vec<T> {
    rar_on(ctx, Route::Stretched, data, len, index)
}

/// The naive random access read: every request goes straight to the owner
/// of its element, which answers it (Shankar and Ranka, Sect. 3). Same arguments and
/// results as [`rar`]; the owner of a hot spot answers all its readers.
///
/// # Examples
///
/// ```
/// let out = bsp_core::run(3, |ctx| {
///     let d = [ctx.pid() as u8 + 1];
///     bsp_algos::variants::rar_direct(ctx, &d, 3, &[2, 0])
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
pub fn rar_direct<T: Pod + Send>(ctx: &mut Ctx, data: &[T], len: usize, index: &[usize]) -> Vec<T> {
    rar_on(ctx, Route::Direct, data, len, index)
}

/// Gets issued for runs of bucket-sorted requests, with their start in
/// the bucket-sorted order.
type Pending<T> = Vec<(usize, GetHandle<T>)>;

/// [`rar`] and [`rar_direct`], on `route`.
fn rar_on<T: Pod + Send>(
    ctx: &mut Ctx,
    route: Route,
    data: &[T],
    len: usize,
    index: &[usize],
) -> Vec<T> {
    let me = ctx.pid();
    let dist = check_block(ctx, data.len(), len, "rar");
    let start = dist.start(me);
    let plan = Plan::build(ctx, route, len, index);
    let held = (plan.inter[me + 1] - plan.inter[me]) as usize;
    let sparse_req = ctx.coarray::<u32>(plan.sparse_len[me] as usize);
    let dense_req = ctx.coarray::<u32>(held);
    let copies = Copies::new(&plan);
    let bucket_data = ctx.coarray::<T>(copies.len(me));

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
        ctx.put_from(r.to, &requests(r), r.at, &out, r.from..r.from + r.len);
    }
    ctx.sync();

    // Stage 2: owners answer sparse requests in place, bucket by bucket;
    // readers fetch them. Owners send the data of each dense bucket to the
    // intermediates holding its pieces, split in slices over them when
    // there are several (Shankar and Ranka, Sect. 7: one-way data instead of
    // requests and answers).
    // Nothing reaches the request buffers after this sync: release them.
    let asked = ctx.release(sparse_req);
    let dense_asked = ctx.release(dense_req);
    ctx.release(out);
    let mut answered = bytemuck::zeroed_vec(plan.sparse_len[me] as usize);
    let k = plan.buckets.k;
    for b in (me * k..(me + 1) * k).filter(|&b| !plan.dense[b]) {
        let base = plan.buckets.range(b).start - start;
        let at = plan.slot[b] as usize..(plan.slot[b] + plan.hits[b]) as usize;
        for (a, &o) in answered[at.clone()].iter_mut().zip(&asked[at]) {
            *a = data[base + o as usize];
        }
    }
    drop(asked);
    let sparse_ans = ctx.coarray_from(answered);
    let mut sorted: Vec<T> = bytemuck::zeroed_vec(index.len());
    let sparse_gets = fetch(ctx, &runs, false, &sparse_ans, &mut sorted);
    for b in (me * k..(me + 1) * k).filter(|&b| plan.dense[b]) {
        let cover = plan.buckets.range(b);
        for (q, slice) in copies.slices(&plan, b) {
            let from = &data[cover.start - start + slice.start..cover.start - start + slice.end];
            let at = copies.at(q, b) + slice.start;
            if q == me {
                ctx.local_mut(&bucket_data)[at..at + slice.len()].copy_from_slice(from);
            } else {
                ctx.put(q, &bucket_data, at, from);
            }
        }
    }
    ctx.sync();
    take_all(ctx, sparse_gets, &mut sorted);
    ctx.release(sparse_ans);
    if plan.any_dense() {
        // Stage 3, for buckets over several intermediates: they all-gather
        // the slices, so that each holds the whole bucket.
        if plan.any_split() {
            for (b, _) in plan.pieces(me) {
                let slices = copies.slices(&plan, b);
                if slices.len() < 2 {
                    continue;
                }
                let mine = slices[me - slices[0].0].1.clone();
                let at = copies.at(me, b);
                let slice = ctx.local(&bucket_data)[at + mine.start..at + mine.end].to_vec();
                for (q, _) in slices.into_iter().filter(|&(q, _)| q != me) {
                    ctx.put(q, &bucket_data, copies.at(q, b) + mine.start, &slice);
                }
            }
            ctx.sync();
        }

        // Stage 4: intermediates answer the requests of their pieces from
        // the bucket data; the readers fetch the answers.
        let held_data = ctx.release(bucket_data);
        let mut filled = bytemuck::zeroed_vec(held);
        for (b, range) in plan.pieces(me) {
            let bucket = &held_data[copies.at(me, b)..];
            for (f, &o) in filled[range.clone()].iter_mut().zip(&dense_asked[range]) {
                *f = bucket[o as usize];
            }
        }
        drop((held_data, dense_asked));
        let dense_ans = ctx.coarray_from(filled);
        let dense_gets = fetch(ctx, &runs, true, &dense_ans, &mut sorted);
        ctx.sync();
        take_all(ctx, dense_gets, &mut sorted);
        ctx.release(dense_ans);
    } else {
        ctx.release(bucket_data);
    }
    // Back from bucket order to request order.
    let mut result = bytemuck::zeroed_vec(index.len());
    plan.buckets
        .place(index, &plan.mine, |i, pos, _| result[i] = sorted[pos]);
    result
}

/// Where the intermediates keep copies of the dense buckets whose pieces
/// they hold: on processor q, one bucket's width per piece, in the order of
/// [`Plan::pieces`]. Every processor computes the same layout.
struct Copies {
    /// Per processor: (bucket, offset of its copy), by bucket.
    at: Vec<Vec<(usize, usize)>>,
    /// Per processor: the length of its copies.
    len: Vec<usize>,
}

impl Copies {
    fn new(plan: &Plan) -> Self {
        let (mut at, mut len) = (Vec::new(), Vec::new());
        for q in 0..plan.inter.len() - 1 {
            let mut end = 0;
            at.push(
                plan.pieces(q)
                    .into_iter()
                    .map(|(b, _)| {
                        end += plan.buckets.range(b).len();
                        (b, end - plan.buckets.range(b).len())
                    })
                    .collect(),
            );
            len.push(end);
        }
        Copies { at, len }
    }

    /// The length of processor q's copies.
    fn len(&self, q: usize) -> usize {
        self.len[q]
    }

    /// Where processor q keeps its copy of bucket b.
    fn at(&self, q: usize, b: usize) -> usize {
        let i = self.at[q]
            .binary_search_by_key(&b, |&(c, _)| c)
            .expect("a piece of the bucket is held there");
        self.at[q][i].1
    }

    /// Dense bucket b's slices (offsets in the bucket) and the
    /// intermediates they go to first: one per intermediate of its span.
    fn slices(&self, plan: &Plan, b: usize) -> Vec<(usize, Range<usize>)> {
        let span = plan.span(b);
        let slicing = Block::new(plan.buckets.range(b).len(), span.len());
        span.clone()
            .map(|q| (q, slicing.range(q - span.start)))
            .collect()
    }
}

/// Issues gets for the runs into sparse or dense buckets; runs held by this
/// processor are copied at once.
fn fetch<T: Pod + Send>(
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
