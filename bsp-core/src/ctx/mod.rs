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

// The core verbs first: rustdoc lists `Ctx`'s methods in the order of
// their modules.
mod supersteps;

mod areas;
mod checkpoints;
mod clock;
mod coarrays;
mod direct_put;
mod inbox;
mod queues;
mod remote;
#[cfg(feature = "tracing")]
pub(crate) mod spans;
mod split;

pub use areas::Areas;
pub use coarrays::OwnedCoarrays;
pub use direct_put::{DirectPiece, DirectPut};

use std::time::Instant;

use crate::delivery::{DeferredPut, Inbound, PendingGets};
use crate::error::{Error, ErrorKind};
use crate::machine::Machine;
use crate::outbox::Outbox;
use crate::placement;
use crate::protocol::{self, Status, SyncDecision, SyncFigures, SyncRow, Texts};
use crate::registry::{Registry, Unusable};
use crate::router::{self, route, Matrix, Placing, Router, Volume};
use crate::scope::{Scope, Scoped};
use crate::stats_log::{Choice, StatsLog};
use crate::ticks::Tick;
use crate::transport::{blocks_len, Aborted, Blocks, Capabilities, Comm, Offer, Transport};

/// Idle syncs (that route nothing) in a row after which the rows drop
/// their slot for record heads (`Ctx::heads_slot`). The slot saves a
/// placed superstep that repeats an earlier one a collective, but it
/// widens every row: an empty superstep under MPI after placed ones
/// (np = 2, AMD-2b, BENCHMARKS.md section 14f) took 0.232 µs with it and
/// 0.211 µs without.
const IDLE_SYNCS_KEEP_SLOT: usize = 4;

/// Ends the run with an error of `kind` blaming processor `pid` in
/// `superstep`: unwinds with the error as the payload, which the
/// processor's launch turns into the run's error. For methods that cannot
/// reach the transport (they only borrow the context, or part of it).
pub(crate) fn misuse(pid: usize, superstep: usize, kind: ErrorKind, message: String) -> ! {
    std::panic::panic_any(Error::at(kind, pid, superstep, message))
}

/// Ends the run for a handle `what` (`coarray` or `queue`) #`id` that the
/// user passed in and that is unusable as `why`.
pub(crate) fn unusable(pid: usize, superstep: usize, why: Unusable, what: &str, id: u32) -> ! {
    let (kind, message) = why.misuse(what, id);
    misuse(pid, superstep, kind, message)
}

/// What a sync does with the streams a routing brings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Arrival {
    /// Applies them (puts, messages, get replies).
    Apply,
    /// Answers the get requests among them; the rest is applied once the
    /// replies have landed.
    ServeGets,
    /// Routes directly, the transport writing put payloads straight into
    /// their coarrays where it can; applies the rest.
    Place,
}

/// What a sync's delivery starts from.
enum Outgoing {
    /// Streams to route.
    Route(placement::Streams),
    /// What arrived by a direct exchange made inside the rows' all-gather,
    /// and what this processor sent in it.
    Arrived(Blocks, router::Offered),
}

/// What every processor agrees on from the rows of a sync.
struct Agreed {
    decision: SyncDecision,
    /// The router that routes the superstep.
    router: Router,
    /// Whether the routing is placed ([`Ctx::places`]).
    placed: bool,
    /// The communication matrix, where a routing plans with it.
    matrix: Option<Matrix>,
    /// What came of the streams offered beside the rows, if they were.
    offer: Option<Offer>,
}

/// The value of a collective; unwinds the processor if the run was aborted.
fn unwind_if_aborted<R>(result: Result<R, Aborted>) -> R {
    match result {
        Ok(r) => r,
        Err(Aborted) => std::panic::resume_unwind(Box::new(Aborted)),
    }
}

/// [`exchange_texts`], unwinding if the run is aborted meanwhile.
fn gather_texts(comm: &mut dyn Comm, text: &str) -> Vec<String> {
    unwind_if_aborted(exchange_texts(comm, text))
}

/// Every processor's `text`, by pid: a collective of two all-gathers
/// (lengths, then the bytes), for error reports that need what only other
/// processors know. Texts longer than 4 KiB are cut (keeping their end).
pub(crate) fn exchange_texts(comm: &mut dyn Comm, text: &str) -> Result<Vec<String>, Aborted> {
    const MAX: usize = 4096;
    let mut cut = text.len().saturating_sub(MAX);
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    let text = &text.as_bytes()[cut..];
    let lens = comm.allgather(&[text.len() as u64])?;
    let width = lens.iter().copied().max().unwrap_or(0).div_ceil(8) as usize;
    if width == 0 {
        return Ok(vec![String::new(); lens.len()]);
    }
    let mut row = vec![0u64; width];
    bytemuck::cast_slice_mut::<u64, u8>(&mut row)[..text.len()].copy_from_slice(text);
    let all = comm.allgather(&row)?;
    Ok(lens
        .iter()
        .zip(all.chunks(width))
        .map(|(&len, words)| {
            let bytes = &bytemuck::cast_slice::<u64, u8>(words)[..len as usize];
            String::from_utf8_lossy(bytes).into_owned()
        })
        .collect())
}

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
    /// What `comm` can do, read once (it is fixed for a communicator's
    /// life): a sync consults it several times.
    caps: Capabilities,
    /// The machine this context is a processor of: every handle it makes
    /// carries it, and every handle it is given must.
    scope: Scope,
    /// How many times this machine has split (each sub-machine's scope
    /// derives from it).
    splits: u64,
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
    /// Where [`checkpoint`](Ctx::checkpoint) saves and
    /// [`restore`](Ctx::restore) looks (the run's; none on a sub-machine).
    pub(crate) checkpoints: Option<crate::checkpoint::Place>,
    /// This processor's checkpoints so far, for [`Stats`](crate::Stats).
    checkpointed: Vec<crate::stats::CheckpointStats>,
    /// Words of the slot for record heads in the sync rows
    /// (`protocol::heads_slot`), agreed by every processor after each
    /// sync; 0 for none.
    heads_slot: usize,
    /// Syncs in a row that routed nothing, the same on every processor:
    /// after [`IDLE_SYNCS_KEEP_SLOT`] of them the slot goes.
    idle_syncs: usize,
    /// When this processor's supersteps place their payloads (the same on
    /// every processor).
    placing: Placing,
    /// The matrix of the last placed routing that a later one may repeat
    /// (`Matrix::repeats`); `None` after any other routing.
    last_placed: Option<Matrix>,
    /// Whether the end-of-run exchange has happened.
    finished: bool,
    /// Under [`OnFailure::Return`](crate::OnFailure), the first error found
    /// while delivering this sync, settled with the others at its end.
    pending: Option<Error>,
    /// The message of the failure this processor is announcing.
    announcing: String,
    work_start: Tick,
    /// When this processor's run began ([`Ctx::time`]).
    started: Instant,
    /// What [`Ctx::get_into`] copies into local coarrays after the sync.
    landing: Vec<remote::Landing>,
    /// The buffer this processor's sync rows are written in, kept for the
    /// next sync.
    row_buffer: Vec<u64>,
    /// The buffer an MPI direct put stages its writes in, kept for the next.
    direct_stage: direct_put::StageHome,
    /// The current superstep's `tracing` span.
    #[cfg(feature = "tracing")]
    spans: spans::Supersteps,
}

impl Ctx {
    pub(crate) fn new(
        comm: Box<dyn Comm>,
        router: Router,
        machine: Option<Machine>,
        transport: Transport,
        scope: Scope,
        stats_memory: usize,
    ) -> Self {
        let (pid, nprocs) = (comm.pid(), comm.nprocs());
        Ctx {
            caps: comm.capabilities(),
            pid,
            nprocs,
            superstep: 0,
            router,
            machine,
            transport,
            comm,
            scope,
            splits: 0,
            registry: Registry::new(),
            outbox: Outbox::new(nprocs),
            gets: PendingGets::default(),
            has_gets: false,
            lending: Vec::new(),
            last_sync: SyncFigures::default(),
            stats: StatsLog::new(nprocs, stats_memory),
            heads_slot: 0,
            idle_syncs: 0,
            placing: Placing::from_env().unwrap_or_default(),
            last_placed: None,
            finished: false,
            pending: None,
            announcing: String::new(),
            work_start: Tick::now(),
            started: Instant::now(),
            landing: Vec::new(),
            row_buffer: Vec::new(),
            direct_stage: direct_put::StageHome::default(),
            checkpoints: None,
            checkpointed: Vec::new(),
            #[cfg(feature = "tracing")]
            spans: spans::Supersteps::open(pid),
        }
    }

    /// The index that `handle` names on this machine. Ends the run when the
    /// handle was made by another machine (a sub-machine, a parent, another
    /// run): its index would name something else here.
    #[inline]
    fn id_of<H: Scoped>(&self, handle: &H) -> u32 {
        if handle.scope() != self.scope {
            self.foreign_handle(H::WHAT, handle.id());
        }
        handle.id()
    }

    #[cold]
    fn foreign_handle(&self, what: &str, id: u32) -> ! {
        misuse(
            self.pid,
            self.superstep,
            ErrorKind::RegistrationMismatch,
            format!(
                "{what} #{id} was registered by another machine (another run, a sub-machine \
                 of a split, or the machine that split into this one) and cannot be used \
                 on this one: pass data into and out of a split by value"
            ),
        )
    }

    /// Changes the router from the next sync on (every processor must do
    /// the same; used by the machine probe).
    pub(crate) fn set_router(&mut self, router: Router) {
        self.router = router;
    }

    /// Ends the run with the application's error `source`.
    pub(crate) fn fail_application(
        &mut self,
        source: Box<dyn std::error::Error + Send + Sync>,
    ) -> ! {
        let error = Error::application(self.pid, self.superstep, source);
        self.abort_with(error)
    }

    /// Ends the run with `error`, found by this processor outside a sync's
    /// delivery. When the transport agrees on failures, the others learn of
    /// it first, in the row exchange of the sync they are waiting in.
    pub(crate) fn abort_with(&mut self, error: Error) -> ! {
        if !self.comm.agrees_on_failure() {
            self.comm.abort(error)
        }
        self.announcing = error.message().to_owned();
        let row = protocol::failure_words(Some(&error));
        // In place of this processor's row: the same width.
        let width = self.row_width();
        let mut words = vec![0u64; width];
        words[..row.len()].copy_from_slice(&row);
        let all = self.collective(|c| c.allgather(&words));
        let agreed = self.agree(&all, width).unwrap_or(error);
        self.comm.abort(agreed)
    }

    /// The failure announced among `words` (`stride` words per processor),
    /// with its message gathered from the announcer.
    fn agree(&mut self, words: &[u64], stride: usize) -> Option<Error> {
        let (comm, mine) = (&mut self.comm, &self.announcing);
        protocol::agreed_failure(words, stride, || gather_texts(comm.as_mut(), mine))
    }

    /// The value of a delivery step, or its error's end of the run; under
    /// [`OnFailure::Return`](crate::OnFailure), the error waits for the
    /// sync's end (so that every processor takes part in the same
    /// collectives) and the step's default stands in.
    fn settle<T: Default>(&mut self, result: Result<T, Error>) -> T {
        match result {
            Ok(value) => value,
            Err(error) if self.comm.agrees_on_failure() => {
                self.pending = self.pending.take().or(Some(error));
                T::default()
            }
            Err(error) => self.comm.abort(error),
        }
    }

    /// Ends the run with `kind` and `message`, blaming processor `pid`.
    fn fail(&mut self, kind: ErrorKind, pid: usize, message: String) -> ! {
        let error = Error::at(kind, pid, self.superstep, message);
        self.abort_with(error)
    }

    /// Ends the run with an error of `kind` blaming this processor, from a
    /// method that only reads the context; see [`misuse`].
    pub(crate) fn misuse(&self, kind: ErrorKind, message: String) -> ! {
        misuse(self.pid, self.superstep, kind, message)
    }

    #[inline]
    fn check_pid(&mut self, op: &str, dst: usize) {
        if dst >= self.nprocs {
            self.bad_pid(op, dst);
        }
    }

    #[cold]
    fn bad_pid(&mut self, op: &str, dst: usize) {
        let msg = format!(
            "{op} addressed to processor {dst}, but there are only {} processors (ids 0..{})",
            self.nprocs, self.nprocs
        );
        self.fail(ErrorKind::BadPid, self.pid, msg);
    }

    /// Runs a collective of the transport; unwinds if the run was aborted.
    fn collective<R>(&mut self, op: impl FnOnce(&mut dyn Comm) -> Result<R, Aborted>) -> R {
        unwind_if_aborted(op(self.comm.as_mut()))
    }

    /// Words of this processor's row in the all-gather opening the next
    /// sync (or split, or the end of the run): the same on every
    /// processor.
    pub(crate) fn row_width(&self) -> usize {
        protocol::row_width(self.nprocs, self.heads_slot)
    }

    /// This processor's row for the exchange opening a sync (or ending
    /// the run), its record heads not yet in the slot.
    /// `now` ends the superstep's work.
    fn row_words(&mut self, status: Status, vote: u64, now: Tick) -> Vec<u64> {
        self.registry.note_lending(&self.lending);
        let row = SyncRow {
            status,
            superstep: self.superstep as u64,
            registrations: self.registry.len() as u64,
            fingerprint: self.registry.fingerprint(),
            has_gets: self.has_gets,
            bytes: self.outbox.bytes() as u64,
            work_ns: now.nanos_since(self.work_start),
            lends: !self.lending.is_empty(),
            records: self.outbox.records(),
            previous: self.last_sync,
            vote,
            landings: self.registry.layout(),
        };
        let outbox = &self.outbox;
        let mut words = std::mem::take(&mut self.row_buffer);
        protocol::row_words(
            &mut words,
            &row,
            self.nprocs,
            self.heads_slot,
            |k| outbox.bytes_to(k) as u64,
            |k| outbox.head_bytes_to(k),
        );
        words
    }

    /// Exchanges the sync rows (this processor's is `mine`), checks them,
    /// picks the sync's router and logs the rows and the choice for the
    /// statistics. Returns the decision, the router, and (when the rows
    /// carry counts) the communication matrix.
    ///
    /// `offered`, on a transport that publishes blocks beside the rows, are
    /// this processor's streams, offered for a direct exchange in the same
    /// collective; the transport's answer comes back with the decision.
    fn exchange_rows(&mut self, mine: Vec<u64>, offered: Option<Blocks>) -> Agreed {
        let width = mine.len();
        let (words, offer) = match offered {
            None => (self.collective(|c| c.allgather(&mine)), None),
            Some(blocks) => {
                let (words, offer) = self.collective(|c| c.allgather_offering(&mine, blocks));
                (words, Some(offer))
            }
        };
        let (registry, comm, announcing) = (&self.registry, &mut self.comm, &self.announcing);
        let decision = protocol::decide(&words, width, |texts| {
            let mine = match texts {
                Texts::Registrations => registry.history(),
                Texts::Failure => announcing.clone(),
            };
            gather_texts(comm.as_mut(), &mine)
        });
        // Every processor reads the same rows: an error here is agreed.
        let decision = decision.unwrap_or_else(|error| self.comm.abort(error));
        let h = decision.h_estimate(self.nprocs);
        let choice = match (self.router, self.machine) {
            // Nothing to route: no router runs, and the statistics show
            // none (a sync that routes nothing has no routes).
            _ if !decision.anything => Choice {
                router: self.router,
                predicted: None,
                h,
            },
            // One processor sends only to itself: the direct router copies
            // each stream once, where two phases would copy it twice.
            (Router::Auto, m) if self.nprocs == 1 => Choice {
                router: Router::Direct,
                predicted: m.and_then(|m| m.cost(Router::Direct)).map(|c| c.predict(h)),
                h,
            },
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
        // Blocks published beside the rows and routed directly are in
        // their receivers' mailboxes; unless placed, they have arrived:
        // nothing plans with the matrix.
        let published_direct =
            matches!(offer, Some(Offer::Published)) && choice.router == Router::Direct;
        let placed = decision.anything && self.places(&decision, choice.router, published_direct);
        let arrived = published_direct && !placed;
        let matrix = match decision.anything && !arrived {
            true => protocol::matrix(&words, width),
            false => None,
        };
        if let Some(spare) = self.stats.push(words, choice) {
            self.comm.recycle_rows(spare);
        }
        self.row_buffer = mine;
        Agreed {
            decision,
            router: choice.router,
            placed,
            matrix,
            offer,
        }
    }

    /// The sync, with this processor's `vote`; returns the sum of the
    /// votes.
    fn sync_voting(&mut self, vote: u64) -> u64 {
        let start = Tick::now();
        #[cfg(feature = "tracing")]
        let sync_span = self.spans.sync();
        self.drop_unread();
        let records = self.outbox.records();
        // The row counts the outbox before the streams are taken out.
        let mut mine = self.row_words(Status::Syncing, vote, start);
        let cut = self.cut_for_row();
        if let Some(placement::Streams::Cut { heads, .. }) = &cut {
            let heads = heads.iter().flat_map(|(_, h)| h.iter().map(|b| &b[..]));
            protocol::put_heads(&mut mine, self.nprocs, heads);
        }
        // On a transport that publishes blocks beside the rows, every
        // processor offers its streams (maybe none) with its row, so that a
        // direct routing costs no collective of its own. Not while the rows
        // have a slot for heads: then some processors cut their streams for
        // it and others (with nothing to send, or too many heads) do not,
        // and all must route alike.
        let offering = self.heads_slot == 0 && self.caps.publishes_with_rows;
        let (sent, offered) = offering
            .then(|| {
                let streams = match self.outbox.is_empty() {
                    true => Blocks::new(),
                    false => self.take_streams(),
                };
                (router::Offered::of(self.pid, &streams), streams)
            })
            .unzip();
        let Agreed {
            decision,
            router,
            placed,
            matrix: mut expected,
            offer,
        } = self.exchange_rows(mine, offered);
        let mut figures = SyncFigures::default();
        figures.records.sent = records;
        if decision.anything {
            let mut deferred = Vec::new();
            // A placed routing of the direct router whose rows carry its
            // heads may repeat the last one (every processor finds the
            // same); any other routing ends the run of repeats.
            let repeatable = placed
                && router == Router::Direct
                && expected.as_ref().is_some_and(Matrix::heads_in_rows);
            if let (true, Some(m), Some(last)) = (repeatable, &mut expected, &self.last_placed) {
                m.note_repeat(last);
            }
            self.last_placed = expected.as_ref().filter(|_| repeatable).cloned();
            let arrival = match (placed, decision.any_gets) {
                (true, _) => Arrival::Place,
                (false, true) => Arrival::ServeGets,
                (false, false) => Arrival::Apply,
            };
            // A program that repeats a placed superstep sends the heads of
            // the next one in the rows; any other routing clears the slot
            // (every processor alike).
            let next_slot = match (placed, &expected) {
                (true, Some(m)) if self.placing.heads_in_row(self.caps) => {
                    protocol::heads_slot(self.nprocs, m.most_head_bytes())
                }
                _ => 0,
            };
            let outgoing = match (offer, sent) {
                (Some(Offer::Published), Some(sent)) => {
                    let direct = router == Router::Direct && !placed;
                    let blocks = self.comm.take_offered(direct);
                    match direct {
                        true => Outgoing::Arrived(blocks, sent),
                        false => Outgoing::Route(placement::Streams::Whole(blocks)),
                    }
                }
                (Some(Offer::Kept(blocks)), _) => {
                    Outgoing::Route(placement::Streams::Whole(blocks))
                }
                _ => Outgoing::Route(
                    cut.unwrap_or_else(|| placement::Streams::Whole(self.take_streams())),
                ),
            };
            let replies = self.deliver(
                router,
                outgoing,
                expected,
                arrival,
                &mut figures,
                &mut deferred,
            );
            if let Some((mut replies, requests)) = replies {
                figures.records.sent += replies.records();
                let streams = replies.take(|_| unreachable!("replies are copied"));
                let streams = Outgoing::Route(placement::Streams::Whole(streams));
                self.deliver(
                    router,
                    streams,
                    None,
                    Arrival::Apply,
                    &mut figures,
                    &mut deferred,
                );
                self.gets.land_in_call_order();
                // Gets land before the superstep's puts are applied (only
                // a get into memory the program owns, `get_area`, can tell).
                let applied = self.inbound().apply(&requests, &mut deferred);
                figures.records.received += self.settle(applied);
            }
            if decision.any_lends {
                if self.caps.shares_memory {
                    // Every reader of a lent coarray has finished once
                    // everyone has passed this barrier.
                    self.collective(|c| c.allgather(&[]));
                }
                self.registry.reclaim();
                let applied = self.inbound().apply_deferred(deferred);
                self.settle(applied);
            }
            if self.comm.agrees_on_failure() {
                self.agree_on_delivery();
            }
            self.heads_slot = next_slot;
            self.idle_syncs = 0;
        } else {
            if let Some(Offer::Published) = offer {
                // Nothing was offered anywhere; this ends the offer.
                self.comm.take_offered(false);
            }
            // A program that has stopped placing supersteps stops paying
            // for the slot in its idle syncs' rows; one that places a
            // superstep between a few idle syncs keeps it.
            self.idle_syncs += 1;
            if self.idle_syncs >= IDLE_SYNCS_KEEP_SLOT {
                self.heads_slot = 0;
            }
        }
        self.has_gets = false;
        self.superstep += 1;
        self.comm.set_superstep(self.superstep);
        self.land_gets();
        // One clock read ends the sync and starts the next superstep's work.
        let end = Tick::now();
        figures.sync_ns = end.nanos_since(start);
        self.last_sync = figures;
        #[cfg(feature = "tracing")]
        {
            drop(sync_span);
            let h = decision.h_estimate(self.nprocs);
            self.spans.next(&figures, router, h, self.superstep);
        }
        self.work_start = end;
        decision.votes
    }

    /// Under [`OnFailure::Return`](crate::OnFailure): every processor says
    /// whether its delivery failed (one all-gather), and all end the run
    /// with the failure of the lowest such pid.
    fn agree_on_delivery(&mut self) {
        let pending = self.pending.take();
        if let Some(error) = &pending {
            self.announcing = error.message().to_owned();
        }
        let words = protocol::failure_words(pending.as_ref());
        let all = self.collective(|c| c.allgather(&words));
        if let Some(agreed) = self.agree(&all, protocol::FAILURE_WORDS) {
            self.comm.abort(agreed)
        }
    }

    /// Whether a routing by `router` of the superstep `decision` describes
    /// is placed: without gets, a transport may write the puts' payloads
    /// in place while they arrive (gets must read the data first). Blocks
    /// published with the rows and routed directly (`published_direct`)
    /// are in their receivers' mailboxes already. Every processor finds
    /// the same.
    fn places(&self, decision: &SyncDecision, router: Router, published_direct: bool) -> bool {
        let volume = Volume {
            bytes: decision.total_bytes,
            records: decision.total_records,
            most: decision.max_bytes,
        };
        matches!(router, Router::Direct | Router::TwoPhase)
            && !decision.any_gets
            && self
                .placing
                .places(self.caps, self.nprocs, volume, published_direct)
    }

    /// This superstep's streams, taken from the outbox, the coarrays
    /// named by `put_from` lent for the sync.
    fn take_streams(&mut self) -> Blocks {
        let lent = self.registry.lend(&self.lending);
        // Cleared, not taken: the list keeps its room for the next sync.
        self.lending.clear();
        self.outbox.take(|id| lent.of(id).clone())
    }

    /// This superstep's streams, taken and cut into heads and bodies
    /// before the rows are exchanged, when the rows have a slot for heads
    /// and this processor's fit in it: every processor whose heads fit
    /// sends them in its row, so that all know, from the rows, whether
    /// the receivers have every head without an exchange.
    fn cut_for_row(&mut self) -> Option<placement::Streams> {
        let room = self.heads_slot as u64 * 8;
        if room == 0 || self.outbox.is_empty() {
            return None;
        }
        let heads: u64 = (0..self.nprocs).map(|k| self.outbox.head_bytes_to(k)).sum();
        if heads > room {
            return None;
        }
        let (heads, bodies) = placement::split(self.take_streams());
        Some(placement::Streams::Cut { heads, bodies })
    }

    fn inbound(&mut self) -> Inbound<'_> {
        self.comm_and_inbound().1
    }

    /// The transport and the delivery's view of this processor, borrowed
    /// together (a placed routing plans while the transport receives).
    fn comm_and_inbound(&mut self) -> (&mut dyn Comm, Inbound<'_>) {
        let inbound = Inbound {
            me: self.pid,
            nprocs: self.nprocs,
            superstep: self.superstep,
            registry: &mut self.registry,
            gets: &mut self.gets,
        };
        (self.comm.as_mut(), inbound)
    }

    /// Routes `streams` by `router` (direct or two-phase), the receivers
    /// writing the payloads of puts straight into their coarrays where
    /// they can (see `placement.rs`). Returns the
    /// streams of the senders whose payloads still need applying, and the
    /// number of records placed.
    fn route_placed(
        &mut self,
        router: Router,
        cut: (Blocks, Blocks),
        matrix: Option<&Matrix>,
        figures: &mut SyncFigures,
    ) -> (Blocks, u64) {
        let (comm, mut inbound) = self.comm_and_inbound();
        let mut placed_records = 0;
        let routed = router::route_placed(
            router,
            comm,
            cut,
            &mut |heads| {
                let (plans, placed) = inbound.plan(heads);
                placed_records = placed;
                plans
            },
            matrix,
        );
        let (received, route) = unwind_if_aborted(routed);
        figures.add_route(route);
        figures.bytes.received += received.iter().map(|r| r.len() as u64).sum::<u64>();
        let rest = received
            .into_iter()
            .filter_map(|r| Some((r.src, placement::rejoin(&r.heads, &r.bodies?))))
            .collect();
        (rest, placed_records)
    }

    /// Routes `outgoing` (unless it has arrived already) and delivers what
    /// arrives as `arrival` says; with
    /// [`Arrival::ServeGets`], only answers the get requests among it, and
    /// returns the replies to send and what arrived, to be applied once
    /// the replies have landed. `matrix`, when known, is the routing's
    /// communication matrix.
    fn deliver(
        &mut self,
        router: Router,
        outgoing: Outgoing,
        matrix: Option<Matrix>,
        arrival: Arrival,
        figures: &mut SyncFigures,
        deferred: &mut Vec<DeferredPut>,
    ) -> Option<(Outbox, Blocks)> {
        let (incoming, placed_records) = match outgoing {
            Outgoing::Arrived(incoming, sent) => {
                figures.bytes.sent += sent.bytes();
                figures.add_route(sent.arrived(&incoming));
                figures.bytes.received += blocks_len(&incoming);
                (incoming, 0)
            }
            Outgoing::Route(streams) if arrival == Arrival::Place => {
                figures.bytes.sent += streams.len();
                self.route_placed(router, streams.cut(), matrix.as_ref(), figures)
            }
            Outgoing::Route(streams) => {
                figures.bytes.sent += streams.len();
                let streams = streams.whole();
                let routed = self.collective(|c| route(router, c, streams, matrix.as_ref()));
                let (incoming, route) = routed;
                figures.add_route(route);
                figures.bytes.received += blocks_len(&incoming);
                (incoming, 0)
            }
        };
        if arrival == Arrival::ServeGets {
            let served = self.inbound().serve_gets(&incoming);
            // Under `OnFailure::Return` a failed processor still sends (no)
            // replies, so that the reply exchange completes everywhere.
            let replies = self
                .settle(served.map(Some))
                .unwrap_or_else(|| Outbox::new(self.nprocs));
            return Some((replies, incoming));
        }
        let applied = self.inbound().apply(&incoming, deferred);
        self.outbox.recycle(incoming);
        figures.records.received += placed_records + self.settle(applied);
        None
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
        let mine = self.row_words(Status::Returned, 0, Tick::now());
        self.exchange_rows(mine, None);
        self.finished = true;
    }
}
