//! The environment variables bsp reads, in one place.

/// Environment variable giving the processor count for
/// [`Runtime::from_env`](crate::Runtime::from_env).
pub const PROCS_ENV: &str = "BSP_PROCS";
/// Environment variable naming the router for
/// [`Runtime::from_env`](crate::Runtime::from_env) (`auto`, `two-phase`,
/// `direct` or `transportation`).
pub const ROUTER_ENV: &str = "BSP_ROUTER";
/// Environment variable that, set to `1`, makes processor 0 print the
/// per-superstep statistics table to standard error when a run ends, and,
/// set to `trace`, write a Chrome/Perfetto trace to [`TRACE_FILE_ENV`].
pub const PROFILE_ENV: &str = "BSP_PROFILE";
/// Environment variable giving every run's sync time limit in seconds
/// (decimals allowed, e.g. `0.5`); unset, processors wait for ever. See
/// [`Runtime::sync_timeout`](crate::Runtime::with_sync_timeout).
pub const SYNC_TIMEOUT_ENV: &str = "BSP_SYNC_TIMEOUT";
/// Environment variable choosing what an MPI job does with a failure:
/// `abort` (the default) or `return`. See [`OnFailure`](crate::OnFailure).
pub const ON_FAILURE_ENV: &str = "BSP_ON_FAILURE";
/// Environment variable giving the machine's parameters for
/// [`Router::Auto`](crate::Router::Auto) (`two-phase=L,G;direct=L,G`), or
/// `probe` to measure them afresh; see [`Machine`](crate::Machine).
pub const MACHINE_ENV: &str = "BSP_MACHINE";
/// Environment variable naming the file that caches the measured machine
/// parameters (`off`: none); see [`Machine`](crate::Machine).
pub const MACHINE_CACHE_ENV: &str = "BSP_MACHINE_CACHE";
/// Environment variable naming the trace file of `BSP_PROFILE=trace`
/// (default `bsp-trace.json`).
pub const TRACE_FILE_ENV: &str = "BSP_TRACE_FILE";
/// Environment variable choosing the barrier of the threads transport's
/// syncs, for measurement: `auto` (the default: `dissemination` when
/// every processor has a core of the process's CPU affinity, `central`
/// when there are more processors than cores), `dissemination` (⌈log₂ p⌉
/// rounds of pairwise signals), `central` (one shared counter) or
/// `binomial` (a binomial tree of per-processor flags, after the
/// collectives chapter's shared-memory barrier).
pub const BARRIER_ENV: &str = "BSP_BARRIER";
/// Environment variable giving the memory budget of each processor's
/// statistics history in bytes, optionally followed by `K`, `M` or `G`
/// (KiB, MiB, GiB; e.g. `64M`); default 4 MiB. See
/// [`Runtime::with_stats_memory`](crate::Runtime::with_stats_memory).
pub const STATS_MEMORY_ENV: &str = "BSP_STATS_MEMORY";
/// Environment variable naming the checkpoint directory for
/// [`Runtime::from_env`](crate::Runtime::from_env); see
/// [`Runtime::with_checkpoint_dir`](crate::Runtime::with_checkpoint_dir).
pub const CHECKPOINT_DIR_ENV: &str = "BSP_CHECKPOINT_DIR";
