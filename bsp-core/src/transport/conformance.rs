//! The contract of [`Comm`], checked on every registered transport
//! ([`Transport::registered`]): what a new transport must pass before a
//! router may run on it. Each test opens runs through the one launcher
//! ([`launch`]) and drives the endpoints directly, below `Ctx` and the
//! routers.
//!
//! Threads run here with `cargo test`; MPI where this test binary runs as
//! the ranks of a job (`.ci/mpi-tests.sh` runs it under `mpirun -np 2`
//! and `-np 3` with the filter `transport::conformance`). Under MPI the
//! ranks must run the same tests in the same order (`--test-threads=1`).

use bytes::Bytes;

use super::{launch, Blocks, Comm, Group, Offer, RunLimits, Scatter, Transport};
use crate::segments::Segments;

/// Processor counts tried on a transport where the program chooses them;
/// MPI takes the job's.
const PROCS: [usize; 4] = [1, 2, 3, 5];

/// Runs `body` on every registered transport, at every count of
/// [`PROCS`] it can run, and returns nothing: `body` asserts.
fn on_every_transport(body: impl Fn(&mut dyn Comm) + Sync) {
    for transport in Transport::registered() {
        for p in PROCS {
            let run = |mut comm: Box<dyn Comm>| {
                body(comm.as_mut());
                Some(())
            };
            let done = launch(transport, p, RunLimits::default(), &run)
                .unwrap_or_else(|e| panic!("{} at p = {p}: {e}", transport.name()));
            assert!(!done.is_empty(), "{}: no processor ran", transport.name());
            if !transport.program_chooses_procs() {
                break;
            }
        }
    }
}

/// The byte at `i` of the block `src` sends `dst`.
fn byte(src: usize, dst: usize, i: usize) -> u8 {
    (i.wrapping_mul(7) ^ (src * 31 + dst * 17)) as u8
}

/// The length of the block `src` sends `dst`: some empty, some of several
/// kilobytes, none the same as its neighbours'.
fn block_len(src: usize, dst: usize) -> usize {
    match (src + 2 * dst) % 4 {
        0 => 0,
        1 => 1 + src,
        2 => 300 + 7 * dst,
        _ => 5000 + 13 * src + dst,
    }
}

/// The block `src` sends `dst`, cut into segments of uneven lengths.
fn block(src: usize, dst: usize) -> Segments {
    block_cut(src, dst, 97 + src)
}

/// The block `src` sends `dst`, cut into segments of `cut` bytes.
fn block_cut(src: usize, dst: usize, cut: usize) -> Segments {
    let bytes: Vec<u8> = (0..block_len(src, dst))
        .map(|i| byte(src, dst, i))
        .collect();
    bytes.chunks(cut).map(Bytes::copy_from_slice).collect()
}

/// Every processor's blocks to every processor (itself included).
fn blocks_of(me: usize, p: usize) -> Blocks {
    (0..p)
        .map(|q| (q, block(me, q)))
        .filter(|(_, b)| !b.is_empty())
        .collect()
}

/// Checks that `got` is what every processor of `p` sends `me`, by
/// sender ascending.
fn check_received(me: usize, p: usize, got: &Blocks) {
    let senders: Vec<usize> = got.iter().map(|(q, _)| *q).collect();
    let want: Vec<usize> = (0..p).filter(|&q| block_len(q, me) > 0).collect();
    assert_eq!(senders, want, "processor {me}: the senders, ascending");
    for (q, segments) in got {
        let bytes = segments.concat();
        assert_eq!(bytes.len(), block_len(*q, me));
        assert!(bytes.iter().enumerate().all(|(i, &b)| b == byte(*q, me, i)));
    }
}

#[test]
fn the_allgather_returns_every_row_in_pid_order() {
    on_every_transport(|comm| {
        let (me, p) = (comm.pid(), comm.nprocs());
        assert!(me < p);
        for round in 0..3u64 {
            let row = [me as u64, p as u64, round];
            let rows = comm.allgather(&row).expect("not aborted");
            assert_eq!(rows.len(), 3 * p);
            for (q, r) in rows.chunks(3).enumerate() {
                assert_eq!(r, [q as u64, p as u64, round]);
            }
        }
        // An empty row is a barrier.
        assert!(comm.allgather(&[]).expect("not aborted").is_empty());
    });
}

#[test]
fn recycled_rows_are_written_over_only_when_nobody_else_holds_them() {
    on_every_transport(|comm| {
        let me = comm.pid();
        let mut kept = Vec::new();
        for round in 0..6u64 {
            let row = [me as u64, round];
            let rows = comm.allgather(&row).expect("not aborted");
            for (q, r) in rows.chunks(2).enumerate() {
                assert_eq!(r, [q as u64, round]);
            }
            // Every other round's rows stay held here while given back.
            if round % 2 == 0 {
                kept.push((round, rows.clone()));
            }
            comm.recycle_rows(rows);
        }
        for (round, rows) in kept {
            for (q, r) in rows.chunks(2).enumerate() {
                assert_eq!(r, [q as u64, round], "rows still held were written over");
            }
        }
    });
}

#[test]
fn an_exchange_delivers_every_block_by_sender() {
    on_every_transport(|comm| {
        let (me, p) = (comm.pid(), comm.nprocs());
        let expected: Vec<u64> = (0..p).map(|q| block_len(q, me) as u64).collect();
        for known in [false, true] {
            let got = comm
                .exchange(blocks_of(me, p), known.then_some(&expected[..]))
                .expect("not aborted");
            check_received(me, p, &got);
        }
    });
}

#[test]
fn offered_blocks_are_exchanged_or_handed_back() {
    on_every_transport(|comm| {
        let (me, p) = (comm.pid(), comm.nprocs());
        let publishes = comm.capabilities().publishes_with_rows;
        let mine = |blocks: &Blocks| -> Vec<(usize, Vec<u8>)> {
            blocks.iter().map(|(q, b)| (*q, b.concat())).collect()
        };
        for exchange in [true, false, false, true] {
            let (rows, offer) = comm
                .allgather_offering(&[me as u64], blocks_of(me, p))
                .expect("not aborted");
            assert_eq!(rows.len(), p);
            let back = match offer {
                Offer::Kept(blocks) => {
                    assert!(!publishes, "a publishing transport kept the blocks");
                    blocks
                }
                Offer::Published => {
                    assert!(publishes, "published without saying so");
                    let got = comm.take_offered(exchange);
                    if exchange {
                        check_received(me, p, &got);
                        continue;
                    }
                    got
                }
            };
            assert_eq!(mine(&back), mine(&blocks_of(me, p)), "own blocks, back");
        }
    });
}

/// Blocks cut into segments of `(97 + src)` bytes and into segments of
/// 2 bytes: under MPI on one node, the first are pulled by their
/// receivers (`mpi/pull.rs`), the second have too many segments to list
/// in a mailbox and go as messages.
#[test]
fn an_exchange_into_lands_every_byte_in_its_region() {
    on_every_transport(|comm| {
        for cut in [None, Some(2)] {
            let mut buffer = vec![0xAAu8; landing_len(comm)];
            exchange_into_once(comm, cut, false, &mut buffer);
        }
    });
}

/// The same into memory that other processes map (`shared_memory.rs`):
/// under MPI on one node, the senders write it themselves.
#[cfg(all(feature = "mpi", target_os = "linux"))]
#[test]
fn an_exchange_into_lands_every_byte_in_mapped_memory() {
    on_every_transport(|comm| {
        for cut in [None, Some(2)] {
            let mut region = mapped_landing(comm);
            exchange_into_once(comm, cut, false, region.bytes_mut());
        }
    });
}

/// The same where the senders cannot map that memory (a kernel that
/// refuses `pidfd_getfd`): under MPI on one node they write it with
/// `process_vm_writev` instead, and every byte lands as before.
#[cfg(all(feature = "mpi", target_os = "linux"))]
#[test]
fn an_exchange_into_mapped_memory_lands_where_mappings_are_refused() {
    use crate::shared_memory::REFUSE_MAPS;
    use crate::transport::mpi::WRITTEN_BY_SYSCALL;
    use std::sync::atomic::Ordering::Relaxed;
    on_every_transport(|comm| {
        let before = WRITTEN_BY_SYSCALL.load(Relaxed);
        REFUSE_MAPS.store(true, Relaxed);
        let mut region = mapped_landing(comm);
        exchange_into_once(comm, None, false, region.bytes_mut());
        REFUSE_MAPS.store(false, Relaxed);
        // A processor that sends anything under MPI on one node pushes it
        // (every landing lies in mapped memory), so it wrote by syscall.
        let me = comm.pid();
        let sends = (0..comm.nprocs()).any(|q| q != me && block_len(me, q) > 0);
        if comm.capabilities().maps_memory && sends {
            assert!(
                WRITTEN_BY_SYSCALL.load(Relaxed) > before,
                "processor {me} pushed without process_vm_writev"
            );
        }
    });
}

/// `map_parts` of memory that other processes map: where the transport
/// gives addresses (MPI on one node), every processor writes a byte of
/// every other's part through them, and each finds the bytes there after
/// a collective; where it gives none, every processor agrees. Parts that
/// are not all mapped, or mappings refused, give none anywhere.
#[cfg(all(feature = "mpi", target_os = "linux"))]
#[test]
fn mapped_parts_are_written_through_the_addresses_given() {
    use crate::shared_memory::REFUSE_MAPS;
    use std::sync::atomic::Ordering::Relaxed;
    on_every_transport(|comm| {
        let (me, p) = (comm.pid(), comm.nprocs());
        let region = crate::shared_memory::Region::zeroed(p).expect("memfd_create");
        let part = (region.bytes().as_ptr(), p);
        let bases = comm.map_parts(part).expect("not aborted");
        let agreed = comm
            .allgather(&[u64::from(bases.is_some())])
            .expect("not aborted");
        assert!(
            agreed.iter().all(|&w| w == agreed[0]),
            "processors disagree"
        );
        // Under MPI on one node the ranks may map each other's memory (the
        // exchange tests above assume it too).
        let maps = comm.capabilities().maps_memory;
        assert!(bases.is_some() || !maps, "no addresses on one node");
        if let Some(bases) = bases {
            assert_eq!(bases.len(), p);
            assert_eq!(bases[me], part.0 as usize);
            for (q, &base) in bases.iter().enumerate().filter(|&(q, _)| q != me) {
                let at: *mut u8 = std::ptr::with_exposed_provenance_mut(base + me);
                // SAFETY: `base` maps processor q's p-byte region, of which
                // only this processor writes byte `me`, and q reads it only
                // after the all-gather below.
                unsafe { at.write(byte(me, q, 0)) };
            }
            comm.allgather(&[]).expect("not aborted");
            for (q, &b) in region.bytes().iter().enumerate() {
                let want = if q == me { 0 } else { byte(q, me, 0) };
                assert_eq!(b, want, "byte {q} of processor {me}'s part");
            }
        }
        // One processor's part on the heap: no addresses for anyone.
        let heap = vec![0u8; p];
        let part = if me == 0 {
            (heap.as_ptr(), p)
        } else {
            (region.bytes().as_ptr(), p)
        };
        assert!(comm.map_parts(part).expect("not aborted").is_none());
        REFUSE_MAPS.store(true, Relaxed);
        let refused = comm.map_parts((region.bytes().as_ptr(), p));
        REFUSE_MAPS.store(false, Relaxed);
        assert!(refused.expect("not aborted").is_none());
    });
}

/// Bytes of the landing buffer of `exchange_into_once`: what every other
/// processor sends this one, and 8 bytes of gap after each.
fn landing_len(comm: &dyn Comm) -> usize {
    let (me, p) = (comm.pid(), comm.nprocs());
    (0..p)
        .map(|q| if q == me { 8 } else { block_len(q, me) + 8 })
        .sum()
}

/// A landing buffer of [`landing_len`] bytes, all 0xAA, in memory that
/// other processes may map (`shared_memory.rs`).
#[cfg(all(feature = "mpi", target_os = "linux"))]
fn mapped_landing(comm: &dyn Comm) -> crate::shared_memory::Region {
    let len = landing_len(comm);
    let mut region = crate::shared_memory::Region::zeroed(len).expect("memfd_create");
    region.bytes_mut().fill(0xAA);
    region
}

/// Exchanges that repeat the one before them ([`Scatter::repeats`]),
/// into memory that other processes map and into memory they do not:
/// every byte lands each time (the landing is refilled between them).
/// Under MPI on one node, where every sender pushed in the first, the
/// repeats ask no landing lists again.
#[cfg(all(feature = "mpi", target_os = "linux"))]
#[test]
fn a_repeated_exchange_into_lands_every_byte_again() {
    use crate::transport::mpi::REPEATED;
    use std::sync::atomic::Ordering::Relaxed;
    on_every_transport(|comm| {
        for cut in [None, Some(2)] {
            let mut region = mapped_landing(comm);
            let before = REPEATED.load(Relaxed);
            for round in 0..4 {
                region.bytes_mut().fill(0xAA);
                // A repeat may write before its receiver arrives: the
                // refill must be over everywhere first.
                comm.allgather(&[]).expect("not aborted");
                exchange_into_once(comm, cut, round > 0, region.bytes_mut());
            }
            // Where every sender pushes, the three repeats reuse what the
            // first learned (with short segments the lists may not fit a
            // mailbox, and the exchanges go point to point instead).
            let repeated = REPEATED.load(Relaxed) - before;
            let pushes = comm.capabilities().maps_memory && comm.nprocs() > 1;
            if cut.is_none() {
                assert_eq!(repeated, if pushes { 3 } else { 0 }, "repeats");
            }
        }
        let mut buffer = vec![0xAAu8; landing_len(comm)];
        for round in 0..3 {
            buffer.fill(0xAA);
            comm.allgather(&[]).expect("not aborted");
            exchange_into_once(comm, None, round > 0, &mut buffer);
        }
    });
}

/// One exchange into `buffer` (of [`landing_len`] bytes, all 0xAA);
/// `repeats` as [`Scatter::repeats`].
fn exchange_into_once(comm: &mut dyn Comm, cut: Option<usize>, repeats: bool, buffer: &mut [u8]) {
    {
        let (me, p) = (comm.pid(), comm.nprocs());
        // One buffer, with a gap between senders' landings, each landing
        // cut into two pieces in reverse order of the buffer.
        let lens: Vec<usize> = (0..p)
            .map(|q| if q == me { 0 } else { block_len(q, me) })
            .collect();
        assert_eq!(buffer.len(), lens.iter().map(|l| l + 8).sum::<usize>());
        let base = buffer.as_mut_ptr();
        let mut into = Scatter {
            repeats,
            ..Scatter::default()
        };
        let mut at = 0;
        let mut starts = vec![0; p];
        for (q, &len) in lens.iter().enumerate() {
            starts[q] = at;
            let half = len / 2;
            // Both pieces lie inside `buffer`, which outlives the exchange.
            let second = (base.wrapping_add(at).cast_const(), half);
            let first = (base.wrapping_add(at + half).cast_const(), len - half);
            into.from(q, &[first, second]);
            at += len + 8;
        }
        let outgoing: Blocks = (0..p)
            .filter(|&q| q != me && block_len(me, q) > 0)
            .map(|q| (q, block_cut(me, q, cut.unwrap_or(97 + me))))
            .collect();
        // SAFETY: every piece lies in `buffer`, disjoint from the others,
        // untouched until the exchange returns; each sender's pieces add
        // up to what it sends here (`block_len`), and it sends nothing to
        // itself.
        unsafe { comm.exchange_into(&outgoing, into) }.expect("not aborted");
        for (q, &len) in lens.iter().enumerate() {
            let half = len / 2;
            let landed = &buffer[starts[q]..starts[q] + len];
            let (low, high) = landed.split_at(half);
            let sent: Vec<u8> = (0..len).map(|i| byte(q, me, i)).collect();
            assert_eq!(high, &sent[..len - half], "the first piece, from {q}");
            assert_eq!(low, &sent[len - half..], "the second piece, from {q}");
            let gap = &buffer[starts[q] + len..starts[q] + len + 8];
            assert!(gap.iter().all(|&b| b == 0xAA), "bytes outside the landing");
        }
    }
}

#[test]
fn a_split_gives_each_group_its_own_collectives() {
    on_every_transport(|comm| {
        let (me, p) = (comm.pid(), comm.nprocs());
        // Two colors, members ordered by descending parent pid.
        let choices: Vec<(u64, u64)> = (0..p).map(|q| ((q % 2) as u64, (p - q) as u64)).collect();
        let group = Group::of(&choices, me);
        let mut sub = comm.split(&group, 0).expect("not aborted");
        assert_eq!(sub.nprocs(), group.members.len());
        assert_eq!(sub.pid(), group.me);
        let rows = sub.allgather(&[me as u64]).expect("not aborted");
        let parents: Vec<usize> = rows.iter().map(|&r| r as usize).collect();
        assert_eq!(parents, group.members);
        let got = sub
            .exchange(blocks_of(sub.pid(), sub.nprocs()), None)
            .expect("not aborted");
        for (q, segments) in &got {
            assert_eq!(segments.concat().len(), block_len(*q, sub.pid()));
        }
        drop(sub);
        // The parent still works after the group is done.
        let rows = comm.allgather(&[1]).expect("not aborted");
        assert_eq!(rows.len(), p);
    });
}

#[test]
fn capabilities_are_consistent() {
    on_every_transport(|comm| {
        let caps = comm.capabilities();
        assert!(
            !caps.shares_memory || caps.one_node,
            "memory shared across nodes"
        );
        assert!(
            !caps.maps_memory || (caps.one_node && caps.scatter_receive),
            "memory mapped by peers, but not on one node or not written in place"
        );
        // Every processor sees the same capabilities.
        let row = [
            u64::from(caps.shares_memory),
            u64::from(caps.one_node),
            u64::from(caps.maps_memory),
        ];
        let rows = comm.allgather(&row).expect("not aborted");
        assert!(rows.chunks(3).all(|r| r == row));
    });
}
