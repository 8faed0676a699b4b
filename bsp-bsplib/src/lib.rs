//! # bsp-bsplib: BSPlib for C programs, on bsp
//!
//! A C library (`libbsp_bsplib.a` and `libbsp_bsplib.so`) with the header
//! `include/bsp.h`, implementing the BSPlib standard (Hill et al., 1998)
//! on bsp-core: `bsp_init`, `bsp_begin`, `bsp_end`, `bsp_pid`,
//! `bsp_nprocs`, `bsp_time`, `bsp_sync`, `bsp_push_reg`, `bsp_pop_reg`,
//! `bsp_put`, `bsp_get`, `bsp_hpput`, `bsp_hpget`, `bsp_set_tagsize`,
//! `bsp_send`, `bsp_qsize`, `bsp_get_tag`, `bsp_move`, `bsp_hpmove`,
//! `bsp_abort` and `bsp_vabort`.
//!
//! ## Two ways to run
//!
//! * **Threads** (the default): `bsp_begin(P)` runs the section on p =
//!   min(P, `BSP_PROCS`) processors (P without `BSP_PROCS`; before
//!   `bsp_begin`, `bsp_nprocs()` is `BSP_PROCS`, else the number of cores),
//!   so that `BSP_PROCS` is the machine's size as mpirun's `-np` is under
//!   MPI. It starts p − 1 threads; the
//!   calling thread goes on as processor 0 and the new threads run the
//!   SPMD function given to `bsp_init` (or, without `bsp_init`, `main`
//!   again: BSPlib then requires `bsp_begin` to be `main`'s first
//!   statement). A processor other than 0 stops at `bsp_end` (its thread
//!   waits there until the program exits): only processor 0 runs the code
//!   after `bsp_end`. All processors share the process, hence its **C
//!   globals and statics**: a global written by one processor is written
//!   for all (as under MulticoreBSP for C). Globals set before
//!   `bsp_begin` are seen by every processor; a global that each processor
//!   needs its own copy of must become a local variable of the SPMD
//!   function (or be indexed by `bsp_pid()`), and library state that is
//!   not thread-safe (`rand`, `strtok`) is shared. Locals, `malloc`ed
//!   memory and the stack (each thread gets the main thread's stack size,
//!   `ulimit -s`) are per processor.
//! * **MPI** (library built with the `mpi` feature, program started by
//!   `mpirun -np P`): one processor per rank, as BSPonMPI: every rank runs
//!   `main`; with `bsp_init`, ranks other than 0 run the SPMD function
//!   straight away and exit after it; processor 0's `bsp_begin(P)` decides:
//!   the section runs on min(P, ranks) processors, and the ranks beyond P
//!   take no part (they leave at `bsp_begin` with status 0 once the job
//!   ends).
//!
//! ## Semantics worth knowing
//!
//! * Registrations (`bsp_push_reg`, `bsp_pop_reg`) and tag sizes take
//!   effect at the next `bsp_sync`, collectively; a put or get may use a
//!   registration that is popped in the same superstep.
//! * `bsp_hpput` and `bsp_hpget` are implemented with the buffered
//!   semantics of `bsp_put` and `bsp_get`: the standard lets the high
//!   performance variants transfer at any time until the sync, and taking
//!   the copy at the call is one such time. Correct programs cannot tell.
//! * At a sync, gets read their data before the superstep's puts land and
//!   are written to their destinations first; then puts land, by source
//!   processor, then call order; messages are queued in the same order.
//!   Runs are deterministic.
//! * Errors end the program (every thread, or every rank) with one line,
//!   `bsp: processor s, superstep k: <what>`, naming the C function as
//!   BSPonMPI does: `bsp_abort`'s message, a misuse found at the call (a
//!   bad pid, an unregistered or just-registered address, a put or get
//!   beyond the registered size on its target processor, a negative size,
//!   a NULL argument, a call outside the SPMD section), or at a sync
//!   (registrations, pops or tag sizes that differ between processors,
//!   some processors at `bsp_sync` while others are at `bsp_end`). The
//!   exit status is 1.
//! * A program that ends while its section is open, because a processor
//!   calls `exit` (or processor 0 returns from `main` before `bsp_end`),
//!   ends on both transports with one line naming that processor and its
//!   superstep, `bsp: processor 1, superstep 1: exited during a run
//!   (status 3)...`, and with the status given to `exit` (here 3), or 1
//!   where that was 0: the section did not end. (Where the C library does
//!   not pass the status to exit hooks, as glibc's `on_exit` does, the
//!   status is 1.)
//!
//! ## Conformance
//!
//! BSPonMPI's 90 API tests (`bsponmpi_tests.sh` beside this crate runs
//! them from a checkout of wijnand-suijlen/bsponmpi) pass 89 under
//! `mpirun` and 87 on threads. `send_various_tags_1` expects messages by
//! descending source processor, BSPonMPI's order, where the standard
//! leaves the order open (this layer's is ascending); on threads,
//! `init_1` expects a C global per processor (threads share the
//! process's) and `init_2` calls MPI itself. This crate's README.md has the
//! details.

mod proc;
mod report;

#[cfg(feature = "mpi")]
mod mpi_mode;

use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use bsp_core::{Runtime, Session};

use proc::{Proc, SessionRef};

/// BSPlib's processor count and id type (`bsp_pid_t`, `bsp_nprocs_t`).
pub type BspPid = c_int;
/// BSPlib's size type (`bsp_size_t`).
pub type BspSize = c_int;

/// The SPMD function given to `bsp_init`.
type Spmd = extern "C" fn();

static SPMD: Mutex<Option<Spmd>> = Mutex::new(None);
/// Whether `bsp_begin` has started the program's SPMD section.
static BEGUN: AtomicBool = AtomicBool::new(false);
/// Whether processor 0's `bsp_end` has ended it.
static ENDED: AtomicBool = AtomicBool::new(false);
/// The number of processors of the section, once begun.
static NPROCS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's processor, while it has one: a `Box<Proc>` turned into
    /// a pointer, so that reaching it from every C call is one load (no
    /// borrow flag, no destructor registration).
    static PROC: Cell<*mut Proc> = const { Cell::new(std::ptr::null_mut()) };
}

/// Makes `proc` this thread's processor.
fn install(proc: Proc) {
    let old = PROC.replace(Box::into_raw(Box::new(proc)));
    debug_assert!(old.is_null(), "bsp: a thread has one processor");
}

/// Takes this thread's processor away from it.
fn uninstall() -> Option<Box<Proc>> {
    let p = PROC.replace(std::ptr::null_mut());
    // SAFETY: a non-null pointer in `PROC` comes from `Box::into_raw` in
    // `install` and was never freed: `uninstall` clears the slot as it
    // takes the box back.
    (!p.is_null()).then(|| unsafe { Box::from_raw(p) })
}

/// This thread's processor, for the length of one C call.
fn current<'a>() -> Option<&'a mut Proc> {
    // SAFETY: the pointer (when not null) is a live `Box<Proc>` owned by
    // this thread's slot (see `install`), and only this thread reads the
    // slot. The reference lives for one C call of this thread, during
    // which no other reference to the `Proc` is made: the layer's
    // functions do not call each other while they hold it, and the slot is
    // emptied (`uninstall`) only outside such a call.
    unsafe { PROC.get().as_mut() }
}

extern "C" {
    /// The C program's `main`: on threads, processors other than 0 run it
    /// again when the program has no `bsp_init` (BSPlib then requires
    /// `bsp_begin` to be its first statement).
    fn main(argc: c_int, argv: *mut *mut c_char) -> c_int;
}

/// Ends the program for a call of `func` outside the SPMD section.
fn outside(func: &str) -> ! {
    let end = if ENDED.load(Ordering::Acquire) {
        " (the section has ended)"
    } else {
        ""
    };
    report::end_with(&format!(
        "{func}: can only be called within SPMD section{end}"
    ))
}

/// Runs `f` on this thread's processor, or ends the program when `func`
/// is called outside the SPMD section.
fn with_proc<R>(func: &str, f: impl FnOnce(&mut Proc) -> R) -> R {
    match current() {
        Some(p) if p.begun => f(p),
        _ => outside(func),
    }
}

/// The size of the machine, the most processors a section can have:
/// under MPI the ranks, on threads `BSP_PROCS` where it is set (unset,
/// `None`: as many as `bsp_begin` asks for).
fn machine_size() -> Option<usize> {
    #[cfg(feature = "mpi")]
    if mpi_mode::active() {
        return Some(mpi_mode::world_size());
    }
    std::env::var(bsp_core::env::PROCS_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&p| p > 0)
}

/// The processor count `bsp_nprocs()` gives before the section: the
/// machine's size, or, on threads without `BSP_PROCS`, the number of cores.
fn available_procs() -> usize {
    machine_size().unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The program's arguments, as `main` got them, for running `main` again
/// on the processors' threads.
fn program_args() -> (c_int, *mut *mut c_char) {
    struct Args(Vec<*mut c_char>);
    // SAFETY: the pointers are to leaked, never-freed C strings that are
    // only read; the vector itself is never changed after it is built.
    unsafe impl Send for Args {}
    // SAFETY: see `Send`.
    unsafe impl Sync for Args {}
    static ARGS: OnceLock<Args> = OnceLock::new();
    let args = ARGS.get_or_init(|| {
        let mut v: Vec<*mut c_char> = std::env::args_os()
            .map(|a| {
                // The argument's own bytes where the OS has them (Unix);
                // elsewhere its text, with any unpaired surrogate replaced.
                #[cfg(unix)]
                let bytes = std::os::unix::ffi::OsStrExt::as_bytes(a.as_os_str()).to_vec();
                #[cfg(not(unix))]
                let bytes = a.to_string_lossy().into_owned().into_bytes();
                CString::new(bytes).unwrap_or_default().into_raw()
            })
            .collect();
        v.push(std::ptr::null_mut());
        Args(v)
    });
    ((args.0.len() - 1) as c_int, args.0.as_ptr().cast_mut())
}

/// What the threads of processors 1..p run: the SPMD function, with this
/// thread's processor on `session`.
fn worker(session: &mut Session) {
    install(Proc::new(SessionRef::Lent(session), false));
    let spmd = *SPMD.lock().unwrap_or_else(|e| e.into_inner());
    match spmd {
        Some(f) => f(),
        None => {
            let (argc, argv) = program_args();
            // SAFETY: `main` is the C program's, called as the C runtime
            // calls it: argc and a NULL-terminated argv of C strings that
            // live for the rest of the process.
            unsafe {
                main(argc, argv);
            }
        }
    }
    // The SPMD function returned without bsp_end (which parks the thread).
    if let Some(mut proc) = uninstall() {
        let msg = if proc.begun {
            "bsp_end: was not called before the end of the SPMD function"
        } else {
            "bsp_init: spmd function did not contain SPMD section (bsp_begin)"
        };
        proc.begun = true;
        proc.abort(msg.to_owned());
    }
}

/// At exit, on threads (under MPI bsp-core's exit hook ends the job): a
/// program that ends while its SPMD section is open, because a processor
/// called `exit` or processor 0 returned from `main` before `bsp_end`,
/// ends with one line that names the processor that ended it and its
/// superstep, and with the status given to `exit`, or 1 where that was 0
/// or is not known (the section did not end).
fn check_at_exit(status: Option<i32>) {
    if !BEGUN.load(Ordering::Acquire) || ENDED.load(Ordering::Acquire) {
        return;
    }
    if !report::claim_the_end() {
        // The program is ending on an error another call reported (on
        // this thread, or on another that exits now).
        return;
    }
    let code = status.filter(|&s| s != 0).unwrap_or(1);
    let given = status.map_or(String::new(), |s| format!(" (status {s})"));
    let what = format!(
        "exited during a run{given}, before bsp_end; ending the whole program with status {code}"
    );
    // The exiting thread's processor, if it is one's: it is in no call of
    // the layer (`exit` came from the program; the layer's own exits
    // claimed the end first, above).
    let (pid, superstep) = match current() {
        Some(p) => (Some(p.pid), Some(p.superstep())),
        None => (None, None),
    };
    report::print(&report::locate(pid, superstep, what));
    if status != Some(code) {
        // SAFETY: `_exit` ends the process at once, with the status
        // chosen; the other processors' threads wait for a sync that
        // would never come.
        unsafe { _exit(code) }
    }
}

extern "C" {
    fn _exit(status: c_int) -> !;
}

/// The runtime of a section of `p` processors: `mpirun`'s ranks, or `p`
/// threads; with `BSP_ROUTER` and the other variables of
/// [`Runtime::from_env`].
fn runtime(p: usize) -> Runtime {
    Runtime::from_env()
        .with_procs(p)
        .with_failure_report(report::describe)
}

/// `bsp_init(spmd, argc, argv)`: declares the SPMD function. Under MPI,
/// ranks other than 0 run it at once and exit after it.
#[no_mangle]
pub extern "C" fn bsp_init(spmd_part: Option<Spmd>, _argc: c_int, _argv: *mut *mut c_char) {
    let Some(spmd) = spmd_part else {
        report::end_with("bsp_init: Pointer to function must not point to NULL");
    };
    {
        let mut slot = SPMD.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_some() || BEGUN.load(Ordering::Acquire) {
            drop(slot);
            report::end_with("bsp_init: May be called only once, before bsp_begin");
        }
        *slot = Some(spmd);
    }
    #[cfg(feature = "mpi")]
    if mpi_mode::active() && mpi_mode::rank() > 0 {
        spmd();
        if !BEGUN.load(Ordering::Acquire) {
            report::end_with("bsp_init: spmd function did not contain SPMD section (bsp_begin)");
        }
        if !ENDED.load(Ordering::Acquire) {
            report::end_with("bsp_init: spmd function did not end with call to bsp_end");
        }
        std::process::exit(0);
    }
}

/// `bsp_begin(maxprocs)`: starts the SPMD section.
#[no_mangle]
pub extern "C" fn bsp_begin(maxprocs: BspPid) {
    // A processor's thread entering its SPMD function.
    let worker_begins = match current() {
        Some(p) if !p.begun => {
            p.begun = true;
            Some(true)
        }
        Some(_) => Some(false),
        None => None,
    };
    match worker_begins {
        Some(true) => return,
        Some(false) => with_proc("bsp_begin", |p| {
            p.abort("bsp_begin: May be called only once".to_owned())
        }),
        None => {}
    }
    if BEGUN.swap(true, Ordering::AcqRel) {
        report::end_with("bsp_begin: May be called only once");
    }
    let mut requested = maxprocs;
    #[cfg(feature = "mpi")]
    if mpi_mode::active() {
        if mpi_mode::rank() == 0 && maxprocs <= 0 {
            report::end_with(&format!(
                "bsp_begin: The requested number of processes must be strictly greater than 0. \
                 Instead, it was {maxprocs}"
            ));
        }
        requested = mpi_mode::root_value(maxprocs);
    }
    if requested <= 0 {
        report::end_with(&format!(
            "bsp_begin: The requested number of processes must be strictly greater than 0. \
             Instead, it was {requested}"
        ));
    }
    // `maxprocs` is the most the program wants, as the standard says: a
    // machine of fewer processors (mpirun's ranks, or BSP_PROCS on
    // threads) runs the section on all of them. Under MPI, fewer
    // processors than ranks means the first `requested` ranks run the
    // section, and the rest take no part (see below).
    if let Some(most) = machine_size() {
        requested = requested.min(BspPid::try_from(most).unwrap_or(BspPid::MAX));
    }
    let session = runtime(requested as usize)
        .begin_first(requested as usize, worker)
        .unwrap_or_else(|e| report::end_with(&format!("bsp_begin: {}", report::describe(&e))));
    let Some(session) = session else {
        // An MPI rank beyond the processors asked for, as under BSPonMPI:
        // it takes no part, and leaves once the others have ended (MPI's
        // finalisation at exit waits for them).
        std::process::exit(0);
    };
    NPROCS.store(session.nprocs(), Ordering::Release);
    install(Proc::new(SessionRef::Owned(Box::new(session)), true));
    #[cfg(feature = "mpi")]
    let threads = !mpi_mode::active();
    #[cfg(not(feature = "mpi"))]
    let threads = true;
    if threads {
        bsp_core::at_exit(check_at_exit);
    }
}

/// `bsp_end()`: ends the SPMD section; processors other than 0 stop here.
#[no_mangle]
pub extern "C" fn bsp_end() {
    let begun = current().is_some_and(|p| p.begun);
    let Some(mut proc) = begun.then(uninstall).flatten() else {
        if ENDED.load(Ordering::Acquire) {
            report::end_with("bsp_end: may not be called multiple times");
        }
        report::end_with("bsp_end: called without calling bsp_begin() before");
    };
    proc.end();
    match proc.into_session() {
        Some(session) => {
            // Processor 0 (or this rank): the section is over.
            drop(session);
            ENDED.store(true, Ordering::Release);
        }
        None => loop {
            // A thread of processors 1..p: only processor 0 goes on.
            std::thread::park();
        },
    }
}

/// `bsp_nprocs()`.
#[no_mangle]
pub extern "C" fn bsp_nprocs() -> BspPid {
    if let Some(p) = current() {
        return p.nprocs as BspPid;
    }
    if ENDED.load(Ordering::Acquire) {
        return NPROCS.load(Ordering::Acquire) as BspPid;
    }
    available_procs() as BspPid
}

/// `bsp_pid()`.
#[no_mangle]
pub extern "C" fn bsp_pid() -> BspPid {
    with_proc("bsp_pid", |p| p.pid as BspPid)
}

/// `bsp_time()`.
#[no_mangle]
pub extern "C" fn bsp_time() -> f64 {
    with_proc("bsp_time", |p| p.time())
}

/// `bsp_sync()`.
#[no_mangle]
pub extern "C" fn bsp_sync() {
    with_proc("bsp_sync", |p| p.sync())
}

/// The end of `bsp_abort` and `bsp_vabort` (which `bsp.h` defines inline,
/// formatting the message): ends the whole program with `message`.
///
/// # Safety
///
/// `message` is a NUL-terminated C string (or NULL).
#[no_mangle]
pub unsafe extern "C" fn bsp_bsplib_abort_message(message: *const c_char) -> ! {
    let text = if message.is_null() {
        String::new()
    } else {
        // SAFETY: the caller's contract: a NUL-terminated C string.
        unsafe { CStr::from_ptr(message) }
            .to_string_lossy()
            .into_owned()
    };
    let text = text.trim_end_matches('\n').to_owned();
    let inside = current().is_some_and(|p| p.begun);
    if inside {
        with_proc("bsp_abort", |p| p.abort(text))
    } else {
        report::end_with(&text)
    }
}

/// `bsp_push_reg(addr, size)`.
#[no_mangle]
pub extern "C" fn bsp_push_reg(addr: *const c_void, size: BspSize) {
    with_proc("bsp_push_reg", |p| {
        if size < 0 {
            p.abort("bsp_push_reg: memory size must be positive".to_owned());
        }
        p.push_reg(addr as usize, size as usize)
    })
}

/// `bsp_pop_reg(addr)`.
#[no_mangle]
pub extern "C" fn bsp_pop_reg(addr: *const c_void) {
    with_proc("bsp_pop_reg", |p| p.pop_reg(addr as usize))
}

/// `bsp_put(pid, src, dst, offset, nbytes)`.
///
/// # Safety
///
/// BSPlib's contract: `src` is readable for `nbytes` bytes.
#[no_mangle]
pub unsafe extern "C" fn bsp_put(
    pid: BspPid,
    src: *const c_void,
    dst: *mut c_void,
    offset: BspSize,
    nbytes: BspSize,
) {
    // SAFETY: the caller's contract is `Proc::put`'s.
    with_proc("bsp_put", |p| unsafe {
        p.put("bsp_put", pid, src.cast(), dst as usize, offset, nbytes)
    })
}

/// `bsp_hpput(pid, src, dst, offset, nbytes)`: buffered, as `bsp_put`.
///
/// # Safety
///
/// As [`bsp_put`].
#[no_mangle]
pub unsafe extern "C" fn bsp_hpput(
    pid: BspPid,
    src: *const c_void,
    dst: *mut c_void,
    offset: BspSize,
    nbytes: BspSize,
) {
    // SAFETY: the caller's contract is `Proc::put`'s.
    with_proc("bsp_hpput", |p| unsafe {
        p.put("bsp_hpput", pid, src.cast(), dst as usize, offset, nbytes)
    })
}

/// `bsp_get(pid, src, offset, dst, nbytes)`.
///
/// # Safety
///
/// BSPlib's contract: `dst` is writable for `nbytes` bytes, and left alone
/// by the program until the next `bsp_sync` returns.
#[no_mangle]
pub unsafe extern "C" fn bsp_get(
    pid: BspPid,
    src: *const c_void,
    offset: BspSize,
    dst: *mut c_void,
    nbytes: BspSize,
) {
    // SAFETY: the caller's contract is `Proc::get`'s.
    with_proc("bsp_get", |p| unsafe {
        p.get("bsp_get", pid, src as usize, offset, dst.cast(), nbytes)
    })
}

/// `bsp_hpget(pid, src, offset, dst, nbytes)`: buffered, as `bsp_get`.
///
/// # Safety
///
/// As [`bsp_get`].
#[no_mangle]
pub unsafe extern "C" fn bsp_hpget(
    pid: BspPid,
    src: *const c_void,
    offset: BspSize,
    dst: *mut c_void,
    nbytes: BspSize,
) {
    // SAFETY: the caller's contract is `Proc::get`'s.
    with_proc("bsp_hpget", |p| unsafe {
        p.get("bsp_hpget", pid, src as usize, offset, dst.cast(), nbytes)
    })
}

/// `bsp_set_tagsize(&size)`.
///
/// # Safety
///
/// `tag_nbytes` is NULL or points to a `bsp_size_t`.
#[no_mangle]
pub unsafe extern "C" fn bsp_set_tagsize(tag_nbytes: *mut BspSize) {
    with_proc("bsp_set_tagsize", |p| {
        if tag_nbytes.is_null() {
            // BSPonMPI's words.
            p.abort("bsp_set_tagsize: NULL ptr as argument is now allowed".to_owned());
        }
        // SAFETY: the caller's contract: a valid, non-null (checked) pointer.
        let size = unsafe { *tag_nbytes };
        if size < 0 {
            p.abort("bsp_set_tagsize: Tag size may not be negative".to_owned());
        }
        let previous = p.set_tagsize(size as usize);
        // SAFETY: as above.
        unsafe { *tag_nbytes = previous as BspSize };
    })
}

/// `bsp_send(pid, tag, payload, nbytes)`.
///
/// # Safety
///
/// `tag` is readable for the tag size, `payload` for `nbytes` bytes.
#[no_mangle]
pub unsafe extern "C" fn bsp_send(
    pid: BspPid,
    tag: *const c_void,
    payload: *const c_void,
    payload_nbytes: BspSize,
) {
    // SAFETY: the caller's contract is `Proc::send`'s.
    with_proc("bsp_send", |p| unsafe {
        p.send(pid, tag.cast(), payload.cast(), payload_nbytes)
    })
}

/// `bsp_qsize(&nmessages, &accum_nbytes)`.
///
/// # Safety
///
/// Both pointers are NULL or point to `int`s.
#[no_mangle]
pub unsafe extern "C" fn bsp_qsize(nmessages: *mut BspPid, accum_nbytes: *mut BspSize) {
    with_proc("bsp_qsize", |p| {
        if nmessages.is_null() || accum_nbytes.is_null() {
            p.abort("bsp_qsize: both arguments may not be NULL".to_owned());
        }
        let (n, bytes) = p.qsize();
        // SAFETY: the caller's contract; both non-null (checked).
        unsafe {
            *nmessages = n as BspPid;
            *accum_nbytes = bytes as BspSize;
        }
    })
}

/// `bsp_get_tag(&status, tag)`.
///
/// # Safety
///
/// `status` is NULL or points to a `bsp_size_t`; `tag` is NULL or
/// writable for the tag size of the queue's messages.
#[no_mangle]
pub unsafe extern "C" fn bsp_get_tag(status: *mut BspSize, tag: *mut c_void) {
    with_proc("bsp_get_tag", |p| {
        if status.is_null() {
            p.abort("bsp_get_tag: first arguments may not be NULL".to_owned());
        }
        let size = p.received_tag_size();
        if tag.is_null() && size > 0 {
            p.abort(format!(
                "bsp_get_tag: tag must point to a block of available memory of at least {size} \
                 bytes long"
            ));
        }
        let first = p.first_tag().map(|(len, t)| (len, t.to_vec()));
        // SAFETY: the caller's contract: `status` non-null (checked), and
        // `tag` writable for the tag size (non-null when it is not 0).
        unsafe {
            match first {
                None => *status = -1,
                Some((len, bytes)) => {
                    *status = len as BspSize;
                    if !bytes.is_empty() {
                        std::ptr::copy_nonoverlapping(bytes.as_ptr(), tag.cast(), bytes.len());
                    }
                }
            }
        }
    })
}

/// `bsp_move(payload, reception_nbytes)`.
///
/// # Safety
///
/// `payload` is writable for `reception_nbytes` bytes (or NULL with 0).
#[no_mangle]
pub unsafe extern "C" fn bsp_move(payload: *mut c_void, reception_nbytes: BspSize) {
    with_proc("bsp_move", |p| {
        if reception_nbytes < 0 {
            p.abort("bsp_move: size argument may not be negative".to_owned());
        }
        if payload.is_null() && reception_nbytes > 0 {
            p.abort("bsp_move: payload may not be NULL if reception_nbytes is non-zero".to_owned());
        }
        let into: &mut [u8] = if reception_nbytes == 0 {
            &mut []
        } else {
            // SAFETY: the caller's contract: writable for the (positive,
            // checked) size, non-null (checked).
            unsafe { std::slice::from_raw_parts_mut(payload.cast(), reception_nbytes as usize) }
        };
        if !p.move_first(into) {
            p.abort("bsp_move: Message queue was empty".to_owned());
        }
    })
}

/// `bsp_hpmove(&tag_ptr, &payload_ptr)`.
///
/// # Safety
///
/// Both pointers are NULL or point to `void *`s.
#[no_mangle]
pub unsafe extern "C" fn bsp_hpmove(
    tag_ptr: *mut *mut c_void,
    payload_ptr: *mut *mut c_void,
) -> BspSize {
    with_proc("bsp_hpmove", |p| {
        if tag_ptr.is_null() || payload_ptr.is_null() {
            // BSPonMPI's words, its typo included.
            p.abort("bsp_hpmove: pointer arugments may not be NULL".to_owned());
        }
        match p.hpmove() {
            None => -1,
            Some((tag, payload, len)) => {
                // SAFETY: the caller's contract; both non-null (checked).
                unsafe {
                    *tag_ptr = tag;
                    *payload_ptr = payload;
                }
                len as BspSize
            }
        }
    })
}
