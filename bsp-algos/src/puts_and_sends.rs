//! Put and send helpers shared by the collectives: a put to every other
//! processor, a whole slice sent to one, and messages received split by
//! source.

use bsp_core::{Coarray, Ctx, Queue, Raw};
use bytemuck::Pod;

/// Puts `data` at `offset` of `a` on every processor but this one.
pub(crate) fn put_to_others<T: Pod>(ctx: &mut Ctx, a: &Coarray<T>, offset: usize, data: &[T]) {
    let me = ctx.pid();
    for dst in (0..ctx.nprocs()).filter(|&d| d != me) {
        ctx.put(dst, a, offset, data);
    }
}

/// Sends every element of `data` to `dst` on `q` (one header per run).
pub(crate) fn send_all<T: Pod>(ctx: &mut Ctx, dst: usize, q: &Queue<T, Raw>, data: &[T]) {
    for x in data {
        ctx.send(dst, q, x);
    }
}

/// The messages received on `q`, split by source pid (`p` vectors).
pub(crate) fn receive_by_source<T: Pod>(ctx: &mut Ctx, q: &Queue<T, Raw>) -> Vec<Vec<T>> {
    let mut out: Vec<Vec<T>> = (0..ctx.nprocs()).map(|_| Vec::new()).collect();
    for (src, x) in ctx.receive_with_source(q) {
        out[src].push(x);
    }
    out
}
