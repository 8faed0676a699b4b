//! Message queues (BSMP): registration, sends, and receiving after a sync.

use bytemuck::Pod;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{unusable, Ctx};
use crate::queue::{Encoding, Inbox, Queue, Raw, Serde};

impl Ctx {
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
    /// assert_eq!(out.get(0), Some(&vec![0, 1, 2]));
    /// assert!(out.get(1).is_some_and(|r| r.is_empty()));
    /// ```
    ///
    /// # Cost
    ///
    /// Local, O(1).
    pub fn queue<T: Pod>(&mut self) -> Queue<T, Raw> {
        let kind = format!("queue<{}>", std::any::type_name::<T>());
        Queue::new(self.registry.register_queue(kind), self.scope)
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
    /// assert_eq!(out.get(1).unwrap(), &["hello from 0", "hello from 1"]);
    /// ```
    ///
    /// # Cost
    ///
    /// Local, O(1).
    pub fn serde_queue<T: Serialize + DeserializeOwned>(&mut self) -> Queue<T, Serde> {
        let kind = format!("serde_queue<{}>", std::any::type_name::<T>());
        Queue::new(self.registry.register_queue(kind), self.scope)
    }

    /// Releases queue `q`: messages received and not taken are dropped, and
    /// the handle can no longer be used. Collective, like
    /// [`release`](Ctx::release): every processor releases the same queues
    /// and coarrays in the same order and superstep. A message that reaches
    /// `q` in the superstep of its release ends the run with
    /// [`ErrorKind::Released`](crate::ErrorKind::Released).
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
    /// If `q` was already released or was registered on another machine (another run, a split's sub-machine or its parent).
    ///
    /// # Cost
    ///
    /// Local, O(1) plus freeing its buffers.
    pub fn release_queue<T, E: Encoding<T>>(&mut self, q: Queue<T, E>) {
        if let Err(why) = self.registry.release_queue(self.id_of(&q), self.superstep) {
            unusable(self.pid, self.superstep, why, "queue", q.id)
        }
    }

    /// Sends `msg` to processor `dst` through queue `q`; it is received after
    /// the next `sync`.
    ///
    /// # Panics
    ///
    /// Ends the run with [`ErrorKind::BadPid`](crate::ErrorKind::BadPid) if `dst >= nprocs()`.
    ///
    /// # Cost
    ///
    /// The encoded message's bytes in this superstep's h-relation, plus a
    /// 24-byte header for each run of consecutive sends to the same
    /// destination and queue.
    pub fn send<T, E: Encoding<T>>(&mut self, dst: usize, q: &Queue<T, E>, msg: &T) {
        self.check_pid("send", dst);
        self.outbox
            .push_message(dst, self.id_of(q), |out| E::encode(msg, out));
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
        self.inbox(self.id_of(q))
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
    /// assert_eq!(out.get(0), Some(&vec![(0, 7), (1, 7)]));
    /// ```
    ///
    /// # Cost
    ///
    /// Local, linear in the messages' bytes.
    pub fn receive_with_source<T, E: Encoding<T>>(&mut self, q: &Queue<T, E>) -> Vec<(usize, T)> {
        let mut all = Vec::new();
        self.inbox(self.id_of(q))
            .drain::<T, E>(|src, msgs| all.extend(msgs.into_iter().map(|m| (src, m))));
        all
    }

    /// Whether this processor's queue `q` keeps the messages not read by
    /// the next `sync`. By default a queue holds one superstep's messages,
    /// as in BSPlib: a `sync` drops those not read since the one that
    /// delivered them (and a debug build says so once per queue, on
    /// standard error). With `keep` they stay, ahead of the next
    /// superstep's, in the same source-then-send order. A local setting:
    /// other processors' copies of `q` keep their own.
    ///
    /// # Examples
    ///
    /// ```
    /// let out = bsp_core::run(2, |ctx| {
    ///     let (dropping, keeping) = (ctx.queue::<u8>(), ctx.queue::<u8>());
    ///     ctx.keep_unread(&keeping, true);
    ///     for q in [&dropping, &keeping] {
    ///         ctx.send(0, q, &1);
    ///     }
    ///     ctx.sync(); // delivers one message to each queue; none is read
    ///     for q in [&dropping, &keeping] {
    ///         ctx.send(0, q, &2);
    ///     }
    ///     ctx.sync(); // drops the unread message of `dropping` only
    ///     (ctx.receive(&dropping), ctx.receive(&keeping))
    /// })?;
    /// assert_eq!(out.root(), Some(&(vec![2, 2], vec![1, 1, 2, 2])));
    /// # Ok::<(), bsp_core::Error>(())
    /// ```
    ///
    /// # Cost
    ///
    /// Local, O(1).
    pub fn keep_unread<T, E: Encoding<T>>(&mut self, q: &Queue<T, E>, keep: bool) {
        self.inbox(self.id_of(q)).keep_unread = keep;
    }

    /// At a sync's start: drops the messages of the last sync that were not
    /// read, from the queues that do not keep them.
    pub(super) fn drop_unread(&mut self) {
        for dropped in self.registry.drop_unread() {
            if cfg!(debug_assertions) {
                eprintln!(
                    "bsp: processor {}, superstep {}: {} unread message(s) on queue #{} ({}) \
                     dropped at sync, as BSPlib does; read them before the sync, or keep them \
                     with ctx.keep_unread(&queue, true) (said once per queue, in debug builds)",
                    self.pid,
                    self.superstep,
                    dropped.messages,
                    dropped.queue,
                    self.registry.name_of(dropped.queue)
                );
            }
        }
    }

    pub(super) fn inbox(&mut self, id: u32) -> &mut Inbox {
        let (pid, superstep) = (self.pid, self.superstep);
        match self.registry.inbox(id) {
            Ok(inbox) => inbox,
            Err(why) => unusable(pid, superstep, why, "queue", id),
        }
    }

    /// Queue `id`'s inbox, to read without taking.
    pub(super) fn inbox_ref(&self, id: u32) -> &Inbox {
        match self.registry.inbox_ref(id) {
            Ok(inbox) => inbox,
            Err(why) => unusable(self.pid, self.superstep, why, "queue", id),
        }
    }
}
