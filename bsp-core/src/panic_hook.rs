//! Quiet panics on processors: a panic in a processor's closure becomes
//! the run's [`Error`](crate::Error), so the standard hook's report (and a
//! backtrace under `RUST_BACKTRACE=1`) would only precede bsp's own error
//! line with noise. bsp installs, once, a hook that records where a
//! processor panicked (the location goes into the error's message) and
//! hands every other thread's panics to the hook that was installed before.

use std::cell::{Cell, RefCell};
use std::panic::{self, PanicHookInfo};
use std::sync::Once;

use crate::error::{Error, ErrorKind};

thread_local! {
    /// Whether this thread is running a processor's closure.
    static ON_PROCESSOR: Cell<bool> = const { Cell::new(false) };
    /// Where the last panic on this processor thread happened.
    static LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

static INSTALL: Once = Once::new();

fn install() {
    INSTALL.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info: &PanicHookInfo<'_>| {
            if ON_PROCESSOR.with(Cell::get) {
                let at = info.location().map(|l| l.to_string());
                LOCATION.with(|l| *l.borrow_mut() = at);
            } else {
                previous(info);
            }
        }));
    });
}

/// Where the last panic on this thread happened, if it was on a processor.
pub(crate) fn take_location() -> Option<String> {
    LOCATION.with(|l| l.borrow_mut().take())
}

/// Marks the current thread as a processor's until dropped.
pub(crate) struct ProcessorThread {
    was: bool,
}

impl ProcessorThread {
    pub(crate) fn enter() -> Self {
        install();
        ProcessorThread {
            was: ON_PROCESSOR.with(|c| c.replace(true)),
        }
    }
}

impl Drop for ProcessorThread {
    fn drop(&mut self) {
        ON_PROCESSOR.with(|c| c.set(self.was));
    }
}

/// Text of a panic payload.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".to_owned()
    }
}

/// The error of a processor's panic with `payload` (not [`Aborted`]) on
/// processor `pid` at `superstep`: the misuse it carries, or a
/// [`ErrorKind::Panic`] with the panic's message and location.
pub(crate) fn panic_error(
    payload: Box<dyn std::any::Any + Send>,
    pid: usize,
    superstep: usize,
) -> Error {
    match payload.downcast::<Error>() {
        // A misuse found by a method that could not end the run itself.
        Ok(error) => *error,
        Err(payload) => {
            let mut message = panic_message(payload.as_ref());
            if let Some(at) = take_location() {
                message = format!("{message} (at {at})");
            }
            Error::at(ErrorKind::Panic, pid, superstep, message)
        }
    }
}
