//! # bsp-core: processors, supersteps and h-relations
//!
//! The runtime of the `bsp` Bulk Synchronous Parallel framework. A program
//! is one closure run by every processor (SPMD). It alternates local work
//! with communication that is requested during a superstep — buffered
//! [`put`](Ctx::put)s and [`get`](Ctx::get)s on registered
//! [`Coarray`]s, and [`send`](Ctx::send)s on typed [`Queue`]s — and
//! delivered, all at once, at [`sync`](Ctx::sync), as one h-relation routed
//! by a [`Router`] over a [`Transport`].
//!
//! ```
//! use bsp_core::prelude::*;
//!
//! let sums = bsp_core::run(4, |ctx| {
//!     let (s, p) = (ctx.pid(), ctx.nprocs());
//!     let partial = ctx.coarray::<u64>(p); // collective registration
//!     for t in 0..p {
//!         ctx.put(t, &partial, s, &[s as u64 * 10]);
//!     }
//!     ctx.sync(); // all puts delivered here, nowhere else
//!     ctx.local(&partial).iter().sum::<u64>()
//! })?;
//! assert_eq!(sums.all(), Some(&vec![60; 4][..]));
//! # Ok::<(), bsp_core::Error>(())
//! ```
//!
//! ## Semantics
//!
//! * Delivery is deterministic: get requests read the data as it was before
//!   the superstep's puts; puts are applied by source pid, then call order;
//!   messages are received by source pid, then send order. Every router
//!   (and [`Router::Auto`]'s choice among them) and both transports deliver
//!   byte-identical results.
//! * Failures end the run with an [`Error`] naming processor and superstep:
//!   a panic, processors disagreeing on the number of syncs or on
//!   registrations, an out-of-range pid or offset. Nothing hangs.
//! * [`Ctx::stats`] reports every superstep's cost figures ([`Stats`]);
//!   `BSP_PROFILE=1` prints them when a run ends.
//!
//! ## Features
//!
//! * `mpi`: the MPI transport ([`Transport`]`::Mpi`), through the `mpi`
//!   crate; needs an MPI library (OpenMPI or MPICH) and libclang.
//! * `tracing`: every run is a span of the `tracing` crate, `bsp run`,
//!   with fields `p` and `transport`. Inside it, every superstep of every
//!   processor is a `superstep` span with fields `pid` and `superstep`,
//!   entered on the processor's thread from the end of the previous sync
//!   (or the processor's start) to the end of its own sync, so that the
//!   program's own spans and events fall inside the superstep they happen
//!   in; a `sync` span inside it covers the sync. At its close a
//!   superstep's span carries its sync's figures: `h` (the bytes every
//!   processor knew before routing, as in
//!   [`SuperstepStats::known_h_bytes`]), `bytes_out`, `bytes_in`,
//!   `records_out`, `records_in` (this processor's), `router` and
//!   `sync_ns`. The last superstep, after the last sync, ends with the run
//!   and records none. The processors' threads use the subscriber of the
//!   thread that starts the run (a subscriber set with
//!   `tracing::subscriber::with_default` sees the whole run); a
//!   [`Session`]'s worker threads use the global one. Without the feature
//!   none of it is compiled.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod area;
mod checkpoint;
mod coarray;
mod codec;
mod ctx;
mod delivery;
pub mod env;
mod error;
mod exit_hook;
pub mod expert;
mod launch;
mod machine;
mod outbox;
mod outcome;
mod panic_hook;
mod placement;
mod pool;
mod profile;
mod protocol;
mod queue;
mod registry;
mod router;
mod runtime;
mod scope;
mod segments;
mod session;
#[cfg(all(feature = "mpi", target_os = "linux"))]
mod shared_memory;
mod stats;
mod stats_log;
mod ticks;
mod transport;
mod wire;

pub use coarray::{Coarray, GetHandle};
pub use ctx::Ctx;
pub use error::{Error, ErrorKind, Result};
pub use exit_hook::at_exit;
pub use machine::{Cost, Machine};
pub use outcome::Outcome;
pub use profile::Profile;
pub use queue::{Encoding, Messages, Queue, Raw, Serde, Tag, Tagged};
pub use router::{ParseRouterError, Router};
pub use runtime::{run, Runtime};
pub use session::Session;
pub use stats::{CheckpointStats, RouteStats, Stats, SuperstepStats};
pub use transport::{launched_by_mpirun, OnFailure, Transport};

/// The `bytemuck` crate that coarrays, puts and `Raw` queues are typed
/// with (`T: Pod`), so that a program needs no dependency of its own. Its
/// derive macros name `::bytemuck`; through this re-export, tell them
/// where it is:
///
/// ```
/// use bsp_core::bytemuck::{self, Pod, Zeroable};
///
/// #[derive(Clone, Copy, Pod, Zeroable)]
/// #[bytemuck(crate = "bsp_core::bytemuck")]
/// #[repr(C)]
/// struct Edge {
///     from: u32,
///     to: u32,
/// }
///
/// let out = bsp_core::run(2, |ctx| {
///     let edges = ctx.coarray::<Edge>(1);
///     let me = ctx.pid() as u32;
///     ctx.put(1 - ctx.pid(), &edges, 0, &[Edge { from: me, to: 1 - me }]);
///     ctx.sync();
///     ctx.local(&edges)[0].from
/// })?;
/// assert_eq!(out.all(), Some(&[1, 0][..]));
/// # Ok::<(), bsp_core::Error>(())
/// ```
pub use bytemuck;

/// The `mpi` crate (rsmpi 0.8) that the MPI transport is built on, for
/// programs that mix bsp runs with their own MPI calls (feature `mpi`). Use
/// it after MPI is initialised (by [`Runtime::mpi`] or by the program).
#[cfg(feature = "mpi")]
#[cfg_attr(docsrs, doc(cfg(feature = "mpi")))]
pub use mpi;

/// The names a BSP program needs: `use bsp_core::prelude::*;`.
pub mod prelude {
    pub use crate::{Coarray, Ctx, GetHandle, Queue, Router, Runtime};
}
