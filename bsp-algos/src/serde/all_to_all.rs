//! Personalized all-to-all exchange of serde values.

use ::serde::de::DeserializeOwned;
use ::serde::Serialize;
use bsp_core::Ctx;

/// Sends `sends[j]` to processor j, for every j; returns what every
/// processor sent to this one, indexed by source pid: element i of the
/// result came from processor i. Each processor's own part stays where it
/// is (moved, not encoded).
///
/// # Examples
///
/// ```
/// let out = bsp_core::run(3, |ctx| {
///     let me = ctx.pid();
///     let sends: Vec<Vec<(String, u64)>> =
///         (0..3).map(|j| vec![(format!("{me}→{j}"), j as u64); j]).collect();
///     bsp_algos::serde::all_to_all(ctx, sends)
/// })
/// .unwrap();
/// assert_eq!(out.get(0), Some(&vec![Vec::<(String, u64)>::new(); 3]));
/// assert_eq!(out.get(1).unwrap()[2], vec![("2→1".to_string(), 1)]);
/// ```
///
/// # Panics
///
/// If `sends.len() != p` (naming `all_to_all`, the processor and both
/// lengths), or if an element does not serialize, or does not decode as a
/// `T` (the processors passed different types).
///
/// # Cost
///
/// 1 superstep; h = max over processors of the encoded bytes sent or
/// received (own part excluded), plus one 24-byte header per non-empty
/// destination. Each element is encoded once and decoded once.
pub fn all_to_all<T: Serialize + DeserializeOwned>(
    ctx: &mut Ctx,
    mut sends: Vec<Vec<T>>,
) -> Vec<Vec<T>> {
    let (p, me) = (ctx.nprocs(), ctx.pid());
    if sends.len() != p {
        panic!(
            "bsp-algos: serde::all_to_all: processor {me} passed {} vectors, \
             but there must be one per processor (p = {p})",
            sends.len()
        );
    }
    let q = ctx.serde_queue::<T>();
    for (dst, part) in sends.iter().enumerate().filter(|&(d, _)| d != me) {
        for x in part {
            ctx.send(dst, &q, x);
        }
    }
    ctx.sync();
    let mut received: Vec<Vec<T>> = (0..p).map(|_| Vec::new()).collect();
    for (src, x) in ctx.receive_with_source(&q) {
        received[src].push(x);
    }
    ctx.release_queue(q);
    received[me] = std::mem::take(&mut sends[me]);
    received
}
