//! The data movements under reduce, all-reduce, scan and the two-phase
//! broadcast: every processor's whole vector to some processors (the
//! direct route), block j of every vector to processor j (the transpose
//! route), or every processor's block to some processors (the gather);
//! and the folds over what arrived, made in the buffer it arrived in.
//!
//! Each movement registers one coarray (the gather reuses a buffer it is
//! given) and releases it after the sync that fills it, returning its
//! local part without a copy.

use bsp_core::expert::{Areas, OwnedCoarrays};
use bsp_core::Ctx;
use bytemuck::zeroed_vec;
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
    let rows = ctx.coarray_for(what, zeroed_vec::<T>(if to(me) { (p - 1) * m } else { 0 }));
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
    // The rows before `mine` (pid 0's row alone when `me` is 0, whose
    // vector then comes first), folded into the first.
    let (before, after) = others.split_at_mut(me.max(1) * m);
    if me == 0 {
        fold_before(op, mine, before);
    } else {
        fold_into_first(op, before, m);
        fold_into(op, &mut before[..m], mine);
    }
    after
        .chunks_exact(m)
        .for_each(|row| fold_into(op, &mut before[..m], row));
    others.truncate(m);
    others.shrink_to_fit();
    others
}

/// Folds rows 1, 2, ... of `rows` (rows of width `w`) into row 0, in row
/// order.
pub(crate) fn fold_into_first<T: Copy, O: Op<T> + ?Sized>(op: &O, rows: &mut [T], w: usize) {
    if w > 0 {
        let (acc, rest) = rows.split_at_mut(w);
        rest.chunks_exact(w).for_each(|row| fold_into(op, acc, row));
    }
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
    let rows = ctx.coarray_for(what, zeroed_vec::<T>(p * blocks.local_len(me)));
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
/// buffer is returned, cut to that row.
pub(crate) fn fold_all_rows<T: Copy, O: Op<T> + ?Sized>(
    op: &O,
    mut rows: Vec<T>,
    w: usize,
) -> Vec<T> {
    fold_into_first(op, &mut rows, w);
    rows.truncate(w);
    rows
}

/// The element-wise fold, in row order, of all rows of `rows` (rows of
/// width `w`, at least one), in a new vector.
pub(crate) fn fold_rows<T: Copy, O: Op<T> + ?Sized>(op: &O, rows: &[T], w: usize) -> Vec<T> {
    let mut acc = rows[..w].to_vec();
    rows[w..]
        .chunks_exact(w.max(1))
        .for_each(|row| fold_into(op, &mut acc, row));
    acc
}

/// Sends `chunk`, this processor's block of the block distribution
/// `blocks`, to the processors `to` selects, which receive every other
/// processor's block at its place in a vector of `blocks.len()`: `reuse`
/// when given, resized (a buffer whose pages are in use, such as the
/// scatter's or the transpose's before it), else a fresh zeroed one. This
/// processor's own
/// place is left as it was: the caller writes its block there, or has it
/// elsewhere. Returns the vector (empty on the processors not selected).
///
/// One superstep; h ≈ m(p − 1)/p at a receiver.
pub(crate) fn gather_others<T: Pod + Send>(
    ctx: &mut Ctx,
    blocks: Block,
    reuse: Option<Vec<T>>,
    chunk: &[T],
    to: impl Fn(usize) -> bool,
) -> Vec<T> {
    let (p, me) = (ctx.nprocs(), ctx.pid());
    let len = if to(me) { blocks.len() } else { 0 };
    let out = match reuse {
        Some(mut buffer) if len > 0 => {
            buffer.resize(len, T::zeroed());
            ctx.coarray_from(buffer)
        }
        _ => ctx.coarray::<T>(len),
    };
    for dst in (0..p).filter(|&d| d != me && to(d)) {
        ctx.put(dst, &out, blocks.start(me), chunk);
    }
    ctx.sync();
    ctx.release(out)
}

/// An all-gather in place: this processor's block of `buf` (its part of
/// the block distribution `blocks`) goes to every other processor that
/// `to` selects, into the same place of that processor's `buf`, and the
/// selected processors receive every other block straight into theirs
/// (the parts before and after their own block registered as two areas
/// for the superstep, so that a block is never registered while its owner
/// reads it). No copy out of a coarray.
///
/// One superstep; h ≈ m(p − 1)/p at a receiver.
pub(crate) fn gather_in_place<T: Pod + Send>(
    ctx: &mut Ctx,
    what: &str,
    blocks: Block,
    buf: &mut [T],
    to: impl Fn(usize) -> bool,
) {
    let (p, me) = (ctx.nprocs(), ctx.pid());
    let mine = blocks.range(me);
    let (before, rest) = buf.split_at_mut(mine.start);
    let (own, after) = rest.split_at_mut(mine.len());
    let (before, after): (&mut [T], &mut [T]) = if to(me) {
        (before, after)
    } else {
        (&mut [], &mut [])
    };
    let own: &[T] = own;
    let size = std::mem::size_of::<T>();
    ctx.with_owned_area(what, before, |ctx, below| {
        ctx.with_owned_area(what, after, |ctx, above| {
            if !own.is_empty() {
                let to_each = (0..p).filter(|&d| d != me && to(d)).map(|dst| {
                    let theirs = blocks.range(dst);
                    if mine.start < theirs.start {
                        (dst, below, mine.start * size)
                    } else {
                        (dst, above, (mine.start - theirs.end) * size)
                    }
                });
                ctx.multicast_area(bytemuck::cast_slice(own), to_each);
            }
            ctx.sync();
        })
    });
}
