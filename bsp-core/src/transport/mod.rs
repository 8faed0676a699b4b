//! Transports: how processors exchange bytes.
//!
//! A router needs very little from a transport: an all-gather of a short row
//! of integers (which doubles as the barrier of every `sync`), a uniform
//! all-to-all ("transpose") and an irregular all-to-all, plus a way to abort
//! the whole run. [`Comm`] is that crate-private interface; the public
//! [`Transport`] enum names the implementations.

pub(crate) mod barrier;
#[cfg(feature = "mpi")]
pub(crate) mod mpi;
pub(crate) mod threads;

use bytes::Bytes;

use crate::error::Error;

/// The bytes one processor sends to another in one exchange, as a list of
/// segments. Segments are reference-counted, so handing a block to another
/// thread moves pointers, not data.
pub(crate) type Block = Vec<Bytes>;

/// Total length in bytes of a block.
pub(crate) fn block_len(block: &[Bytes]) -> usize {
    block.iter().map(Bytes::len).sum()
}

/// Marker payload used to unwind a processor out of the runtime after the
/// run has been aborted (by another processor's failure or its own).
pub(crate) struct Aborted;

/// The operations a router and the superstep protocol need from a transport.
///
/// Every processor calls the collective operations in the same order; each
/// call is a synchronisation point. A collective returns `Err(Aborted)` when
/// the run was aborted while (or before) the caller waited in it.
pub(crate) trait Comm: Send {
    /// This processor's id.
    fn pid(&self) -> usize;
    /// The number of processors.
    fn nprocs(&self) -> usize;
    /// All-gather: every processor contributes a row of the same length and
    /// receives all rows, concatenated in pid order.
    fn allgather(&mut self, row: &[u64]) -> Result<Vec<u64>, Aborted>;
    /// Uniform all-to-all: `blocks[k]` goes to processor k; the result holds
    /// the block received from each processor, in pid order. The router
    /// guarantees that block sizes are close to each other.
    fn transpose(&mut self, blocks: Vec<Block>) -> Result<Vec<Block>, Aborted>;
    /// Irregular all-to-all with arbitrary block sizes.
    fn alltoallv(&mut self, blocks: Vec<Block>) -> Result<Vec<Block>, Aborted>;
    /// Ends the run with `error`: records it (the first error wins), releases
    /// every processor waiting in a collective and unwinds this one.
    fn abort(&mut self, error: Error) -> !;
}

/// The transport a [`Runtime`](crate::Runtime) runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Transport {
    /// One OS thread per processor in this process (the default).
    Threads,
    /// One MPI rank per processor (cargo feature `mpi`; start with `mpirun`).
    #[cfg(feature = "mpi")]
    Mpi,
}

impl Transport {
    /// The name used in statistics and benchmark output (`threads`, `mpi`).
    pub fn name(self) -> &'static str {
        match self {
            Transport::Threads => "threads",
            #[cfg(feature = "mpi")]
            Transport::Mpi => "mpi",
        }
    }
}
