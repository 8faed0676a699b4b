//! Buckets and their stretching (Shankar and Ranka, Sect. 4.1 and 5): which
//! accesses go straight to the owner (sparse buckets) and which are spread
//! over intermediate processors (dense buckets), and where each lands.
//!
//! Every processor computes the same plan from the same global vectors.

use std::ops::Range;

use bsp_core::Ctx;

use crate::dist::Block;
use crate::ops::Sum;
use crate::scan::exclusive_scan;

/// Division by a fixed divisor as one multiply-high: with
/// M = ⌈2⁶⁴/d⌉, ⌊n·M/2⁶⁴⌋ = ⌊n/d⌋ whenever n·d ≤ 2⁶⁴ (the error term
/// n·(M·d − 2⁶⁴)/(d·2⁶⁴) stays below 1/d). Falls back to a plain division
/// when the numerators may be too large.
#[derive(Clone, Copy, Debug)]
struct Divisor {
    d: usize,
    /// M, or 0 for a plain division.
    m: u64,
}

impl Divisor {
    /// Divides numerators below `limit` by `d` (at least 1).
    fn new(d: usize, limit: usize) -> Self {
        let d = d.max(1);
        let exact = (limit as u128) * (d as u128) <= 1u128 << 64;
        let m = if d > 1 && exact {
            u64::MAX / d as u64 + 1
        } else {
            0
        };
        Divisor { d, m }
    }

    #[inline]
    fn div(&self, n: usize) -> usize {
        if self.m == 0 {
            n / self.d
        } else {
            ((n as u128 * self.m as u128) >> 64) as usize
        }
    }
}

/// The k buckets of each processor's block of the global array: bucket
/// t of processor q holds the global indices `start(q) + t·w ..` (clipped
/// to the block), the same width w everywhere, so that an access is
/// placed by its bucket and its offset in it (a `u32`) with three
/// multiplications and no division.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Buckets {
    pub(crate) dist: Block,
    pub(crate) k: usize,
    width: usize,
    /// Block lengths base + 1 (the first `extra` processors) and base;
    /// indices below `big` are in the longer blocks.
    base: usize,
    extra: usize,
    big: usize,
    by_long: Divisor,
    by_short: Divisor,
    by_width: Divisor,
}

impl Buckets {
    /// k buckets per processor (at least one, at most the block length),
    /// and never wider than `u32` offsets reach.
    fn new(len: usize, p: usize, k: usize) -> Self {
        let dist = Block::new(len, p);
        let longest = len.div_ceil(p).max(1);
        let k = k.clamp(longest.div_ceil(1 << 32), longest);
        let width = longest.div_ceil(k);
        let (base, extra) = (len / p, len % p);
        Buckets {
            dist,
            k,
            width,
            base,
            extra,
            big: extra * (base + 1),
            by_long: Divisor::new(base + 1, len),
            by_short: Divisor::new(base, len),
            by_width: Divisor::new(width, longest),
        }
    }

    /// The buckets of `route` over a global array of `len` elements.
    fn of(route: Route, len: usize, p: usize) -> Self {
        match route {
            Route::Stretched => Self::balanced(len, p),
            Route::Direct => Self::one_per_processor(len, p),
        }
    }

    /// k ≈ √len / p buckets per processor (so kp ≈ √len: the global vector
    /// of kp counts and a bucket's width len/kp are both about √len), but
    /// at most about 256 buckets in all (and at least one per processor),
    /// so that the local counting sort scatters into few enough streams to
    /// stay in cache; 256 measured a little faster than 1024 and 4096 in
    /// `benchmarks/examples/bench_access.rs`.
    fn balanced(len: usize, p: usize) -> Self {
        const MAX_BUCKETS: usize = 256;
        Self::new(len, p, (len.isqrt() / p).min(MAX_BUCKETS / p))
    }

    /// One bucket per processor: every access goes straight to its owner.
    fn one_per_processor(len: usize, p: usize) -> Self {
        Self::new(len, p, 1)
    }

    pub(crate) fn count(&self) -> usize {
        self.k * self.dist.nprocs()
    }

    /// The width of every bucket (the last ones of a block may be cut).
    pub(crate) fn width(&self) -> usize {
        self.width
    }

    /// The bucket holding global index `g` (< len), and `g`'s offset in it.
    #[inline]
    pub(crate) fn locate(&self, g: usize) -> (usize, u32) {
        let q = if g < self.big {
            self.by_long.div(g)
        } else {
            self.extra + self.by_short.div(g - self.big)
        };
        let r = g - (q * self.base + q.min(self.extra));
        let t = self.by_width.div(r);
        (q * self.k + t, (r - t * self.width) as u32)
    }

    pub(crate) fn owner(&self, b: usize) -> usize {
        b / self.k
    }

    /// The global indices of bucket `b`.
    pub(crate) fn range(&self, b: usize) -> Range<usize> {
        let q = self.owner(b);
        let end = self.dist.start(q + 1);
        let lo = (self.dist.start(q) + (b % self.k) * self.width).min(end);
        lo..(lo + self.width).min(end)
    }

    /// Checks `index` and counts the accesses per bucket.
    pub(crate) fn hits(&self, index: &[usize]) -> Vec<u64> {
        let len = self.dist.len();
        let mut counts = vec![0u64; self.count()];
        for &g in index {
            assert!(
                g < len,
                "bsp-algos: random access to index {g} of a global array of length {len}"
            );
            counts[self.locate(g).0] += 1;
        }
        counts
    }

    /// The counting sort's scatter: calls `f(i, pos, offset)` for every
    /// access i, where `pos` is its place when the accesses are ordered by
    /// (bucket, i) and `offset` its offset in its bucket; `hits` are the
    /// counts from [`hits`](Buckets::hits).
    pub(crate) fn place(
        &self,
        index: &[usize],
        hits: &[u64],
        mut f: impl FnMut(usize, usize, u32),
    ) {
        let mut next = Vec::with_capacity(hits.len());
        let mut at = 0usize;
        for &c in hits {
            next.push(at);
            at += c as usize;
        }
        for (i, &g) in index.iter().enumerate() {
            let (b, off) = self.locate(g);
            f(i, next[b], off);
            next[b] += 1;
        }
    }
}

/// Where each bucket's accesses start when they are ordered by bucket:
/// the exclusive prefix sums of the counts.
pub(crate) fn starts(counts: &[u64]) -> Vec<usize> {
    let mut at = 0usize;
    counts
        .iter()
        .map(|&c| {
            at += c as usize;
            at - c as usize
        })
        .collect()
}

/// How a random access primitive delivers: with about √len buckets, the
/// dense ones (hot spots) stretched over intermediate processors (Shankar
/// and Ranka, Sect. 4 and 5), or directly, one bucket per processor and every
/// access straight to its owner (Sect. 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    Stretched,
    Direct,
}

/// The global picture: hits per bucket, which buckets are dense, and the
/// layout of the sparse (at the owner) and stretched dense (at the
/// intermediates) receive buffers.
pub(crate) struct Plan {
    pub(crate) buckets: Buckets,
    /// This processor's accesses per bucket.
    pub(crate) mine: Vec<u64>,
    /// Accesses per bucket from the processors before this one.
    pub(crate) before: Vec<u64>,
    /// Accesses per bucket from all processors.
    pub(crate) hits: Vec<u64>,
    pub(crate) dense: Vec<bool>,
    /// Dense bucket: its start in the stretched space. Sparse bucket: its
    /// start in its owner's sparse receive buffer.
    pub(crate) slot: Vec<u64>,
    /// The dense buckets, in stretched order.
    pub(crate) dense_list: Vec<usize>,
    /// Intermediate q holds stretched positions `inter[q]..inter[q + 1]`.
    pub(crate) inter: Vec<u64>,
    /// Length of each owner's sparse receive buffer.
    pub(crate) sparse_len: Vec<u64>,
}

impl Plan {
    /// Computes the plan of `route` for this processor's accesses `index`
    /// into a global array of `len` elements: its counts per bucket
    /// (checking every index), one exclusive scan (global combine and
    /// prefix scan of the kp counts in one collective), then local work.
    /// [`Route::Direct`] makes every bucket sparse.
    pub(crate) fn build(ctx: &mut Ctx, route: Route, len: usize, index: &[usize]) -> Plan {
        let p = ctx.nprocs();
        let buckets = Buckets::of(route, len, p);
        let mine = buckets.hits(index);
        let (before, hits) = exclusive_scan(ctx, &mine, &Sum);
        let kp = buckets.count();
        let total: u64 = hits.iter().sum();
        let dense: Vec<bool> = (0..kp)
            .map(|b| {
                // Sparse: at most twice the mean load of a bucket, and twice
                // its width (so a dense bucket always shrinks when combined).
                let width = buckets.range(b).len() as u64;
                let cap = 2 * total.div_ceil(kp as u64).max(width);
                route == Route::Stretched && hits[b] > cap
            })
            .collect();
        let mut slot = vec![0u64; kp];
        let mut sparse_len = vec![0u64; p];
        let mut dense_list = Vec::new();
        let mut stretched = 0u64;
        for b in 0..kp {
            if dense[b] {
                slot[b] = stretched;
                stretched += hits[b];
                dense_list.push(b);
            } else {
                let q = buckets.owner(b);
                slot[b] = sparse_len[q];
                sparse_len[q] += hits[b];
            }
        }
        let inter = water_fill(&sparse_len, stretched);
        Plan {
            buckets,
            mine,
            before,
            hits,
            dense,
            slot,
            dense_list,
            inter,
            sparse_len,
        }
    }

    /// The intermediate processor holding stretched position `pos`.
    pub(crate) fn intermediate(&self, pos: u64) -> usize {
        self.inter.partition_point(|&s| s <= pos) - 1
    }

    /// The intermediates over which dense bucket `b` is stretched.
    pub(crate) fn span(&self, b: usize) -> Range<usize> {
        let lo = self.slot[b];
        self.intermediate(lo)..self.intermediate(lo + self.hits[b] - 1) + 1
    }

    /// The pieces of dense buckets held by intermediate `q`: each bucket
    /// with its range of positions relative to `inter[q]`.
    pub(crate) fn pieces(&self, q: usize) -> Vec<(usize, Range<usize>)> {
        let (lo, hi) = (self.inter[q], self.inter[q + 1]);
        let first = self
            .dense_list
            .partition_point(|&b| self.slot[b] + self.hits[b] <= lo);
        self.dense_list[first..]
            .iter()
            .take_while(|&&b| self.slot[b] < hi)
            .map(|&b| {
                let s = self.slot[b].max(lo);
                let e = (self.slot[b] + self.hits[b]).min(hi);
                (b, (s - lo) as usize..(e - lo) as usize)
            })
            .collect()
    }

    /// Whether any dense bucket exists (then stages two and three run).
    pub(crate) fn any_dense(&self) -> bool {
        !self.dense_list.is_empty()
    }

    /// Whether some dense bucket spans more than one intermediate.
    pub(crate) fn any_split(&self) -> bool {
        self.dense_list.iter().any(|&b| self.span(b).len() > 1)
    }

    /// Where this processor's accesses go, bucket by bucket: a sparse
    /// bucket's accesses as one run to its owner's sparse buffer, a dense
    /// bucket's as one run per intermediate piece. Runs are in the order
    /// of [`Buckets::place`], so each starts where the previous ended.
    pub(crate) fn runs(&self) -> Vec<Run> {
        let mut out = Vec::new();
        let mut from = 0;
        for b in 0..self.buckets.count() {
            let (start, count) = (self.slot[b] + self.before[b], self.mine[b]);
            let mut pos = start;
            while pos < start + count {
                let (to, end) = if self.dense[b] {
                    let q = self.intermediate(pos);
                    (q, (start + count).min(self.inter[q + 1]))
                } else {
                    (self.buckets.owner(b), start + count)
                };
                let len = (end - pos) as usize;
                let at = (pos - if self.dense[b] { self.inter[to] } else { 0 }) as usize;
                out.push(Run {
                    dense: self.dense[b],
                    to,
                    at,
                    from,
                    len,
                });
                from += len;
                pos = end;
            }
        }
        out
    }
}

/// A run of this processor's bucket-sorted accesses: `len` of them from
/// position `from`, to processor `to` at `at` of its sparse (owner) or
/// dense (intermediate) buffer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Run {
    pub(crate) dense: bool,
    pub(crate) to: usize,
    pub(crate) at: usize,
    pub(crate) from: usize,
    pub(crate) len: usize,
}

/// Capacities for `stretched` dense positions over processors already
/// receiving `sparse[q]` elements, filling the least loaded first (Shankar and Ranka,
/// Sect. 5: the sparse traffic lowers a processor's share of the stretched
/// buckets, so that no one receives much more than the mean). Returns the
/// p + 1 starts of the processors' ranges.
fn water_fill(sparse: &[u64], stretched: u64) -> Vec<u64> {
    let room = |level: u64| -> u64 { sparse.iter().map(|&s| level.saturating_sub(s)).sum() };
    // The lowest level at which everything fits.
    let (mut lo, mut hi) = (0u64, stretched + sparse.iter().copied().max().unwrap_or(0));
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if room(mid) >= stretched {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    let mut starts = Vec::with_capacity(sparse.len() + 1);
    let mut left = stretched;
    let mut at = 0u64;
    for &s in sparse {
        starts.push(at);
        let take = lo.saturating_sub(s).min(left);
        at += take;
        left -= take;
    }
    starts.push(at);
    starts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn divisor_is_exact() {
        for d in [1usize, 2, 3, 7, 1000, 4097, (1 << 32) - 1, 1 << 32] {
            let by = Divisor::new(d, 1 << 32);
            for n in [0usize, 1, d - 1, d, d + 1, (1 << 32) - 1, 123_456_789] {
                if n < 1 << 32 {
                    assert_eq!(by.div(n), n / d, "{n} / {d}");
                }
            }
        }
        let big = Divisor::new(3, usize::MAX);
        assert_eq!(big.div(usize::MAX), usize::MAX / 3);
    }

    #[test]
    fn buckets_tile_the_blocks() {
        for (len, p, k) in [
            (0, 3, 4),
            (1, 4, 1),
            (10, 4, 2),
            (1000, 7, 5),
            (4099, 8, 64),
        ] {
            let b = Buckets::new(len, p, k);
            for g in 0..len {
                let (bucket, off) = b.locate(g);
                let r = b.range(bucket);
                assert_eq!(r.start + off as usize, g, "len {len} p {p} k {k}");
                assert!(r.contains(&g));
                assert_eq!(b.owner(bucket), b.dist.owner(g));
            }
        }
    }
}
