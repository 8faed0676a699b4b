//! One BSPlib processor's state: its bsp-core session, BSPlib's
//! registrations (slots, by address, effective at the next sync), the tag
//! sizes and the message queue; and the `bsp_sync` that ties them to the
//! session's sync.
//!
//! BSPlib makes `bsp_push_reg`, `bsp_pop_reg` and `bsp_set_tagsize`
//! collective and effective at the next `bsp_sync`. The layer keeps them
//! here during the superstep; at `bsp_sync` each processor that made any
//! sends its list to every processor (a few words, in the same h-relation
//! as the superstep's data, so no extra superstep), and after the sync every
//! processor checks the same lists, words a mismatch as BSPonMPI does, and
//! applies them in the same order: the bsp-core areas of new registrations
//! are registered, those of removed ones released. Every processor thus
//! knows every processor's address and size of each registration, and
//! checks puts and gets at the call.

use std::collections::HashMap;
use std::ffi::c_void;
use std::hash::{BuildHasherDefault, Hasher};

use bsp_core::expert::{Area, Areas};
use bsp_core::{Ctx, Queue, Session, Tag, Tagged};

use crate::report;

/// How this thread reaches its session: processor 0 owns the one
/// `bsp_begin` returned; the other processors' threads are lent theirs by
/// the runtime for as long as their SPMD function runs.
pub(crate) enum SessionRef {
    Owned(Box<Session>),
    Lent(*mut Session),
}

/// One registration (BSPlib's memory slot).
struct Slot {
    /// The local address (`0` for NULL) and size.
    addr: usize,
    size: usize,
    /// Registered in the current superstep: not usable until the sync.
    pushed_now: bool,
    /// Removed by `bsp_pop_reg` (locally) in the current superstep; still
    /// usable until the sync.
    popped: bool,
    /// Removed at a sync; kept only so that slot numbers stay the same on
    /// every processor.
    gone: bool,
    /// The bsp-core area, once effective.
    area: Option<Area>,
    /// Every processor's (address, size), once effective.
    remote: Vec<(usize, usize)>,
}

/// Which way a put or get moves data, for [`Proc::checked`]'s messages.
#[derive(Clone, Copy)]
enum Direction {
    Put,
    Get,
}

impl Direction {
    /// The remote end, in BSPonMPI's words: "destination" or "source".
    fn remote(self) -> &'static str {
        match self {
            Direction::Put => "destination",
            Direction::Get => "source",
        }
    }

    /// What the call does to the remote area: "Writes" or "Reads".
    fn verb(self) -> &'static str {
        match self {
            Direction::Put => "Writes",
            Direction::Get => "Reads",
        }
    }
}

/// The arguments of one `bsp_put` or `bsp_get` (`func` names which) that
/// [`Proc::checked`] checks.
#[derive(Clone, Copy)]
struct Access<'a> {
    func: &'a str,
    pid: i32,
    /// The registered address of the remote area.
    reg: usize,
    offset: i32,
    nbytes: i32,
    dir: Direction,
}

/// A `bsp_pop_reg` of this superstep: a slot, or NULL (whichever slot the
/// others pop, or one registered as NULL everywhere).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pop {
    Slot(usize),
    Null,
}

/// Word that stands for a NULL pop in the exchanged lists.
const NULL_POP: u64 = u64::MAX;

/// The registration operations of one processor in one superstep.
#[derive(Default)]
struct Ops {
    pushes: Vec<(usize, usize)>,
    pops: Vec<Pop>,
    tag_sizes: Vec<usize>,
}

impl Ops {
    fn is_empty(&self) -> bool {
        self.pushes.is_empty() && self.pops.is_empty() && self.tag_sizes.is_empty()
    }

    fn encode(&self) -> Vec<u64> {
        let mut w = vec![self.pushes.len() as u64];
        for &(addr, size) in &self.pushes {
            w.extend([addr as u64, size as u64]);
        }
        w.push(self.pops.len() as u64);
        w.extend(self.pops.iter().map(|p| match p {
            Pop::Slot(s) => *s as u64,
            Pop::Null => NULL_POP,
        }));
        w.push(self.tag_sizes.len() as u64);
        w.extend(self.tag_sizes.iter().map(|&t| t as u64));
        w
    }

    fn decode(w: &[u64]) -> Ops {
        let mut at = 0;
        let mut next = || {
            let v = w[at];
            at += 1;
            v as usize
        };
        let n = next();
        let pushes = (0..n).map(|_| (next(), next())).collect();
        let n = next();
        let pops = (0..n)
            .map(|_| match next() {
                s if s as u64 == NULL_POP => Pop::Null,
                s => Pop::Slot(s),
            })
            .collect();
        let n = next();
        let tag_sizes = (0..n).map(|_| next()).collect();
        Ops {
            pushes,
            pops,
            tag_sizes,
        }
    }
}

/// One received message in the queue's arena.
#[derive(Clone, Copy)]
struct Message {
    /// Byte offsets in the arena, and lengths.
    tag_at: usize,
    tag_len: usize,
    payload_at: usize,
    payload_len: usize,
}

/// The messages delivered by the last sync, in an arena aligned for any C
/// type, so that `bsp_hpmove` can hand out pointers into it.
#[derive(Default)]
struct Inbox {
    arena: Vec<u128>,
    messages: Vec<Message>,
    next: usize,
    payload_left: usize,
}

impl Inbox {
    fn refill(&mut self, received: Vec<Tagged<u32, u8>>) {
        self.messages.clear();
        self.next = 0;
        self.payload_left = 0;
        let words = |bytes: usize| bytes.div_ceil(16);
        let total: usize = received
            .iter()
            .map(|m| words(m.tag as usize) + words(m.payload.len() - m.tag as usize))
            .sum();
        self.arena.clear();
        self.arena.resize(total, 0);
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut self.arena);
        let mut at = 0;
        for m in received {
            let tag_len = m.tag as usize;
            let payload_len = m.payload.len() - tag_len;
            let tag_at = at;
            bytes[at..at + tag_len].copy_from_slice(&m.payload[..tag_len]);
            at += words(tag_len) * 16;
            let payload_at = at;
            bytes[at..at + payload_len].copy_from_slice(&m.payload[tag_len..]);
            at += words(payload_len) * 16;
            self.payload_left += payload_len;
            self.messages.push(Message {
                tag_at,
                tag_len,
                payload_at,
                payload_len,
            });
        }
    }

    fn front(&self) -> Option<Message> {
        self.messages.get(self.next).copied()
    }

    fn pop(&mut self) {
        if let Some(m) = self.front() {
            self.payload_left -= m.payload_len;
            self.next += 1;
        }
    }

    fn left(&self) -> usize {
        self.messages.len() - self.next
    }

    fn bytes(&self, at: usize, len: usize) -> &[u8] {
        &bytemuck::cast_slice::<u128, u8>(&self.arena)[at..at + len]
    }

    fn address(&mut self, at: usize) -> *mut c_void {
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut self.arena);
        bytes[at..].as_mut_ptr().cast()
    }
}

/// BSPlib's tag sizes (BSPonMPI's model): of the messages in the queue,
/// of those sent now, and as last set (for after the next sync).
#[derive(Default)]
struct TagSizes {
    received: usize,
    sending: usize,
    next: usize,
}

/// One BSPlib processor.
pub(crate) struct Proc {
    session: SessionRef,
    pub(crate) pid: usize,
    pub(crate) nprocs: usize,
    /// Whether this thread's SPMD function has called `bsp_begin` (a
    /// worker thread gets its processor just before it runs the function).
    pub(crate) begun: bool,
    slots: Vec<Slot>,
    /// Slots by local address, in registration order.
    by_addr: AddrMap<Vec<usize>>,
    /// The last address a put or get used, and its slot (cleared whenever
    /// registrations change).
    last: Option<(usize, usize)>,
    ops: Ops,
    tags: TagSizes,
    inbox: Inbox,
    /// The queue of `bsp_send`'s messages: the tag length, and the tag
    /// followed by the payload.
    messages: Queue<Tagged<u32, u8>, Tag>,
    /// The queue of the registration lists exchanged at syncs.
    control: Queue<Tagged<u32, u64>, Tag>,
    scratch: Vec<u8>,
}

/// A hasher for addresses: one multiplication (the keys are addresses of
/// the program's own memory, not chosen by an adversary).
#[derive(Default)]
struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64 ^ (n as u64 >> 29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type AddrMap<V> = HashMap<usize, V, BuildHasherDefault<AddrHasher>>;

/// Formats an address as C's `%p` does.
fn ptr(addr: usize) -> String {
    if addr == 0 {
        "(nil)".to_owned()
    } else {
        format!("{addr:#x}")
    }
}

impl Proc {
    /// A processor on `session`, registering the layer's two queues
    /// (collectively: every processor makes its `Proc` in the same way).
    pub(crate) fn new(mut session: SessionRef, begun: bool) -> Proc {
        let s = Self::session_of(&mut session);
        let (pid, nprocs) = (s.pid(), s.nprocs());
        let queues = s.with(|ctx| (ctx.tagged_queue(), ctx.tagged_queue()));
        let (messages, control) = queues.unwrap_or_else(|e| report::die(&e));
        Proc {
            session,
            pid,
            nprocs,
            begun,
            slots: Vec::new(),
            by_addr: AddrMap::default(),
            last: None,
            ops: Ops::default(),
            tags: TagSizes::default(),
            inbox: Inbox::default(),
            messages,
            control,
            scratch: Vec::new(),
        }
    }

    fn session_of(session: &mut SessionRef) -> &mut Session {
        match session {
            SessionRef::Owned(s) => s,
            // SAFETY: a lent session is the `&mut Session` that the runtime
            // passed to this thread's worker function, which outlives every
            // use: the worker function takes the `Proc` (and the pointer)
            // out of the thread's slot before it returns, or never returns
            // (`bsp_end` parks the thread). Only this thread uses it, one
            // call at a time.
            SessionRef::Lent(p) => unsafe { &mut **p },
        }
    }

    /// Runs `f` on this processor's context; ends the program if the run
    /// has failed.
    pub(crate) fn with<R>(&mut self, f: impl FnOnce(&mut Ctx) -> R) -> R {
        match Self::session_of(&mut self.session).with(f) {
            Ok(r) => r,
            Err(e) => report::die(&e),
        }
    }

    /// This processor's context, directly, for calls that were checked
    /// first and cannot fail (a put or get to a valid processor): they
    /// skip [`Session::with`]'s bookkeeping, which costs more than they do.
    fn ctx(&mut self) -> &mut Ctx {
        Self::session_of(&mut self.session).ctx()
    }

    /// Ends the run with `message`, naming this processor and superstep.
    pub(crate) fn abort(&mut self, message: String) -> ! {
        self.with(|ctx| ctx.abort(message))
    }

    /// `bsp_end`: ends this processor's part of the run.
    pub(crate) fn end(&mut self) {
        if let Err(e) = Self::session_of(&mut self.session).end() {
            report::die(&e)
        }
    }

    /// Takes the owned session of processor 0, to drop it.
    pub(crate) fn into_session(self: Box<Self>) -> Option<Box<Session>> {
        match self.session {
            SessionRef::Owned(s) => Some(s),
            SessionRef::Lent(_) => None,
        }
    }

    /// This processor's superstep (the number of syncs it has made).
    pub(crate) fn superstep(&mut self) -> usize {
        self.ctx().superstep()
    }

    pub(crate) fn time(&mut self) -> f64 {
        self.with(|ctx| ctx.time())
    }

    // --- registration -----------------------------------------------

    pub(crate) fn push_reg(&mut self, addr: usize, size: usize) {
        self.last = None;
        let slot = self.slots.len();
        self.slots.push(Slot {
            addr,
            size,
            pushed_now: true,
            popped: false,
            gone: false,
            area: None,
            remote: Vec::new(),
        });
        self.by_addr.entry(addr).or_default().push(slot);
        self.ops.pushes.push((addr, size));
    }

    pub(crate) fn pop_reg(&mut self, addr: usize) {
        if addr == 0 {
            self.ops.pops.push(Pop::Null);
            return;
        }
        let slots = &self.slots;
        let found = self
            .by_addr
            .get(&addr)
            .and_then(|stack| stack.iter().rev().copied().find(|&s| !slots[s].popped));
        match found {
            Some(s) => {
                self.slots[s].popped = true;
                self.ops.pops.push(Pop::Slot(s));
            }
            None => self.abort(format!(
                "bsp_pop_reg: memory at address {} was not registered",
                ptr(addr)
            )),
        }
    }

    /// The registration a put or get by `func` reaches through the local
    /// address `addr`: the most recent one that is effective.
    #[inline]
    fn usable_slot(&mut self, func: &str, addr: usize) -> usize {
        match self.last {
            Some((a, s)) if a == addr => s,
            _ => self.find_slot(func, addr),
        }
    }

    /// [`usable_slot`](Proc::usable_slot) for an address other than the
    /// last one used: a lookup, or the end of the run.
    #[inline(never)]
    fn find_slot(&mut self, func: &str, addr: usize) -> usize {
        let stack = self.by_addr.get(&addr);
        let slots = &self.slots;
        let usable = stack.and_then(|st| st.iter().rev().copied().find(|&s| !slots[s].pushed_now));
        if let Some(s) = usable {
            self.last = Some((addr, s));
            return s;
        }
        let just = stack.is_some_and(|st| st.iter().any(|&s| slots[s].pushed_now));
        // BSPonMPI's wording (its tests look for it).
        let msg = if just {
            format!(
                "{func}: Remote address was just registered  with a bsp_push_reg({}), but it \
                 hasn't become effective yet, because bsp_sync() hasn't been performed yet",
                ptr(addr)
            )
        } else {
            format!("{func}: Remote address {} was not registered", ptr(addr))
        };
        self.abort(msg)
    }

    /// Checks a put's or get's arguments (as BSPonMPI does, in its order
    /// and words) and returns the area they reach. The checks
    /// that pass cost a few compares (this is on every `bsp_put`); the
    /// messages are made out of line.
    #[inline]
    fn checked(&mut self, access: Access<'_>) -> Area {
        let Access {
            func,
            pid,
            reg,
            offset,
            nbytes,
            ..
        } = access;
        if pid < 0 || pid as usize >= self.nprocs || offset < 0 || nbytes < 0 || reg == 0 {
            self.bad_arguments(access);
        }
        let s = self.usable_slot(func, reg);
        let slot = &self.slots[s];
        let (_, rsize) = slot.remote[pid as usize];
        let area = slot.area.expect("an effective slot has its area");
        if offset as usize + nbytes as usize > rsize {
            self.beyond_range(access, s);
        }
        area
    }

    /// Ends the run for arguments that [`checked`](Proc::checked) refuses
    /// before looking at the registration.
    #[cold]
    #[inline(never)]
    fn bad_arguments(&mut self, access: Access<'_>) -> ! {
        let Access { func, pid, .. } = access;
        if pid < 0 || pid as usize >= self.nprocs {
            self.abort(format!(
                "{func}: The {} process ID does not exist (pid {pid}, with {} processes)",
                access.dir.remote(),
                self.nprocs
            ));
        }
        if access.offset < 0 {
            self.abort(format!("{func}: The offset was negative, which is illegal"));
        }
        if access.nbytes < 0 {
            self.abort(format!("{func}: The size was negative, which is illegal"));
        }
        debug_assert_eq!(access.reg, 0);
        let which = match access.dir {
            Direction::Put => "Destination",
            Direction::Get => "Source",
        };
        self.abort(format!(
            "{func}: {which} address cannot be identified by NULL"
        ))
    }

    /// Ends the run for a put or get beyond the size registered on its
    /// pid, through registration `slot`.
    #[cold]
    #[inline(never)]
    fn beyond_range(&mut self, access: Access<'_>, slot: usize) -> ! {
        let Access { func, pid, .. } = access;
        let (raddr, rsize) = self.slots[slot].remote[pid as usize];
        let end = access.offset as usize + access.nbytes as usize;
        self.abort(format!(
            "{func}: {} {} bytes beyond registered range [{},{}+{rsize}) at process {pid}",
            access.dir.verb(),
            end - rsize,
            ptr(raddr),
            ptr(raddr)
        ))
    }

    /// `bsp_put` / `bsp_hpput` (`func` names which).
    ///
    /// # Safety
    ///
    /// `src` is valid for reads of `nbytes` bytes when `nbytes > 0`.
    pub(crate) unsafe fn put(
        &mut self,
        func: &str,
        pid: i32,
        src: *const u8,
        dst: usize,
        offset: i32,
        nbytes: i32,
    ) {
        if nbytes == 0 {
            return;
        }
        let area = self.checked(Access {
            func,
            pid,
            reg: dst,
            offset,
            nbytes,
            dir: Direction::Put,
        });
        if src.is_null() {
            self.abort(format!("{func}: the source pointer is NULL"));
        }
        // SAFETY: the caller's contract: `src` is valid for `nbytes` reads
        // (positive, checked above), and the bytes are copied at once.
        let data = unsafe { std::slice::from_raw_parts(src, nbytes as usize) };
        // `checked` has validated the pid: this cannot fail.
        self.ctx()
            .put_area(pid as usize, area, offset as usize, data);
    }

    /// `bsp_get` / `bsp_hpget`.
    ///
    /// # Safety
    ///
    /// `dst` is valid for writes of `nbytes` bytes, and untouched by the
    /// program, until the next `bsp_sync` returns.
    pub(crate) unsafe fn get(
        &mut self,
        func: &str,
        pid: i32,
        src: usize,
        offset: i32,
        dst: *mut u8,
        nbytes: i32,
    ) {
        if nbytes == 0 {
            return;
        }
        let area = self.checked(Access {
            func,
            pid,
            reg: src,
            offset,
            nbytes,
            dir: Direction::Get,
        });
        if dst.is_null() {
            self.abort(format!("{func}: the destination pointer is NULL"));
        }
        // SAFETY: the caller's contract is `get_area`'s. `checked` has
        // validated the pid: this cannot fail.
        unsafe {
            self.ctx()
                .get_area(pid as usize, area, offset as usize, dst, nbytes as usize)
        };
    }

    // --- messages -----------------------------------------------------

    /// `bsp_set_tagsize`: sets the next tag size, returns the last one set.
    pub(crate) fn set_tagsize(&mut self, size: usize) -> usize {
        self.ops.tag_sizes.push(size);
        std::mem::replace(&mut self.tags.next, size)
    }

    /// The tag size of the messages in the queue.
    pub(crate) fn received_tag_size(&self) -> usize {
        self.tags.received
    }

    /// `bsp_send`.
    ///
    /// # Safety
    ///
    /// `tag` is valid for reads of the current tag size, and `payload` of
    /// `nbytes` bytes, where they are non-null.
    pub(crate) unsafe fn send(
        &mut self,
        pid: i32,
        tag: *const u8,
        payload: *const u8,
        nbytes: i32,
    ) {
        if pid < 0 || pid as usize >= self.nprocs {
            // BSPonMPI's wording, "source" included.
            self.abort(format!(
                "bsp_send: The source process ID does not exist (pid {pid}, with {} processes)",
                self.nprocs
            ));
        }
        if nbytes < 0 {
            self.abort("bsp_send: Payload size may not be negative".to_owned());
        }
        let tag_len = self.tags.sending;
        if tag.is_null() && tag_len > 0 {
            self.abort(format!(
                "bsp_send: the tag may not be NULL: the tag size is {tag_len} bytes"
            ));
        }
        if payload.is_null() && nbytes > 0 {
            self.abort(
                "bsp_send: the payload may not be NULL when its size is not zero".to_owned(),
            );
        }
        let mut message = std::mem::take(&mut self.scratch);
        message.clear();
        if tag_len > 0 {
            // SAFETY: the caller's contract: `tag` (non-null, checked) is
            // valid for `tag_len` reads.
            message.extend_from_slice(unsafe { std::slice::from_raw_parts(tag, tag_len) });
        }
        if nbytes > 0 {
            // SAFETY: as above, for `payload` and `nbytes`.
            message
                .extend_from_slice(unsafe { std::slice::from_raw_parts(payload, nbytes as usize) });
        }
        let q = self.messages;
        self.with(|ctx| ctx.send_tagged(pid as usize, &q, &(tag_len as u32), &message));
        self.scratch = message;
    }

    /// `bsp_qsize`: messages left, and their payload bytes.
    pub(crate) fn qsize(&self) -> (usize, usize) {
        (self.inbox.left(), self.inbox.payload_left)
    }

    /// `bsp_get_tag`: the first message's payload length and tag bytes.
    pub(crate) fn first_tag(&self) -> Option<(usize, &[u8])> {
        let m = self.inbox.front()?;
        Some((m.payload_len, self.inbox.bytes(m.tag_at, m.tag_len)))
    }

    /// `bsp_move`: the first message's payload, removed from the queue.
    pub(crate) fn move_first(&mut self, into: &mut [u8]) -> bool {
        let Some(m) = self.inbox.front() else {
            return false;
        };
        let n = into.len().min(m.payload_len);
        into[..n].copy_from_slice(&self.inbox.bytes(m.payload_at, m.payload_len)[..n]);
        self.inbox.pop();
        true
    }

    /// `bsp_hpmove`: pointers to the first message's tag and payload
    /// (valid until the next sync) and its length, removed from the queue.
    pub(crate) fn hpmove(&mut self) -> Option<(*mut c_void, *mut c_void, usize)> {
        let m = self.inbox.front()?;
        let tag = self.inbox.address(m.tag_at);
        let payload = self.inbox.address(m.payload_at);
        self.inbox.pop();
        Some((tag, payload, m.payload_len))
    }

    // --- the sync -------------------------------------------------------

    /// `bsp_sync`.
    pub(crate) fn sync(&mut self) {
        let ops = std::mem::take(&mut self.ops);
        let (control, messages, nprocs) = (self.control, self.messages, self.nprocs);
        let (delivered, lists, step) = self.with(|ctx| {
            if !ops.is_empty() {
                let words = ops.encode();
                for q in 0..nprocs {
                    ctx.send_tagged(q, &control, &0, &words);
                }
            }
            ctx.sync();
            let lists = if ctx.queue_len(&control) > 0 {
                ctx.receive_with_source(&control)
            } else {
                Vec::new()
            };
            (ctx.receive(&messages), lists, ctx.superstep() - 1)
        });
        self.tags.received = self.tags.sending;
        self.tags.sending = self.tags.next;
        self.inbox.refill(delivered);
        if !lists.is_empty() {
            let mut all: Vec<Ops> = (0..nprocs).map(|_| Ops::default()).collect();
            for (src, list) in lists {
                all[src] = Ops::decode(&list.payload);
            }
            self.settle(&all, step);
        }
    }

    /// Checks every processor's registration operations of superstep
    /// `step` (the same lists on every processor) and applies them.
    fn settle(&mut self, all: &[Ops], step: usize) {
        self.last = None;
        let p = self.nprocs;
        let first_slot = self.slots.len() - all[self.pid].pushes.len();
        let check = || -> Result<Vec<usize>, (usize, String)> {
            let n0 = all[0].pushes.len();
            if let Some(q) = (1..p).find(|&q| all[q].pushes.len() != n0) {
                return Err((
                    q,
                    format!(
                        "bsp_sync/bsp_push_reg: Not all processes registered the same number of \
                     memory blocks. For example, process 0 registered {n0} blocks, while process \
                     {q} registered {}",
                        all[q].pushes.len()
                    ),
                ));
            }
            let n0 = all[0].pops.len();
            if let Some(q) = (1..p).find(|&q| all[q].pops.len() != n0) {
                return Err((q, format!(
                    "bsp_sync/bsp_pop_reg: Not all processes popped the same number of memory \
                     blocks. For example, process 0 popped {n0} blocks, while process {q} popped {}",
                    all[q].pops.len()
                )));
            }
            let mut popped = Vec::with_capacity(n0);
            for j in 0..n0 {
                let mut agreed: Option<(usize, usize)> = None;
                for (q, ops) in all.iter().enumerate() {
                    if let Pop::Slot(s) = ops.pops[j] {
                        match agreed {
                            None => agreed = Some((s, q)),
                            Some((a, first)) if a != s => {
                                return Err((
                                    q,
                                    format!(
                                    "bsp_sync/bsp_pop_reg: Processes {first} and {q} did not pop \
                                     the same memory registration"
                                ),
                                ));
                            }
                            Some(_) => {}
                        }
                    }
                }
                popped.push(agreed.map_or(usize::MAX, |(s, _)| s));
            }
            let t0 = &all[0].tag_sizes;
            if let Some(q) = (1..p).find(|&q| all[q].tag_sizes.len() != t0.len()) {
                return Err((
                    q,
                    "bsp_sync/bsp_set_tagsize: Not all processes set the tag size \
                                same number of times"
                        .to_owned(),
                ));
            }
            if let Some(q) = (1..p).find(|&q| all[q].tag_sizes != *t0) {
                return Err((
                    q,
                    "bsp_sync/bsp_set_tagsize: Not all processes announced the same \
                                tag size"
                        .to_owned(),
                ));
            }
            Ok(popped)
        };
        let popped = match check() {
            Ok(popped) => popped,
            Err((culprit, message)) => self.mismatch(culprit, step, message),
        };
        // The registrations of the superstep become effective.
        for (i, slot) in (first_slot..self.slots.len()).enumerate() {
            let remote: Vec<(usize, usize)> = all.iter().map(|ops| ops.pushes[i]).collect();
            let s = &mut self.slots[slot];
            s.remote = remote;
            s.pushed_now = false;
        }
        for slot in first_slot..self.slots.len() {
            let (addr, size) = (self.slots[slot].addr, self.slots[slot].size);
            // SAFETY: BSPlib's contract for bsp_push_reg: the program keeps
            // `size` bytes at `addr` valid until the matching bsp_pop_reg
            // takes effect (where the area is released, below), and does
            // not touch them during bsp calls, where the runtime does.
            let area = self.with(|ctx| unsafe { ctx.register_area(addr as *mut u8, size) });
            self.slots[slot].area = Some(area);
        }
        // Then the removals; a NULL pop everywhere takes the oldest
        // registration that is NULL on every processor.
        for mut s in popped {
            if s == usize::MAX {
                s = match self.all_null_slot() {
                    Some(s) => s,
                    None => {
                        let any_null = self.by_addr.get(&0).is_some_and(|st| !st.is_empty());
                        let message = if any_null {
                            // BSPonMPI's words, its typo included.
                            "bsp_sync/bsp_pop_reg: Tried to deregister NULL on all processes, \
                             but could not find a matching regisration (bsp_push_reg)"
                        } else {
                            "bsp_sync/bsp_pop_reg: Tried to deregister NULL on all processes, \
                             but NULL was never registered"
                        };
                        self.mismatch(0, step, message.to_owned())
                    }
                };
            }
            self.remove(s);
        }
    }

    /// The oldest live registration that is NULL on every processor.
    fn all_null_slot(&self) -> Option<usize> {
        let stack = self.by_addr.get(&0)?;
        stack.iter().copied().find(|&s| {
            let slot = &self.slots[s];
            !slot.gone && slot.remote.iter().all(|&(addr, _)| addr == 0)
        })
    }

    /// Removes registration `s` (at the sync after its `bsp_pop_reg`).
    fn remove(&mut self, s: usize) {
        let addr = self.slots[s].addr;
        if let Some(stack) = self.by_addr.get_mut(&addr) {
            stack.retain(|&x| x != s);
            if stack.is_empty() {
                self.by_addr.remove(&addr);
            }
        }
        let slot = &mut self.slots[s];
        slot.gone = true;
        slot.remote = Vec::new();
        if let Some(area) = slot.area.take() {
            self.with(|ctx| ctx.release_area(area));
        }
    }

    /// Ends the run after the registration lists of superstep `step`
    /// disagree. Every processor sees the same lists: the culprit reports
    /// the mismatch, and the others wait at a sync for its report.
    fn mismatch(&mut self, culprit: usize, step: usize, message: String) -> ! {
        if self.pid == culprit {
            self.with(|ctx| ctx.abort_at(step, message))
        }
        self.with(|ctx| ctx.sync());
        unreachable!("bsp: processor {culprit} reports the mismatch, so this sync fails")
    }
}
