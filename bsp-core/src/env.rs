//! The environment variables bsp reads, in one place.

/// Environment variable giving the processor count for
/// [`Runtime::from_env`](crate::Runtime::from_env).
pub const PROCS_ENV: &str = "BSP_PROCS";
/// Environment variable naming the router for
/// [`Runtime::from_env`](crate::Runtime::from_env) (`two-phase` or `direct`).
pub const ROUTER_ENV: &str = "BSP_ROUTER";
/// Environment variable that, set to `1`, makes processor 0 print the
/// per-superstep statistics table to standard error when a run ends.
pub const PROFILE_ENV: &str = "BSP_PROFILE";
