//! Personalized all-to-all exchange with variable sizes (*Collective Communication and Computation*, 13.6).

use bsp_core::Ctx;
use bytemuck::Pod;

use crate::puts_and_sends::{receive_by_source, send_all};

/// Sends `sends[j]` to processor j, for every j; returns what every
/// processor sent to this one, indexed by source pid.
///
/// The exchange is one h-relation, delivered by the run's router (the
/// two-phase router of Bader, Helman and JáJá by default, which is the two-phase
/// non-uniform all-to-all of *Collective Communication and Computation*, 13.6.3).
///
/// # Examples
///
/// ```
/// let out = bsp_core::run(3, |ctx| {
///     let me = ctx.pid() as u32;
///     let sends: Vec<Vec<u32>> = (0..3).map(|j| vec![me * 10 + j; j as usize]).collect();
///     bsp_algos::all_to_all(ctx, sends)
/// })
/// .unwrap();
/// assert_eq!(out[2], vec![vec![2, 2], vec![12, 12], vec![22, 22]]);
/// assert_eq!(out[0], vec![Vec::<u32>::new(); 3]);
/// ```
///
/// # Panics
///
/// If `sends.len() != p`.
///
/// # Cost
///
/// 1 superstep; h = max over processors of the elements sent or received
/// (own part excluded), one record header per non-empty destination.
pub fn all_to_all<T: Pod>(ctx: &mut Ctx, mut sends: Vec<Vec<T>>) -> Vec<Vec<T>> {
    let (p, me) = (ctx.nprocs(), ctx.pid());
    assert_eq!(
        sends.len(),
        p,
        "bsp-algos: all_to_all needs one vector per processor"
    );
    let q = ctx.queue::<T>();
    for (dst, part) in sends.iter().enumerate().filter(|&(d, _)| d != me) {
        send_all(ctx, dst, &q, part);
    }
    ctx.sync();
    let mut received = receive_by_source(ctx, &q);
    ctx.release_queue(q);
    received[me] = std::mem::take(&mut sends[me]);
    received
}
