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

use std::os::raw::c_int;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use mpi::datatype::{Partition, PartitionMut};
use mpi::environment::Universe;
use mpi::raw::AsRaw;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use mpi::{Count, Threading};

use super::{block_len, Aborted, Block, Comm};
use crate::context::Ctx;
use crate::error::{Error, ErrorKind, Result};
use crate::router::Router;
use crate::runtime::run_processor;
use crate::transport::Transport;
use crate::wire::slice_segments;

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

/// Most buffers kept for reuse.
const POOL_BUFFERS: usize = 8;

/// Recycled exchange buffers. Fresh large allocations are mapped from the
/// OS and page-faulted on first touch, which cost more than the exchange
/// itself; received buffers come back here when the last `Bytes` slice of
/// them is dropped. The pool keeps at most [`POOL_BUFFERS`] buffers, each of
/// at most the size of the largest exchange seen.
struct Pool(Mutex<Vec<Vec<u8>>>);

impl Pool {
    /// A buffer of `len` bytes with unspecified contents.
    fn take(&self, len: usize) -> Vec<u8> {
        let mut free = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let pick = free
            .iter()
            .position(|b| b.capacity() >= len)
            .or_else(|| (!free.is_empty()).then_some(0));
        let mut buf = pick.map(|i| free.swap_remove(i)).unwrap_or_default();
        drop(free);
        // Capacity ≥ 1 always: an unallocated vector's pointer is 0x1,
        // which is OpenMPI's `MPI_IN_PLACE`.
        buf.reserve(len.max(1));
        if buf.len() > len {
            buf.truncate(len);
        } else {
            buf.resize(len, 0);
        }
        buf
    }

    fn give(&self, buf: Vec<u8>) {
        let mut free = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if free.len() < POOL_BUFFERS && buf.capacity() > 0 {
            free.push(buf);
        }
    }

    /// Hands `buf` out as `Bytes` that return it to the pool when dropped.
    fn share(&'static self, buf: Vec<u8>) -> Bytes {
        Bytes::from_owner(Pooled { buf, pool: self })
    }
}

/// A pooled buffer lent out as `Bytes`.
struct Pooled {
    buf: Vec<u8>,
    pool: &'static Pool,
}

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        self.pool.give(std::mem::take(&mut self.buf));
    }
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
            pool: Pool(Mutex::new(Vec::new())),
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

    /// `n` as an MPI count, or the end of the run.
    fn count(&mut self, n: usize, what: &str) -> Count {
        match Count::try_from(n) {
            Ok(c) => c,
            Err(_) => {
                let msg = format!(
                    "{what} of {n} bytes exceeds MPI's count limit of {} bytes per exchange",
                    Count::MAX
                );
                let error = Error::new(ErrorKind::Transport, Some(self.pid), None, msg);
                self.abort(error)
            }
        }
    }

    /// Displacements of consecutive parts with the given counts.
    fn displacements(&mut self, counts: &[Count], what: &str) -> Vec<Count> {
        let mut at = 0usize;
        let mut displs = Vec::with_capacity(counts.len());
        for &c in counts {
            displs.push(at as Count);
            at += c as usize;
        }
        self.count(at, what);
        displs
    }

    /// One `MPI_Alltoallv` of the bytes `send` (laid out by `send_counts`),
    /// with the receive counts already known. Returns the received bytes and
    /// their displacements.
    ///
    /// `send` must be a slice of an allocated vector (see [`Pool::take`]).
    fn alltoallv_known(
        &mut self,
        send: &[u8],
        send_counts: &[Count],
        recv_counts: &[Count],
    ) -> (Bytes, Vec<Count>) {
        let send_displs = self.displacements(send_counts, "a send buffer");
        let recv_displs = self.displacements(recv_counts, "a receive buffer");
        let total: usize = recv_counts.iter().map(|&c| c as usize).sum();
        let mut recv = self.world.pool.take(total);
        {
            let sendp = Partition::new(send, send_counts, &send_displs[..]);
            let mut recvp = PartitionMut::new(&mut recv[..], recv_counts, &recv_displs[..]);
            self.comm().all_to_all_varcount_into(&sendp, &mut recvp);
        }
        (self.world.pool.share(recv), recv_displs)
    }

    fn eager_transpose(&mut self, mut blocks: Vec<Block>) -> Vec<Block> {
        let p = self.nprocs;
        let me = self.pid;
        let slot = self.slot;
        let inline = slot - SLOT_HEADER;
        // The block to this rank stays here, uncopied; MPI sees it as empty.
        let own = std::mem::take(&mut blocks[me]);
        let lens: Vec<usize> = blocks.iter().map(|b| block_len(b)).collect();
        let local_max = lens.iter().copied().max().unwrap_or(0);

        let mut send = self.world.pool.take(p * slot);
        for (k, block) in blocks.iter().enumerate() {
            let s = &mut send[k * slot..(k + 1) * slot];
            s[0..8].copy_from_slice(&(lens[k] as u64).to_ne_bytes());
            s[8..16].copy_from_slice(&(local_max as u64).to_ne_bytes());
            copy_prefix(
                block,
                &mut s[SLOT_HEADER..SLOT_HEADER + lens[k].min(inline)],
            );
        }
        let mut recv = self.world.pool.take(p * slot);
        self.comm().all_to_all_into(&send[..], &mut recv[..]);
        self.world.pool.give(send);

        let word = |buf: &[u8], at: usize| -> usize {
            u64::from_ne_bytes(buf[at..at + 8].try_into().expect("8 bytes")) as usize
        };
        let in_lens: Vec<usize> = (0..p).map(|k| word(&recv, k * slot)).collect();
        let global_max = (0..p).map(|k| word(&recv, k * slot + 8)).max().unwrap_or(0);
        let recv = self.world.pool.share(recv);
        let mut out: Vec<Block> = (0..p)
            .map(|k| {
                let n = in_lens[k].min(inline);
                if n == 0 {
                    Vec::new()
                } else {
                    let start = k * slot + SLOT_HEADER;
                    vec![recv.slice(start..start + n)]
                }
            })
            .collect();

        if global_max > inline {
            // Some block did not fit, and every rank knows it: the
            // remainders follow, with counts every rank can compute.
            let mut send_counts = Vec::with_capacity(p);
            for &len in &lens {
                send_counts.push(self.count(len.saturating_sub(inline), "a block"));
            }
            let mut recv_counts = Vec::with_capacity(p);
            for &len in &in_lens {
                recv_counts.push(self.count(len.saturating_sub(inline), "a block"));
            }
            let rest: usize = lens.iter().map(|&l| l.saturating_sub(inline)).sum();
            let mut send = self.world.pool.take(rest);
            send.clear();
            let mut parts = Vec::new();
            for (k, block) in blocks.iter().enumerate() {
                if lens[k] > inline {
                    parts.clear();
                    slice_segments(block, inline, lens[k] - inline, &mut parts);
                    for part in &parts {
                        send.extend_from_slice(part);
                    }
                }
            }
            drop(blocks);
            let (recv, displs) = self.alltoallv_known(&send, &send_counts, &recv_counts);
            self.world.pool.give(send);
            for (k, block) in out.iter_mut().enumerate() {
                let (d, c) = (displs[k] as usize, recv_counts[k] as usize);
                if c > 0 {
                    block.push(recv.slice(d..d + c));
                }
            }
        }

        out[me] = own;
        // Every rank saw the same `global_max`, so every rank picks the same slot.
        let cap = (EAGER_TOTAL / p).max(MIN_SLOT);
        // An eighth of slack, so that the two stages of a two-phase route,
        // whose largest blocks differ by a few bytes, share one slot size.
        self.slot = (global_max + global_max / 8 + SLOT_HEADER)
            .next_multiple_of(64)
            .clamp(MIN_SLOT, cap);
        out
    }

    fn counted_alltoallv(&mut self, mut blocks: Vec<Block>) -> Vec<Block> {
        let p = self.nprocs;
        // The block to this rank stays here, uncopied; MPI sees it as empty.
        let own = std::mem::take(&mut blocks[self.pid]);
        let mut send_counts = Vec::with_capacity(p);
        for block in &blocks {
            send_counts.push(self.count(block_len(block), "a block"));
        }
        let mut recv_counts: Vec<Count> = vec![0; p];
        self.comm()
            .all_to_all_into(&send_counts[..], &mut recv_counts[..]);
        let total: usize = send_counts.iter().map(|&c| c as usize).sum();
        // Every rank takes the same branch: the collectives must match.
        let (recv, displs) = if self.send == SendMode::Hindexed {
            self.alltoallw_segments(&blocks, &send_counts, &recv_counts)
        } else {
            let mut send = self.world.pool.take(total);
            send.clear();
            for seg in blocks.iter().flatten() {
                send.extend_from_slice(seg);
            }
            let received = self.alltoallv_known(&send, &send_counts, &recv_counts);
            self.world.pool.give(send);
            received
        };
        drop(blocks);
        let mut out: Vec<Block> = (0..p)
            .map(|k| {
                let (d, c) = (displs[k] as usize, recv_counts[k] as usize);
                if c == 0 {
                    Vec::new()
                } else {
                    vec![recv.slice(d..d + c)]
                }
            })
            .collect();
        out[self.pid] = own;
        out
    }

    /// One `MPI_Alltoallw` that sends every block straight from its
    /// segments (no flattening copy) into one contiguous receive buffer.
    /// The send datatype for destination k is an hindexed type of bytes
    /// over the absolute addresses of block k's segments (adjacent segments
    /// merged), relative to `MPI_BOTTOM`. Returns the received bytes and
    /// their displacements, as [`alltoallv_known`](Self::alltoallv_known).
    fn alltoallw_segments(
        &mut self,
        blocks: &[Block],
        send_counts: &[Count],
        recv_counts: &[Count],
    ) -> (Bytes, Vec<Count>) {
        let p = self.nprocs;
        let recv_displs = self.displacements(recv_counts, "a receive buffer");
        let total: usize = recv_counts.iter().map(|&c| c as usize).sum();
        let mut recv = self.world.pool.take(total);
        // SAFETY: reading an immutable handle that mpi-sys's C shim
        // initialises statically (`MPI_UINT8_T`); MPI is initialised.
        let byte = unsafe { mpi::ffi::RSMPI_UINT8_T };
        let mut types = vec![byte; p];
        let mut lens: Vec<c_int> = Vec::new();
        let mut addrs: Vec<mpi::ffi::MPI_Aint> = Vec::new();
        for (k, block) in blocks.iter().enumerate() {
            if send_counts[k] == 0 {
                continue;
            }
            lens.clear();
            addrs.clear();
            let mut end: *const u8 = std::ptr::null();
            for seg in block.iter().filter(|s| !s.is_empty()) {
                // A segment is no longer than its block, whose length fits a Count.
                let len = seg.len() as c_int;
                match lens.last_mut() {
                    Some(last) if seg.as_ptr() == end => *last += len,
                    _ => {
                        let mut addr: mpi::ffi::MPI_Aint = 0;
                        // SAFETY: `MPI_Get_address` only computes the
                        // address of the location it is given.
                        unsafe { mpi::ffi::MPI_Get_address(seg.as_ptr().cast(), &mut addr) };
                        lens.push(len);
                        addrs.push(addr);
                    }
                }
                end = seg.as_ptr_range().end;
            }
            // SAFETY: `lens` and `addrs` have `lens.len()` entries each;
            // `types[k]` is a valid place for the new handle, committed
            // before use and freed below.
            unsafe {
                mpi::ffi::MPI_Type_create_hindexed(
                    lens.len() as c_int,
                    lens.as_ptr(),
                    addrs.as_ptr(),
                    byte,
                    &mut types[k],
                );
                mpi::ffi::MPI_Type_commit(&mut types[k]);
            }
        }
        let ones: Vec<c_int> = send_counts.iter().map(|&c| c_int::from(c > 0)).collect();
        let zeros: Vec<c_int> = vec![0; p];
        let recv_types = vec![byte; p];
        // SAFETY: the send side is `MPI_BOTTOM` (the null address in OpenMPI
        // and MPICH; mpi-sys exports no constant) with, for each
        // destination k, one element of `types[k]`, whose pieces are the
        // live segments of `blocks[k]` (borrowed for the whole call), or no
        // element. The receive side is `recv`, `total` bytes, in parts of
        // `recv_counts[k]` bytes at `recv_displs[k]`, which tile it. All
        // arrays have p entries; every rank calls this collective on the
        // same communicator with matching counts (exchanged just before).
        unsafe {
            mpi::ffi::MPI_Alltoallw(
                std::ptr::null(),
                ones.as_ptr(),
                zeros.as_ptr(),
                types.as_ptr(),
                recv.as_mut_ptr().cast(),
                recv_counts.as_ptr(),
                recv_displs.as_ptr(),
                recv_types.as_ptr(),
                self.comm().as_raw(),
            );
        }
        for (k, t) in types.iter_mut().enumerate() {
            if send_counts[k] > 0 {
                // SAFETY: `types[k]` was created and committed above and is
                // no longer used by any pending operation.
                unsafe { mpi::ffi::MPI_Type_free(t) };
            }
        }
        (self.world.pool.share(recv), recv_displs)
    }
}

/// Copies the first `out.len()` bytes of `block` into `out`.
fn copy_prefix(block: &[Bytes], out: &mut [u8]) {
    let mut at = 0;
    for seg in block {
        if at == out.len() {
            break;
        }
        let n = seg.len().min(out.len() - at);
        out[at..at + n].copy_from_slice(&seg[..n]);
        at += n;
    }
}

impl Comm for MpiComm {
    fn pid(&self) -> usize {
        self.pid
    }

    fn nprocs(&self) -> usize {
        self.nprocs
    }

    fn allgather(&mut self, row: &[u64]) -> Result<Vec<u64>, Aborted> {
        let mut all = vec![0u64; row.len() * self.nprocs];
        self.comm().all_gather_into(row, &mut all[..]);
        Ok(all)
    }

    fn transpose(&mut self, blocks: Vec<Block>) -> Result<Vec<Block>, Aborted> {
        assert_eq!(blocks.len(), self.nprocs, "one block per destination");
        Ok(match self.mode {
            TransposeMode::Alltoall => self.eager_transpose(blocks),
            TransposeMode::Alltoallv => self.counted_alltoallv(blocks),
        })
    }

    fn alltoallv(&mut self, blocks: Vec<Block>) -> Result<Vec<Block>, Aborted> {
        assert_eq!(blocks.len(), self.nprocs, "one block per destination");
        Ok(self.counted_alltoallv(blocks))
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

fn send_mode() -> Result<SendMode> {
    match std::env::var(SEND_ENV).as_deref() {
        Err(_) | Ok("hindexed") => Ok(SendMode::Hindexed),
        Ok("flatten") => Ok(SendMode::Flatten),
        Ok(other) => Err(Error::new(
            ErrorKind::Config,
            None,
            None,
            format!("{SEND_ENV}={other:?}: expected `hindexed` or `flatten`"),
        )),
    }
}

fn transpose_mode() -> Result<TransposeMode> {
    match std::env::var(TRANSPOSE_ENV).as_deref() {
        Err(_) | Ok("alltoallv") => Ok(TransposeMode::Alltoallv),
        Ok("alltoall") => Ok(TransposeMode::Alltoall),
        Ok(other) => Err(Error::new(
            ErrorKind::Config,
            None,
            None,
            format!("{TRANSPOSE_ENV}={other:?}: expected `alltoall` or `alltoallv`"),
        )),
    }
}

/// Runs `f` as this rank's processor and returns its result (alone).
///
/// A failure anywhere in the job aborts it (see the module docs), so this
/// returns `Ok` or a configuration error found before any communication.
pub(crate) fn run<F, R>(router: Router, f: &F) -> Result<Vec<R>>
where
    F: Fn(&mut Ctx) -> R + Sync,
    R: Send,
{
    let mode = transpose_mode()?;
    let send = send_mode()?;
    let world = world();
    let _serialised = world.run_lock.lock().unwrap_or_else(|e| e.into_inner());
    let comm = MpiComm {
        world,
        pid: world.comm.rank() as usize,
        nprocs: world.comm.size() as usize,
        mode,
        send,
        slot: MIN_SLOT,
    };
    let mut ctx = Ctx::new(Box::new(comm), router, Transport::Mpi);
    match run_processor(&mut ctx, f) {
        Some(result) => Ok(vec![result]),
        // `run_processor` returns `None` only after `ctx.abort`, which under
        // MPI ends the process; keep a clear message should that ever change.
        None => {
            eprintln!("bsp: rank {} aborted", ctx.pid());
            world.comm.abort(1)
        }
    }
}
