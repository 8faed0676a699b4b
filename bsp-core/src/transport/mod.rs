//! Transports: how processors exchange bytes, and how a run's processors
//! are started on them.
//!
//! A router needs very little from a transport: an all-gather of a short row
//! of integers (which doubles as the barrier of every `sync`) and an
//! all-to-all exchange of blocks, plus a way to abort the whole run. [`Comm`] is that crate-private interface; the public
//! [`Transport`] enum names the implementations.
//!
//! Each transport module opens the endpoints of a run ([`Launcher`]); one
//! launcher (`launcher.rs`) starts them, for runs and sessions alike, and
//! gathers the results or the run's first error. Transports know nothing
//! of `Ctx`, routers or the runtime builder; the body (see `launch.rs`)
//! does. A new transport is one module here plus one arm of
//! [`Transport`] and of [`Transport::launcher`].

pub(crate) mod barrier;
#[cfg(test)]
mod conformance;
mod launcher;
#[cfg(feature = "mpi")]
pub(crate) mod mpi;
mod rows;
pub(crate) mod split;
pub(crate) mod threads;
mod waiting;

use std::panic::Location;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::segments::{segments_len, SegmentReader, Segments};
pub(crate) use launcher::{begin, launch, Held, Launcher, OpenRun, Opened, Purpose, Worker};
pub(crate) use rows::{concatenate, Rows};
pub(crate) use split::Group;

/// What a run asks of its transport beyond moving bytes.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RunLimits {
    /// How long a processor may wait in a collective before the run ends
    /// with [`ErrorKind::Timeout`](crate::ErrorKind::Timeout); `None`: for ever.
    pub(crate) sync_timeout: Option<Duration>,
    /// What an MPI rank does with a failure.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub(crate) on_failure: OnFailure,
    /// How a process that ends on a failure words it after `bsp: `
    /// ([`Runtime::with_failure_report`](crate::Runtime::with_failure_report));
    /// `None`: the error's `Display`.
    pub(crate) report: Option<fn(&Error) -> String>,
    /// The threads transport's barrier (`BSP_BARRIER`).
    pub(crate) barrier: barrier::BarrierKind,
    /// What the run runs: MPI ranks compare it at the start of every run,
    /// so that ranks starting different runs at the same time (from
    /// several threads) fail instead of pairing up; threads name it when
    /// processors stuck in their own code end the process.
    pub(crate) program: Program,
}

/// A run's program, as far as the ranks can compare it: the type name of
/// its closure and where the program started it (closures of one function
/// share a type name, so the call site tells them apart).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Program {
    pub(crate) closure: &'static str,
    pub(crate) site: Option<&'static Location<'static>>,
}

impl Program {
    /// The program of closure type `F`, started at the caller's caller
    /// (for `#[track_caller]` entry points).
    #[track_caller]
    pub(crate) fn of<F>() -> Self {
        Program {
            closure: std::any::type_name::<F>(),
            site: Some(Location::caller()),
        }
    }
}

impl std::fmt::Display for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.site {
            Some(site) => write!(f, "{} started at {site}", self.closure),
            None => write!(f, "{}", self.closure),
        }
    }
}

impl RunLimits {
    /// The line a process prints when it ends on `error`.
    pub(crate) fn report_line(&self, error: &Error) -> String {
        match self.report {
            Some(report) => format!("bsp: {}\n", report(error)),
            None => format!("bsp: {error}\n"),
        }
    }
}

/// What an MPI job does when its run fails.
///
/// On threads a failure always comes back from
/// [`Runtime::run`](crate::Runtime::run) as an [`Error`]; under MPI each rank
/// is its own process, and the choice is the program's.
///
/// # Examples
///
/// ```
/// use bsp_core::{OnFailure, Runtime};
///
/// let rt = Runtime::from_env().with_on_failure(OnFailure::Return);
/// assert_eq!(rt.on_failure(), OnFailure::Return);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OnFailure {
    /// The rank that detects the failure prints `bsp: <error>` to standard
    /// error and ends the whole job with `MPI_Abort` (exit status 1). The
    /// default: nothing can be left waiting.
    #[default]
    Abort,
    /// Every rank returns the failure from `run` as the same [`Error`],
    /// agreed at the failing `sync`, so that the program can clean up and
    /// choose its exit status. Costs one extra all-gather (l) in each sync
    /// that communicates. After a [`Timeout`](crate::ErrorKind::Timeout), the
    /// ranks that waited return it, but the job cannot be finalised cleanly
    /// (a rank is missing): its exit ends with `MPI_Abort`.
    Return,
}

impl OnFailure {
    /// The name used in `BSP_ON_FAILURE`: `abort` or `return`.
    pub fn name(self) -> &'static str {
        match self {
            OnFailure::Abort => "abort",
            OnFailure::Return => "return",
        }
    }
}

/// Marker payload used to unwind a processor out of the runtime after the
/// run has been aborted (by another processor's failure or its own).
#[derive(Debug)]
pub(crate) struct Aborted;

/// The blocks of one processor in an exchange, each with the processor it
/// goes to (or, received, came from): pids ascending, each at most once.
/// A processor not listed is sent (or sent) nothing, so an exchange costs
/// what its blocks cost, not p.
pub(crate) type Blocks = Vec<(usize, Segments)>;

/// Total bytes of the blocks listed.
pub(crate) fn blocks_len(blocks: &Blocks) -> u64 {
    blocks.iter().map(|(_, b)| segments_len(b) as u64).sum()
}

/// What became of the blocks offered with an all-gather
/// ([`Comm::allgather_offering`]).
pub(crate) enum Offer {
    /// The transport did not take them: they are the caller's to route.
    Kept(Blocks),
    /// The transport published them beside the row; the caller says with
    /// [`Comm::take_offered`] whether they are exchanged.
    Published,
}

/// What a transport can do, as the routers and the superstep protocol ask
/// it: mechanisms only; what to make of them is theirs to decide.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Capabilities {
    /// Whether other processors read this processor's memory in place
    /// (threads: a lent coarray's bytes are read by the receivers, maybe
    /// after this processor's collectives have returned). When not (MPI:
    /// a collective returns once its send buffers are free), lent memory
    /// is this processor's again as soon as its routing has returned, and
    /// no barrier is needed before taking it back.
    pub(crate) shares_memory: bool,
    /// Whether all processors of the run are on one node, sharing its
    /// memory (under MPI, a large message is then copied once, by the
    /// receiver, out of the sender's memory, as on threads).
    pub(crate) one_node: bool,
    /// Whether [`Comm::exchange_into`] writes into the landing regions as
    /// bytes arrive (MPI), rather than copying out of a receive buffer,
    /// and every collective costs a latency, so that sparing one is worth
    /// a slot in the sync rows: what makes a placed routing pay.
    pub(crate) scatter_receive: bool,
    /// Whether [`Comm::allgather_offering`] publishes the offered blocks
    /// beside the row, so that a direct exchange decided from the rows
    /// costs no second collective (threads).
    pub(crate) publishes_with_rows: bool,
    /// The most bytes a processor may offer to all others together for
    /// [`Comm::allgather_offering`] to publish them, once it has seen
    /// them (under MPI the mailboxes grow to hold them, up to a bound);
    /// 0 where nothing is published. A superstep this small is not
    /// placed: its blocks travel beside the rows.
    pub(crate) publishes_up_to: usize,
    /// Whether a large coarray's local part should be memory that the
    /// node's other processes map (`shared_memory.rs`), because
    /// [`Comm::exchange_into`] then lets the senders copy their bytes
    /// straight into landing regions that lie in it (MPI on one node).
    pub(crate) maps_memory: bool,
}

/// The receive side of [`Comm::exchange_into`]: for each sender, the
/// pieces of memory (address, length) its bytes land in, in order. Made
/// empty (nothing from any processor).
#[derive(Default)]
pub(crate) struct Scatter {
    pub(crate) from: Vec<(usize, Vec<(*const u8, usize)>)>,
    /// Whether this exchange repeats the communicator's previous
    /// `exchange_into`: every processor's pieces for every sender are
    /// those it gave then, in the same memory, and every processor sends
    /// every other as many bytes as then. Every processor passes the same
    /// value; a transport may then write where it learned to then,
    /// without asking again, and so without waiting for the receiver:
    /// every processor must have passed a collective of the communicator
    /// since it last touched its pieces (the sync's rows).
    #[cfg_attr(not(all(feature = "mpi", target_os = "linux")), allow(dead_code))]
    pub(crate) repeats: bool,
}

impl Scatter {
    /// What `src` sends lands in `pieces` (address and length), in order.
    pub(crate) fn from(&mut self, src: usize, pieces: &[(*const u8, usize)]) {
        let pieces: Vec<_> = pieces.iter().copied().filter(|&(_, len)| len > 0).collect();
        if !pieces.is_empty() {
            self.from.push((src, pieces));
        }
    }
}

/// The blocks listed in `blocks`, one per processor of `p` (empty where
/// none is listed).
pub(crate) fn dense(blocks: Blocks, p: usize) -> Vec<Segments> {
    let mut all = vec![Segments::new(); p];
    for (pid, block) in blocks {
        all[pid] = block;
    }
    all
}

/// The non-empty blocks of `all` (one per processor), listed.
pub(crate) fn listed(all: Vec<Segments>) -> Blocks {
    all.into_iter()
        .enumerate()
        .filter(|(_, block)| !block.is_empty())
        .collect()
}

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
    fn allgather(&mut self, row: &[u64]) -> Result<Rows, Aborted>;
    /// Takes back `rows` that an all-gather returned and nobody reads
    /// any more, for a later all-gather to write into (it then allocates
    /// none). The default drops them.
    fn recycle_rows(&mut self, rows: Rows) {
        drop(rows);
    }
    /// An all-gather of `row` that also offers this processor's `blocks`
    /// for an exchange the processors may decide on from the rows. A
    /// transport that [`publishes_with_rows`](Capabilities::publishes_with_rows)
    /// makes them readable by their receivers within the same collective
    /// and answers [`Offer::Published`]; every processor of the
    /// collective must then call [`take_offered`](Comm::take_offered)
    /// before its next one. The default all-gathers and hands the blocks
    /// back.
    fn allgather_offering(
        &mut self,
        row: &[u64],
        blocks: Blocks,
    ) -> Result<(Rows, Offer), Aborted> {
        Ok((self.allgather(row)?, Offer::Kept(blocks)))
    }
    /// After an all-gather that answered [`Offer::Published`]: with
    /// `exchange`, the blocks the others offered to this processor, as
    /// [`exchange`](Comm::exchange) returns them; without, this processor's
    /// own blocks, back. Every processor of the collective passes the same
    /// `exchange`. Costs no collective.
    fn take_offered(&mut self, exchange: bool) -> Blocks {
        let _ = exchange;
        unreachable!("bsp: this transport publishes no offered blocks")
    }
    /// All-to-all exchange of blocks of any sizes: each listed block goes
    /// to its processor; the result lists the non-empty blocks received,
    /// by sender. `expected`, when the caller knows it, is the length of
    /// the block from each processor (p entries; the entry for this
    /// processor is not used), which spares a transport that needs the
    /// lengths before the data (MPI) an exchange of counts. Every
    /// processor passes it, or none.
    fn exchange(&mut self, blocks: Blocks, expected: Option<&[u64]>) -> Result<Blocks, Aborted>;
    /// An exchange with landing regions: sends each listed block to its
    /// processor, as [`exchange`](Comm::exchange) does, and writes what
    /// each sender sends straight into the memory `into` lists for it, in
    /// order. Every processor knows beforehand what each sends it, so no
    /// counts travel. The default receives the blocks as bytes and copies
    /// them into place; a transport with
    /// [`scatter_receive`](Capabilities::scatter_receive) receives into
    /// place.
    ///
    /// # Safety
    ///
    /// The pieces of `into` must be valid for writes, must not overlap,
    /// and must not be read or written by anything else until this
    /// returns; the pieces for each sender must add up to exactly the
    /// bytes it sends here (and a sender not in `into` sends nothing).
    /// Where `into.repeats`, they must be the pieces of the previous call,
    /// in memory that has stayed mapped where it was since.
    /// Every processor calls this at the same point of the protocol.
    unsafe fn exchange_into(
        &mut self,
        blocks: &[(usize, Segments)],
        into: Scatter,
    ) -> Result<(), Aborted> {
        let mut expected = vec![0u64; self.nprocs()];
        let mut landing = vec![None; self.nprocs()];
        for (i, (src, pieces)) in into.from.iter().enumerate() {
            expected[*src] = pieces.iter().map(|&(_, len)| len as u64).sum();
            landing[*src] = Some(i);
        }
        let received = self.exchange(blocks.to_vec(), Some(&expected))?;
        for (src, block) in received {
            let Some(i) = landing[src] else {
                continue;
            };
            let pieces = &into.from[i].1;
            let mut reader = SegmentReader::new(&block);
            for &(at, len) in pieces {
                // SAFETY: the piece is valid for writes of `len` bytes and
                // touched by nothing else (this function's contract).
                let piece = unsafe { std::slice::from_raw_parts_mut(at.cast_mut(), len) };
                assert!(
                    reader.read_into(piece),
                    "bsp: a sender sent fewer bytes than its landing"
                );
            }
        }
        Ok(())
    }
    /// Where every processor's `part` (the address and byte length of one
    /// region of its memory, each processor its own) lies in this
    /// process, so that this processor can write into the others' parts
    /// itself: the addresses in pid order (this processor's own as given),
    /// where every part lies in memory that this process can map, and
    /// `None` otherwise (every processor answers alike). A transport
    /// whose processors share one address space, or cannot map each
    /// other's memory, answers `None` without a collective; otherwise
    /// every processor calls this at the same point of the protocol.
    ///
    /// The addresses stay valid while the parts' owners keep them where
    /// they are; what may be written there, and when, is the caller's
    /// protocol (`put_direct`'s claims and barriers).
    fn map_parts(&mut self, part: (*const u8, usize)) -> Result<Option<Vec<usize>>, Aborted> {
        let _ = part;
        Ok(None)
    }
    /// What this transport can do, for the policy above it (see
    /// [`Capabilities`]); fixed for the communicator's life (the context
    /// reads it once).
    fn capabilities(&self) -> Capabilities;
    /// The superstep the coming collectives belong to, for error reports
    /// (a timeout names it).
    fn set_superstep(&mut self, superstep: usize);
    /// Whether a failure found by one processor must be agreed with the
    /// others through the superstep protocol before [`abort`](Comm::abort)
    /// (MPI with [`OnFailure::Return`]); otherwise `abort` itself releases
    /// or ends everyone.
    fn agrees_on_failure(&self) -> bool {
        false
    }
    /// Ends the run with `error`: records it (the first error wins), releases
    /// every processor waiting in a collective and unwinds this one.
    fn abort(&mut self, error: Error) -> !;
    /// The endpoint of this processor in its `group` of a split, a
    /// communicator of its own among the group's members (see
    /// `split.rs`). Every processor of this communicator calls it at the
    /// same point, after agreeing on the groups; `superstep` is this
    /// communicator's, for errors raised inside the group. A failure
    /// inside the group ends the whole run.
    fn split(&mut self, group: &Group, superstep: usize) -> Result<Box<dyn Comm>, Aborted>;
    /// The run's error, once recorded where this processor can read it
    /// (threads: by any processor; MPI in return mode: once agreed).
    fn recorded_failure(&self) -> Option<Error> {
        None
    }
}

/// What a transport runs on each processor: given the processor's endpoint,
/// its result, or `None` once the run has been aborted (the error is then
/// recorded through [`Comm::abort`]).
pub(crate) trait Body<R>: Fn(Box<dyn Comm>) -> Option<R> + Sync {}

impl<R, F: Fn(Box<dyn Comm>) -> Option<R> + Sync> Body<R> for F {}

/// The transport a [`Runtime`](crate::Runtime) runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Transport {
    /// One OS thread per processor in this process (the default).
    Threads,
    /// One MPI rank per processor (cargo feature `mpi`; start with `mpirun`).
    #[cfg(feature = "mpi")]
    #[cfg_attr(docsrs, doc(cfg(feature = "mpi")))]
    Mpi,
}

impl Transport {
    /// The name used in statistics and benchmark output (`threads`, `mpi`).
    pub fn name(self) -> &'static str {
        self.launcher().name()
    }

    /// Whether the program chooses the number of processors (threads), or
    /// the launcher does (`mpirun -np`).
    pub(crate) fn program_chooses_procs(self) -> bool {
        self.launcher().program_chooses_procs()
    }

    /// The transports this process can run on: threads always; MPI where
    /// it is compiled in and the process was started by `mpirun`.
    #[cfg(test)]
    pub(crate) fn registered() -> Vec<Transport> {
        let threads = [Transport::Threads];
        #[cfg(feature = "mpi")]
        if launched_by_mpirun() {
            return [threads[0], Transport::Mpi].to_vec();
        }
        threads.to_vec()
    }

    /// How this transport opens a run: the one registration of each
    /// transport module.
    pub(crate) fn launcher(self) -> &'static dyn Launcher {
        match self {
            Transport::Threads => &threads::Threads,
            #[cfg(feature = "mpi")]
            Transport::Mpi => &mpi::Mpi,
        }
    }
}

/// Whether this process was started by `mpirun` / `mpiexec` (OpenMPI, MPICH
/// with Hydra, or any PMIx launcher), judged from the launcher's
/// environment. [`Runtime::from_env`](crate::Runtime::from_env) picks MPI when this holds and the
/// binary has the `mpi` feature.
///
/// # Examples
///
/// ```
/// if !bsp_core::launched_by_mpirun() {
///     assert_eq!(bsp_core::Runtime::from_env().transport(), bsp_core::Transport::Threads);
/// }
/// ```
pub fn launched_by_mpirun() -> bool {
    [
        "OMPI_COMM_WORLD_SIZE",
        "PMI_SIZE",
        "PMIX_RANK",
        "MPI_LOCALNRANKS",
    ]
    .iter()
    .any(|v| std::env::var_os(v).is_some())
}

/// The message of a [`Timeout`](crate::ErrorKind::Timeout) error: who has
/// not arrived after how long.
pub(crate) fn timeout_message(missing: &[usize], nprocs: usize, limit: Duration) -> String {
    const SHOWN: usize = 16;
    let mut names: Vec<String> = missing.iter().take(SHOWN).map(|q| q.to_string()).collect();
    if missing.len() > SHOWN {
        names.push(format!("and {} more", missing.len() - SHOWN));
    }
    let who = match missing.len() {
        1 => format!("processor {} has", names[0]),
        _ => format!("processors {} have", names.join(", ")),
    };
    format!(
        "waited {:.3} s at sync; {who} not arrived ({} of {nprocs} processors missing). \
         A processor may be stuck in its own code, or waiting for something that \
         never comes; the limit is set by Runtime::with_sync_timeout (BSP_SYNC_TIMEOUT for Runtime::from_env)",
        limit.as_secs_f64(),
        missing.len()
    )
}
