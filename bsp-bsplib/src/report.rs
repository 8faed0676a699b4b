//! How the layer ends a BSPlib program on an error: one line on standard
//! error, `bsp: processor s, superstep k: <what>`, then the end of the
//! whole program (every thread, or every MPI rank), as BSPlib's
//! `bsp_abort` does. Errors found by bsp-core itself are worded in the
//! BSPlib functions' terms (as BSPonMPI words them), followed by bsp's own
//! account in parentheses.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use bsp_core::{Error, ErrorKind};

/// Set by the first thread that ends the program; the others wait for it.
static DYING: AtomicBool = AtomicBool::new(false);

/// Makes this thread the one that ends the program: `false` when another
/// (or this one, earlier) already is.
pub(crate) fn claim_the_end() -> bool {
    !DYING.swap(true, Ordering::AcqRel)
}

/// bsp-core's account of a failure, in the C program's terms.
fn c_terms(message: &str) -> String {
    message
        .replace("returned from its closure", "called bsp_end")
        .replace("call sync before returning", "call bsp_sync before bsp_end")
}

/// The error line's text after `bsp: ` (also bsp-core's
/// [`with_failure_report`](bsp_core::Runtime::with_failure_report) for MPI ranks).
pub(crate) fn describe(e: &Error) -> String {
    let message = e.message().trim_end_matches('\n');
    let body = match e.kind() {
        // bsp_abort's message, and the layer's own misuse reports (which
        // begin with the C function's name), as they are.
        ErrorKind::Abort => message.to_owned(),
        ErrorKind::SyncMismatch => format!(
            "bsp_sync/bsp_end: Some processes have called bsp_sync, while others have called \
             bsp_end instead ({})",
            c_terms(message)
        ),
        ErrorKind::PendingCommunication => format!("bsp_end: {}", c_terms(message)),
        ErrorKind::Timeout => format!("bsp_sync: {message}"),
        ErrorKind::OutOfBounds => format!("bsp_sync: a put or get out of bounds: {message}"),
        ErrorKind::RegistrationMismatch => {
            format!("bsp_sync: registrations do not match: {}", c_terms(message))
        }
        ErrorKind::Panic => format!("internal error in the BSPlib layer: {message}"),
        kind => format!("{kind:?}: {message}"),
    };
    locate(e.pid(), e.superstep(), body)
}

/// `body` after the processor and superstep it happened at, as far as
/// they are known: `processor s, superstep k: <body>`.
pub(crate) fn locate(pid: Option<usize>, superstep: Option<usize>, body: String) -> String {
    match (pid, superstep) {
        (Some(pid), Some(step)) => format!("processor {pid}, superstep {step}: {body}"),
        (Some(pid), None) => format!("processor {pid}: {body}"),
        _ => body,
    }
}

/// Writes `bsp: <line>` (and a newline) to standard error in one write,
/// after flushing C's standard output so that the program's own lines come
/// first.
pub(crate) fn print(line: &str) {
    // SAFETY: `fflush(NULL)` flushes every C output stream; it takes no
    // pointer of ours and may be called at any time.
    unsafe {
        fflush(std::ptr::null_mut());
    }
    let text = format!("bsp: {line}\n");
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

extern "C" {
    /// C's `fflush(3)`; `NULL` flushes every output stream.
    fn fflush(stream: *mut std::ffi::c_void) -> std::ffi::c_int;
}

/// Ends the program after the run failed with `e`, as seen by this
/// processor: the first thread to get here prints the error and exits
/// with status 1 (under MPI, aborts the job); any other waits for that.
pub(crate) fn die(e: &Error) -> ! {
    end_with(&describe(e))
}

/// Ends the program with `line` on standard error (see [`die`]).
pub(crate) fn end_with(line: &str) -> ! {
    if !claim_the_end() {
        // Another thread of this process is printing and exiting.
        loop {
            std::thread::park();
        }
    }
    print(line);
    exit_failure()
}

/// Exit status 1; under MPI (once initialised), the whole job.
fn exit_failure() -> ! {
    #[cfg(feature = "mpi")]
    crate::mpi_mode::abort_job();
    std::process::exit(1)
}
