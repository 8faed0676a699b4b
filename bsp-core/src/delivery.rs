//! Inbound delivery: what a processor does with the streams the router
//! brought it — answer get requests from its data as it was before the
//! superstep's puts, then apply puts, queue messages and store get replies,
//! by source pid, then call order.
//!
//! Every check of a request against this processor's registrations happens
//! here, and a failed one is returned as an [`Error`] that blames the
//! processor that sent the request.

use std::collections::{BTreeMap, HashMap};

use bytemuck::Pod;

use crate::coarray::{PodVec, Storage};
use crate::error::{Error, ErrorKind};
use crate::outbox::Outbox;
use crate::registry::{Registry, Unusable};
use crate::segments::{copy_short, SegmentReader};
use crate::transport::Blocks;
use crate::wire::{Record, RecordReader};

/// A get requested and not yet taken.
enum PendingGet {
    /// Requested; its buffer is made when the reply arrives, at the size
    /// the source has checked, so a request for more elements than exist
    /// allocates nothing.
    Requested {
        make: fn(usize) -> Box<dyn Storage>,
        elem_size: usize,
    },
    /// Delivered.
    Arrived(Box<dyn Storage>),
    /// A get into memory the program owns (`Areas::get_area`):
    /// the reply is written there, and the ticket is then forgotten.
    Raw { into: RawTarget, len: usize },
}

/// Where a `Areas::get_area` writes its value.
pub(crate) struct RawTarget(pub(crate) *mut u8);

// SAFETY: the pointer is written only by the runtime of the processor that
// asked for the get, during its own `sync`, on the thread that owns its
// `Ctx`; `get_area`'s contract keeps the memory valid and untouched until
// then. Holding the address on another thread accesses nothing.
unsafe impl Send for RawTarget {}

/// A zeroed local part of `len` elements of `T`, as untyped storage.
fn zeroed_storage<T: Pod + Send>(len: usize) -> Box<dyn Storage> {
    Box::new(PodVec(vec![T::zeroed(); len]))
}

/// The gets this processor has requested and not yet taken, by ticket.
#[derive(Default)]
pub(crate) struct PendingGets {
    next_ticket: u64,
    values: HashMap<u64, PendingGet>,
    /// The memory this superstep's raw gets write, by start address, while
    /// no two overlap.
    raw_ranges: BTreeMap<usize, usize>,
    /// Whether two raw gets of this superstep write overlapping memory:
    /// their replies, which arrive by source, are then held and written in
    /// call (ticket) order, so that the get called last wins.
    overlapping: bool,
    /// The replies held for that, with their targets.
    held: Vec<(u64, RawTarget, Vec<u8>)>,
}

impl PendingGets {
    /// Records a get of elements of `T`; returns its ticket.
    pub(crate) fn open<T: Pod + Send>(&mut self) -> u64 {
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        let requested = PendingGet::Requested {
            make: zeroed_storage::<T>,
            elem_size: std::mem::size_of::<T>(),
        };
        self.values.insert(ticket, requested);
        ticket
    }

    /// Records a get of `len` bytes into `into`; returns its ticket.
    ///
    /// # Safety
    ///
    /// As `Areas::get_area`: `into..into + len` stays
    /// valid for writes, and untouched by anything else, until the sync
    /// that delivers the get has returned.
    pub(crate) unsafe fn open_raw(&mut self, into: *mut u8, len: usize) -> u64 {
        self.note_raw_range(into as usize, len);
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        let raw = PendingGet::Raw {
            into: RawTarget(into),
            len,
        };
        self.values.insert(ticket, raw);
        ticket
    }

    /// Notes that a raw get of this superstep writes `len` bytes from
    /// address `start`, and whether that overlaps another's (O(log n) per
    /// get while none do; the tracking stops at the first overlap).
    fn note_raw_range(&mut self, start: usize, len: usize) {
        if len == 0 || self.overlapping {
            return;
        }
        let end = start.saturating_add(len);
        let before = self.raw_ranges.range(..=start).next_back();
        let after = self.raw_ranges.range(start..).next();
        if before.is_some_and(|(_, &e)| e > start) || after.is_some_and(|(&s, _)| s < end) {
            self.overlapping = true;
            self.raw_ranges.clear();
        } else {
            self.raw_ranges.insert(start, end);
        }
    }

    /// Writes the raw replies held because this superstep's raw gets
    /// overlap, in call order, and forgets the superstep's ranges. Called
    /// once the replies have arrived, before the puts are applied.
    pub(crate) fn land_in_call_order(&mut self) {
        self.raw_ranges.clear();
        self.overlapping = false;
        let mut held = std::mem::take(&mut self.held);
        held.sort_unstable_by_key(|&(ticket, _, _)| ticket);
        for (_, into, bytes) in held {
            // SAFETY: `open_raw`'s contract: `into..into + bytes.len()` is
            // valid for writes and untouched by anything else until this
            // sync returns; each reply is written alone, one after another.
            let target = unsafe { std::slice::from_raw_parts_mut(into.0, bytes.len()) };
            target.copy_from_slice(&bytes);
        }
    }

    /// Writes the reply to `ticket` (`bytes` bytes, read from `payload`)
    /// into its buffer, or into the program's memory for a raw get (held
    /// for [`land_in_call_order`](Self::land_in_call_order) when this
    /// superstep's raw gets overlap).
    fn land(&mut self, ticket: u64, bytes: usize, payload: &mut SegmentReader<'_>) {
        if let Some(PendingGet::Raw { into, len }) = self.values.get(&ticket) {
            assert_eq!(*len, bytes, "bsp: a get reply of the wrong length");
            let into = into.0;
            self.values.remove(&ticket);
            if bytes == 0 {
                return;
            }
            if self.overlapping {
                let mut copy = vec![0u8; bytes];
                assert!(payload.read_into(&mut copy), "bsp: truncated get reply");
                self.held.push((ticket, RawTarget(into), copy));
                return;
            }
            // SAFETY: `open_raw`'s contract: `into..into + bytes` is valid
            // for writes and untouched by anything else until this sync
            // returns, and this is the only reference made to it.
            let target = unsafe { std::slice::from_raw_parts_mut(into, bytes) };
            assert!(payload.read_into(target), "bsp: truncated get reply");
            return;
        }
        let target = self.target(ticket, bytes);
        assert!(payload.read_into(target), "bsp: truncated get reply");
    }

    /// The value of the get with `ticket`, removed; `None` if it was
    /// already taken, has not arrived, or the ticket is not this run's.
    pub(crate) fn take<T: Pod>(&mut self, ticket: u64) -> Option<Vec<T>> {
        let Some(PendingGet::Arrived(_)) = self.values.get(&ticket) else {
            return None;
        };
        let Some(PendingGet::Arrived(value)) = self.values.remove(&ticket) else {
            unreachable!("checked above")
        };
        let value = value.into_any().downcast::<PodVec<T>>().ok()?;
        Some(value.0)
    }

    /// The buffer for the reply to `ticket`, of `bytes` bytes.
    fn target(&mut self, ticket: u64, bytes: usize) -> &mut [u8] {
        let get = self
            .values
            .get_mut(&ticket)
            .expect("bsp: reply to an unknown get");
        if let PendingGet::Requested { make, elem_size } = *get {
            *get = PendingGet::Arrived(make(bytes / elem_size.max(1)));
        }
        let PendingGet::Arrived(value) = get else {
            unreachable!("made above; raw gets land in `land`")
        };
        value.bytes_mut()
    }
}

/// A put that arrived for a coarray lent out for this sync; applied once
/// the coarray is back. Its payload is copied out of the received
/// segments: they may be slices of the sender's own lent coarray, which
/// the sender takes back at the barrier before the deferred puts apply.
pub(crate) struct DeferredPut {
    src: usize,
    array: u32,
    offset: u64,
    payload: Vec<u8>,
}

/// One processor's side of delivery in one sync.
pub(crate) struct Inbound<'a> {
    pub(crate) me: usize,
    pub(crate) nprocs: usize,
    pub(crate) superstep: usize,
    pub(crate) registry: &'a mut Registry,
    pub(crate) gets: &'a mut PendingGets,
}

impl Inbound<'_> {
    fn error(&self, kind: ErrorKind, culprit: usize, message: String) -> Error {
        Error::at(kind, culprit, self.superstep, message)
    }

    /// The error for a request from `src` that names `id`, unusable as `why`.
    fn unusable(&self, why: Unusable, request: &str, src: usize, id: u32) -> Error {
        let me = self.me;
        match why {
            Unusable::Released(when) => self.error(
                ErrorKind::Released,
                src,
                format!(
                    "{request} from processor {src} to processor {me} names {} #{id}, which was \
                     released in superstep {when}{}",
                    self.registry.name_of(id),
                    if when == self.superstep { " (this superstep)" } else { "" }
                ),
            ),
            Unusable::Foreign | Unusable::Lent | Unusable::Open => self.error(
                ErrorKind::RegistrationMismatch,
                src,
                format!("{request} from processor {src} to processor {me} names #{id}, which is not of the kind it expects"),
            ),
        }
    }

    /// Answers the get requests among `incoming` from the current data.
    pub(crate) fn serve_gets(&self, incoming: &Blocks) -> Result<Outbox, Error> {
        let mut replies = Outbox::new(self.nprocs);
        for &(src, ref stream) in incoming {
            let mut records = RecordReader::new(SegmentReader::new(stream));
            while let Some(record) = records.next() {
                let Record::Get {
                    array,
                    offset,
                    count,
                    ticket,
                } = record
                else {
                    records.skip_payload(&record);
                    continue;
                };
                let storage = self
                    .registry
                    .storage(array)
                    .map_err(|why| self.unusable(why, "get", src, array))?;
                let size = storage.elem_size();
                let have = storage.len();
                let range = usize::try_from(offset)
                    .ok()
                    .zip(usize::try_from(count).ok())
                    .and_then(|(o, c)| Some((o, o.checked_add(c)?)))
                    .filter(|&(_, end)| end <= have);
                let Some((start, end)) = range else {
                    let msg = format!(
                        "get by processor {src} from processor {me} of elements {offset}..{} of {} \
                         (local length {have} on processor {me})",
                        u128::from(offset) + u128::from(count),
                        self.registry.name_of(array),
                        me = self.me,
                    );
                    return Err(self.error(ErrorKind::OutOfBounds, src, msg));
                };
                let data = &storage.bytes()[start * size..end * size];
                let reply = Record::Reply {
                    ticket,
                    bytes: data.len() as u64,
                };
                replies.push(src, reply, data);
            }
        }
        Ok(replies)
    }

    /// Applies puts, queues messages and stores get replies, in source
    /// order, then call order; puts to coarrays lent for this sync go to
    /// `deferred`. Returns the number of records received.
    pub(crate) fn apply(
        &mut self,
        incoming: &Blocks,
        deferred: &mut Vec<DeferredPut>,
    ) -> Result<u64, Error> {
        let mut count = 0;
        for &(src, ref stream) in incoming {
            let mut records = RecordReader::new(SegmentReader::new(stream));
            let mut next = records.next();
            while let Some(record) = next.take() {
                count += 1;
                match record {
                    Record::Put {
                        array,
                        offset,
                        bytes,
                    } if self.registry.is_lent(array) => {
                        let mut payload = vec![0; bytes as usize];
                        assert!(
                            records.payload().read_into(&mut payload),
                            "bsp: truncated put record"
                        );
                        deferred.push(DeferredPut {
                            src,
                            array,
                            offset,
                            payload,
                        });
                    }
                    Record::Put {
                        array,
                        offset,
                        bytes,
                    } => {
                        next = self.put_run(src, array, offset, bytes, &mut records, &mut count)?;
                        continue;
                    }
                    Record::Messages {
                        queue,
                        count,
                        bytes,
                    } => {
                        let inbox = match self.registry.inbox(queue) {
                            Ok(inbox) => inbox,
                            Err(why) => return Err(self.unusable(why, "messages", src, queue)),
                        };
                        let first = inbox.runs.is_empty();
                        let ok = records.payload().read_pieces(bytes as usize, |piece| {
                            inbox.data.extend_from_slice(piece)
                        });
                        assert!(ok, "bsp: truncated message record");
                        let end = inbox.data.len();
                        inbox.runs.push((src, count, end));
                        if first {
                            self.registry.note_filled(queue);
                        }
                    }
                    Record::Reply { ticket, bytes } => {
                        self.gets.land(ticket, bytes as usize, records.payload());
                    }
                    Record::Get { .. } => records.skip_payload(&record),
                }
                next = records.next();
            }
        }
        Ok(count)
    }

    /// Applies a put to coarray `array` and the puts to the same coarray
    /// that follow it in the stream, looking the coarray up once (a
    /// BSPlib program's superstep is often thousands of puts of a few
    /// bytes to one area); returns the record after them. `count` counts
    /// the records applied after the first.
    fn put_run(
        &mut self,
        src: usize,
        array: u32,
        mut offset: u64,
        mut len: u64,
        records: &mut RecordReader<'_>,
        count: &mut u64,
    ) -> Result<Option<Record>, Error> {
        if let Ok(storage) = self.registry.storage_mut(array) {
            let size = storage.elem_size().max(1);
            let bytes = storage.bytes_mut();
            loop {
                let range = usize::try_from(len)
                    .ok()
                    .and_then(|len| byte_range(offset, len, size, bytes.len()));
                let Some((start, end)) = range else {
                    break; // reported below, with the coarray's name
                };
                assert!(
                    records.payload().read_into(&mut bytes[start..end]),
                    "bsp: truncated put record"
                );
                // The short puts to the same coarray that follow in this
                // segment, read in place (a put out of range is left for
                // the general path below to report).
                while let Some((offset, payload)) = records.peek_short_put(array) {
                    let Some((start, end)) = byte_range(offset, payload.len(), size, bytes.len())
                    else {
                        break;
                    };
                    copy_short(&mut bytes[start..end], payload);
                    records.skip_short_put(payload.len());
                    *count += 1;
                }
                match records.next() {
                    Some(Record::Put {
                        array: same,
                        offset: o,
                        bytes: b,
                    }) if same == array => {
                        *count += 1;
                        (offset, len) = (o, b);
                    }
                    other => return Ok(other),
                }
            }
        }
        // The coarray cannot take the put, or the range is out of bounds:
        // the single-put path words the error.
        self.put(src, array, offset, len as usize, records.payload())?;
        Ok(records.next())
    }

    /// Applies the puts that waited for their coarray to come back.
    pub(crate) fn apply_deferred(&mut self, deferred: Vec<DeferredPut>) -> Result<(), Error> {
        for put in deferred {
            let segments = [bytes::Bytes::from(put.payload)];
            let len = segments[0].len();
            let mut payload = SegmentReader::new(&segments);
            self.put(put.src, put.array, put.offset, len, &mut payload)?;
        }
        Ok(())
    }

    /// Writes `len` bytes from `payload` into coarray `array` from element
    /// `offset`, checking the range.
    fn put(
        &mut self,
        src: usize,
        array: u32,
        offset: u64,
        len: usize,
        payload: &mut SegmentReader<'_>,
    ) -> Result<(), Error> {
        let me = self.me;
        let storage = match self.registry.storage_mut(array) {
            Ok(storage) => storage,
            Err(why) => return Err(self.unusable(why, "put", src, array)),
        };
        let size = storage.elem_size().max(1);
        let bytes = storage.bytes_mut();
        if let Some((start, end)) = byte_range(offset, len, size, bytes.len()) {
            assert!(
                payload.read_into(&mut bytes[start..end]),
                "bsp: truncated put record"
            );
            return Ok(());
        }
        let have = storage.len();
        let msg = format!(
            "put from processor {src} to processor {me} of elements {offset}..{} of {} \
             (local length {have} on processor {me})",
            u128::from(offset) + (len / size) as u128,
            self.registry.name_of(array),
        );
        Err(self.error(ErrorKind::OutOfBounds, src, msg))
    }
}

/// The bytes `start..end` of a coarray of `have` bytes, elements of `size`
/// bytes, that a put of `len` bytes at element `offset` writes; `None`
/// when they do not lie inside it (or overflow).
#[inline]
pub(crate) fn byte_range(
    offset: u64,
    len: usize,
    size: usize,
    have: usize,
) -> Option<(usize, usize)> {
    let start = usize::try_from(offset).ok()?.checked_mul(size)?;
    let end = start.checked_add(len)?;
    (end <= have).then_some((start, end))
}
