//! Registered foreign areas: memory that the program owns (C memory, for
//! a BSPlib layer), registered with bsp by address and length, and
//! written and read remotely by byte offset, like a coarray of bytes whose
//! local part bsp does not own.
//!
//! The handle is [`Area`]; the methods are on [`Ctx`](crate::Ctx)
//! (`ctx/areas.rs`). Inside the runtime an area is one more kind of local
//! storage ([`ForeignBytes`]): puts, gets, bounds checks and delivery are
//! the coarrays', with elements of one byte.

use crate::coarray::Storage;
use crate::scope::{Scope, Scoped};

/// A handle to a registered foreign area: `len` bytes at an address that
/// the program owns, registered with
/// `Areas::register_area` (in `bsp::expert`).
///
/// Registration is collective, like that of coarrays: the i-th
/// registration (of a coarray, queue or area) on every processor names the
/// same distributed variable, and local lengths may differ. Puts and gets
/// address processor `pid`'s area by a byte offset from the start of *its*
/// registration, whatever its address there. Like a coarray's, the handle
/// belongs to the machine that registered it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Area {
    pub(crate) id: u32,
    pub(crate) scope: Scope,
}

impl Scoped for Area {
    const WHAT: &'static str = "area";
    fn id(&self) -> u32 {
        self.id
    }
    fn scope(&self) -> Scope {
        self.scope
    }
}

impl std::fmt::Debug for Area {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Area#{}", self.id)
    }
}

/// The local part of a foreign area: an address and a length that the
/// program promised valid (see `Areas::register_area`).
pub(crate) struct ForeignBytes {
    base: *mut u8,
    len: usize,
}

impl ForeignBytes {
    /// # Safety
    ///
    /// As `Areas::register_area`: `base..base +
    /// len` stays valid for reads and writes until the area is released or
    /// the run ends, and nothing else touches it while this processor is
    /// inside a bsp call. `base` may be anything (null included) when `len`
    /// is 0.
    pub(crate) unsafe fn new(base: *mut u8, len: usize) -> Self {
        ForeignBytes { base, len }
    }
}

// SAFETY: the area is read and written only by the runtime of the
// processor that registered it, inside that processor's own calls (its
// puts are applied and its gets served during its `sync`), which happen on
// the thread that owns its `Ctx`; `register_area`'s contract makes the
// memory valid and otherwise untouched for as long as the registration
// lives. Moving the handle to another thread (a `Ctx` is built on the
// processor's thread and stays there) moves no access with it.
unsafe impl Send for ForeignBytes {}
// SAFETY: see `Send`: the only shared access is `bytes()`, a read that the
// contract allows, made by the owning processor's runtime; areas are never
// lent to other threads (only coarrays are, by `put_from`).
unsafe impl Sync for ForeignBytes {}

impl Storage for ForeignBytes {
    fn bytes(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `base..base + len` is valid for reads for as long as the
        // registration lives (`ForeignBytes::new`'s contract), and nothing
        // writes it while this borrow of the registry is held: bsp writes
        // it only through `bytes_mut` (which needs `&mut self`), and the
        // program only outside bsp calls.
        unsafe { std::slice::from_raw_parts(self.base, self.len) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: as in `bytes`, for writes: `&mut self` excludes every
        // other borrow made through this registration, and the program
        // does not touch the memory during bsp calls. Two registrations of
        // overlapping memory are never borrowed at the same time: delivery
        // writes one put at a time.
        unsafe { std::slice::from_raw_parts_mut(self.base, self.len) }
    }

    fn elem_size(&self) -> usize {
        1
    }

    fn len(&self) -> usize {
        self.len
    }

    fn restore_bytes(&mut self, bytes: &[u8]) -> bool {
        if bytes.len() != self.len {
            return false;
        }
        self.bytes_mut().copy_from_slice(bytes);
        true
    }
}
