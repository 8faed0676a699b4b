//! Small global decisions: an all-gather of a few words per processor.
//!
//! Kept private and tiny so it can later be replaced by the `all_gather`
//! collective of `bsp-algos`.

use bsp_core::{Coarray, Ctx};

/// A registered area for all-gathers of up to `width` words per processor.
#[derive(Clone, Copy, Debug)]
pub(crate) struct GatherArea {
    area: Coarray<u64>,
    width: usize,
}

impl GatherArea {
    /// Registers the area (collective).
    pub(crate) fn new(ctx: &mut Ctx, width: usize) -> Self {
        let area = ctx.coarray::<u64>(ctx.nprocs() * width);
        GatherArea { area, width }
    }

    /// Releases the area (collective).
    pub(crate) fn release(self, ctx: &mut Ctx) {
        ctx.discard(self.area);
    }

    /// Every processor contributes `row` (the same length everywhere, at
    /// most `width`); returns all rows concatenated in pid order.
    ///
    /// One superstep; h = p · row.len() words.
    pub(crate) fn all_gather(&self, ctx: &mut Ctx, row: &[u64]) -> Vec<u64> {
        assert!(row.len() <= self.width, "bsp-sort: gather row too wide");
        let (p, me, w) = (ctx.nprocs(), ctx.pid(), row.len());
        for k in 0..p {
            ctx.put(k, &self.area, me * w, row);
        }
        ctx.sync();
        ctx.local(&self.area)[..p * w].to_vec()
    }
}
