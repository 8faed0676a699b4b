//! The block distribution of a global array over the processors.

use std::ops::Range;

/// How a global array of `len` elements is split over `p` processors:
/// processor `q` holds the contiguous block [`range(q)`](Block::range); the
/// first `len % p` processors hold one element more than the others.
///
/// Every primitive of this crate that works on a "block-distributed global
/// array" expects each processor's local part to be its block under this
/// distribution.
///
/// # Examples
///
/// ```
/// use bsp_algos::Block;
///
/// let b = Block::new(10, 4);
/// assert_eq!(b.range(0), 0..3);
/// assert_eq!(b.range(3), 8..10);
/// assert_eq!(b.owner(7), 2);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    len: usize,
    p: usize,
}

impl Block {
    /// The block distribution of `len` elements over `p` processors.
    ///
    /// # Panics
    ///
    /// If `p == 0`.
    pub fn new(len: usize, p: usize) -> Self {
        assert!(
            p > 0,
            "bsp-algos: a block distribution needs at least one processor"
        );
        Block { len, p }
    }

    /// The global length.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the global array is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The number of processors.
    pub fn nprocs(&self) -> usize {
        self.p
    }

    /// The first global index held by processor `q` (`len` for `q == p`).
    pub fn start(&self, q: usize) -> usize {
        let (base, extra) = (self.len / self.p, self.len % self.p);
        q * base + q.min(extra)
    }

    /// The global indices held by processor `q`.
    pub fn range(&self, q: usize) -> Range<usize> {
        self.start(q)..self.start(q + 1)
    }

    /// The number of elements held by processor `q`.
    pub fn local_len(&self, q: usize) -> usize {
        self.start(q + 1) - self.start(q)
    }

    /// The processor holding global index `i`.
    ///
    /// # Panics
    ///
    /// If `i >= len`.
    pub fn owner(&self, i: usize) -> usize {
        assert!(
            i < self.len,
            "bsp-algos: index {i} out of range for a global array of length {}",
            self.len
        );
        let (base, extra) = (self.len / self.p, self.len % self.p);
        let big = extra * (base + 1);
        if i < big {
            i / (base + 1)
        } else {
            extra + (i - big) / base
        }
    }
}
