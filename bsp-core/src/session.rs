//! Sessions: a BSP run that the calling thread enters and leaves, instead
//! of handing the runtime a closure (BSPlib's `bsp_begin` / `bsp_end`).

use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use crate::ctx::Ctx;
use crate::error::{Error, ErrorKind, Result};
use crate::launch::Setup;
use crate::panic_hook;
use crate::panic_hook::panic_message;
use crate::profile::{self, Profile};
use crate::runtime::Runtime;
use crate::transport::{self, Aborted, Comm, Held};

/// Where a session is.
enum State {
    Open,
    Failed(Error),
    Ended,
}

/// One processor's part of a run that its thread entered with
/// [`Runtime::begin`] (or that the runtime started for it), rather than a
/// closure given to [`Runtime::run`]: the inversion of control that
/// BSPlib's SPMD convention needs, where the program calls `bsp_begin(p)`,
/// goes on as processor 0, and calls `bsp_end()` when it is done.
///
/// The processor's [`Ctx`] is reached through [`with`](Session::with),
/// which turns any failure of the run — this processor's misuse, another
/// processor's panic, an [`abort`](Ctx::abort) — into an `Err` instead of
/// unwinding into the caller (who may be C code). A failed session stays
/// failed: every later call returns the same error. [`end`](Session::end)
/// is the end of the processor's part (as the closure's return is for
/// `run`): it checks with every other processor that the run ends here.
///
/// A session stays on the thread that opened it.
///
/// # Examples
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// static SUM: AtomicU64 = AtomicU64::new(0);
///
/// // Each processor: send its pid to processor 0.
/// fn body(s: &mut bsp_core::Session) -> bsp_core::Result<Vec<u64>> {
///     s.with(|ctx| {
///         let q = ctx.queue::<u64>();
///         ctx.send(0, &q, &(ctx.pid() as u64));
///         ctx.sync();
///         ctx.receive(&q)
///     })
/// }
///
/// let mut s = bsp_core::Runtime::threads(4).begin(|s| {
///     body(s).unwrap(); // processors 1..4, on threads of their own
/// })?;
/// assert_eq!(s.pid(), 0); // the calling thread is processor 0
/// let got = body(&mut s)?;
/// s.end()?;
/// assert_eq!(got, vec![0, 1, 2, 3]);
/// # Ok::<(), bsp_core::Error>(())
/// ```
pub struct Session {
    ctx: Ctx,
    state: State,
    /// What the transport holds until the calling thread's session ends.
    opened: Option<Held>,
    /// What processor 0 reports when the session ends.
    profile: Profile,
    _one_thread: PhantomData<*const ()>,
}

impl Runtime {
    /// Starts a run in which the calling thread is one of the processors,
    /// and returns its [`Session`]; the other processors that this process
    /// runs start at once and run `others` with their own sessions.
    ///
    /// * On threads, the calling thread is processor 0 and `others` runs on
    ///   p − 1 new threads, as processors 1..p. A session that `others`
    ///   leaves open is ended when `others` returns (and a panic in
    ///   `others` ends the run with [`ErrorKind::Panic`]). These threads are
    ///   not joined: the run ends when every processor has ended its
    ///   session, whatever its thread does next. Each gets the main
    ///   thread's stack size (`ulimit -s`; `RUST_MIN_STACK` overrides).
    /// * Under MPI every rank calls `begin` (as every rank calls
    ///   [`run`](Runtime::run)); the calling thread is this rank's
    ///   processor, and `others` is not called: each rank is its own
    ///   process, and its program goes on there.
    ///
    /// In both cases the calling thread is the first processor this
    /// process runs (as [`Outcome::local`](crate::Outcome::local) is the
    /// first result it holds), and MPI is only called from it.
    ///
    /// # Errors
    ///
    /// A configuration error, as [`run`](Runtime::run) (before any
    /// processor starts), or a thread that cannot be started.
    #[track_caller]
    pub fn begin<F>(&self, others: F) -> Result<Session>
    where
        F: Fn(&mut Session) + Send + Sync + 'static,
    {
        let session = self.begin_first(self.nprocs(), others)?;
        Ok(session.expect("bsp: a session on every rank has every rank as a member"))
    }

    /// As [`begin`](Runtime::begin), for a run of `p` processors where the
    /// launcher may have started more: on threads, `begin` with p
    /// processors; under MPI the world's first `p` ranks run it (with pids
    /// their ranks), and the other ranks get `Ok(None)` and take no part.
    /// This is BSPlib's `bsp_begin(P)` with P below the number of ranks
    /// `mpirun` started. Every rank must call it, with the same `p`.
    ///
    /// # Examples
    ///
    /// ```
    /// // On threads every processor is a member.
    /// let mut s = bsp_core::Runtime::threads(1).begin_first(1, |_| {})?;
    /// let s = s.as_mut().expect("a member");
    /// assert_eq!(s.nprocs(), 1);
    /// s.end()?;
    /// # Ok::<(), bsp_core::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`begin`](Runtime::begin); under MPI also a `p` of 0 or above
    /// the number of ranks ([`ErrorKind::Config`]).
    #[track_caller]
    pub fn begin_first<F>(&self, p: usize, others: F) -> Result<Option<Session>>
    where
        F: Fn(&mut Session) + Send + Sync + 'static,
    {
        let runtime = self.clone().with_procs(p);
        let setup = runtime.prepare(transport::Program::of::<F>())?;
        let Setup {
            limits,
            router,
            machine,
            transport,
            scope,
            stats_memory,
            profile,
            checkpoints,
        } = setup;
        let their_checkpoints = checkpoints.clone();
        let theirs = profile.clone();
        let worker: transport::Worker = Arc::new(move |comm: Box<dyn Comm>| {
            let _quiet = panic_hook::ProcessorThread::enter();
            let mut ctx = Ctx::new(comm, router, machine, transport, scope, stats_memory);
            ctx.checkpoints = their_checkpoints.clone();
            let mut session = Session::new(ctx, None, theirs.clone());
            match catch_unwind(AssertUnwindSafe(|| others(&mut session))) {
                Ok(()) => {
                    let _ = session.end();
                }
                Err(payload) => {
                    session.fail_with(payload);
                }
            }
        });
        let Some((comm, opened)) = transport::begin(transport, p, limits, worker)? else {
            return Ok(None);
        };
        let mut ctx = Ctx::new(comm, router, machine, transport, scope, stats_memory);
        ctx.checkpoints = checkpoints;
        Ok(Some(Session::new(ctx, Some(opened), profile)))
    }
}

impl Session {
    fn new(ctx: Ctx, opened: Option<Held>, profile: Profile) -> Self {
        Session {
            ctx,
            state: State::Open,
            opened,
            profile,
            _one_thread: PhantomData,
        }
    }

    /// This processor's id.
    pub fn pid(&self) -> usize {
        self.ctx.pid()
    }

    /// The number of processors p.
    pub fn nprocs(&self) -> usize {
        self.ctx.nprocs()
    }

    /// Whether the session is still open: not ended, and the run has not
    /// failed as far as this processor knows.
    pub fn is_open(&self) -> bool {
        matches!(self.state, State::Open)
    }

    /// The run's failure, once this session has seen it.
    pub fn failure(&self) -> Option<&Error> {
        match &self.state {
            State::Failed(e) => Some(e),
            _ => None,
        }
    }

    /// Runs `f` on this processor's [`Ctx`], as the code of a
    /// [`run`](Runtime::run)'s closure would, and returns its value; a
    /// failure of the run comes back as `Err` instead of unwinding: this
    /// processor's misuse (then recorded as the run's failure, which the
    /// other processors see at their next sync), another processor's
    /// failure seen while waiting, or a panic in `f`.
    ///
    /// # Errors
    ///
    /// The run's failure (the same on every call once it has happened),
    /// or an [`ErrorKind::Config`] error after [`end`](Session::end).
    pub fn with<R>(&mut self, f: impl FnOnce(&mut Ctx) -> R) -> Result<R> {
        match &self.state {
            State::Open => {}
            State::Failed(e) => return Err(e.clone()),
            State::Ended => {
                let msg = "the session has ended; its processor can no longer communicate";
                return Err(Error::at(
                    ErrorKind::Config,
                    self.ctx.pid(),
                    self.ctx.superstep(),
                    msg,
                ));
            }
        }
        let _quiet = panic_hook::ProcessorThread::enter();
        match catch_unwind(AssertUnwindSafe(|| f(&mut self.ctx))) {
            Ok(value) => Ok(value),
            Err(payload) => Err(self.fail_with(payload)),
        }
    }

    /// This processor's [`Ctx`], directly: a failure of the run then
    /// unwinds out of the call that meets it (as in a closure given to
    /// [`run`](Runtime::run)), and the session must be ended or dropped
    /// while unwinding. Prefer [`with`](Session::with).
    #[inline]
    pub fn ctx(&mut self) -> &mut Ctx {
        &mut self.ctx
    }

    /// Ends this processor's part of the run (BSPlib's `bsp_end`): checks,
    /// with every other processor, that all of them end here and that
    /// nothing is left undelivered, and, on the session of the thread that
    /// called [`Runtime::begin`], releases the transport. Processor 0
    /// prints the profile here when `BSP_PROFILE` asks for it. Ending an
    /// ended session does nothing.
    ///
    /// # Errors
    ///
    /// The run's failure: another processor that called `sync` instead
    /// ([`ErrorKind::SyncMismatch`]), communication requested and not
    /// delivered, or any earlier failure.
    pub fn end(&mut self) -> Result<()> {
        let ended = match &self.state {
            State::Ended => Ok(()),
            State::Failed(e) => Err(e.clone()),
            State::Open => self.with(|ctx| ctx.finish()).map(|()| {
                if self.ctx.pid() == 0 && self.profile != Profile::Off {
                    profile::report(&self.profile, self.ctx.stats());
                }
            }),
        };
        if ended.is_ok() {
            self.state = State::Ended;
        }
        self.opened = None;
        ended
    }

    /// Turns the payload of an unwind out of this processor's code into the
    /// run's failure: records it (unless it is another processor's, already
    /// recorded) and marks the session failed.
    fn fail_with(&mut self, payload: Box<dyn std::any::Any + Send>) -> Error {
        let own = if payload.is::<Aborted>() {
            None
        } else {
            Some(match payload.downcast::<Error>() {
                // A misuse found by a method that could not end the run itself.
                Ok(error) => *error,
                Err(payload) => {
                    let mut message = panic_message(payload.as_ref());
                    if let Some(at) = panic_hook::take_location() {
                        message = format!("{message} (at {at})");
                    }
                    Error::at(
                        ErrorKind::Panic,
                        self.ctx.pid(),
                        self.ctx.superstep(),
                        message,
                    )
                }
            })
        };
        if let Some(error) = &own {
            // `abort_with` unwinds with `Aborted` once the error is recorded
            // (or, under MPI's abort mode, ends the job).
            let error = error.clone();
            let _ = catch_unwind(AssertUnwindSafe(|| self.ctx.abort_with(error)));
        }
        let error = self.ctx.recorded_failure().or(own).unwrap_or_else(|| {
            Error::at(
                ErrorKind::Transport,
                self.ctx.pid(),
                self.ctx.superstep(),
                "the run was aborted",
            )
        });
        self.state = State::Failed(error.clone());
        error
    }
}

/// A session dropped while open is ended (as by [`Session::end`], the error
/// dropped with it); one dropped while its thread panics ends the run with
/// an [`ErrorKind::Panic`] error, so that the other processors do not wait.
impl Drop for Session {
    fn drop(&mut self) {
        if !self.is_open() {
            return;
        }
        if std::thread::panicking() {
            let mut message = format!(
                "processor {}'s thread panicked while its session was open",
                self.ctx.pid()
            );
            if let Some(at) = panic_hook::take_location() {
                message = format!("{message} (at {at})");
            }
            let error = Error::at(
                ErrorKind::Panic,
                self.ctx.pid(),
                self.ctx.superstep(),
                message,
            );
            let ctx = &mut self.ctx;
            let _ = catch_unwind(AssertUnwindSafe(|| ctx.abort_with(error)));
            self.state = State::Ended;
        } else {
            let _ = self.end();
        }
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match &self.state {
            State::Open => "open".to_owned(),
            State::Failed(e) => format!("failed: {e}"),
            State::Ended => "ended".to_owned(),
        };
        f.debug_struct("Session")
            .field("pid", &self.ctx.pid())
            .field("nprocs", &self.ctx.nprocs())
            .field("superstep", &self.ctx.superstep())
            .field("state", &state)
            .finish()
    }
}
