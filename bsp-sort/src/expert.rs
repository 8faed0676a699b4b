//! The expert layer of the sorts: how a counting-sort pass delivers its
//! keys ([`Delivery`]), the order of a radix sort's digits
//! ([`DigitOrder`], [`MAX_DIGIT_BITS`]), one digit pass of a sort taken
//! apart ([`DigitPass`]), and ranking keys from a small range by coarse
//! buckets, as NAS IS does ([`BucketRanker`]).
//!
//! The sorts at the crate's top level choose these for you; set them
//! through [`RadixOptions`](crate::RadixOptions) and
//! [`CountingSort::with_delivery`](crate::CountingSort::with_delivery).
//!
//! ```
//! use bsp_sort::expert::{Delivery, DigitOrder};
//! use bsp_sort::{RadixOptions, RadixSorter};
//!
//! let out = bsp_core::run(2, |ctx| {
//!     let mut keys: Vec<u32> = (0..500u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
//!     let options = RadixOptions {
//!         delivery: Delivery::Direct,
//!         order: DigitOrder::LeastFirst,
//!         ..RadixOptions::default()
//!     };
//!     RadixSorter::with_options(ctx, keys.len(), options).sort(ctx, &mut keys);
//!     keys
//! })
//! .unwrap();
//! assert!(out.concat().windows(2).all(|w| w[0] <= w[1]));
//! ```

pub use crate::bucket_rank::BucketRanker;
pub use crate::counting_sort::Delivery;
pub use crate::digit_pass::DigitPass;
pub use crate::radix_sort::{DigitOrder, MAX_DIGIT_BITS};
