//! One way in for every transport: a transport opens the endpoints of the
//! processors this process runs ([`Launcher::open`]), and the two
//! launchers here start them, the same for every transport:
//!
//! * [`launch`], for [`Runtime::run`](crate::Runtime::run): every endpoint
//!   runs the body on a scoped thread of its own (or, where the transport
//!   says so, the first on the calling thread), and the caller collects
//!   the results or the run's error;
//! * [`begin`], for sessions: the calling thread keeps the first endpoint
//!   and goes on with the program; the others run the worker on threads
//!   that are not joined.
//!
//! A transport adds one [`Launcher`] (see `threads.rs`, `mpi/mod.rs`) and
//! one arm of [`Transport::launcher`]; it never starts a thread itself.

use std::any::Any;
use std::sync::Arc;

use super::{Comm, RunLimits, Transport};
use crate::error::{Error, ErrorKind, Result};

/// Why a transport's endpoints are opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// A run: `procs` processors where the transport lets the program
    /// choose (threads), the whole world where it does not (MPI).
    Run,
    /// A session of `procs` processors, whose threads stay with the
    /// program (under MPI the world's first `procs` ranks).
    Session,
}

/// What a transport opened for a run in this process.
pub(crate) struct Opened {
    /// The endpoints of the processors this process runs, in pid order.
    pub(crate) endpoints: Vec<Box<dyn Comm>>,
    /// Whether the first endpoint runs on the calling thread (MPI keeps
    /// thread-bound state for a run); otherwise every endpoint of a run
    /// gets a thread of its own.
    pub(crate) on_caller: bool,
    /// The stack of each processor thread, in bytes.
    pub(crate) stack: usize,
    /// The run's state, shared with the processor threads.
    pub(crate) run: Arc<dyn OpenRun>,
    /// What the calling thread holds until the run ends, and drops there.
    pub(crate) held: Box<dyn Any>,
}

/// What the launchers ask of a run in progress.
pub(crate) trait OpenRun: Send + Sync {
    /// Ends the run with `error` (a processor thread could not start):
    /// records it and releases every processor waiting in a collective.
    fn fail(&self, error: Error);
    /// One processor's body has returned.
    fn body_returned(&self) {}
    /// Waits, before the threads are joined, until `started` bodies have
    /// returned; a transport that cannot wait for ever for a failed run's
    /// stragglers (threads with a time limit) ends the process instead.
    fn await_bodies(&self, started: usize) {
        let _ = started;
    }
    /// The run's error, if it failed, taken.
    fn take_error(&self) -> Option<Error>;
}

/// A transport's way to open a run.
pub(crate) trait Launcher: Sync {
    /// The transport's name in statistics and benchmark output.
    fn name(&self) -> &'static str;
    /// Whether the program chooses the number of processors (threads),
    /// or the launcher of the processes does (`mpirun -np`).
    fn program_chooses_procs(&self) -> bool;
    /// The endpoints of a run of `procs` processors for `purpose`, or
    /// `None` where this process takes no part (an MPI rank beyond a
    /// session's `procs`).
    fn open(&self, procs: usize, limits: RunLimits, purpose: Purpose) -> Result<Option<Opened>>;
}

/// What a session's processor threads other than the calling thread's run
/// on their endpoints (see [`begin`]).
pub(crate) type Worker = Arc<dyn Fn(Box<dyn Comm>) + Send + Sync>;

/// What a session holds until it ends (see [`begin`]); dropped on the
/// thread that began it.
pub(crate) struct Held {
    _run: Arc<dyn OpenRun>,
    _held: Box<dyn Any>,
}

/// Runs `body` on the processors of `transport` (`procs` of them where the
/// transport lets the program choose) and returns the results this process
/// holds, in pid order: every processor's on threads, the local rank's
/// under MPI.
pub(crate) fn launch<R: Send>(
    transport: Transport,
    procs: usize,
    limits: RunLimits,
    body: &impl super::Body<R>,
) -> Result<Vec<R>> {
    let Some(opened) = transport.launcher().open(procs, limits, Purpose::Run)? else {
        return Err(config_error("this process takes no part in the run"));
    };
    let Opened {
        mut endpoints,
        on_caller,
        stack,
        run,
        held,
    } = opened;
    let here = (on_caller && !endpoints.is_empty()).then(|| endpoints.remove(0));
    let results: Vec<Option<R>> = std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(endpoints.len());
        for comm in endpoints {
            let pid = comm.pid();
            let run = &run;
            let processor = move || {
                let result = body(comm);
                run.body_returned();
                result
            };
            match spawn(pid, stack, |builder| builder.spawn_scoped(scope, processor)) {
                Ok(handle) => handles.push(handle),
                Err(error) => {
                    // The processors already started are waiting at their
                    // first sync (or will be): release them with the error.
                    run.fail(error);
                    break;
                }
            }
        }
        let first = here.map(|comm| {
            let result = body(comm);
            run.body_returned();
            result
        });
        run.await_bodies(handles.len() + usize::from(first.is_some()));
        first
            .into_iter()
            .chain(handles.into_iter().map(|h| h.join().unwrap_or_default()))
            .collect()
    });
    let error = run.take_error();
    drop(held);
    if let Some(error) = error {
        return Err(error);
    }
    results
        .into_iter()
        .map(|r| r.ok_or_else(|| internal_error("a processor ended without result or error")))
        .collect()
}

/// Begins a session run of `procs` processors on `transport`: the calling
/// thread's endpoint (processor 0 on threads, this rank under MPI) and
/// what it holds until the session ends, with `worker` running every other
/// processor this process runs, on threads that are not joined (a
/// worker's thread may outlive its processor, as a BSPlib program's
/// threads wait at `bsp_end` until the process exits). `None` where this
/// process takes no part.
pub(crate) fn begin(
    transport: Transport,
    procs: usize,
    limits: RunLimits,
    worker: Worker,
) -> Result<Option<(Box<dyn Comm>, Held)>> {
    let Some(opened) = transport.launcher().open(procs, limits, Purpose::Session)? else {
        return Ok(None);
    };
    let mut endpoints = opened.endpoints.into_iter();
    let first = endpoints
        .next()
        .ok_or_else(|| internal_error("a transport opened a session without endpoints"))?;
    for comm in endpoints {
        let pid = comm.pid();
        let (worker, run) = (Arc::clone(&worker), Arc::clone(&opened.run));
        let processor = move || {
            worker(comm);
            run.body_returned();
        };
        if let Err(error) = spawn(pid, opened.stack, |builder| builder.spawn(processor)) {
            opened.run.fail(error.clone());
            return Err(error);
        }
    }
    let held = Held {
        _run: opened.run,
        _held: opened.held,
    };
    Ok(Some((first, held)))
}

/// Spawns processor `pid`'s thread (named `bsp-<pid>`, with a stack of
/// `stack` bytes) through `how`, or the error that ends the run.
fn spawn<H>(
    pid: usize,
    stack: usize,
    how: impl FnOnce(std::thread::Builder) -> std::io::Result<H>,
) -> Result<H> {
    let builder = std::thread::Builder::new()
        .name(format!("bsp-{pid}"))
        .stack_size(stack);
    how(builder).map_err(|e| {
        config_error(&format!(
            "cannot start processor thread {pid}: {e}; use fewer processors (BSP_PROCS) or \
             raise the limits on threads and memory"
        ))
    })
}

fn config_error(msg: &str) -> Error {
    Error::new(ErrorKind::Config, None, None, msg.to_owned())
}

fn internal_error(msg: &str) -> Error {
    Error::new(ErrorKind::Transport, None, None, format!("bsp: {msg}"))
}
