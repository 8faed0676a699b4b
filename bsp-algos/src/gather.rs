//! Gather, all-gather and scatter with variable sizes (*Collective Communication and Computation*, 13.5).

use bsp_core::Ctx;
use bytemuck::Pod;

use crate::puts_and_sends::{receive_by_source, send_all};

/// Every processor's `data` (lengths may differ), in pid order, on the
/// processors `to` selects; the own part is copied locally.
fn gather_to<T: Pod>(ctx: &mut Ctx, data: &[T], to: impl Fn(usize) -> bool) -> Vec<Vec<T>> {
    let (p, me) = (ctx.nprocs(), ctx.pid());
    let q = ctx.queue::<T>();
    for dst in (0..p).filter(|&d| d != me && to(d)) {
        send_all(ctx, dst, &q, data);
    }
    ctx.sync();
    let mut parts = receive_by_source(ctx, &q);
    ctx.release_queue(q);
    if to(me) {
        parts[me] = data.to_vec();
    }
    parts
}

/// Every processor's `data` on `root`, in pid order (`Some` on the root,
/// `None` elsewhere). Lengths may differ between processors.
///
/// # Examples
///
/// ```
/// let out = bsp_core::run(3, |ctx| {
///     let mine = vec![ctx.pid() as u8; ctx.pid()];
///     bsp_algos::gather(ctx, 0, &mine)
/// })
/// .unwrap();
/// assert_eq!(out.get(0), Some(&Some(vec![vec![], vec![1], vec![2, 2]])));
/// assert_eq!(out.get(1), Some(&None));
/// ```
///
/// # Panics
///
/// If `root >= p`.
///
/// # Cost
///
/// 1 superstep; h = Σ mᵢ (all but the root's own part) at the root.
pub fn gather<T: Pod>(ctx: &mut Ctx, root: usize, data: &[T]) -> Option<Vec<Vec<T>>> {
    let p = ctx.nprocs();
    assert!(
        root < p,
        "bsp-algos: gather root {root} out of range (p = {p})"
    );
    let parts = gather_to(ctx, data, |q| q == root);
    (ctx.pid() == root).then_some(parts)
}

/// Every processor's `data`, in pid order, on every processor. Lengths may
/// differ between processors; `.concat()` gives the global sequence.
///
/// # Examples
///
/// ```
/// let out = bsp_core::run(3, |ctx| {
///     let mine = vec![ctx.pid() as u16; 2];
///     bsp_algos::all_gather(ctx, &mine).concat()
/// })
/// .unwrap();
/// assert!(out.iter().all(|all| all == &[0, 0, 1, 1, 2, 2]));
/// ```
///
/// # Cost
///
/// 1 superstep; h = Σ mᵢ − mⱼ at processor j (received), (p − 1)mⱼ sent.
pub fn all_gather<T: Pod>(ctx: &mut Ctx, data: &[T]) -> Vec<Vec<T>> {
    gather_to(ctx, data, |_| true)
}

/// Sends `parts[j]` from `root` to processor j; returns this processor's
/// part. Only the root's `parts` is read (others may pass `&[]`).
///
/// # Examples
///
/// ```
/// let out = bsp_core::run(3, |ctx| {
///     let parts: Vec<Vec<u32>> = if ctx.pid() == 1 {
///         vec![vec![10], vec![], vec![30, 31]]
///     } else {
///         vec![]
///     };
///     bsp_algos::scatter(ctx, 1, &parts)
/// })
/// .unwrap();
/// assert_eq!(out.all(), Some(&vec![vec![10], vec![], vec![30, 31]][..]));
/// ```
///
/// # Panics
///
/// If `root >= p`, or on the root if `parts.len() != p`.
///
/// # Cost
///
/// 1 superstep; h = Σ_{j ≠ root} `parts[j].len()` at the root.
pub fn scatter<T: Pod>(ctx: &mut Ctx, root: usize, parts: &[Vec<T>]) -> Vec<T> {
    let (p, me) = (ctx.nprocs(), ctx.pid());
    assert!(
        root < p,
        "bsp-algos: scatter root {root} out of range (p = {p})"
    );
    let q = ctx.queue::<T>();
    if me == root {
        assert!(
            parts.len() == p,
            "bsp-algos: scatter: root {me} passed {} parts, but there must be one per \
             processor (p = {p})",
            parts.len()
        );
        for (dst, part) in parts.iter().enumerate().filter(|&(d, _)| d != me) {
            send_all(ctx, dst, &q, part);
        }
    }
    ctx.sync();
    let mine = if me == root {
        parts[me].clone()
    } else {
        ctx.receive(&q)
    };
    ctx.release_queue(q);
    mine
}
