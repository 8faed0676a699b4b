//! One processor's life: the body every transport runs on each of its
//! processors. It builds the processor's [`Ctx`] on the transport's
//! endpoint, runs the user's closure and the end-of-run protocol, turns a
//! panic into the run's error, and prints the profile when asked.

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::checkpoint;
use crate::ctx::Ctx;
use crate::machine::Machine;
use crate::panic_hook::{self, panic_error};
use crate::profile::{self, Profile};
use crate::router::Router;
use crate::scope::Scope;
use crate::transport::{Aborted, Comm, RunLimits, Transport};

/// What every processor of a run starts with (`Runtime::prepare`).
#[derive(Clone)]
pub(crate) struct Setup {
    pub(crate) limits: RunLimits,
    pub(crate) router: Router,
    pub(crate) machine: Option<Machine>,
    pub(crate) transport: Transport,
    pub(crate) scope: Scope,
    pub(crate) stats_memory: usize,
    pub(crate) profile: Profile,
    pub(crate) checkpoints: Option<checkpoint::Place>,
}

/// Runs one processor's share of the program on `comm`: the closure, then
/// the end protocol. A panic becomes the run's error through
/// [`Comm::abort`], which the transport propagates (threads: record and
/// release everyone; MPI: print and abort the job). Returns `None` when the
/// run was aborted.
pub(crate) fn processor<F, R>(comm: Box<dyn Comm>, setup: &Setup, f: &F) -> Option<R>
where
    F: Fn(&mut Ctx) -> R,
{
    let _quiet = panic_hook::ProcessorThread::enter();
    let Setup {
        router,
        machine,
        transport,
        scope,
        stats_memory,
        ..
    } = *setup;
    let mut ctx = Ctx::new(comm, router, machine, transport, scope, stats_memory);
    ctx.checkpoints = setup.checkpoints.clone();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let result = f(&mut ctx);
        ctx.finish();
        result
    }));
    match outcome {
        Ok(result) => {
            if ctx.pid() == 0 && setup.profile != Profile::Off {
                profile::report(&setup.profile, ctx.stats());
            }
            Some(result)
        }
        Err(payload) => {
            if payload.is::<Aborted>() {
                return None;
            }
            let error = panic_error(payload, ctx.pid(), ctx.superstep());
            // `abort_with` unwinds with `Aborted` once the error is recorded.
            let _ = catch_unwind(AssertUnwindSafe(|| ctx.abort_with(error)));
            None
        }
    }
}
