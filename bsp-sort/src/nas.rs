//! The NAS Parallel Benchmarks IS kernel's data: the key generator with
//! jump-ahead, the problem classes and the partial-verification table
//! (NPB 3.x `IS`).
//!
//! # Examples
//!
//! ```
//! use bsp_sort::nas::{Class, NasRandom};
//!
//! let class = Class::from_name("S").unwrap();
//! assert_eq!((class.total_keys, class.max_key), (1 << 16, 1 << 11));
//! // The keys of processor 1 of 4 are the second quarter of the global sequence.
//! let all = class.keys(0..class.total_keys);
//! assert_eq!(class.keys(1 << 14..2 << 14), all[1 << 14..2 << 14]);
//! assert!(all.iter().all(|&k| k < class.max_key));
//! let mut g = NasRandom::new();
//! assert!(g.next_f64() < 1.0);
//! ```

use std::ops::Range;

/// The multiplier a = 5^13 of the NPB generator.
pub const MULTIPLIER: u64 = 1_220_703_125;
/// The initial seed of the IS key sequence.
pub const SEED: u64 = 314_159_265;
const MASK_46: u64 = (1 << 46) - 1;

/// The NPB linear congruential generator `x ← a·x mod 2^46`, in exact
/// integer arithmetic (the same sequence as NPB's `randlc` in doubles).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NasRandom {
    x: u64,
}

impl Default for NasRandom {
    fn default() -> Self {
        Self::new()
    }
}

impl NasRandom {
    /// The generator at the start of the IS sequence.
    pub fn new() -> Self {
        NasRandom { x: SEED }
    }

    /// The generator after `steps` outputs, computed by repeated squaring
    /// of the multiplier (O(log steps)).
    pub fn skip(mut self, mut steps: u64) -> Self {
        let mut a = MULTIPLIER;
        while steps > 0 {
            if steps & 1 == 1 {
                self.x = self.x.wrapping_mul(a) & MASK_46;
            }
            a = a.wrapping_mul(a) & MASK_46;
            steps >>= 1;
        }
        self
    }

    /// The next output, uniform in (0, 1): `x · 2^−46` after one step.
    pub fn next_f64(&mut self) -> f64 {
        self.x = self.x.wrapping_mul(MULTIPLIER) & MASK_46;
        self.x as f64 * (1.0 / (1u64 << 46) as f64)
    }
}

/// Keys `range` of the global IS sequence for keys in `[0, max_key)`: each
/// key is ⌊(max_key/4)·(r₁ + r₂ + r₃ + r₄)⌋ of four consecutive outputs.
/// Independent of how the range is split over processors.
///
/// # Examples
///
/// ```
/// let keys = bsp_sort::nas::keys(0..1000, 1 << 19);
/// assert!(keys.iter().all(|&k| k < 1 << 19));
/// ```
///
/// # Panics
///
/// If `max_key` exceeds `u32::MAX`.
///
/// # Cost
///
/// O(range length + log(range start)).
pub fn keys(range: Range<usize>, max_key: u64) -> Vec<u32> {
    assert!(
        max_key <= u64::from(u32::MAX),
        "bsp-sort: NAS max key too large"
    );
    let mut g = NasRandom::new().skip(4 * range.start as u64);
    let k = (max_key / 4) as f64;
    range
        .map(|_| {
            let mut x = g.next_f64();
            x += g.next_f64();
            x += g.next_f64();
            x += g.next_f64();
            (k * x) as u32
        })
        .collect()
}

/// One NPB IS problem class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Class {
    /// The class letter.
    pub name: char,
    /// N, the total number of keys.
    pub total_keys: usize,
    /// Keys lie in `[0, max_key)`.
    pub max_key: u32,
    /// Global indices of the five keys whose ranks are checked.
    pub test_index: [usize; 5],
    /// Their ranks before the per-iteration adjustment.
    pub test_rank: [u64; 5],
}

/// The classes S, W, A, B and C.
// One row per class, as in NPB's `is.c`: the letter, log₂ of the number
// of keys and of the key bound, the test keys' indices and their ranks.
#[rustfmt::skip]
pub const CLASSES: [Class; 5] = [
    class('S', 16, 11, [   48427,    17148,    23627,     62548,     4431], [       0,     18,     346,     64917,     65463]),
    class('W', 20, 16, [  357773,   934767,   875723,    898999,   404505], [    1249,  11698, 1039987,   1043896,   1048018]),
    class('A', 23, 19, [ 2112377,   662041,  5336171,   3642833,  4250760], [     104,  17523,  123928,   8288932,   8388264]),
    class('B', 25, 21, [   41869,   812306,  5102857,  18232239, 26860214], [33422937,  10244,   59149,  33135281,        99]),
    class('C', 27, 23, [44172927, 72999161, 74326391, 129606274, 21736814], [   61147, 882988,  266290, 133997595, 133525895]),
];

/// A row of [`CLASSES`].
const fn class(
    name: char,
    log_keys: u32,
    log_max_key: u32,
    test_index: [usize; 5],
    test_rank: [u64; 5],
) -> Class {
    Class {
        name,
        total_keys: 1 << log_keys,
        max_key: 1 << log_max_key,
        test_index,
        test_rank,
    }
}

impl Class {
    /// The class named `name` (`S`, `W`, `A`, `B` or `C`, any case).
    pub fn from_name(name: &str) -> Option<Class> {
        let upper = name.trim().to_ascii_uppercase();
        CLASSES.into_iter().find(|c| upper == c.name.to_string())
    }

    /// Keys `range` of this class's initial key sequence.
    pub fn keys(&self, range: Range<usize>) -> Vec<u32> {
        keys(range, u64::from(self.max_key))
    }

    /// The modifications of iteration `it` (1-based): `(global index, new key)`.
    pub fn modifications(&self, it: usize) -> [(usize, u32); 2] {
        [(it, it as u32), (it + 10, self.max_key - it as u32)]
    }

    /// The rank the `t`-th test key (t in 0..5) must have in iteration `it`
    /// (the number of keys strictly smaller than it).
    pub fn expected_rank(&self, t: usize, it: usize) -> u64 {
        let (base, it) = (self.test_rank[t] as i64, it as i64);
        let rank = match self.name {
            'S' | 'C' if t <= 2 => base + it,
            'S' | 'C' => base - it,
            'W' if t < 2 => base + it - 2,
            'W' => base - it,
            'A' if t <= 2 => base + it - 1,
            'A' => base - (it - 1),
            'B' if matches!(t, 1 | 2 | 4) => base + it,
            _ => base - it,
        };
        rank as u64
    }
}
