//! The two data movements under reduce, all-reduce and scan: every
//! processor's whole vector to some processors (the direct route), or
//! block j of every vector to processor j (the transpose route).
//!
//! Each helper registers one coarray and releases it after the sync that
//! fills it, returning its local part without a copy.

use bsp_core::Ctx;
use bytemuck::Pod;

use crate::dist::Block;
use crate::ops::{fold_into, Op};

/// Every processor's `data` (length m everywhere) as p rows of m, on the
/// processors `to` selects; an empty vector on the others.
///
/// One superstep; h = (p − 1)m at a receiving processor.
pub(crate) fn rows_to<T: Pod + Send>(
    ctx: &mut Ctx,
    data: &[T],
    to: impl Fn(usize) -> bool,
) -> Vec<T> {
    let (p, me, m) = (ctx.nprocs(), ctx.pid(), data.len());
    let rows = ctx.coarray::<T>(if to(me) { p * m } else { 0 });
    for dst in (0..p).filter(|&d| d != me && to(d)) {
        ctx.put(dst, &rows, me * m, data);
    }
    if to(me) {
        ctx.local_mut(&rows)[me * m..(me + 1) * m].copy_from_slice(data);
    }
    ctx.sync();
    ctx.release(rows)
}

/// Block `me` (of the block distribution of m over p) of every processor's
/// `data`, as p rows of `blocks.local_len(me)`.
///
/// One superstep; h ≈ m(p − 1)/p, p − 1 put records per processor.
pub(crate) fn transpose_blocks<T: Pod + Send>(ctx: &mut Ctx, data: &[T]) -> (Block, Vec<T>) {
    let (p, me) = (ctx.nprocs(), ctx.pid());
    let blocks = Block::new(data.len(), p);
    let rows = ctx.coarray::<T>(p * blocks.local_len(me));
    for dst in (0..p).filter(|&d| d != me) {
        ctx.put(
            dst,
            &rows,
            me * blocks.local_len(dst),
            &data[blocks.range(dst)],
        );
    }
    let w = blocks.local_len(me);
    ctx.local_mut(&rows)[me * w..(me + 1) * w].copy_from_slice(&data[blocks.range(me)]);
    ctx.sync();
    (blocks, ctx.release(rows))
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
