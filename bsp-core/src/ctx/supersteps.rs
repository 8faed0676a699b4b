//! The core verbs of a processor: who it is, on which machine, and the
//! sync that ends each superstep. They live in a module of their own,
//! declared first, so that they head `Ctx`'s page; the sync's machinery
//! is in `mod.rs`.

use super::Ctx;
use crate::error::{Error, ErrorKind};
use crate::machine::Machine;
use crate::router::Router;
use crate::stats::Stats;
use crate::transport::Transport;

impl Ctx {
    /// This processor's id, in `0..nprocs()`.
    pub fn pid(&self) -> usize {
        self.pid
    }

    /// The number of processors p.
    pub fn nprocs(&self) -> usize {
        self.nprocs
    }

    /// The current superstep: the number of `sync` calls made so far.
    pub fn superstep(&self) -> usize {
        self.superstep
    }

    /// The router delivering this run's supersteps ([`Router::Auto`]
    /// when each superstep's is chosen by the cost model; the choice is in
    /// [`stats`](Ctx::stats)).
    pub fn router(&self) -> Router {
        self.router
    }

    /// The machine's BSP parameters (l and g of each router), when the run
    /// knows them: always under [`Router::Auto`], or when given by
    /// [`Runtime::with_machine`](crate::Runtime::with_machine).
    ///
    /// # Examples
    ///
    /// ```
    /// use bsp_core::{Cost, Machine, Router, Runtime};
    ///
    /// let m = Machine::new(Cost::default(), Cost::default());
    /// let seen = Runtime::threads(2).with_machine(m).run(|ctx| ctx.machine()).unwrap();
    /// assert_eq!(seen.all(), Some(&[Some(m), Some(m)][..]));
    /// ```
    pub fn machine(&self) -> Option<Machine> {
        self.machine
    }

    /// The transport of this run.
    pub fn transport(&self) -> Transport {
        self.transport
    }

    /// Whether every processor of this run is on this processor's node,
    /// sharing its memory: always on threads; under MPI, when all ranks
    /// share a node (`MPI_Comm_split_type` with `MPI_COMM_TYPE_SHARED`,
    /// asked once per process). There an MPI library moves a large
    /// message with one copy, by the receiver out of the sender's memory,
    /// much as the threads transport does; the collectives' cost model
    /// uses it ([`multicast_area`](super::Areas::multicast_area)'s cost).
    ///
    /// # Examples
    ///
    /// ```
    /// let out = bsp_core::run(2, |ctx| ctx.on_one_node()).unwrap();
    /// assert_eq!(out.all(), Some(&vec![true, true][..]));
    /// ```
    pub fn on_one_node(&self) -> bool {
        self.caps.one_node
    }

    /// Ends the run on purpose, on every processor, with an
    /// [`ErrorKind::Abort`] error carrying `message`, this processor's id and
    /// the superstep: BSPlib's `bsp_abort`. [`Runtime::run`](crate::Runtime::run)
    /// returns that error (under MPI, by default, the job ends with it).
    ///
    /// # Examples
    ///
    /// ```
    /// let err = bsp_core::run(3, |ctx| {
    ///     ctx.sync();
    ///     if ctx.pid() == 2 {
    ///         ctx.abort("input file is empty");
    ///     }
    ///     ctx.sync();
    /// })
    /// .unwrap_err();
    /// assert_eq!(err.kind(), bsp_core::ErrorKind::Abort);
    /// assert_eq!((err.pid(), err.superstep()), (Some(2), Some(1)));
    /// assert_eq!(err.message(), "input file is empty");
    /// ```
    ///
    /// # Cost
    ///
    /// Processors waiting in a `sync` are released at once on threads; under
    /// MPI, the job ends (or, with [`OnFailure::Return`](crate::OnFailure),
    /// the others learn of it at their next `sync`).
    pub fn abort(&mut self, message: impl Into<String>) -> ! {
        let error = Error::at(ErrorKind::Abort, self.pid, self.superstep, message);
        self.abort_with(error)
    }

    /// Statistics of the supersteps completed so far (every superstep whose
    /// figures have been exchanged: all but the last synced one, and all of
    /// them once the run has ended), as far back as they are kept.
    ///
    /// Each processor keeps the most recent supersteps within a memory
    /// budget, 4 MiB unless `BSP_STATS_MEMORY` or
    /// [`Runtime::with_stats_memory`](crate::Runtime::with_stats_memory)
    /// (which says how many supersteps that is) sets another; older ones
    /// are dropped, oldest first, and [`Stats::dropped_supersteps`] counts
    /// them.
    ///
    /// # Examples
    ///
    /// ```
    /// let stats = bsp_core::run(2, |ctx| {
    ///     let a = ctx.coarray::<u64>(1);
    ///     ctx.put(1 - ctx.pid(), &a, 0, &[7]);
    ///     ctx.sync();
    ///     ctx.sync();
    ///     ctx.stats()
    /// })
    /// .unwrap();
    /// let first = &stats.local().supersteps[0];
    /// assert_eq!(first.sent_records, vec![1, 1]);
    /// ```
    ///
    /// # Cost
    ///
    /// Local, linear in the supersteps kept times p. Keeping them costs a
    /// sync nothing beyond storing its all-gather's result and letting go
    /// of the oldest one kept.
    pub fn stats(&self) -> Stats {
        Stats {
            nprocs: self.nprocs,
            router: self.router,
            transport: self.transport,
            supersteps: self.stats.supersteps(self.finished),
            dropped_supersteps: self.stats.dropped(),
            machine: self.machine,
            checkpoints: self.checkpointed.clone(),
        }
    }

    /// Ends the superstep: delivers every put, get and send requested by any
    /// processor during it, then starts the next superstep.
    ///
    /// Delivery order: get requests are served first (they read the data as
    /// it was before this superstep's puts), and gets into the program's
    /// memory ([`get_area`](super::Areas::get_area)) land; then, for each source pid
    /// in ascending order, its puts are applied and its messages queued in
    /// call order.
    ///
    /// # Examples
    ///
    /// ```
    /// let steps = bsp_core::run(2, |ctx| {
    ///     ctx.sync();
    ///     ctx.sync();
    ///     ctx.superstep()
    /// })
    /// .unwrap();
    /// assert_eq!(steps.all(), Some(&vec![2, 2][..]));
    /// ```
    ///
    /// # Panics
    ///
    /// Unwinds (and `run` returns the error) when the run is aborted: a
    /// panic on another processor, processors disagreeing on the number of
    /// syncs or on registrations, or an out-of-bounds put or get.
    ///
    /// # Cost
    ///
    /// l (one all-gather of a row of 30 words, and two per processor up to
    /// 64 processors) plus, if anything was requested,
    /// h·g for the h-relation: two transposes for [`Router::TwoPhase`], one
    /// irregular all-to-all for [`Router::Direct`], the cheaper by the cost
    /// model for [`Router::Auto`]; gets add a second h-relation for the
    /// replies, by the same router. Bookkeeping is proportional to the
    /// processors written to and the parts routed, not to p. On threads
    /// the streams travel with the rows: a direct routing costs no
    /// collective beyond the all-gather, so a superstep with puts is one
    /// barrier, and each payload is copied once, into its destination.
    /// Under MPI the rows travel as one-sided puts and one
    /// `MPI_Win_fence`, and a superstep whose blocks are at most 16 KiB
    /// per pair sends them in the same epoch: a direct routing of small
    /// puts is that one fence. A
    /// direct or two-phase routing without gets whose records are large
    /// (4 KiB on average, 32 KiB per rank) sends the record headers ahead
    /// of the payloads (one more small collective up to 64 processors,
    /// whose rows carry the headers' sizes; two beyond) and receives each
    /// payload straight into its coarray, sparing a copy of every byte
    /// received. When the superstep before was placed too, the headers
    /// travel inside the rows (in a slot sized by that superstep, up to 2
    /// KiB a processor), and the extra collective is spared. On one node
    /// the receivers then copy the payloads out of the senders' memory
    /// themselves, between two fences.
    pub fn sync(&mut self) {
        self.sync_voting(0);
    }

    /// Ends the superstep as [`sync`](Ctx::sync) does, and tells whether
    /// any processor voted `true`: a vote carried in the sync's own row, so
    /// it costs no superstep of its own. A processor that calls plain
    /// `sync` in the same superstep votes `false`. The loop of a
    /// level-synchronous algorithm stops on it: every processor learns the
    /// same answer in the same sync.
    ///
    /// # Examples
    ///
    /// ```
    /// let rounds = bsp_core::run(3, |ctx| {
    ///     // Processor q has q + 1 rounds of work; all stop together.
    ///     let mut round = 0;
    ///     while ctx.sync_any(round <= ctx.pid()) {
    ///         round += 1;
    ///     }
    ///     round
    /// })
    /// .unwrap();
    /// assert_eq!(rounds.all(), Some(&vec![3, 3, 3][..]));
    /// ```
    ///
    /// # Panics
    ///
    /// As [`sync`](Ctx::sync).
    ///
    /// # Cost
    ///
    /// That of [`sync`](Ctx::sync): the vote is one more word in each row.
    pub fn sync_any(&mut self, vote: bool) -> bool {
        self.sync_voting(u64::from(vote)) > 0
    }

    /// Ends the superstep as [`sync`](Ctx::sync) does, and returns the sum
    /// over all processors of `value` (0 for a processor that calls plain
    /// `sync` in the same superstep), carried in the sync's own row: a
    /// global count, such as the size of the next frontier, at no extra
    /// superstep.
    ///
    /// # Examples
    ///
    /// ```
    /// let totals = bsp_core::run(4, |ctx| ctx.sync_sum(ctx.pid() as u64 + 1)).unwrap();
    /// assert_eq!(totals.all(), Some(&vec![10, 10, 10, 10][..]));
    /// ```
    ///
    /// # Panics
    ///
    /// As [`sync`](Ctx::sync); and the run ends with an error of kind
    /// [`Panic`](crate::ErrorKind::Panic), on every processor alike, when
    /// the values add up to more than `u64::MAX`.
    ///
    /// # Cost
    ///
    /// That of [`sync`](Ctx::sync): the value is one more word in each row.
    pub fn sync_sum(&mut self, value: u64) -> u64 {
        self.sync_voting(value)
    }
}
