//! Opening an MPI run for a [`Session`](crate::Session): the calling thread
//! becomes this rank's processor and keeps running the program, which
//! ends the run when it ends the session.

use std::cell::Cell;
use std::sync::MutexGuard;

use super::{lock, open, RunGuard, World, IN_RUN};
use crate::error::Result;
use crate::transport::{Comm, RunLimits};

/// What an open MPI session holds until it ends: the lock that serialises
/// runs on this process and the mark that a run is in progress (the exit
/// hook aborts the job if the process exits before the session ends).
pub(crate) struct Opened {
    world: &'static World,
    _running: RunGuard,
    _serialised: MutexGuard<'static, u64>,
}

impl Drop for Opened {
    fn drop(&mut self) {
        // The failure agreed in return mode belongs to this run only.
        lock(&self.world.failure).take();
    }
}

/// This rank's endpoint for a session run of the world's first `procs`
/// ranks (all of them when `procs` is the world's size), and what must be
/// held until the session ends; `None` on the ranks from `procs` on,
/// which take no part. Must be dropped on the thread that called it.
pub(crate) fn start(limits: RunLimits, procs: usize) -> Result<Option<(Box<dyn Comm>, Opened)>> {
    let (comm, serialised) = open(limits)?;
    let world = comm.world;
    let size = comm.nprocs;
    if procs == 0 || procs > size {
        return Err(super::config_error(format!(
            "a session of {procs} processors cannot run on {size} MPI ranks (it needs 1 to {size}); \
             start the program with mpirun -np {procs}"
        )));
    }
    let comm = if procs < size {
        match comm.first_ranks(procs) {
            Some(comm) => comm,
            None => return Ok(None),
        }
    } else {
        comm
    };
    let running = RunGuard::enter();
    debug_assert!(IN_RUN.with(Cell::get));
    Ok(Some((
        Box::new(comm),
        Opened {
            world,
            _running: running,
            _serialised: serialised,
        },
    )))
}
