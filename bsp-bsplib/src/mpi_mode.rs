//! The MPI side of the layer (feature `mpi`): a program started by
//! `mpirun` runs one BSPlib processor per rank, as under BSPonMPI.

use bsp_core::mpi::topology::SimpleCommunicator;
use bsp_core::mpi::traits::*;

/// Whether this program runs on MPI ranks: started by `mpirun`.
pub(crate) fn active() -> bool {
    bsp_core::launched_by_mpirun()
}

/// Whether MPI is initialised and not yet finalised.
fn initialised() -> bool {
    let (mut init, mut fini) = (0, 0);
    // SAFETY: `MPI_Initialized` and `MPI_Finalized` may be called at any
    // time, before `MPI_Init` and after `MPI_Finalize` included; they
    // write one int each, to locals.
    unsafe {
        bsp_core::mpi::ffi::MPI_Initialized(&mut init);
        bsp_core::mpi::ffi::MPI_Finalized(&mut fini);
    }
    init != 0 && fini == 0
}

/// Ends the whole job with status 1 when MPI is in use (returns otherwise).
pub(crate) fn abort_job() {
    if initialised() {
        // Let the launcher forward the error line before the job goes.
        std::thread::sleep(std::time::Duration::from_millis(200));
        // SAFETY: MPI is initialised and not finalised (checked above);
        // `MPI_Abort` on the world communicator ends every rank.
        unsafe {
            bsp_core::mpi::ffi::MPI_Abort(bsp_core::mpi::ffi::RSMPI_COMM_WORLD, 1);
        }
    }
}

/// The number of ranks (initialising MPI, through bsp-core, if needed).
pub(crate) fn world_size() -> usize {
    bsp_core::Runtime::mpi().nprocs()
}

/// This rank (MPI is initialised).
pub(crate) fn rank() -> usize {
    let _ = world_size();
    SimpleCommunicator::world().rank() as usize
}

/// Rank 0's `value`, on every rank (a broadcast on the world; MPI is
/// initialised). BSPlib's `bsp_begin(P)`: rank 0's P decides, since the
/// other ranks may not have read it (bsp_init runs them straight into the
/// SPMD function).
pub(crate) fn root_value(value: i32) -> i32 {
    let _ = world_size();
    let mut v = value;
    SimpleCommunicator::world()
        .process_at_rank(0)
        .broadcast_into(&mut v);
    v
}
