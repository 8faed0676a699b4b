//! The records of one superstep's communication: how they are written into
//! a stream and read back, in one place.
//!
//! Everything a processor requests during a superstep for destination `j`
//! (puts, get requests, queue messages, get replies) is one stream of
//! records, each a 24-byte header followed by its payload:
//!
//! ```text
//! kind: u32 | id: u32 | x: u64 | y: u64 | payload
//! ```
//!
//! A put whose coarray id is below 2²⁴ and whose offset and length are
//! below 2³² (nearly all: a BSPlib program puts a few bytes at a time) has
//! a 12-byte header instead, `kind | id << 8: u32 | offset: u32 | bytes: u32`,
//! so that a put of 8 bytes costs 20 bytes on the wire, not 32.
//!
//! | record     | id      | x                | y              | payload |
//! |------------|---------|------------------|----------------|---------|
//! | `Put`      | coarray | element offset   | payload bytes  | the data |
//! | `Get`      | coarray | element offset   | element count  | the requester's ticket (u64) |
//! | `Messages` | queue   | message count    | payload bytes  | the encoded messages |
//! | `Reply`    | 0       | ticket           | payload bytes  | the data |
//!
//! Headers are native-endian: both transports run one binary on one
//! architecture. Consecutive messages to the same queue share one header,
//! which `Outbox` patches as messages are added
//! (see [`Record::add_message`]).

use crate::segments::SegmentReader;

/// Bytes of a record header (the most: a short put's is 12).
pub(crate) const HEADER_BYTES: usize = 24;

/// Bytes of a short put's header.
pub(crate) const SHORT_PUT_BYTES: usize = 12;

/// Bytes of a get request's payload (its ticket).
const TICKET_BYTES: usize = 8;

/// One record of a stream, as its header describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Record {
    /// Write `bytes` bytes, which follow, into coarray `array` from element `offset`.
    Put { array: u32, offset: u64, bytes: u64 },
    /// Read `count` elements of coarray `array` from element `offset`, and
    /// answer with a [`Record::Reply`] carrying `ticket`.
    Get {
        array: u32,
        offset: u64,
        count: u64,
        ticket: u64,
    },
    /// `count` messages for queue `queue`, `bytes` bytes in all, which follow.
    Messages { queue: u32, count: u64, bytes: u64 },
    /// The `bytes` bytes, which follow, answering the get with `ticket`.
    Reply { ticket: u64, bytes: u64 },
}

const PUT: u32 = 1;
const GET: u32 = 2;
const MESSAGES: u32 = 3;
const REPLY: u32 = 4;
/// A put with a 12-byte header; its id is in the kind word's upper 24 bits.
const SHORT_PUT: u32 = 5;

/// Whether a put fits the short header.
#[inline]
fn short_put(array: u32, offset: u64, bytes: u64) -> bool {
    array < 1 << 24 && offset <= u64::from(u32::MAX) && bytes <= u64::from(u32::MAX)
}

impl Record {
    /// An empty run of messages for `queue`, to be extended by
    /// [`add_message`](Record::add_message).
    pub(crate) fn messages(queue: u32) -> Record {
        Record::Messages {
            queue,
            count: 0,
            bytes: 0,
        }
    }

    /// Bytes that follow the header.
    pub(crate) fn payload_len(&self) -> usize {
        match *self {
            Record::Get { .. } => TICKET_BYTES,
            Record::Put { bytes, .. }
            | Record::Messages { bytes, .. }
            | Record::Reply { bytes, .. } => bytes as usize,
        }
    }

    /// Bytes of this record's header.
    #[inline]
    pub(crate) fn header_len(&self) -> usize {
        match *self {
            Record::Put {
                array,
                offset,
                bytes,
            } if short_put(array, offset, bytes) => SHORT_PUT_BYTES,
            _ => HEADER_BYTES,
        }
    }

    /// Bytes [`encode`](Record::encode) writes: the header, and a get
    /// request's ticket.
    pub(crate) fn head_len(&self) -> usize {
        match self {
            Record::Get { .. } => HEADER_BYTES + TICKET_BYTES,
            _ => self.header_len(),
        }
    }

    /// Bytes that follow what [`encode`](Record::encode) writes: the
    /// payload, none for a get request (its ticket is in the head).
    pub(crate) fn body_len(&self) -> usize {
        match self {
            Record::Get { .. } => 0,
            _ => self.payload_len(),
        }
    }

    /// Appends the header (and, for a get request, its ticket) to `out`.
    /// The payload of the other records is the caller's to append.
    #[inline]
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        if let Record::Put {
            array,
            offset,
            bytes,
        } = *self
        {
            if short_put(array, offset, bytes) {
                let mut header = [0u8; SHORT_PUT_BYTES];
                header[..4].copy_from_slice(&(SHORT_PUT | array << 8).to_ne_bytes());
                header[4..8].copy_from_slice(&(offset as u32).to_ne_bytes());
                header[8..].copy_from_slice(&(bytes as u32).to_ne_bytes());
                out.extend_from_slice(&header);
                return;
            }
        }
        let (kind, id, x, y) = match *self {
            Record::Put {
                array,
                offset,
                bytes,
            } => (PUT, array, offset, bytes),
            Record::Get {
                array,
                offset,
                count,
                ..
            } => (GET, array, offset, count),
            Record::Messages {
                queue,
                count,
                bytes,
            } => (MESSAGES, queue, count, bytes),
            Record::Reply { ticket, bytes } => (REPLY, 0, ticket, bytes),
        };
        out.extend_from_slice(&kind.to_ne_bytes());
        out.extend_from_slice(&id.to_ne_bytes());
        out.extend_from_slice(&x.to_ne_bytes());
        out.extend_from_slice(&y.to_ne_bytes());
        if let Record::Get { ticket, .. } = self {
            out.extend_from_slice(&ticket.to_ne_bytes());
        }
    }

    /// Adds one message of `added` bytes to the `Messages` header encoded
    /// at the start of `header`.
    pub(crate) fn add_message(header: &mut [u8], added: usize) {
        let mut field = |at: usize, plus: u64| {
            let slot: &mut [u8; 8] = (&mut header[at..at + 8]).try_into().expect("8 bytes");
            *slot = (u64::from_ne_bytes(*slot) + plus).to_ne_bytes();
        };
        field(8, 1);
        field(16, added as u64);
    }

    /// Decodes a header; `ticket` reads a get request's payload.
    fn decode(raw: &[u8; HEADER_BYTES], ticket: impl FnOnce() -> u64) -> Option<Record> {
        let word = |i: usize| u64::from_ne_bytes(raw[i..i + 8].try_into().expect("8 bytes"));
        let id = u32::from_ne_bytes(raw[4..8].try_into().expect("4 bytes"));
        let (x, y) = (word(8), word(16));
        Some(
            match u32::from_ne_bytes(raw[0..4].try_into().expect("4 bytes")) {
                GET => Record::Get {
                    array: id,
                    offset: x,
                    count: y,
                    ticket: ticket(),
                },
                PUT => Record::Put {
                    array: id,
                    offset: x,
                    bytes: y,
                },
                REPLY => Record::Reply {
                    ticket: x,
                    bytes: y,
                },

                MESSAGES => Record::Messages {
                    queue: id,
                    count: x,
                    bytes: y,
                },
                _ => return None,
            },
        )
    }
}

/// The put whose short header is `header` (its first
/// [`SHORT_PUT_BYTES`] bytes), if it is one.
#[inline]
fn short_put_of(header: &[u8]) -> Option<Record> {
    let word = |i: usize| u32::from_ne_bytes(header[i..i + 4].try_into().expect("4 bytes"));
    let kind = word(0);
    (kind & 0xff == SHORT_PUT).then(|| Record::Put {
        array: kind >> 8,
        offset: u64::from(word(4)),
        bytes: u64::from(word(8)),
    })
}

/// Reads the records of a received stream in order. After
/// [`next`](RecordReader::next) the record's payload (if any) is next in
/// [`payload`](RecordReader::payload), and must be read or skipped before
/// the next record.
pub(crate) struct RecordReader<'a> {
    stream: SegmentReader<'a>,
}

impl<'a> RecordReader<'a> {
    pub(crate) fn new(stream: SegmentReader<'a>) -> Self {
        RecordReader { stream }
    }

    /// The next record, or `None` at the end of the stream. A get request
    /// comes with its ticket already read.
    ///
    /// # Panics
    ///
    /// On a malformed stream, which would be a bug in the runtime.
    #[allow(clippy::should_implement_trait)] // its items borrow nothing, but the payload must be read between them
    #[inline]
    pub(crate) fn next(&mut self) -> Option<Record> {
        if self.stream.is_at_end() {
            return None;
        }
        // A short put's header, read in place where it lies in the
        // current segment (nearly always).
        let here = self.stream.rest_of_segment().get(..SHORT_PUT_BYTES);
        if let Some(put) = here.and_then(short_put_of) {
            self.stream.advance_in_segment(SHORT_PUT_BYTES);
            return Some(put);
        }
        let mut raw = [0u8; HEADER_BYTES];
        assert!(
            self.stream.read_into(&mut raw[..SHORT_PUT_BYTES]),
            "bsp: truncated record header"
        );
        if let Some(put) = short_put_of(&raw[..SHORT_PUT_BYTES]) {
            return Some(put);
        }
        assert!(
            self.stream.read_into(&mut raw[SHORT_PUT_BYTES..]),
            "bsp: truncated record header"
        );
        let stream = &mut self.stream;
        Some(Record::decode(&raw, || stream.read_u64()).expect("bsp: corrupt record header"))
    }

    /// The next record, where it is a short put to coarray `array` whose
    /// header and payload lie in the current segment: its element offset
    /// and its payload, read in place. The reader does not move; where
    /// the put is applied, [`skip_short_put`](RecordReader::skip_short_put)
    /// moves it past the record. A run of small puts to one coarray
    /// (BSPlib's `bsp_put` of a word at a time) is read this way without
    /// copying each header out.
    #[inline]
    pub(crate) fn peek_short_put(&self, array: u32) -> Option<(u64, &'a [u8])> {
        let rest = self.stream.rest_of_segment();
        match short_put_of(rest.get(..SHORT_PUT_BYTES)?)? {
            Record::Put {
                array: to,
                offset,
                bytes,
            } if to == array => {
                let payload = rest.get(SHORT_PUT_BYTES..SHORT_PUT_BYTES + bytes as usize)?;
                Some((offset, payload))
            }
            _ => None,
        }
    }

    /// Moves past the short put that [`peek_short_put`](RecordReader::peek_short_put)
    /// returned, whose payload has `len` bytes.
    #[inline]
    pub(crate) fn skip_short_put(&mut self, len: usize) {
        self.stream.advance_in_segment(SHORT_PUT_BYTES + len);
    }

    /// The stream positioned at the current record's payload.
    #[inline]
    pub(crate) fn payload(&mut self) -> &mut SegmentReader<'a> {
        &mut self.stream
    }

    /// Skips the current record's payload.
    pub(crate) fn skip_payload(&mut self, record: &Record) {
        assert!(self.stream.skip(record.body_len()), "bsp: truncated record");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    #[test]
    fn every_record_reads_back_as_written() {
        let records = [
            Record::Put {
                array: 3,
                offset: 7,
                bytes: 2,
            },
            Record::Put {
                array: 1 << 24,
                offset: 7,
                bytes: 2,
            },
            Record::Put {
                array: 3,
                offset: 1 << 32,
                bytes: 0,
            },
            Record::Get {
                array: 1,
                offset: 9,
                count: 4,
                ticket: 42,
            },
            Record::Reply {
                ticket: 42,
                bytes: 1,
            },
            Record::Messages {
                queue: 5,
                count: 2,
                bytes: 3,
            },
        ];
        let mut out = Vec::new();
        for r in &records {
            r.encode(&mut out);
            if !matches!(r, Record::Get { .. }) {
                out.extend(std::iter::repeat_n(0xab, r.payload_len()));
            }
        }
        let wire: usize = records
            .iter()
            .map(|r| r.header_len() + r.payload_len())
            .sum();
        assert_eq!(records[0].header_len(), SHORT_PUT_BYTES);
        assert_eq!(records[1].header_len(), HEADER_BYTES);
        assert_eq!(out.len(), wire);
        // In one segment (short headers read in place), and a byte a
        // segment (every header copied out across segments).
        let bytewise: Vec<Bytes> = out.iter().map(|&b| Bytes::from(vec![b])).collect();
        for segments in [vec![Bytes::from(out)], bytewise] {
            let mut reader = RecordReader::new(SegmentReader::new(&segments));
            for expected in &records {
                let got = reader.next().expect("a record");
                assert_eq!(&got, expected);
                reader.skip_payload(&got);
            }
            assert!(reader.next().is_none());
        }
    }

    #[test]
    fn messages_headers_count_what_is_added() {
        let mut out = Vec::new();
        Record::messages(7).encode(&mut out);
        Record::add_message(&mut out, 5);
        Record::add_message(&mut out, 3);
        out.extend_from_slice(&[0; 8]);
        let segments = [Bytes::from(out)];
        let mut reader = RecordReader::new(SegmentReader::new(&segments));
        assert_eq!(
            reader.next(),
            Some(Record::Messages {
                queue: 7,
                count: 2,
                bytes: 8
            })
        );
    }
}
