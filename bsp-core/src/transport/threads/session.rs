//! Starting a threads run for a [`Session`](crate::Session): the calling
//! thread becomes processor 0 and keeps running the program; processors
//! 1..p run the worker body on threads of their own, which are not
//! joined (a worker's thread may outlive its processor, as a BSPlib
//! program's threads wait at `bsp_end` until the process exits).

use std::sync::Arc;

use super::{config_error, preflight, ThreadsComm, ThreadsShared};
use crate::error::Result;
use crate::transport::{Comm, RunLimits, Worker};

/// The stack of a session's processor threads: `RUST_MIN_STACK` where set;
/// else the main thread's soft limit (`ulimit -s`), between 2 MiB and
/// 256 MiB, and 8 MiB where it is unlimited or unreadable. Code written
/// for processes (C programs, under a BSPlib layer) expects the main
/// thread's stack, not std's 2 MiB.
fn session_stack_bytes() -> usize {
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

/// Starts processors 1..p of a `p`-processor run on threads of their own,
/// each running `worker` on its endpoint, and returns processor 0's
/// endpoint for the calling thread.
pub(crate) fn start(p: usize, limits: RunLimits, worker: Worker) -> Result<Box<dyn Comm>> {
    let (stack, barrier) = preflight(p, session_stack_bytes())?;
    let shared = ThreadsShared::new(p, limits, barrier);
    for pid in 1..p {
        let comm = ThreadsComm::new(Arc::clone(&shared), pid);
        let worker = Arc::clone(&worker);
        let spawned = std::thread::Builder::new()
            .name(format!("bsp-{pid}"))
            .stack_size(stack)
            .spawn(move || {
                let shared = Arc::clone(&comm.shared);
                worker(Box::new(comm));
                shared.body_returned();
            });
        if let Err(e) = spawned {
            // The processors already started are waiting at their first
            // sync (or will be): release them with the error.
            let error = config_error(format!(
                "cannot start processor thread {pid} of {p}: {e}; \
                 use fewer processors (BSP_PROCS) or raise the limits on threads and memory"
            ));
            shared.fail(error.clone());
            return Err(error);
        }
    }
    Ok(Box::new(ThreadsComm::new(shared, 0)))
}
