//! The expert layer: primitives that ordinary programs do not need, kept
//! off [`Ctx`]'s page.
//!
//! * [`Areas`]: memory the program owns, registered by address (`unsafe`),
//!   with puts and gets by byte offset — for layers such as the BSPlib C
//!   library; a Rust program uses coarrays.
//! * [`DirectPut`] ([`DirectPiece`]): every processor writes its claimed
//!   pieces of a coarray in place, the scatter of a counting sort;
//!   [`DigitPut`] does it by digit, for [`DigitCounts`].
//! * [`OwnedCoarrays`]: coarrays registered on behalf of a library call,
//!   whose errors name that call.
//! * [`DIRECT_MARGIN`]: the margin by which [`Router::Auto`](crate::Router::Auto)
//!   prefers the two-phase router.
//!
//! Each is a trait implemented by [`Ctx`]: `use bsp::expert::Areas;`
//! brings its methods into scope.
//!
//! ## Sort kernels
//!
//! A counting sort's scatter sends every key to the piece of its digit,
//! and at a few nanoseconds a key the cost is the memory system's, not the
//! routing's. These are the pieces `bsp-sort` builds its passes from, kept
//! here because they need `unsafe` (bsp-core is the one crate of the
//! workspace allowed it, and every unsafe block carries its `// SAFETY:`
//! justification):
//!
//! * digit-grouped direct puts: [`DigitCounts`] counts keys by a
//!   [`Digit`], and [`DigitPut::put_direct_by_digit`] scatters them into the
//!   pieces of a [`put_direct`](DirectPut::put_direct) without a check per key
//!   ([`DigitKey`]: the key types it takes), or, with
//!   [`DigitPut::put_direct_by_digit_low`], only each key's bits below the
//!   digit, where the receiver knows the digit from the key's place;
//! * cache-line write combining: [`line_writer::LineWriter`] fills each
//!   output window a cache line at a time and writes whole lines with
//!   stores that do not read them first, where [`stores`] finds that
//!   this pays on the machine at hand;
//! * prefetching: [`prefetch::lines`] walks a slice by cache lines,
//!   requesting the memory ahead;
//! * buffers mapped ahead of their first writes: [`pages::populate`] maps
//!   a fresh buffer's pages in a few requests to the kernel instead of a
//!   fault per page, and [`pages::populate_part`] a coarray's local parts
//!   on all processors at once;
//! * blocks copied out of the cache without reading their destination:
//!   [`stream::copy`];
//! * records stored whole: [`whole::copy`] moves an 8- or 16-byte element
//!   with one store, where the compiler would copy it field by field.
//!
//! A program sends data with [`Ctx::put`], [`Ctx::send`] and
//! [`DirectPut::put_direct`], and sorts with `bsp::sort`; it reaches for these
//! only to write a sort kernel of its own.
//!
//! ```
//! use bsp_core::expert::{Digit, DigitCounts};
//!
//! let keys = [5u32, 1, 4, 1];
//! let counted = DigitCounts::new(&keys, Digit::new(0, 2));
//! assert_eq!(counted.counts(), &[1, 3, 0, 0]); // the low two bits: 4 → 0; 5, 1, 1 → 1
//! ```

mod digit_put;
pub mod line_writer;
pub mod pages;
pub mod prefetch;
pub mod stores;
pub mod stream;
pub mod whole;

pub use crate::area::Area;
pub use crate::ctx::{Areas, DirectPiece, DirectPut, OwnedCoarrays};
pub use crate::machine::DIRECT_MARGIN;
pub use digit_put::{Digit, DigitCounts, DigitKey, DigitPut};

#[cfg(doc)]
use crate::ctx::Ctx;
