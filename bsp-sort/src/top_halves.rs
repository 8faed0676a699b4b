//! The top digit's pass in two halves, for a sort whose receive buffer
//! has never been written: half the fresh memory.
//!
//! A counting-sort pass moves every key out of the buffer it occupies, so
//! it needs a second buffer as large as the data; the first time that
//! buffer is written, every page of it is mapped, which costs what the
//! whole rest of the sort does on a VM whose host takes freed memory back
//! (BENCHMARKS.md sections 13i and 13k). Here the pass runs in two
//! supersteps instead. In the first, every processor sends the keys of
//! the front of its sequence (a little over half) into the receive
//! buffer, which is filled only that far. In the second, it sends the
//! rest into the fronts of the sequences, which every processor has read
//! by then, while reading those keys where they are
//! ([`put_direct_keeping`](bsp_core::expert::DirectPut::put_direct_keeping)).
//!
//! Each bucket (the keys of one top digit) then lies in pieces: from each
//! source processor, its front's keys in the receive buffer and its rest
//! in the sequence. Reading them in source order, front before rest, gives
//! the keys in their input order, so the sort stays stable. Each bucket is
//! gathered from its pieces into the cache, sorted there by the lower
//! digits, and copied to its place in the sequence by non-temporal
//! stores ([`stream::copy`]: the place is not in the cache, and a plain
//! copy read each of its lines first, 24–28 ms a processor for 2^25
//! pairs against 12–14; BENCHMARKS.md section 13m). The buckets go from
//! the last to the first: the pieces in the sequence are laid out bucket
//! by bucket from its start, so the pieces of a bucket and of those
//! before it end no later than where that bucket's sorted keys begin,
//! and writing a bucket overwrites only pieces already read.

use bsp_algos::all_gather;
use bsp_core::expert::{stream, DirectPiece, DirectPut};
use bsp_core::{Coarray, Ctx};
use bytemuck::Pod;

use crate::counting_sort::{count, scatter, Engine};
use crate::digit_pass::DigitPass;
use crate::top_first::sort_segment;

/// The keys a processor of `len` keys sends in the first superstep: a
/// sixty-fourth more than half, so that what any processor receives in
/// the second fits in the front it has read, unless the keys' order is
/// far from random.
pub(crate) fn front_len(len: usize) -> usize {
    (len / 2 + len / 64).min(len)
}

/// The counts of `r` digits over all of `keys` and over their first
/// [`front_len`] only, `(all, front)`, in one read: the front's keys are
/// counted first and their counts carried on into the rest's.
///
/// Inlined, as [`count`] is, so that a `digit` that folds something over
/// the keys keeps its fold and its constants in registers.
#[inline(always)]
pub(crate) fn count_with_front<T>(
    keys: &[T],
    r: usize,
    mut digit: impl FnMut(&T) -> usize,
) -> (Vec<u64>, Vec<u64>) {
    let (head, tail) = keys.split_at(front_len(keys.len()));
    let mut front = vec![0; r];
    count(head, &mut front, &mut digit);
    let mut all = front.clone();
    count(tail, &mut all, &mut digit);
    (all, front)
}

/// One piece of a bucket on its receiver: `len` keys from `offset` on, in
/// the receive buffer (`in_front` keys, sent in the first superstep) or
/// in the sequence itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Piece {
    digit: usize,
    in_front: bool,
    offset: usize,
    len: usize,
}

/// Who sends what where: every processor computes the same plan from the
/// counts of all.
struct Plan {
    /// This processor's pieces of each superstep, digit by digit.
    send: [Vec<DirectPiece>; 2],
    /// The first of each digit's pieces in `send` (where it has keys).
    first_piece: [Vec<usize>; 2],
    /// The pieces this processor receives, in global order.
    receive: Vec<Piece>,
    /// Keys this processor receives in the first superstep.
    fresh: usize,
}

/// The plan for `r` digits, from every processor's counts (`rows[q]`:
/// processor q's count of each digit in its front, then in all its
/// keys), with the processors' global positions `bounds`; `None` where
/// some processor would receive more keys in the second superstep than
/// its front holds.
fn plan(rows: &[Vec<u64>], r: usize, bounds: &[usize], me: usize) -> Option<Plan> {
    let p = bounds.len() - 1;
    let mut plan = Plan {
        send: [Vec::new(), Vec::new()],
        first_piece: [vec![0; r], vec![0; r]],
        receive: Vec::new(),
        fresh: 0,
    };
    // Keys each processor has received so far, per superstep.
    let mut filled = vec![[0usize; 2]; p];
    let (mut g, mut dst) = (0usize, 0usize);
    for d in 0..r {
        for (q, row) in rows.iter().enumerate() {
            let front = row[d] as usize;
            for (half, count) in [front, row[r + d] as usize - front].into_iter().enumerate() {
                if q == me && count > 0 {
                    plan.first_piece[half][d] = plan.send[half].len();
                }
                let mut left = count;
                while left > 0 {
                    while bounds[dst + 1] <= g {
                        dst += 1;
                    }
                    let len = left.min(bounds[dst + 1] - g);
                    let offset = filled[dst][half];
                    if q == me {
                        plan.send[half].push(DirectPiece { dst, offset, len });
                    }
                    if dst == me {
                        plan.receive.push(Piece {
                            digit: d,
                            in_front: half == 0,
                            offset,
                            len,
                        });
                    }
                    filled[dst][half] += len;
                    (g, left) = (g + len, left - len);
                }
            }
        }
    }
    let fits = (0..p).all(|j| filled[j][1] <= front_len(bounds[j + 1] - bounds[j]));
    plan.fresh = filled[me][0];
    fits.then_some(plan)
}

impl<T: Pod + Send> Engine<T> {
    /// The top digit's pass in two halves (see the module's text), after
    /// [`rank`](Engine::rank) or [`rank_counted`](Engine::rank_counted)
    /// of the current sequence by `digit`, then the local sorts of the
    /// buckets by the `local` passes: the sorted keys end in the current
    /// sequence. `front` holds this processor's count of each digit among
    /// its first [`front_len`] keys. Collective; returns false, having
    /// moved nothing, where the halves do not fit (the same answer on
    /// every processor).
    ///
    /// One superstep more than the pass in one (an all-gather of 2R words
    /// per processor), and a copy of every bucket from the cache, which
    /// writes its place without reading it.
    pub(crate) fn top_in_halves(
        &mut self,
        ctx: &mut Ctx,
        front: &[u64],
        digit: impl Fn(&T) -> usize + Copy,
        local: &[DigitPass],
        radix: impl Fn(&T) -> u64 + Copy,
    ) -> bool {
        let me = ctx.pid();
        let r = self.counts.len();
        ctx.label("sort: counts of the halves");
        let row: Vec<u64> = front.iter().chain(&self.counts).copied().collect();
        let rows = all_gather(ctx, &row);
        ctx.label("sort: plan the halves");
        let Some(plan) = plan(&rows, r, &self.bounds, me) else {
            return false;
        };
        let len = self.local_len(me);
        let split = front_len(len);
        let rest: Vec<u64> = self.counts.iter().zip(front).map(|(c, f)| c - f).collect();
        self.populate_next(ctx, plan.fresh);
        let cur = self.cur;
        // Each label names the superstep its put wrote in (a direct put
        // writes after its first sync).
        ctx.put_direct(&self.next, &plan.send[0], |ctx, slices| {
            let keys = &ctx.local(&cur)[..split];
            scatter(keys, slices, &plan.first_piece[0], front, digit);
        });
        ctx.label("sort: move the fronts");
        ctx.put_direct_keeping(&cur, &plan.send[1], split..len, |_, keys, slices| {
            scatter(keys, slices, &plan.first_piece[1], &rest, digit);
        });
        ctx.label("sort: move the rest, send the straddlers");
        self.next_untouched = false;
        self.sort_pieces(ctx, &plan.receive, local, radix);
        true
    }

    /// Sorts every bucket from its pieces `receive` (in global order) into
    /// its place in the current sequence; the straddling buckets through
    /// their leaders, as [`sort_buckets`](Engine::sort_buckets) does.
    fn sort_pieces(
        &self,
        ctx: &mut Ctx,
        receive: &[Piece],
        local: &[DigitPass],
        radix: impl Fn(&T) -> u64 + Copy,
    ) {
        let me = ctx.pid();
        let (lo, hi) = (self.bounds[me], self.bounds[me + 1]);
        let (straddlers, led) = self.straddlers();
        let (cur, next) = (self.cur, self.next);
        let source = |piece: &Piece| -> Coarray<T> {
            if piece.in_front {
                next
            } else {
                cur
            }
        };
        // The straddling buckets' parts go to their leaders first: the
        // local buckets' sorted keys may overwrite their pieces. (In the
        // superstep of the rest's put, whose label says so.)
        let area = ctx.coarray::<T>(led[me]);
        for s in &straddlers {
            let Some(part) = s.part_in(lo, hi) else {
                continue;
            };
            let mut at = s.at + (part.start - s.start);
            for piece in receive.iter().filter(|piece| piece.digit == s.digit) {
                let range = piece.offset..piece.offset + piece.len;
                ctx.put_from(s.leader, &area, at, &source(piece), range);
                at += piece.len;
            }
        }
        ctx.sync();
        ctx.label("sort: local buckets");
        let starts = self.global_start();
        let (mut gathered, mut tmp, mut counts) = (Vec::new(), Vec::new(), Vec::new());
        let mut end = receive.len();
        while end > 0 {
            let d = receive[end - 1].digit;
            let begin = receive[..end].partition_point(|piece| piece.digit < d);
            let pieces = &receive[begin..end];
            end = begin;
            if straddlers.iter().any(|s| s.digit == d) {
                continue;
            }
            gathered.clear();
            for piece in pieces {
                let keys = ctx.local(&source(piece));
                gathered.extend_from_slice(&keys[piece.offset..piece.offset + piece.len]);
            }
            sort_segment(&mut gathered, &mut tmp, &mut counts, local, radix);
            let at = starts[d] as usize - lo;
            // Not read for ownership: the place is not in the cache.
            stream::copy(&mut ctx.local_mut(&cur)[at..at + gathered.len()], &gathered);
        }
        self.sort_straddlers(ctx, &straddlers, area, local, radix);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts rows for `p` processors and `r` digits from each
    /// processor's digits, in order.
    fn rows(digits: &[Vec<usize>], r: usize) -> Vec<Vec<u64>> {
        let mut rows = Vec::new();
        for keys in digits {
            let mut front = vec![0u64; r];
            let mut all = vec![0u64; r];
            for (i, &d) in keys.iter().enumerate() {
                all[d] += 1;
                if i < front_len(keys.len()) {
                    front[d] += 1;
                }
            }
            front.extend(all);
            rows.push(front);
        }
        rows
    }

    #[test]
    fn the_plan_gives_every_key_a_place_once_in_input_order() {
        // Two processors, 64 digits spread at random, so that each
        // processor's front and rest both send to both (with few digits a
        // processor's share of rests could pass its front: a bucket's
        // keys from one source's rest may all land on one processor).
        let r = 64;
        let mixed = |i: usize, salt: usize| ((i.wrapping_mul(2_654_435_761) >> 9) ^ salt) % r;
        let digits = vec![
            (0..4000).map(|i| mixed(i, 0)).collect::<Vec<usize>>(),
            (0..3300).map(|i| mixed(i, 1)).collect(),
        ];
        let bounds = [0, 4000, 7300];
        let table = rows(&digits, r);
        let plans: Vec<Plan> = (0..2)
            .map(|me| plan(&table, r, &bounds, me).unwrap())
            .collect();
        for (me, plan) in plans.iter().enumerate() {
            // What it receives fills its front buffer from 0 and its
            // sequence's front from 0, without gaps, within the front.
            let len = bounds[me + 1] - bounds[me];
            let in_front: usize = plan
                .receive
                .iter()
                .filter(|p| p.in_front)
                .map(|p| p.len)
                .sum();
            let in_rest: usize = plan
                .receive
                .iter()
                .filter(|p| !p.in_front)
                .map(|p| p.len)
                .sum();
            assert_eq!(in_front + in_rest, len);
            assert_eq!(plan.fresh, in_front);
            assert!(in_rest <= front_len(len));
        }
        // The senders' pieces agree with the receivers' pieces.
        for half in 0..2 {
            let mut sent: Vec<(usize, usize, usize)> = plans
                .iter()
                .flat_map(|plan| plan.send[half].iter().map(|p| (p.dst, p.offset, p.len)))
                .collect();
            let mut got: Vec<(usize, usize, usize)> = plans
                .iter()
                .enumerate()
                .flat_map(|(me, plan)| {
                    plan.receive
                        .iter()
                        .filter(|p| p.in_front == (half == 0))
                        .map(move |p| (me, p.offset, p.len))
                })
                .collect();
            sent.sort_unstable();
            got.sort_unstable();
            assert_eq!(sent, got);
        }
    }

    #[test]
    fn a_plan_that_does_not_fit_is_refused_everywhere() {
        // Every front holds only digit 1 and every rest only digit 0:
        // processor 0 would receive all 36 keys of digit 0 in the second
        // superstep, more than its front of 18.
        let digits = vec![
            (0..36)
                .map(|i| usize::from(i < front_len(36)))
                .collect::<Vec<usize>>(),
            (0..36).map(|i| usize::from(i < front_len(36))).collect(),
        ];
        let table = rows(&digits, 2);
        assert!((0..2).all(|me| plan(&table, 2, &[0, 36, 72], me).is_none()));
    }
}
