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
//! the local rank's result only. By default ([`OnFailure::Abort`]) a failure
//! never returns: the rank that detects it prints `bsp: <error>` to standard
//! error and aborts the whole job with `MPI_Abort` (exit code 1). With
//! [`OnFailure::Return`], every rank returns the same error: a failure found
//! outside a sync is announced in place of the failing rank's next sync row
//! (the others are waiting in that all-gather), and one found while
//! delivering is settled by one more all-gather at the end of the sync.
//!
//! A rank that exits while a run is in progress would leave the others
//! waiting for ever; the exit hook then aborts the job instead of
//! finalising, naming the rank's processor and superstep, with the status
//! the rank gave `exit` (1 for 0, or where the C library does not tell
//! it; glibc does: [`at_exit`](crate::at_exit)). A run started inside a run's closure on the same thread is
//! refused (it would wait on itself). With a sync time limit, the
//! all-gather of each sync is carried out by `timed.rs`.
//!
//! # Exchanges
//!
//! * `allgather` (the sync rows) is a put of the row into every other
//!   rank's window and one `MPI_Win_fence` (`fenced.rs`); blocks offered
//!   with the rows ride in the same epoch when they are small, so that a
//!   superstep of small puts routed directly costs that one fence (on
//!   one node, no MPI call at all). With
//!   [`SYNC_ENV`]`=allgather`, or under a sync time limit (`timed.rs`),
//!   it is an `MPI_Allgather` (or its timed point-to-point form) instead,
//!   and offered blocks are kept.
//! * `exchange` (every router's all-to-all) is one `MPI_Alltoall` of p
//!   byte counts (spared where the caller knows them) followed by one
//!   `MPI_Alltoallw` that sends every block straight from its segments:
//!   the send datatype for each destination is an hindexed type over the
//!   segments' absolute addresses (from `MPI_BOTTOM`), so no send buffer
//!   is filled. (Two alternatives were measured no faster on Open MPI 4.1
//!   over shared memory and removed: an eager padded `MPI_Alltoall` for
//!   the two-phase router's transposes, and flattening the blocks into one
//!   `MPI_Alltoallv`; see git history and BENCHMARKS.md.)
//! * `exchange_into` (the placed routings of `router/placed.rs`, which
//!   know beforehand what each rank sends) is, on one node, one copy per
//!   payload between two window all-gathers: pushed by the sender into a
//!   receiver's mapped coarray, or pulled by the receiver from the
//!   sender's memory (`pull.rs`). Across nodes, or where the kernel
//!   refuses, it is one round of point-to-point messages, sent straight
//!   from the segments and received straight into the landing regions
//!   (`p2p.rs`); no counts travel.
//!
//! A rank's block to itself never goes through MPI: it is handed over as
//! it is (reference-counted segments), and MPI sees an empty block.
//!
//! MPI counts are `int`s, so no message and no rank's part of a collective
//! may carry 2³¹ bytes or more (the *piece limit*, 2³¹ − 1 bytes). A
//! superstep may still move any number of bytes between two ranks: in a
//! counted exchange, a block travels inside the collective only up to a
//! p-th of the piece limit (so that no rank sends or receives more than
//! the limit in it), and a larger one goes point to point after it, in
//! messages of at most the piece limit (`p2p.rs`); the placed exchanges'
//! payloads go point to point anyway, cut the same way. Both ends of a
//! pair know the block's length, so they agree on the way without a word.
//! [`PIECE_ENV`] lowers the limit, for tests of these paths.

mod alltoallw;
mod fenced;
mod p2p;
mod pull;
mod split;
mod timed;

#[cfg(test)]
pub(crate) use pull::{REPEATED, WRITTEN_BY_SYSCALL};

use std::cell::Cell;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, TryLockError};
use std::time::Duration;

use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use mpi::Threading;

use super::split::Frame;
use super::{
    dense, listed, timeout_message, Aborted, Blocks, Capabilities, Comm, Group, Launcher, Offer,
    OnFailure, OpenRun, Opened, Program, Purpose, Rows, RunLimits, Scatter,
};
use crate::error::{Error, ErrorKind, Result};
use crate::segments::Segments;

/// Environment variable lowering the piece limit (bytes, from 1 to
/// 2³¹ − 1, the default): the most bytes of one MPI message or of one
/// rank's part of a collective. For testing only: it sends blocks above
/// a few bytes the way those of gigabytes go (see the module docs). Every
/// rank of a job must use the same (checked when a run starts).
pub(crate) const PIECE_ENV: &str = "BSP_MPI_PIECE";

/// Environment variable choosing how the sync rows travel ([`SyncWay`]):
/// `fence` (the default), `put` or `allgather`. Every rank of a job must
/// use the same (checked when a run starts).
pub(crate) const SYNC_ENV: &str = "BSP_MPI_SYNC";

/// How the sync rows travel, as [`SYNC_ENV`] says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SyncWay {
    /// Through a window (`fenced.rs`): on one node a shared-memory one,
    /// with no MPI call per sync, and placed payloads pulled by their
    /// receivers (`pull.rs`); across nodes `MPI_Put`s and one
    /// `MPI_Win_fence`. The default.
    Fence,
    /// Through a window with `MPI_Put`s and one `MPI_Win_fence` even on
    /// one node, and payloads as messages: the way across nodes, for
    /// tests and measurements on one.
    Put,
    /// One `MPI_Allgather`, no blocks beside the rows, payloads as
    /// messages: the transport before the windows.
    Allgather,
}

impl SyncWay {
    /// [`SYNC_ENV`]'s choice, [`Fence`](SyncWay::Fence) where unset.
    fn from_env() -> Result<SyncWay> {
        match std::env::var(SYNC_ENV) {
            Err(_) => Ok(SyncWay::Fence),
            Ok(set) => match set.trim() {
                "fence" => Ok(SyncWay::Fence),
                "put" => Ok(SyncWay::Put),
                "allgather" => Ok(SyncWay::Allgather),
                _ => Err(config_error(format!(
                    "{SYNC_ENV}={set:?}: expected fence, put or allgather"
                ))),
            },
        }
    }
}

/// The largest message Open MPI's shared-memory transport sends eagerly:
/// its `btl_vader_eager_limit` (4 KiB), less room for its match header.
/// A longer message waits for the receiver (a rendezvous).
const EAGER_MESSAGE: usize = 4096 - 128;

/// On one node, blocks up to this many bytes travel as eager messages
/// (`MpiComm::cut_eagerly`); longer ones gain more from the rendezvous's
/// single copy than a few microseconds.
const EAGER_BLOCK: usize = 64 << 10;

/// The process-wide MPI state: initialised on first use, never dropped.
struct World {
    /// bsp's own duplicate of `MPI_COMM_WORLD`.
    comm: SimpleCommunicator,
    /// Held so that it is never dropped (dropping it would call
    /// `MPI_Finalize`); `None` when the program initialised MPI itself.
    _universe: Option<Universe>,
    /// Serialises runs (MPI is initialised with `MPI_THREAD_SERIALIZED`),
    /// and counts those started on this rank.
    run_lock: Mutex<u64>,
    /// Send buffers of timed all-gathers abandoned at a timeout, kept
    /// alive because MPI may still read them.
    unsent: Mutex<Vec<Vec<u64>>>,
    /// The error of the run in progress, in [`OnFailure::Return`] mode.
    failure: Mutex<Option<Error>>,
    /// Whether every rank runs on this rank's node
    /// (`MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)` holds the whole world).
    one_node: bool,
}

/// Whether a bsp run is in progress on this rank; read by the exit hook.
static RUN_ACTIVE: AtomicBool = AtomicBool::new(false);

/// The superstep of the run in progress, for the exit hook's message.
static SUPERSTEP: AtomicUsize = AtomicUsize::new(0);

/// Set when a rank has given up on another (a timeout in return mode):
/// the job can no longer be finalised, nor run again.
static BROKEN: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// Whether this thread is inside an MPI run's closure.
    static IN_RUN: Cell<bool> = const { Cell::new(false) };
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
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

/// Finalises MPI when the process exits normally — unless it exits in the
/// middle of a run (`std::process::exit` in a closure, say, or `main`
/// returning while another thread runs): the other ranks are then waiting
/// for this one, and finalising would leave them waiting for ever, so the
/// job is aborted instead, with the status the rank gave `exit` (1 where
/// that was 0, or is not known: the run did not finish). Likewise after a
/// rank gave up on another.
fn finalize_at_exit(status: Option<c_int>) {
    if RUN_ACTIVE.load(Ordering::Acquire) || BROKEN.load(Ordering::Acquire) {
        let code = status.filter(|&s| s != 0).unwrap_or(1);
        let rank = WORLD.get().map_or(0, |w| w.comm.rank());
        let line = if RUN_ACTIVE.load(Ordering::Acquire) {
            let given = status.map_or(String::new(), |s| format!(" (status {s})"));
            format!(
                "bsp: processor {rank}, superstep {}: exited during a run{given}; ending the \
                 whole job with status {code}\n",
                SUPERSTEP.load(Ordering::Relaxed)
            )
        } else {
            format!(
                "bsp: rank {rank} exited after a run that lost a rank (sync timeout); ending the \
                 whole job with status {code}\n"
            )
        };
        let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
        // Give the launcher a moment to forward the line before the abort.
        std::thread::sleep(Duration::from_millis(200));
        // SAFETY: MPI is initialised (a run is or was in progress) and not
        // finalised (only this handler finalises, and it has not yet);
        // MPI_Abort on the world ends every rank of the job.
        unsafe {
            mpi::ffi::MPI_Abort(mpi::ffi::RSMPI_COMM_WORLD, code);
        }
        return;
    }
    let mut finalized: c_int = 0;
    // SAFETY: `MPI_Finalized` may be called at any time, even before
    // `MPI_Init` and after `MPI_Finalize`. `MPI_Finalize` is called at most
    // once (guarded by the flag), from `exit`, with no bsp run in progress
    // (checked above); MPI was initialised by bsp (this handler is only
    // registered then).
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
                crate::at_exit(finalize_at_exit);
            }
            universe
        };
        let comm = SimpleCommunicator::world().duplicate();
        let one_node = comm.split_shared(0).size() == comm.size();
        World {
            comm,
            one_node,
            _universe: universe,
            run_lock: Mutex::new(0),
            unsent: Mutex::new(Vec::new()),
            failure: Mutex::new(None),
        }
    })
}

/// The number of ranks in the MPI world (initialising MPI if needed).
pub(crate) fn world_size() -> usize {
    world().comm.size() as usize
}

/// One rank's endpoint of the MPI transport.
pub(crate) struct MpiComm {
    world: &'static World,
    pid: usize,
    nprocs: usize,
    /// The piece limit: the most bytes of one message or of this rank's
    /// part of a collective (see the module docs).
    piece: usize,
    limits: RunLimits,
    /// The superstep of the coming collectives, for error reports.
    superstep: usize,
    /// How the rows travel (see [`SYNC_ENV`]).
    sync: SyncWay,
    /// The window of the fenced all-gathers, made at the first one; freed
    /// (collectively) when the endpoint is dropped, before its
    /// communicator.
    fenced: Option<fenced::Fenced>,
    /// Whether this communicator's ranks pull placed payloads out of each
    /// other's memory (`pull.rs`): `None` until probed.
    pull: Option<Option<pull::Pull>>,
    /// A sub-machine's own communicator (from `MPI_Comm_split`) and its
    /// place in the run; `None` for the run's.
    own: Option<split::SubCommunicator>,
    frame: Option<Arc<Frame>>,
}

impl MpiComm {
    fn comm(&self) -> &SimpleCommunicator {
        match &self.own {
            Some(own) => own.get(),
            None => &self.world.comm,
        }
    }

    /// The most bytes a block may have to travel inside a collective: a
    /// p-th of the piece limit, so that no rank sends or receives more
    /// than the limit in one. Larger blocks go point to point.
    fn inline_limit(&self) -> usize {
        self.piece / self.nprocs
    }

    /// Whether a block of `len` bytes travels inside the exchange's
    /// collective: up to the [`inline_limit`](Self::inline_limit), unless
    /// it goes as [eager messages](Self::cut_eagerly). Both ends of a pair
    /// know the length, so both decide alike.
    fn in_collective(&self, len: usize) -> bool {
        len <= self.inline_limit() && !self.cut_eagerly(len)
    }

    /// Whether a block of `len` bytes travels as several messages of
    /// [`EAGER_MESSAGE`] bytes, point to point: on one node, for blocks
    /// longer than one such message and at most [`EAGER_BLOCK`]. One
    /// message (or a collective's) would wait for Open MPI's rendezvous
    /// there, a step of about 10 µs in a superstep's time at 4 KiB.
    fn cut_eagerly(&self, len: usize) -> bool {
        self.world.one_node && len > EAGER_MESSAGE && len <= EAGER_BLOCK
    }

    /// The largest message of a block of `len` bytes sent point to point.
    fn message_limit(&self, len: usize) -> usize {
        if self.cut_eagerly(len) {
            EAGER_MESSAGE.min(self.piece)
        } else {
            self.piece
        }
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
        if let Some(limit) = self.limits.sync_timeout {
            return match self.timed_allgather(row, limit) {
                Ok(all) => Ok(all.into()),
                Err(missing) => {
                    let culprit = missing.first().copied().unwrap_or(self.pid);
                    let msg = timeout_message(&missing, self.nprocs, limit);
                    let error = Error::at(ErrorKind::Timeout, culprit, self.superstep, msg);
                    // No rank can agree with one that is missing.
                    BROKEN.store(true, Ordering::Release);
                    self.abort(error)
                }
            };
        }
        if self.sync != SyncWay::Allgather {
            return Ok(self.fenced_allgather(row, None).0);
        }
        let mut all = vec![0u64; row.len() * self.nprocs];
        self.comm().all_gather_into(row, &mut all[..]);
        Ok(all.into())
    }

    fn allgather_offering(
        &mut self,
        row: &[u64],
        blocks: Blocks,
    ) -> Result<(Rows, Offer), Aborted> {
        if !self.capabilities().publishes_with_rows {
            return Ok((self.allgather(row)?, Offer::Kept(blocks)));
        }
        let (rows, fate) = self.fenced_allgather(row, Some(blocks));
        let offer = match fate {
            Some(fenced::Fate::Published) => Offer::Published,
            Some(fenced::Fate::Kept(blocks)) => Offer::Kept(blocks),
            None => unreachable!("bsp: blocks were offered"),
        };
        Ok((rows, offer))
    }

    fn recycle_rows(&mut self, rows: Rows) {
        if let Some(fenced) = self.fenced.as_mut() {
            fenced.recycle_rows(rows);
        }
    }

    fn take_offered(&mut self, exchange: bool) -> Blocks {
        self.fenced
            .as_mut()
            .expect("bsp: no blocks were offered")
            .take_offered(exchange)
    }

    fn exchange(&mut self, blocks: Blocks, expected: Option<&[u64]>) -> Result<Blocks, Aborted> {
        let blocks = dense(blocks, self.nprocs);
        Ok(listed(self.counted_alltoallv(blocks, expected)))
    }

    unsafe fn exchange_into(
        &mut self,
        blocks: &[(usize, Segments)],
        into: Scatter,
    ) -> Result<(), Aborted> {
        if self.shares_window() && self.publishes_with_rows() {
            // SAFETY: the caller keeps `exchange_into`'s contract, which
            // is `pull_into`'s.
            if unsafe { self.pull_into(blocks, &into) } {
                return Ok(());
            }
        }
        let outgoing = blocks.iter().map(|(k, block)| (*k, block));
        // SAFETY: the caller keeps `exchange_into`'s contract, which is
        // `p2p_into`'s.
        unsafe { self.p2p_into(outgoing, into) };
        Ok(())
    }

    fn map_parts(&mut self, part: (*const u8, usize)) -> Result<Option<Vec<usize>>, Aborted> {
        self.map_peer_parts(part)
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            shares_memory: false,
            one_node: self.world.one_node,
            scatter_receive: true,
            publishes_with_rows: self.publishes_with_rows(),
            publishes_up_to: match self.publishes_with_rows() {
                true => fenced::mail_most(self.nprocs),
                false => 0,
            },
            // The senders write into it in `pull_into`.
            maps_memory: cfg!(target_os = "linux")
                && self.shares_window()
                && self.publishes_with_rows(),
        }
    }

    fn set_superstep(&mut self, superstep: usize) {
        self.superstep = superstep;
        if self.frame.is_none() {
            SUPERSTEP.store(superstep, Ordering::Relaxed);
        }
    }

    /// In return mode, the run's communicator agrees; a sub-machine's
    /// cannot (the other groups would not learn of the failure), so a
    /// failure inside one ends the job.
    fn agrees_on_failure(&self) -> bool {
        self.limits.on_failure == OnFailure::Return && self.frame.is_none()
    }

    /// Records the run's error in [`OnFailure::Return`] mode (the ranks
    /// have agreed on it, or this one gave up on a missing rank) and
    /// unwinds; in abort mode, ends the job.
    fn abort(&mut self, error: Error) -> ! {
        if let Some(frame) = self.frame.clone() {
            self.abort_job(frame.translate(error))
        }
        if self.limits.on_failure == OnFailure::Return {
            let mut failure = lock(&self.world.failure);
            if failure.is_none() {
                *failure = Some(error);
            }
            drop(failure);
            std::panic::resume_unwind(Box::new(Aborted))
        }
        self.abort_job(error)
    }

    fn split(&mut self, group: &Group, superstep: usize) -> Result<Box<dyn Comm>, Aborted> {
        Ok(Box::new(self.split_group(group, superstep)))
    }

    fn recorded_failure(&self) -> Option<Error> {
        lock(&self.world.failure).clone()
    }
}

impl MpiComm {
    /// Whether the sync window is shared memory, mapped by every rank: on
    /// one node, unless [`SYNC_ENV`] says `put`.
    /// Whether offered blocks ride with the rows: the rows go through
    /// the window, without a sync time limit (see `Capabilities`).
    fn publishes_with_rows(&self) -> bool {
        self.sync != SyncWay::Allgather && self.limits.sync_timeout.is_none()
    }

    fn shares_window(&self) -> bool {
        self.world.one_node && self.sync == SyncWay::Fence
    }

    /// The rows (and offered blocks) through this communicator's window,
    /// made at the first call.
    fn fenced_allgather(
        &mut self,
        row: &[u64],
        blocks: Option<Blocks>,
    ) -> (Rows, Option<fenced::Fate>) {
        let (me, p, shared) = (self.pid, self.nprocs, self.shares_window());
        let comm = match &self.own {
            Some(own) => own.get(),
            None => &self.world.comm,
        };
        let fenced = self
            .fenced
            .get_or_insert_with(|| fenced::Fenced::new(comm, shared, me, p, row.len()));
        fenced.allgather(comm, row, blocks)
    }

    /// Prints `error` and ends the whole job, whatever the failure mode:
    /// for failures inside a collective, which the others cannot leave.
    pub(super) fn abort_job(&mut self, error: Error) -> ! {
        // One write, so that the lines of several ranks do not interleave.
        let line = self.limits.report_line(&error);
        let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
        // Ranks that detect the same failure in the same collective (a sync
        // mismatch, say) each get a moment to print their own line before
        // the first `MPI_Abort` takes the job down.
        std::thread::sleep(Duration::from_millis(200));
        self.world.comm.abort(1)
    }
}

impl Drop for MpiComm {
    /// Frees the window of the fenced all-gathers, collectively: every
    /// rank drops its endpoint at the same point (the end of the run or
    /// sub-machine, or the agreed failure in return mode); a job that lost
    /// a rank leaves it, as the missing rank would never free its part.
    fn drop(&mut self) {
        if let Some(fenced) = self.fenced.take() {
            fenced.free(!BROKEN.load(Ordering::Acquire));
        }
    }
}

/// Marks this thread as inside an MPI run (and the rank as running) until
/// dropped.
struct RunGuard;

impl RunGuard {
    fn enter() -> Self {
        IN_RUN.with(|c| c.set(true));
        SUPERSTEP.store(0, Ordering::Relaxed);
        RUN_ACTIVE.store(true, Ordering::Release);
        RunGuard
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        RUN_ACTIVE.store(false, Ordering::Release);
        IN_RUN.with(|c| c.set(false));
    }
}

fn config_error(msg: String) -> Error {
    Error::new(ErrorKind::Config, None, None, msg)
}

/// FNV-1a of a program's closure type and call site: the same on every
/// rank of one binary.
fn program_hash(program: &Program) -> u64 {
    let fnv = |h: u64, bytes: &[u8]| {
        bytes
            .iter()
            .fold(h, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
    };
    let (file, line, column) = program
        .site
        .map_or(("", 0, 0), |s| (s.file(), s.line(), s.column()));
    let h = fnv(0xcbf2_9ce4_8422_2325, program.closure.as_bytes());
    let h = fnv(h, file.as_bytes());
    fnv(
        h,
        &(u64::from(line) << 32 | u64::from(column)).to_le_bytes(),
    )
}

/// Checks that every rank starts the same run, its `started`-th (the same
/// closure type and call site) with the same time limit, failure mode and
/// piece limit, in one `MPI_Allgather` of five words: ranks that disagree
/// would otherwise pair up different runs, wait in different collectives,
/// or cut blocks differently.
fn agree_on_run(
    world: &World,
    limits: RunLimits,
    piece: usize,
    sync: SyncWay,
    started: u64,
) -> Result<()> {
    const WORDS: usize = 6;
    let timeout_ns = limits
        .sync_timeout
        .map_or(0, |t| u64::try_from(t.as_nanos()).unwrap_or(u64::MAX));
    let mine = [
        timeout_ns,
        limits.on_failure as u64,
        piece as u64,
        sync as u64,
        program_hash(&limits.program),
        started,
    ];
    let mut all = vec![0u64; WORDS * world.comm.size() as usize];
    world.comm.all_gather_into(&mine[..], &mut all[..]);
    let me = world.comm.rank();
    let Some(q) = all.chunks(WORDS).position(|r| r != mine) else {
        return Ok(());
    };
    let theirs = &all[q * WORDS..(q + 1) * WORDS];
    if theirs[..4] != mine[..4] {
        return Err(config_error(format!(
            "the ranks disagree on BSP_SYNC_TIMEOUT, BSP_ON_FAILURE, {PIECE_ENV} or {SYNC_ENV} (rank {q} \
             differs from rank {me}); give every rank the same environment (mpirun -x \
             BSP_SYNC_TIMEOUT ...)"
        )));
    }
    Err(config_error(format!(
        "the ranks start different runs: rank {me} starts its run #{} ({}), rank {q} its run #{} \
         (another closure or another count); under MPI every rank must start the same runs in the \
         same order, one at a time",
        started + 1,
        limits.program,
        theirs[5] + 1
    )))
}

/// The piece limit: [`PIECE_ENV`], or MPI's count limit.
fn piece_limit() -> Result<usize> {
    let most = mpi::Count::MAX as usize;
    let Ok(set) = std::env::var(PIECE_ENV) else {
        return Ok(most);
    };
    match set.trim().parse::<usize>() {
        Ok(n) if (1..=most).contains(&n) => Ok(n),
        _ => Err(config_error(format!(
            "{PIECE_ENV}={set:?}: expected a number of bytes from 1 to {most}"
        ))),
    }
}

/// This rank's endpoint for a new run, with the lock that serialises runs
/// on this process, after the checks every run makes first: not inside
/// another run, not after a lost rank, the same limits on every rank.
fn open(limits: RunLimits) -> Result<(MpiComm, MutexGuard<'static, u64>)> {
    if IN_RUN.with(Cell::get) {
        return Err(config_error(
            "an MPI run cannot start inside another MPI run's closure (on this rank); \
             use the Ctx you were given, or a threads runtime for a nested computation"
                .to_owned(),
        ));
    }
    if BROKEN.load(Ordering::Acquire) {
        return Err(config_error(
            "an earlier run on this MPI job lost a rank (sync timeout); no further run can start"
                .to_owned(),
        ));
    }
    let piece = piece_limit()?;
    let sync = SyncWay::from_env()?;
    let world = world();
    let mut serialised =
        match world.run_lock.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return Err(config_error(
                "another MPI run (or session) is in progress on this rank, started from another \
                 thread; under MPI, runs must start one at a time, in the same order on every \
                 rank (the ranks could not tell which of the concurrent runs to pair up)"
                    .to_owned(),
            )),
        };
    agree_on_run(world, limits, piece, sync, *serialised)?;
    *serialised += 1;
    let comm = MpiComm {
        world,
        pid: world.comm.rank() as usize,
        nprocs: world.comm.size() as usize,
        piece,
        limits,
        superstep: 0,
        sync,
        fenced: None,
        pull: None,
        own: None,
        frame: None,
    };
    Ok((comm, serialised))
}

/// The MPI transport's way in: this rank's endpoint, run on the calling
/// thread (which holds the run lock and the in-a-run mark).
pub(crate) struct Mpi;

impl Launcher for Mpi {
    fn name(&self) -> &'static str {
        "mpi"
    }

    fn program_chooses_procs(&self) -> bool {
        false
    }

    /// A run takes the whole world; a session of `procs` processors its
    /// first `procs` ranks, the others taking no part.
    fn open(&self, procs: usize, limits: RunLimits, purpose: Purpose) -> Result<Option<Opened>> {
        let (comm, serialised) = open(limits)?;
        let world = comm.world;
        let size = comm.nprocs;
        let comm = match purpose {
            Purpose::Run => comm,
            Purpose::Session if procs == 0 || procs > size => {
                return Err(config_error(format!(
                    "a session of {procs} processors cannot run on {size} MPI ranks (it needs 1 \
                     to {size}); start the program with mpirun -np {procs}"
                )));
            }
            Purpose::Session if procs < size => match comm.first_ranks(procs) {
                Some(comm) => comm,
                None => return Ok(None),
            },
            Purpose::Session => comm,
        };
        let held = Held {
            world,
            _running: RunGuard::enter(),
            _serialised: serialised,
        };
        Ok(Some(Opened {
            endpoints: vec![Box::new(comm)],
            on_caller: true,
            stack: 0,
            run: Arc::new(Failures(world)),
            held: Box::new(held),
        }))
    }
}

/// The run's failure as the launcher sees it: recorded by
/// [`Comm::abort`] in [`OnFailure::Return`] mode; in abort mode a failure
/// ends the job, and none is ever taken.
struct Failures(&'static World);

impl OpenRun for Failures {
    /// A thread cannot fail to start: the rank's processor runs on the
    /// calling thread.
    fn fail(&self, error: Error) {
        let mut failure = lock(&self.0.failure);
        failure.get_or_insert(error);
    }

    fn take_error(&self) -> Option<Error> {
        lock(&self.0.failure).take()
    }
}

/// What this rank holds while a run (or session) is open: the lock that
/// serialises runs on this process and the mark that a run is in progress
/// (the exit hook aborts the job if the process exits before the run
/// ends). Dropped on the thread that opened it, in this order.
struct Held {
    world: &'static World,
    _running: RunGuard,
    _serialised: MutexGuard<'static, u64>,
}

impl Drop for Held {
    fn drop(&mut self) {
        // The failure agreed in return mode belongs to this run only.
        lock(&self.world.failure).take();
    }
}
