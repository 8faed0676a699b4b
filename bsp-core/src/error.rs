//! The error type returned by [`Runtime::run`](crate::Runtime::run).

use std::fmt;

/// What went wrong in a BSP run, in broad classes that callers may match on.
///
/// The [`Error`] carries the details (processor, superstep, message).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A processor's closure panicked.
    Panic,
    /// Processors disagree on how many supersteps they run: one returned
    /// from its closure while another called `sync`.
    SyncMismatch,
    /// Processors registered coarrays or queues in different numbers, kinds
    /// or element types.
    RegistrationMismatch,
    /// A put, get or send named a processor id that is not below `nprocs`.
    BadPid,
    /// A put or get reached outside the destination's local part of a coarray.
    OutOfBounds,
    /// A put or get reached a coarray released in the same superstep.
    Released,
    /// A processor returned from its closure with communication requested
    /// but never delivered by a `sync`.
    PendingCommunication,
    /// The runtime was configured wrongly (for example, zero processors).
    Config,
    /// The transport failed (for example, an MPI call returned an error).
    Transport,
}

/// The error of a BSP run: what happened, on which processor, in which superstep.
///
/// # Examples
///
/// ```
/// let err = bsp_core::run(2, |ctx| {
///     if ctx.pid() == 1 {
///         panic!("bad input");
///     }
///     ctx.sync();
/// })
/// .unwrap_err();
/// assert_eq!(err.kind(), bsp_core::ErrorKind::Panic);
/// assert_eq!(err.pid(), Some(1));
/// assert_eq!(err.superstep(), Some(0));
/// assert!(err.to_string().contains("bad input"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    pid: Option<usize>,
    superstep: Option<usize>,
    message: String,
}

impl Error {
    pub(crate) fn new(
        kind: ErrorKind,
        pid: Option<usize>,
        superstep: Option<usize>,
        message: impl Into<String>,
    ) -> Self {
        Error {
            kind,
            pid,
            superstep,
            message: message.into(),
        }
    }

    /// An error raised on processor `pid` during `superstep`.
    pub(crate) fn at(
        kind: ErrorKind,
        pid: usize,
        superstep: usize,
        message: impl Into<String>,
    ) -> Self {
        Error::new(kind, Some(pid), Some(superstep), message)
    }

    /// The class of failure.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The processor that detected (or caused) the failure, if one did.
    pub fn pid(&self) -> Option<usize> {
        self.pid
    }

    /// The superstep of that processor when the failure was detected.
    pub fn superstep(&self) -> Option<usize> {
        self.superstep
    }

    /// The failure's own message, without the processor and superstep prefix.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.pid, self.superstep) {
            (Some(pid), Some(step)) => write!(f, "processor {pid}, superstep {step}: ")?,
            (Some(pid), None) => write!(f, "processor {pid}: ")?,
            _ => {}
        }
        let what = match self.kind {
            ErrorKind::Panic => "panicked",
            ErrorKind::SyncMismatch => "superstep mismatch",
            ErrorKind::RegistrationMismatch => "registration mismatch",
            ErrorKind::BadPid => "bad processor id",
            ErrorKind::OutOfBounds => "out of bounds",
            ErrorKind::Released => "released coarray",
            ErrorKind::PendingCommunication => "undelivered communication",
            ErrorKind::Config => "configuration error",
            ErrorKind::Transport => "transport error",
        };
        write!(f, "{what}: {}", self.message)
    }
}

impl std::error::Error for Error {}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
