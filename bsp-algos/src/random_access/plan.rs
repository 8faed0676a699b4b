//! Buckets and their stretching (seed 002, Sect. 4.1 and 5): which
//! accesses go straight to the owner (sparse buckets) and which are spread
//! over intermediate processors (dense buckets), and where each lands.
//!
//! Every processor computes the same plan from the same global vectors.

use std::ops::Range;

use bsp_core::Ctx;

use crate::dist::Block;
use crate::ops::Sum;
use crate::scan::exclusive_scan;

/// The k buckets of each processor's block of the global array.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Buckets {
    pub(crate) dist: Block,
    pub(crate) k: usize,
}

impl Buckets {
    /// k ≈ √len / p buckets per processor (so kp ≈ √len: the global vector
    /// of kp counts and a bucket's width len/kp are both about √len), at
    /// least one and at most the block length.
    pub(crate) fn balanced(len: usize, p: usize) -> Self {
        let max_k = len.div_ceil(p).max(1);
        let k = (len.isqrt() / p).clamp(1, max_k);
        Buckets {
            dist: Block::new(len, p),
            k,
        }
    }

    /// One bucket per processor: every access goes straight to its owner.
    pub(crate) fn one_per_processor(len: usize, p: usize) -> Self {
        Buckets {
            dist: Block::new(len, p),
            k: 1,
        }
    }

    pub(crate) fn count(&self) -> usize {
        self.k * self.dist.nprocs()
    }

    fn width_of(&self, q: usize) -> usize {
        self.dist.local_len(q).div_ceil(self.k).max(1)
    }

    /// The bucket holding global index `g`.
    pub(crate) fn of(&self, g: usize) -> usize {
        let q = self.dist.owner(g);
        q * self.k + (g - self.dist.start(q)) / self.width_of(q)
    }

    pub(crate) fn owner(&self, b: usize) -> usize {
        b / self.k
    }

    /// The global indices of bucket `b`.
    pub(crate) fn range(&self, b: usize) -> Range<usize> {
        let q = self.owner(b);
        let (w, t) = (self.width_of(q), b % self.k);
        let end = self.dist.start(q + 1);
        let lo = (self.dist.start(q) + t * w).min(end);
        lo..(lo + w).min(end)
    }

    /// Checks `index` and counting-sorts it by bucket: returns the number
    /// of accesses per bucket and the access ids ordered by (bucket, input
    /// position).
    pub(crate) fn sort(&self, index: &[usize]) -> (Vec<u64>, Vec<usize>) {
        let len = self.dist.len();
        let mut counts = vec![0u64; self.count()];
        let of: Vec<usize> = index
            .iter()
            .map(|&g| {
                assert!(
                    g < len,
                    "bsp-algos: random access to index {g} of a global array of length {len}"
                );
                let b = self.of(g);
                counts[b] += 1;
                b
            })
            .collect();
        let mut next = Vec::with_capacity(counts.len());
        let mut acc = 0usize;
        for &c in &counts {
            next.push(acc);
            acc += c as usize;
        }
        let mut order = vec![0usize; index.len()];
        for (i, &b) in of.iter().enumerate() {
            order[next[b]] = i;
            next[b] += 1;
        }
        (counts, order)
    }
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
    /// Computes the plan from this processor's per-bucket counts: one
    /// exclusive scan (global combine and prefix scan of the kp counts in
    /// one collective), then local work. `stretch = false` makes every
    /// bucket sparse (direct delivery).
    pub(crate) fn build(ctx: &mut Ctx, buckets: Buckets, mine: Vec<u64>, stretch: bool) -> Plan {
        let p = ctx.nprocs();
        let (before, hits) = exclusive_scan(ctx, &mine, &Sum);
        let kp = buckets.count();
        let total: u64 = hits.iter().sum();
        let dense: Vec<bool> = (0..kp)
            .map(|b| {
                // Sparse: at most twice the mean load of a bucket, and twice
                // its width (so a dense bucket always shrinks when combined).
                let width = buckets.range(b).len() as u64;
                let cap = 2 * total.div_ceil(kp as u64).max(width);
                stretch && hits[b] > cap
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

    /// Where this processor's accesses to bucket `b` go: for a sparse
    /// bucket `(owner, offset in its sparse buffer, count)`; for a dense
    /// bucket one such triple per intermediate piece.
    pub(crate) fn runs(&self, b: usize) -> Vec<(usize, usize, usize)> {
        let (start, count) = (self.slot[b] + self.before[b], self.mine[b]);
        if count == 0 {
            return Vec::new();
        }
        if !self.dense[b] {
            return vec![(self.buckets.owner(b), start as usize, count as usize)];
        }
        let mut out = Vec::new();
        let mut pos = start;
        while pos < start + count {
            let q = self.intermediate(pos);
            let end = (start + count).min(self.inter[q + 1]);
            out.push((q, (pos - self.inter[q]) as usize, (end - pos) as usize));
            pos = end;
        }
        out
    }
}

/// Capacities for `stretched` dense positions over processors already
/// receiving `sparse[q]` elements, filling the least loaded first (seed 002,
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
