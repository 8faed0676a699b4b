//! Coarray registration, local access and release.

use bytemuck::Pod;

use super::{unusable, Ctx};
use crate::coarray::{Coarray, Part, MAPPED_MIN};
use crate::error::ErrorKind;

impl Ctx {
    /// Registers a coarray whose local part on this processor has `local_len`
    /// elements, all zero.
    ///
    /// Registration is collective: every processor registers its coarrays
    /// and queues in the same order, in the same superstep, with the same
    /// element types (local lengths may differ). A mismatch ends the run
    /// with [`ErrorKind::RegistrationMismatch`](crate::ErrorKind::RegistrationMismatch) at the next `sync`.
    ///
    /// # Examples
    ///
    /// ```
    /// let out = bsp_core::run(3, |ctx| {
    ///     let a = ctx.coarray::<u32>(ctx.pid() + 1);
    ///     ctx.local(&a).len()
    /// })
    /// .unwrap();
    /// assert_eq!(out.all(), Some(&vec![1, 2, 3][..]));
    /// ```
    ///
    /// # Panics
    ///
    /// Ends the run with [`ErrorKind::Config`] if the local part cannot be
    /// allocated (more bytes than memory, or than an address space, holds).
    ///
    /// # Cost
    ///
    /// Local: allocates and zeroes `local_len` elements; no communication.
    ///
    /// Under MPI with every rank on one node, a local part of 32 KiB or
    /// more is memory that the other ranks map (an anonymous memory file),
    /// so that a sync's senders copy their puts straight into it: one
    /// `memcpy` per payload, as `MPI_Put` into a shared-memory window.
    /// [`replace_local`](Ctx::replace_local) and [`release`](Ctx::release)
    /// then copy, since a `Vec` cannot hold that memory; a part registered
    /// with [`coarray_from`](Ctx::coarray_from) stays the vector it is.
    pub fn coarray<T: Pod + Send>(&mut self, local_len: usize) -> Coarray<T> {
        if local_len.saturating_mul(std::mem::size_of::<T>()) >= MAPPED_MIN && self.caps.maps_memory
        {
            if let Some(part) = Part::<T>::mapped(local_len) {
                return Coarray::new(self.registry.register_part_for(None, part), self.scope);
            }
        }
        match bytemuck::allocation::try_zeroed_vec::<T>(local_len) {
            Ok(local) => self.coarray_from(local),
            Err(()) => {
                let msg = format!(
                    "cannot allocate a coarray of {local_len} elements of {} ({} bytes) \
                     on processor {}",
                    std::any::type_name::<T>(),
                    local_len as u128 * std::mem::size_of::<T>() as u128,
                    self.pid
                );
                self.misuse(ErrorKind::Config, msg)
            }
        }
    }

    /// Registers a coarray whose local part is `local` (taken without a copy).
    ///
    /// Collective, like [`coarray`](Ctx::coarray).
    ///
    /// # Examples
    ///
    /// ```
    /// let out = bsp_core::run(2, |ctx| {
    ///     let a = ctx.coarray_from(vec![ctx.pid() as u8; 4]);
    ///     ctx.local(&a).to_vec()
    /// })
    /// .unwrap();
    /// assert_eq!(out.all(), Some(&vec![vec![0; 4], vec![1; 4]][..]));
    /// ```
    ///
    /// # Cost
    ///
    /// Local, O(1).
    pub fn coarray_from<T: Pod + Send>(&mut self, local: Vec<T>) -> Coarray<T> {
        Coarray::new(self.registry.register_array(local), self.scope)
    }

    /// This processor's local part of `a`.
    ///
    /// # Panics
    ///
    /// If `a` was registered on another machine (another run, a split's sub-machine or its parent).
    pub fn local<T: Pod>(&self, a: &Coarray<T>) -> &[T] {
        match self.registry.array::<T>(self.id_of(a)) {
            Ok(part) => part,
            Err(why) => unusable(self.pid, self.superstep, why, "coarray", a.id),
        }
    }

    /// This processor's local part of `a`, mutably.
    ///
    /// # Panics
    ///
    /// If `a` was registered on another machine (another run, a split's sub-machine or its parent).
    pub fn local_mut<T: Pod>(&mut self, a: &Coarray<T>) -> &mut [T] {
        self.array_mut(a)
    }

    /// Replaces this processor's local part of `a` with `local` and returns
    /// the old one, without copying either (except for a large part made by
    /// [`coarray`](Ctx::coarray) under MPI on one node; see Cost): a way to
    /// hand a buffer to a coarray and take it back. The local length may
    /// change; puts and gets from other processors are checked against the
    /// length at the sync.
    ///
    /// # Examples
    ///
    /// ```
    /// let out = bsp_core::run(2, |ctx| {
    ///     let a = ctx.coarray::<u32>(0);
    ///     let old = ctx.replace_local(&a, vec![ctx.pid() as u32; 3]);
    ///     assert!(old.is_empty());
    ///     ctx.put(1 - ctx.pid(), &a, 2, &[9]);
    ///     ctx.sync();
    ///     ctx.replace_local(&a, Vec::new())
    /// })
    /// .unwrap();
    /// assert_eq!(out.all(), Some(&vec![vec![0, 0, 9], vec![1, 1, 9]][..]));
    /// ```
    ///
    /// # Panics
    ///
    /// If `a` was registered on another machine (another run, a split's
    /// sub-machine or its parent). The run ends with
    /// [`ErrorKind::PendingCommunication`](crate::ErrorKind::PendingCommunication)
    /// if `a` is the source of a [`put_from`](Ctx::put_from) in this
    /// superstep: that put reads `a`'s local part at the sync, so it cannot
    /// be swapped before then.
    ///
    /// # Cost
    ///
    /// Local, O(1); for a large part made by [`coarray`](Ctx::coarray)
    /// under MPI on one node, O(n): the contents are swapped with `local`
    /// (same length; the part keeps its place, mapped by the other ranks)
    /// or copied out (the part becomes `local`).
    pub fn replace_local<T: Pod + Send>(&mut self, a: &Coarray<T>, local: Vec<T>) -> Vec<T> {
        let id = self.id_of(a);
        if self.lending.contains(&id) {
            let msg = format!(
                "replace_local of coarray #{id} while a put_from of this superstep reads it \
                 (the put_from sends from its local part at the sync); replace it after the sync"
            );
            self.misuse(ErrorKind::PendingCommunication, msg);
        }
        match self.registry.replace_array(id, local) {
            Ok(old) => old,
            Err(why) => unusable(self.pid, self.superstep, why, "coarray", a.id),
        }
    }

    /// This processor's local part of `read`, and mutably that of `write`,
    /// at the same time (for a local pass from one coarray into another).
    ///
    /// # Examples
    ///
    /// ```
    /// let out = bsp_core::run(1, |ctx| {
    ///     let a = ctx.coarray_from(vec![1u32, 2, 3]);
    ///     let b = ctx.coarray::<u64>(3);
    ///     let (from, to) = ctx.local_pair_mut(&a, &b);
    ///     for (t, f) in to.iter_mut().zip(from) {
    ///         *t = u64::from(*f) * 10;
    ///     }
    ///     ctx.local(&b).to_vec()
    /// })
    /// .unwrap();
    /// assert_eq!(out.get(0), Some(&vec![10, 20, 30]));
    /// ```
    ///
    /// # Panics
    ///
    /// If `read` and `write` are the same coarray, or come from another run.
    ///
    /// # Cost
    ///
    /// Local, O(1).
    pub fn local_pair_mut<T: Pod, U: Pod>(
        &mut self,
        read: &Coarray<T>,
        write: &Coarray<U>,
    ) -> (&[T], &mut [U]) {
        let (pid, superstep) = (self.pid, self.superstep);
        match self
            .registry
            .array_pair_mut::<T, U>(self.id_of(read), self.id_of(write))
        {
            Ok(pair) => pair,
            Err((why, id)) => unusable(pid, superstep, why, "coarray", id),
        }
    }

    /// Releases coarray `a` and returns its local part (the vector it is,
    /// or a copy, see Cost; drop it to free the memory). The handle (and
    /// any copy of it) can no longer be used. Collective like registration:
    /// every processor releases the same coarrays in the same order and
    /// superstep (a mismatch ends the run at the next `sync`). Puts or gets
    /// that reach `a` in the superstep of its release end the run with
    /// [`ErrorKind::Released`](crate::ErrorKind::Released).
    ///
    /// Release what a library call registered for its own use, so that
    /// repeated calls do not hold on to memory until the run ends.
    ///
    /// # Examples
    ///
    /// ```
    /// let out = bsp_core::run(2, |ctx| {
    ///     for round in 0..3u64 {
    ///         let scratch = ctx.coarray::<u64>(1 << 20);
    ///         ctx.put(1 - ctx.pid(), &scratch, 0, &[round]);
    ///         ctx.sync();
    ///         let mine = ctx.release(scratch);
    ///         assert_eq!(mine[0], round);
    ///     }
    ///     ctx.sync();
    /// });
    /// assert!(out.is_ok());
    /// ```
    ///
    /// # Panics
    ///
    /// If `a` was already released, was registered on another machine (another run, a split's sub-machine or its parent), or is the
    /// source of a [`put_from`](Ctx::put_from) in this superstep.
    ///
    /// # Cost
    ///
    /// Local, O(1) plus freeing the memory; for a large part made by
    /// [`coarray`](Ctx::coarray) under MPI on one node, O(n): the part is
    /// copied into the returned vector.
    pub fn release<T: Pod + Send>(&mut self, a: Coarray<T>) -> Vec<T> {
        self.release_part(a).into_vec()
    }

    /// Releases `a` as [`release`](Ctx::release) does, and drops its
    /// local part instead of handing it back: for a coarray whose contents
    /// are no longer wanted (a receive buffer, scratch space).
    ///
    /// # Examples
    ///
    /// ```
    /// let out = bsp_core::run(2, |ctx| {
    ///     let scratch = ctx.coarray::<u64>(1 << 16);
    ///     ctx.put(1 - ctx.pid(), &scratch, 0, &[7]);
    ///     ctx.sync();
    ///     let got = ctx.local(&scratch)[0];
    ///     ctx.discard(scratch);
    ///     got
    /// })
    /// .unwrap();
    /// assert_eq!(out.all(), Some(&[7, 7][..]));
    /// ```
    ///
    /// # Panics
    ///
    /// As [`release`](Ctx::release).
    ///
    /// # Cost
    ///
    /// Local, O(1) plus freeing the memory, whatever made the part (where
    /// `release` copies a mapped part out, this copies nothing).
    pub fn discard<T: Pod + Send>(&mut self, a: Coarray<T>) {
        drop(self.release_part(a));
    }

    /// Takes `a` out of the registry for [`release`](Ctx::release) and
    /// [`discard`](Ctx::discard).
    fn release_part<T: Pod + Send>(&mut self, a: Coarray<T>) -> Part<T> {
        let id = self.id_of(&a);
        if self.lending.contains(&id) {
            let msg = format!(
                "coarray #{} released while a put_from of this superstep reads it",
                a.id
            );
            self.misuse(ErrorKind::Released, msg);
        }
        match self.registry.release_array::<T>(id, self.superstep) {
            Ok(local) => local,
            Err(why) => unusable(self.pid, self.superstep, why, "coarray", a.id),
        }
    }

    /// The local part of `a`, mutably.
    fn array_mut<T: Pod>(&mut self, a: &Coarray<T>) -> &mut [T] {
        let (pid, superstep) = (self.pid, self.superstep);
        match self.registry.array_mut::<T>(self.id_of(a)) {
            Ok(part) => part,
            Err(why) => unusable(pid, superstep, why, "coarray", a.id),
        }
    }
}

/// Coarrays registered on behalf of a library call — a collective such as
/// `all_reduce` — so that errors about them name the call the user made
/// (`… of all_reduce's coarray<u64> …`) instead of an anonymous coarray.
/// Implemented by [`Ctx`]; bring it into scope with
/// `use bsp::expert::OwnedCoarrays;`.
///
/// # Examples
///
/// ```
/// use bsp_core::expert::OwnedCoarrays;
/// use bsp_core::ErrorKind;
///
/// let err = bsp_core::run(2, |ctx| {
///     let a = ctx.coarray_for::<u32>("my_collective", vec![0; 2]);
///     ctx.put(1 - ctx.pid(), &a, 1, &[7, 7]); // one element too many
///     ctx.sync();
/// })
/// .unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::OutOfBounds);
/// assert!(err.message().contains("my_collective's coarray<u32>"), "{err}");
/// ```
pub trait OwnedCoarrays {
    /// Registers a coarray with local part `local`, as
    /// [`coarray_from`](Ctx::coarray_from) does, on behalf of `owner`.
    /// Collective; every processor names the same owner (the name is part
    /// of the registration that the sync compares).
    ///
    /// # Cost
    ///
    /// Local, O(1): the vector becomes the local part.
    fn coarray_for<T: Pod + Send>(&mut self, owner: &str, local: Vec<T>) -> Coarray<T>;
}

impl OwnedCoarrays for Ctx {
    fn coarray_for<T: Pod + Send>(&mut self, owner: &str, local: Vec<T>) -> Coarray<T> {
        Coarray::new(
            self.registry.register_array_for(Some(owner), local),
            self.scope,
        )
    }
}
