//! The two-phase router's placed exchange: Bader, Helman and JáJá's two
//! transposes (`router/two_phase.rs`) with no copy out of a receive
//! buffer at the destination.
//!
//! Each stream is cut into its heads and its bodies (`placement.rs`).
//! The heads go straight to their destination, in the exchange of the
//! direct placed exchange (`placed.rs`), and carry, in front of them,
//! the header of the stage-1 block their sender will send to that rank
//! (up to 64 ranks, every receiver works out those headers' lengths from
//! the sync rows, so the heads need no exchange of counts either). Where
//! the rows carry the heads themselves, nothing is exchanged: every
//! receiver works out the headers, not only their lengths, from the
//! matrix.
//! After it every rank knows, for each of its senders, where the sender's
//! bodies go (its plan) and how long each part is, so both transposes
//! need no exchange of counts:
//!
//! * stage 1 deals each body over the intermediates exactly as the
//!   streaming router deals a stream. An intermediate receives the part it
//!   is itself the destination of straight into place, and the parts it
//!   must forward into one buffer, laid out by sender;
//! * stage 2 sends each destination its parts, by source, straight from
//!   that buffer (and, for its own bodies, from their segments); the
//!   destination receives every part into place.
//!
//! Against the streaming router under MPI that is one more exchange (the
//! heads, unless the rows carry them), and one copy less of every byte
//! delivered. Both stages are exchanges into landing regions
//! (`Comm::exchange_into`).

use std::ops::Range;

use bytes::Bytes;

use super::placed::{exchange_heads, heads_expected, Arrived, Outgoing};
use super::two_phase::{
    decode_header, encode_header, parts, placed_front, placed_front_lens, through,
};
use super::two_stage::Part;
use super::Matrix;
use crate::placement::{Placed, Plan};
use crate::pool::BUFFERS;
use crate::segments::{one_segment, SegmentCursor, Segments};
use crate::transport::{listed, Aborted, Comm, Scatter};

/// The two-phase router's placed routing (see the module docs).
pub(super) fn exchange(
    comm: &mut dyn Comm,
    mut out: Outgoing,
    plan: Plan<'_>,
    matrix: Option<&Matrix>,
) -> Result<Vec<Placed>, Aborted> {
    let (p, me) = (comm.nprocs(), comm.pid());

    // Stage 1's blocks, by intermediate, with their headers; the parts
    // dealt to this rank itself stay here, by destination.
    let mut first = vec![Segments::new(); p];
    let mut first_parts: Vec<Vec<Part>> = vec![Vec::new(); p];
    let mut kept = vec![Segments::new(); p];
    for (j, body) in out.bodies.iter().enumerate() {
        if j == me || out.body_lens[j] == 0 {
            continue;
        }
        let mut cursor = SegmentCursor::new(body);
        for (k, range) in parts(me, j, out.body_lens[j], p) {
            let into = if k == me {
                &mut kept[j]
            } else {
                first_parts[k].push(Part {
                    peer: j,
                    len: range.len(),
                });
                &mut first[k]
            };
            cursor.take(range.len(), into);
        }
    }
    let front = |k: usize| {
        let parts = &first_parts[k];
        if parts.is_empty() {
            Bytes::new()
        } else {
            encode_header(parts.iter().copied())
        }
    };
    debug_assert!(
        matrix.is_none_or(|m| (0..p)
            .filter(|&k| k != me)
            .all(|k| front(k) == stage_one_header(m, me, k))),
        "bsp: the matrix gives other stage-1 headers than are sent"
    );
    let arrived = match matrix {
        // Where the rows carry the heads, every rank works out the
        // stage-1 headers it will receive from the matrix, and nothing
        // is exchanged.
        Some(m) if m.heads_in_rows() => {
            let own_heads = std::mem::take(&mut out.heads[me]);
            let own_body_len = out.body_lens[me];
            let front = |i| match stage_one_header(m, i, me) {
                header if header.is_empty() => Segments::new(),
                header => one_segment(header),
            };
            let mut arrived = Arrived::from_rows(m, me, own_heads, own_body_len, front);
            arrived.plan(plan, me);
            arrived
        }
        // With the matrix, every rank works out the lengths of the
        // stage-1 headers it will receive, and the heads need no count
        // exchange.
        _ => {
            let expected = matrix.map(|m| {
                let fronts = placed_front_lens(m, me);
                heads_expected(m, me, |i| fronts[i])
            });
            exchange_heads(
                comm,
                out.heads,
                &out.body_lens,
                front,
                plan,
                expected.as_deref(),
            )?
        }
    };

    // Stage 1's receive: from each sender, its parts in the order of
    // its header; the part for this rank lands where its plan says,
    // the others in the forward buffer, whose ranges are listed by
    // destination (sources ascending).
    let mut stage_one: Vec<(usize, Vec<Part>)> = Vec::new();
    let mut forward: Vec<Vec<(usize, Range<usize>)>> = vec![Vec::new(); p];
    let mut forward_len = 0;
    for (&(src, _), front) in arrived.heads.iter().zip(&arrived.fronts) {
        if src == me || front.is_empty() {
            continue;
        }
        let mut parts = Vec::new();
        decode_header(&mut SegmentCursor::new(front), &mut parts);
        for part in parts.iter().filter(|part| part.peer != me) {
            forward[part.peer].push((src, forward_len..forward_len + part.len));
            forward_len += part.len;
        }
        stage_one.push((src, parts));
    }
    let mut forwarded = BUFFERS.take(forward_len);
    let mut staging = BUFFERS.take(arrived.staged_len);
    let staging_at = staging.as_mut_ptr();
    let mut into = Scatter::default();
    let mut pieces = Vec::new();
    let mut at = 0;
    for (src, parts) in &stage_one {
        pieces.clear();
        for part in parts {
            if part.peer == me {
                let i = arrived.index(*src).expect("a sender of bodies sends heads");
                let range = through(arrived.body_lens[i], *src, me, me, p);
                assert_eq!(
                    range.len(),
                    part.len,
                    "bsp: a stage-1 part of the wrong length"
                );
                arrived.landings[i].pieces(range, staging_at, &mut pieces);
            } else {
                // Written by MPI: an address from the mutable buffer.
                let slot = forwarded.as_mut_ptr().wrapping_add(at);
                pieces.push((slot.cast_const(), part.len));
                at += part.len;
            }
        }
        into.from(*src, &pieces);
    }
    // SAFETY: from each sender of a stage-1 block, laid out by the
    // header it sent ahead of its heads (so exactly the length it
    // sends), over the plan's regions (valid, disjoint and untouched
    // until this returns, by `Plan`'s contract), `staging` or
    // `forwarded`, both owned here.
    unsafe { comm.exchange_into(&listed(first), into)? };
    let forwarded = BUFFERS.share(forwarded);

    // Stage 2: to each destination, the parts through this rank, by
    // source (this rank's own among them, from its bodies).
    let mut second = vec![Segments::new(); p];
    for j in (0..p).filter(|&j| j != me) {
        let ranges = &forward[j];
        let mine = ranges.partition_point(|&(src, _)| src < me);
        for (_, range) in &ranges[..mine] {
            second[j].push(forwarded.slice(range.clone()));
        }
        second[j].append(&mut kept[j]);
        for (_, range) in &ranges[mine..] {
            second[j].push(forwarded.slice(range.clone()));
        }
    }
    // Its receive: from each intermediate, the parts of the bodies to
    // this rank it was dealt, by source, each into place.
    let mut through_k: Vec<Vec<(usize, Range<usize>)>> = vec![Vec::new(); p];
    for (i, &(src, _)) in arrived.heads.iter().enumerate() {
        if src == me || arrived.body_lens[i] == 0 {
            continue;
        }
        for (k, range) in parts(src, me, arrived.body_lens[i], p) {
            if k != me {
                through_k[k].push((i, range));
            }
        }
    }
    let mut into = Scatter::default();
    for (k, ranges) in through_k.into_iter().enumerate() {
        pieces.clear();
        for (i, range) in ranges {
            arrived.landings[i].pieces(range, staging_at, &mut pieces);
        }
        into.from(k, &pieces);
    }
    // SAFETY: as for stage 1: from each intermediate, the parts of the
    // bodies to this rank dealt to it, whose lengths this rank
    // computes as the intermediate does (both from the body lengths in
    // the heads), over the plan's regions or `staging`.
    unsafe { comm.exchange_into(&listed(second), into)? };
    drop(forwarded);
    let staging = BUFFERS.share(staging);
    Ok(arrived.into_placed(&staging, out.own_body))
}

/// The header of the stage-1 block rank `i` sends rank `me` (empty when
/// it sends none), worked out from the matrix.
fn stage_one_header(m: &Matrix, i: usize, me: usize) -> Bytes {
    let parts = placed_front(m, i, me);
    if parts.is_empty() {
        Bytes::new()
    } else {
        encode_header(parts.into_iter())
    }
}
