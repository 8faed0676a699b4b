//! Which machine a handle belongs to. Coarrays, queues, areas and gets are
//! named by an index into the registering processor's registry; the index
//! alone would name something else on another machine (a sub-machine of a
//! [`split`](crate::Ctx::split), its parent, or another run). Each handle
//! also carries the [`Scope`] of the machine that made it, and every use
//! checks it against the machine it is used on.

use std::sync::atomic::{AtomicU64, Ordering};

/// The identity of one BSP machine: a run, or a sub-machine of a split.
///
/// All processors of a machine hold the same scope: a run's is drawn once
/// for the run (from a process-wide counter), a sub-machine's is derived
/// from its parent's, the parent's count of splits so far and the color,
/// which every member agrees on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Scope(u64);

/// The scopes drawn for runs so far in this process.
static RUNS: AtomicU64 = AtomicU64::new(1);

impl Scope {
    /// A new run's scope, distinct from every other run's in this process.
    pub(crate) fn run() -> Self {
        // The top bit is clear for runs and set for sub-machines, so a
        // derived scope never equals a run's.
        Scope(RUNS.fetch_add(1, Ordering::Relaxed) & !(1 << 63))
    }

    /// The scope of the sub-machine of `color` made by this machine's
    /// `split` number `split` (counted from 0).
    pub(crate) fn sub(self, split: u64, color: u64) -> Self {
        let mix = |h: u64, x: u64| (h ^ x).wrapping_mul(0x0100_0000_01b3).rotate_left(29);
        let h = [split, color]
            .iter()
            .fold(mix(0xcbf2_9ce4_8422_2325, self.0), |h, &x| {
                mix(mix(h, x), x >> 32)
            });
        Scope(h | 1 << 63)
    }
}

/// A handle that names something a machine registered (or a get it
/// requested): the index and the machine's scope.
pub(crate) trait Scoped {
    /// What the handle names, for messages (`coarray`, `queue`, ...).
    const WHAT: &'static str;
    /// The index in the registering machine.
    fn id(&self) -> u32;
    /// The machine that made the handle.
    fn scope(&self) -> Scope;
}

#[cfg(test)]
mod tests {
    use super::Scope;

    #[test]
    fn runs_and_sub_machines_differ() {
        let (a, b) = (Scope::run(), Scope::run());
        assert_ne!(a, b);
        assert_eq!(
            a.sub(0, 1),
            a.sub(0, 1),
            "every member derives the same scope"
        );
        assert_ne!(a.sub(0, 1), a.sub(0, 0), "colors differ");
        assert_ne!(a.sub(0, 1), a.sub(1, 1), "successive splits differ");
        assert_ne!(a.sub(0, 1), b.sub(0, 1), "parents differ");
        assert_ne!(a.sub(0, 0), a, "a sub-machine is not its parent");
    }
}
