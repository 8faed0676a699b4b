//! Puts and gets: requests on other processors' parts of coarrays,
//! delivered at the next sync.

use std::ops::{Bound, Range, RangeBounds};

use bytemuck::Pod;

use super::Ctx;
use crate::coarray::{Coarray, GetHandle, PodBytes};
use crate::error::ErrorKind;
use crate::wire::Record;

impl Ctx {
    /// Requests that `src` be written into processor `dst`'s part of `a`,
    /// starting at element `offset`. `src` is copied now; the write lands at
    /// the next `sync`, after every get of this superstep has read its data.
    /// Several puts to one element in a superstep are applied in order of
    /// source pid, then call order: the last one wins.
    ///
    /// # Examples
    ///
    /// ```
    /// let out = bsp_core::run(4, |ctx| {
    ///     let (s, p) = (ctx.pid(), ctx.nprocs());
    ///     let a = ctx.coarray::<u64>(p);
    ///     for t in 0..p {
    ///         ctx.put(t, &a, s, &[s as u64 * 10]);
    ///     }
    ///     ctx.sync();
    ///     ctx.local(&a).iter().sum::<u64>()
    /// })
    /// .unwrap();
    /// assert_eq!(out.all(), Some(&vec![60; 4][..]));
    /// ```
    ///
    /// # Panics
    ///
    /// Ends the run with [`ErrorKind::BadPid`](crate::ErrorKind::BadPid) if `dst >= nprocs()`, and at
    /// the `sync` with [`ErrorKind::OutOfBounds`](crate::ErrorKind::OutOfBounds) if `offset + src.len()`
    /// exceeds the local length of `a` on `dst`.
    ///
    /// # Cost
    ///
    /// Adds `12 + size_of_val(src)` bytes to this processor's h-relation
    /// (sent) and to `dst`'s (received); 24 + the payload where the offset
    /// or the payload reaches 4 GiB (or past 2²⁴ registrations).
    pub fn put<T: Pod>(&mut self, dst: usize, a: &Coarray<T>, offset: usize, src: &[T]) {
        self.check_pid("put", dst);
        let payload: &[u8] = bytemuck::cast_slice(src);
        let record = Record::Put {
            array: self.id_of(a),
            offset: offset as u64,
            bytes: payload.len() as u64,
        };
        self.outbox.push(dst, record, payload);
    }

    /// Like [`put`](Ctx::put), but takes ownership of `src` instead of
    /// copying it: on the threads transport the data is copied exactly once,
    /// into the destination's memory.
    ///
    /// # Examples
    ///
    /// ```
    /// let out = bsp_core::run(2, |ctx| {
    ///     let a = ctx.coarray::<u32>(3);
    ///     let other = 1 - ctx.pid();
    ///     ctx.put_vec(other, &a, 0, vec![7, 8, 9]);
    ///     ctx.sync();
    ///     ctx.local(&a).to_vec()
    /// })
    /// .unwrap();
    /// assert_eq!(out.all(), Some(&vec![vec![7, 8, 9]; 2][..]));
    /// ```
    ///
    /// # Panics
    ///
    /// As [`put`](Ctx::put).
    ///
    /// # Cost
    ///
    /// As [`put`](Ctx::put), minus one copy of the payload.
    pub fn put_vec<T: Pod + Send>(
        &mut self,
        dst: usize,
        a: &Coarray<T>,
        offset: usize,
        src: Vec<T>,
    ) {
        self.check_pid("put", dst);
        let record = Record::Put {
            array: self.id_of(a),
            offset: offset as u64,
            bytes: std::mem::size_of_val(src.as_slice()) as u64,
        };
        self.outbox
            .push_owned(dst, record, bytes::Bytes::from_owner(PodBytes(src)));
    }

    /// Requests that the elements `range` of this processor's part of
    /// `from` (`..` for all of it) be written into processor `dst`'s part
    /// of `to` at `offset` — without buffering a copy: the elements are read
    /// at the next `sync`, as they are then (after this superstep's local
    /// work, before its puts are applied, like a get). On the threads
    /// transport the receiver copies them straight out of this processor's
    /// memory, so the data is copied exactly once.
    ///
    /// `from` and `to` may be the same coarray. Puts of other processors
    /// that land in `from` during the same sync are applied after every
    /// read of it, in the usual order.
    ///
    /// # Examples
    ///
    /// ```
    /// let out = bsp_core::run(2, |ctx| {
    ///     let src = ctx.coarray_from(vec![ctx.pid() as u32; 4]);
    ///     let dst = ctx.coarray::<u32>(2);
    ///     ctx.put_from(1 - ctx.pid(), &dst, 0, &src, 1..3);
    ///     ctx.local_mut(&src).fill(7); // the put sends the data as of the sync
    ///     ctx.sync();
    ///     ctx.local(&dst).to_vec()
    /// })
    /// .unwrap();
    /// assert_eq!(out.all(), Some(&vec![vec![7, 7], vec![7, 7]][..]));
    /// ```
    ///
    /// # Panics
    ///
    /// Ends the run at once with [`ErrorKind::OutOfBounds`] if `range`
    /// exceeds this processor's part of `from`, and as [`put`](Ctx::put)
    /// does for a bad `dst` or destination range.
    ///
    /// # Cost
    ///
    /// As [`put`](Ctx::put), with no copy at the call. On threads, a sync
    /// in which any processor used `put_from` ends with one extra barrier
    /// (l), after which the receivers have read the data; under MPI it
    /// needs none (the data has left once the exchange returns).
    pub fn put_from<T: Pod + Send>(
        &mut self,
        dst: usize,
        to: &Coarray<T>,
        offset: usize,
        from: &Coarray<T>,
        range: impl RangeBounds<usize>,
    ) {
        self.check_pid("put", dst);
        let (to_id, from_id) = (self.id_of(to), self.id_of(from));
        let have = self.local(from).len();
        let Some(Range {
            start: from_offset,
            end,
        }) = within(&range, have)
        else {
            let msg = format!(
                "put_from on processor {} reads elements {} of coarray #{}, whose local \
                 length is {have}",
                self.pid,
                shown(&range),
                from_id
            );
            self.fail(ErrorKind::OutOfBounds, self.pid, msg);
        };
        let len = end - from_offset;
        let size = std::mem::size_of::<T>();
        let record = Record::Put {
            array: to_id,
            offset: offset as u64,
            bytes: (len * size) as u64,
        };
        self.outbox
            .push_lent(dst, record, from_id, from_offset * size, len * size);
        if !self.lending.contains(&from_id) {
            self.lending.push(from_id);
        }
    }

    /// Requests `len` elements of processor `src`'s part of `a`, starting at
    /// element `offset`, as they are before this superstep's puts are applied
    /// (BSPlib semantics). The value is available from [`take`](Ctx::take)
    /// after the next `sync`.
    ///
    /// # Examples
    ///
    /// ```
    /// let out = bsp_core::run(2, |ctx| {
    ///     let a = ctx.coarray_from(vec![ctx.pid() as u16; 2]);
    ///     let other = 1 - ctx.pid();
    ///     let h = ctx.get(other, &a, 0, 2);
    ///     ctx.put(other, &a, 0, &[99, 99]); // applied after the get has read
    ///     ctx.sync();
    ///     ctx.take(h)
    /// })
    /// .unwrap();
    /// assert_eq!(out.all(), Some(&vec![vec![1, 1], vec![0, 0]][..]));
    /// ```
    ///
    /// # Panics
    ///
    /// Ends the run with [`ErrorKind::BadPid`](crate::ErrorKind::BadPid) if `src >= nprocs()`, and at
    /// the `sync` with [`ErrorKind::OutOfBounds`](crate::ErrorKind::OutOfBounds) if the range exceeds the
    /// local length of `a` on `src`.
    ///
    /// # Cost
    ///
    /// A 32-byte request in this superstep's h-relation, and a second
    /// h-relation in the same `sync` carrying `24 + len · size_of::<T>()`
    /// bytes back.
    pub fn get<T: Pod + Send>(
        &mut self,
        src: usize,
        a: &Coarray<T>,
        offset: usize,
        len: usize,
    ) -> GetHandle<T> {
        self.check_pid("get", src);
        if len
            .checked_mul(std::mem::size_of::<T>())
            .is_none_or(|b| b > isize::MAX as usize)
        {
            let msg = format!(
                "get of {len} elements of {} from processor {src}: more bytes than any \
                 coarray can hold",
                std::any::type_name::<T>()
            );
            self.fail(ErrorKind::OutOfBounds, self.pid, msg);
        }
        let ticket = self.gets.open::<T>();
        let record = Record::Get {
            array: self.id_of(a),
            offset: offset as u64,
            count: len as u64,
            ticket,
        };
        self.outbox.push(src, record, &[]);
        self.has_gets = true;
        GetHandle::new(ticket, self.superstep + 1, self.scope)
    }

    /// The value of a get, once the `sync` that delivers it has returned.
    ///
    /// # Panics
    ///
    /// Ends the run with [`ErrorKind::NotDelivered`] if called before that
    /// `sync`, or with a handle of another run.
    pub fn take<T: Pod>(&mut self, handle: GetHandle<T>) -> Vec<T> {
        if handle.scope != self.scope {
            let msg = format!(
                "take() of get #{}, which was requested on another machine (another run, \
                 a sub-machine of a split, or the machine that split into this one)",
                handle.id
            );
            self.fail(ErrorKind::RegistrationMismatch, self.pid, msg);
        }
        if self.superstep < handle.ready_at {
            let msg = format!(
                "take() of a get issued in superstep {} before the sync that delivers it",
                handle.ready_at - 1
            );
            self.fail(ErrorKind::NotDelivered, self.pid, msg);
        }
        match self.gets.take(handle.id) {
            Some(value) => value,
            None => {
                let msg = format!("take() of get #{}, which is not this run's", handle.id);
                self.fail(ErrorKind::NotDelivered, self.pid, msg)
            }
        }
    }
}

/// A [`Ctx::get_into`] waiting for its sync: copies the get's value into
/// its local coarray once it has arrived.
pub(super) type Landing = Box<dyn FnOnce(&mut Ctx) + Send>;

impl Ctx {
    /// Requests the elements `range` of processor `src`'s part of `a`, to
    /// be written into this processor's part of `into` from `into_offset`
    /// on during the next `sync` (BSPlib's `bsp_get`, into the
    /// caller's registered memory). Like [`get`](Ctx::get), it reads the data
    /// as it was before the superstep's puts; it lands after them, so it
    /// overwrites puts to the same elements of `into`.
    ///
    /// # Examples
    ///
    /// ```
    /// let out = bsp_core::run(3, |ctx| {
    ///     let (me, p) = (ctx.pid(), ctx.nprocs());
    ///     let mine = ctx.coarray_from(vec![me as u32 * 10; 2]);
    ///     let all = ctx.coarray::<u32>(2 * p);
    ///     for src in 0..p {
    ///         ctx.get_into(src, &mine, 0..2, &all, 2 * src);
    ///     }
    ///     ctx.sync();
    ///     ctx.local(&all).to_vec()
    /// })?;
    /// assert_eq!(out.get(1), Some(&vec![0, 0, 10, 10, 20, 20]));
    /// # Ok::<(), bsp_core::Error>(())
    /// ```
    ///
    /// # Panics
    ///
    /// Ends the run at once with [`ErrorKind::OutOfBounds`] if the elements
    /// from `into_offset` on exceed this processor's part of `into` (or
    /// `range` is reversed), and as [`get`](Ctx::get) does for a bad `src`
    /// or source range.
    ///
    /// # Cost
    ///
    /// As [`get`](Ctx::get), plus one local copy of the elements.
    pub fn get_into<T: Pod + Send>(
        &mut self,
        src: usize,
        a: &Coarray<T>,
        range: Range<usize>,
        into: &Coarray<T>,
        into_offset: usize,
    ) {
        let have = self.local(into).len();
        let (offset, len) = (range.start, range.len());
        if range.start > range.end || into_offset.checked_add(len).is_none_or(|end| end > have) {
            let msg = format!(
                "get_into on processor {} reads elements {range:?} of processor {src}'s part \
                 into elements from {into_offset} of coarray #{}, whose local length is {have}",
                self.pid,
                self.id_of(into)
            );
            self.fail(ErrorKind::OutOfBounds, self.pid, msg);
        }
        let handle = self.get(src, a, offset, len);
        let into = *into;
        self.landing.push(Box::new(move |ctx: &mut Ctx| {
            let value = ctx.take(handle);
            let target = ctx.local_mut(&into);
            assert!(
                into_offset + len <= target.len(),
                "bsp: the coarray a get_into writes to was replaced by a shorter one before the sync"
            );
            target[into_offset..into_offset + len].copy_from_slice(&value);
        }));
    }

    /// Copies the values of the superstep's [`get_into`](Ctx::get_into)s
    /// into place; called at the end of `sync`.
    pub(super) fn land_gets(&mut self) {
        for land in std::mem::take(&mut self.landing) {
            land(self);
        }
    }
}

/// `range` of a slice of length `len`, if it lies inside it.
fn within(range: &impl RangeBounds<usize>, len: usize) -> Option<Range<usize>> {
    let start = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.checked_add(1)?,
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.checked_add(1)?,
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    (start <= end && end <= len).then_some(start..end)
}

/// `range` as it was written: `3..18`, `..=4`, `..`.
fn shown(range: &impl RangeBounds<usize>) -> String {
    let start = match range.start_bound() {
        Bound::Included(s) => s.to_string(),
        Bound::Excluded(s) => format!("{s} (excluded)"),
        Bound::Unbounded => String::new(),
    };
    match range.end_bound() {
        Bound::Included(e) => format!("{start}..={e}"),
        Bound::Excluded(e) => format!("{start}..{e}"),
        Bound::Unbounded => format!("{start}.."),
    }
}
