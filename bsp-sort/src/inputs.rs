//! The input distributions of Bader, Helman and JáJá (1995, Sect. 5.1),
//! for examples, tests and benchmarks.
//!
//! Keys are generated from their global index (block distribution), so the
//! global input of \[R\], \[S\], \[G\] and \[N\] does not depend on the processor
//! count.
//!
//! # Examples
//!
//! ```
//! use bsp_sort::inputs::{block_range, Dist};
//!
//! let dist: Dist = "S".parse().unwrap();
//! let keys = dist.keys_u32(1, 4, 1000);
//! assert_eq!(keys.len(), block_range(1, 4, 1000).len());
//! ```

use std::fmt;
use std::ops::Range;
use std::str::FromStr;

/// An input distribution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dist {
    /// \[R\]: uniform keys with 31 bits of entropy (63 for 64-bit keys).
    Uniform,
    /// \[S\]: the bitwise AND of five \[R\] keys (about 6.2 bits of entropy).
    Sparse,
    /// \[C\]: the values 0, 1, 2, … placed cyclically: value v on processor v mod p.
    Cyclic,
    /// \[N\]: the NAS IS generator, keys in [0, 2^19).
    Nas,
    /// \[G\]: Gaussian-like, the mean of four \[R\] keys.
    Gaussian,
}

/// All distributions, in the order R, S, C, N, G.
pub const ALL: [Dist; 5] = [
    Dist::Uniform,
    Dist::Sparse,
    Dist::Cyclic,
    Dist::Nas,
    Dist::Gaussian,
];

/// The global indices processor `pid` of `p` holds when `n` keys are
/// block-distributed (the first `n mod p` processors hold one more).
pub fn block_range(pid: usize, p: usize, n: usize) -> Range<usize> {
    let start = |q: usize| q * (n / p) + q.min(n % p);
    start(pid)..start(pid + 1)
}

/// SplitMix64: a well-mixed 64-bit hash of the index.
fn mix(i: u64) -> u64 {
    let mut z = i.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Dist {
    /// The distribution's letter: R, S, C, N or G.
    pub fn letter(self) -> char {
        match self {
            Dist::Uniform => 'R',
            Dist::Sparse => 'S',
            Dist::Cyclic => 'C',
            Dist::Nas => 'N',
            Dist::Gaussian => 'G',
        }
    }

    /// Processor `pid`'s keys (of `p`, `n` in total, block-distributed),
    /// as `bits`-bit keys (32 or 64) widened to `u64`.
    ///
    /// # Panics
    ///
    /// If `bits` is neither 32 nor 64, or `pid >= p`.
    pub fn keys_u64(self, pid: usize, p: usize, n: usize, bits: u32) -> Vec<u64> {
        assert!(
            bits == 32 || bits == 64,
            "bsp-sort: key width must be 32 or 64"
        );
        assert!(
            pid < p,
            "bsp-sort: pid {pid} out of range for {p} processors"
        );
        self.generate(pid, p, n, bits, |k| k)
    }

    /// Processor `pid`'s keys, each mapped by `narrow` as it is made (so
    /// that 32-bit keys never exist as a vector of 64-bit ones).
    fn generate<K>(
        self,
        pid: usize,
        p: usize,
        n: usize,
        bits: u32,
        narrow: impl Fn(u64) -> K,
    ) -> Vec<K> {
        let range = block_range(pid, p, n);
        let shift = 64 - (bits - 1);
        let uniform = |i: u64| mix(i) >> shift;
        match self {
            Dist::Uniform => range.map(|i| narrow(uniform(i as u64))).collect(),
            Dist::Sparse => range
                .map(|i| narrow((0..5).fold(u64::MAX, |acc, j| acc & uniform(5 * i as u64 + j))))
                .collect(),
            Dist::Cyclic => (0..range.len())
                .map(|k| narrow((k * p + pid) as u64))
                .collect(),
            Dist::Nas => crate::nas::keys(range, 1 << 19)
                .into_iter()
                .map(|k| narrow(u64::from(k)))
                .collect(),
            Dist::Gaussian => range
                .map(|i| narrow((0..4).map(|j| uniform(4 * i as u64 + j) / 4).sum()))
                .collect(),
        }
    }

    /// Processor `pid`'s keys as 32-bit keys (see [`keys_u64`](Dist::keys_u64)).
    ///
    /// # Panics
    ///
    /// If `pid >= p`.
    pub fn keys_u32(self, pid: usize, p: usize, n: usize) -> Vec<u32> {
        assert!(
            pid < p,
            "bsp-sort: pid {pid} out of range for {p} processors"
        );
        self.generate(pid, p, n, 32, |k| k as u32)
    }
}

impl fmt::Display for Dist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.letter())
    }
}

/// The error of parsing a [`Dist`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseDistError(String);

impl fmt::Display for ParseDistError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown distribution {:?} (expected R, S, C, N or G)",
            self.0
        )
    }
}

impl std::error::Error for ParseDistError {}

impl FromStr for Dist {
    type Err = ParseDistError;

    /// Parses a letter R, S, C, N or G (any case).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ALL.into_iter()
            .find(|d| s.trim().eq_ignore_ascii_case(&d.letter().to_string()))
            .ok_or_else(|| ParseDistError(s.to_owned()))
    }
}
