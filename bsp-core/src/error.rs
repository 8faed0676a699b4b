//! The error type returned by [`Runtime::run`](crate::Runtime::run).

use std::fmt;
use std::sync::Arc;

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
    /// A put, get or send reached a coarray or queue that was released, or
    /// a processor used the handle of one it had released.
    Released,
    /// A processor returned from its closure with communication requested
    /// but never delivered by a `sync`.
    PendingCommunication,
    /// The runtime was configured wrongly (for example, zero processors).
    Config,
    /// The transport failed (for example, an MPI call returned an error).
    Transport,
    /// A processor waited at a `sync` longer than the run's time limit
    /// ([`Runtime::sync_timeout`](crate::Runtime::with_sync_timeout) or
    /// `BSP_SYNC_TIMEOUT`); the message names the processors that had not
    /// arrived.
    Timeout,
    /// A processor ended the run on purpose with
    /// [`Ctx::abort`](crate::Ctx::abort) (BSPlib's `bsp_abort`).
    Abort,
    /// A processor's closure returned an error through
    /// [`Runtime::try_run`](crate::Runtime::try_run); the original error is
    /// the [`source`](std::error::Error::source) where the transport keeps it.
    Application,
    /// A get's value was taken before the `sync` that delivers it, or twice,
    /// or with a handle of another run.
    NotDelivered,
    /// A file could not be written: a checkpoint's
    /// ([`Ctx::checkpoint`](crate::Ctx::checkpoint)), on a full disk or in a
    /// directory that cannot be written.
    Io,
}

impl ErrorKind {
    /// Every kind, in declaration order (the order of their wire codes).
    const ALL: [ErrorKind; 14] = [
        ErrorKind::Panic,
        ErrorKind::SyncMismatch,
        ErrorKind::RegistrationMismatch,
        ErrorKind::BadPid,
        ErrorKind::OutOfBounds,
        ErrorKind::Released,
        ErrorKind::PendingCommunication,
        ErrorKind::Config,
        ErrorKind::Transport,
        ErrorKind::Timeout,
        ErrorKind::Abort,
        ErrorKind::Application,
        ErrorKind::NotDelivered,
        ErrorKind::Io,
    ];

    /// A small integer naming this kind, for sending an error between
    /// processes.
    pub(crate) fn code(self) -> u64 {
        ErrorKind::ALL.iter().position(|&k| k == self).unwrap_or(0) as u64
    }

    /// The kind with wire code `code` (a [`Panic`](ErrorKind::Panic) for an
    /// unknown code).
    pub(crate) fn from_code(code: u64) -> ErrorKind {
        usize::try_from(code)
            .ok()
            .and_then(|i| ErrorKind::ALL.get(i).copied())
            .unwrap_or(ErrorKind::Panic)
    }

    /// The words of the error line: `processor 1, superstep 2: <what>: ...`.
    fn what(self) -> &'static str {
        match self {
            ErrorKind::Panic => "panicked",
            ErrorKind::SyncMismatch => "superstep mismatch",
            ErrorKind::RegistrationMismatch => "registration mismatch",
            ErrorKind::BadPid => "bad processor id",
            ErrorKind::OutOfBounds => "out of bounds",
            ErrorKind::Released => "released coarray or queue",
            ErrorKind::PendingCommunication => "undelivered communication",
            ErrorKind::Config => "configuration error",
            ErrorKind::Transport => "transport error",
            ErrorKind::Timeout => "sync timeout",
            ErrorKind::Abort => "aborted",
            ErrorKind::Application => "application error",
            ErrorKind::NotDelivered => "get not delivered",
            ErrorKind::Io => "I/O error",
        }
    }
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
#[derive(Clone)]
pub struct Error {
    kind: ErrorKind,
    pid: Option<usize>,
    superstep: Option<usize>,
    message: String,
    /// The application's own error, for [`ErrorKind::Application`].
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

/// Errors are equal when their kind, processor, superstep and message are;
/// the [`source`](std::error::Error::source) is not compared.
impl PartialEq for Error {
    fn eq(&self, other: &Self) -> bool {
        (self.kind, self.pid, self.superstep, &self.message)
            == (other.kind, other.pid, other.superstep, &other.message)
    }
}

impl Eq for Error {}

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
            source: None,
        }
    }

    /// An application error raised on processor `pid` during `superstep`,
    /// keeping `source` for [`std::error::Error::source`].
    pub(crate) fn application(
        pid: usize,
        superstep: usize,
        source: Box<dyn std::error::Error + Send + Sync>,
    ) -> Self {
        Error {
            source: Some(Arc::from(source)),
            ..Error::at(ErrorKind::Application, pid, superstep, String::new())
        }
        .with_message_from_source()
    }

    fn with_message_from_source(mut self) -> Self {
        if let Some(source) = &self.source {
            self.message = source.to_string();
        }
        self
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

    /// The same error seen from an enclosing machine: blamed on `pid` at
    /// `superstep` (that machine's numbering), with `note` appended to the
    /// message. The source is kept.
    pub(crate) fn relocated(self, pid: Option<usize>, superstep: usize, note: &str) -> Self {
        Error {
            pid,
            superstep: Some(superstep),
            message: format!("{} {note}", self.message),
            ..self
        }
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
        write!(f, "{}: {}", self.kind.what(), self.message)
    }
}

/// `{:?}` writes what `Display` writes, so that a `main` returning
/// `Result<(), bsp::Error>` ends with the sentence a user can act on
/// (`Error: processor 1, superstep 0: …`); `{:#?}` writes the fields.
///
/// ```
/// let err = bsp_core::run(2, |ctx| {
///     if ctx.pid() == 1 {
///         panic!("bad input");
///     }
///     ctx.sync();
/// })
/// .unwrap_err();
/// assert_eq!(format!("{err:?}"), err.to_string());
/// assert!(format!("{err:#?}").contains("kind: Panic"));
/// ```
impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !f.alternate() {
            return fmt::Display::fmt(self, f);
        }
        f.debug_struct("Error")
            .field("kind", &self.kind)
            .field("pid", &self.pid)
            .field("superstep", &self.superstep)
            .field("message", &self.message)
            .field("source", &self.source.as_ref().map(|s| s.to_string()))
            .finish()
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.source {
            Some(source) => Some(source.as_ref()),
            None => None,
        }
    }
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
