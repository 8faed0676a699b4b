//! The expert layer: the named algorithms behind each defaulted
//! collective, and the cost model that picks among them.
//!
//! A collective with several algorithms (broadcast, reduce, all-reduce,
//! the scans, the uniform all-to-all) lists them with their predicted
//! costs ([`Variant`], e.g. [`broadcast_variants`]); the collective at the
//! crate's top level ([`broadcast`](crate::broadcast), ...) runs the one of
//! least predicted cost ([`pick`]) for the message size, p and the
//! machine's measured l and g ([`Model`]). Here every variant is also
//! callable by name, for benchmarks and for programs that know better than
//! the model:
//!
//! * broadcast: [`broadcast_tree`], [`broadcast_two_phase`],
//!   [`broadcast_pipelined`];
//! * reduce and all-reduce: [`reduce_direct`], [`reduce_two_phase`],
//!   [`all_reduce_direct`], [`all_reduce_two_phase`],
//!   [`all_reduce_hypercube`];
//! * scans: [`exclusive_scan_direct`], [`exclusive_scan_two_phase`],
//!   [`exclusive_scan_hypercube`] and the same for `inclusive_scan`;
//! * uniform all-to-all: [`all_to_all_uniform_routed`],
//!   [`all_to_all_one_factor`], [`all_to_all_hypercube`];
//! * k-level collectives on sub-machines (Hambrusch, Hameed and Khokhar):
//!   [`broadcast_k_level`], [`scatter_k_level`], [`gather_k_level`],
//!   [`reduce_k_level`] and [`all_to_all_k_level`], for each of
//!   [`Levels`] (direct, 2, 3 and log p levels), each with a `_cost`
//!   function predicting its time from the machine's g and l;
//! * random access without bucket stretching: [`raw_direct`] and
//!   [`rar_direct`], whose time grows with the hottest spot.
//!
//! ```
//! use bsp_algos::variants::{broadcast_variants, pick, Model, NOMINAL_MACHINE};
//! use bsp_core::Router;
//!
//! let model = Model::new(NOMINAL_MACHINE, Router::TwoPhase);
//! let variants = broadcast_variants::<u8>();
//! let chosen = pick(&model, 16, 64 << 20, &variants);
//! let out = bsp_core::run(3, |ctx| {
//!     let mut buf = [ctx.pid() as u8; 4];
//!     (chosen.run)(ctx, 0, &mut buf);
//!     buf
//! })
//! .unwrap();
//! assert!(out.iter().all(|b| b == &[0; 4]));
//! ```

pub use crate::all_to_all::{
    all_to_all_hypercube, all_to_all_one_factor, all_to_all_uniform_routed,
    all_to_all_uniform_variants, AllToAllUniformFn,
};
pub use crate::broadcast::{
    broadcast_pipelined, broadcast_tree, broadcast_two_phase, broadcast_variants, BroadcastFn,
};
pub use crate::klevel::{
    all_to_all_k_level, all_to_all_k_level_cost, broadcast_k_level, broadcast_k_level_cost,
    gather_k_level, gather_k_level_cost, reduce_k_level, reduce_k_level_cost, scatter_k_level,
    scatter_k_level_cost, Levels,
};
pub use crate::model::{pick, CostFn, Model, Variant, NOMINAL_MACHINE};
pub use crate::random_access::{rar_direct, raw_direct};
pub use crate::reduce::{
    all_reduce_direct, all_reduce_hypercube, all_reduce_two_phase, all_reduce_variants,
    reduce_direct, reduce_two_phase, reduce_variants, AllReduceFn, ReduceFn,
};
pub use crate::scan::{
    exclusive_scan_direct, exclusive_scan_hypercube, exclusive_scan_two_phase,
    exclusive_scan_variants, inclusive_scan_direct, inclusive_scan_hypercube,
    inclusive_scan_two_phase, inclusive_scan_variants, ScanFn,
};
