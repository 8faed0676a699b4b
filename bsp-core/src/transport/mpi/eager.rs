//! The eager padded transpose (`BSP_MPI_TRANSPOSE=alltoall`): every block
//! in a slot of an agreed size in one `MPI_Alltoall`, remainders in one
//! counted exchange whose lengths every rank already knows
//! ([`MpiComm::exchange_known`]).

use mpi::traits::*;

use super::{MpiComm, EAGER_TOTAL, MIN_SLOT, SLOT_HEADER};
use crate::segments::{copy_prefix, segments_len, slice_segments, Segments};

impl MpiComm {
    pub(super) fn eager_transpose(&mut self, mut blocks: Vec<Segments>) -> Vec<Segments> {
        let p = self.nprocs;
        let me = self.pid;
        let slot = self.slot;
        let inline = slot - SLOT_HEADER;
        // The block to this rank stays here, uncopied; MPI sees it as empty.
        let own = std::mem::take(&mut blocks[me]);
        let lens: Vec<usize> = blocks.iter().map(|b| segments_len(b)).collect();
        let local_max = lens.iter().copied().max().unwrap_or(0);

        let mut send = self.world.pool.take(p * slot);
        for (k, block) in blocks.iter().enumerate() {
            let s = &mut send[k * slot..(k + 1) * slot];
            s[0..8].copy_from_slice(&(lens[k] as u64).to_ne_bytes());
            s[8..16].copy_from_slice(&(local_max as u64).to_ne_bytes());
            copy_prefix(
                block,
                &mut s[SLOT_HEADER..SLOT_HEADER + lens[k].min(inline)],
            );
        }
        let mut recv = self.world.pool.take(p * slot);
        self.comm().all_to_all_into(&send[..], &mut recv[..]);
        self.world.pool.give(send);

        let word = |buf: &[u8], at: usize| -> usize {
            u64::from_ne_bytes(buf[at..at + 8].try_into().expect("8 bytes")) as usize
        };
        let in_lens: Vec<usize> = (0..p).map(|k| word(&recv, k * slot)).collect();
        let global_max = (0..p).map(|k| word(&recv, k * slot + 8)).max().unwrap_or(0);
        let recv = self.world.pool.share(recv);
        let mut out: Vec<Segments> = (0..p)
            .map(|k| {
                let n = in_lens[k].min(inline);
                if n == 0 {
                    Vec::new()
                } else {
                    let start = k * slot + SLOT_HEADER;
                    vec![recv.slice(start..start + n)]
                }
            })
            .collect();

        if global_max > inline {
            // Some block did not fit, and every rank knows it: the
            // remainders follow, with lengths every rank can compute.
            let mut rest = vec![Segments::new(); p];
            for (k, block) in blocks.iter().enumerate().filter(|&(k, _)| lens[k] > inline) {
                slice_segments(block, inline, lens[k] - inline, &mut rest[k]);
            }
            drop(blocks);
            let rest_lens: Vec<u64> = in_lens
                .iter()
                .map(|&len| len.saturating_sub(inline) as u64)
                .collect();
            for (block, tail) in out.iter_mut().zip(self.exchange_known(&rest, &rest_lens)) {
                block.extend(tail);
            }
        }

        out[me] = own;
        // Every rank saw the same `global_max`, so every rank picks the same slot.
        let cap = (EAGER_TOTAL / p).max(MIN_SLOT);
        // An eighth of slack, so that the two stages of a two-phase route,
        // whose largest blocks differ by a few bytes, share one slot size.
        self.slot = (global_max + global_max / 8 + SLOT_HEADER)
            .next_multiple_of(64)
            .clamp(MIN_SLOT, cap);
        out
    }
}
