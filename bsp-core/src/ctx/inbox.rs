//! Reading a queue a message at a time (BSPlib's `bsp_qsize`,
//! `bsp_get_tag` and `bsp_move`), and tagged queues (`bsp_send` with a tag).

use bytemuck::Pod;

use super::Ctx;
use crate::queue::{encode_tagged, Encoding, Messages, Queue, Tag, Tagged};

impl Ctx {
    /// The number of messages received on `q` and not yet taken (BSPlib's
    /// `bsp_qsize`).
    ///
    /// # Examples
    ///
    /// ```
    /// let out = bsp_core::run(3, |ctx| {
    ///     let q = ctx.queue::<u8>();
    ///     ctx.send(0, &q, &1);
    ///     ctx.sync();
    ///     let before = ctx.queue_len(&q);
    ///     let _ = ctx.next_message(&q);
    ///     (before, ctx.queue_len(&q))
    /// })?;
    /// assert_eq!(out.get(0), Some(&(3, 2)));
    /// assert_eq!(out.get(1), Some(&(0, 0)));
    /// # Ok::<(), bsp_core::Error>(())
    /// ```
    ///
    /// # Cost
    ///
    /// Local, linear in the number of sources that sent to this processor.
    pub fn queue_len<T, E: Encoding<T>>(&self, q: &Queue<T, E>) -> usize {
        self.inbox_ref(self.id_of(q)).len()
    }

    /// The next message of `q` — in source pid, then send order — without
    /// taking it (for a tagged queue, BSPlib's `bsp_get_tag`); `None` when
    /// none is waiting.
    ///
    /// # Examples
    ///
    /// ```
    /// let out = bsp_core::run(2, |ctx| {
    ///     let q = ctx.serde_queue::<String>();
    ///     ctx.send(0, &q, &format!("from {}", ctx.pid()));
    ///     ctx.sync();
    ///     let first = ctx.peek(&q);
    ///     (first, ctx.queue_len(&q))
    /// })?;
    /// assert_eq!(out.get(0), Some(&(Some("from 0".to_string()), 2)));
    /// assert_eq!(out.get(1), Some(&(None, 0)));
    /// # Ok::<(), bsp_core::Error>(())
    /// ```
    ///
    /// # Cost
    ///
    /// Local: decodes one message.
    pub fn peek<T, E: Encoding<T>>(&self, q: &Queue<T, E>) -> Option<T> {
        self.inbox_ref(self.id_of(q)).peek::<T, E>().map(|(_, m)| m)
    }

    /// Takes the next message of `q`, in source pid, then send order
    /// (BSPlib's `bsp_move`); `None` when none is left. Unlike
    /// [`messages`](Ctx::messages), the context stays free between calls, so
    /// a loop can answer each message as it goes.
    ///
    /// # Examples
    ///
    /// ```
    /// let out = bsp_core::run(2, |ctx| {
    ///     let (ask, answer) = (ctx.queue::<u32>(), ctx.queue::<u32>());
    ///     ctx.send(1 - ctx.pid(), &ask, &(ctx.pid() as u32 + 10));
    ///     ctx.sync();
    ///     while let Some(x) = ctx.next_message(&ask) {
    ///         ctx.send(1 - ctx.pid(), &answer, &(x * 2)); // reply while reading
    ///     }
    ///     ctx.sync();
    ///     ctx.receive(&answer)
    /// })?;
    /// assert_eq!(out.get(0), Some(&vec![20]));
    /// # Ok::<(), bsp_core::Error>(())
    /// ```
    ///
    /// # Cost
    ///
    /// Local: decodes one message.
    pub fn next_message<T, E: Encoding<T>>(&mut self, q: &Queue<T, E>) -> Option<T> {
        self.inbox(self.id_of(q)).pop::<T, E>().map(|(_, m)| m)
    }

    /// Takes every message of `q` out of the queue, to decode one by one
    /// as the iterator is advanced, in source pid, then send order, each
    /// with its source pid (as [`receive_with_source`](Ctx::receive_with_source)
    /// gives them): no vector of all of them is built. The iterator owns
    /// the messages, so the context stays free while it runs — a loop can
    /// send replies — and the messages it does not reach are dropped with
    /// it.
    ///
    /// # Examples
    ///
    /// ```
    /// let out = bsp_core::run(3, |ctx| {
    ///     let (ask, answer) = (ctx.queue::<u64>(), ctx.queue::<u64>());
    ///     ctx.send(0, &ask, &(ctx.pid() as u64 * 100));
    ///     ctx.sync();
    ///     for (from, x) in ctx.messages(&ask) {
    ///         ctx.send(from, &answer, &(x + 1)); // reply while reading
    ///     }
    ///     ctx.sync();
    ///     ctx.receive(&answer)
    /// })?;
    /// assert_eq!(out.root(), Some(&vec![1]));
    /// # Ok::<(), bsp_core::Error>(())
    /// ```
    ///
    /// # Cost
    ///
    /// Local: moves the queue's buffer out (no copy), then decodes one
    /// message per step.
    pub fn messages<T, E: Encoding<T>>(&mut self, q: &Queue<T, E>) -> Messages<T, E> {
        Messages::new(self.inbox(self.id_of(q)).take_all())
    }

    /// Registers a tagged queue: each message is a tag `K` and a payload
    /// slice of `T` of any length ([`Tagged`]), as BSPlib's `bsp_send` with
    /// a tag size. Send with [`send_tagged`](Ctx::send_tagged) (or
    /// [`send`](Ctx::send) of a [`Tagged`]); read with the usual
    /// [`receive`](Ctx::receive), [`peek`](Ctx::peek),
    /// [`next_message`](Ctx::next_message) and
    /// [`queue_len`](Ctx::queue_len).
    ///
    /// Collective, like [`coarray`](Ctx::coarray).
    ///
    /// # Examples
    ///
    /// ```
    /// use bsp_core::Tagged;
    ///
    /// let out = bsp_core::run(2, |ctx| {
    ///     let q = ctx.tagged_queue::<u32, f64>();
    ///     let me = ctx.pid();
    ///     ctx.send_tagged(0, &q, &(me as u32), &vec![0.5; me + 1]);
    ///     ctx.sync();
    ///     let tag_of_first = ctx.peek(&q).map(|m| m.tag);
    ///     (tag_of_first, ctx.receive(&q))
    /// })?;
    /// let (tag, msgs) = out.get(0).unwrap();
    /// assert_eq!(*tag, Some(0));
    /// assert_eq!(msgs[1], Tagged::new(1, vec![0.5, 0.5]));
    /// # Ok::<(), bsp_core::Error>(())
    /// ```
    ///
    /// # Cost
    ///
    /// Local, O(1).
    pub fn tagged_queue<K: Pod, T: Pod>(&mut self) -> Queue<Tagged<K, T>, Tag> {
        let kind = format!(
            "tagged_queue<{}, {}>",
            std::any::type_name::<K>(),
            std::any::type_name::<T>()
        );
        Queue::new(self.registry.register_queue(kind), self.scope)
    }

    /// Sends a message with `tag` and `payload` to processor `dst` through
    /// the tagged queue `q`, copying the payload now; it is received after
    /// the next `sync`.
    ///
    /// # Examples
    ///
    /// See [`tagged_queue`](Ctx::tagged_queue).
    ///
    /// # Panics
    ///
    /// Ends the run with [`ErrorKind::BadPid`](crate::ErrorKind::BadPid) if
    /// `dst >= nprocs()`.
    ///
    /// # Cost
    ///
    /// `size_of::<K>() + 8 + size_of_val(payload)` bytes in this
    /// superstep's h-relation, plus a 24-byte header for each run of
    /// consecutive sends to the same destination and queue.
    pub fn send_tagged<K: Pod, T: Pod>(
        &mut self,
        dst: usize,
        q: &Queue<Tagged<K, T>, Tag>,
        tag: &K,
        payload: &[T],
    ) {
        self.check_pid("send", dst);
        self.outbox
            .push_message(dst, self.id_of(q), |out| encode_tagged(tag, payload, out));
    }
}
