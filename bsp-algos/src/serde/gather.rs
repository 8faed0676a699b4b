//! Gather and all-gather of one serde value per processor.

use ::serde::de::DeserializeOwned;
use ::serde::Serialize;
use bsp_core::Ctx;

use super::{check_root, decode, encode};

/// Every processor's `value` on `root`, in pid order (`Some` on the root,
/// `None` elsewhere).
///
/// # Examples
///
/// ```
/// let out = bsp_core::run(3, |ctx| {
///     let mine = format!("p{}", ctx.pid());
///     bsp_algos::serde::gather(ctx, 1, &mine)
/// })
/// .unwrap();
/// assert_eq!(out.get(1), Some(&Some(vec!["p0".to_string(), "p1".into(), "p2".into()])));
/// assert_eq!(out.get(0), Some(&None));
/// ```
///
/// # Panics
///
/// If `root >= p`, or if a value does not serialize, or does not decode
/// as a `T` on the root (the processors passed different types); each
/// message names `gather` and the processors.
///
/// # Cost
///
/// 1 superstep; h = Σ bᵢ over the other processors at the root, for values
/// of bᵢ encoded bytes. Each value is encoded once and decoded once (the
/// root's own too, without leaving it).
pub fn gather<T: Serialize + DeserializeOwned>(
    ctx: &mut Ctx,
    root: usize,
    value: &T,
) -> Option<Vec<T>> {
    check_root(ctx, "gather", root);
    let q = ctx.tagged_queue::<u8, u8>();
    let bytes = encode(ctx, "gather", value);
    ctx.send_tagged(root, &q, &0, &bytes);
    ctx.sync();
    let received = ctx.receive_with_source(&q);
    ctx.release_queue(q);
    (ctx.pid() == root).then(|| {
        received
            .into_iter()
            .map(|(src, m)| decode(ctx, "gather", src, &m.payload))
            .collect()
    })
}

/// Every processor's `value`, in pid order, on every processor.
///
/// # Examples
///
/// ```
/// let out = bsp_core::run(3, |ctx| {
///     let mine = (ctx.pid(), vec!['x'; ctx.pid()]);
///     bsp_algos::serde::all_gather(ctx, &mine)
/// })
/// .unwrap();
/// let expected = vec![(0, vec![]), (1, vec!['x']), (2, vec!['x', 'x'])];
/// assert!(out.iter().all(|all| all == &expected));
/// ```
///
/// # Panics
///
/// If a value does not serialize, or does not decode as a `T` (the
/// processors passed different types); the message names `all_gather` and
/// the processors.
///
/// # Cost
///
/// 1 superstep; h = max(Σ_{i≠j} bᵢ received, (p − 1)bⱼ sent) at processor
/// j, for values of bᵢ encoded bytes. Each value is encoded once, and
/// decoded once on every processor.
pub fn all_gather<T: Serialize + DeserializeOwned>(ctx: &mut Ctx, value: &T) -> Vec<T> {
    let (p, me) = (ctx.nprocs(), ctx.pid());
    let q = ctx.tagged_queue::<u8, u8>();
    let bytes = encode(ctx, "all_gather", value);
    for dst in (0..p).filter(|&d| d != me) {
        ctx.send_tagged(dst, &q, &0, &bytes);
    }
    ctx.sync();
    let mut others = ctx.receive_with_source(&q).into_iter();
    ctx.release_queue(q);
    (0..p)
        .map(|q| match q == me {
            true => decode(ctx, "all_gather", me, &bytes),
            false => {
                let (src, m) = others
                    .next()
                    .expect("one message from every other processor");
                decode(ctx, "all_gather", src, &m.payload)
            }
        })
        .collect()
}
