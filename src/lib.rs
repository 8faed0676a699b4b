//! # bsp: Bulk Synchronous Parallel computing for Rust
//!
//! A BSP program is one closure run by every processor (SPMD). It
//! alternates local work with communication that it *requests* during a
//! superstep — [`put`](Ctx::put)s and [`get`](Ctx::get)s on registered
//! [`Coarray`]s, [`send`](Ctx::send)s on typed [`Queue`]s — and that is
//! delivered, all at once and in a deterministic order, at
//! [`sync`](Ctx::sync). The same program runs on threads in one process and,
//! with the `mpi` feature, on the ranks of an MPI job.
//!
//! This crate is the façade of the workspace: the runtime at the top level,
//! the collectives and random-access primitives in [`algos`], the sorts in
//! [`sort`], and the kernels those sorts are built from (digit-grouped
//! direct puts, cache-line writes, prefetching) in [`expert`], which
//! ordinary programs do not need. Coming from another BSP or MPI library?
//! [`coming_from`] maps their primitives to these.
//!
//! ## A tour
//!
//! ```
//! use bsp::prelude::*;
//!
//! let sums = bsp::run(4, |ctx| {                // 4 processors: threads, or mpirun's ranks
//!     let (s, p) = (ctx.pid(), ctx.nprocs());
//!     let partial = ctx.coarray::<u64>(p);      // collective registration
//!     for t in 0..p {
//!         ctx.put(t, &partial, s, &[s as u64 * 10]);
//!     }
//!     ctx.sync();                               // all puts delivered here, nowhere else
//!     ctx.local(&partial).iter().sum::<u64>()
//! })?;
//! assert!(sums.iter().all(|&s| s == 60));       // the results this process holds
//! # Ok::<(), bsp::Error>(())
//! ```
//!
//! * **Processors and supersteps**: [`Ctx::pid`], [`Ctx::nprocs`],
//!   [`Ctx::superstep`], [`Ctx::sync`], [`Ctx::time`] and
//!   [`Ctx::label`] (names the superstep in the profile).
//! * **Starting a run**: [`run`]`(p, f)` runs on p threads, or on the MPI
//!   job's ranks when started by `mpirun`; its [`Outcome`] holds the
//!   results of the processors this process ran, by pid, and
//!   [`Outcome::root`] / [`Outcome::is_root`] tell the process that should
//!   print, the same on threads and under MPI. [`Runtime::from_env`]
//!   takes the processor count and every other setting from the
//!   environment ([`env`](mod@env)) and the launcher; [`Runtime::threads`] reads no
//!   variable, and its `with_*` builders set each setting;
//!   [`Runtime::run_all`] returns every processor's result everywhere.
//! * **Coarrays** of any `T: bytemuck::Pod`: [`Ctx::coarray`],
//!   [`Ctx::coarray_from`], [`Ctx::local`], [`Ctx::local_mut`],
//!   [`Ctx::release`].
//! * **Puts and gets**: [`Ctx::put`] (copied at the call), [`Ctx::put_from`]
//!   (a range of a local coarray, read at the sync, no copy), [`Ctx::get`]
//!   with [`Ctx::take`], and [`Ctx::get_into`] (a range, straight into a
//!   local coarray).
//! * **Queues**: [`Ctx::queue`] (`Pod` messages), [`Ctx::serde_queue`] (any
//!   serde type), [`Ctx::tagged_queue`] (a tag and a payload slice, as
//!   BSPlib's `bsp_send`); [`Ctx::send`], then after the sync
//!   [`Ctx::receive`], [`Ctx::messages`] (owned: reply while reading),
//!   [`Ctx::queue_len`], [`Ctx::peek`] and [`Ctx::next_message`];
//!   [`Ctx::keep_unread`] keeps what the next sync would drop.
//! * **Collectives** in [`algos`]: broadcast, reduce, scans, gather,
//!   scatter, all-to-all, and random access with hot spots;
//!   [`algos::serde`] for any serde type.
//! * **Sorting** in [`sort`]: the stable parallel radix sort, a sample
//!   sort for any `Ord` serde type ([`sort::sample_sort`]) and the NAS IS
//!   kernel.
//! * **Checkpoint and restart**: [`Ctx::checkpoint`] saves every
//!   processor's coarrays, kept messages, a serde state and the superstep
//!   counter at a superstep boundary to
//!   [`Runtime::with_checkpoint_dir`]; [`Ctx::restore`] puts the newest
//!   complete checkpoint back, so a killed run resumes.
//! * **Cost statistics**: [`Ctx::stats`] ([`Stats`]); [`Profile::Table`]
//!   (`BSP_PROFILE=1`) prints a table per superstep when the run ends,
//!   [`Profile::Trace`] (`BSP_PROFILE=trace`) writes a timeline for
//!   ui.perfetto.dev.
//!
//! ## Semantics
//!
//! * **Registration is collective.** The i-th registration (coarray or
//!   queue) on every processor names the same distributed variable; local
//!   lengths may differ. Processors that register differently end the run
//!   with an [`Error`] at the next sync.
//! * **Puts land at the sync.** A put's source is copied at the call (or,
//!   with [`Ctx::put_from`], read at the sync); the write happens during the
//!   `sync`. Several puts to one element are applied by source pid, then call
//!   order: the last one wins, the same on every run.
//! * **Gets read the past.** A get reads the source's data as it was
//!   *before* the superstep's puts (BSPlib semantics); its value is
//!   available after the sync.
//! * **Messages are ordered, and last one superstep.** After a sync, a
//!   queue holds the messages sent to this processor in that superstep,
//!   ordered by source pid, then send order. As in BSPlib, the next sync
//!   drops those not read (a debug build says so once per queue), unless
//!   the queue keeps them ([`Ctx::keep_unread`]).
//! * **Delivery is one h-relation.** Every sync routes all requests as one
//!   h-relation, by default with the deterministic two-transpose router of
//!   Bader, Helman and JáJá ([`Router`]). A superstep costs
//!   w + h·g + l in the BSP model, and its figures are in [`Stats`].
//! * **Determinism.** For a given program, p and input, every result,
//!   delivery order and statistic except times is the same on every run,
//!   every router and every transport.
//! * **Failures are errors, not hangs.** A panic, processors disagreeing on
//!   the number of syncs or on registrations, a bad pid or an out-of-bounds
//!   offset end the run with an [`Error`] naming the processor and
//!   superstep; every other processor is released. Under MPI the job is
//!   aborted with the message.
//!
//! ## Features
//!
//! * `mpi`: the MPI transport ([`Transport`]`::Mpi`), through the `mpi`
//!   crate; needs an MPI library (OpenMPI or MPICH) and libclang.
//! * `tracing`: every run is a span of the `tracing` crate, `bsp run`
//!   (fields `p` and `transport`), and every superstep of every processor
//!   a `superstep` span inside it (fields `pid` and `superstep`, with a
//!   `sync` span around its sync), closed with its sync's figures (`h`,
//!   `bytes_out`, `bytes_in`, `records_out`, `records_in`, `router`,
//!   `sync_ns`). See bsp-core's documentation.

#![cfg_attr(docsrs, feature(doc_cfg))]

pub use bsp_core::*;

pub mod coming_from;

pub mod algos {
    //! Collectives and random-access primitives (the `bsp-algos` crate).
    //!
    //! Every function takes the processor's [`Ctx`](crate::Ctx) and is
    //! collective: every processor calls it, in the same order. Each documents
    //! its supersteps and h-relation (`# Cost`).
    //!
    //! * Collectives on `Pod` data: [`broadcast`], [`broadcast_vec`],
    //!   [`reduce`], [`all_reduce`], [`exclusive_scan`], [`inclusive_scan`],
    //!   [`segmented_scan`], [`gather`], [`scatter`], [`all_gather`],
    //!   [`all_to_all`], [`all_to_all_uniform`], with the operators
    //!   [`Sum`], [`Prod`], [`Min`], [`Max`], a closure or a [`monoid`].
    //! * Collectives on any serde type, in [`serde`]: [`serde::broadcast`],
    //!   [`serde::gather`], [`serde::all_gather`], [`serde::all_to_all`].
    //! * Random access over a block-distributed array ([`Block`]): [`raw`]
    //!   (write, with a [`Collision`] policy) and [`rar`] (read), with hot spots
    //!   stretched over intermediate processors; [`monotonic_raw`],
    //!   [`generalize`], [`concentrate`], [`distribute`] and [`histogram`].
    //! * The expert layer, [`variants`]: every named algorithm behind a
    //!   collective (tree, two-phase, pipelined, hypercube, k-level, ...),
    //!   its predicted cost, and the cost model the defaults pick by.
    //!
    //! ```
    //! use bsp::algos::{all_reduce, Max};
    //!
    //! let out = bsp::run(3, |ctx| {
    //!     let mut slowest = [ctx.pid() as f64 * 0.5];
    //!     all_reduce(ctx, &mut slowest, &Max); // every processor gets the maximum
    //!     slowest[0]
    //! })?;
    //! assert!(out.iter().all(|&m| m == 1.0));
    //! # Ok::<(), bsp::Error>(())
    //! ```

    pub use bsp_algos::*;
}

pub mod sort {
    //! Counting sort, the stable parallel radix sort and sample sort (the
    //! `bsp-sort` crate).
    //!
    //! * [`RadixSorter`], [`radix_sort`], [`radix_sort_by_key`]: the stable LSD
    //!   radix sort of Bader, Helman and JáJá for every [`RadixKey`] (u8–u64,
    //!   i8–i64, f32/f64) and for records sorted by a key; outputs are
    //!   congruent with the inputs (every processor keeps its number of
    //!   elements, all ≤ those of the next processor);
    //! * [`sample_sort`]: sample sort by regular sampling for any `Ord`
    //!   serde type (strings, tuples, records), stable in pid order, each
    //!   processor receiving fewer than 2n/p + p elements for balanced
    //!   inputs;
    //! * [`CountingSort`]: one counting-sort pass in the paper's six steps;
    //! * [`inputs`]: the paper's input distributions; [`nas`]: the NAS
    //!   Parallel Benchmarks IS kernel's keys and verification;
    //! * [`expert`]: the options and pieces of the sorts (deliveries, digit
    //!   order, one digit pass, NAS IS's bucket ranker).
    //!
    //! ```
    //! let out = bsp::run(2, |ctx| {
    //!     let mut keys: Vec<u32> = (0..1000).map(|i| (i * 7919 + ctx.pid() as u32) % 1013).collect();
    //!     bsp::sort::radix_sort(ctx, &mut keys);
    //!     keys
    //! })?;
    //! assert!(out.concat().windows(2).all(|w| w[0] <= w[1]));
    //! # Ok::<(), bsp::Error>(())
    //! ```

    pub use bsp_sort::*;
}

/// The names a BSP program needs: `use bsp::prelude::*;`.
pub mod prelude {
    pub use bsp_core::prelude::*;
}
