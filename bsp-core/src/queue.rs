//! Typed message queues (BSMP): messages sent during a superstep are
//! received after the `sync` that ends it, ordered by source pid, then send
//! order.

use std::marker::PhantomData;

use bytemuck::Pod;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::codec;
use crate::scope::{Scope, Scoped};

/// A handle to a registered queue carrying messages of type `T`, encoded by `E`.
///
/// `E` is [`Raw`] for `T: Pod` (from [`Ctx::queue`](crate::Ctx::queue)),
/// [`Serde`] for serde types (from [`Ctx::serde_queue`](crate::Ctx::serde_queue))
/// and [`Tag`] for a tag with a payload slice (from
/// [`Ctx::tagged_queue`](crate::Ctx::tagged_queue)).
///
/// Like a [`Coarray`](crate::Coarray), a queue belongs to the machine that
/// registered it; using it on another ends the run with an error of kind
/// [`RegistrationMismatch`](crate::ErrorKind::RegistrationMismatch).
pub struct Queue<T, E = Raw> {
    pub(crate) id: u32,
    scope: Scope,
    _marker: PhantomData<fn() -> (T, E)>,
}

impl<T, E> Queue<T, E> {
    pub(crate) fn new(id: u32, scope: Scope) -> Self {
        Queue {
            id,
            scope,
            _marker: PhantomData,
        }
    }
}

impl<T, E> Scoped for Queue<T, E> {
    const WHAT: &'static str = "queue";
    fn id(&self) -> u32 {
        self.id
    }
    fn scope(&self) -> Scope {
        self.scope
    }
}

impl<T, E> Clone for Queue<T, E> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T, E> Copy for Queue<T, E> {}

impl<T, E> std::fmt::Debug for Queue<T, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Queue<{}>#{}", std::any::type_name::<T>(), self.id)
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Raw {}
    impl Sealed for super::Serde {}
    impl Sealed for super::Tag {}
}

/// How messages of type `T` become bytes. Implemented by [`Raw`], [`Serde`]
/// and [`Tag`].
pub trait Encoding<T>: sealed::Sealed + 'static {
    #[doc(hidden)]
    fn encode(msg: &T, out: &mut Vec<u8>);
    #[doc(hidden)]
    fn decode(count: u64, bytes: &[u8], out: &mut Vec<T>) {
        let mut at = 0;
        for _ in 0..count {
            let (msg, used) = Self::decode_one(&bytes[at..]);
            out.push(msg);
            at += used;
        }
    }
    /// The first message in `bytes`, and the bytes it took.
    #[doc(hidden)]
    fn decode_one(bytes: &[u8]) -> (T, usize);
}

/// Messages travel as their raw bytes (`T: bytemuck::Pod`), with no
/// serialization step.
#[derive(Clone, Copy, Debug)]
pub struct Raw;

/// Messages travel through the serde codec (bincode 2.0.1).
#[derive(Clone, Copy, Debug)]
pub struct Serde;

/// Messages are a [`Tagged`] tag and payload slice, both `Pod`, sent as
/// raw bytes: the tag, the payload's length, the payload.
#[derive(Clone, Copy, Debug)]
pub struct Tag;

/// A message of a tagged queue ([`Ctx::tagged_queue`](crate::Ctx::tagged_queue)):
/// a fixed-size tag and a payload of any length, as BSPlib's
/// `bsp_send(pid, &tag, payload, bytes)`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tagged<K, T> {
    /// The tag.
    pub tag: K,
    /// The payload.
    pub payload: Vec<T>,
}

impl<K, T> Tagged<K, T> {
    /// A message with `tag` and `payload`.
    pub fn new(tag: K, payload: Vec<T>) -> Self {
        Tagged { tag, payload }
    }
}

/// Appends a tagged message's encoding (tag, payload length, payload).
pub(crate) fn encode_tagged<K: Pod, T: Pod>(tag: &K, payload: &[T], out: &mut Vec<u8>) {
    out.extend_from_slice(bytemuck::bytes_of(tag));
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(bytemuck::cast_slice(payload));
}

impl<K: Pod, T: Pod> Encoding<Tagged<K, T>> for Tag {
    fn encode(msg: &Tagged<K, T>, out: &mut Vec<u8>) {
        encode_tagged(&msg.tag, &msg.payload, out);
    }

    fn decode_one(bytes: &[u8]) -> (Tagged<K, T>, usize) {
        let (k, t) = (std::mem::size_of::<K>(), std::mem::size_of::<T>());
        let tag = bytemuck::pod_read_unaligned::<K>(&bytes[..k]);
        let len = u64::from_le_bytes(bytes[k..k + 8].try_into().expect("8 bytes"));
        let len = usize::try_from(len).expect("bsp: a tagged payload longer than memory");
        let start = k + 8;
        let payload = if t == 0 {
            vec![T::zeroed(); len]
        } else {
            bytes[start..start + len * t]
                .chunks_exact(t)
                .map(bytemuck::pod_read_unaligned::<T>)
                .collect()
        };
        (Tagged { tag, payload }, start + len * t)
    }
}

impl<T: Pod> Encoding<T> for Raw {
    fn encode(msg: &T, out: &mut Vec<u8>) {
        out.extend_from_slice(bytemuck::bytes_of(msg));
    }

    fn decode(count: u64, bytes: &[u8], out: &mut Vec<T>) {
        let size = std::mem::size_of::<T>();
        if size == 0 {
            out.extend((0..count).map(|_| T::zeroed()));
        } else {
            out.extend(
                bytes[..count as usize * size]
                    .chunks_exact(size)
                    .map(bytemuck::pod_read_unaligned::<T>),
            );
        }
    }

    fn decode_one(bytes: &[u8]) -> (T, usize) {
        let size = std::mem::size_of::<T>();
        (bytemuck::pod_read_unaligned::<T>(&bytes[..size]), size)
    }
}

impl<T: Serialize + DeserializeOwned> Encoding<T> for Serde {
    fn encode(msg: &T, out: &mut Vec<u8>) {
        codec::encode(msg, out);
    }

    fn decode(count: u64, bytes: &[u8], out: &mut Vec<T>) {
        codec::decode_all(count, bytes, out);
    }

    fn decode_one(bytes: &[u8]) -> (T, usize) {
        codec::decode_one(bytes)
    }
}

/// A queue's received, not yet taken, messages, still encoded.
#[derive(Default)]
pub(crate) struct Inbox {
    pub(crate) data: Vec<u8>,
    /// `(source pid, message count, end offset in data)` per received run.
    pub(crate) runs: Vec<(usize, u64, usize)>,
    /// Where the next message is: its run, how many of that run's messages
    /// were taken, and its offset in `data`.
    next_run: usize,
    taken: u64,
    at: usize,
    /// Whether messages not taken by the next sync stay (the program asked
    /// for it); by default they are dropped there, as in BSPlib.
    pub(crate) keep_unread: bool,
    /// Whether dropping unread messages was reported already (debug builds
    /// report it once per queue).
    pub(crate) warned: bool,
}

impl Inbox {
    /// The number of messages not yet taken.
    pub(crate) fn len(&self) -> usize {
        let left: u64 = self.runs.iter().skip(self.next_run).map(|r| r.1).sum();
        (left - self.taken) as usize
    }

    /// Skips runs whose messages are all taken; the next message's run.
    fn front(&mut self) -> Option<(usize, u64, usize)> {
        while let Some(&run) = self.runs.get(self.next_run) {
            if self.taken < run.1 {
                return Some(run);
            }
            self.next_run += 1;
            self.taken = 0;
        }
        None
    }

    /// The next message's run, as [`front`](Inbox::front) finds it, but
    /// without moving past the runs all taken (their bytes end where the
    /// next message starts).
    fn next(&self) -> Option<(usize, u64, usize)> {
        let mut taken = self.taken;
        for &run in self.runs.iter().skip(self.next_run) {
            if taken < run.1 {
                return Some(run);
            }
            taken = 0;
        }
        None
    }

    /// The next message with its source pid, decoded, left in the queue.
    pub(crate) fn peek<T, E: Encoding<T>>(&self) -> Option<(usize, T)> {
        let (src, _, end) = self.next()?;
        Some((src, E::decode_one(&self.data[self.at..end]).0))
    }

    /// The next message with its source pid, taken from the queue.
    pub(crate) fn pop<T, E: Encoding<T>>(&mut self) -> Option<(usize, T)> {
        let (src, _, end) = self.front()?;
        let (msg, used) = E::decode_one(&self.data[self.at..end]);
        self.at += used;
        self.taken += 1;
        if self.len() == 0 {
            self.clear();
        }
        Some((src, msg))
    }

    /// Decodes and removes every message not yet taken, with its source pid.
    pub(crate) fn drain<T, E: Encoding<T>>(&mut self, mut each: impl FnMut(usize, Vec<T>)) {
        while let Some((src, count, end)) = self.front() {
            let left = count - self.taken;
            let mut msgs = Vec::with_capacity(left as usize);
            E::decode(left, &self.data[self.at..end], &mut msgs);
            each(src, msgs);
            (self.at, self.next_run, self.taken) = (end, self.next_run + 1, 0);
        }
        self.clear();
    }

    /// The messages not yet taken, encoded for a checkpoint: the number of
    /// runs, then each run's source, message count and byte length, then
    /// the bytes.
    pub(crate) fn save(&self) -> Vec<u8> {
        let mut head = Vec::new();
        let (mut taken, mut at) = (self.taken, self.at);
        let mut runs = 0u64;
        for &(src, count, end) in self.runs.iter().skip(self.next_run) {
            if count > taken {
                for v in [src as u64, count - taken, (end - at) as u64] {
                    head.extend_from_slice(&v.to_le_bytes());
                }
                runs += 1;
            }
            (taken, at) = (0, end);
        }
        let mut out = runs.to_le_bytes().to_vec();
        out.extend_from_slice(&head);
        out.extend_from_slice(&self.data[self.at..]);
        out
    }

    /// Puts back the messages that [`save`](Inbox::save) encoded, in place
    /// of any held; whether `bytes` were such an encoding.
    pub(crate) fn load(&mut self, bytes: &[u8]) -> bool {
        let word = |k: usize| -> Option<u64> {
            Some(u64::from_le_bytes(
                bytes.get(8 * k..8 * k + 8)?.try_into().ok()?,
            ))
        };
        let Some(runs) = word(0).and_then(|r| usize::try_from(r).ok()) else {
            return false;
        };
        let Some(data) = runs.checked_mul(24).and_then(|h| bytes.get(8 + h..)) else {
            return false;
        };
        let mut loaded = self.emptied();
        let mut end = 0usize;
        for r in 0..runs {
            let (Some(src), Some(count), Some(len)) =
                (word(1 + 3 * r), word(2 + 3 * r), word(3 + 3 * r))
            else {
                return false;
            };
            end += len as usize;
            loaded.runs.push((src as usize, count, end));
        }
        if end != data.len() {
            return false;
        }
        loaded.data = data.to_vec();
        *self = loaded;
        true
    }

    /// The messages not yet taken, moved out; the queue keeps its settings
    /// and is left empty.
    pub(crate) fn take_all(&mut self) -> Inbox {
        let emptied = self.emptied();
        std::mem::replace(self, emptied)
    }

    /// An inbox with no messages and this one's settings.
    fn emptied(&self) -> Inbox {
        Inbox {
            keep_unread: self.keep_unread,
            warned: self.warned,
            ..Inbox::default()
        }
    }

    /// Frees the buffers: a queue that once received much should not hold
    /// that memory until the end of the run. The queue's settings stay.
    pub(crate) fn clear(&mut self) {
        *self = self.emptied();
    }
}

/// The messages taken out of a queue by [`Ctx::messages`](crate::Ctx::messages),
/// decoded one at a time as the iterator advances: `(source pid, message)`,
/// in source pid, then send order.
pub struct Messages<T, E: Encoding<T>> {
    inbox: Inbox,
    _message: PhantomData<fn() -> (T, E)>,
}

impl<T, E: Encoding<T>> Messages<T, E> {
    pub(crate) fn new(inbox: Inbox) -> Self {
        Messages {
            inbox,
            _message: PhantomData,
        }
    }
}

impl<T, E: Encoding<T>> Iterator for Messages<T, E> {
    type Item = (usize, T);

    fn next(&mut self) -> Option<(usize, T)> {
        self.inbox.pop::<T, E>()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.inbox.len();
        (left, Some(left))
    }
}

impl<T, E: Encoding<T>> ExactSizeIterator for Messages<T, E> {}
