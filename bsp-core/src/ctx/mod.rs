//! The processor context: the public façade over one processor's state.
//!
//! `Ctx` owns the parts and [`sync`](Ctx::sync) is a short script over
//! them: the [`Registry`] of coarrays and queues, the [`Outbox`] of this
//! superstep's requests and the [`PendingGets`], the sync row of the
//! [`protocol`](crate::protocol), routing by the [`router`](crate::router)
//! over the transport's [`Comm`], [`Inbound`] delivery, and the
//! [`StatsLog`]. The public methods live beside it by topic: `coarrays.rs`
//! (registration and local access), `remote.rs` (puts and gets) and
//! `queues.rs` (messages).

mod coarrays;
mod queues;
mod remote;

use std::time::Instant;

use crate::delivery::{DeferredPut, Inbound, PendingGets};
use crate::error::{Error, ErrorKind};
use crate::machine::Machine;
use crate::outbox::Outbox;
use crate::protocol::{self, Status, SyncDecision, SyncFigures, SyncRow};
use crate::registry::Registry;
use crate::router::{route, Matrix, Router};
use crate::segments::segments_len;
use crate::stats::Stats;
use crate::stats_log::{Choice, StatsLog};
use crate::transport::{Aborted, Blocks, Comm, Transport};

/// A processor's view of the BSP computation: passed to the closure given
/// to [`Runtime::run`](crate::Runtime::run).
///
/// Everything a processor does to others goes through its `Ctx`: puts,
/// gets and sends are buffered here and delivered together at
/// [`sync`](Ctx::sync).
pub struct Ctx {
    pid: usize,
    nprocs: usize,
    superstep: usize,
    router: Router,
    /// The machine's parameters, when the run knows them (always under
    /// [`Router::Auto`]).
    machine: Option<Machine>,
    transport: Transport,
    comm: Box<dyn Comm>,
    registry: Registry,
    outbox: Outbox,
    gets: PendingGets,
    /// Whether a get was requested this superstep.
    has_gets: bool,
    /// Coarrays named as sources by `put_from` this superstep.
    lending: Vec<u32>,
    /// This processor's figures for the last sync, sent in the next row.
    last_sync: SyncFigures,
    stats: StatsLog,
    /// Whether the end-of-run exchange has happened.
    finished: bool,
    work_start: Instant,
}

impl Ctx {
    pub(crate) fn new(
        comm: Box<dyn Comm>,
        router: Router,
        machine: Option<Machine>,
        transport: Transport,
    ) -> Self {
        let (pid, nprocs) = (comm.pid(), comm.nprocs());
        Ctx {
            pid,
            nprocs,
            superstep: 0,
            router,
            machine,
            transport,
            comm,
            registry: Registry::new(),
            outbox: Outbox::new(nprocs),
            gets: PendingGets::default(),
            has_gets: false,
            lending: Vec::new(),
            last_sync: SyncFigures::default(),
            stats: StatsLog::new(protocol::row_width(nprocs)),
            finished: false,
            work_start: Instant::now(),
        }
    }

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

    /// Changes the router from the next sync on (every processor must do
    /// the same; used by the machine probe).
    pub(crate) fn set_router(&mut self, router: Router) {
        self.router = router;
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
    /// assert_eq!(seen, vec![Some(m), Some(m)]);
    /// ```
    pub fn machine(&self) -> Option<Machine> {
        self.machine
    }

    /// The transport of this run.
    pub fn transport(&self) -> Transport {
        self.transport
    }

    /// Ends the run with `error`.
    pub(crate) fn abort(&mut self, error: Error) -> ! {
        self.comm.abort(error)
    }

    /// Ends the run with `kind` and `message`, blaming processor `pid`.
    fn fail(&mut self, kind: ErrorKind, pid: usize, message: String) -> ! {
        let error = Error::at(kind, pid, self.superstep, message);
        self.abort(error)
    }

    /// The value of `result`, or the end of the run with its error.
    fn or_abort<T>(&mut self, result: Result<T, Error>) -> T {
        result.unwrap_or_else(|error| self.abort(error))
    }

    fn check_pid(&mut self, op: &str, dst: usize) {
        if dst >= self.nprocs {
            let msg = format!(
                "{op} addressed to processor {dst}, but there are only {} processors (ids 0..{})",
                self.nprocs, self.nprocs
            );
            self.fail(ErrorKind::BadPid, self.pid, msg);
        }
    }

    /// Runs a collective of the transport; unwinds if the run was aborted.
    fn collective<R>(&mut self, op: impl FnOnce(&mut dyn Comm) -> Result<R, Aborted>) -> R {
        match op(self.comm.as_mut()) {
            Ok(r) => r,
            Err(Aborted) => std::panic::resume_unwind(Box::new(Aborted)),
        }
    }

    /// Statistics of the supersteps completed so far (every superstep whose
    /// figures have been exchanged: all but the last synced one, and all of
    /// them once the run has ended). Only the most recent 65,536 supersteps
    /// are kept.
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
    /// let first = &stats[0].supersteps[0];
    /// assert_eq!(first.sent_records, vec![1, 1]);
    /// ```
    ///
    /// # Cost
    ///
    /// Local, linear in the supersteps kept times p.
    pub fn stats(&self) -> Stats {
        Stats {
            nprocs: self.nprocs,
            router: self.router,
            transport: self.transport,
            supersteps: self.stats.supersteps(self.finished),
        }
    }

    /// Exchanges the sync rows, checks them, picks the sync's router and
    /// logs the rows and the choice for the statistics. Returns the
    /// decision, the router, and (when the rows carry counts) the bytes
    /// each processor is about to send to this one.
    fn exchange_rows(&mut self, status: Status) -> (SyncDecision, Router, Option<Matrix>) {
        let row = SyncRow {
            status,
            superstep: self.superstep as u64,
            registrations: self.registry.len() as u64,
            fingerprint: self.registry.fingerprint(),
            has_gets: self.has_gets,
            bytes: self.outbox.bytes() as u64,
            work_ns: self.work_start.elapsed().as_nanos() as u64,
            lends: !self.lending.is_empty(),
            previous: self.last_sync,
        };
        let width = protocol::row_width(self.nprocs);
        let mut mine = Vec::with_capacity(width);
        mine.extend_from_slice(&row.to_words());
        mine.extend((mine.len()..width).map(|k| self.outbox.bytes_to(k - SyncRow::WORDS) as u64));
        let words = self.collective(|c| c.allgather(&mine));
        let decision = protocol::decide(&words, width, self.pid, || self.registry.history());
        let decision = self.or_abort(decision);
        let h = decision.h_estimate(self.nprocs);
        let choice = match (self.router, self.machine) {
            (Router::Auto, Some(m)) => {
                let (router, predicted) = m.choose(h);
                Choice {
                    router,
                    predicted: Some(predicted),
                    h,
                }
            }
            (Router::Auto, None) => Choice {
                router: Router::TwoPhase,
                predicted: None,
                h,
            },
            (router, m) => Choice {
                router,
                predicted: m.and_then(|m| m.cost(router)).map(|c| c.predict(h)),
                h,
            },
        };
        let expected = protocol::matrix(&words, width);
        self.stats.push(words, choice);
        (decision, choice.router, expected)
    }

    /// Ends the superstep: delivers every put, get and send requested by any
    /// processor during it, then starts the next superstep.
    ///
    /// Delivery order: get requests are served first (they read the data as
    /// it was before this superstep's puts); then, for each source pid in
    /// ascending order, its puts are applied and its messages queued in call
    /// order.
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
    /// assert_eq!(steps, vec![2, 2]);
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
    /// l (one all-gather of a 27-word row) plus, if anything was requested,
    /// h·g for the h-relation: two transposes for [`Router::TwoPhase`], one
    /// irregular all-to-all for [`Router::Direct`], the cheaper by the cost
    /// model for [`Router::Auto`]; gets add a second h-relation for the
    /// replies, by the same router. Bookkeeping is proportional to the
    /// processors written to and the parts routed, not to p.
    pub fn sync(&mut self) {
        let start = Instant::now();
        let (decision, router, expected) = self.exchange_rows(Status::Syncing);
        let mut figures = SyncFigures::default();
        figures.records.sent = self.outbox.records();
        if decision.anything {
            let mut deferred = Vec::new();
            let lent = self.registry.lend(&std::mem::take(&mut self.lending));
            let streams = self.outbox.take(|id| lent[&id].clone());
            drop(lent);
            let replies = self.deliver(
                router,
                streams,
                expected,
                decision.any_gets,
                &mut figures,
                &mut deferred,
            );
            if let Some(mut replies) = replies {
                figures.records.sent += replies.records();
                let streams = replies.take(|_| unreachable!("replies are copied"));
                self.deliver(router, streams, None, false, &mut figures, &mut deferred);
            }
            if decision.any_lends {
                // Every reader of a lent coarray has finished once everyone
                // has passed this barrier.
                self.collective(|c| c.allgather(&[]));
                self.registry.reclaim();
                let applied = self.inbound().apply_deferred(deferred);
                self.or_abort(applied);
            }
        }
        self.has_gets = false;
        self.superstep += 1;
        figures.sync_ns = start.elapsed().as_nanos() as u64;
        self.last_sync = figures;
        self.work_start = Instant::now();
    }

    fn inbound(&mut self) -> Inbound<'_> {
        Inbound {
            me: self.pid,
            nprocs: self.nprocs,
            superstep: self.superstep,
            registry: &mut self.registry,
            gets: &mut self.gets,
        }
    }

    /// Routes `streams` and delivers what arrives; with `serve_gets`, also
    /// answers the get requests among it and returns the replies to send.
    /// `matrix`, when known, is the routing's communication matrix.
    fn deliver(
        &mut self,
        router: Router,
        streams: Blocks,
        matrix: Option<Matrix>,
        serve_gets: bool,
        figures: &mut SyncFigures,
        deferred: &mut Vec<DeferredPut>,
    ) -> Option<Outbox> {
        figures.bytes.sent += streams
            .iter()
            .map(|(_, s)| segments_len(s) as u64)
            .sum::<u64>();
        let (incoming, route) = self.collective(|c| route(router, c, streams, matrix.as_ref()));
        figures.add_route(route);
        figures.bytes.received += incoming
            .iter()
            .map(|(_, s)| segments_len(s) as u64)
            .sum::<u64>();
        let replies = if serve_gets {
            let served = self.inbound().serve_gets(&incoming);
            Some(self.or_abort(served))
        } else {
            None
        };
        let applied = self.inbound().apply(&incoming, deferred);
        figures.records.received += self.or_abort(applied);
        replies
    }

    /// The end of this processor's closure: checks that nothing is left
    /// undelivered and that every other processor is ending too.
    pub(crate) fn finish(&mut self) {
        if !self.outbox.is_empty() {
            let msg = format!(
                "processor {} returned from its closure with {} undelivered puts, gets or sends; \
                 call sync before returning",
                self.pid,
                self.outbox.records()
            );
            self.fail(ErrorKind::PendingCommunication, self.pid, msg);
        }
        self.exchange_rows(Status::Returned);
        self.finished = true;
    }
}
