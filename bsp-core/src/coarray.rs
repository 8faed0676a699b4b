//! Coarrays: distributed arrays with one local part per processor, written
//! and read remotely with buffered puts and gets.

use std::any::Any;
use std::marker::PhantomData;

use bytemuck::Pod;

use crate::scope::{Scope, Scoped};
#[cfg(all(feature = "mpi", target_os = "linux"))]
use crate::shared_memory::Region;

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

/// A storage as `Any`, to be downcast to its concrete type; every
/// `'static` type has it.
pub(crate) trait AsAny: Any {
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
}

impl<S: Any> AsAny for S {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

/// Type-erased local storage of a coarray (or of a pending get's value).
pub(crate) trait Storage: AsAny + Send + Sync {
    fn bytes(&self) -> &[u8];
    fn bytes_mut(&mut self) -> &mut [u8];
    fn elem_size(&self) -> usize;
    fn len(&self) -> usize;
    /// Replaces the local part with `bytes` (a checkpoint's copy): a
    /// coarray takes any whole number of elements, an area only its own
    /// length. Whether it could.
    fn restore_bytes(&mut self, bytes: &[u8]) -> bool;
}

/// How many `T`s `bytes` (a checkpoint's copy of a local part) holds, if
/// a whole number (any number for a zero-sized `T`, which copies nothing).
fn whole_elements<T>(bytes: &[u8]) -> Option<usize> {
    let size = std::mem::size_of::<T>().max(1);
    (bytes.len() % size == 0).then_some(bytes.len() / size)
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
    fn restore_bytes(&mut self, bytes: &[u8]) -> bool {
        let Some(len) = whole_elements::<T>(bytes) else {
            return false;
        };
        self.0 = vec![T::zeroed(); len];
        bytemuck::cast_slice_mut::<T, u8>(&mut self.0).copy_from_slice(bytes);
        true
    }
}

/// The fewest bytes of a coarray's local part that [`Ctx::coarray`](crate::Ctx::coarray)
/// places in [`Mapped`] memory where the transport asks for it: smaller
/// payloads travel in the sync window's mailboxes anyway (up to 32 KiB,
/// `fenced::mail_most`), and larger ones are placed. At 64 KiB, puts of
/// 32 to 63 KiB into a coarray of their size were placed through MPI's
/// receive datatypes, 5.4-7.5 us a superstep against 1.7-1.9 us pushed
/// into mapped memory (np = 2, AMD-2b, BENCHMARKS.md section 14g).
pub(crate) const MAPPED_MIN: usize = 32 << 10;

/// A coarray's local part in memory that the other processes of the node
/// map (`shared_memory.rs`): under the MPI transport on one node, the
/// senders of a sync copy their payloads straight into it.
#[cfg(all(feature = "mpi", target_os = "linux"))]
pub(crate) struct Mapped<T> {
    region: Region,
    len: usize,
    /// `Send` and `Sync` as the region is: the bytes are `T: Pod`, which
    /// has no interior mutability, so shared `&[T]` only read (as for
    /// `PodVec`).
    _t: PhantomData<fn() -> T>,
}

#[cfg(all(feature = "mpi", target_os = "linux"))]
impl<T: Pod> Mapped<T> {
    /// `len` zeroed elements (at least one byte's worth); `None` where
    /// the kernel gives no such memory.
    pub(crate) fn zeroed(len: usize) -> Option<Self> {
        let bytes = len.checked_mul(std::mem::size_of::<T>())?;
        Some(Mapped {
            region: Region::zeroed(bytes.max(1))?,
            len,
            _t: PhantomData,
        })
    }

    pub(crate) fn as_slice(&self) -> &[T] {
        let bytes = &self.region.bytes()[..self.len * std::mem::size_of::<T>()];
        // The region is page-aligned, so aligned for any `T`.
        bytemuck::cast_slice(bytes)
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [T] {
        let bytes = &mut self.region.bytes_mut()[..self.len * std::mem::size_of::<T>()];
        bytemuck::cast_slice_mut(bytes)
    }
}

#[cfg(all(feature = "mpi", target_os = "linux"))]
impl<T: Pod + Send> Storage for Mapped<T> {
    fn bytes(&self) -> &[u8] {
        bytemuck::cast_slice(self.as_slice())
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        bytemuck::cast_slice_mut(self.as_mut_slice())
    }
    fn elem_size(&self) -> usize {
        std::mem::size_of::<T>()
    }
    fn len(&self) -> usize {
        self.len
    }
    fn restore_bytes(&mut self, bytes: &[u8]) -> bool {
        let Some(len) = whole_elements::<T>(bytes) else {
            return false;
        };
        if len != self.len {
            match Mapped::zeroed(len) {
                Some(fresh) => *self = fresh,
                None => return false,
            }
        }
        self.bytes_mut().copy_from_slice(bytes);
        true
    }
}

/// A coarray's local part of `T`s taken out of the registry: a vector,
/// or memory the node's other processes map.
pub(crate) enum Part<T> {
    Heap(Vec<T>),
    #[cfg(all(feature = "mpi", target_os = "linux"))]
    Mapped(Mapped<T>),
}

impl<T: Pod + Send> Part<T> {
    /// The part held by `storage`, if it holds `T`s.
    pub(crate) fn of(storage: Box<dyn Storage>) -> Option<Self> {
        let any = storage.into_any();
        #[cfg(all(feature = "mpi", target_os = "linux"))]
        let any = match any.downcast::<Mapped<T>>() {
            Ok(mapped) => return Some(Part::Mapped(*mapped)),
            Err(any) => any,
        };
        any.downcast::<PodVec<T>>().ok().map(|v| Part::Heap(v.0))
    }

    /// `len` zeroed elements in memory that the node's other processes
    /// may map; `None` where there is none (other systems, a build
    /// without the MPI transport, a kernel without memory files).
    pub(crate) fn mapped(len: usize) -> Option<Self> {
        #[cfg(all(feature = "mpi", target_os = "linux"))]
        return Mapped::zeroed(len).map(Part::Mapped);
        #[cfg(not(all(feature = "mpi", target_os = "linux")))]
        {
            let _ = len;
            None
        }
    }

    /// The elements as a vector: the vector itself, or a copy of mapped
    /// memory.
    pub(crate) fn into_vec(self) -> Vec<T> {
        match self {
            Part::Heap(v) => v,
            #[cfg(all(feature = "mpi", target_os = "linux"))]
            Part::Mapped(m) => m.as_slice().to_vec(),
        }
    }

    /// The part as a registry's storage.
    pub(crate) fn into_storage(self) -> Box<dyn Storage> {
        match self {
            Part::Heap(v) => Box::new(PodVec(v)),
            #[cfg(all(feature = "mpi", target_os = "linux"))]
            Part::Mapped(m) => Box::new(m),
        }
    }
}

impl<T: Pod> std::ops::Deref for Part<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match self {
            Part::Heap(v) => v,
            #[cfg(all(feature = "mpi", target_os = "linux"))]
            Part::Mapped(m) => m.as_slice(),
        }
    }
}

impl<T: Pod> std::ops::DerefMut for Part<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        match self {
            Part::Heap(v) => v,
            #[cfg(all(feature = "mpi", target_os = "linux"))]
            Part::Mapped(m) => m.as_mut_slice(),
        }
    }
}

/// The local part in `storage` as a slice of `T`, if it holds `T`s.
pub(crate) fn slice_of<T: Pod>(storage: &dyn Storage) -> Option<&[T]> {
    let any = storage.as_any();
    #[cfg(all(feature = "mpi", target_os = "linux"))]
    if let Some(mapped) = any.downcast_ref::<Mapped<T>>() {
        return Some(mapped.as_slice());
    }
    any.downcast_ref::<PodVec<T>>().map(|v| &v.0[..])
}

/// The local part in `storage` as a mutable slice of `T`, if it holds `T`s.
pub(crate) fn slice_of_mut<T: Pod>(storage: &mut dyn Storage) -> Option<&mut [T]> {
    let any = storage.as_any_mut();
    #[cfg(all(feature = "mpi", target_os = "linux"))]
    if any.is::<Mapped<T>>() {
        return any.downcast_mut::<Mapped<T>>().map(Mapped::as_mut_slice);
    }
    any.downcast_mut::<PodVec<T>>().map(|v| &mut v.0[..])
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
