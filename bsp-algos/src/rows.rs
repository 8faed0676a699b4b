//! The two data movements under reduce, all-reduce and scan: every
//! processor's whole vector to some processors (the direct route), or
//! block j of every vector to processor j (the transpose route).
//!
//! Each helper registers one coarray and releases it after the sync that
//! fills it, returning its local part without a copy.

use bsp_core::Ctx;
use bytemuck::Pod;

use crate::dist::Block;
use crate::ops::{fold_before, fold_into, Op};
use crate::same_len::Lengths;

/// Every other processor's `data` (length m everywhere) on the processors
/// `to` selects, as p − 1 rows of m in pid order, this processor's own row
/// left out (it is folded in from `data` itself, see [`fold_with_mine`]);
/// an empty vector on the others. `what` names the collective in the
/// error that ends the run when the lengths differ.
///
/// One superstep; h = (p − 1)m at a receiving processor.
pub(crate) fn others_to<T: Pod + Send>(
    ctx: &mut Ctx,
    what: &str,
    data: &[T],
    to: impl Fn(usize) -> bool,
) -> Vec<T> {
    let (p, me, m) = (ctx.nprocs(), ctx.pid(), data.len());
    let rows = ctx.coarray::<T>(if to(me) { (p - 1) * m } else { 0 });
    let lengths = Lengths::new(ctx);
    for dst in (0..p).filter(|&d| d != me && to(d)) {
        // Row `me` of the receiver's rows, counted without the receiver's.
        let slot = if me < dst { me } else { me - 1 };
        ctx.put(dst, &rows, slot * m, data);
        lengths.send(ctx, dst, m);
    }
    ctx.sync();
    let rows = ctx.release(rows);
    lengths.check(ctx, what, m);
    rows
}

/// The element-wise fold in pid order of all p vectors of m: `others`, the
/// p − 1 rows of [`others_to`], and `mine`, this processor's (pid `me`).
/// Folded in `others`' own buffer, which is returned: no allocation but
/// for p = 1.
pub(crate) fn fold_with_mine<T: Copy, O: Op<T> + ?Sized>(
    op: &O,
    mut others: Vec<T>,
    me: usize,
    mine: &[T],
) -> Vec<T> {
    let m = mine.len();
    if others.is_empty() {
        return mine.to_vec();
    }
    let (acc, rest) = others.split_at_mut(m);
    let mut rest = rest.chunks_exact(m);
    if me == 0 {
        fold_before(op, mine, acc);
    } else {
        // `acc` is pid 0's row; the rows of pids 1..me come next.
        rest.by_ref()
            .take(me - 1)
            .for_each(|row| fold_into(op, acc, row));
        fold_into(op, acc, mine);
    }
    rest.for_each(|row| fold_into(op, acc, row));
    others.truncate(m);
    others.shrink_to_fit();
    others
}

/// Block `me` (of the block distribution of m over p) of every processor's
/// `data`, as p rows of `blocks.local_len(me)`; `what` names the
/// collective in the error that ends the run when the lengths differ.
///
/// One superstep; h ≈ m(p − 1)/p, p − 1 put records per processor.
pub(crate) fn transpose_blocks<T: Pod + Send>(
    ctx: &mut Ctx,
    what: &str,
    data: &[T],
) -> (Block, Vec<T>) {
    let (p, me) = (ctx.nprocs(), ctx.pid());
    let blocks = Block::new(data.len(), p);
    let rows = ctx.coarray::<T>(p * blocks.local_len(me));
    let lengths = Lengths::new(ctx);
    for dst in (0..p).filter(|&d| d != me) {
        ctx.put(
            dst,
            &rows,
            me * blocks.local_len(dst),
            &data[blocks.range(dst)],
        );
        lengths.send(ctx, dst, data.len());
    }
    let w = blocks.local_len(me);
    ctx.local_mut(&rows)[me * w..(me + 1) * w].copy_from_slice(&data[blocks.range(me)]);
    ctx.sync();
    let rows = ctx.release(rows);
    lengths.check(ctx, what, data.len());
    (blocks, rows)
}

/// The element-wise fold, in row order, of all rows of `rows` (rows of
/// width `w`, at least one), made in the first row's place: `rows`' own
/// buffer is returned, cut to that row (its capacity kept, for a caller
/// that reuses it).
pub(crate) fn fold_all_rows<T: Copy, O: Op<T> + ?Sized>(
    op: &O,
    mut rows: Vec<T>,
    w: usize,
) -> Vec<T> {
    if w > 0 {
        let (acc, rest) = rows.split_at_mut(w);
        rest.chunks_exact(w).for_each(|row| fold_into(op, acc, row));
    }
    rows.truncate(w);
    rows
}

/// The element-wise fold, in row order, of rows `range` of `rows` (rows of
/// width `w`); `None` for an empty range.
pub(crate) fn fold_rows<T: Copy, O: Op<T> + ?Sized>(
    op: &O,
    rows: &[T],
    w: usize,
    range: std::ops::Range<usize>,
) -> Option<Vec<T>> {
    let mut it = range.map(|r| &rows[r * w..(r + 1) * w]);
    let mut acc = it.next()?.to_vec();
    for row in it {
        fold_into(op, &mut acc, row);
    }
    Some(acc)
}

/// Writes `chunk` (this processor's block of the block distribution of the
/// result) into every processor's copy of the result, at the block's place,
/// on the processors `to` selects. Returns the result (empty elsewhere).
///
/// One superstep; h ≈ m(p − 1)/p at a receiver.
pub(crate) fn gather_blocks<T: Pod + Send>(
    ctx: &mut Ctx,
    blocks: Block,
    chunk: &[T],
    to: impl Fn(usize) -> bool,
) -> Vec<T> {
    let (p, me) = (ctx.nprocs(), ctx.pid());
    let out = ctx.coarray::<T>(if to(me) { blocks.len() } else { 0 });
    for dst in (0..p).filter(|&d| d != me && to(d)) {
        ctx.put(dst, &out, blocks.start(me), chunk);
    }
    if to(me) {
        ctx.local_mut(&out)[blocks.range(me)].copy_from_slice(chunk);
    }
    ctx.sync();
    ctx.release(out)
}
