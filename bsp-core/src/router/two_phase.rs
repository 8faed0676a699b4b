//! The deterministic two-transpose h-relation router (Bader, Helman and
//! JáJá 1995, Sect. 3 and Appendix B).
//!
//! Processor i splits its stream for destination j (m bytes) into p
//! contiguous parts of ⌊m/p⌋ or ⌈m/p⌉ bytes; part c goes to intermediate
//! (i + j + c) mod p, the ⌈m/p⌉ parts coming first. This is the paper's
//! cyclic dealing of words with the words of a part kept together, so the
//! bound on bin sizes carries over unchanged with bytes as the unit. Each
//! block of either exchange starts with a header of p little integers, the
//! lengths of the parts it carries in destination (stage 1) or source
//! (stage 2) order, so nothing else needs to be known to take it apart.
//!
//! On the threads transport the parts are reference-counted slices of the
//! sender's buffers: the intermediates re-bin pointers and the only copy of
//! the payload is the one into the receiver's memory.

use bytes::Bytes;

use super::RouteFigures;
use crate::segments::{segments_len, slice_segments, SegmentReader, Segments};
use crate::transport::{Aborted, Comm};

/// Length of part `c` when `len` bytes are split into `p` parts.
fn part_len(len: usize, p: usize, c: usize) -> usize {
    len / p + usize::from(c < len % p)
}

/// Offset of part `c` when `len` bytes are split into `p` parts.
fn part_start(len: usize, p: usize, c: usize) -> usize {
    c * (len / p) + c.min(len % p)
}

fn encode_header(lens: &[usize]) -> Bytes {
    let mut raw = Vec::with_capacity(8 * lens.len());
    for &len in lens {
        raw.extend_from_slice(&(len as u64).to_ne_bytes());
    }
    Bytes::from(raw)
}

/// Reads the p part lengths at the start of a block and returns the parts'
/// offsets in the block: part x spans `offsets[x]..offsets[x + 1]`.
fn decode_header(block: &[Bytes], p: usize) -> Vec<usize> {
    let mut r = SegmentReader::new(block);
    let mut offsets = Vec::with_capacity(p + 1);
    let mut at = 8 * p;
    offsets.push(at);
    for _ in 0..p {
        at += r.read_u64() as usize;
        offsets.push(at);
    }
    offsets
}

pub(super) fn route(
    comm: &mut dyn Comm,
    streams: Vec<Segments>,
) -> Result<(Vec<Segments>, RouteFigures), Aborted> {
    let p = comm.nprocs();
    let me = comm.pid();
    let header_len = 8 * p;
    let span = |offsets: &[usize], x: usize| (offsets[x], offsets[x + 1] - offsets[x]);
    let mut figures = RouteFigures {
        header_bytes: 2 * (p * header_len) as u64,
        ..RouteFigures::default()
    };

    // Stage 1: deal every stream over the p intermediates.
    let lens: Vec<usize> = streams.iter().map(|s| segments_len(s)).collect();
    let mut first = Vec::with_capacity(p);
    for k in 0..p {
        // Part index c of destination j's stream that goes to intermediate k.
        let part = |j: usize| (k + 2 * p - me - j) % p;
        let part_lens: Vec<usize> = (0..p).map(|j| part_len(lens[j], p, part(j))).collect();
        figures.first_block = figures
            .first_block
            .max(part_lens.iter().sum::<usize>() as u64);
        let mut block = vec![encode_header(&part_lens)];
        for j in 0..p {
            slice_segments(
                &streams[j],
                part_start(lens[j], p, part(j)),
                part_lens[j],
                &mut block,
            );
        }
        first.push(block);
    }
    drop(streams);
    let received = comm.transpose(first)?;

    // Stage 2: regroup what arrived by final destination.
    let headers: Vec<Vec<usize>> = received.iter().map(|b| decode_header(b, p)).collect();
    let mut second = Vec::with_capacity(p);
    for j in 0..p {
        let from_lens: Vec<usize> = headers.iter().map(|h| span(h, j).1).collect();
        let mut block = vec![encode_header(&from_lens)];
        for (i, h) in headers.iter().enumerate() {
            let (start, len) = span(h, j);
            slice_segments(&received[i], start, len, &mut block);
        }
        second.push(block);
    }
    drop(received);
    let arrived = comm.transpose(second)?;

    // Reassemble each source's stream from its parts, in part order.
    let headers: Vec<Vec<usize>> = arrived.iter().map(|b| decode_header(b, p)).collect();
    for h in &headers {
        figures.second_block = figures.second_block.max((h[p] - h[0]) as u64);
    }
    let delivered = (0..p)
        .map(|i| {
            let mut stream = Vec::new();
            for c in 0..p {
                let k = (i + me + c) % p;
                let (start, len) = span(&headers[k], i);
                slice_segments(&arrived[k], start, len, &mut stream);
            }
            stream
        })
        .collect();
    Ok((delivered, figures))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_tile_the_stream() {
        for len in 0..40 {
            for p in 1..9 {
                let mut next = 0;
                for c in 0..p {
                    assert_eq!(part_start(len, p, c), next);
                    next += part_len(len, p, c);
                }
                assert_eq!(next, len);
            }
        }
    }
}
