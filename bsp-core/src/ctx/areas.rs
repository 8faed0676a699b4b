//! Registered foreign areas (see `area.rs`): registration by address,
//! puts and gets by byte offset, and the helpers that a layer for another
//! language (BSPlib's C API) needs around them.

use super::{unusable, Ctx};
use crate::area::{Area, ForeignBytes};
use crate::error::{Error, ErrorKind};
use crate::wire::Record;

/// Payloads from this size up are shared by a multicast's destinations
/// ([`Areas::multicast_area`]); shorter ones are copied into each stream.
const MULTICAST_SHARED_BYTES: usize = 4096;

/// Registered foreign areas: memory the program owns, registered by
/// address and length, that other processors put into and get from by
/// byte offset — what a layer for another language (BSPlib's
/// `bsp_push_reg`, `bsp_put`, `bsp_get`) needs. Implemented by [`Ctx`];
/// bring it into scope with `use bsp::expert::Areas;`. A Rust program
/// uses coarrays ([`Ctx::coarray`]) instead: they need no `unsafe`.
///
/// # Examples
///
/// ```
/// use bsp_core::expert::Areas;
///
/// let out = bsp_core::run(2, |ctx| {
///     let mut mine = [0u8; 2];
///     // SAFETY: `mine` outlives the area, released below, and is only
///     // touched between bsp calls.
///     let area = unsafe { ctx.register_area(mine.as_mut_ptr(), mine.len()) };
///     ctx.put_area(1 - ctx.pid(), area, 0, &[ctx.pid() as u8]);
///     ctx.sync();
///     ctx.release_area(area);
///     mine[0]
/// })?;
/// assert_eq!(out.all(), Some(&[1, 0][..]));
/// # Ok::<(), bsp_core::Error>(())
/// ```
pub trait Areas {
    /// Registers `len` bytes at `base`, memory that the program owns, as a
    /// foreign area: the distributed variable whose part on each processor
    /// is the memory that processor registered (BSPlib's `bsp_push_reg`).
    ///
    /// Collective, like [`coarray`](Ctx::coarray): every processor
    /// registers its coarrays, queues and areas in the same order and
    /// superstep; lengths may differ (0 included, with any `base`). The
    /// area can be used at once; puts and gets from other processors reach
    /// it at the syncs that follow. Unlike a coarray, its bytes stay where
    /// they are: puts are written into them during [`sync`](Ctx::sync), and
    /// gets read them there.
    ///
    /// # Safety
    ///
    /// Until the area is [released](Areas::release_area) or the run ends,
    /// `base..base + len` must stay valid for reads and writes, and nothing
    /// else may read or write it while this processor is inside a `sync`
    /// (or any other call on its `Ctx`), where bsp reads and writes it.
    /// Between calls the program may use the memory as it likes. With
    /// `len == 0`, `base` may be anything, null included.
    ///
    /// # Examples
    ///
    /// ```
    /// # use bsp_core::expert::Areas;
    /// let out = bsp_core::run(2, |ctx| {
    ///     let mut mine = [0u8; 4];
    ///     // SAFETY: `mine` outlives the area, which is released below, and
    ///     // is only touched between bsp calls.
    ///     let area = unsafe { ctx.register_area(mine.as_mut_ptr(), mine.len()) };
    ///     ctx.put_area(1 - ctx.pid(), area, 1, &[7, 8]);
    ///     ctx.sync();
    ///     ctx.release_area(area);
    ///     mine
    /// })?;
    /// assert_eq!(out.get(0), Some(&[0, 7, 8, 0]));
    /// # Ok::<(), bsp_core::Error>(())
    /// ```
    ///
    /// # Cost
    ///
    /// Local, O(1): no communication, no copy.
    unsafe fn register_area(&mut self, base: *mut u8, len: usize) -> Area;

    /// Releases `area` (BSPlib's `bsp_pop_reg`): collective, like
    /// [`release`](Ctx::release); afterwards bsp no longer touches the
    /// memory. Puts or gets that reach it in the superstep of its release
    /// end the run with [`ErrorKind::Released`] (a BSPlib layer, whose
    /// `bsp_pop_reg` takes effect at the next sync, releases after that
    /// sync).
    ///
    /// # Panics
    ///
    /// Ends the run if `area` was already released or comes from another
    /// run.
    ///
    /// # Cost
    ///
    /// Local, O(1).
    fn release_area(&mut self, area: Area);

    /// Registers `buf` as a foreign area for the duration of `f`, which
    /// gets the context and the area's handle: the safe, scoped form of
    /// [`register_area`](Areas::register_area), for receiving puts straight
    /// into memory the caller owns instead of into a coarray that is then
    /// copied out. Puts to the area from other processors (by byte offset,
    /// [`put_area`](Areas::put_area)) are written into `buf` during the
    /// syncs inside `f`.
    ///
    /// Collective, like [`register_area`](Areas::register_area): every
    /// processor registers at the same point, lengths may differ (a
    /// processor that receives nothing can pass an empty slice). When `f`
    /// returns, the area is released, which is collective too; if `f`
    /// panics, the area is dropped from this processor's registrations
    /// before the panic goes on, so bsp never touches `buf` after this
    /// call.
    ///
    /// # Examples
    ///
    /// ```
    /// # use bsp_core::expert::Areas;
    /// let out = bsp_core::run(3, |ctx| {
    ///     let mut mine = [0u32; 3];
    ///     let me = ctx.pid();
    ///     ctx.with_area(&mut mine, |ctx, area| {
    ///         for q in 0..ctx.nprocs() {
    ///             ctx.put_area(q, area, 4 * me, &(me as u32 + 10).to_ne_bytes());
    ///         }
    ///         ctx.sync();
    ///     });
    ///     mine
    /// })?;
    /// assert!(out.iter().all(|m| m == &[10, 11, 12]));
    /// # Ok::<(), bsp_core::Error>(())
    /// ```
    ///
    /// # Panics
    ///
    /// Ends the run if `f` releases the area itself. Puts that run past
    /// a processor's `buf` end the run at the sync with
    /// [`ErrorKind::OutOfBounds`], as for any area.
    ///
    /// # Cost
    ///
    /// Local, O(1) around `f`: no communication and no copy. A put into
    /// the area costs what a put into a coarray costs, and saves the copy
    /// out of a coarray into `buf`.
    fn with_area<T: bytemuck::Pod, R>(
        &mut self,
        buf: &mut [T],
        f: impl FnOnce(&mut Ctx, Area) -> R,
    ) -> R;

    /// [`with_area`](Areas::with_area), for a library call `owner` (a
    /// collective such as `broadcast`): errors about the area name the
    /// call (`… of broadcast's area …`), as for
    /// [`OwnedCoarrays`](super::OwnedCoarrays).
    ///
    /// # Cost
    ///
    /// As [`with_area`](Areas::with_area).
    fn with_owned_area<T: bytemuck::Pod, R>(
        &mut self,
        owner: &str,
        buf: &mut [T],
        f: impl FnOnce(&mut Ctx, Area) -> R,
    ) -> R;

    /// The length in bytes of this processor's part of `area`.
    ///
    /// # Panics
    ///
    /// Ends the run if `area` was released or was registered on another machine (another run, a split's sub-machine or its parent).
    fn area_len(&self, area: Area) -> usize;

    /// Requests that `src` be written into processor `dst`'s part of
    /// `area` from byte `offset` (BSPlib's `bsp_put`). `src` is copied now;
    /// the write lands at the next `sync`, after that sync's gets have read
    /// their data and landed, in the order of coarray puts: by source pid,
    /// then call order.
    ///
    /// # Panics
    ///
    /// Ends the run with [`ErrorKind::BadPid`] if `dst >= nprocs()`, and at
    /// the `sync` with [`ErrorKind::OutOfBounds`] if `offset + src.len()`
    /// exceeds `dst`'s part of the area.
    ///
    /// # Cost
    ///
    /// As [`put`](Ctx::put): `12 + src.len()` bytes in this processor's
    /// h-relation.
    fn put_area(&mut self, dst: usize, area: Area, offset: usize, src: &[u8]);

    /// Requests that `src` be written to each of `targets`, a processor,
    /// one of its areas and a byte offset in it:
    /// [`put_area`](Areas::put_area) to each target, with `src` copied once
    /// and that copy shared by all the targets' records, instead of copied
    /// once per target. This is what a one-to-many superstep (a
    /// broadcast's root, an all-gather's block) wants: on the threads
    /// transport the sender's work falls from `targets·len` bytes copied
    /// to `len`, and each receiver copies its `len` bytes out of the shared
    /// copy.
    ///
    /// # Examples
    ///
    /// ```
    /// # use bsp_core::expert::Areas;
    /// let out = bsp_core::run(4, |ctx| {
    ///     let mut buf = [0u8; 3];
    ///     ctx.with_area(&mut buf, |ctx, area| {
    ///         if ctx.pid() == 0 {
    ///             ctx.multicast_area(&[7, 8, 9], (1..4).map(|q| (q, area, 0)));
    ///         }
    ///         ctx.sync();
    ///     });
    ///     buf
    /// })
    /// .unwrap();
    /// assert_eq!(out.all(), Some(&vec![[0, 0, 0], [7, 8, 9], [7, 8, 9], [7, 8, 9]][..]));
    /// ```
    ///
    /// # Panics
    ///
    /// As [`put_area`](Areas::put_area), for each target.
    ///
    /// # Cost
    ///
    /// One copy of `src` now, however many targets; in the h-relation, as
    /// one [`put_area`](Areas::put_area) per target: `12 + src.len()` bytes
    /// sent per target (what crosses under MPI), and received by each.
    fn multicast_area(
        &mut self,
        src: &[u8],
        targets: impl IntoIterator<Item = (usize, Area, usize)>,
    );

    /// Requests `len` bytes of processor `src`'s part of `area` from byte
    /// `offset`, to be written to `into` during the next `sync` (BSPlib's
    /// `bsp_get`): the bytes are read as they are before the sync's puts,
    /// and written before those puts are applied, so a put of the same
    /// superstep to the same local bytes wins. Gets land in call order.
    ///
    /// # Safety
    ///
    /// `into..into + len` must stay valid for writes, and untouched by
    /// anything else, until the next `sync` has returned (or the run has
    /// ended). It need not be registered.
    ///
    /// # Examples
    ///
    /// ```
    /// # use bsp_core::expert::Areas;
    /// let out = bsp_core::run(3, |ctx| {
    ///     let mut mine = [ctx.pid() as u8; 2];
    ///     let mut all = [0u8; 6];
    ///     // SAFETY: both arrays outlive the sync below and are only
    ///     // touched between bsp calls.
    ///     let area = unsafe { ctx.register_area(mine.as_mut_ptr(), 2) };
    ///     for q in 0..ctx.nprocs() {
    ///         unsafe { ctx.get_area(q, area, 0, all[2 * q..].as_mut_ptr(), 2) };
    ///     }
    ///     ctx.sync();
    ///     ctx.release_area(area);
    ///     all
    /// })?;
    /// assert_eq!(out.get(2), Some(&[0, 0, 1, 1, 2, 2]));
    /// # Ok::<(), bsp_core::Error>(())
    /// ```
    ///
    /// # Panics
    ///
    /// Ends the run with [`ErrorKind::BadPid`] if `src >= nprocs()`, and at
    /// the `sync` with [`ErrorKind::OutOfBounds`] if the range exceeds
    /// `src`'s part of the area.
    ///
    /// # Cost
    ///
    /// As [`get`](Ctx::get): a 32-byte request, and `24 + len` bytes back
    /// in a second h-relation of the same sync.
    unsafe fn get_area(&mut self, src: usize, area: Area, offset: usize, into: *mut u8, len: usize);

    /// Like [`abort`](Ctx::abort), naming `superstep` (at most the current
    /// one) as the superstep at fault: for a check that can only be made
    /// after the sync that ended it, from what that sync delivered.
    ///
    /// # Panics
    ///
    /// If `superstep` is later than the current superstep.
    fn abort_at(&mut self, superstep: usize, message: impl Into<String>) -> !;
}

impl Areas for Ctx {
    unsafe fn register_area(&mut self, base: *mut u8, len: usize) -> Area {
        // SAFETY: the caller's contract is `ForeignBytes::new`'s.
        let local = unsafe { ForeignBytes::new(base, len) };
        Area {
            id: self.registry.register_area(local),
            scope: self.scope,
        }
    }

    fn release_area(&mut self, area: Area) {
        if let Err(why) = self
            .registry
            .release_area(self.id_of(&area), self.superstep)
        {
            unusable(self.pid, self.superstep, why, "area", area.id)
        }
    }

    fn with_area<T: bytemuck::Pod, R>(
        &mut self,
        buf: &mut [T],
        f: impl FnOnce(&mut Ctx, Area) -> R,
    ) -> R {
        self.scoped_area(None, buf, f)
    }

    fn with_owned_area<T: bytemuck::Pod, R>(
        &mut self,
        owner: &str,
        buf: &mut [T],
        f: impl FnOnce(&mut Ctx, Area) -> R,
    ) -> R {
        self.scoped_area(Some(owner), buf, f)
    }

    fn area_len(&self, area: Area) -> usize {
        match self.registry.area_len(self.id_of(&area)) {
            Ok(len) => len,
            Err(why) => unusable(self.pid, self.superstep, why, "area", area.id),
        }
    }

    fn put_area(&mut self, dst: usize, area: Area, offset: usize, src: &[u8]) {
        self.check_pid("put", dst);
        let record = Record::Put {
            array: self.id_of(&area),
            offset: offset as u64,
            bytes: src.len() as u64,
        };
        self.outbox.push(dst, record, src);
    }

    fn multicast_area(
        &mut self,
        src: &[u8],
        targets: impl IntoIterator<Item = (usize, Area, usize)>,
    ) {
        let targets: Vec<(usize, Area, usize)> = targets.into_iter().collect();
        let record = |id: u32, offset: usize| Record::Put {
            array: id,
            offset: offset as u64,
            bytes: src.len() as u64,
        };
        // A short payload travels inside the stream's buffer, where one
        // more copy costs less than a piece of its own.
        if targets.len() < 2 || src.len() < MULTICAST_SHARED_BYTES {
            for (dst, area, offset) in targets {
                self.put_area(dst, area, offset, src);
            }
            return;
        }
        for &(dst, _, _) in &targets {
            self.check_pid("put", dst);
        }
        let shared = self.outbox.shared_copy(src);
        for (dst, area, offset) in targets {
            let id = self.id_of(&area);
            self.outbox
                .push_owned(dst, record(id, offset), shared.clone());
        }
    }

    unsafe fn get_area(
        &mut self,
        src: usize,
        area: Area,
        offset: usize,
        into: *mut u8,
        len: usize,
    ) {
        self.check_pid("get", src);
        // SAFETY: the caller's contract is `open_raw`'s.
        let ticket = unsafe { self.gets.open_raw(into, len) };
        let record = Record::Get {
            array: self.id_of(&area),
            offset: offset as u64,
            count: len as u64,
            ticket,
        };
        self.outbox.push(src, record, &[]);
        self.has_gets = true;
    }

    fn abort_at(&mut self, superstep: usize, message: impl Into<String>) -> ! {
        assert!(
            superstep <= self.superstep,
            "bsp: abort_at names superstep {superstep}, later than the current {}",
            self.superstep
        );
        let error = Error::at(ErrorKind::Abort, self.pid, superstep, message);
        self.abort_with(error)
    }
}

impl Ctx {
    /// [`Areas::with_area`] on behalf of `owner`, if any.
    fn scoped_area<T: bytemuck::Pod, R>(
        &mut self,
        owner: Option<&str>,
        buf: &mut [T],
        f: impl FnOnce(&mut Ctx, Area) -> R,
    ) -> R {
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(buf);
        // SAFETY: `bytes` is borrowed exclusively for the whole of this
        // call, so the program cannot read or write it while `f` runs
        // (it reaches the memory only through bsp), and the registration
        // ends before this call returns, on both paths below: released
        // when `f` returns, dropped from the registry when it panics. A
        // released area is never written again: puts that reach it end
        // the run instead (`ErrorKind::Released`). Areas are written only
        // by the runtime of the processor that registered them, on its own
        // thread (they are never lent to other threads), so once this
        // processor's registration is gone nothing touches `bytes`.
        let local = unsafe { ForeignBytes::new(bytes.as_mut_ptr(), bytes.len()) };
        let area = Area {
            id: self.registry.register_area_for(owner, local),
            scope: self.scope,
        };
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(self, area)));
        match outcome {
            Ok(value) => {
                self.release_area(area);
                value
            }
            Err(panic) => {
                // Already released by `f` is as good: either way the
                // registry no longer holds the memory.
                let _ = self.registry.release_area(area.id, self.superstep);
                std::panic::resume_unwind(panic)
            }
        }
    }

    /// The run's failure, where this processor's transport has recorded
    /// one (on threads, as soon as any processor failed).
    pub(crate) fn recorded_failure(&self) -> Option<Error> {
        self.comm.recorded_failure()
    }
}
