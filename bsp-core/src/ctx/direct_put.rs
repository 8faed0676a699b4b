//! Direct puts: BSPlib's unbuffered put (`bsp_hpput`) without its data
//! races.
//!
//! A buffered put copies its source at the call and the receiver copies it
//! again into place at the sync. When a processor can say in advance which
//! ranges of which processors' parts it will write (a counting sort can,
//! once its prefix sums are known), the data need not be staged at all:
//! [`DirectPut::put_direct`] checks that the announced ranges are in bounds and
//! pairwise disjoint over all writers, and then, on the threads transport,
//! lends every writer mutable slices of the destinations' memory, so that
//! each element is written exactly once, straight to its final place. So
//! it is under MPI on one node where every destination's part is memory
//! the ranks map (a large coarray made by [`Ctx::coarray`]): each rank maps
//! the others' parts and writes into them. Otherwise MPI stages the writes
//! in a local buffer and delivers them with one irregular all-to-all; the
//! results and the errors are the same.

use std::ops::Range;
use std::sync::{Arc, Mutex};

use bytemuck::Pod;
use bytes::Bytes;

use super::{unusable, Ctx};
use crate::coarray::{Coarray, Part, PodBytes};
use crate::error::{Error, ErrorKind};
use crate::segments::{copy_prefix, one_segment, segments_len, SegmentReader};
use crate::transport::Blocks;

/// One range of a [`DirectPut::put_direct`]: `len` elements of processor `dst`'s
/// part of the coarray, starting at element `offset`.
///
/// # Examples
///
/// ```
/// # use bsp_core::expert::DirectPut;
/// use bsp_core::expert::DirectPiece;
///
/// let piece = DirectPiece { dst: 1, offset: 4, len: 2 };
/// assert_eq!(piece.offset + piece.len, 6);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DirectPiece {
    /// The processor written to.
    pub dst: usize,
    /// The first element written, in `dst`'s local part.
    pub offset: usize,
    /// The number of elements written.
    pub len: usize,
}

/// First word of a direct put's row, so that a processor that called
/// something else at this point is recognised.
const TAG: u64 = 0x6470_7574_0000_0001;
/// Words of the row: tag, coarray id, element size, local length, address
/// of the local part (threads) and number of pieces.
const ROW: usize = 6;
/// Words of a verdict: code (0: fine, 1: out of bounds, 2: overlap), the
/// writer at fault, its range (offset, length), the other writer of an
/// overlap, the local length.
const VERDICT: usize = 6;

/// The local part of the coarray being written, out of the registry while
/// the writes go on. Dropped during an unwind (the run was aborted, perhaps
/// while other processors still write into it), it leaks the buffer rather
/// than free memory that another thread may be writing.
struct Opened<T> {
    local: Option<Part<T>>,
}

impl<T> Drop for Opened<T> {
    fn drop(&mut self) {
        if let Some(local) = self.local.take() {
            std::mem::forget(local);
        }
    }
}

/// Where an MPI direct put's stage waits for the next direct put. A fresh
/// stage of many MiB is mapped from the OS and page-faulted as the writer
/// first touches it, which costs more than the exchange that sends it
/// (NAS IS class B: a third of the whole superstep); kept, it is touched
/// once per run. The stage is lent to the exchange as `Bytes` and comes
/// back here when the last of them is dropped.
#[derive(Clone, Default)]
pub(crate) struct StageHome(Arc<Mutex<Vec<u64>>>);

impl StageHome {
    /// The kept buffer (or a new one), at least `bytes` long in words; its
    /// contents are whatever the last direct put left there.
    fn take(&self, bytes: usize) -> Vec<u64> {
        let mut words = std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()));
        words.resize(words.len().max(bytes.div_ceil(8)), 0);
        words
    }

    /// Lends `words` out as `Bytes` that bring them back here when dropped.
    fn lend(&self, words: Vec<u64>) -> Bytes {
        Bytes::from_owner(LentStage {
            words,
            home: self.clone(),
        })
    }
}

/// A stage lent to an exchange.
struct LentStage {
    words: Vec<u64>,
    home: StageHome,
}

impl AsRef<[u8]> for LentStage {
    fn as_ref(&self) -> &[u8] {
        bytemuck::cast_slice(&self.words)
    }
}

impl Drop for LentStage {
    fn drop(&mut self) {
        let words = std::mem::take(&mut self.words);
        *self.home.0.lock().unwrap_or_else(|e| e.into_inner()) = words;
    }
}

/// The (offset, length) pairs of `pieces` addressed to each of the `p`
/// destinations, as words, in the order of `pieces`: one pass, whatever p.
fn claims_by_destination(pieces: &[DirectPiece], p: usize) -> Vec<Vec<u64>> {
    let mut claims = vec![Vec::new(); p];
    for piece in pieces {
        claims[piece.dst].extend([piece.offset as u64, piece.len as u64]);
    }
    claims
}

/// Claims received as bytes, back as words.
fn words_of(segments: &[Bytes]) -> Vec<u64> {
    let mut words = vec![0u64; segments_len(segments) / 8];
    copy_prefix(segments, bytemuck::cast_slice_mut(&mut words));
    words
}

/// Checks the claims on one processor's part, `local_len` elements long:
/// `claims` lists, by writer pid ascending, the (offset, length) words of
/// each writer; `kept`, the range the part's owner keeps reading
/// ([`DirectPut::put_direct_keeping`]), which no claim may overlap.
/// Returns the verdict words.
fn judge(claims: &[(usize, Vec<u64>)], local_len: usize, kept: &Range<usize>) -> [u64; VERDICT] {
    let local = local_len as u64;
    if kept.end > local_len {
        return [4, 0, kept.start as u64, kept.len() as u64, 0, local];
    }
    // (offset, length, writer, whether it is the kept range)
    let mut ranges = Vec::new();
    if !kept.is_empty() {
        ranges.push((kept.start as u64, kept.len() as u64, u64::MAX, true));
    }
    for (writer, words) in claims {
        for pair in words.chunks_exact(2) {
            let (offset, len) = (pair[0], pair[1]);
            if len == 0 {
                continue;
            }
            if offset.checked_add(len).is_none_or(|end| end > local) {
                return [1, *writer as u64, offset, len, 0, local];
            }
            ranges.push((offset, len, *writer as u64, false));
        }
    }
    ranges.sort_unstable();
    for w in ranges.windows(2) {
        let ((a, la, wa, ka), (b, lb, wb, kb)) = (w[0], w[1]);
        if a + la > b {
            return match (ka, kb) {
                (true, _) => [3, wb, b, lb, 0, local],
                (_, true) => [3, wa, a, la, 0, local],
                _ => [2, wb.max(wa), b, lb, wa.min(wb), local],
            };
        }
    }
    [0; VERDICT]
}

/// Puts written straight into the destination's coarray, by the senders,
/// in pieces each sender claims ahead: the kernel of a counting sort's
/// scatter, where each key lands in a place known before the superstep.
/// Implemented by [`Ctx`]; bring it into scope with
/// `use bsp::expert::DirectPut;`. A program that is not a sort kernel
/// uses [`Ctx::put`].
pub trait DirectPut {
    /// Ends the superstep like [`sync`](Ctx::sync), then lets every
    /// processor write its `pieces` of coarray `to` directly: `write`
    /// receives one mutable slice per piece, in the order of `pieces`, and
    /// whatever it writes there is in the destinations' parts when
    /// `put_direct` returns. BSPlib's unbuffered `bsp_hpput`, made safe: the
    /// pieces of all processors are checked to lie inside the destinations'
    /// parts and not to overlap each other before anything is written.
    ///
    /// On the threads transport the slices are the destinations' memory
    /// itself, so every element is written once, in place: no send buffer,
    /// no copy at the receiver. So they are under MPI with every rank on
    /// one node, where every processor's part of `to` is memory the
    /// ranks map (a part of 32 KiB or more made by
    /// [`coarray`](Ctx::coarray); not one handed over as a vector): each
    /// rank maps the others' parts into its memory, once per part, and
    /// writes there. Otherwise, under MPI, the slices of a processor's own
    /// pieces are its part itself; the others are a buffer laid out by
    /// destination (kept from one direct put to the next, so that its pages
    /// are faulted in once per run), whose regions are sent as they are
    /// after `write` returns, with one irregular all-to-all, and copied
    /// into place once by their receivers.
    ///
    /// While `write` runs, no processor can read or write its own part of
    /// `to` (it is being written by others): `write` gets the context
    /// shared, to read other coarrays, and [`local`](Ctx::local) of `to`
    /// ends the run. Elements of `to` that no piece covers keep their
    /// values. Collective: every processor calls `put_direct` on the same
    /// coarray at the same point (with its own pieces, possibly none); it
    /// counts as one sync.
    ///
    /// # Examples
    ///
    /// ```
    /// # use bsp_core::expert::DirectPut;
    /// use bsp_core::expert::DirectPiece;
    ///
    /// let out = bsp_core::run(3, |ctx| {
    ///     let (s, p) = (ctx.pid(), ctx.nprocs());
    ///     let a = ctx.coarray::<u32>(p);
    ///     // Element s of every processor's part is written by processor s.
    ///     let pieces: Vec<DirectPiece> =
    ///         (0..p).map(|dst| DirectPiece { dst, offset: s, len: 1 }).collect();
    ///     ctx.put_direct(&a, &pieces, |_, slices| {
    ///         for slice in slices.iter_mut() {
    ///             slice[0] = 10 * s as u32;
    ///         }
    ///     });
    ///     ctx.local(&a).to_vec()
    /// })
    /// .unwrap();
    /// assert_eq!(out.all(), Some(&vec![vec![0, 10, 20]; 3][..]));
    /// ```
    ///
    /// # Panics
    ///
    /// Ends the run with [`ErrorKind::BadPid`] for a piece addressed to a
    /// pid ≥ p; with [`ErrorKind::OutOfBounds`] naming the writer when a
    /// piece lies outside its destination's part or overlaps another
    /// processor's (or another of its own) piece, or when `write` touches
    /// `to` locally; with [`ErrorKind::SyncMismatch`] or
    /// [`ErrorKind::RegistrationMismatch`] when processors call it at
    /// different points or on different coarrays.
    ///
    /// # Cost
    ///
    /// A sync (l, plus the h-relation of anything requested before it),
    /// then l for the exchange of the pieces (h = 16 bytes per piece) and
    /// two more barriers (3l). On threads the elements are written once by
    /// their writer; so they are under MPI into mapped parts, after two
    /// more all-gathers (2l) that share where the parts lie (a part is
    /// mapped into another rank once, at its first such put). Otherwise,
    /// under MPI, they add an h-relation of their size (with lengths known
    /// from the pieces, so no exchange of counts) and one copy at the
    /// receiver. The direct writes are not counted in
    /// [`stats`](Ctx::stats).
    fn put_direct<T: Pod + Send, R>(
        &mut self,
        to: &Coarray<T>,
        pieces: &[DirectPiece],
        write: impl FnOnce(&Ctx, &mut [&mut [T]]) -> R,
    ) -> R;

    /// [`put_direct`](DirectPut::put_direct) into a coarray whose local
    /// part the writer also reads: `write` gets, besides the slices of its
    /// pieces, elements `kept` of this processor's own part of `to`,
    /// which no piece of any processor may overlap (checked with the
    /// pieces). A pass that moves keys within the memory they occupy uses
    /// it: each processor reads the keys it still has to send from the
    /// part of its buffer that it keeps, while the others write into the
    /// part it has already read.
    ///
    /// # Examples
    ///
    /// ```
    /// use bsp_core::expert::{DirectPiece, DirectPut};
    ///
    /// // Each processor sends the last two elements of its part to the
    /// // first two of the next one's, reading them where they are.
    /// let out = bsp_core::run(3, |ctx| {
    ///     let (s, p) = (ctx.pid(), ctx.nprocs());
    ///     let a = ctx.coarray_from(vec![10 * s as u32, 10 * s as u32 + 1, 10 * s as u32 + 2, 10 * s as u32 + 3]);
    ///     let pieces = [DirectPiece { dst: (s + 1) % p, offset: 0, len: 2 }];
    ///     ctx.put_direct_keeping(&a, &pieces, 2..4, |_, kept, slices| {
    ///         slices[0].copy_from_slice(kept);
    ///     });
    ///     ctx.local(&a).to_vec()
    /// })
    /// .unwrap();
    /// assert_eq!(out.get(0), Some(&vec![22, 23, 2, 3]));
    /// assert_eq!(out.get(1), Some(&vec![2, 3, 12, 13]));
    /// ```
    ///
    /// # Panics
    ///
    /// As [`put_direct`](DirectPut::put_direct); also ends the run with
    /// [`ErrorKind::OutOfBounds`] when `kept` runs past this processor's
    /// part, or a piece overlaps the range its destination keeps.
    ///
    /// # Cost
    ///
    /// As [`put_direct`](DirectPut::put_direct).
    fn put_direct_keeping<T: Pod + Send, R>(
        &mut self,
        to: &Coarray<T>,
        pieces: &[DirectPiece],
        kept: Range<usize>,
        write: impl FnOnce(&Ctx, &[T], &mut [&mut [T]]) -> R,
    ) -> R;
}

impl DirectPut for Ctx {
    fn put_direct<T: Pod + Send, R>(
        &mut self,
        to: &Coarray<T>,
        pieces: &[DirectPiece],
        write: impl FnOnce(&Ctx, &mut [&mut [T]]) -> R,
    ) -> R {
        self.direct(to, pieces, 0..0, |ctx, _, slices| write(ctx, slices))
    }

    fn put_direct_keeping<T: Pod + Send, R>(
        &mut self,
        to: &Coarray<T>,
        pieces: &[DirectPiece],
        kept: Range<usize>,
        write: impl FnOnce(&Ctx, &[T], &mut [&mut [T]]) -> R,
    ) -> R {
        self.direct(to, pieces, kept, write)
    }
}

impl Ctx {
    /// [`DirectPut::put_direct_keeping`], and with nothing kept
    /// [`DirectPut::put_direct`].
    fn direct<T: Pod + Send, R>(
        &mut self,
        to: &Coarray<T>,
        pieces: &[DirectPiece],
        kept: Range<usize>,
        write: impl FnOnce(&Ctx, &[T], &mut [&mut [T]]) -> R,
    ) -> R {
        for piece in pieces {
            self.check_pid("put_direct", piece.dst);
        }
        self.sync();
        let (me, step) = (self.pid, self.superstep);
        let id = self.id_of(to);
        let local = match self.registry.open::<T>(id) {
            Ok(local) => local,
            Err(why) => unusable(me, step, why, "coarray", id),
        };
        let mut opened = Opened { local: Some(local) };
        let shared = self.caps.shares_memory;
        let part = opened.local.as_mut().expect("present");
        let base = if shared {
            part.as_mut_ptr().expose_provenance() as u64
        } else {
            0
        };
        let row = [
            TAG,
            u64::from(id),
            std::mem::size_of::<T>() as u64,
            part.len() as u64,
            base,
            pieces.len() as u64,
        ];
        let rows = self.collective(|c| c.allgather(&row));
        self.check_rows(&rows, &row);
        // Where each processor's part lies in this process: on threads the
        // addresses of the rows; under MPI on one node, where every part
        // is memory the other ranks map, this process's mappings of them.
        let bases: Option<Vec<usize>> = if shared {
            Some(rows.chunks(ROW).map(|r| r[4] as usize).collect())
        } else if self.caps.maps_memory {
            let bytes = part.len() * std::mem::size_of::<T>();
            // From the part's mutable pointer, as on threads: this
            // processor's own pieces are written through the address it
            // comes back as.
            let at = part.as_mut_ptr().cast::<u8>().cast_const();
            self.collective(|c| c.map_parts((at, bytes)))
        } else {
            None
        };
        let result = match bases {
            Some(bases) => self.write_in_place(id, &bases, pieces, kept, &mut opened, write),
            None => self.write_staged(id, pieces, kept, &mut opened, write),
        };
        let local = opened.local.take().expect("present");
        self.registry.put_back(id, local);
        result
    }

    /// Ends the run unless every processor called `put_direct` on the same
    /// coarray of the same element type.
    fn check_rows(&mut self, rows: &[u64], mine: &[u64; ROW]) {
        let p = self.nprocs;
        let error = if rows.len() != p * ROW || rows.chunks(ROW).any(|r| r[0] != TAG) {
            let odd = rows
                .chunks(ROW)
                .position(|r| r.len() < ROW || r[0] != TAG)
                .unwrap_or(0);
            Some(Error::at(
                ErrorKind::SyncMismatch,
                odd,
                self.superstep,
                format!(
                    "processor {} called put_direct while another processor did something \
                     else (sync, or return); every processor must call it at the same point",
                    self.pid
                ),
            ))
        } else {
            rows.chunks(ROW)
                .position(|r| r[1] != mine[1] || r[2] != mine[2])
                .map(|q| {
                    Error::at(
                        ErrorKind::RegistrationMismatch,
                        q,
                        self.superstep,
                        format!(
                            "put_direct on coarray #{} with {}-byte elements on processor {q}, \
                             on coarray #{} with {}-byte elements on processor {}",
                            rows[q * ROW + 1],
                            rows[q * ROW + 2],
                            mine[1],
                            mine[2],
                            self.pid
                        ),
                    )
                })
        };
        if let Some(error) = error {
            self.comm.abort(error)
        }
    }

    /// Every processor's verdict on the pieces written into its part; ends
    /// the run with the first failure (lowest destination pid), the same
    /// error on every processor.
    fn agree_on_pieces(&mut self, verdict: [u64; VERDICT], id: u32) {
        let all = self.collective(|c| c.allgather(&verdict));
        let Some(dst) = all.chunks(VERDICT).position(|v| v[0] != 0) else {
            return;
        };
        let v = &all[dst * VERDICT..(dst + 1) * VERDICT];
        let (writer, start, end) = (v[1] as usize, v[2], v[2] as u128 + v[3] as u128);
        let (message, writer) = match v[0] {
            1 => (
                format!(
                    "put_direct from processor {writer} writes elements {start}..{end} of \
                     coarray #{id} on processor {dst}, whose local length is {}",
                    v[5]
                ),
                writer,
            ),
            3 => (
                format!(
                    "put_direct_keeping: processor {writer} writes elements {start}..{end} of \
                     coarray #{id} on processor {dst}, which processor {dst} keeps reading"
                ),
                writer,
            ),
            4 => (
                format!(
                    "put_direct_keeping: processor {dst} keeps elements {start}..{end} of \
                     coarray #{id}, whose local length there is {}",
                    v[5]
                ),
                dst,
            ),
            _ => (
                format!(
                    "put_direct pieces overlap on processor {dst}: processor {writer} writes \
                     elements {start}..{end} of coarray #{id}, part of which processor {} \
                     also writes; the pieces of a direct put must be disjoint",
                    v[4]
                ),
                writer,
            ),
        };
        let error = Error::at(ErrorKind::OutOfBounds, writer, self.superstep, message);
        self.comm.abort(error)
    }

    /// Sends every destination the claims of this processor's pieces on
    /// its part, checks those received (every processor agrees on the
    /// verdict: see [`agree_on_pieces`](Ctx::agree_on_pieces)) and returns
    /// them, by writer pid ascending, this processor's own included.
    fn check_claims(
        &mut self,
        id: u32,
        pieces: &[DirectPiece],
        local_len: usize,
        kept: &Range<usize>,
    ) -> Vec<(usize, Vec<u64>)> {
        let me = self.pid;
        let mut by_destination = claims_by_destination(pieces, self.nprocs);
        let own = std::mem::take(&mut by_destination[me]);
        let blocks: Blocks = by_destination
            .into_iter()
            .enumerate()
            .filter(|(_, words)| !words.is_empty())
            .map(|(dst, words)| (dst, one_segment(Bytes::from_owner(PodBytes(words)))))
            .collect();
        let received = self.collective(|c| c.exchange(blocks, None));
        let mut claims: Vec<(usize, Vec<u64>)> = received
            .into_iter()
            .map(|(src, segments)| (src, words_of(&segments)))
            .collect();
        // Received by sender ascending: this processor's own go in between.
        claims.insert(claims.partition_point(|(src, _)| *src < me), (me, own));
        self.agree_on_pieces(judge(&claims, local_len, kept), id);
        claims
    }

    /// Threads, and MPI where every part is mapped memory: the pieces are
    /// checked, then written in the destinations' memory, whose addresses
    /// in this process `bases` gives in pid order.
    fn write_in_place<T: Pod + Send, R>(
        &mut self,
        id: u32,
        bases: &[usize],
        pieces: &[DirectPiece],
        kept: Range<usize>,
        opened: &mut Opened<T>,
        write: impl FnOnce(&Ctx, &[T], &mut [&mut [T]]) -> R,
    ) -> R {
        let local_len = opened.local.as_ref().map_or(0, |l| l.len());
        self.check_claims(id, pieces, local_len, &kept);
        let kept: &[T] = if kept.is_empty() {
            &[]
        } else {
            let base: *const T = std::ptr::with_exposed_provenance(bases[self.pid]);
            // SAFETY: `base` is this processor's own part of the coarray,
            // taken out of its registry (see below), and `kept` lies
            // inside it and overlaps no piece of any processor: checked
            // and agreed on above. So nothing writes these elements while
            // the slice lives (inside `write`, like the pieces' slices),
            // and they are initialised `T: Pod` values.
            unsafe { std::slice::from_raw_parts(base.add(kept.start), kept.len()) }
        };
        let mut slices: Vec<&mut [T]> = pieces
            .iter()
            .map(|piece| {
                if piece.len == 0 {
                    return &mut [][..];
                }
                let base: *mut T = std::ptr::with_exposed_provenance_mut(bases[piece.dst]);
                // SAFETY: `base` is the start of processor `piece.dst`'s
                // local part of the coarray (`T`s of the same `T`: the
                // sync above checked the registrations, the rows the id and
                // element size), as this process sees it: the part itself
                // on threads, this process's shared mapping of its memory
                // file under MPI (kept mapped until its owner reports it
                // freed). Its owner took it out of its registry before the
                // row exchange and does not touch, move
                // or free it until every processor has passed the barrier at
                // the end of this call (or ever, if the run is aborted: see
                // `Opened`). Its owner checked that this range lies inside
                // the part and overlaps no other piece of any processor, and
                // every processor agreed on that before any slice is made,
                // so no two slices alias and nothing else accesses these
                // elements meanwhile. The elements are initialised `T: Pod`
                // values. The slices live only inside `write`, which returns
                // before this processor enters the closing barrier, whose
                // synchronisation makes the writes visible to the owner.
                unsafe { std::slice::from_raw_parts_mut(base.add(piece.offset), piece.len) }
            })
            .collect();
        let result = write(self, kept, &mut slices);
        drop(slices);
        // Every writer has finished once everyone has passed this barrier.
        self.collective(|c| c.allgather(&[]));
        result
    }

    /// MPI: the pieces are checked, then written: this processor's own in
    /// its part, the others in a local buffer laid out by destination (each
    /// destination's pieces together, in the order of `pieces`), whose
    /// regions are sent as they are, with the lengths known from the
    /// claims; each receiver copies the bytes into place once. (Receiving
    /// them straight into place, through a datatype over the claims'
    /// ranges, measured slower: a sender's pieces are scattered over the
    /// destination's part, and the datatype engine moves many small blocks
    /// more slowly than one contiguous receive and a copy.)
    fn write_staged<T: Pod + Send, R>(
        &mut self,
        id: u32,
        pieces: &[DirectPiece],
        keep: Range<usize>,
        opened: &mut Opened<T>,
        write: impl FnOnce(&Ctx, &[T], &mut [&mut [T]]) -> R,
    ) -> R {
        let (me, p) = (self.pid, self.nprocs);
        let size = std::mem::size_of::<T>();
        let local_len = opened.local.as_ref().map_or(0, |l| l.len());
        let claims = self.check_claims(id, pieces, local_len, &keep);
        // Where each destination's region of the stage starts. This
        // processor's own pieces are written in its part directly (their
        // claims have passed), so they take no room.
        let mut start = vec![0usize; p + 1];
        for piece in pieces.iter().filter(|piece| piece.dst != me) {
            start[piece.dst + 1] += piece.len;
        }
        for dst in 0..p {
            start[dst + 1] += start[dst];
        }
        // The kept stage when T's alignment allows (any Pod bytes are valid
        // values of T), else a fresh one.
        let bytes = start[p] * size;
        let kept = size > 0 && std::mem::align_of::<T>() <= std::mem::align_of::<u64>();
        let mut words = if kept {
            self.direct_stage.take(bytes)
        } else {
            Vec::new()
        };
        let mut fresh = Vec::new();
        let stage: &mut [T] = if kept {
            bytemuck::cast_slice_mut(&mut bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..bytes])
        } else {
            fresh.resize(start[p], T::zeroed());
            &mut fresh
        };
        let local = opened.local.as_mut().expect("present");
        let result = {
            // Cut the stage in destination order, and this processor's
            // part at its own pieces (disjoint and in bounds: checked),
            // then hand the slices out in the order of `pieces` (the
            // stable sort keeps each destination's pieces in their order).
            let mut cut: Vec<&mut [T]> = std::iter::repeat_with(Default::default)
                .take(pieces.len())
                .collect();
            let mut order: Vec<usize> =
                (0..pieces.len()).filter(|&i| pieces[i].dst != me).collect();
            order.sort_by_key(|&i| pieces[i].dst);
            let mut rest = &mut stage[..];
            for &i in &order {
                let (head, tail) = std::mem::take(&mut rest).split_at_mut(pieces[i].len);
                cut[i] = head;
                rest = tail;
            }
            // (A piece of no elements writes nothing, wherever it points.)
            // The kept range is cut out with them, as a piece numbered
            // `pieces.len()`.
            let mut own: Vec<(usize, usize, usize)> = (0..pieces.len())
                .filter(|&i| pieces[i].dst == me && pieces[i].len > 0)
                .map(|i| (pieces[i].offset, pieces[i].len, i))
                .collect();
            if !keep.is_empty() {
                own.push((keep.start, keep.len(), pieces.len()));
            }
            own.sort_unstable();
            let (mut rest, mut at) = (&mut local[..], 0);
            let mut kept_part: &[T] = &[];
            for (offset, len, i) in own {
                let (_, from) = std::mem::take(&mut rest).split_at_mut(offset - at);
                let (head, tail) = from.split_at_mut(len);
                match cut.get_mut(i) {
                    Some(slot) => *slot = head,
                    None => kept_part = head,
                }
                (rest, at) = (tail, offset + len);
            }
            write(self, kept_part, &mut cut)
        };
        // (A fresh stage of zero-sized elements is no bytes at all.)
        let stage = if kept {
            self.direct_stage.lend(words)
        } else if size == 0 {
            Bytes::new()
        } else {
            Bytes::from_owner(PodBytes(fresh))
        };
        let blocks: Blocks = (0..p)
            .map(|dst| (dst, start[dst] * size..start[dst + 1] * size))
            .filter(|(dst, range)| *dst != me && !range.is_empty())
            .map(|(dst, range)| (dst, one_segment(stage.slice(range))))
            .collect();
        let mut expected = vec![0u64; p];
        for (src, words) in &claims {
            if *src != me {
                let elements: u64 = words.chunks_exact(2).map(|pair| pair[1]).sum();
                expected[*src] = elements * size as u64;
            }
        }
        let received = self.collective(|c| c.exchange(blocks, Some(&expected)));
        for (src, segments) in received {
            let words = &claims[claims.partition_point(|(q, _)| *q < src)].1;
            let mut reader = SegmentReader::new(&segments);
            for pair in words.chunks_exact(2).filter(|pair| pair[1] > 0) {
                let (offset, len) = (pair[0] as usize, pair[1] as usize);
                let into = bytemuck::cast_slice_mut::<T, u8>(&mut local[offset..offset + len]);
                assert!(
                    reader.read_into(into),
                    "bsp: a direct put's data ended early"
                );
            }
        }
        result
    }
}
