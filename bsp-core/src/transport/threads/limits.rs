//! What a threads run checks before its processor threads start: the
//! limits on threads and address space, and the stack each thread gets.

use crate::error::{Error, ErrorKind, Result};

/// The most processor threads this process may start: the kernel's
/// limits on threads (`/proc/sys/kernel/threads-max`) and on this user's
/// processes (`ulimit -u`), where they can be read.
fn thread_limit() -> Option<(usize, String)> {
    let threads_max = std::fs::read_to_string("/proc/sys/kernel/threads-max")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .map(|n| (n, format!("the kernel's threads-max ({n})")));
    let user_max = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("Max processes"))?;
            line.split_whitespace().nth(2)?.parse::<usize>().ok()
        })
        .map(|n| (n, format!("this user's process limit, ulimit -u ({n})")));
    [threads_max, user_max]
        .into_iter()
        .flatten()
        .min_by_key(|(n, _)| *n)
}

/// The stack each processor thread gets: `RUST_MIN_STACK` where set (as
/// for any thread std starts), else std's default of 2 MiB.
pub(super) fn processor_stack_bytes() -> usize {
    std::env::var("RUST_MIN_STACK")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .unwrap_or(2 << 20)
}

/// Address space a processor thread takes besides its stack: a guard
/// page, the signal stack std maps for it and room for its first
/// allocations.
const THREAD_OVERHEAD_BYTES: usize = 256 << 10;

/// The stack of a session's processor threads: `RUST_MIN_STACK` where set;
/// else the main thread's soft limit (`ulimit -s`), between 2 MiB and
/// 256 MiB, and 8 MiB where it is unlimited or unreadable. Code written
/// for processes (C programs, under a BSPlib layer) expects the main
/// thread's stack, not std's 2 MiB.
pub(super) fn session_stack_bytes() -> usize {
    if let Some(bytes) = std::env::var("RUST_MIN_STACK")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
    {
        return bytes;
    }
    std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("Max stack size"))?;
            line.split_whitespace().nth(3)?.parse::<usize>().ok()
        })
        .map_or(8 << 20, |soft| soft.clamp(2 << 20, 256 << 20))
}

/// Checks `p` processor threads against the address-space limit
/// (`ulimit -v`), so that a run too large for it fails with a clear error
/// before the first thread starts rather than part way: a thread that
/// starts but cannot map its signal stack aborts the whole process.
fn check_address_space(p: usize, stack: usize) -> Result<()> {
    let field = |text: &str, prefix: &str, index: usize| -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(prefix))?;
        line.split_whitespace().nth(index)?.parse::<u64>().ok()
    };
    let Some(limit) = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|s| field(&s, "Max address space", 3))
    else {
        return Ok(()); // unlimited, or not readable here
    };
    let used = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| field(&s, "VmSize:", 1))
        .map_or(0, |kib| kib * 1024);
    let needed = p as u64 * (stack + THREAD_OVERHEAD_BYTES) as u64;
    let left = limit.saturating_sub(used);
    if needed > left {
        let gib = |b: u64| b as f64 / f64::from(1u32 << 30);
        return Err(config_error(format!(
            "cannot start p = {p} processor threads: their stacks need {:.2} GiB of address space \
             and the address-space limit (ulimit -v) leaves {:.2} GiB; use fewer processors \
             (BSP_PROCS), smaller stacks (RUST_MIN_STACK) or the MPI transport",
            gib(needed),
            gib(left)
        )));
    }
    Ok(())
}

fn config_error(msg: String) -> Error {
    Error::new(ErrorKind::Config, None, None, msg)
}

/// The checks before a run's threads start, for runs and sessions: p > 0,
/// within the limits on threads and on address space (for stacks of
/// `stack` bytes). Returns the stack size.
pub(super) fn preflight(p: usize, stack: usize) -> Result<usize> {
    if p == 0 {
        return Err(config_error(
            "a run needs at least one processor (p = 0)".to_owned(),
        ));
    }
    // Small runs are far below any limit; skip reading /proc for them.
    if let Some((max, what)) = (p > 1024).then(thread_limit).flatten() {
        if p > max {
            return Err(config_error(format!(
                "p = {p} processor threads exceed {what}; use fewer processors \
                 (BSP_PROCS) or the MPI transport"
            )));
        }
    }
    if p > 64 {
        check_address_space(p, stack)?;
    }
    Ok(stack)
}
