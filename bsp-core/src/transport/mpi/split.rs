//! Sub-machines under MPI: each group of a split gets a communicator of
//! its own from `MPI_Comm_split`, so its collectives involve its members
//! only.

use std::os::raw::c_int;

use mpi::topology::{Color, SimpleCommunicator};
use mpi::traits::*;

use super::{Frame, Group, MpiComm};

/// A sub-machine's communicator, owned by its endpoint and freed
/// (`MPI_Comm_free`) when the endpoint is dropped at the end of the
/// sub-machine.
pub(super) struct SubCommunicator(SimpleCommunicator);

// SAFETY: `SimpleCommunicator` is a handle (`MPI_Comm`), not `Send` only
// because it wraps a raw pointer. It is created, used and freed by the
// thread running this rank's processor, inside a run, while the world's
// `run_lock` is held (MPI is initialised `MPI_THREAD_SERIALIZED`), so no
// two threads call MPI through it at the same time.
unsafe impl Send for SubCommunicator {}

impl SubCommunicator {
    pub(super) fn get(&self) -> &SimpleCommunicator {
        &self.0
    }
}

impl MpiComm {
    /// This endpoint narrowed to the world's first `p` ranks (a run of
    /// fewer processors than `mpirun` started): `MPI_Comm_split` of the
    /// world, collective on every rank; the ranks from `p` on get `None`
    /// and take no part in the run.
    pub(super) fn first_ranks(mut self, p: usize) -> Option<MpiComm> {
        debug_assert!(self.own.is_none() && self.frame.is_none());
        let member = self.pid < p;
        let color = if member {
            Color::with_value(0)
        } else {
            Color::undefined()
        };
        let key = c_int::try_from(self.pid).expect("bsp: a rank fits a C int");
        let sub = self.comm().split_by_color_with_key(color, key);
        if !member {
            return None;
        }
        let sub = sub.expect("bsp: MPI_Comm_split gave no communicator for color 0");
        debug_assert_eq!(sub.size() as usize, p);
        self.nprocs = p;
        self.own = Some(SubCommunicator(sub));
        Some(self)
    }

    /// This rank's endpoint in `group`: `MPI_Comm_split` of this
    /// communicator, colored by the group's color rank and keyed by the
    /// rank's pid in the group (which every member computed alike), so the
    /// new communicator's ranks are the group's pids.
    pub(super) fn split_group(&mut self, group: &Group, superstep: usize) -> MpiComm {
        let color = c_int::try_from(group.color_rank).expect("bsp: fewer colors than ranks");
        let key = c_int::try_from(group.me).expect("bsp: fewer members than ranks");
        let sub = self
            .comm()
            .split_by_color_with_key(Color::with_value(color), key)
            .expect("bsp: MPI_Comm_split gave no communicator for a defined color");
        debug_assert_eq!(sub.rank() as usize, group.me);
        debug_assert_eq!(sub.size() as usize, group.members.len());
        MpiComm {
            world: self.world,
            pid: group.me,
            nprocs: group.members.len(),
            piece: self.piece,
            limits: self.limits,
            superstep: 0,
            sync: self.sync,
            fenced: None,
            pull: None,
            own: Some(SubCommunicator(sub)),
            frame: Some(Frame::nested(self.frame.as_ref(), group, superstep)),
        }
    }
}
