//! # bsp-sort: counting sort, stable parallel radix sort and sample sort
//!
//! The integer sorts of Bader, Helman and JáJá (1995), and a sample sort
//! for any ordered serde type, written only against the public APIs of
//! `bsp-core` and `bsp-algos`:
//!
//! * [`CountingSort`]: one stable counting-sort pass over digits `0..R`
//!   in the paper's six steps (local counts, transpose of the count matrix,
//!   prefix sums, inverse transpose of prefixes and totals, local ranks, one
//!   h-relation to the ranks);
//! * [`RadixSorter`], [`radix_sort`], [`radix_sort_by_key`]: the stable LSD
//!   radix sort built from it, for every [`RadixKey`] (u8–u64, i8–i64,
//!   f32/f64) and for records sorted by a key extractor;
//! * [`sample_sort`]: sample sort by regular sampling for any `Ord` serde
//!   type (strings, tuples, records), stable in pid order, each processor
//!   receiving fewer than 2n/p + p elements for balanced inputs;
//! * [`expert`]: the pieces for programs that tune or take apart the
//!   sorts: [`expert::Delivery`] and [`expert::DigitOrder`] (the options
//!   of a pass and of a sort), [`expert::DigitPass`],
//!   [`expert::BucketRanker`] (ranking keys from a small range by coarse
//!   buckets, as NAS IS does) and [`expert::MAX_DIGIT_BITS`];
//! * [`inputs`]: the paper's input distributions and [`nas`]: the NAS
//!   Parallel Benchmarks IS key generator and verification data.
//!
//! The outputs of the counting and radix sorts are congruent with the
//! inputs: every processor keeps its number of elements, and all its keys
//! are ≤ those of the next processor. Sample sort's outputs are sorted in
//! pid order the same way, but their sizes follow the splitters.
//!
//! ```
//! let out = bsp_core::run(4, |ctx| {
//!     let mut keys = bsp_sort::inputs::Dist::Uniform.keys_u32(ctx.pid(), ctx.nprocs(), 1 << 14);
//!     bsp_sort::radix_sort(ctx, &mut keys);
//!     keys
//! })
//! .unwrap();
//! assert!(out.concat().windows(2).all(|w| w[0] <= w[1]));
//! ```

#![forbid(unsafe_code)]

mod bucket_rank;
mod cache_size;
mod counting_sort;
mod digit_pass;
pub mod expert;
mod gather_area;
pub mod inputs;
mod key;
mod merge_runs;
pub mod nas;
mod radix_sort;
mod sample_sort;
mod top_first;
mod top_halves;

pub use counting_sort::CountingSort;
pub use key::RadixKey;
pub use radix_sort::{radix_sort, radix_sort_by_key, RadixOptions, RadixSorter, SortInfo};
pub use sample_sort::sample_sort;
