//! Histogram: counts of items into bins, as a random access write with `+`.

use bsp_core::Ctx;

use crate::ops::Sum;
use crate::random_access::{raw, Combine};
use crate::rows::{fold_all_rows, transpose_blocks};

/// Up to this many bins, the histogram is a local count and a
/// reduce-scatter of the counts (at most 512 KiB of counts per processor).
const FEW_BINS: usize = 1 << 16;

/// Up to this many bins, the local count keeps four interleaved partial
/// histograms, so that runs of items in one bin (a hot spot) increment
/// four counters in turn instead of waiting on one.
const SPLIT_COUNT_BINS: usize = 1 << 14;

/// The counts of this processor's items per bin.
fn count_local<T>(items: &[T], bins: usize, bin_of: &impl Fn(&T) -> usize) -> Vec<u64> {
    if bins > SPLIT_COUNT_BINS {
        let mut local = vec![0u64; bins];
        for x in items {
            local[bin_of(x)] += 1;
        }
        return local;
    }
    let mut parts = vec![[0u64; 4]; bins];
    let mut quads = items.chunks_exact(4);
    for q in &mut quads {
        parts[bin_of(&q[0])][0] += 1;
        parts[bin_of(&q[1])][1] += 1;
        parts[bin_of(&q[2])][2] += 1;
        parts[bin_of(&q[3])][3] += 1;
    }
    for x in quads.remainder() {
        parts[bin_of(x)][0] += 1;
    }
    parts.iter().map(|c| c.iter().sum()).collect()
}

/// Counts the items of every processor into `bins` bins (`bin_of` maps an
/// item to its bin); returns this processor's block of the
/// block-distributed counts ([`Block`](crate::Block)`::new(bins, p)`).
///
/// With few bins (at most 2¹⁶) each processor counts its items into a
/// local array of `bins` counts, and one reduce-scatter sums the arrays:
/// block q of every processor's counts goes to processor q, which adds
/// them. The local pass counts into four interleaved partial arrays (up to
/// 2¹⁴ bins), so a hot bin costs no more than a cold one. With more bins,
/// the counts go through [`raw`] with [`Sum`] (bucket stretching: no processor receives much more than
/// its share however skewed the items): one write per non-empty bin when
/// the bins are few compared with the local items, one write of 1 per
/// item otherwise; `bins` may then be far larger than the number of items
/// per processor.
///
/// # Examples
///
/// ```
/// let out = bsp_core::run(2, |ctx| {
///     let items: Vec<u32> = (0..10).map(|i| i * (ctx.pid() as u32 + 1)).collect();
///     bsp_algos::histogram(ctx, &items, 4, |&x| (x % 4) as usize)
/// })
/// .unwrap();
/// // 0..10 and 0,2,..,18 mod 4: bins 0..4 hold 3+5, 3+0, 2+5, 2+0
/// assert_eq!(out.concat(), vec![8, 3, 7, 2]);
/// ```
///
/// # Panics
///
/// If `bin_of` returns a bin ≥ `bins`.
///
/// # Cost
///
/// The local pass over the items, then, with at most 2¹⁶ bins, 1 superstep
/// of h = bins·(p − 1)/p counts (p − 1 puts per processor); with more
/// bins, as [`raw`] with min(items, bins) writes per processor: the
/// exclusive scan of the bucket counts, then 1–3 supersteps of h ≤ about
/// max(bins, n)/p (n the total number of items).
pub fn histogram<T, F: Fn(&T) -> usize>(
    ctx: &mut Ctx,
    items: &[T],
    bins: usize,
    bin_of: F,
) -> Vec<u64> {
    let count = || count_local(items, bins, &bin_of);
    if bins <= FEW_BINS {
        let (blocks, rows) = transpose_blocks(ctx, "histogram (its number of bins)", &count());
        let w = blocks.local_len(ctx.pid());
        return fold_all_rows(&Sum, rows, w);
    }
    let dist = crate::Block::new(bins, ctx.nprocs());
    let mut counts = vec![0u64; dist.local_len(ctx.pid())];
    let (index, ones): (Vec<usize>, Vec<u64>) = if bins <= 2 * items.len() + 4096 {
        count()
            .iter()
            .enumerate()
            .filter(|&(_, &c)| c > 0)
            .map(|(b, &c)| (b, c))
            .unzip()
    } else {
        items.iter().map(|x| (bin_of(x), 1)).unzip()
    };
    raw(ctx, &mut counts, bins, &index, &ones, &Combine(Sum)).expect("sums never conflict");
    counts
}
