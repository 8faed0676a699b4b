//! The MPI transport (feature `mpi`): one MPI rank per processor.
//!
//! # Life cycle
//!
//! MPI is initialised once per process, by the first MPI run (or by
//! [`Runtime::mpi`](crate::Runtime::mpi)), with thread level
//! `MPI_THREAD_SERIALIZED`: a program (a test harness, say) may call `run`
//! several times and from different threads, one run at a time. The world
//! communicator is duplicated once, so bsp's collectives never match the
//! program's own MPI calls. `MPI_Finalize` is called by an `atexit` handler
//! when the process exits normally, after `main` has returned. If the program
//! initialised MPI itself before its first bsp run, bsp uses that
//! initialisation and leaves finalisation to the program, which must not
//! finalise while a bsp run is in progress.
//!
//! Under MPI, [`Runtime::run`](crate::Runtime::run) returns a vector holding
//! the local rank's result only, and a failure never returns: the rank that
//! detects it prints `bsp: <error>` to standard error and aborts the whole
//! job with `MPI_Abort` (exit code 1).
//!
//! # Exchanges
//!
//! * `allgather` is one `MPI_Allgather` of the sync row.
//! * `alltoallv` (the direct router) is one `MPI_Alltoall` of p byte counts
//!   followed by one `MPI_Alltoallw` that sends every block straight from
//!   its segments: the send datatype for each destination is an hindexed
//!   type over the segments' absolute addresses (from `MPI_BOTTOM`), so no
//!   send buffer is filled. `BSP_MPI_SEND=flatten` copies the blocks into
//!   one buffer and calls `MPI_Alltoallv` instead (measured slower:
//!   `benchmarks/mpi.md`).
//! * `transpose` (the two-phase router's uniform exchanges) is, by
//!   default, the same counts + `MPI_Alltoallw`. The alternative
//!   (`BSP_MPI_TRANSPOSE=alltoall`) is an *eager padded* `MPI_Alltoall`:
//!   every block travels in a slot of an agreed size S, led by a 16-byte
//!   header (the block's length, and the largest block its sender sends in
//!   this exchange). After the exchange every rank holds every sender's
//!   largest block, so all ranks agree, without another collective, on
//!   whether some block did not fit (then the remainders follow in one
//!   `MPI_Alltoallv` whose counts every rank already knows) and on the slot
//!   size of the next transpose, which is the largest block of this one plus
//!   an eighth, capped at [`EAGER_TOTAL`]`/p` bytes to bound padding. In
//!   steady state a transpose is then one collective instead of two, but on
//!   OpenMPI 4.1 over shared memory it measured no faster than
//!   `MPI_Alltoallv` (`benchmarks/mpi.md`), so it is not the default.
//!
//! A rank's block to itself never goes through MPI: it is handed over as
//! it is (reference-counted segments), and MPI sees an empty block.
//!
//! MPI counts are `int`s: a block, and the bytes one rank receives in one
//! exchange, must stay below 2³¹ bytes; larger ones end the run with an
//! [`ErrorKind::Transport`] error.

mod alltoallw;
mod eager;
mod pool;

use std::os::raw::c_int;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use mpi::Threading;

use super::{dense, listed, Aborted, Blocks, Body, Comm, Rows};
use crate::error::{Error, ErrorKind, Result};
use pool::Pool;

/// Environment variable choosing how `transpose` is carried out:
/// `alltoallv` (counts + `MPI_Alltoallv`, the default) or `alltoall`
/// (eager padded `MPI_Alltoall`).
pub(crate) const TRANSPOSE_ENV: &str = "BSP_MPI_TRANSPOSE";

/// Environment variable choosing how the blocks of an irregular exchange
/// reach MPI: `hindexed` (the default) or `flatten`; see [`SendMode`].
/// Every rank of a job must use the same.
pub(crate) const SEND_ENV: &str = "BSP_MPI_SEND";

/// Upper bound on the bytes of one rank's eager slots in a transpose (all p
/// of them together); larger blocks send their remainder in a second step.
pub(crate) const EAGER_TOTAL: usize = 1 << 20;

/// Smallest eager slot, header included.
const MIN_SLOT: usize = 256;

/// Bytes of the header leading each eager slot.
const SLOT_HEADER: usize = 16;

/// The process-wide MPI state: initialised on first use, never dropped.
struct World {
    /// bsp's own duplicate of `MPI_COMM_WORLD`.
    comm: SimpleCommunicator,
    /// Held so that it is never dropped (dropping it would call
    /// `MPI_Finalize`); `None` when the program initialised MPI itself.
    _universe: Option<Universe>,
    /// Serialises runs: MPI is initialised with `MPI_THREAD_SERIALIZED`.
    run_lock: Mutex<()>,
    /// Exchange buffers ready for reuse.
    pool: Pool,
}

// SAFETY: `SimpleCommunicator` is a handle (`MPI_Comm`), which is not `Send`
// or `Sync` only because it wraps a raw pointer. MPI is initialised with
// `MPI_THREAD_SERIALIZED` (or by the program, which then owns the thread
// level), and every use of `comm` happens inside a run, while `run_lock` is
// held, so no two threads call MPI through it at the same time.
unsafe impl Send for World {}
// SAFETY: see the `Send` impl above: access is serialised by `run_lock`.
unsafe impl Sync for World {}

static WORLD: OnceLock<World> = OnceLock::new();

extern "C" {
    /// C library `atexit(3)`: registers a function called by `exit`.
    fn atexit(callback: extern "C" fn()) -> c_int;
}

/// Finalises MPI when the process exits normally.
extern "C" fn finalize_at_exit() {
    let mut finalized: c_int = 0;
    // SAFETY: `MPI_Finalized` may be called at any time, even before
    // `MPI_Init` and after `MPI_Finalize`. `MPI_Finalize` is called at most
    // once (guarded by the flag), from `exit`, after `main` has returned, so
    // no bsp run is in progress; MPI was initialised by bsp (this handler is
    // only registered then).
    unsafe {
        mpi::ffi::MPI_Finalized(&mut finalized);
        if finalized == 0 {
            mpi::ffi::MPI_Finalize();
        }
    }
}

fn world() -> &'static World {
    WORLD.get_or_init(|| {
        let universe = if mpi::is_initialized() {
            None
        } else {
            let universe = mpi::initialize_with_threading(Threading::Serialized).map(|(u, _)| u);
            if universe.is_some() {
                // SAFETY: `finalize_at_exit` is a plain `extern "C" fn()`
                // that stays valid for the life of the process.
                let rc = unsafe { atexit(finalize_at_exit) };
                assert_eq!(rc, 0, "bsp: cannot register MPI finalisation with atexit");
            }
            universe
        };
        World {
            comm: SimpleCommunicator::world().duplicate(),
            _universe: universe,
            run_lock: Mutex::new(()),
            pool: Pool::new(),
        }
    })
}

/// The number of ranks in the MPI world (initialising MPI if needed).
pub(crate) fn world_size() -> usize {
    world().comm.size() as usize
}

/// How `transpose` is carried out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TransposeMode {
    /// Eager padded `MPI_Alltoall` with an agreed, adaptive slot size.
    Alltoall,
    /// Counts exchange + `MPI_Alltoallv`, as for `alltoallv`.
    Alltoallv,
}

/// How the blocks of an irregular exchange are handed to MPI. A block is a
/// list of segments: router and record headers, and the payloads, which
/// for [`Ctx::put_from`](crate::Ctx::put_from), `put_vec` and the two-phase
/// router's second stage are slices of coarrays or of received buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SendMode {
    /// Straight from the segments (the default): one `MPI_Alltoallw` with
    /// one hindexed datatype per destination over the segments' absolute
    /// addresses. No flattening copy; OpenMPI packs the pieces through its
    /// shared-memory fragments, which stay in cache.
    Hindexed,
    /// Every block copied into one contiguous buffer, then `MPI_Alltoallv`
    /// (OpenMPI then copies large blocks once, process to process).
    Flatten,
}

/// One rank's endpoint of the MPI transport.
pub(crate) struct MpiComm {
    world: &'static World,
    pid: usize,
    nprocs: usize,
    mode: TransposeMode,
    send: SendMode,
    /// The agreed slot size of the next eager transpose, header included.
    slot: usize,
}

impl MpiComm {
    fn comm(&self) -> &SimpleCommunicator {
        &self.world.comm
    }
}

impl Comm for MpiComm {
    fn pid(&self) -> usize {
        self.pid
    }

    fn nprocs(&self) -> usize {
        self.nprocs
    }

    fn allgather(&mut self, row: &[u64]) -> Result<Rows, Aborted> {
        let mut all = vec![0u64; row.len() * self.nprocs];
        self.comm().all_gather_into(row, &mut all[..]);
        Ok(all.into())
    }

    fn transpose(&mut self, blocks: Blocks, expected: Option<&[u64]>) -> Result<Blocks, Aborted> {
        let blocks = dense(blocks, self.nprocs);
        Ok(listed(match self.mode {
            TransposeMode::Alltoall => self.eager_transpose(blocks),
            TransposeMode::Alltoallv => self.counted_alltoallv(blocks, expected),
        }))
    }

    fn alltoallv(&mut self, blocks: Blocks, expected: Option<&[u64]>) -> Result<Blocks, Aborted> {
        let blocks = dense(blocks, self.nprocs);
        Ok(listed(self.counted_alltoallv(blocks, expected)))
    }

    fn abort(&mut self, error: Error) -> ! {
        // One write, so that the lines of several ranks do not interleave.
        let line = format!("bsp: {error}\n");
        let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
        // Ranks that detect the same failure in the same collective (a sync
        // mismatch, say) each get a moment to print their own line before
        // the first `MPI_Abort` takes the job down.
        std::thread::sleep(Duration::from_millis(200));
        self.comm().abort(1)
    }
}

/// The value of environment variable `name` among `choices` (name, value);
/// the first choice is the default when the variable is unset.
fn env_choice<T: Copy>(name: &str, choices: &[(&str, T)]) -> Result<T> {
    let Ok(set) = std::env::var(name) else {
        return Ok(choices[0].1);
    };
    if let Some(&(_, value)) = choices.iter().find(|(n, _)| *n == set) {
        return Ok(value);
    }
    let expected: Vec<String> = choices.iter().map(|(n, _)| format!("`{n}`")).collect();
    let msg = format!("{name}={set:?}: expected {}", expected.join(" or "));
    Err(Error::new(ErrorKind::Config, None, None, msg))
}

/// Runs `body` as this rank's processor and returns its result (alone).
///
/// A failure anywhere in the job aborts it (see the module docs), so this
/// returns `Ok` or a configuration error found before any communication.
pub(crate) fn launch<R: Send>(body: &impl Body<R>) -> Result<Vec<R>> {
    let mode = env_choice(
        TRANSPOSE_ENV,
        &[
            ("alltoallv", TransposeMode::Alltoallv),
            ("alltoall", TransposeMode::Alltoall),
        ],
    )?;
    let send = env_choice(
        SEND_ENV,
        &[
            ("hindexed", SendMode::Hindexed),
            ("flatten", SendMode::Flatten),
        ],
    )?;
    let world = world();
    let _serialised = world.run_lock.lock().unwrap_or_else(|e| e.into_inner());
    let pid = world.comm.rank() as usize;
    let comm = MpiComm {
        world,
        pid,
        nprocs: world.comm.size() as usize,
        mode,
        send,
        slot: MIN_SLOT,
    };
    match body(Box::new(comm)) {
        Some(result) => Ok(vec![result]),
        // The body returns `None` only after `Comm::abort`, which under MPI
        // ends the process; keep a clear message should that ever change.
        None => {
            eprintln!("bsp: rank {pid} aborted");
            world.comm.abort(1)
        }
    }
}
