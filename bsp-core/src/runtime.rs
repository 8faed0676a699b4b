//! Launching a BSP program: the runtime builder and `run`.

mod probe;

use std::path::PathBuf;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::checkpoint;
use crate::ctx::Ctx;
use crate::env::{
    CHECKPOINT_DIR_ENV, MACHINE_CACHE_ENV, MACHINE_ENV, ON_FAILURE_ENV, PROCS_ENV, PROFILE_ENV,
    ROUTER_ENV, STATS_MEMORY_ENV, SYNC_TIMEOUT_ENV, TRACE_FILE_ENV,
};
use crate::error::{Error, ErrorKind, Result};
use crate::launch::{self, Setup};
use crate::machine::Machine;
use crate::outcome::Outcome;
use crate::profile::Profile;
use crate::router::{Placing, Router};
use crate::scope::Scope;
use crate::stats_log::STATS_MEMORY;
use crate::transport::barrier::BarrierKind;
use crate::transport::{self, launched_by_mpirun, Comm, OnFailure, Program, RunLimits, Transport};

/// Chooses the transport, processor count and router of a BSP run.
///
/// # Examples
///
/// ```
/// use bsp_core::{Router, Runtime};
///
/// let rt = Runtime::threads(4).with_router(Router::Direct);
/// assert_eq!((rt.nprocs(), rt.router()), (4, Router::Direct));
/// let pids = rt.run(|ctx| ctx.pid()).unwrap();
/// assert_eq!(pids.all(), Some(&vec![0, 1, 2, 3][..]));
/// assert_eq!(pids.get(2), Some(&2)); // processor 2's result
/// ```
#[derive(Clone, Debug)]
pub struct Runtime {
    transport: Transport,
    procs: usize,
    router: Router,
    /// `None`: processors wait for ever.
    sync_timeout: Option<Duration>,
    on_failure: OnFailure,
    stats_memory: usize,
    profile: Profile,
    machine: Option<Machine>,
    /// Where measured machine parameters are cached.
    machine_cache: MachineCache,
    /// Whether the machine is probed afresh, ignoring the cache
    /// (`BSP_MACHINE=probe`).
    reprobe: bool,
    /// The threads transport's barrier (`BSP_BARRIER`, for measurement).
    barrier: BarrierKind,
    /// Where checkpoints go ([`Runtime::with_checkpoint_dir`]).
    checkpoint_dir: Option<PathBuf>,
    checkpoints_kept: usize,
    config_error: Option<String>,
    /// Set by [`Runtime::with_failure_report`].
    report: Option<fn(&Error) -> String>,
}

/// Where a runtime caches the machine parameters that [`Router::Auto`]
/// measures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum MachineCache {
    /// `$XDG_CACHE_HOME/bsp/machine`, else `$HOME/.cache/bsp/machine`.
    Standard,
    Off,
    At(PathBuf),
}

impl MachineCache {
    /// The file, if any.
    pub(crate) fn file(&self) -> Option<PathBuf> {
        match self {
            MachineCache::Off => None,
            MachineCache::At(path) => Some(path.clone()),
            MachineCache::Standard => std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
                .map(|dir| dir.join("bsp").join("machine")),
        }
    }
}

/// Reads a time limit in seconds, as `BSP_SYNC_TIMEOUT` gives it.
fn parse_seconds(v: &str) -> Option<Duration> {
    let secs: f64 = v.trim().parse().ok()?;
    Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|d| !d.is_zero())
}

/// Reads a byte count, as `BSP_STATS_MEMORY` gives it: a number, then
/// optionally `K`, `M` or `G` (KiB, MiB, GiB).
fn parse_bytes(v: &str) -> Option<usize> {
    let v = v.trim();
    let (number, shift) = match v.char_indices().last()? {
        (at, 'K' | 'k') => (&v[..at], 10),
        (at, 'M' | 'm') => (&v[..at], 20),
        (at, 'G' | 'g') => (&v[..at], 30),
        _ => (v, 0),
    };
    number.trim().parse::<usize>().ok()?.checked_mul(1 << shift)
}

impl Runtime {
    /// `p` processors on threads of this process, every setting at its
    /// default (the router [`Router::Auto`], no sync time limit, 4 MiB of
    /// statistics, no profile), changed by the `with_*` builders. It reads
    /// no environment variable: [`from_env`](Runtime::from_env) and
    /// [`run`](crate::run) do.
    ///
    /// # Examples
    ///
    /// ```
    /// use bsp_core::{Profile, Router, Runtime};
    ///
    /// // Whatever BSP_ROUTER or BSP_PROFILE say:
    /// let rt = Runtime::threads(4);
    /// assert_eq!((rt.router(), rt.profile()), (Router::Auto, &Profile::Off));
    /// ```
    pub fn threads(p: usize) -> Self {
        Runtime::on(Transport::Threads, p)
    }

    /// `p` processors on `transport`, with every setting at its default.
    fn on(transport: Transport, p: usize) -> Self {
        Runtime {
            transport,
            procs: p,
            router: Router::default(),
            sync_timeout: None,
            on_failure: OnFailure::Abort,
            stats_memory: STATS_MEMORY,
            profile: Profile::Off,
            machine: None,
            machine_cache: MachineCache::Standard,
            reprobe: false,
            barrier: BarrierKind::default(),
            checkpoint_dir: None,
            checkpoints_kept: 2,
            config_error: None,
            report: None,
        }
    }

    /// One processor per MPI rank of the job this process belongs to
    /// (cargo feature `mpi`); start the program with `mpirun -np P`.
    ///
    /// Initialises MPI if the program has not (see the transport's
    /// life-cycle notes in the crate docs of the `mpi` feature): once per
    /// process, finalised at exit. [`nprocs`](Runtime::nprocs) is the size
    /// of the world communicator. Started without `mpirun`, the program runs
    /// as a single rank (p = 1).
    ///
    /// Under MPI, the [`Outcome`] of [`run`](Runtime::run) holds the local
    /// rank's result ([`run_all`](Runtime::run_all) gathers every rank's),
    /// and by default a failure on any rank is printed by the rank that
    /// detects it and ends the whole job with `MPI_Abort` (non-zero exit)
    /// instead of returning an error; see [`on_failure`](Runtime::on_failure)
    /// for the alternative.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #[cfg(feature = "mpi")] {
    /// let rt = bsp_core::Runtime::mpi();
    /// let out = rt.run(|ctx| ctx.pid()).unwrap();
    /// assert_eq!(*out.local(), out.pids().start); // this rank's result
    /// # }
    /// ```
    #[cfg(feature = "mpi")]
    #[cfg_attr(docsrs, doc(cfg(feature = "mpi")))]
    pub fn mpi() -> Self {
        Runtime::on(Transport::Mpi, transport::mpi::world_size())
    }

    /// The runtime the environment asks for: MPI when this binary was built
    /// with feature `mpi` and started by `mpirun`, threads otherwise, with
    /// `BSP_PROCS` processors (default: the number of cores), the router
    /// named by `BSP_ROUTER` (`auto`, the default, `two-phase`, `direct` or
    /// `transportation`), and every other setting from its variable (see
    /// [`env`](crate::env): `BSP_SYNC_TIMEOUT`, `BSP_ON_FAILURE`,
    /// `BSP_STATS_MEMORY`, `BSP_PROFILE`, `BSP_TRACE_FILE`, `BSP_MACHINE`,
    /// `BSP_MACHINE_CACHE`, `BSP_BARRIER`). The `with_*` builders
    /// override them.
    ///
    /// A malformed variable is reported by [`run`](Runtime::run) as an
    /// [`ErrorKind::Config`] error, and so is a start by `mpirun` of a binary
    /// built without the `mpi` feature (every rank would run the whole
    /// program on its own threads).
    pub fn from_env() -> Self {
        #[cfg(feature = "mpi")]
        if launched_by_mpirun() {
            return Runtime::mpi().router_from_env().settings_from_env();
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut rt = Runtime::threads(cores).refuse_mpirun_without_mpi();
        if let Ok(v) = std::env::var(PROCS_ENV) {
            match v.trim().parse() {
                Ok(p) => rt.procs = p,
                Err(_) => rt.misconfigured(format!("{PROCS_ENV}={v:?} is not a processor count")),
            }
        }
        rt.router_from_env().settings_from_env()
    }

    /// The runtime of [`run`](crate::run)`(p, f)`: `p` threads, or the MPI
    /// world when started by `mpirun`; an error (at `run`) where the world
    /// has another size, or the binary cannot run on MPI. The settings
    /// other than the processor count and router come from the
    /// environment, as for [`from_env`](Runtime::from_env).
    pub(crate) fn launcher(p: usize) -> Self {
        #[cfg(feature = "mpi")]
        if launched_by_mpirun() {
            let mut rt = Runtime::mpi();
            if rt.procs != p {
                rt.misconfigured(format!(
                    "bsp::run({p}, …) was started by mpirun with {} ranks; start it with \
                     `mpirun -np {p}`, or use Runtime::from_env() to run on as many \
                     processors as the launcher gives",
                    rt.procs
                ));
            }
            return rt.settings_from_env();
        }
        Runtime::threads(p)
            .refuse_mpirun_without_mpi()
            .settings_from_env()
    }

    /// Records the first configuration error, which [`run`](Runtime::run)
    /// reports.
    fn misconfigured(&mut self, msg: String) {
        self.config_error.get_or_insert(msg);
    }

    /// Marks the runtime as misconfigured when this process was started by
    /// `mpirun` but has no MPI transport.
    fn refuse_mpirun_without_mpi(mut self) -> Self {
        if !cfg!(feature = "mpi") && launched_by_mpirun() {
            self.misconfigured(
                "this process was started by mpirun, but bsp was built without the `mpi` \
                 feature: every rank would repeat the whole run on its own threads. Build \
                 with `--features mpi`, or run it without mpirun"
                    .to_owned(),
            );
        }
        self
    }

    fn router_from_env(mut self) -> Self {
        if let Ok(v) = std::env::var(ROUTER_ENV) {
            match v.parse() {
                Ok(r) => self.router = r,
                Err(e) => self.misconfigured(format!("{ROUTER_ENV}: {e}")),
            }
        }
        self
    }

    /// Every setting but the processor count and router, from its
    /// environment variable where set.
    fn settings_from_env(mut self) -> Self {
        fn var(name: &str) -> Option<String> {
            std::env::var(name).ok()
        }
        if let Some(v) = var(SYNC_TIMEOUT_ENV) {
            match parse_seconds(&v) {
                Some(limit) => self.sync_timeout = Some(limit),
                None => self.misconfigured(format!(
                    "{SYNC_TIMEOUT_ENV}={v:?} is not a positive number of seconds"
                )),
            }
        }
        if let Some(v) = var(ON_FAILURE_ENV) {
            match v.trim() {
                "abort" => self.on_failure = OnFailure::Abort,
                "return" => self.on_failure = OnFailure::Return,
                _ => self.misconfigured(format!(
                    "{ON_FAILURE_ENV}={v:?}: expected `abort` or `return`"
                )),
            }
        }
        if let Some(v) = var(STATS_MEMORY_ENV) {
            match parse_bytes(&v) {
                Some(bytes) => self.stats_memory = bytes,
                None => self.misconfigured(format!(
                    "{STATS_MEMORY_ENV}={v:?} is not a number of bytes (e.g. 64M)"
                )),
            }
        }
        match var(PROFILE_ENV).as_deref() {
            Some("1") => self.profile = Profile::Table,
            Some("trace") => {
                let path = var(TRACE_FILE_ENV).unwrap_or_else(|| "bsp-trace.json".into());
                self.profile = Profile::Trace(path.into());
            }
            _ => {}
        }
        match var(MACHINE_ENV).as_deref() {
            None => {}
            Some("probe") => self.reprobe = true,
            Some(text) => match crate::machine::parse(text) {
                Ok(machine) => self.machine = Some(machine),
                Err(msg) => self.misconfigured(format!("{MACHINE_ENV}: {msg}")),
            },
        }
        match std::env::var_os(MACHINE_CACHE_ENV) {
            None => {}
            Some(v) if v == "off" || v.is_empty() => self.machine_cache = MachineCache::Off,
            Some(v) => self.machine_cache = MachineCache::At(v.into()),
        }
        if let Some(dir) = std::env::var_os(CHECKPOINT_DIR_ENV).filter(|d| !d.is_empty()) {
            self.checkpoint_dir = Some(dir.into());
        }
        match BarrierKind::from_env() {
            Ok(kind) => self.barrier = kind,
            Err(msg) => self.misconfigured(msg),
        }
        if let Err(e) = Placing::from_env() {
            self.misconfigured(e.message().to_owned());
        }
        self
    }

    /// Sets the router (default [`Router::Auto`]).
    pub fn with_router(mut self, router: Router) -> Self {
        self.router = router;
        self
    }

    /// Gives the machine's parameters, for [`Router::Auto`] and the
    /// predicted costs in the statistics, instead of finding them with
    /// [`Machine::of`] when the run starts.
    pub fn with_machine(mut self, machine: Machine) -> Self {
        self.machine = Some(machine);
        self
    }

    /// Sets the processor count. Ignored under MPI, where `mpirun -np`
    /// decides it.
    pub fn with_procs(mut self, p: usize) -> Self {
        if self.transport.program_chooses_procs() {
            self.procs = p;
        }
        self
    }

    /// Bounds how long a processor waits at a `sync` (or at the end of its
    /// closure) for the others: past `limit`, the run ends with an
    /// [`ErrorKind::Timeout`] error naming the processors that had not
    /// arrived and the superstep. Without it, processors wait for ever
    /// ([`from_env`](Runtime::from_env) reads the limit from
    /// `BSP_SYNC_TIMEOUT`, in seconds, decimals allowed).
    ///
    /// A processor that is still in its own code when the run fails unwinds
    /// when it next calls bsp. On threads, if some are still away after
    /// the limit again (at least 5 s), they cannot be stopped safely: the
    /// process prints the error and exits with status 1. Under MPI the
    /// job ends (see [`OnFailure`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use bsp_core::{ErrorKind, Runtime};
    ///
    /// let err = Runtime::threads(3)
    ///     .with_sync_timeout(Duration::from_millis(200))
    ///     .run(|ctx| {
    ///         if ctx.pid() == 2 {
    ///             std::thread::sleep(Duration::from_millis(600)); // late
    ///         }
    ///         ctx.sync();
    ///     })
    ///     .unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::Timeout);
    /// assert_eq!((err.pid(), err.superstep()), (Some(2), Some(0)));
    /// ```
    ///
    /// # Cost
    ///
    /// On threads, nothing measurable. Under MPI, each sync's all-gather
    /// becomes p − 1 sends and receives per rank, polled with backoff (so a
    /// waiting rank does not spin a core).
    pub fn with_sync_timeout(mut self, limit: Duration) -> Self {
        self.sync_timeout = Some(limit);
        self
    }

    /// The sync time limit ([`with_sync_timeout`](Runtime::with_sync_timeout));
    /// `None`: processors wait for ever.
    pub fn sync_timeout(&self) -> Option<Duration> {
        self.sync_timeout
    }

    /// Chooses what an MPI job does when the run fails (default
    /// [`OnFailure::Abort`]; [`from_env`](Runtime::from_env) reads
    /// `BSP_ON_FAILURE`). On threads a failure always comes back from
    /// `run` as an [`Error`].
    pub fn with_on_failure(mut self, mode: OnFailure) -> Self {
        self.on_failure = mode;
        self
    }

    /// What an MPI job does when the run fails
    /// ([`with_on_failure`](Runtime::with_on_failure)).
    pub fn on_failure(&self) -> OnFailure {
        self.on_failure
    }

    /// Sets the memory budget, in bytes, of each processor's statistics
    /// history ([`Ctx::stats`], [`Profile`]); the default is 4 MiB.
    /// ([`from_env`](Runtime::from_env) reads `BSP_STATS_MEMORY`: bytes, or
    /// with a `K`, `M` or `G` suffix, such as `64M`.)
    ///
    /// A processor keeps the sync rows of as many of the most recent
    /// supersteps as fit: p · (30 + 2p) words a superstep up to 64
    /// processors, 30p beyond, so 4 MiB keep about 6,900 supersteps at
    /// p = 2, 1,390 at p = 8 and 51 at p = 64. The last superstep is
    /// always kept; [`Stats::dropped_supersteps`](crate::Stats::dropped_supersteps)
    /// counts the older ones dropped. On threads the processors share
    /// these rows, so the process holds about one budget whatever p;
    /// under MPI each rank holds one. The supersteps kept depend only on
    /// p and the budget, so every processor and transport keeps the same.
    ///
    /// # Examples
    ///
    /// ```
    /// let out = bsp_core::Runtime::threads(2)
    ///     .with_stats_memory(0) // the last superstep only
    ///     .run(|ctx| {
    ///         for _ in 0..10 {
    ///             ctx.sync();
    ///         }
    ///         ctx.stats()
    ///     })?;
    /// let stats = out.root().unwrap();
    /// // Supersteps 0 to 8 are complete; 8 is kept.
    /// assert_eq!(stats.supersteps[0].superstep, 8);
    /// assert_eq!((stats.supersteps.len(), stats.dropped_supersteps), (1, 8));
    /// # Ok::<(), bsp_core::Error>(())
    /// ```
    ///
    /// # Cost
    ///
    /// Nothing in a sync, which keeps its all-gather's result as it is and
    /// lets go of the oldest one kept.
    pub fn with_stats_memory(mut self, bytes: usize) -> Self {
        self.stats_memory = bytes;
        self
    }

    /// The statistics history's budget in bytes
    /// ([`with_stats_memory`](Runtime::with_stats_memory)).
    pub fn stats_memory(&self) -> usize {
        self.stats_memory
    }

    /// What processor 0 reports about the run's supersteps when it ends:
    /// nothing (the default), the table on standard error, or a trace file
    /// for ui.perfetto.dev ([`from_env`](Runtime::from_env) reads
    /// `BSP_PROFILE=1` or `BSP_PROFILE=trace` with `BSP_TRACE_FILE`).
    ///
    /// # Examples
    ///
    /// ```
    /// use bsp_core::{Profile, Runtime};
    ///
    /// let rt = Runtime::threads(2).with_profile(Profile::Table);
    /// rt.run(|ctx| ctx.sync())?; // prints a table of one superstep
    /// # Ok::<(), bsp_core::Error>(())
    /// ```
    pub fn with_profile(mut self, profile: Profile) -> Self {
        self.profile = profile;
        self
    }

    /// The profile a run reports ([`with_profile`](Runtime::with_profile)).
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// Where [`Router::Auto`] caches the machine parameters it measures,
    /// so that a probe (3 × 16 supersteps of each router, the first run of
    /// a processor count) happens once per machine, not per process.
    /// `None`: no file; the parameters are measured once per process. By
    /// default, `$XDG_CACHE_HOME/bsp/machine`, else
    /// `$HOME/.cache/bsp/machine`; [`from_env`](Runtime::from_env) reads
    /// `BSP_MACHINE_CACHE` (a path, or `off`). Each line of the file names
    /// the host, transport, p and build it was measured for; deleting the
    /// file makes the next run measure afresh. A runtime given its
    /// parameters ([`with_machine`](Runtime::with_machine)) or another
    /// router neither reads nor writes it.
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = bsp_core::Runtime::threads(2).with_machine_cache(None);
    /// assert_eq!(rt.machine_cache(), None);
    /// ```
    pub fn with_machine_cache(mut self, file: Option<PathBuf>) -> Self {
        self.machine_cache = match file {
            Some(path) => MachineCache::At(path),
            None => MachineCache::Off,
        };
        self
    }

    /// The machine cache file, if any
    /// ([`with_machine_cache`](Runtime::with_machine_cache)).
    pub fn machine_cache(&self) -> Option<PathBuf> {
        self.machine_cache.file()
    }

    /// The directory where [`Ctx::checkpoint`] saves the run's state and
    /// [`Ctx::restore`] finds it (none by default: `checkpoint` ends the
    /// run with a configuration error, `restore` returns `None`).
    /// [`from_env`](Runtime::from_env) reads `BSP_CHECKPOINT_DIR`. Under
    /// MPI every rank must see the same directory (a shared filesystem).
    ///
    /// # Examples
    ///
    /// ```
    /// let dir = std::env::temp_dir().join("bsp-doc-checkpoint-dir");
    /// let rt = bsp_core::Runtime::threads(2).with_checkpoint_dir(&dir);
    /// assert_eq!(rt.checkpoint_dir(), Some(dir.as_path()));
    /// ```
    pub fn with_checkpoint_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.checkpoint_dir = Some(dir.into());
        self
    }

    /// The checkpoint directory, if any
    /// ([`with_checkpoint_dir`](Runtime::with_checkpoint_dir)).
    pub fn checkpoint_dir(&self) -> Option<&std::path::Path> {
        self.checkpoint_dir.as_deref()
    }

    /// How many complete checkpoints are kept (default 2, at least 1): a
    /// new one removes the files of the oldest beyond it.
    pub fn with_checkpoints_kept(mut self, kept: usize) -> Self {
        self.checkpoints_kept = kept.max(1);
        self
    }

    /// How many complete checkpoints are kept
    /// ([`with_checkpoints_kept`](Runtime::with_checkpoints_kept)).
    pub fn checkpoints_kept(&self) -> usize {
        self.checkpoints_kept
    }

    /// Whether the machine is measured afresh rather than read from the
    /// cache (`BSP_MACHINE=probe`).
    pub(crate) fn reprobes(&self) -> bool {
        self.reprobe
    }

    /// The machine's parameters, where given
    /// ([`with_machine`](Runtime::with_machine), or `BSP_MACHINE` for
    /// [`from_env`](Runtime::from_env)); `None`: [`Router::Auto`] finds
    /// them with [`Machine::of`] when a run starts.
    pub fn machine(&self) -> Option<Machine> {
        self.machine
    }

    /// How a process that has to end on a failure words the error it
    /// prints to standard error, after `bsp: ` (default: the error's
    /// `Display`, `processor 1, superstep 2: <kind>: <message>`). Such a
    /// process is an MPI rank under [`OnFailure::Abort`], or the threads
    /// transport when a processor cannot be stopped after a sync timeout;
    /// everywhere else the error comes back from `run` or the
    /// [`Session`](crate::Session). For layers that speak another API's
    /// language: the BSPlib layer names the C functions involved.
    ///
    /// # Examples
    ///
    /// ```
    /// fn terse(e: &bsp_core::Error) -> String {
    ///     format!("{:?} on processor {:?}", e.kind(), e.pid())
    /// }
    /// let rt = bsp_core::Runtime::threads(2).with_failure_report(terse);
    /// assert!(rt.run(|ctx| ctx.pid()).is_ok());
    /// ```
    pub fn with_failure_report(mut self, report: fn(&Error) -> String) -> Self {
        self.report = Some(report);
        self
    }

    /// What every processor of a run of `program` starts with, settled
    /// before the run starts (the machine probed where [`Router::Auto`]
    /// needs it): for [`run`](Runtime::run) and sessions alike.
    pub(crate) fn prepare(&self, program: Program) -> Result<Setup> {
        if let Some(msg) = &self.config_error {
            return Err(Error::new(ErrorKind::Config, None, None, msg.clone()));
        }
        let limits = RunLimits {
            sync_timeout: self.sync_timeout,
            on_failure: self.on_failure,
            report: self.report,
            barrier: self.barrier,
            program,
        };
        let stats_memory = self.stats_memory;
        let machine = match (self.machine, self.router) {
            (None, Router::Auto) => Some(Machine::of(self)?),
            (given, _) => given,
        };
        Ok(Setup {
            limits,
            router: self.router,
            machine,
            transport: self.transport,
            scope: Scope::run(),
            stats_memory,
            profile: self.profile.clone(),
            checkpoints: self.checkpoint_dir.clone().map(|dir| checkpoint::Place {
                dir,
                kept: self.checkpoints_kept,
            }),
        })
    }

    /// The processor count (under MPI, the size of the world communicator).
    pub fn nprocs(&self) -> usize {
        self.procs
    }

    /// The chosen transport.
    pub fn transport(&self) -> Transport {
        self.transport
    }

    /// The chosen router.
    pub fn router(&self) -> Router {
        self.router
    }

    /// Runs `f` on every processor and returns the results this process
    /// holds, by pid: every processor's on threads, this rank's under MPI
    /// (see [`Outcome`]; [`run_all`](Runtime::run_all) gathers them all on
    /// every transport).
    ///
    /// # Errors
    ///
    /// The first failure of the run (see [`ErrorKind`]): a panic on any
    /// processor, processors disagreeing on syncs or registrations, an
    /// out-of-range pid or offset, or zero processors. Every other
    /// processor is released and the run ends; nothing hangs.
    ///
    /// Under MPI, runs start one at a time and in the same order on every
    /// rank: a run started while another thread's run is in progress on
    /// this rank is refused, and so is, on every rank, a run whose closure
    /// type, call site or number differs between the ranks
    /// ([`ErrorKind::Config`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let err = bsp_core::Runtime::threads(0).run(|ctx| ctx.pid()).unwrap_err();
    /// assert_eq!(err.kind(), bsp_core::ErrorKind::Config);
    /// ```
    #[track_caller]
    pub fn run<F, R>(&self, f: F) -> Result<Outcome<R>>
    where
        F: Fn(&mut Ctx) -> R + Sync,
        R: Send,
    {
        let setup = self.prepare(Program::of::<F>())?;
        let body = |comm: Box<dyn Comm>| {
            let (pid, nprocs) = (comm.pid(), comm.nprocs());
            launch::processor(comm, &setup, &f).map(|r| (pid, nprocs, r))
        };
        #[cfg(feature = "tracing")]
        let body = crate::ctx::spans::in_run(setup.transport, self.procs, &body);
        let held = transport::launch(setup.transport, self.procs, setup.limits, &body)?;
        let (first, nprocs) = (held[0].0, held[0].1);
        Ok(Outcome::new(
            nprocs,
            first,
            held.into_iter().map(|(_, _, r)| r).collect(),
        ))
    }

    /// Runs `f` on every processor and returns every processor's result,
    /// in pid order, in every process: on threads as on MPI, where each
    /// rank receives the others' results. The [`Outcome`] still knows who
    /// prints: [`is_root`](Outcome::is_root) holds in the process that ran
    /// processor 0 only, and [`local`](Outcome::local) is this process's
    /// own processor's result.
    ///
    /// # Examples
    ///
    /// ```
    /// let all = bsp_core::Runtime::threads(3).run_all(|ctx| ctx.pid() as u64 * 2)?;
    /// assert_eq!(all.all(), Some(&[0, 2, 4][..])); // in every process
    /// if all.is_root() {
    ///     println!("total {}", all.iter().sum::<u64>()); // printed once
    /// }
    /// # Ok::<(), bsp_core::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`run`](Runtime::run).
    ///
    /// # Cost
    ///
    /// One superstep after `f` returns (on every transport, so that the
    /// statistics agree): an all-gather of the results through a serde
    /// queue, h = p · the largest encoded result.
    #[track_caller]
    pub fn run_all<F, R>(&self, f: F) -> Result<Outcome<R>>
    where
        F: Fn(&mut Ctx) -> R + Sync,
        R: Serialize + DeserializeOwned + Send,
    {
        let gathered = self.run(|ctx| {
            let mine = f(ctx);
            let results = ctx.serde_queue::<R>();
            for to in 0..ctx.nprocs() {
                ctx.send(to, &results, &mine);
            }
            ctx.sync();
            let all = ctx.receive(&results);
            ctx.release_queue(results);
            all
        })?;
        let ran = gathered.pids().start;
        Ok(Outcome::gathered(ran, gathered.into_local()))
    }

    /// Like [`run`](Runtime::run), for a closure that returns a `Result`: an
    /// `Err` on any processor ends the run, on every processor, with an
    /// [`ErrorKind::Application`] error naming that processor and its
    /// superstep, whose message is the error's text and whose
    /// [`source`](std::error::Error::source) is the error itself (on
    /// threads; under MPI the other ranks know its text only). No panic is
    /// involved.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::error::Error as _;
    ///
    /// let err = bsp_core::Runtime::threads(2)
    ///     .try_run(|ctx| {
    ///         ctx.sync();
    ///         let n: u32 = if ctx.pid() == 1 { "x".parse()? } else { 7 };
    ///         ctx.sync();
    ///         Ok::<u32, std::num::ParseIntError>(n)
    ///     })
    ///     .unwrap_err();
    /// assert_eq!(err.kind(), bsp_core::ErrorKind::Application);
    /// assert_eq!((err.pid(), err.superstep()), (Some(1), Some(1)));
    /// assert!(err.source().unwrap().is::<std::num::ParseIntError>());
    /// ```
    ///
    /// # Errors
    ///
    /// As [`run`](Runtime::run), plus the application's error.
    #[track_caller]
    pub fn try_run<F, R, E>(&self, f: F) -> Result<Outcome<R>>
    where
        F: Fn(&mut Ctx) -> std::result::Result<R, E> + Sync,
        R: Send,
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        self.run(|ctx| match f(ctx) {
            Ok(result) => result,
            Err(e) => ctx.fail_application(e.into()),
        })
    }
}

/// Runs `f` on `p` processors with the default router: on `p` threads, or,
/// when the program was started by `mpirun` (and built with the `mpi`
/// feature), on the ranks of the MPI job. The other settings come from the
/// environment, as for [`Runtime::from_env`] (`BSP_PROFILE`,
/// `BSP_SYNC_TIMEOUT`, …); [`Runtime::threads`] reads none.
///
/// The [`Outcome`] holds the results of the processors this process ran,
/// by pid: all of them on threads, this rank's under MPI;
/// [`Outcome::get`], [`Outcome::local`] and [`Outcome::root`] mean the same
/// on both. For every result in every process, use [`Runtime::run_all`].
/// See [`Runtime::run`].
///
/// # Examples
///
/// ```
/// let sums = bsp_core::run(4, |ctx| {
///     let (s, p) = (ctx.pid(), ctx.nprocs());
///     let partial = ctx.coarray::<u64>(p);
///     for t in 0..p {
///         ctx.put(t, &partial, s, &[s as u64 * 10]);
///     }
///     ctx.sync();
///     ctx.local(&partial).iter().sum::<u64>()
/// })
/// .unwrap();
/// assert_eq!(sums.all(), Some(&vec![60; 4][..]));
/// ```
///
/// # Errors
///
/// As [`Runtime::run`]; also an [`ErrorKind::Config`] error, before
/// anything runs, when started by `mpirun` with other than `p` ranks, or
/// by `mpirun` without the `mpi` feature (every rank would repeat the run).
#[track_caller]
pub fn run<F, R>(p: usize, f: F) -> Result<Outcome<R>>
where
    F: Fn(&mut Ctx) -> R + Sync,
    R: Send,
{
    Runtime::launcher(p).run(f)
}

#[cfg(test)]
mod tests {
    use super::parse_bytes;

    #[test]
    fn byte_counts_read_with_binary_suffixes() {
        assert_eq!(parse_bytes("4096"), Some(4096));
        assert_eq!(parse_bytes(" 64M "), Some(64 << 20));
        assert_eq!(parse_bytes("2k"), Some(2048));
        assert_eq!(parse_bytes("1G"), Some(1 << 30));
        for bad in ["", "M", "-1", "4 MB", "1.5M"] {
            assert_eq!(parse_bytes(bad), None, "{bad:?}");
        }
    }
}
