//! The placed routings (see `placement.rs`): the heads of every block
//! travel first, in a counted exchange, or not at all where the sync rows
//! carry them (`Matrix::heads_in_rows`, after a placed superstep); then
//! the bodies follow, straight from their segments, and each sender's
//! bodies are received either straight into the regions the receiver's
//! plan gives or, where the plan says no, into one staging buffer.
//!
//! The direct router's bodies go in one exchange into landing regions
//! (`Comm::exchange_into`); the two-phase router's are dealt over the
//! intermediates and forwarded, in two (`placed_two_phase.rs`).
//!
//! Whether a superstep is placed is decided here too ([`Placing`]): only
//! on a transport whose exchange writes into the landing regions as the
//! bytes arrive, and only where the records are large enough to repay the
//! extra exchange of heads.

use std::ops::Range;

use bytes::Bytes;

use super::{Matrix, Router};
use crate::error::{Error, ErrorKind};
use crate::placement::{Placed, Plan, Region};
use crate::pool::BUFFERS;
use crate::segments::{one_segment, segments_len, SegmentReader, Segments};
use crate::transport::{dense, listed, Aborted, Blocks, Capabilities, Comm, Scatter};

/// Environment variable choosing whether the receivers of the direct and
/// two-phase routers write put payloads straight into their coarrays,
/// where the transport can (MPI): `auto` (the default: where records are
/// large), `placed` (whenever a superstep has no gets) or `staged`
/// (never); see [`Placing`]. For tests of both paths; every rank of a
/// job must use the same.
pub(crate) const RECEIVE_ENV: &str = "BSP_MPI_RECEIVE";

/// Bytes in front of each head block: the length of its bodies, and the
/// length of the bytes the exchange adds before the heads.
const LEAD_BYTES: usize = 16;

/// Below this size of record on average, placing costs more than it
/// saves: every record is a piece of the receive datatype.
const PLACE_MIN_RECORD: u64 = 4 << 10;

/// Below this many bytes per processor, the exchange of heads (two more
/// collectives) costs more than it saves. What it saves is more than the
/// copy out of a receive buffer: a block of header and payload segments is
/// not contiguous, and Open MPI sends such a block above its eager limit
/// through its pipelined copy-in, copy-out protocol, where a lone payload
/// goes in one process-to-process copy. On the Intel VM of BENCHMARKS.md
/// section 2d (as of commit d743920, in git) the two break even at 16 KiB
/// per rank, and placing is 1.2-1.7x faster at 32-64 KiB (on the AMD VM
/// of section 2b it was no faster at 64 KiB, and no slower by more than
/// the spread).
const PLACE_MIN_BYTES: u64 = 32 << 10;

/// Where the bodies from one sender land.
pub(crate) enum Landing {
    /// In the regions of the receiver's plan, in order; `ends[r]` is the
    /// offset in the bodies at which region r ends.
    Placed {
        regions: Vec<Region>,
        ends: Vec<usize>,
    },
    /// As bytes, from this offset of the staging buffer.
    Staged(usize),
    /// This rank's own bodies, which stay here.
    Own,
}

impl Landing {
    /// Appends to `out` the memory (address, length) that bytes `range` of
    /// the sender's bodies land in; `staging` is the staging buffer.
    pub(super) fn pieces(
        &self,
        range: Range<usize>,
        staging: *mut u8,
        out: &mut Vec<(*const u8, usize)>,
    ) {
        if range.is_empty() {
            return;
        }
        match self {
            // Written by MPI: an address from the mutable buffer.
            Landing::Staged(at) => out.push((
                staging.wrapping_add(at + range.start).cast_const(),
                range.len(),
            )),
            Landing::Placed { regions, ends } => {
                let first = ends.partition_point(|&end| end <= range.start);
                let mut at = range.start;
                for (region, &end) in regions[first..].iter().zip(&ends[first..]) {
                    let upto = end.min(range.end);
                    // An address inside the region (the plan's contract
                    // keeps it valid), not dereferenced here.
                    let from = region.at.wrapping_add(at - (end - region.len));
                    out.push((from.cast_const(), upto - at));
                    at = upto;
                    if at == range.end {
                        break;
                    }
                }
                debug_assert_eq!(at, range.end, "bsp: a range past the plan's regions");
            }
            Landing::Own => unreachable!("bsp: a rank's own bodies are not received"),
        }
    }
}

/// The heads of a placed exchange as received, by sender (this rank among
/// them when it has heads for itself): each sender's heads, the length of
/// its bodies, the bytes it put in front of its heads (see
/// [`MpiComm::exchange_heads`]) and where its bodies land.
#[derive(Default)]
pub(super) struct Arrived {
    pub(super) heads: Vec<(usize, Segments)>,
    pub(super) body_lens: Vec<usize>,
    pub(super) fronts: Vec<Segments>,
    pub(super) landings: Vec<Landing>,
    /// Bytes of the staging buffer the staged bodies need.
    pub(super) staged_len: usize,
}

impl Arrived {
    /// Asks `plan` where the bodies of each sender go, and lays out the
    /// staging buffer of those received as bytes; `me` is this rank.
    pub(super) fn plan(&mut self, plan: Plan<'_>, me: usize) {
        let plans = plan(&self.heads);
        for ((&(src, _), &len), regions) in self.heads.iter().zip(&self.body_lens).zip(plans) {
            // A plan that does not cover its bodies exactly would be a bug
            // in the runtime; receive those bodies as bytes rather than
            // write outside the regions.
            let covered = regions
                .as_ref()
                .map(|r| r.iter().map(|r| r.len).sum::<usize>());
            debug_assert!(
                covered.is_none_or(|c| c == len),
                "bsp: a plan of the wrong length"
            );
            let landing = match regions {
                _ if src == me => Landing::Own,
                Some(regions) if covered == Some(len) => {
                    let ends = regions
                        .iter()
                        .scan(0, |end, r| {
                            *end += r.len;
                            Some(*end)
                        })
                        .collect();
                    Landing::Placed { regions, ends }
                }
                _ => {
                    self.staged_len += len;
                    Landing::Staged(self.staged_len - len)
                }
            };
            self.landings.push(landing);
        }
    }

    /// The heads of a placed exchange as the sync's rows carry them (`m`:
    /// [`Matrix::heads_in_rows`]), with this rank's own (`own_heads`,
    /// `own_body_len` bytes of bodies): nothing is exchanged. Each
    /// sender's heads are copied out of its row; `front(i)` gives what
    /// sender i would have put in front of them, worked out from the
    /// matrix.
    pub(super) fn from_rows(
        m: &Matrix,
        me: usize,
        own_heads: Segments,
        own_body_len: usize,
        front: impl Fn(usize) -> Segments,
    ) -> Self {
        let mut arrived = Arrived::default();
        let mut own_heads = Some(own_heads);
        for i in 0..m.procs() {
            let (heads, body_len, front) = if i == me {
                let heads = own_heads.take().unwrap_or_default();
                (heads, own_body_len, Segments::new())
            } else {
                let heads = m.heads(i, me);
                let body_len = m.bytes(i, me) - heads.len();
                (
                    one_segment(Bytes::copy_from_slice(heads)),
                    body_len,
                    front(i),
                )
            };
            if segments_len(&heads) > 0 || !front.is_empty() {
                arrived.heads.push((i, heads));
                arrived.body_lens.push(body_len);
                arrived.fronts.push(front);
            }
        }
        arrived
    }

    /// The index of `src` among the senders, if it sent heads.
    pub(super) fn index(&self, src: usize) -> Option<usize> {
        self.heads.binary_search_by_key(&src, |(s, _)| *s).ok()
    }

    /// What arrived from each sender, once the bodies are in: `staging`
    /// is the staging buffer, `own_body` this rank's bodies to itself.
    pub(super) fn into_placed(self, staging: &Bytes, own_body: Segments) -> Vec<Placed> {
        let mut own_body = Some(own_body);
        self.heads
            .into_iter()
            .zip(self.body_lens)
            .zip(self.landings)
            .map(|(((src, heads), body_len), landing)| {
                let bodies = match landing {
                    Landing::Own => own_body.take(),
                    Landing::Staged(at) => Some(one_segment(staging.slice(at..at + body_len))),
                    Landing::Placed { .. } => None,
                };
                Placed {
                    src,
                    heads,
                    bodies,
                    body_len,
                }
            })
            .collect()
    }
}

/// What a rank sends in a placed exchange, by destination.
pub(super) struct Outgoing {
    /// The record headers of each stream.
    pub(super) heads: Vec<Segments>,
    /// The payloads of each stream, this rank's own taken out (empty).
    pub(super) bodies: Vec<Segments>,
    /// This rank's payloads to itself, which stay here.
    pub(super) own_body: Segments,
    /// The length of each destination's payloads, this rank's own included.
    pub(super) body_lens: Vec<usize>,
}

impl Outgoing {
    fn new(heads: Blocks, bodies: Blocks, p: usize, me: usize) -> Self {
        let mut bodies = dense(bodies, p);
        let own_body = std::mem::take(&mut bodies[me]);
        let mut body_lens: Vec<usize> = bodies.iter().map(|b| segments_len(b)).collect();
        body_lens[me] = segments_len(&own_body);
        Outgoing {
            heads: dense(heads, p),
            bodies,
            own_body,
            body_lens,
        }
    }
}

/// What a superstep moves, as the sync rows tell every processor: the
/// figures [`Placing::places`] decides from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Volume {
    /// Bytes, over all processors.
    pub(crate) bytes: u64,
    /// Records, over all processors.
    pub(crate) records: u64,
    /// Bytes of the processor that sends most.
    pub(crate) most: u64,
}

/// When the receivers of a superstep's puts place the payloads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Placing {
    /// Where the records average 4 KiB or more, the superstep moves
    /// 32 KiB or more per processor, and some processor sends more than
    /// the transport publishes beside the rows; received into a buffer and
    /// copied elsewhere otherwise.
    #[default]
    Auto,
    /// In every superstep without gets.
    Always,
    /// Never: into a receive buffer, then copied where the records say.
    Never,
}

impl Placing {
    /// The choice of [`RECEIVE_ENV`]: `Auto` where it is unset.
    pub(crate) fn from_env() -> Result<Self, Error> {
        match std::env::var(RECEIVE_ENV).as_deref() {
            Err(_) | Ok("auto") => Ok(Placing::Auto),
            Ok("placed") => Ok(Placing::Always),
            Ok("staged") => Ok(Placing::Never),
            Ok(other) => Err(Error::new(
                ErrorKind::Config,
                None,
                None,
                format!("{RECEIVE_ENV}={other:?}: expected `auto`, `placed` or `staged`"),
            )),
        }
    }

    /// Whether a routing of `volume` among `p` processors is placed, on
    /// a transport that can do `caps`; `arrived` where the blocks were
    /// published beside the rows and the routing is direct, so that they
    /// are in their receivers' mailboxes already. Every processor gets
    /// the same answer from the same figures.
    ///
    /// Under `Auto`, a superstep whose blocks the transport publishes
    /// beside the rows (each processor sends at most
    /// [`publishes_up_to`](Capabilities::publishes_up_to)) is not placed:
    /// it costs one synchronisation that way, where placing costs two or
    /// three (BENCHMARKS.md section 14g).
    pub(crate) fn places(
        self,
        caps: Capabilities,
        p: usize,
        volume: Volume,
        arrived: bool,
    ) -> bool {
        let Volume {
            bytes,
            records,
            most,
        } = volume;
        if !caps.scatter_receive {
            return false;
        }
        match self {
            Placing::Never => false,
            Placing::Always => records > 0,
            Placing::Auto => {
                records > 0
                    && !arrived
                    && most > caps.publishes_up_to as u64
                    && bytes / records >= PLACE_MIN_RECORD
                    && bytes / p as u64 >= PLACE_MIN_BYTES
            }
        }
    }

    /// Whether the sync rows are worth a slot for the heads of the next
    /// placed superstep: where placing happens at all.
    pub(crate) fn heads_in_row(self, caps: Capabilities) -> bool {
        caps.scatter_receive && self != Placing::Never
    }
}

/// The bytes each rank sends this one in
/// [`exchange_heads`](Self::exchange_heads), from the communication
/// matrix: its heads, `front(i)` bytes in front of them, and the lead;
/// nothing where both are empty.
pub(super) fn heads_expected(m: &Matrix, me: usize, front: impl Fn(usize) -> usize) -> Vec<u64> {
    (0..m.procs())
        .map(|i| {
            let ahead = m.head_bytes(i, me) + front(i) as u64;
            if ahead > 0 {
                ahead + LEAD_BYTES as u64
            } else {
                0
            }
        })
        .collect()
}

/// The first half of a placed exchange: sends `heads[k]` to each rank
/// k ≠ this one, led by `body_lens[k]` and the bytes `front(k)`, in a
/// counted exchange (a rank is sent nothing where both are empty), or
/// without the counts where every rank passes `expected` (the bytes
/// each rank sends this one, lead included); then asks `plan` where
/// the bodies go, and lays out the staging buffer of those received as
/// bytes.
pub(super) fn exchange_heads(
    comm: &mut dyn Comm,
    mut heads: Vec<Segments>,
    body_lens: &[usize],
    mut front: impl FnMut(usize) -> Bytes,
    plan: Plan<'_>,
    expected: Option<&[u64]>,
) -> Result<Arrived, Aborted> {
    let me = comm.pid();
    let mut own_heads = Some(std::mem::take(&mut heads[me]));
    for (k, head) in heads.iter_mut().enumerate().filter(|&(k, _)| k != me) {
        let extra = front(k);
        if !head.is_empty() || !extra.is_empty() {
            let mut lead = [0u8; LEAD_BYTES];
            lead[..8].copy_from_slice(&(body_lens[k] as u64).to_ne_bytes());
            lead[8..].copy_from_slice(&(extra.len() as u64).to_ne_bytes());
            head.insert_many(0, [Bytes::copy_from_slice(&lead), extra]);
        }
    }
    let mut arrived = Arrived::default();
    // This rank's own heads were taken out: it sends itself nothing.
    let received = dense(comm.exchange(listed(heads), expected)?, comm.nprocs());
    for (k, message) in received.into_iter().enumerate() {
        if k == me {
            let own = own_heads.take().expect("one block per rank");
            if !own.is_empty() {
                arrived.heads.push((me, own));
                arrived.body_lens.push(body_lens[me]);
                arrived.fronts.push(Segments::new());
            }
        } else if !message.is_empty() {
            let mut reader = SegmentReader::new(&message);
            let body_len = reader.read_u64() as usize;
            let front_len = reader.read_u64() as usize;
            let (mut front, mut rest) = (Segments::new(), Segments::new());
            let rest_len = segments_len(&message) - LEAD_BYTES - front_len;
            assert!(
                reader.read_slices(front_len, &mut front)
                    && reader.read_slices(rest_len, &mut rest),
                "bsp: truncated heads"
            );
            arrived.heads.push((k, rest));
            arrived.body_lens.push(body_len);
            arrived.fronts.push(front);
        }
    }
    arrived.plan(plan, me);
    Ok(arrived)
}

/// A placed routing: each processor's stream for `q` is `heads[q]` (its
/// record headers) and `bodies[q]` (its payloads). The heads travel
/// straight to their destinations first, and `plan` turns the heads
/// received into the places the bodies are written to, so that they need
/// not be copied out of a receive buffer. The bodies then travel by
/// `router`: in one exchange ([`Router::Direct`]), or dealt over the
/// intermediates and forwarded as `two_phase.rs` deals a stream
/// ([`Router::TwoPhase`]). `matrix`, when every processor passes it, is
/// the routing's communication matrix, heads' bytes included, from which
/// every processor knows what the heads weigh, so that they need no
/// exchange of counts; where it carries the heads themselves
/// ([`Matrix::heads_in_rows`]), they need no exchange at all.
pub(super) fn exchange(
    comm: &mut dyn Comm,
    router: Router,
    heads: Blocks,
    bodies: Blocks,
    plan: Plan<'_>,
    matrix: Option<&Matrix>,
) -> Result<Vec<Placed>, Aborted> {
    let out = Outgoing::new(heads, bodies, comm.nprocs(), comm.pid());
    match router {
        Router::Direct => direct(comm, out, plan, matrix),
        Router::TwoPhase => super::placed_two_phase::exchange(comm, out, plan, matrix),
        _ => unreachable!("bsp: only the direct and two-phase routers place payloads"),
    }
}

/// The direct router's placed exchange: the heads (each led by its
/// bodies' length) in a counted exchange, or, given the `matrix`
/// (which every rank has from the sync's rows), without the counts,
/// or not at all where the rows carry them; then the bodies in one
/// `MPI_Alltoallw`. A rank's blocks to itself stay here, and come
/// back as bytes.
fn direct(
    comm: &mut dyn Comm,
    mut out: Outgoing,
    plan: Plan<'_>,
    matrix: Option<&Matrix>,
) -> Result<Vec<Placed>, Aborted> {
    let me = comm.pid();
    // A rank is sent bodies only along with heads.
    let sends: Vec<bool> = (0..comm.nprocs())
        .map(|k| k != me && !out.heads[k].is_empty() && out.body_lens[k] > 0)
        .collect();
    let arrived = match matrix {
        Some(m) if m.heads_in_rows() => {
            let own_heads = std::mem::take(&mut out.heads[me]);
            let own_body_len = out.body_lens[me];
            let no_front = |_| Segments::new();
            let mut arrived = Arrived::from_rows(m, me, own_heads, own_body_len, no_front);
            arrived.plan(plan, me);
            arrived
        }
        _ => {
            let expected = matrix.map(|m| heads_expected(m, me, |_| 0));
            exchange_heads(
                comm,
                out.heads,
                &out.body_lens,
                |_| Bytes::new(),
                plan,
                expected.as_deref(),
            )?
        }
    };
    let mut staging = BUFFERS.take(arrived.staged_len);
    let mut into = Scatter {
        repeats: matrix.is_some_and(Matrix::repeats),
        ..Scatter::default()
    };
    let mut pieces = Vec::new();
    for (i, &(src, _)) in arrived.heads.iter().enumerate() {
        if src != me {
            pieces.clear();
            let range = 0..arrived.body_lens[i];
            arrived.landings[i].pieces(range, staging.as_mut_ptr(), &mut pieces);
            into.from(src, &pieces);
        }
    }
    let outgoing: Blocks = out
        .bodies
        .into_iter()
        .enumerate()
        .filter(|&(k, _)| sends[k])
        .collect();
    // SAFETY: from each sender with bodies, exactly the length it
    // sends (announced in its heads), over the plan's regions, which
    // `Plan`'s contract keeps valid, disjoint and untouched until this
    // returns, or over its part of `staging`, which is owned here.
    unsafe { comm.exchange_into(&outgoing, into)? };
    drop(outgoing);
    let staging = BUFFERS.share(staging);
    Ok(arrived.into_placed(&staging, out.own_body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_landing_cuts_ranges_over_its_regions() {
        let mut memory = [0u8; 64];
        let base = memory.as_mut_ptr();
        let regions: Vec<Region> = [(40, 5), (0, 3), (10, 8)]
            .iter()
            .map(|&(at, len)| Region {
                at: base.wrapping_add(at),
                len,
            })
            .collect();
        let landing = Landing::Placed {
            regions,
            ends: vec![5, 8, 16],
        };
        let offsets = |range: Range<usize>| -> Vec<(usize, usize)> {
            let mut out = Vec::new();
            landing.pieces(range, std::ptr::null_mut(), &mut out);
            out.iter()
                .map(|&(at, len)| (at as usize - base as usize, len))
                .collect()
        };
        assert_eq!(offsets(0..16), [(40, 5), (0, 3), (10, 8)]);
        assert_eq!(offsets(3..7), [(43, 2), (0, 2)]);
        assert_eq!(offsets(5..8), [(0, 3)]);
        assert_eq!(offsets(9..12), [(11, 3)]);
        assert_eq!(offsets(4..4), []);
        let staged = Landing::Staged(100);
        let mut out = Vec::new();
        staged.pieces(2..6, base, &mut out);
        assert_eq!(out, [(base.wrapping_add(102).cast_const(), 4)]);
    }
}
