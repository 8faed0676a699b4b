//! (global index, value) records on two queues, sent as two runs per
//! destination so that each destination costs two record headers.

use bsp_core::{Ctx, Queue, Raw};
use bytemuck::Pod;

use crate::puts_and_sends::send_all;

pub(crate) struct Pairs<T> {
    index: Queue<u64, Raw>,
    value: Queue<T, Raw>,
}

impl<T: Pod> Pairs<T> {
    /// Registers the two queues (collective).
    pub(crate) fn new(ctx: &mut Ctx) -> Self {
        Pairs {
            index: ctx.queue::<u64>(),
            value: ctx.queue::<T>(),
        }
    }

    pub(crate) fn send(&self, ctx: &mut Ctx, dst: usize, index: &[u64], value: &[T]) {
        debug_assert_eq!(index.len(), value.len());
        send_all(ctx, dst, &self.index, index);
        send_all(ctx, dst, &self.value, value);
    }

    /// Sends `out[q]` to every q.
    pub(crate) fn send_each(&self, ctx: &mut Ctx, out: &[(Vec<u64>, Vec<T>)]) {
        for (dst, (index, value)) in out.iter().enumerate() {
            self.send(ctx, dst, index, value);
        }
    }

    /// Everything received, in source pid order, then send order.
    pub(crate) fn receive(&self, ctx: &mut Ctx) -> (Vec<u64>, Vec<T>) {
        (ctx.receive(&self.index), ctx.receive(&self.value))
    }

    /// Releases the two queues (collective).
    pub(crate) fn release(self, ctx: &mut Ctx) {
        ctx.release_queue(self.index);
        ctx.release_queue(self.value);
    }
}

/// An empty outgoing buffer per processor.
pub(crate) fn outgoing<T>(p: usize) -> Vec<(Vec<u64>, Vec<T>)> {
    (0..p).map(|_| (Vec::new(), Vec::new())).collect()
}
