//! Reduction to a root and all-reduce (*Collective Communication and Computation*, 13.2), element-wise over
//! vectors, with any associative operator applied in pid order.

use bsp_core::Ctx;
use bytemuck::Pod;

use crate::ops::Op;
use crate::rows::{fold_rows, gather_blocks, long_vector, rows_to, transpose_blocks};

/// Element-wise `data₀ ⊕ data₁ ⊕ … ⊕ data_{p−1}` (in pid order), returned
/// on `root` (`Some`) and `None` elsewhere.
///
/// Short vectors go straight to the root in one superstep; long ones (see
/// `# Cost`) are reduced block-wise on all processors (a transpose) and the
/// blocks then gathered at the root.
///
/// # Examples
///
/// ```
/// use bsp_algos::Sum;
///
/// let out = bsp_core::run(4, |ctx| {
///     let mine = [ctx.pid() as u32, 1];
///     bsp_algos::reduce(ctx, 2, &mine, &Sum)
/// })
/// .unwrap();
/// assert_eq!(out[2], Some(vec![6, 4]));
/// assert_eq!(out[0], None);
/// ```
///
/// # Panics
///
/// If `root >= p`. Every processor must pass the same length; otherwise
/// the run ends with an out-of-bounds error (or a panic) at the sync.
///
/// # Cost
///
/// Direct: 1 superstep, h = (p − 1)m at the root. Long vectors (p ≥ 4,
/// m ≥ p and (p − 1)·m·size ≥ 32 KiB): 2 supersteps, h ≈ m(p − 1)/p each.
pub fn reduce<T: Pod + Send, O: Op<T>>(
    ctx: &mut Ctx,
    root: usize,
    data: &[T],
    op: &O,
) -> Option<Vec<T>> {
    let p = ctx.nprocs();
    assert!(
        root < p,
        "bsp-algos: reduce root {root} out of range (p = {p})"
    );
    let to_root = |q: usize| q == root;
    let m = data.len();
    if long_vector::<T>(m, p) {
        let (blocks, rows) = transpose_blocks(ctx, data);
        let w = blocks.local_len(ctx.pid());
        let chunk = fold_rows(op, &rows, w, 0..p).expect("p >= 1");
        let out = gather_blocks(ctx, blocks, &chunk, to_root);
        (ctx.pid() == root).then_some(out)
    } else {
        let rows = rows_to(ctx, data, to_root);
        (ctx.pid() == root).then(|| fold_rows(op, &rows, m, 0..p).expect("p >= 1"))
    }
}

/// Element-wise `data₀ ⊕ … ⊕ data_{p−1}` (in pid order) written into
/// `data` on every processor.
///
/// # Examples
///
/// ```
/// use bsp_algos::{Max, Min};
///
/// let out = bsp_core::run(3, |ctx| {
///     let mut lo = [ctx.pid() as i64 - 1];
///     let mut hi = lo;
///     bsp_algos::all_reduce(ctx, &mut lo, &Min);
///     bsp_algos::all_reduce(ctx, &mut hi, &Max);
///     (lo[0], hi[0])
/// })
/// .unwrap();
/// assert_eq!(out, vec![(-1, 1); 3]);
/// ```
///
/// # Panics
///
/// Every processor must pass the same length; otherwise the run ends with
/// an out-of-bounds error (or a panic) at the sync.
///
/// # Cost
///
/// Direct: 1 superstep, h = (p − 1)m. Long vectors (as [`reduce`]): a
/// reduce-scatter then an all-gather, 2 supersteps, h ≈ m(p − 1)/p each.
pub fn all_reduce<T: Pod + Send, O: Op<T>>(ctx: &mut Ctx, data: &mut [T], op: &O) {
    let p = ctx.nprocs();
    let m = data.len();
    if long_vector::<T>(m, p) {
        let (blocks, rows) = transpose_blocks(ctx, data);
        let w = blocks.local_len(ctx.pid());
        let chunk = fold_rows(op, &rows, w, 0..p).expect("p >= 1");
        data.copy_from_slice(&gather_blocks(ctx, blocks, &chunk, |_| true));
    } else {
        let rows = rows_to(ctx, data, |_| true);
        data.copy_from_slice(&fold_rows(op, &rows, m, 0..p).expect("p >= 1"));
    }
}
