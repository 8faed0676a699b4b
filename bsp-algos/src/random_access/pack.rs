//! Concentrate and distribute (Shankar and Ranka, Sect. 6): one-to-one moves with
//! sorted destinations between a sparse layout and a packed one.

use bsp_core::Ctx;
use bytemuck::Pod;

use super::checks::check_block;
use crate::dist::Block;
use crate::ops::Sum;
use crate::scan::exclusive_scan;

/// This processor's rank of its first selected element, and the global
/// number of selected elements.
fn ranks(ctx: &mut Ctx, selected: usize) -> (usize, usize) {
    let (before, total) = exclusive_scan(ctx, &[selected as u64], &Sum);
    (before[0] as usize, total[0] as usize)
}

/// The pieces of the global rank range `first..first + n` by owner under
/// `dist`: (owner, offset in the owner's block, offset in the range, length).
fn pieces(dist: Block, first: usize, n: usize) -> Vec<(usize, usize, usize, usize)> {
    let mut out = Vec::new();
    let mut at = first;
    while at < first + n {
        let q = dist.owner(at);
        let end = (first + n).min(dist.start(q + 1));
        out.push((q, at - dist.start(q), at - first, end - at));
        at = end;
    }
    out
}

/// Concentrate: the elements of the global sequence (every processor's
/// `data` in pid order) whose `keep` flag is set, packed in order into a
/// new block-distributed array; returns this processor's block of it.
///
/// # Examples
///
/// ```
/// let out = bsp_core::run(2, |ctx| {
///     let data = [ctx.pid() as u8 * 4, ctx.pid() as u8 * 4 + 1, ctx.pid() as u8 * 4 + 2];
///     let keep = [true, false, ctx.pid() == 1];
///     bsp_algos::concentrate(ctx, &data, &keep)
/// })
/// .unwrap();
/// assert_eq!(out.all(), Some(&vec![vec![0, 4], vec![6]][..]));
/// ```
///
/// # Panics
///
/// If `keep.len() != data.len()`.
///
/// # Cost
///
/// 2 supersteps: an exclusive scan of one count, then one put per
/// destination block touched (h ≤ kept elements sent, ⌈m/p⌉ received, m
/// the number kept).
pub fn concentrate<T: Pod + Send>(ctx: &mut Ctx, data: &[T], keep: &[bool]) -> Vec<T> {
    assert_eq!(
        data.len(),
        keep.len(),
        "bsp-algos: concentrate needs one flag per element"
    );
    let kept: Vec<T> = data
        .iter()
        .zip(keep)
        .filter(|(_, &k)| k)
        .map(|(&x, _)| x)
        .collect();
    let (first, total) = ranks(ctx, kept.len());
    let dist = Block::new(total, ctx.nprocs());
    let out = ctx.coarray::<T>(dist.local_len(ctx.pid()));
    for (q, off, from, n) in pieces(dist, first, kept.len()) {
        if q == ctx.pid() {
            ctx.local_mut(&out)[off..off + n].copy_from_slice(&kept[from..from + n]);
        } else {
            ctx.put(q, &out, off, &kept[from..from + n]);
        }
    }
    ctx.sync();
    ctx.release(out)
}

/// Distribute, the inverse of [`concentrate`]: the element with the r-th
/// set flag of the global `mask` (every processor's `mask` in pid order)
/// receives element r of the block-distributed `packed` array; elements
/// whose flag is clear get `fill`. Returns this processor's part, of
/// `mask.len()` elements.
///
/// # Examples
///
/// ```
/// let out = bsp_core::run(2, |ctx| {
///     // the global mask 1 0 1 | 1 0 1 selects 4 elements: packed 7 8 | 9 10
///     let packed = if ctx.pid() == 0 { vec![7u16, 8] } else { vec![9, 10] };
///     bsp_algos::distribute(ctx, &packed, &[true, false, true], 0)
/// })
/// .unwrap();
/// assert_eq!(out.all(), Some(&vec![vec![7, 0, 8], vec![9, 0, 10]][..]));
/// ```
///
/// # Panics
///
/// If `packed` is not this processor's block of an array with as many
/// elements as there are set flags.
///
/// # Cost
///
/// 2 supersteps: an exclusive scan of one count, then one get per source
/// block touched (h ≤ ⌈m/p⌉ sent, set flags received).
pub fn distribute<T: Pod + Send>(ctx: &mut Ctx, packed: &[T], mask: &[bool], fill: T) -> Vec<T> {
    let selected = mask.iter().filter(|&&m| m).count();
    let (first, total) = ranks(ctx, selected);
    let dist = check_block(ctx, packed.len(), total, "distribute");
    let source = ctx.coarray_from(packed.to_vec());
    let mut handles = Vec::new();
    let mut values = vec![fill; selected];
    for (q, off, from, n) in pieces(dist, first, selected) {
        if q == ctx.pid() {
            values[from..from + n].copy_from_slice(&packed[off..off + n]);
        } else {
            handles.push((from, ctx.get(q, &source, off, n)));
        }
    }
    ctx.sync();
    ctx.release(source);
    for (from, h) in handles {
        let got = ctx.take(h);
        values[from..from + got.len()].copy_from_slice(&got);
    }
    let mut next = values.into_iter();
    mask.iter()
        .map(|&m| {
            if m {
                next.next().expect("one value per set flag")
            } else {
                fill
            }
        })
        .collect()
}
