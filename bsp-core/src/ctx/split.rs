//! Sub-machines: [`Ctx::split`] divides the processors into groups, each a
//! BSP computer of its own for the length of a closure.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

use super::{gather_texts, Ctx};
use crate::panic_hook::panic_error;
use crate::protocol;
use crate::transport::{Aborted, Group};

impl Ctx {
    /// Divides this machine's processors into sub-machines and runs `f` on
    /// this processor's: BSP's answer to `MPI_Comm_split` and Bulk's
    /// `world.split`.
    ///
    /// Every processor calls `split` at the same point of the program (a
    /// collective, like a registration). The processors that pass the same
    /// `color` form one sub-machine, numbered `0..` in order of `key`, ties
    /// broken by pid here. Each runs `f` with a context of the sub-machine:
    /// its own [`pid`](Ctx::pid) and [`nprocs`](Ctx::nprocs), supersteps
    /// counted from 0, registrations, queues and [`stats`](Ctx::stats).
    /// A sub-machine's `sync` involves only its members, so sub-machines
    /// proceed independently, with different numbers of supersteps if they
    /// like; everything written for a `&mut Ctx` (the collectives of
    /// `bsp-algos`, a sub-machine's own `split`) runs on it unchanged.
    /// `f`'s return is `split`'s, and this machine resumes where it was:
    /// same superstep, same registrations; puts, gets and sends requested
    /// before the split are still delivered at this machine's next `sync`.
    ///
    /// Data moves into the sub-machine through `f`'s captures and out
    /// through its return: the sub-machine cannot reach this machine's
    /// coarrays and queues. A handle of this machine used on the
    /// sub-machine, or one of the sub-machine's used here after `split`
    /// returns, ends the run with
    /// [`RegistrationMismatch`](crate::ErrorKind::RegistrationMismatch).
    ///
    /// # Examples
    ///
    /// ```
    /// // Even and odd processors each sum their pids on their own.
    /// let sums = bsp_core::run(5, |ctx| {
    ///     let pid = ctx.pid();
    ///     ctx.split(pid % 2, pid, |sub| {
    ///         let a = sub.coarray::<u64>(sub.nprocs());
    ///         for t in 0..sub.nprocs() {
    ///             sub.put(t, &a, sub.pid(), &[pid as u64]);
    ///         }
    ///         sub.sync();
    ///         sub.local(&a).iter().sum::<u64>()
    ///     })
    /// })
    /// .unwrap();
    /// assert_eq!(sums.all(), Some(&vec![6, 4, 6, 4, 6][..]));
    /// ```
    ///
    /// # Panics
    ///
    /// Unwinds, and the run ends with an [`Error`](crate::Error) of kind
    /// [`SyncMismatch`](crate::ErrorKind::SyncMismatch), when some
    /// processors call `split` while others call `sync` or return (a
    /// processor syncing this machine while others work in sub-machines).
    /// Inside a sub-machine, misuse is reported as on any machine (a
    /// member that returns from `f` while others sync is a sync mismatch;
    /// `f` may not return with communication pending); the error names the
    /// processor by its pid in the whole run and the run's superstep, and
    /// its message gives the sub-machine's color, pid and superstep. A
    /// failure anywhere ends the whole run, every sub-machine included.
    /// Under MPI, a failure inside a sub-machine ends the job even with
    /// [`OnFailure::Return`](crate::OnFailure): the other sub-machines
    /// could not learn of it.
    ///
    /// # Cost
    ///
    /// l of this machine (one all-gather of a sync row carrying color and
    /// key), plus, under MPI, one `MPI_Comm_split`; on threads the group's
    /// state is made by its first member, without another collective.
    /// Then `f`'s own cost on p' = the sub-machine's size, ending with one
    /// all-gather among its members (the end-of-machine check).
    pub fn split<R>(&mut self, color: usize, key: usize, f: impl FnOnce(&mut Ctx) -> R) -> R {
        let width = self.row_width();
        let row = protocol::split_words(self.superstep as u64, color as u64, key as u64, width);
        let words = self.collective(|c| c.allgather(&row));
        let (comm, announcing) = (&mut self.comm, &self.announcing);
        let choices =
            protocol::decide_split(&words, width, || gather_texts(comm.as_mut(), announcing));
        // Every processor reads the same rows: an error here is agreed.
        let choices = choices.unwrap_or_else(|error| self.comm.abort(error));
        let group = Group::of(&choices, self.pid);
        let superstep = self.superstep;
        let comm = self.collective(|c| c.split(&group, superstep));
        let scope = self.scope.sub(self.splits, color as u64);
        self.splits += 1;
        let budget = self.stats.budget();
        let mut sub = Ctx::new(
            comm,
            self.router,
            self.machine,
            self.transport,
            scope,
            budget,
        );
        sub.started = self.started;
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let result = f(&mut sub);
            sub.finish();
            result
        }));
        match outcome {
            Ok(result) => result,
            Err(payload) if payload.is::<Aborted>() => resume_unwind(payload),
            // Ended through the sub-machine, whose transport reports the
            // error in the run's numbering and ends the whole run.
            Err(payload) => {
                let error = panic_error(payload, sub.pid, sub.superstep);
                sub.abort_with(error)
            }
        }
    }
}
