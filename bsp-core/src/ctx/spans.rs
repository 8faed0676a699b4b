//! The `tracing` feature: a run is a span, `bsp run` (fields `p` and
//! `transport`), and each superstep of each processor is a span,
//! `superstep` (fields `pid` and `superstep`), its child, from the end of
//! the previous sync (or the start of the processor) to the end of its own
//! sync. Inside it a `sync` span covers the sync, so that a timeline
//! (tracing-chrome, Perfetto) shows work and sync apart; events and spans
//! of the program's own fall inside the superstep they happen in. On
//! close, a superstep's span carries the figures its sync knows: the h
//! every processor knew before routing (`h`), the bytes and records this
//! processor sent and received, the router that carried it and the sync's
//! nanoseconds. The last superstep, after the last `sync`, ends with the
//! run (or the sub-machine of a split) and routes nothing.
//!
//! The spans are made with the subscriber of the thread that starts the
//! run ([`tracing::dispatcher`]'s default there), which the processors'
//! threads take over for the run: a subscriber set with
//! `tracing::subscriber::with_default` sees the whole run. (A session's
//! worker threads, which outlive the call that began it, use the global
//! subscriber, and its processors have no `bsp run` span.)

use tracing::field::Empty;
use tracing::{info_span, Dispatch, Span};

use crate::protocol::SyncFigures;
use crate::router::Router;
use crate::transport::{Body, Comm, Transport};

/// `body` run inside the run's span, `bsp run`, on the caller's
/// subscriber (made here, on the calling thread; `p` processors on
/// `transport`).
pub(crate) fn in_run<'a, R>(
    transport: Transport,
    p: usize,
    body: &'a impl Body<R>,
) -> impl Body<R> + 'a {
    let dispatch = tracing::dispatcher::get_default(Dispatch::clone);
    let span = info_span!("bsp run", p, transport = transport.name());
    move |comm: Box<dyn Comm>| {
        tracing::dispatcher::with_default(&dispatch, || span.in_scope(|| body(comm)))
    }
}

/// The span of this processor's current superstep, entered on the
/// processor's thread from its opening to its close. `Ctx` stays `Send`:
/// the span is entered and left through its subscriber, not through a
/// guard. (A [`Session`](crate::Session) sent to another thread in the
/// middle of a superstep leaves that superstep's span entered on the
/// first thread; the spans after it are whole.)
pub(crate) struct Supersteps {
    pid: usize,
    current: Span,
}

impl Supersteps {
    /// Opens and enters the span of processor `pid`'s superstep 0.
    pub(crate) fn open(pid: usize) -> Self {
        let current = superstep_span(pid, 0);
        enter(&current);
        Supersteps { pid, current }
    }

    /// The span of the sync ending the current superstep, entered: left
    /// when dropped.
    pub(crate) fn sync(&self) -> tracing::span::EnteredSpan {
        info_span!(parent: &self.current, "sync").entered()
    }

    /// Closes the current superstep's span with its sync's figures (`h`
    /// as every processor knew it before routing), and opens and enters
    /// the span of superstep `next`.
    pub(crate) fn next(&mut self, figures: &SyncFigures, router: Router, h: u64, next: usize) {
        let span = &self.current;
        span.record("h", h);
        span.record("router", router.name());
        span.record("bytes_out", figures.bytes.sent);
        span.record("bytes_in", figures.bytes.received);
        span.record("records_out", figures.records.sent);
        span.record("records_in", figures.records.received);
        span.record("sync_ns", figures.sync_ns);
        leave(span);
        self.current = superstep_span(self.pid, next);
        enter(&self.current);
    }
}

impl Drop for Supersteps {
    /// The last superstep's span ends with the processor's context.
    fn drop(&mut self) {
        leave(&self.current);
    }
}

/// A superstep's span, its figures to be recorded at its close.
fn superstep_span(pid: usize, superstep: usize) -> Span {
    info_span!(
        "superstep",
        pid,
        superstep,
        h = Empty,
        router = Empty,
        bytes_out = Empty,
        bytes_in = Empty,
        records_out = Empty,
        records_in = Empty,
        sync_ns = Empty,
    )
}

fn enter(span: &Span) {
    span.with_subscriber(|(id, dispatch)| dispatch.enter(id));
}

fn leave(span: &Span) {
    span.with_subscriber(|(id, dispatch)| dispatch.exit(id));
}
