//! Prefix sums over processors (*Collective Communication and Computation*, 13.3): element-wise, any
//! associative operator, returning the total as well.

use bsp_core::Ctx;
use bytemuck::Pod;

use crate::ops::{fold_into, Monoid, Op};
use crate::rows::{fold_rows, long_vector, rows_to, transpose_blocks};

/// The element-wise fold of the vectors of the processors before this one
/// (`None` on processor 0), and of all processors.
fn scan_parts<T: Pod + Send, O: Op<T>>(
    ctx: &mut Ctx,
    data: &[T],
    op: &O,
) -> (Option<Vec<T>>, Vec<T>) {
    let (p, me, m) = (ctx.nprocs(), ctx.pid(), data.len());
    if !long_vector::<T>(m, p) {
        let rows = rows_to(ctx, data, |_| true);
        let total = fold_rows(op, &rows, m, 0..p).expect("p >= 1");
        return (fold_rows(op, &rows, m, 0..me), total);
    }
    // Processor j scans block j over the sources, then returns to every
    // processor i its prefix block and the total block: [prefix | total].
    let (blocks, rows) = transpose_blocks(ctx, data);
    let w = blocks.local_len(me);
    let back = ctx.coarray::<T>(2 * m);
    let total = fold_rows(op, &rows, w, 0..p).expect("p >= 1");
    // `prefix` is block `me` folded over processors 0..i (none for i = 0).
    let mut prefix = rows[..w].to_vec();
    for i in 0..p {
        let start = blocks.start(me);
        if i == me {
            let local = ctx.local_mut(&back);
            if i > 0 {
                local[start..start + w].copy_from_slice(&prefix);
            }
            local[m + start..m + start + w].copy_from_slice(&total);
        } else {
            if i > 0 {
                ctx.put(i, &back, start, &prefix);
            }
            ctx.put(i, &back, m + start, &total);
        }
        if i > 0 {
            fold_into(op, &mut prefix, &rows[i * w..(i + 1) * w]);
        }
    }
    ctx.sync();
    let mut before = ctx.release(back);
    let total = before.split_off(m);
    ((me > 0).then_some(before), total)
}

/// Exclusive scan: element-wise `data₀ ⊕ … ⊕ data_{pid−1}` (the identity
/// on processor 0), and the total `data₀ ⊕ … ⊕ data_{p−1}`, on every
/// processor.
///
/// # Examples
///
/// ```
/// use bsp_algos::Sum;
///
/// let out = bsp_core::run(4, |ctx| {
///     let counts = [ctx.pid() as u64 + 1];
///     bsp_algos::exclusive_scan(ctx, &counts, &Sum)
/// })
/// .unwrap();
/// let offsets: Vec<u64> = out.iter().map(|(before, _)| before[0]).collect();
/// assert_eq!(offsets, vec![0, 1, 3, 6]);
/// assert!(out.iter().all(|(_, total)| total == &[10]));
/// ```
///
/// # Panics
///
/// Every processor must pass the same length; otherwise the run ends with
/// an out-of-bounds error (or a panic) at the sync.
///
/// # Cost
///
/// Direct: 1 superstep, h = (p − 1)m. Long vectors (p ≥ 4, m ≥ p and
/// (p − 1)·m·size ≥ 32 KiB): a transpose, a local scan of each block over
/// the processors, and the prefix and total blocks sent back: 2
/// supersteps, h ≈ m and h ≈ 2m.
pub fn exclusive_scan<T: Pod + Send, O: Monoid<T>>(
    ctx: &mut Ctx,
    data: &[T],
    op: &O,
) -> (Vec<T>, Vec<T>) {
    let (before, total) = scan_parts(ctx, data, op);
    let before = before.unwrap_or_else(|| vec![op.identity(); data.len()]);
    (before, total)
}

/// Inclusive scan: element-wise `data₀ ⊕ … ⊕ data_pid`, and the total, on
/// every processor. Needs no identity.
///
/// # Examples
///
/// ```
/// let out = bsp_core::run(3, |ctx| {
///     let mine = [ctx.pid() as u32 + 1];
///     let (upto, total) = bsp_algos::inclusive_scan(ctx, &mine, &|a: u32, b: u32| a * b);
///     (upto[0], total[0])
/// })
/// .unwrap();
/// assert_eq!(out, vec![(1, 6), (2, 6), (6, 6)]);
/// ```
///
/// # Panics
///
/// As [`exclusive_scan`].
///
/// # Cost
///
/// As [`exclusive_scan`].
pub fn inclusive_scan<T: Pod + Send, O: Op<T>>(
    ctx: &mut Ctx,
    data: &[T],
    op: &O,
) -> (Vec<T>, Vec<T>) {
    let (before, total) = scan_parts(ctx, data, op);
    let upto = match before {
        Some(mut acc) => {
            fold_into(op, &mut acc, data);
            acc
        }
        None => data.to_vec(),
    };
    (upto, total)
}
