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
//! * Collectives (*Collective Communication and Computation*): [`broadcast`] (binomial tree,
//!   two-phase or pipelined), [`reduce`], [`all_reduce`] (direct,
//!   two-phase or hypercube), [`exclusive_scan`], [`inclusive_scan`]
//!   (direct, two-phase or hypercube), [`segmented_scan`], [`gather`],
//!   [`scatter`], [`all_gather`], [`all_to_all`] and
//!   [`all_to_all_uniform`] (routed, 1-factor or hypercube), with the operators [`Sum`], [`Prod`], [`Min`],
//!   [`Max`], any closure ([`Op`]) or [`monoid`].
//! * Collectives for any serde type (`Serialize + DeserializeOwned`), in
//!   [`serde`]: [`serde::broadcast`], [`serde::gather`],
//!   [`serde::all_gather`] and [`serde::all_to_all`], each value encoded
//!   once.
//! * k-level collectives on sub-machines (Hambrusch, Hameed and Khokhar):
//!   [`broadcast_k_level`], [`scatter_k_level`], [`gather_k_level`],
//!   [`reduce_k_level`] and [`all_to_all_k_level`], for each of
//!   [`Levels`] (direct, 2, 3 and log p levels), each with a `_cost`
//!   function predicting its time from the machine's g and l.
//! * Choice by the cost model: a collective with several algorithms lists
//!   them with their predicted costs ([`Variant`], e.g.
//!   [`broadcast_variants`]); its default runs the one of least predicted
//!   cost ([`pick`]) for the message size, p and the machine's measured
//!   l and g ([`Model`]). Every variant is also callable by name.
//! * Random access over a block-distributed global array ([`Block`]),
//!   Shankar and Ranka: [`raw`] (write, with a [`Collision`] policy) and [`rar`]
//!   (read), both with hot spots handled by bucket stretching, so their
//!   time does not depend on how hot the hot spots are; the naive
//!   [`raw_direct`] and [`rar_direct`]; [`monotonic_raw`], [`generalize`],
//!   [`concentrate`], [`distribute`]; and [`histogram`].
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

pub use all_to_all::{
    all_to_all, all_to_all_hypercube, all_to_all_one_factor, all_to_all_uniform,
    all_to_all_uniform_routed, all_to_all_uniform_variants, AllToAllUniformFn,
};
pub use broadcast::{
    broadcast, broadcast_pipelined, broadcast_tree, broadcast_two_phase, broadcast_variants,
    broadcast_vec, BroadcastFn,
};
pub use dist::Block;
pub use gather::{all_gather, gather, scatter};
pub use histogram::histogram;
pub use klevel::{
    all_to_all_k_level, all_to_all_k_level_cost, broadcast_k_level, broadcast_k_level_cost,
    gather_k_level, gather_k_level_cost, reduce_k_level, reduce_k_level_cost, scatter_k_level,
    scatter_k_level_cost, Levels,
};
pub use model::{pick, CostFn, Model, Variant, NOMINAL_MACHINE};
pub use ops::{monoid, FnMonoid, Max, Min, Monoid, Op, Prod, Sum};
pub use random_access::{
    concentrate, distribute, generalize, monotonic_raw, rar, rar_direct, raw, raw_direct,
    Collision, Combine, Conflict, First, Last, Unique,
};
pub use reduce::{
    all_reduce, all_reduce_direct, all_reduce_hypercube, all_reduce_two_phase, all_reduce_variants,
    reduce, reduce_direct, reduce_two_phase, reduce_variants, AllReduceFn, ReduceFn,
};
pub use scan::{
    exclusive_scan, exclusive_scan_direct, exclusive_scan_hypercube, exclusive_scan_two_phase,
    exclusive_scan_variants, inclusive_scan, inclusive_scan_direct, inclusive_scan_hypercube,
    inclusive_scan_two_phase, inclusive_scan_variants, ScanFn,
};
pub use segmented::segmented_scan;
