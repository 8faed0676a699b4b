//! The environment variables bsp reads, in one place.

/// Environment variable giving the processor count for
/// [`Runtime::from_env`](crate::Runtime::from_env).
pub const PROCS_ENV: &str = "BSP_PROCS";
/// Environment variable naming the router for
/// [`Runtime::from_env`](crate::Runtime::from_env) (`two-phase` or `direct`).
pub const ROUTER_ENV: &str = "BSP_ROUTER";
/// Environment variable that, set to `1`, makes processor 0 print the
/// per-superstep statistics table to standard error when a run ends, and,
/// set to `trace`, write a Chrome/Perfetto trace to [`TRACE_FILE_ENV`].
pub const PROFILE_ENV: &str = "BSP_PROFILE";
/// Environment variable naming the trace file of `BSP_PROFILE=trace`
/// (default `bsp-trace.json`).
pub const TRACE_FILE_ENV: &str = "BSP_TRACE_FILE";
/// Environment variable giving the cost model's g and l for the profile's
/// predictions, as `G,L`: G in nanoseconds per byte, L in microseconds.
pub const COST_ENV: &str = "BSP_COST";
