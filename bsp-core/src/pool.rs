//! Recycled exchange buffers, shared by the transports and the routers of
//! a process ([`BUFFERS`]).

use std::sync::Mutex;

use bytes::Bytes;

/// Most buffers kept for reuse.
const POOL_BUFFERS: usize = 8;

/// Recycled exchange buffers. Fresh large allocations are mapped from the
/// OS and page-faulted on first touch, which cost more than the exchange
/// itself; received buffers come back here when the last `Bytes` slice of
/// them is dropped. The pool keeps at most [`POOL_BUFFERS`] buffers, each of
/// at most the size of the largest exchange seen.
pub(crate) struct Pool(Mutex<Vec<Vec<u8>>>);

impl Pool {
    pub(crate) const fn new() -> Self {
        Pool(Mutex::new(Vec::new()))
    }

    /// A buffer of `len` bytes with unspecified contents.
    pub(crate) fn take(&self, len: usize) -> Vec<u8> {
        let mut free = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let pick = free
            .iter()
            .position(|b| b.capacity() >= len)
            .or_else(|| (!free.is_empty()).then_some(0));
        let mut buf = pick.map(|i| free.swap_remove(i)).unwrap_or_default();
        drop(free);
        // Capacity ≥ 1 always: an unallocated vector's pointer is 0x1,
        // which is OpenMPI's `MPI_IN_PLACE`.
        buf.reserve(len.max(1));
        if buf.len() > len {
            buf.truncate(len);
        } else {
            buf.resize(len, 0);
        }
        buf
    }

    pub(crate) fn give(&self, buf: Vec<u8>) {
        let mut free = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if free.len() < POOL_BUFFERS && buf.capacity() > 0 {
            free.push(buf);
        }
    }

    /// Hands `buf` out as `Bytes` that return it to the pool when dropped.
    pub(crate) fn share(&'static self, buf: Vec<u8>) -> Bytes {
        Bytes::from_owner(Pooled { buf, pool: self })
    }
}

/// A pooled buffer lent out as `Bytes`.
struct Pooled {
    buf: Vec<u8>,
    pool: &'static Pool,
}

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        self.pool.give(std::mem::take(&mut self.buf));
    }
}

/// The process's buffers: receive buffers of the exchanges, and the
/// staging and forwarding buffers of the placed routings.
pub(crate) static BUFFERS: Pool = Pool::new();
