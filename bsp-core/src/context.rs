//! The processor context: identity, registration, communication requests
//! and the superstep protocol.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use bytemuck::Pod;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::coarray::{Coarray, GetHandle, LentStorage, PodBytes, PodVec, Storage};
use crate::error::{Error, ErrorKind};
use crate::queue::{Encoding, Inbox, Queue, Raw, Serde};
use crate::router::{route, RouteFigures, Router};
use crate::stats::{Stats, SuperstepStats};
use crate::transport::{block_len, Aborted, Block, Comm, Transport};
use crate::wire::{Header, Outbox, SegmentReader, Tag};

/// How many supersteps' statistics a processor keeps (the most recent ones),
/// so that a run of millions of supersteps does not grow without bound.
pub(crate) const STATS_HISTORY: usize = 1 << 16;

/// One registered distributed variable.
enum Entry {
    Array(Box<dyn Storage>),
    /// A coarray whose local part is lent to the router during a sync, as
    /// the source of [`Ctx::put_from`] requests.
    Lent(Arc<Box<dyn Storage>>),
    Queue(Inbox),
    /// A coarray released by [`Ctx::release`]; its id is not reused.
    Released,
}

fn released(id: u32) -> ! {
    panic!("bsp: coarray #{id} was released (Ctx::release) and cannot be used any more")
}

/// A put aimed at a coarray that was lent out when it arrived; applied
/// once the coarray is back.
struct DeferredPut {
    src: usize,
    header: Header,
    payload: Vec<u8>,
}

/// Layout of the row every processor contributes to the all-gather that
/// opens each `sync` (and the end of the run). It carries the protocol
/// checks, the decision whether anything needs routing, and the previous
/// superstep's local statistics so that every processor learns everyone's.
mod row {
    pub const STATUS: usize = 0;
    pub const SUPERSTEP: usize = 1;
    pub const REG_COUNT: usize = 2;
    pub const REG_HASH: usize = 3;
    pub const HAS_GETS: usize = 4;
    pub const NOW_BYTES: usize = 5;
    pub const NOW_WORK_NS: usize = 6;
    pub const LENDS: usize = 7;
    pub const PREV: usize = 8;
    pub const LEN: usize = PREV + super::LocalFigures::WORDS;

    pub const SYNCING: u64 = 1;
    pub const RETURNED: u64 = 2;
}

/// What every processor learns from the rows opening a sync.
struct SyncDecision {
    /// Some processor requested communication.
    anything: bool,
    /// Some processor requested a get (a second h-relation carries replies).
    any_gets: bool,
    /// Some processor used `put_from` (lent coarrays come back after a barrier).
    any_lends: bool,
}

/// One processor's own figures for one sync.
#[derive(Clone, Copy, Debug, Default)]
struct LocalFigures {
    sent_bytes: u64,
    recv_bytes: u64,
    sent_records: u64,
    recv_records: u64,
    route: RouteFigures,
    sync_ns: u64,
}

impl LocalFigures {
    const WORDS: usize = 8;

    fn words(&self) -> [u64; Self::WORDS] {
        [
            self.sent_bytes,
            self.recv_bytes,
            self.sent_records,
            self.recv_records,
            self.route.first_block,
            self.route.second_block,
            self.route.header_bytes,
            self.sync_ns,
        ]
    }
}

/// A processor's view of the BSP computation: passed to the closure given
/// to [`Runtime::run`](crate::Runtime::run).
///
/// Everything a processor does to others goes through its `Ctx`: puts,
/// gets and sends are buffered here and delivered together at
/// [`sync`](Ctx::sync).
pub struct Ctx {
    pid: usize,
    nprocs: usize,
    superstep: usize,
    router: Router,
    transport: Transport,
    comm: Box<dyn Comm>,
    registry: Vec<Entry>,
    signatures: Vec<String>,
    registry_hash: u64,
    outbox: Outbox,
    has_gets: bool,
    /// Coarrays named as sources by `put_from` this superstep.
    lending: Vec<u32>,
    next_get: u64,
    gets: HashMap<u64, Box<dyn Storage>>,
    last_sync: LocalFigures,
    /// The rows of the most recent exchanges (at most [`STATS_HISTORY`] + 1),
    /// oldest first, with the superstep of the oldest: superstep s's
    /// statistics are its work in the rows of sync s and its sync figures
    /// in the rows of the next exchange. Kept raw, so a sync costs no more
    /// than storing the all-gather's result.
    row_log: VecDeque<Vec<u64>>,
    row_log_start: usize,
    /// Whether the end-of-run exchange has happened.
    finished: bool,
    work_start: Instant,
}

/// FNV-1a, to fingerprint registration sequences.
fn fnv1a(hash: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(hash, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (1, 11) | (2, 12) | (3, 13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

impl Ctx {
    pub(crate) fn new(comm: Box<dyn Comm>, router: Router, transport: Transport) -> Self {
        let (pid, nprocs) = (comm.pid(), comm.nprocs());
        Ctx {
            pid,
            nprocs,
            superstep: 0,
            router,
            transport,
            comm,
            registry: Vec::new(),
            signatures: Vec::new(),
            registry_hash: 0xcbf2_9ce4_8422_2325,
            outbox: Outbox::new(nprocs),
            has_gets: false,
            lending: Vec::new(),
            next_get: 0,
            gets: HashMap::new(),
            last_sync: LocalFigures::default(),
            row_log: VecDeque::new(),
            row_log_start: 0,
            finished: false,
            work_start: Instant::now(),
        }
    }

    /// This processor's id, in `0..nprocs()`.
    pub fn pid(&self) -> usize {
        self.pid
    }

    /// The number of processors p.
    pub fn nprocs(&self) -> usize {
        self.nprocs
    }

    /// The current superstep: the number of `sync` calls made so far.
    pub fn superstep(&self) -> usize {
        self.superstep
    }

    /// The router delivering this run's supersteps.
    pub fn router(&self) -> Router {
        self.router
    }

    /// The transport of this run.
    pub fn transport(&self) -> Transport {
        self.transport
    }

    /// Ends the run with `kind` and `message`, blaming processor `pid`.
    fn fail(&mut self, kind: ErrorKind, pid: usize, message: String) -> ! {
        let error = Error::at(kind, pid, self.superstep, message);
        self.comm.abort(error)
    }

    pub(crate) fn abort(&mut self, error: Error) -> ! {
        self.comm.abort(error)
    }

    fn check_pid(&mut self, op: &str, dst: usize) {
        if dst >= self.nprocs {
            let msg = format!(
                "{op} addressed to processor {dst}, but there are only {} processors (ids 0..{})",
                self.nprocs, self.nprocs
            );
            self.fail(ErrorKind::BadPid, self.pid, msg);
        }
    }

    fn register(&mut self, signature: String, entry: Entry) -> u32 {
        let id = u32::try_from(self.registry.len()).expect("bsp: too many registrations");
        self.registry_hash = fnv1a(fnv1a(self.registry_hash, signature.as_bytes()), &[0xff]);
        self.signatures.push(signature);
        self.registry.push(entry);
        id
    }

    // ----- coarrays -------------------------------------------------------

    /// Registers a coarray whose local part on this processor has `local_len`
    /// elements, all zero.
    ///
    /// Registration is collective: every processor registers its coarrays
    /// and queues in the same order, in the same superstep, with the same
    /// element types (local lengths may differ). A mismatch ends the run
    /// with [`ErrorKind::RegistrationMismatch`] at the next `sync`.
    ///
    /// # Examples
    ///
    /// ```
    /// let out = bsp_core::run(3, |ctx| {
    ///     let a = ctx.coarray::<u32>(ctx.pid() + 1);
    ///     ctx.local(&a).len()
    /// })
    /// .unwrap();
    /// assert_eq!(out, vec![1, 2, 3]);
    /// ```
    ///
    /// # Cost
    ///
    /// Local: allocates and zeroes `local_len` elements; no communication.
    pub fn coarray<T: Pod + Send>(&mut self, local_len: usize) -> Coarray<T> {
        self.coarray_from(vec![T::zeroed(); local_len])
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
    /// assert_eq!(out, vec![vec![0; 4], vec![1; 4]]);
    /// ```
    ///
    /// # Cost
    ///
    /// Local, O(1).
    pub fn coarray_from<T: Pod + Send>(&mut self, local: Vec<T>) -> Coarray<T> {
        let signature = format!("coarray<{}>", std::any::type_name::<T>());
        Coarray::new(self.register(signature, Entry::Array(Box::new(PodVec(local)))))
    }

    fn storage(&self, id: u32) -> &dyn Storage {
        match &self.registry[id as usize] {
            Entry::Array(s) => s.as_ref(),
            Entry::Lent(s) => s.as_ref().as_ref(),
            Entry::Released => released(id),
            Entry::Queue(_) => unreachable!("bsp: a coarray handle names a queue"),
        }
    }

    /// This processor's local part of `a`.
    ///
    /// # Panics
    ///
    /// If `a` comes from another run.
    pub fn local<T: Pod>(&self, a: &Coarray<T>) -> &[T] {
        self.storage(a.id)
            .as_any()
            .downcast_ref::<PodVec<T>>()
            .expect("bsp: coarray handle from another run")
            .0
            .as_slice()
    }

    /// This processor's local part of `a`, mutably.
    ///
    /// # Panics
    ///
    /// If `a` comes from another run.
    pub fn local_mut<T: Pod>(&mut self, a: &Coarray<T>) -> &mut [T] {
        match &mut self.registry[a.id as usize] {
            Entry::Array(s) => s
                .as_any_mut()
                .downcast_mut::<PodVec<T>>()
                .expect("bsp: coarray handle from another run")
                .0
                .as_mut_slice(),
            Entry::Released => released(a.id),
            Entry::Lent(_) | Entry::Queue(_) => unreachable!("bsp: a coarray handle names a queue"),
        }
    }

    /// Replaces this processor's local part of `a` with `local` and returns
    /// the old one, without copying either: a way to hand a buffer to a
    /// coarray and take it back. The local length may change; puts and gets
    /// from other processors are checked against the length at the sync.
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
    /// assert_eq!(out, vec![vec![0, 0, 9], vec![1, 1, 9]]);
    /// ```
    ///
    /// # Panics
    ///
    /// If `a` comes from another run.
    ///
    /// # Cost
    ///
    /// Local, O(1).
    pub fn replace_local<T: Pod + Send>(&mut self, a: &Coarray<T>, local: Vec<T>) -> Vec<T> {
        match &mut self.registry[a.id as usize] {
            Entry::Array(s) => {
                let part = s
                    .as_any_mut()
                    .downcast_mut::<PodVec<T>>()
                    .expect("bsp: coarray handle from another run");
                std::mem::replace(&mut part.0, local)
            }
            Entry::Released => released(a.id),
            Entry::Lent(_) | Entry::Queue(_) => unreachable!("bsp: a coarray handle names a queue"),
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
    /// assert_eq!(out[0], vec![10, 20, 30]);
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
        let (r, w) = (read.id as usize, write.id as usize);
        assert_ne!(r, w, "bsp: local_pair_mut needs two different coarrays");
        let (low, high) = self.registry.split_at_mut(r.max(w));
        let (read_entry, write_entry) = if r < w {
            (&low[r], &mut high[0])
        } else {
            (&high[0], &mut low[w])
        };
        let (Entry::Array(read_storage), Entry::Array(write_storage)) = (read_entry, write_entry)
        else {
            unreachable!("bsp: a coarray handle names a queue")
        };
        let from = read_storage
            .as_any()
            .downcast_ref::<PodVec<T>>()
            .expect("bsp: coarray handle from another run");
        let to = write_storage
            .as_any_mut()
            .downcast_mut::<PodVec<U>>()
            .expect("bsp: coarray handle from another run");
        (&from.0, &mut to.0)
    }

    /// Releases coarray `a` and returns its local part (without a copy; drop
    /// it to free the memory). The handle (and any copy of it) can no
    /// longer be used. Collective like registration:
    /// every processor releases the same coarrays in the same order and
    /// superstep (a mismatch ends the run at the next `sync`). Puts or gets
    /// that reach `a` in the superstep of its release end the run with
    /// [`ErrorKind::Released`].
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
    /// If `a` was already released, comes from another run, or is the
    /// source of a [`put_from`](Ctx::put_from) in this superstep.
    ///
    /// # Cost
    ///
    /// Local, O(1) plus freeing the memory.
    pub fn release<T: Pod + Send>(&mut self, a: Coarray<T>) -> Vec<T> {
        let id = a.id as usize;
        assert!(
            !self.lending.contains(&a.id),
            "bsp: coarray #{} released while a put_from of this superstep reads it",
            a.id
        );
        match &self.registry[id] {
            Entry::Array(s) => assert!(
                s.as_any().is::<PodVec<T>>(),
                "bsp: coarray handle from another run"
            ),
            Entry::Released => released(a.id),
            Entry::Lent(_) | Entry::Queue(_) => unreachable!("bsp: a coarray handle names a queue"),
        }
        let Entry::Array(storage) = std::mem::replace(&mut self.registry[id], Entry::Released)
        else {
            unreachable!("checked above")
        };
        let signature = format!("release #{id}");
        self.registry_hash = fnv1a(fnv1a(self.registry_hash, signature.as_bytes()), &[0xfe]);
        self.signatures.push(signature);
        let local = storage
            .into_any()
            .downcast::<PodVec<T>>()
            .expect("checked above");
        local.0
    }

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
    /// assert_eq!(out, vec![60; 4]);
    /// ```
    ///
    /// # Panics
    ///
    /// Ends the run with [`ErrorKind::BadPid`] if `dst >= nprocs()`, and at
    /// the `sync` with [`ErrorKind::OutOfBounds`] if `offset + src.len()`
    /// exceeds the local length of `a` on `dst`.
    ///
    /// # Cost
    ///
    /// Adds `24 + size_of_val(src)` bytes to this processor's h-relation
    /// (sent) and to `dst`'s (received).
    pub fn put<T: Pod>(&mut self, dst: usize, a: &Coarray<T>, offset: usize, src: &[T]) {
        self.check_pid("put", dst);
        let payload: &[u8] = bytemuck::cast_slice(src);
        let header = Header {
            tag: Tag::Put,
            id: a.id,
            a: offset as u64,
            b: payload.len() as u64,
        };
        self.outbox.push(dst, header, payload);
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
    /// assert_eq!(out, vec![vec![7, 8, 9]; 2]);
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
        let header = Header {
            tag: Tag::Put,
            id: a.id,
            a: offset as u64,
            b: std::mem::size_of_val(src.as_slice()) as u64,
        };
        self.outbox
            .push_owned(dst, header, bytes::Bytes::from_owner(PodBytes(src)));
    }

    /// Requests that `len` elements of this processor's part of `from`,
    /// starting at `from_offset`, be written into processor `dst`'s part of
    /// `to` at `offset` — without buffering a copy: the elements are read
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
    ///     ctx.put_from(1 - ctx.pid(), &dst, 0, &src, 1, 2);
    ///     ctx.local_mut(&src).fill(7); // the put sends the data as of the sync
    ///     ctx.sync();
    ///     ctx.local(&dst).to_vec()
    /// })
    /// .unwrap();
    /// assert_eq!(out, vec![vec![7, 7], vec![7, 7]]);
    /// ```
    ///
    /// # Panics
    ///
    /// Panics at once if `from_offset + len` exceeds this processor's part
    /// of `from`; ends the run as [`put`](Ctx::put) does for a bad `dst` or
    /// destination range.
    ///
    /// # Cost
    ///
    /// As [`put`](Ctx::put), with no copy at the call. A sync in which any
    /// processor used `put_from` ends with one extra barrier (l).
    pub fn put_from<T: Pod + Send>(
        &mut self,
        dst: usize,
        to: &Coarray<T>,
        offset: usize,
        from: &Coarray<T>,
        from_offset: usize,
        len: usize,
    ) {
        self.check_pid("put", dst);
        let have = self.local(from).len();
        assert!(
            from_offset.checked_add(len).is_some_and(|end| end <= have),
            "bsp: put_from reads elements {from_offset}..{} of a coarray whose local length is {have}",
            from_offset.saturating_add(len)
        );
        let size = std::mem::size_of::<T>();
        let header = Header {
            tag: Tag::Put,
            id: to.id,
            a: offset as u64,
            b: (len * size) as u64,
        };
        self.outbox
            .push_lent(dst, header, from.id, from_offset * size, len * size);
        if !self.lending.contains(&from.id) {
            self.lending.push(from.id);
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
    /// assert_eq!(out, vec![vec![1, 1], vec![0, 0]]);
    /// ```
    ///
    /// # Panics
    ///
    /// Ends the run with [`ErrorKind::BadPid`] if `src >= nprocs()`, and at
    /// the `sync` with [`ErrorKind::OutOfBounds`] if the range exceeds the
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
        let id = self.next_get;
        self.next_get += 1;
        let header = Header {
            tag: Tag::Get,
            id: a.id,
            a: offset as u64,
            b: len as u64,
        };
        self.outbox.push(src, header, &id.to_ne_bytes());
        self.gets
            .insert(id, Box::new(PodVec(vec![T::zeroed(); len])));
        self.has_gets = true;
        GetHandle::new(id, self.superstep + 1)
    }

    /// The value of a get, once the `sync` that delivers it has returned.
    ///
    /// # Panics
    ///
    /// If called before that `sync`.
    pub fn take<T: Pod>(&mut self, handle: GetHandle<T>) -> Vec<T> {
        assert!(
            self.superstep >= handle.ready_at,
            "bsp: take() of a get issued in superstep {} before the sync that delivers it (now in superstep {})",
            handle.ready_at - 1,
            self.superstep
        );
        let storage = self
            .gets
            .remove(&handle.id)
            .expect("bsp: get handle already taken");
        let value = storage
            .into_any()
            .downcast::<PodVec<T>>()
            .expect("bsp: get handle from another run");
        value.0
    }

    // ----- queues ---------------------------------------------------------

    /// Registers a message queue for `T: Pod` messages, sent as raw bytes.
    ///
    /// Collective, like [`coarray`](Ctx::coarray).
    ///
    /// # Examples
    ///
    /// ```
    /// let out = bsp_core::run(3, |ctx| {
    ///     let q = ctx.queue::<u32>();
    ///     ctx.send(0, &q, &(ctx.pid() as u32));
    ///     ctx.sync();
    ///     ctx.receive(&q)
    /// })
    /// .unwrap();
    /// assert_eq!(out[0], vec![0, 1, 2]);
    /// assert!(out[1].is_empty());
    /// ```
    ///
    /// # Cost
    ///
    /// Local, O(1).
    pub fn queue<T: Pod>(&mut self) -> Queue<T, Raw> {
        let signature = format!("queue<{}>", std::any::type_name::<T>());
        Queue::new(self.register(signature, Entry::Queue(Inbox::default())))
    }

    /// Registers a message queue for any serde type, sent through the serde
    /// codec (see the `codec` module docs).
    ///
    /// Collective, like [`coarray`](Ctx::coarray).
    ///
    /// # Examples
    ///
    /// ```
    /// let out = bsp_core::run(2, |ctx| {
    ///     let q = ctx.serde_queue::<String>();
    ///     ctx.send(1, &q, &format!("hello from {}", ctx.pid()));
    ///     ctx.sync();
    ///     ctx.receive(&q)
    /// })
    /// .unwrap();
    /// assert_eq!(out[1], vec!["hello from 0", "hello from 1"]);
    /// ```
    ///
    /// # Cost
    ///
    /// Local, O(1).
    pub fn serde_queue<T: Serialize + DeserializeOwned>(&mut self) -> Queue<T, Serde> {
        let signature = format!("serde_queue<{}>", std::any::type_name::<T>());
        Queue::new(self.register(signature, Entry::Queue(Inbox::default())))
    }

    /// Releases queue `q`: messages received and not taken are dropped, and
    /// the handle can no longer be used. Collective, like
    /// [`release`](Ctx::release): every processor releases the same queues
    /// and coarrays in the same order and superstep. A message that reaches
    /// `q` in the superstep of its release ends the run with
    /// [`ErrorKind::Released`].
    ///
    /// # Examples
    ///
    /// ```
    /// bsp_core::run(2, |ctx| {
    ///     let q = ctx.queue::<u64>();
    ///     ctx.send(0, &q, &1);
    ///     ctx.sync();
    ///     let _ = ctx.receive(&q);
    ///     ctx.release_queue(q);
    /// })
    /// .unwrap();
    /// ```
    ///
    /// # Panics
    ///
    /// If `q` was already released or comes from another run.
    ///
    /// # Cost
    ///
    /// Local, O(1) plus freeing its buffers.
    pub fn release_queue<T, E: Encoding<T>>(&mut self, q: Queue<T, E>) {
        let id = q.id as usize;
        match &self.registry[id] {
            Entry::Queue(_) => {}
            Entry::Released => panic!("bsp: queue #{id} was already released"),
            Entry::Array(_) | Entry::Lent(_) => unreachable!("bsp: a queue handle names a coarray"),
        }
        self.registry[id] = Entry::Released;
        let signature = format!("release #{id}");
        self.registry_hash = fnv1a(fnv1a(self.registry_hash, signature.as_bytes()), &[0xfe]);
        self.signatures.push(signature);
    }

    /// Sends `msg` to processor `dst` through queue `q`; it is received after
    /// the next `sync`.
    ///
    /// # Panics
    ///
    /// Ends the run with [`ErrorKind::BadPid`] if `dst >= nprocs()`.
    ///
    /// # Cost
    ///
    /// The encoded message's bytes in this superstep's h-relation, plus a
    /// 24-byte header for each run of consecutive sends to the same
    /// destination and queue.
    pub fn send<T, E: Encoding<T>>(&mut self, dst: usize, q: &Queue<T, E>, msg: &T) {
        self.check_pid("send", dst);
        self.outbox
            .push_message(dst, q.id, |out| E::encode(msg, out));
    }

    fn inbox(&mut self, id: u32) -> &mut Inbox {
        match &mut self.registry[id as usize] {
            Entry::Queue(inbox) => inbox,
            Entry::Released => panic!("bsp: queue #{id} was released and cannot be used any more"),
            Entry::Array(_) | Entry::Lent(_) => unreachable!("bsp: a queue handle names a coarray"),
        }
    }

    /// Takes every message received on `q` and not yet taken, ordered by
    /// source pid, then send order within each sync's delivery.
    ///
    /// # Examples
    ///
    /// See [`queue`](Ctx::queue).
    ///
    /// # Cost
    ///
    /// Local, linear in the messages' bytes.
    pub fn receive<T, E: Encoding<T>>(&mut self, q: &Queue<T, E>) -> Vec<T> {
        let mut all = Vec::new();
        self.inbox(q.id)
            .drain::<T, E>(|_, mut msgs| all.append(&mut msgs));
        all
    }

    /// Like [`receive`](Ctx::receive), with each message's source pid.
    ///
    /// # Examples
    ///
    /// ```
    /// let out = bsp_core::run(2, |ctx| {
    ///     let q = ctx.queue::<u8>();
    ///     ctx.send(0, &q, &7);
    ///     ctx.sync();
    ///     ctx.receive_with_source(&q)
    /// })
    /// .unwrap();
    /// assert_eq!(out[0], vec![(0, 7), (1, 7)]);
    /// ```
    ///
    /// # Cost
    ///
    /// Local, linear in the messages' bytes.
    pub fn receive_with_source<T, E: Encoding<T>>(&mut self, q: &Queue<T, E>) -> Vec<(usize, T)> {
        let mut all = Vec::new();
        self.inbox(q.id)
            .drain::<T, E>(|src, msgs| all.extend(msgs.into_iter().map(|m| (src, m))));
        all
    }

    // ----- supersteps -----------------------------------------------------

    /// Statistics of the supersteps completed so far (every superstep whose
    /// figures have been exchanged: all but the last synced one, and all of
    /// them once the run has ended). Only the most recent 65,536 supersteps
    /// are kept.
    pub fn stats(&self) -> Stats {
        let mut supersteps: Vec<SuperstepStats> = self
            .row_log
            .iter()
            .zip(self.row_log.iter().skip(1))
            .enumerate()
            .map(|(k, (now, next))| self.superstep_stats(self.row_log_start + k, now, Some(next)))
            .collect();
        if self.finished {
            // The last superstep has no sync: its work alone.
            if let Some(last) = self.row_log.back() {
                supersteps.push(self.superstep_stats(
                    self.row_log_start + self.row_log.len() - 1,
                    last,
                    None,
                ));
            }
        }
        Stats {
            nprocs: self.nprocs,
            router: self.router,
            transport: self.transport,
            supersteps,
        }
    }

    /// Superstep `step`'s statistics from the rows of its sync (`now`: the
    /// work) and of the next exchange (`next`: the sync's figures).
    fn superstep_stats(&self, step: usize, now: &[u64], next: Option<&Vec<u64>>) -> SuperstepStats {
        let p = self.nprocs;
        let col = |rows: &[u64], f: usize| -> Vec<u64> {
            (0..p).map(|q| rows[q * row::LEN + f]).collect()
        };
        let prev = |k: usize| next.map_or_else(|| vec![0; p], |rows| col(rows, row::PREV + k));
        let seconds = |ns: Vec<u64>| ns.into_iter().map(|ns| ns as f64 * 1e-9).collect();
        SuperstepStats {
            superstep: step,
            work_seconds: seconds(col(now, row::NOW_WORK_NS)),
            sent_bytes: prev(0),
            recv_bytes: prev(1),
            sent_records: prev(2),
            recv_records: prev(3),
            first_block_bytes: prev(4),
            second_block_bytes: prev(5),
            router_header_bytes: prev(6),
            sync_seconds: seconds(prev(7)),
        }
    }

    fn collective<R>(&mut self, op: impl FnOnce(&mut dyn Comm) -> Result<R, Aborted>) -> R {
        match op(self.comm.as_mut()) {
            Ok(r) => r,
            Err(Aborted) => std::panic::resume_unwind(Box::new(Aborted)),
        }
    }

    fn exchange_rows(&mut self, status: u64) -> SyncDecision {
        let work_ns = self.work_start.elapsed().as_nanos() as u64;
        let mut r = [0u64; row::LEN];
        r[row::STATUS] = status;
        r[row::SUPERSTEP] = self.superstep as u64;
        r[row::REG_COUNT] = self.registry.len() as u64;
        r[row::REG_HASH] = self.registry_hash;
        r[row::HAS_GETS] = u64::from(self.has_gets);
        r[row::NOW_BYTES] = self.outbox.bytes() as u64;
        r[row::NOW_WORK_NS] = work_ns;
        r[row::LENDS] = u64::from(!self.lending.is_empty());
        r[row::PREV..].copy_from_slice(&self.last_sync.words());
        let rows = self.collective(|c| c.allgather(&r));
        self.check_rows(&rows);
        let any = |f: usize| (0..self.nprocs).any(|q| rows[q * row::LEN + f] != 0);
        let decision = SyncDecision {
            anything: any(row::NOW_BYTES),
            any_gets: any(row::HAS_GETS),
            any_lends: any(row::LENDS),
        };
        self.log_rows(rows);
        decision
    }

    /// Checks that every processor is at the same point of the protocol.
    fn check_rows(&mut self, rows: &[u64]) {
        let field = |q: usize, f: usize| rows[q * row::LEN + f];
        let p = self.nprocs;
        let returned = (0..p).find(|&q| field(q, row::STATUS) == row::RETURNED);
        let syncing = (0..p).find(|&q| field(q, row::STATUS) == row::SYNCING);
        if let (Some(r), Some(s)) = (returned, syncing) {
            let (rs, ss) = (
                field(r, row::SUPERSTEP) as usize,
                field(s, row::SUPERSTEP) as usize,
            );
            let msg = format!(
                "processor {r} returned from its closure after {rs} syncs, while processor {s} called sync \
                 for the {} time (superstep {ss}); every processor must call sync equally often",
                ordinal(ss + 1)
            );
            let error = Error::at(ErrorKind::SyncMismatch, r, rs, msg);
            self.abort(error);
        }
        let (count0, hash0) = (field(0, row::REG_COUNT), field(0, row::REG_HASH));
        if let Some(q) =
            (0..p).find(|&q| field(q, row::REG_COUNT) != count0 || field(q, row::REG_HASH) != hash0)
        {
            let cq = field(q, row::REG_COUNT);
            let detail = if cq != count0 {
                format!("processor {q} has registered {cq} coarrays and queues, processor 0 has registered {count0}")
            } else {
                format!(
                    "processors {q} and 0 have each registered {cq} coarrays and queues, \
                     but of different kinds or element types"
                )
            };
            let msg = format!(
                "{detail}; registration is collective (same order, same superstep, same types). \
                 Processor {}'s registrations: [{}]",
                self.pid,
                self.signatures.join(", ")
            );
            self.fail(ErrorKind::RegistrationMismatch, q, msg);
        }
    }

    /// Keeps the rows of this exchange for the statistics.
    fn log_rows(&mut self, rows: Vec<u64>) {
        if self.row_log.len() > STATS_HISTORY {
            self.row_log.pop_front();
            self.row_log_start += 1;
        }
        self.row_log.push_back(rows);
    }

    /// Ends the superstep: delivers every put, get and send requested by any
    /// processor during it, then starts the next superstep.
    ///
    /// Delivery order: get requests are served first (they read the data as
    /// it was before this superstep's puts); then, for each source pid in
    /// ascending order, its puts are applied and its messages queued in call
    /// order.
    ///
    /// # Examples
    ///
    /// ```
    /// let steps = bsp_core::run(2, |ctx| {
    ///     ctx.sync();
    ///     ctx.sync();
    ///     ctx.superstep()
    /// })
    /// .unwrap();
    /// assert_eq!(steps, vec![2, 2]);
    /// ```
    ///
    /// # Panics
    ///
    /// Unwinds (and `run` returns the error) when the run is aborted: a
    /// panic on another processor, processors disagreeing on the number of
    /// syncs or on registrations, or an out-of-bounds put or get.
    ///
    /// # Cost
    ///
    /// l (one all-gather of a 15-word row) plus, if anything was requested,
    /// h·g for the h-relation: two transposes for [`Router::TwoPhase`], one
    /// irregular all-to-all for [`Router::Direct`]; gets add a second
    /// h-relation for the replies.
    pub fn sync(&mut self) {
        let start = Instant::now();
        let SyncDecision {
            anything,
            any_gets,
            any_lends,
        } = self.exchange_rows(row::SYNCING);
        let mut figures = LocalFigures {
            sent_records: self.outbox.records(),
            ..LocalFigures::default()
        };
        if anything {
            let mut deferred = Vec::new();
            let streams = self.take_streams();
            let replies = self.route_and_deliver(streams, any_gets, &mut figures, &mut deferred);
            if any_gets {
                let mut replies = replies.expect("replies are built when gets are served");
                figures.sent_records += replies.records();
                let streams = replies.take(|_| unreachable!("replies are copied"));
                self.route_and_deliver(streams, false, &mut figures, &mut deferred);
            }
            if any_lends {
                // Every reader of a lent coarray has finished once everyone
                // has passed this barrier.
                self.collective(|c| c.allgather(&[]));
                self.reclaim_lent();
                for put in deferred {
                    let payload = [bytes::Bytes::from(put.payload)];
                    self.apply_put(put.src, put.header, &mut SegmentReader::new(&payload));
                }
            }
        }
        self.has_gets = false;
        self.superstep += 1;
        figures.sync_ns = start.elapsed().as_nanos() as u64;
        self.last_sync = figures;
        self.work_start = Instant::now();
    }

    /// Lends the coarrays named by `put_from` to the router and takes this
    /// superstep's streams.
    fn take_streams(&mut self) -> Vec<Block> {
        let mut lent = HashMap::new();
        for id in std::mem::take(&mut self.lending) {
            let entry = &mut self.registry[id as usize];
            let Entry::Array(storage) = std::mem::replace(entry, Entry::Queue(Inbox::default()))
            else {
                unreachable!("bsp: only coarrays are lent")
            };
            let shared = Arc::new(storage);
            lent.insert(
                id,
                bytes::Bytes::from_owner(LentStorage(Arc::clone(&shared))),
            );
            *entry = Entry::Lent(shared);
        }
        self.outbox.take(|id| lent[&id].clone())
    }

    /// Takes back the coarrays lent for this sync.
    fn reclaim_lent(&mut self) {
        for entry in &mut self.registry {
            if let Entry::Lent(shared) = entry {
                let shared =
                    std::mem::replace(shared, Arc::new(Box::new(PodVec(Vec::<u8>::new()))));
                let storage = Arc::try_unwrap(shared).unwrap_or_else(|_| {
                    unreachable!("bsp: a lent coarray is still referenced after the barrier")
                });
                *entry = Entry::Array(storage);
            }
        }
    }

    fn route_and_deliver(
        &mut self,
        streams: Vec<Block>,
        serve_gets: bool,
        figures: &mut LocalFigures,
        deferred: &mut Vec<DeferredPut>,
    ) -> Option<Outbox> {
        figures.sent_bytes += streams.iter().map(|s| block_len(s) as u64).sum::<u64>();
        let router = self.router;
        let (incoming, route_figures) = self.collective(|c| route(router, c, streams));
        figures.route.merge(route_figures);
        figures.recv_bytes += incoming.iter().map(|s| block_len(s) as u64).sum::<u64>();
        let replies = serve_gets.then(|| self.serve_gets(&incoming));
        figures.recv_records += self.apply(&incoming, deferred);
        replies
    }

    /// Answers the get requests among `incoming` from the current data.
    fn serve_gets(&mut self, incoming: &[Block]) -> Outbox {
        let mut replies = Outbox::new(self.nprocs);
        for (src, stream) in incoming.iter().enumerate() {
            let mut r = SegmentReader::new(stream);
            while let Some(h) = r.header() {
                if h.tag != Tag::Get {
                    r.skip(h.payload_len());
                    continue;
                }
                let get_id = r.read_u64();
                if matches!(self.registry[h.id as usize], Entry::Released) {
                    let msg = format!(
                        "get by processor {src} from processor {} names coarray #{}, which is released in this superstep",
                        self.pid, h.id
                    );
                    self.fail(ErrorKind::Released, src, msg);
                }
                let storage = self.storage(h.id);
                let size = storage.elem_size();
                let (offset, len, have) = (h.a as usize, h.b as usize, storage.len());
                if offset.checked_add(len).is_none_or(|end| end > have) {
                    let msg = format!(
                        "get by processor {src} from processor {} of elements {offset}..{} of {} \
                         (local length {have} on processor {})",
                        self.pid,
                        offset.saturating_add(len),
                        self.signatures[h.id as usize],
                        self.pid
                    );
                    self.fail(ErrorKind::OutOfBounds, src, msg);
                }
                let data = &self.storage(h.id).bytes()[offset * size..(offset + len) * size];
                let header = Header {
                    tag: Tag::Reply,
                    id: 0,
                    a: get_id,
                    b: data.len() as u64,
                };
                replies.push(src, header, data);
            }
        }
        replies
    }

    /// Applies puts, queues messages and stores get replies, in source
    /// order, then call order. Returns the number of records received.
    fn apply(&mut self, incoming: &[Block], deferred: &mut Vec<DeferredPut>) -> u64 {
        let mut records = 0;
        for (src, stream) in incoming.iter().enumerate() {
            let mut r = SegmentReader::new(stream);
            while let Some(h) = r.header() {
                records += 1;
                match h.tag {
                    Tag::Put if matches!(self.registry[h.id as usize], Entry::Lent(_)) => {
                        let mut payload = vec![0; h.payload_len()];
                        assert!(r.read_into(&mut payload), "bsp: truncated put record");
                        deferred.push(DeferredPut {
                            src,
                            header: h,
                            payload,
                        });
                    }
                    Tag::Put => self.apply_put(src, h, &mut r),
                    Tag::Messages if matches!(self.registry[h.id as usize], Entry::Released) => {
                        let msg = format!(
                            "messages from processor {src} to processor {} name queue #{}, which is released in this superstep",
                            self.pid, h.id
                        );
                        self.fail(ErrorKind::Released, src, msg);
                    }
                    Tag::Messages => {
                        let inbox = self.inbox(h.id);
                        let ok = r
                            .read_pieces(h.b as usize, |piece| inbox.data.extend_from_slice(piece));
                        assert!(ok, "bsp: truncated message record");
                        let end = inbox.data.len();
                        inbox.runs.push((src, h.a, end));
                    }
                    Tag::Reply => {
                        let target = self
                            .gets
                            .get_mut(&h.a)
                            .expect("bsp: reply to an unknown get");
                        assert!(r.read_into(target.bytes_mut()), "bsp: truncated get reply");
                    }
                    Tag::Get => {
                        r.skip(h.payload_len());
                    }
                }
            }
        }
        records
    }

    fn apply_put(&mut self, src: usize, h: Header, r: &mut SegmentReader<'_>) {
        let me = self.pid;
        let id = h.id as usize;
        if matches!(self.registry[id], Entry::Released) {
            let msg = format!(
                "put from processor {src} to processor {me} names coarray #{id}, which is released in this superstep"
            );
            self.fail(ErrorKind::Released, src, msg);
        }
        let Entry::Array(storage) = &mut self.registry[id] else {
            unreachable!("bsp: a put names a queue or a lent coarray")
        };
        let size = storage.elem_size().max(1);
        let bytes = storage.bytes_mut();
        let start = (h.a as usize).checked_mul(size);
        match start.and_then(|s| s.checked_add(h.b as usize).map(|e| (s, e))) {
            Some((s, e)) if e <= bytes.len() => {
                assert!(r.read_into(&mut bytes[s..e]), "bsp: truncated put record");
            }
            _ => {
                let have = storage.len();
                let count = h.b as usize / size;
                let msg = format!(
                    "put from processor {src} to processor {me} of elements {}..{} of {} \
                     (local length {have} on processor {me})",
                    h.a,
                    (h.a as usize).saturating_add(count),
                    self.signatures[id]
                );
                self.fail(ErrorKind::OutOfBounds, src, msg);
            }
        }
    }

    /// The end of this processor's closure: checks that nothing is left
    /// undelivered and that every other processor is ending too.
    pub(crate) fn finish(&mut self) {
        if !self.outbox.is_empty() {
            let msg = format!(
                "processor {} returned from its closure with {} undelivered puts, gets or sends; \
                 call sync before returning",
                self.pid,
                self.outbox.records()
            );
            self.fail(ErrorKind::PendingCommunication, self.pid, msg);
        }
        self.exchange_rows(row::RETURNED);
        self.finished = true;
    }
}
