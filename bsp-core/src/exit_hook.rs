//! Functions run when the process exits, told the exit status.

use std::os::raw::c_int;
use std::sync::{Mutex, Once};

/// A hook, given the exit status where it is known.
type Hook = fn(Option<i32>);

/// The registered hooks, in order of registration.
static HOOKS: Mutex<Vec<Hook>> = Mutex::new(Vec::new());

/// Registers `hook` to run when the process exits normally (`exit`, or
/// `main` returning), on the thread that exits, with the status given to
/// `exit` where the C library passes it on (glibc's `on_exit`), `None`
/// elsewhere. Hooks run in the reverse order of their registration, as
/// `atexit(3)`'s do, each once. A hook may end the process itself
/// (`_exit`, `MPI_Abort`); if it returns, the process exits with the
/// status it was given.
///
/// For layers that must not let a process end in the middle of a run
/// unnoticed, such as the MPI transport (whose other ranks would wait for
/// ever) and the BSPlib layer (which names the processor that ended the
/// program); most programs need none.
///
/// # Panics
///
/// If the C library cannot register one more exit function.
///
/// # Examples
///
/// ```
/// fn note(status: Option<i32>) {
///     if status.is_some_and(|s| s != 0) {
///         eprintln!("exiting with status {status:?}");
///     }
/// }
/// bsp_core::at_exit(note);
/// ```
pub fn at_exit(hook: Hook) {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| assert_eq!(register(), 0, "bsp: cannot register an exit hook"));
    HOOKS.lock().unwrap_or_else(|e| e.into_inner()).push(hook);
}

/// Runs the hooks, last registered first, each taken off the list before
/// it runs (so a hook that exits again does not run twice).
fn run_hooks(status: Option<i32>) {
    loop {
        let hook = HOOKS.lock().unwrap_or_else(|e| e.into_inner()).pop();
        match hook {
            Some(hook) => hook(status),
            None => return,
        }
    }
}

extern "C" {
    /// glibc's `on_exit(3)`: registers a function called by `exit` with
    /// the status given to `exit` (or returned by `main`).
    #[cfg(target_env = "gnu")]
    fn on_exit(
        callback: extern "C" fn(c_int, *mut std::ffi::c_void),
        arg: *mut std::ffi::c_void,
    ) -> c_int;
    /// C library `atexit(3)`: registers a function called by `exit`.
    #[cfg(not(target_env = "gnu"))]
    fn atexit(callback: extern "C" fn()) -> c_int;
}

/// Registers [`run_hooks`] with the C library; returns its result (0 on
/// success).
fn register() -> c_int {
    #[cfg(target_env = "gnu")]
    {
        extern "C" fn hook(status: c_int, _: *mut std::ffi::c_void) {
            run_hooks(Some(status));
        }
        // SAFETY: `hook` is a plain `extern "C" fn` that stays valid for
        // the life of the process; its argument is unused.
        unsafe { on_exit(hook, std::ptr::null_mut()) }
    }
    #[cfg(not(target_env = "gnu"))]
    {
        extern "C" fn hook() {
            run_hooks(None);
        }
        // SAFETY: `hook` is a plain `extern "C" fn()` that stays valid for
        // the life of the process.
        unsafe { atexit(hook) }
    }
}
