//! Launching a BSP program: the runtime builder and `run`.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::ctx::Ctx;
use crate::env::{PROCS_ENV, ROUTER_ENV};
use crate::error::{Error, ErrorKind, Result};
use crate::launch;
use crate::outcome::Outcome;
use crate::router::Router;
use crate::transport::{self, Comm, Transport};

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
/// assert_eq!(pids[2], 2); // processor 2's result
/// ```
#[derive(Clone, Debug)]
pub struct Runtime {
    transport: Transport,
    procs: usize,
    router: Router,
    config_error: Option<String>,
}

impl Runtime {
    /// `p` processors on threads of this process, with the default router.
    pub fn threads(p: usize) -> Self {
        Runtime {
            transport: Transport::Threads,
            procs: p,
            router: Router::default(),
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
    /// Under MPI, the [`Outcome`] of [`run`](Runtime::run) holds the local
    /// rank's result ([`run_all`](Runtime::run_all) gathers every rank's),
    /// and a failure on any rank is printed by the rank that detects it and
    /// ends the whole job with `MPI_Abort` (non-zero exit) instead of
    /// returning an error.
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
        Runtime {
            transport: Transport::Mpi,
            procs: transport::mpi::world_size(),
            router: Router::default(),
            config_error: None,
        }
    }

    /// The runtime the environment asks for: MPI when this binary was built
    /// with feature `mpi` and started by `mpirun`, threads otherwise, with
    /// `BSP_PROCS` processors (default: the number of cores) and the router
    /// named by `BSP_ROUTER` (default: two-phase). A malformed variable is
    /// reported by [`run`](Runtime::run) as an [`ErrorKind::Config`] error,
    /// and so is a start by `mpirun` of a binary built without the `mpi`
    /// feature (every rank would run the whole program on its own threads).
    pub fn from_env() -> Self {
        #[cfg(feature = "mpi")]
        if launched_by_mpirun() {
            return Runtime::mpi().router_from_env();
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut rt = Runtime::threads(cores).refuse_mpirun_without_mpi();
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

    /// The runtime of [`run`](crate::run)`(p, f)`: `p` threads, or the MPI
    /// world when started by `mpirun`; an error (at `run`) where the world
    /// has another size, or the binary cannot run on MPI.
    pub(crate) fn launcher(p: usize) -> Self {
        #[cfg(feature = "mpi")]
        if launched_by_mpirun() {
            let mut rt = Runtime::mpi();
            if rt.procs != p {
                rt.config_error = Some(format!(
                    "bsp::run({p}, …) was started by mpirun with {} ranks; start it with \
                     `mpirun -np {p}`, or use Runtime::from_env() to run on as many \
                     processors as the launcher gives",
                    rt.procs
                ));
            }
            return rt;
        }
        Runtime::threads(p).refuse_mpirun_without_mpi()
    }

    /// Marks the runtime as misconfigured when this process was started by
    /// `mpirun` but has no MPI transport.
    fn refuse_mpirun_without_mpi(mut self) -> Self {
        if !cfg!(feature = "mpi") && launched_by_mpirun() {
            self.config_error = Some(
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
                Err(e) => self.config_error = Some(format!("{ROUTER_ENV}: {e}")),
            }
        }
        self
    }

    /// Sets the router (default [`Router::TwoPhase`]).
    pub fn with_router(mut self, router: Router) -> Self {
        self.router = router;
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
    /// # Examples
    ///
    /// ```
    /// let err = bsp_core::Runtime::threads(0).run(|ctx| ctx.pid()).unwrap_err();
    /// assert_eq!(err.kind(), bsp_core::ErrorKind::Config);
    /// ```
    pub fn run<F, R>(&self, f: F) -> Result<Outcome<R>>
    where
        F: Fn(&mut Ctx) -> R + Sync,
        R: Send,
    {
        if let Some(msg) = &self.config_error {
            return Err(Error::new(ErrorKind::Config, None, None, msg.clone()));
        }
        let (router, transport) = (self.router, self.transport);
        let body = |comm: Box<dyn Comm>| {
            let (pid, nprocs) = (comm.pid(), comm.nprocs());
            launch::processor(comm, router, transport, &f).map(|r| (pid, nprocs, r))
        };
        let held = transport::launch(transport, self.procs, &body)?;
        let (first, nprocs) = (held[0].0, held[0].1);
        Ok(Outcome::new(
            nprocs,
            first,
            held.into_iter().map(|(_, _, r)| r).collect(),
        ))
    }

    /// Runs `f` on every processor and returns every processor's result,
    /// in pid order, in every process: on threads as on MPI, where each
    /// rank receives the others' results.
    ///
    /// # Examples
    ///
    /// ```
    /// let all = bsp_core::Runtime::threads(3).run_all(|ctx| ctx.pid() as u64 * 2)?;
    /// assert_eq!(all, vec![0, 2, 4]);
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
    pub fn run_all<F, R>(&self, f: F) -> Result<Vec<R>>
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
        Ok(gathered.into_local())
    }
}

/// Runs `f` on `p` processors with the default router: on `p` threads, or,
/// when the program was started by `mpirun` (and built with the `mpi`
/// feature), on the ranks of the MPI job.
///
/// The [`Outcome`] holds the results of the processors this process ran,
/// by pid: all of them on threads, this rank's under MPI; `outcome[pid]`,
/// [`Outcome::local`] and [`Outcome::root`] mean the same on both. For every
/// result in every process, use [`Runtime::run_all`]. See [`Runtime::run`].
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
/// As [`Runtime::run`]; also an [`ErrorKind::Config`] error, before
/// anything runs, when started by `mpirun` with other than `p` ranks, or
/// by `mpirun` without the `mpi` feature (every rank would repeat the run).
pub fn run<F, R>(p: usize, f: F) -> Result<Outcome<R>>
where
    F: Fn(&mut Ctx) -> R + Sync,
    R: Send,
{
    Runtime::launcher(p).run(f)
}
