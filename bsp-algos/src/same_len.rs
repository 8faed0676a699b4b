//! Every processor of a reduce, scan, broadcast or uniform all-to-all
//! passes a vector of the same length. [`Lengths`] checks it without a
//! superstep of its own: a
//! processor that sends its vector (or a part of it) to another also puts
//! its length there, in the same superstep, and the receiver compares the
//! lengths it got with its own after the sync.

use bsp_core::{Coarray, Ctx};

/// No length received from that processor.
const NONE: u64 = u64::MAX;

/// Length stamps: room on every processor for one length from each
/// processor, sent in one superstep or spread over several (one partner a
/// round) and compared once, after the last.
pub(crate) struct Lengths {
    stamps: Coarray<u64>,
}

impl Lengths {
    /// Registers the stamps. Collective, like any registration.
    pub(crate) fn new(ctx: &mut Ctx) -> Self {
        let p = ctx.nprocs();
        Lengths {
            stamps: ctx.coarray_from(vec![NONE; p]),
        }
    }

    /// Tells `dst` that this processor's vector has `len` elements (in the
    /// superstep that sends it the vector, or a part of it).
    pub(crate) fn send(&self, ctx: &mut Ctx, dst: usize, len: usize) {
        let me = ctx.pid();
        ctx.put(dst, &self.stamps, me, &[len as u64]);
    }

    /// After the sync: releases the stamps (collective) and ends the run
    /// if a processor that sent this one a length sent another than `len`.
    ///
    /// # Panics
    ///
    /// Naming `what`, both processors and both lengths, when they differ.
    pub(crate) fn check(self, ctx: &mut Ctx, what: &str, len: usize) {
        let got = ctx.release(self.stamps);
        let differs = got
            .iter()
            .enumerate()
            .find(|&(_, &theirs)| theirs != NONE && theirs != len as u64);
        if let Some((q, theirs)) = differs {
            panic!(
                "bsp-algos: {what}: every processor must pass the same length, \
                 but processor {q} passed {theirs} and processor {} {len}",
                ctx.pid()
            );
        }
    }
}
