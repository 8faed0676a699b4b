//! Random access write with arbitrary hot spots (Shankar and Ranka, Sect. 3–5).

use std::ops::Range;

use bsp_core::Ctx;
use bytemuck::Pod;

use super::checks::check_writes;
use super::collision::{Collision, Conflict, Resolver};
use super::pairs::{outgoing, Pairs};
use super::plan::{starts, Plan, Route};
use super::window::{absorb, Window};
use crate::dist::Block;

/// Writes `values[i]` to element `index[i]` of a block-distributed global
/// array of `len` elements, of which `target` is this processor's block;
/// writes to one element are resolved by `policy` in writer order (source
/// pid, then input position). Elements nobody writes keep their value; an
/// element written once takes the written value. (For `A[P[i]] += D[i]`,
/// include the old values as writes or start from zeros.)
///
/// This is the hybrid algorithm of Shankar and Ranka (Sect. 4 and 5). The global
/// array is cut into k buckets per processor (kp ≈ min(√len, 256), at
/// least p). One pass counts the writes per bucket, and one exclusive scan
/// of the counts gives every processor the global hits per bucket and its
/// own offset within each bucket. A second pass scatters every write, as
/// its offset in its bucket (4 bytes) and its value, straight into the
/// send buffer at its place (a counting sort by bucket), and the runs
/// travel without another copy. Buckets with at most twice the mean load
/// are *sparse* and their writes go straight to the owner, which resolves
/// them bucket by bucket. *Dense* buckets (hot spots) are stretched over
/// intermediate processors, so that every processor receives about the
/// mean number of writes whatever the skew; each intermediate resolves its
/// piece of a bucket in a dense array of the bucket's width, pieces of a
/// bucket spread over several intermediates are combined by a
/// reduce-scatter among them, and one value per written element reaches
/// the owner. Every step is linear in the writes and the bucket widths, so
/// the time does not depend on how hot the hot spots are (see
/// `benchmarks/examples/bench_access.rs`).
///
/// # Examples
///
/// ```
/// use bsp_algos::{Combine, Sum};
///
/// // Figure 2 of Shankar and Ranka: 8 elements on 2 processors, sum on collision.
/// let out = bsp_core::run(2, |ctx| {
///     let p_of = [7usize, 0, 7, 1, 6, 3, 0];
///     let d = [1u32, 2, 3, 4, 5, 6, 7]; // element i of the figure holds d = i
///     let mine = if ctx.pid() == 0 { 0..3 } else { 3..7 };
///     let mut a = vec![0u32; 4];
///     bsp_algos::raw(ctx, &mut a, 8, &p_of[mine.clone()], &d[mine], &Combine(Sum)).unwrap();
///     a
/// })
/// .unwrap();
/// assert_eq!(out.concat(), vec![2 + 7, 4, 0, 6, 0, 0, 5, 1 + 3]);
/// ```
///
/// # Errors
///
/// Under [`Unique`](crate::Unique), the smallest index written with
/// different values, on every processor.
///
/// # Panics
///
/// If `index` and `values` differ in length, an index is ≥ `len`, or
/// `target` is not this processor's block of `len` elements
/// ([`Block`]).
///
/// # Cost
///
/// With n the total number of writes, m = max(n, len) and w ≈ len/(kp) the
/// bucket width: two local passes over the writes; the exclusive scan of
/// the kp counts (1–2 supersteps); the first stage (1 superstep, h ≤ about
/// 2n/p writes of 4 + `size_of::<T>()` bytes, plus two 12-byte put headers
/// per run, at most kp + p runs); when some bucket is dense, a second (combined
/// pieces to owners, slices to the reduce-scatter: 1 superstep, h ≤ about
/// m/p (index, value) pairs) and, when a dense bucket spans
/// intermediates, a third (1 superstep, h ≤ about 2w + m/p pairs).
/// [`Unique`](crate::Unique) adds one superstep. Each call registers
/// receive and send buffers of about n/p writes and releases them after
/// the first stage.
pub fn raw<T: Pod + Send, C: Collision<T>>(
    ctx: &mut Ctx,
    target: &mut [T],
    len: usize,
    index: &[usize],
    values: &[T],
    policy: &C,
) -> Result<(), Conflict> {
    raw_on(ctx, Route::Stretched, target, len, index, values, policy)
}

/// The naive random access write: every write goes straight to the owner
/// of its element (Shankar and Ranka, Sect. 3, the limited-hot-spot case). Same
/// arguments and results as [`raw`].
///
/// Fast when writes are spread evenly; a processor owning a hot spot
/// receives all of its writes, so the time grows with the hot spot.
///
/// # Examples
///
/// ```
/// use bsp_algos::Last;
///
/// let out = bsp_core::run(3, |ctx| {
///     let mut a = vec![0u8; 1];
///     let writes = [0usize, 1, 2];
///     let v = [ctx.pid() as u8; 3];
///     bsp_algos::variants::raw_direct(ctx, &mut a, 3, &writes, &v, &Last).unwrap();
///     a[0]
/// })
/// .unwrap();
/// assert_eq!(out.all(), Some(&vec![2, 2, 2][..]));
/// ```
///
/// # Errors
///
/// As [`raw`].
///
/// # Panics
///
/// As [`raw`].
///
/// # Cost
///
/// An exclusive scan of p counts (1 superstep), then 1 superstep of h =
/// max(writes sent, writes received) ≤ n at a hot spot's owner.
pub fn raw_direct<T: Pod + Send, C: Collision<T>>(
    ctx: &mut Ctx,
    target: &mut [T],
    len: usize,
    index: &[usize],
    values: &[T],
    policy: &C,
) -> Result<(), Conflict> {
    raw_on(ctx, Route::Direct, target, len, index, values, policy)
}

/// [`raw`] and [`raw_direct`], on `route`.
fn raw_on<T: Pod + Send, C: Collision<T>>(
    ctx: &mut Ctx,
    route: Route,
    target: &mut [T],
    len: usize,
    index: &[usize],
    values: &[T],
    policy: &C,
) -> Result<(), Conflict> {
    let (p, me) = (ctx.nprocs(), ctx.pid());
    let dist = check_writes(ctx, "raw", target, len, index, values);
    let plan = Plan::build(ctx, route, len, index);
    let held = (plan.inter[me + 1] - plan.inter[me]) as usize;
    let sparse_len = plan.sparse_len[me] as usize;
    // Receive buffers: each write as its offset in its bucket and value.
    let sparse = (ctx.coarray::<u32>(sparse_len), ctx.coarray::<T>(sparse_len));
    let dense = (ctx.coarray::<u32>(held), ctx.coarray::<T>(held));
    let finals = Pairs::<T>::new(ctx);
    let slices = Pairs::<T>::new(ctx);

    // Stage 1: a counting sort by bucket scatters the writes straight into
    // the send buffers; every run of writes to a bucket goes to its owner
    // (sparse) or to its stretched positions on the intermediates (dense),
    // put from the send buffers without a buffering copy. Runs to this
    // processor's own sparse buckets stay where they are; runs to its dense
    // pieces are copied into place.
    let mut offs = vec![0u32; index.len()];
    let mut vals: Vec<T> = bytemuck::zeroed_vec(index.len());
    plan.buckets.place(index, &plan.mine, |i, pos, off| {
        offs[pos] = off;
        vals[pos] = values[i];
    });
    let runs = plan.runs();
    for r in runs.iter().filter(|r| r.to == me && r.dense) {
        let (to, from) = (r.at..r.at + r.len, r.from..r.from + r.len);
        ctx.local_mut(&dense.0)[to.clone()].copy_from_slice(&offs[from.clone()]);
        ctx.local_mut(&dense.1)[to].copy_from_slice(&vals[from]);
    }
    let out = (ctx.coarray_from(offs), ctx.coarray_from(vals));
    for r in runs.iter().filter(|r| r.to != me) {
        let (ci, cv) = if r.dense { dense } else { sparse };
        ctx.put_from(r.to, &ci, r.at, &out.0, r.from..r.from + r.len);
        ctx.put_from(r.to, &cv, r.at, &out.1, r.from..r.from + r.len);
    }
    ctx.sync();

    // The owner resolves the writes to its sparse buckets, bucket by
    // bucket, in writer order: those of the processors before it, its own
    // (still in its send buffers), those of the processors after it.
    let start = dist.start(me);
    let mut res = Resolver::new(policy);
    let mut seen = vec![false; plan.buckets.width()];
    // Nothing reaches the buffers after this sync: release them all.
    let (si, sv) = (ctx.release(sparse.0), ctx.release(sparse.1));
    let (oi, ov) = (ctx.release(out.0), ctx.release(out.1));
    let (di, dv) = (ctx.release(dense.0), ctx.release(dense.1));
    // Where this processor's writes to bucket b start in its send buffers.
    let sent_before = starts(&plan.mine);
    let k = plan.buckets.k;
    for b in (me * k..(me + 1) * k).filter(|&b| !plan.dense[b] && plan.hits[b] > 0) {
        let at = (plan.slot[b] + plan.before[b]) as usize;
        let (own, from) = (at..at + plan.mine[b] as usize, sent_before[b]);
        let cover = plan.buckets.range(b);
        let seen = &mut seen[..cover.len()];
        seen.fill(false);
        let window = &mut target[cover.start - start..cover.end - start];
        let before = plan.slot[b] as usize..own.start;
        let after = own.end..(plan.slot[b] + plan.hits[b]) as usize;
        let mut apply =
            |offs: &[u32], vals: &[T]| absorb(window, seen, cover.start, offs, vals, &mut res);
        apply(&si[before.clone()], &sv[before]);
        let sent = from..from + own.len();
        apply(&oi[sent.clone()], &ov[sent]);
        apply(&si[after.clone()], &sv[after]);
    }
    drop((si, sv, oi, ov));
    if !plan.any_dense() {
        return res.finish::<T>(ctx);
    }

    // Stage 2: each intermediate resolves its pieces of dense buckets in a
    // dense window of the bucket's width. A piece holding a whole bucket
    // goes to the owner; a bucket spread over several intermediates is
    // reduce-scattered among them by slices of its index range.
    let mut to_owner = outgoing::<T>(p);
    let mut to_slice = outgoing::<T>(p);
    let mut window = Window::new();
    for (b, range) in plan.pieces(me) {
        let cover = plan.buckets.range(b);
        window.reset(cover.len());
        window.absorb(cover.start, &di[range.clone()], &dv[range], &mut res);
        let span = plan.span(b);
        let slicing = Block::new(cover.len(), span.len());
        for (o, v) in window.written() {
            let out = if span.len() == 1 {
                &mut to_owner[plan.buckets.owner(b)]
            } else {
                &mut to_slice[span.start + slicing.owner(o)]
            };
            out.0.push((cover.start + o) as u64);
            out.1.push(v);
        }
    }
    drop((di, dv));
    finals.send_each(ctx, &to_owner);
    slices.send_each(ctx, &to_slice);
    ctx.sync();
    store(ctx, &finals, target, start);
    if !plan.any_split() {
        finals.release(ctx);
        slices.release(ctx);
        return res.finish::<T>(ctx);
    }

    // Stage 3: the slices, resolved in source order (= writer order) in one
    // window over this processor's slices, go to the owners.
    let (gs, vs) = slices.receive(ctx);
    let mine = my_slices(&plan, me);
    let mut at = vec![0usize];
    for s in &mine {
        at.push(at[at.len() - 1] + s.len());
    }
    window.reset(at[mine.len()]);
    for (&g, &v) in gs.iter().zip(&vs) {
        let g = g as usize;
        let j = mine.partition_point(|s| s.end <= g);
        window.write(at[j] + g - mine[j].start, g, v, &mut res);
    }
    let mut to_owner = outgoing::<T>(p);
    for (o, v) in window.written() {
        let j = at.partition_point(|&a| a <= o) - 1;
        let g = mine[j].start + o - at[j];
        let out = &mut to_owner[dist.owner(g)];
        out.0.push(g as u64);
        out.1.push(v);
    }
    finals.send_each(ctx, &to_owner);
    ctx.sync();
    store(ctx, &finals, target, start);
    finals.release(ctx);
    slices.release(ctx);
    res.finish::<T>(ctx)
}

/// The global index ranges this processor resolves in stage 3: its slice
/// of every dense bucket spread over several intermediates including it.
fn my_slices(plan: &Plan, me: usize) -> Vec<Range<usize>> {
    plan.dense_list
        .iter()
        .filter_map(|&b| {
            let span = plan.span(b);
            (span.len() > 1 && span.contains(&me)).then(|| {
                let cover = plan.buckets.range(b);
                let r = Block::new(cover.len(), span.len()).range(me - span.start);
                cover.start + r.start..cover.start + r.end
            })
        })
        .collect()
}

/// Stores final values (one per element) into this processor's block.
fn store<T: Pod>(ctx: &mut Ctx, finals: &Pairs<T>, target: &mut [T], start: usize) {
    let (gs, vs) = finals.receive(ctx);
    for (g, v) in gs.into_iter().zip(vs) {
        target[g as usize - start] = v;
    }
}
