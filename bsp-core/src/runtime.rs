//! Launching a BSP program: the runtime builder and `run`.

use crate::ctx::Ctx;
use crate::env::{PROCS_ENV, ROUTER_ENV};
use crate::error::{Error, ErrorKind, Result};
use crate::launch;
use crate::machine::Machine;
use crate::router::Router;
use crate::transport::{self, Transport};

/// Whether this process was started by `mpirun` / `mpiexec` (OpenMPI, MPICH
/// with Hydra, or any PMIx launcher), judged from the launcher's
/// environment. [`Runtime::from_env`] picks MPI when this holds and the
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
/// assert_eq!(pids, vec![0, 1, 2, 3]);
/// ```
#[derive(Clone, Debug)]
pub struct Runtime {
    transport: Transport,
    procs: usize,
    router: Router,
    machine: Option<Machine>,
    config_error: Option<String>,
}

impl Runtime {
    /// `p` processors on threads of this process, with the default router.
    pub fn threads(p: usize) -> Self {
        Runtime {
            transport: Transport::Threads,
            procs: p,
            router: Router::default(),
            machine: None,
            config_error: None,
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
    /// Under MPI, [`run`](Runtime::run) returns only the local rank's
    /// result, and a failure on any rank is printed by the rank that detects
    /// it and ends the whole job with `MPI_Abort` (non-zero exit) instead of
    /// returning an error.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #[cfg(feature = "mpi")] {
    /// let rt = bsp_core::Runtime::mpi();
    /// let mine = rt.run(|ctx| ctx.pid()).unwrap();
    /// assert_eq!(mine.len(), 1); // this rank's result only
    /// # }
    /// ```
    #[cfg(feature = "mpi")]
    #[cfg_attr(docsrs, doc(cfg(feature = "mpi")))]
    pub fn mpi() -> Self {
        Runtime {
            transport: Transport::Mpi,
            procs: transport::mpi::world_size(),
            router: Router::default(),
            machine: None,
            config_error: None,
        }
    }

    /// The runtime the environment asks for: MPI when this binary was built
    /// with feature `mpi` and started by `mpirun`, threads otherwise, with
    /// `BSP_PROCS` processors (default: the number of cores) and the router
    /// named by `BSP_ROUTER` (`auto`, the default, `two-phase` or `direct`). A malformed variable is
    /// reported by [`run`](Runtime::run) as an [`ErrorKind::Config`] error.
    pub fn from_env() -> Self {
        #[cfg(feature = "mpi")]
        if launched_by_mpirun() {
            return Runtime::mpi().router_from_env();
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut rt = Runtime::threads(cores);
        if let Ok(v) = std::env::var(PROCS_ENV) {
            match v.trim().parse() {
                Ok(p) => rt.procs = p,
                Err(_) => {
                    rt.config_error = Some(format!("{PROCS_ENV}={v:?} is not a processor count"))
                }
            }
        }
        rt.router_from_env()
    }

    fn router_from_env(mut self) -> Self {
        if let Ok(v) = std::env::var(ROUTER_ENV) {
            match v.parse() {
                Ok(r) => self.router = r,
                Err(e) => self.config_error = Some(format!("{ROUTER_ENV}: {e}")),
            }
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
        if self.transport == Transport::Threads {
            self.procs = p;
        }
        self
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

    /// Runs `f` on every processor and returns the results in pid order.
    ///
    /// On threads, the vector holds every processor's result. Under MPI,
    /// each rank's vector holds its own result only.
    ///
    /// # Errors
    ///
    /// The first failure of the run (see [`ErrorKind`]): a panic on any
    /// processor, processors disagreeing on syncs or registrations, an
    /// out-of-range pid or offset, or zero processors. Every other
    /// processor is released and the run ends; nothing hangs.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = bsp_core::Runtime::threads(0).run(|ctx| ctx.pid()).unwrap_err();
    /// assert_eq!(err.kind(), bsp_core::ErrorKind::Config);
    /// ```
    pub fn run<F, R>(&self, f: F) -> Result<Vec<R>>
    where
        F: Fn(&mut Ctx) -> R + Sync,
        R: Send,
    {
        if let Some(msg) = &self.config_error {
            return Err(Error::new(ErrorKind::Config, None, None, msg.clone()));
        }
        let (router, transport) = (self.router, self.transport);
        let machine = match (self.machine, router) {
            (None, Router::Auto) => Some(Machine::of(self)?),
            (given, _) => given,
        };
        let body = |comm| launch::processor(comm, router, machine, transport, &f);
        transport::launch(transport, self.procs, &body)
    }
}

/// Runs `f` on `p` threads with the default router.
///
/// Shorthand for `Runtime::threads(p).run(f)`; see [`Runtime::run`].
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
/// assert_eq!(sums, vec![60; 4]);
/// ```
///
/// # Errors
///
/// As [`Runtime::run`].
pub fn run<F, R>(p: usize, f: F) -> Result<Vec<R>>
where
    F: Fn(&mut Ctx) -> R + Sync,
    R: Send,
{
    Runtime::threads(p).run(f)
}
