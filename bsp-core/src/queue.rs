//! Typed message queues (BSMP): messages sent during a superstep are
//! received after the `sync` that ends it, ordered by source pid, then send
//! order.

use std::marker::PhantomData;

use bytemuck::Pod;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::codec;

/// A handle to a registered queue carrying messages of type `T`, encoded by `E`.
///
/// `E` is [`Raw`] for `T: Pod` (from [`Ctx::queue`](crate::Ctx::queue)) and
/// [`Serde`] for serde types (from [`Ctx::serde_queue`](crate::Ctx::serde_queue)).
pub struct Queue<T, E = Raw> {
    pub(crate) id: u32,
    _marker: PhantomData<fn() -> (T, E)>,
}

impl<T, E> Queue<T, E> {
    pub(crate) fn new(id: u32) -> Self {
        Queue {
            id,
            _marker: PhantomData,
        }
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
}

/// How messages of type `T` become bytes. Implemented by [`Raw`] and [`Serde`].
pub trait Encoding<T>: sealed::Sealed + 'static {
    #[doc(hidden)]
    fn encode(msg: &T, out: &mut Vec<u8>);
    #[doc(hidden)]
    fn decode(count: u64, bytes: &[u8], out: &mut Vec<T>);
}

/// Messages travel as their raw bytes (`T: bytemuck::Pod`), with no
/// serialization step.
#[derive(Clone, Copy, Debug)]
pub struct Raw;

/// Messages travel through the serde codec (bincode 2.0.1).
#[derive(Clone, Copy, Debug)]
pub struct Serde;

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
                bytes
                    .chunks_exact(size)
                    .map(bytemuck::pod_read_unaligned::<T>),
            );
        }
    }
}

impl<T: Serialize + DeserializeOwned> Encoding<T> for Serde {
    fn encode(msg: &T, out: &mut Vec<u8>) {
        codec::encode(msg, out);
    }

    fn decode(count: u64, bytes: &[u8], out: &mut Vec<T>) {
        codec::decode_all(count, bytes, out);
    }
}

/// A queue's received, not yet taken, messages, still encoded.
#[derive(Default)]
pub(crate) struct Inbox {
    pub(crate) data: Vec<u8>,
    /// `(source pid, message count, end offset in data)` per received run.
    pub(crate) runs: Vec<(usize, u64, usize)>,
}

impl Inbox {
    /// Decodes and removes every message, with its source pid.
    pub(crate) fn drain<T, E: Encoding<T>>(&mut self, mut each: impl FnMut(usize, Vec<T>)) {
        let mut start = 0;
        for &(src, count, end) in &self.runs {
            let mut msgs = Vec::with_capacity(count as usize);
            E::decode(count, &self.data[start..end], &mut msgs);
            each(src, msgs);
            start = end;
        }
        // Free the buffers: a queue that once received much should not hold
        // that memory until the end of the run.
        self.data = Vec::new();
        self.runs = Vec::new();
    }
}
