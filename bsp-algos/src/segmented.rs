//! Segmented scan over a block-distributed sequence.

use bsp_core::Ctx;
use bytemuck::Pod;

use crate::ops::Op;
use crate::puts_and_sends::put_to_others;

/// Inclusive segmented scan of the global sequence formed by every
/// processor's `data` in pid order: element i becomes the fold of the
/// elements from the start of its segment up to i. A segment starts at
/// every element whose `starts` flag is set, and at the global first
/// element; segments may span processors (and processors with no elements).
///
/// # Examples
///
/// ```
/// use bsp_algos::Sum;
///
/// // global sequence 1 1 | 1 1 1 | 1, segments start at positions 0, 3 and 4
/// let out = bsp_core::run(3, |ctx| {
///     let (data, starts) = match ctx.pid() {
///         0 => (vec![1u32, 1], vec![true, false]),
///         1 => (vec![1, 1, 1], vec![false, true, false]),
///         _ => (vec![1], vec![false]),
///     };
///     bsp_algos::segmented_scan(ctx, &data, &starts, &Sum)
/// })
/// .unwrap();
/// assert_eq!(out.concat(), vec![1, 2, 3, 1, 2, 3]);
/// ```
///
/// # Panics
///
/// If `starts.len() != data.len()`.
///
/// # Cost
///
/// 1 superstep (an all-gather of one carry value and two flags per
/// processor, h = (p − 1)(size + 2) bytes), plus O(local length) work.
pub fn segmented_scan<T: Pod + Send, O: Op<T>>(
    ctx: &mut Ctx,
    data: &[T],
    starts: &[bool],
    op: &O,
) -> Vec<T> {
    assert_eq!(
        data.len(),
        starts.len(),
        "bsp-algos: segmented_scan needs one start flag per element"
    );
    let (p, me) = (ctx.nprocs(), ctx.pid());
    let mut out = Vec::with_capacity(data.len());
    for (i, (&x, &s)) in data.iter().zip(starts).enumerate() {
        out.push(if i == 0 || s {
            x
        } else {
            op.combine(out[i - 1], x)
        });
    }
    // What this processor passes on: its last segment's fold, whether it
    // has any element, and whether a segment starts on it.
    let carry = ctx.coarray::<T>(p);
    let flags = ctx.coarray::<u8>(2 * p);
    let last = out.last().copied().unwrap_or_else(T::zeroed);
    let mine = [u8::from(!data.is_empty()), u8::from(starts.contains(&true))];
    put_to_others(ctx, &carry, me, &[last]);
    put_to_others(ctx, &flags, 2 * me, &mine);
    ctx.sync();
    let (carries, flags) = (ctx.release(carry), ctx.release(flags));
    // Fold the carries of the processors before, back to the nearest one
    // on which a segment starts.
    let mut incoming: Option<T> = None;
    for q in (0..me).rev() {
        if flags[2 * q] == 1 {
            incoming = Some(match incoming {
                Some(later) => op.combine(carries[q], later),
                None => carries[q],
            });
            if flags[2 * q + 1] == 1 {
                break;
            }
        }
    }
    if let Some(c) = incoming {
        let open = starts.iter().position(|&s| s).unwrap_or(data.len());
        for x in &mut out[..open] {
            *x = op.combine(c, *x);
        }
    }
    out
}
