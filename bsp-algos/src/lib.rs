//! # bsp-algos: collectives and random-access primitives
//!
//! Written only against the public API of `bsp-core`, so every primitive
//! runs unchanged on every transport. Each takes the processor's
//! [`Ctx`](bsp_core::Ctx) and is collective: every processor calls it, in
//! the same order, as part of the same superstep sequence. Each documents
//! its cost as supersteps and h-relation size (`# Cost`). The coarrays a
//! primitive registers for its own use are released
//! ([`Ctx::release`](bsp_core::Ctx::release)) before it returns, so
//! repeated calls do not hold on to them.
//!
//! * Collectives (*Collective Communication and Computation*) on `Pod`
//!   data: [`broadcast`], [`broadcast_vec`], [`reduce`], [`all_reduce`],
//!   [`exclusive_scan`], [`inclusive_scan`], [`segmented_scan`],
//!   [`gather`], [`scatter`], [`all_gather`], [`all_to_all`] and
//!   [`all_to_all_uniform`], with the operators [`Sum`], [`Prod`],
//!   [`Min`], [`Max`], any closure ([`Op`]) or [`monoid`]. Misuse a
//!   processor sees alone (a root out of range, a wrong number of parts)
//!   ends the run with a message naming the collective; vectors of
//!   unequal lengths, which a processor learns of only from the sync that
//!   moves them, end it either with a message naming the collective and
//!   both lengths or, where a longer vector runs past a receiver's buffer,
//!   with the core's out-of-bounds put.
//! * Collectives for any serde type (`Serialize + DeserializeOwned`), in
//!   [`serde`]: [`serde::broadcast`], [`serde::gather`],
//!   [`serde::all_gather`] and [`serde::all_to_all`], each value encoded
//!   once.
//! * Random access over a block-distributed global array ([`Block`]),
//!   Shankar and Ranka: [`raw`] (write, with a [`Collision`] policy) and [`rar`]
//!   (read), both with hot spots handled by bucket stretching, so their
//!   time does not depend on how hot the hot spots are; [`monotonic_raw`],
//!   [`generalize`], [`concentrate`], [`distribute`]; and [`histogram`].
//! * The expert layer, [`variants`]: where a collective has several
//!   algorithms (binomial tree, two-phase, pipelined, hypercube,
//!   1-factor, k-level on sub-machines), its default runs the one the
//!   cost model ([`variants::Model`], [`variants::pick`]) predicts
//!   cheapest for the message size, p and the machine's measured l and g;
//!   [`variants`] names every algorithm, its predicted cost and the model.
//!
//! ```
//! use bsp_algos::Sum;
//!
//! let out = bsp_core::run(4, |ctx| {
//!     let mut v = [ctx.pid() as u64, 1];
//!     bsp_algos::all_reduce(ctx, &mut v, &Sum);
//!     v
//! })
//! .unwrap();
//! assert!(out.iter().all(|v| v == &[6, 4]));
//! ```

#![forbid(unsafe_code)]

mod all_to_all;
mod broadcast;
mod dist;
mod gather;
mod histogram;
mod hypercube;
mod klevel;
mod model;
mod ops;
mod puts_and_sends;
mod random_access;
mod reduce;
mod rows;
mod same_len;
mod scan;
mod segmented;
pub mod serde;
pub mod variants;

pub use all_to_all::{all_to_all, all_to_all_uniform};
pub use broadcast::{broadcast, broadcast_vec};
pub use dist::Block;
pub use gather::{all_gather, gather, scatter};
pub use histogram::histogram;
pub use ops::{monoid, FnMonoid, Max, Min, Monoid, Op, Prod, Sum};
pub use random_access::{
    concentrate, distribute, generalize, monotonic_raw, rar, raw, Collision, Combine, Conflict,
    First, Last, Unique,
};
pub use reduce::{all_reduce, reduce};
pub use scan::{exclusive_scan, inclusive_scan};
pub use segmented::segmented_scan;
