//! Coarrays: distributed arrays with one local part per processor, written
//! and read remotely with buffered puts and gets.

use std::any::Any;
use std::marker::PhantomData;

use bytemuck::Pod;

use crate::scope::{Scope, Scoped};

/// A handle to a registered coarray of `T`.
///
/// Handles are cheap `Copy` ids; the data lives in the [`Ctx`](crate::Ctx)
/// and is borrowed with [`Ctx::local`](crate::Ctx::local) and
/// [`Ctx::local_mut`](crate::Ctx::local_mut). The i-th registration on every
/// processor names the same distributed variable.
///
/// A handle belongs to the machine that registered it: using it on another
/// (a sub-machine of a [`split`](crate::Ctx::split), the parent of one, or
/// another run) ends the run with an error of kind
/// [`RegistrationMismatch`](crate::ErrorKind::RegistrationMismatch).
pub struct Coarray<T> {
    pub(crate) id: u32,
    scope: Scope,
    _elem: PhantomData<fn() -> T>,
}

impl<T> Coarray<T> {
    pub(crate) fn new(id: u32, scope: Scope) -> Self {
        Coarray {
            id,
            scope,
            _elem: PhantomData,
        }
    }
}

impl<T> Scoped for Coarray<T> {
    const WHAT: &'static str = "coarray";
    fn id(&self) -> u32 {
        self.id
    }
    fn scope(&self) -> Scope {
        self.scope
    }
}

impl<T> Clone for Coarray<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Coarray<T> {}

impl<T> std::fmt::Debug for Coarray<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Coarray<{}>#{}", std::any::type_name::<T>(), self.id)
    }
}

/// The value of a [`Ctx::get`](crate::Ctx::get), readable with
/// [`Ctx::take`](crate::Ctx::take) once the next `sync` has returned.
#[must_use = "a get's value is only reachable through its handle"]
pub struct GetHandle<T> {
    pub(crate) id: u64,
    pub(crate) ready_at: usize,
    pub(crate) scope: Scope,
    _elem: PhantomData<fn() -> T>,
}

impl<T> GetHandle<T> {
    pub(crate) fn new(id: u64, ready_at: usize, scope: Scope) -> Self {
        GetHandle {
            id,
            ready_at,
            scope,
            _elem: PhantomData,
        }
    }
}

impl<T> std::fmt::Debug for GetHandle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GetHandle<{}>#{}", std::any::type_name::<T>(), self.id)
    }
}

/// Type-erased local storage of a coarray (or of a pending get's value).
pub(crate) trait Storage: Send + Sync {
    fn bytes(&self) -> &[u8];
    fn bytes_mut(&mut self) -> &mut [u8];
    fn elem_size(&self) -> usize;
    fn len(&self) -> usize;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
    /// Replaces the local part with `bytes` (a checkpoint's copy): a
    /// coarray takes any whole number of elements, an area only its own
    /// length. Whether it could.
    fn restore_bytes(&mut self, bytes: &[u8]) -> bool;
}

/// A coarray's local part (or a pending get's value): a `Vec<T>` that may be
/// read from several threads at once while lent to the router.
pub(crate) struct PodVec<T>(pub(crate) Vec<T>);

// SAFETY: sharing `&PodVec<T>` between threads only ever hands out `&[T]`
// (through `Storage::bytes`, `as_any` and `Ctx::local`); mutation needs
// `&mut`. `T: Pod` guarantees that a shared reference to `T` permits reads
// and only reads (no `Cell`, `UnsafeCell`, atomics or pointers: bytemuck's
// safety contract for `Pod`), so concurrent reads through `&[T]` are data-race
// free, which is what `Sync` requires. `T: Send` keeps the vector movable.
unsafe impl<T: Pod + Send> Sync for PodVec<T> {}

impl<T: Pod + Send> Storage for PodVec<T> {
    fn bytes(&self) -> &[u8] {
        bytemuck::cast_slice(&self.0)
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        bytemuck::cast_slice_mut(&mut self.0)
    }
    fn elem_size(&self) -> usize {
        std::mem::size_of::<T>()
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
    fn restore_bytes(&mut self, bytes: &[u8]) -> bool {
        let size = std::mem::size_of::<T>().max(1);
        if bytes.len() % size != 0 {
            return false;
        }
        self.0 = vec![T::zeroed(); bytes.len() / size];
        bytemuck::cast_slice_mut::<T, u8>(&mut self.0).copy_from_slice(bytes);
        true
    }
}

/// A coarray's local part lent to the router for one sync (see
/// [`Ctx::put_from`](crate::Ctx::put_from)), viewed as bytes.
pub(crate) struct LentStorage(pub(crate) std::sync::Arc<Box<dyn Storage>>);

impl AsRef<[u8]> for LentStorage {
    fn as_ref(&self) -> &[u8] {
        self.0.bytes()
    }
}

/// An owned `Vec<T>` viewed as bytes, so a put can hand it to the router
/// without copying.
pub(crate) struct PodBytes<T>(pub(crate) Vec<T>);

impl<T: Pod> AsRef<[u8]> for PodBytes<T> {
    fn as_ref(&self) -> &[u8] {
        bytemuck::cast_slice(&self.0)
    }
}
