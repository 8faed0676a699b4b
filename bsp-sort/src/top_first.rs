//! The top digit first: one distributed counting-sort pass on the most
//! significant digit, then a local LSD radix sort of every bucket.
//!
//! An LSD radix sort moves every key through main memory once per digit.
//! After one stable counting sort on the top digit, every key is on its
//! final processor, inside its bucket (the keys that share the top digit),
//! and the buckets are in order; what is left is to sort each bucket by
//! the lower digits, which is local work on a piece small enough to stay in
//! the cache. Stability is kept: the counting sort keeps the input order
//! within a bucket and the local passes are stable.
//!
//! A bucket that straddles a processor boundary is the exception: its parts
//! on different processors must be sorted together. Its first processor
//! (the leader) gathers it, sorts it and sends the parts back: two more
//! supersteps with h the size of the straddling buckets. The automatic
//! choice takes this route only when the top digit splits the keys evenly
//! (no bucket above four times the average or half a processor's share),
//! so that this stays a small correction.

use bsp_core::expert::prefetch;
use bsp_core::{Coarray, Ctx};
use bytemuck::Pod;

use crate::counting_sort::Engine;
use crate::digit_pass::{plan, DigitPass};

/// The passes of a top-first sort: the top digit, and the local passes
/// over the varying bits below it (least significant first).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TopPlan {
    pub(crate) top: DigitPass,
    pub(crate) local: Vec<DigitPass>,
}

/// The top-first passes for the `varying` key bits: a top digit of
/// `top_bits` (fewer if fewer bits vary), local digits of at most
/// `local_bits`. `None` when no bits vary.
pub(crate) fn top_plan(varying: u64, top_bits: u32, local_bits: u32) -> Option<TopPlan> {
    if varying == 0 {
        return None;
    }
    let hi = 64 - varying.leading_zeros();
    let lo = varying.trailing_zeros();
    let bits = top_bits.min(hi - lo);
    let shift = hi - bits;
    let below = varying & ((1u64 << shift) - 1);
    Some(TopPlan {
        top: DigitPass { shift, bits },
        local: plan(below, local_bits),
    })
}

/// Global position ranges of the buckets: bucket d is
/// `starts[d]..starts[d + 1]` (the last ends at `total`).
fn bucket_end(starts: &[u64], d: usize, total: usize) -> usize {
    starts.get(d + 1).map_or(total, |&e| e as usize)
}

/// Whether the buckets (from the top digit's counts) are even enough for
/// the automatic choice: none larger than four times the average, nor than
/// half a processor's share.
pub(crate) fn balanced(starts: &[u64], total: usize, p: usize) -> bool {
    let limit = (4 * total / starts.len().max(1)).min(total / p / 2);
    (0..starts.len()).all(|d| bucket_end(starts, d, total) - starts[d] as usize <= limit)
}

/// A straddling bucket: its global range and its leader.
pub(crate) struct Straddler {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) leader: usize,
    /// Where it lies in the leader's gather area.
    pub(crate) at: usize,
    /// Its top digit.
    pub(crate) digit: usize,
}

impl Straddler {
    /// The global positions of its part on the processor that holds
    /// `lo..hi`, or `None` where it has none.
    pub(crate) fn part_in(&self, lo: usize, hi: usize) -> Option<std::ops::Range<usize>> {
        let (a, b) = (self.start.max(lo), self.end.min(hi));
        (a < b).then_some(a..b)
    }
}

/// Sorts the keys of `seg` stably by the digits of `passes` (least
/// significant first), with `tmp` as scratch: counts every digit in one
/// read, then one scatter per digit that varies within the segment.
pub(crate) fn sort_segment<T: Pod>(
    seg: &mut [T],
    tmp: &mut Vec<T>,
    counts: &mut Vec<usize>,
    passes: &[DigitPass],
    radix: impl Fn(&T) -> u64,
) {
    let n = seg.len();
    if n <= 1 || passes.is_empty() {
        return;
    }
    if tmp.len() < n {
        tmp.resize(n, seg[0]);
    }
    let tmp = &mut tmp[..n];
    let mut bases = Vec::with_capacity(passes.len() + 1);
    bases.push(0);
    for pass in passes {
        bases.push(bases.last().unwrap() + (1usize << pass.bits));
    }
    counts.clear();
    counts.resize(*bases.last().unwrap(), 0);
    // Every pass's digits in one read of the segment, three passes at a
    // time (more than three passes read it again, from the cache).
    for (group, first) in passes.chunks(3).zip((0..).step_by(3)) {
        let base = |k: usize| bases[first + k];
        match *group {
            [a] => count_digits(seg, counts, [a], [base(0)], &radix),
            [a, b] => count_digits(seg, counts, [a, b], [base(0), base(1)], &radix),
            [a, b, c] => count_digits(seg, counts, [a, b, c], [base(0), base(1), base(2)], &radix),
            _ => unreachable!("chunks(3) yields one to three passes"),
        }
    }
    let mut in_tmp = false;
    for (k, pass) in passes.iter().enumerate() {
        let hist = &mut counts[bases[k]..bases[k + 1]];
        if hist.contains(&n) {
            continue; // every key has the same digit here
        }
        let mut at = 0;
        for c in hist.iter_mut() {
            let start = at;
            at += *c;
            *c = start;
        }
        let (src, dst): (&[T], &mut [T]) = if in_tmp {
            (&*tmp, &mut *seg)
        } else {
            (&*seg, &mut *tmp)
        };
        scatter_pass(src, dst, hist, *pass, &radix);
        in_tmp = !in_tmp;
    }
    if in_tmp {
        seg.copy_from_slice(tmp);
    }
}

/// One local pass: every element of `src` to the next slot of its digit
/// in `dst` (`hist`: each digit's next slot).
///
/// Elements of 8 bytes move as one word where both slices are aligned
/// for it (as a vector's buffer is): a record such as `(u32, u32)` is
/// otherwise copied field by field, two stores where one does, and a
/// pass whose stores miss the L1 (2^11 digits' open lines do not fit
/// in it) is bound by its stores.
fn scatter_pass<T: Pod>(
    src: &[T],
    dst: &mut [T],
    hist: &mut [usize],
    pass: DigitPass,
    radix: &impl Fn(&T) -> u64,
) {
    let (shift, mask) = (pass.shift, (1u64 << pass.bits) - 1);
    if std::mem::size_of::<T>() == 8 {
        let words = bytemuck::try_cast_slice::<T, u64>(src);
        if let (Ok(src), Ok(dst)) = (words, bytemuck::try_cast_slice_mut::<T, u64>(dst)) {
            // Written out, not shared with the loop below through a
            // generic helper taking the digit as a closure: that helper
            // made the reused sort of 2^26 pairs 0.264–0.283 s against
            // 0.254–0.257 (AMD-2c, BENCHMARKS.md section 13f). One loop
            // storing through `whole::copy` (as the plain-store scatters
            // do) took 0.273–0.277 s against 0.264–0.269 (section 13g):
            // here the digit comes from the word already loaded.
            for &w in src {
                let x: T = bytemuck::cast(w);
                let slot = &mut hist[((radix(&x) >> shift) & mask) as usize];
                dst[*slot] = w;
                *slot += 1;
            }
            return;
        }
    }
    for x in src {
        let slot = &mut hist[((radix(x) >> shift) & mask) as usize];
        dst[*slot] = *x;
        *slot += 1;
    }
}

/// Counts the digits of `N` passes in one read of `seg`, pass k's counts
/// from `bases[k]` on, with the loop over the passes unrolled. The uniform
/// sort of 2^26 keys at p = 2 (buckets of 2^15 keys, two local passes)
/// took 0.36–0.37 s against 0.39–0.40 s with a loop over a slice of passes
/// (bench_sort, reused sorter, alternating builds; BENCHMARKS.md section
/// 4c as of commit d743920, in git, has the whole sort before and after).
fn count_digits<T, const N: usize>(
    seg: &[T],
    counts: &mut [usize],
    passes: [DigitPass; N],
    bases: [usize; N],
    radix: &impl Fn(&T) -> u64,
) {
    let shifts = passes.map(|pass| pass.shift);
    let masks = passes.map(|pass| (1u64 << pass.bits) - 1);
    // Nested loops: walking the pieces through `.flatten()` cost 3.1 ns a
    // pair for the whole local sort of 2^15-pair buckets, against 2.9.
    for piece in prefetch::lines(seg) {
        for x in piece {
            let r = radix(x);
            for k in 0..N {
                counts[bases[k] + ((r >> shifts[k]) & masks[k]) as usize] += 1;
            }
        }
    }
}

impl<T: Pod + Send> Engine<T> {
    /// After the top digit's counting-sort pass (the keys are in the
    /// engine's current sequence, in bucket order): sorts every bucket by
    /// the `local` passes; straddling buckets are gathered by their leader,
    /// sorted and sent back (two supersteps).
    ///
    /// Where `out` is given (this processor's local length), the sorted
    /// keys end there too: each bucket is copied as soon as it is sorted,
    /// from the cache, and the straddling ones at the end. Against one
    /// copy of the whole sequence afterwards, which reads it back from
    /// memory, a reused sort of 2^26 keys into a slice took 0.223–0.236 s
    /// against 0.227–0.241, and of pairs 0.279–0.285 against 0.284–0.297
    /// (five alternated rounds). Writing each bucket's last local pass
    /// straight into `out` took 0.27–0.36 s, its scattered stores missing
    /// the cache, and streaming each bucket out with non-temporal stores
    /// 0.25–0.31 s through a line writer, level with this copy as a bulk
    /// copy of whole lines (AMD-2c, BENCHMARKS.md section 13g).
    pub(crate) fn sort_buckets(
        &self,
        ctx: &mut Ctx,
        local: &[DigitPass],
        radix: impl Fn(&T) -> u64 + Copy,
        mut out: Option<&mut [T]>,
    ) {
        let me = ctx.pid();
        let total = self.total_len();
        let starts = self.global_start();
        let (lo, hi) = (self.bounds[me], self.bounds[me + 1]);
        let (straddlers, led) = self.straddlers();
        // Local sorts of the buckets (or parts of them) that lie here and
        // do not straddle, in the superstep of the top digit's direct
        // delivery.
        ctx.label("sort: move keys, local buckets");
        let mut tmp = Vec::new();
        let mut counts = Vec::new();
        {
            let keys = ctx.local_mut(&self.cur);
            let mut next_straddler = straddlers.iter().peekable();
            for d in 0..starts.len() {
                let (start, end) = (starts[d] as usize, bucket_end(starts, d, total));
                if end <= lo || start >= hi || end == start {
                    continue;
                }
                while next_straddler.peek().is_some_and(|s| s.start < start) {
                    next_straddler.next();
                }
                if next_straddler.peek().is_some_and(|s| s.start == start) {
                    continue;
                }
                let range = start - lo..end - lo;
                sort_segment(
                    &mut keys[range.clone()],
                    &mut tmp,
                    &mut counts,
                    local,
                    radix,
                );
                if let Some(out) = out.as_deref_mut() {
                    out[range.clone()].copy_from_slice(&keys[range]);
                }
            }
        }
        // Straddling buckets: gather at the leader, sort, send back.
        let area = ctx.coarray::<T>(led[me]);
        let cur = self.cur;
        for s in &straddlers {
            if let Some(part) = s.part_in(lo, hi) {
                let at = s.at + (part.start - s.start);
                ctx.put_from(s.leader, &area, at, &cur, part.start - lo..part.end - lo);
            }
        }
        ctx.sync();
        ctx.label("sort: straddling buckets");
        self.sort_straddlers(ctx, &straddlers, area, local, radix);
        if let Some(out) = out {
            let keys = ctx.local(&cur);
            for part in straddlers.iter().filter_map(|s| s.part_in(lo, hi)) {
                let here = part.start - lo..part.end - lo;
                out[here.clone()].copy_from_slice(&keys[here]);
            }
        }
    }
}

impl<T: Pod + Send> Engine<T> {
    /// The buckets that straddle processor boundaries, the same list on
    /// every processor, and how many keys each processor gathers as the
    /// leader of some.
    pub(crate) fn straddlers(&self) -> (Vec<Straddler>, Vec<usize>) {
        let (starts, total) = (self.global_start(), self.total_len());
        let mut straddlers = Vec::new();
        let mut led = vec![0usize; self.bounds.len() - 1];
        for d in 0..starts.len() {
            let (start, end) = (starts[d] as usize, bucket_end(starts, d, total));
            if end > start && self.owner(start) != self.owner(end - 1) {
                let leader = self.owner(start);
                straddlers.push(Straddler {
                    start,
                    end,
                    leader,
                    at: led[leader],
                    digit: d,
                });
                led[leader] += end - start;
            }
        }
        (straddlers, led)
    }

    /// The processor that holds global position `g`.
    fn owner(&self, g: usize) -> usize {
        self.bounds.partition_point(|&b| b <= g) - 1
    }

    /// After the straddling buckets' parts were gathered in their leaders'
    /// `area`: each leader sorts its buckets there and sends the parts
    /// back to the current sequences of the processors that hold them
    /// (one superstep); releases the area.
    pub(crate) fn sort_straddlers(
        &self,
        ctx: &mut Ctx,
        straddlers: &[Straddler],
        area: Coarray<T>,
        local: &[DigitPass],
        radix: impl Fn(&T) -> u64 + Copy,
    ) {
        let me = ctx.pid();
        let bounds = &self.bounds;
        let (mut tmp, mut counts) = (Vec::new(), Vec::new());
        {
            let gathered = ctx.local_mut(&area);
            for s in straddlers.iter().filter(|s| s.leader == me) {
                let seg = &mut gathered[s.at..s.at + (s.end - s.start)];
                sort_segment(seg, &mut tmp, &mut counts, local, radix);
            }
        }
        for s in straddlers.iter().filter(|s| s.leader == me) {
            for q in self.owner(s.start)..=self.owner(s.end - 1) {
                let (a, b) = (s.start.max(bounds[q]), s.end.min(bounds[q + 1]));
                let part = s.at + (a - s.start)..s.at + (b - s.start);
                ctx.put_from(q, &self.cur, a - bounds[q], &area, part);
            }
        }
        ctx.sync();
        ctx.discard(area);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segment_sorts_stably() {
        // One, two and three passes (one count), four (two counts); the
        // 8-byte records moved as words, and (4 bytes off a word's
        // alignment) field by field.
        for (varying, passes) in [(0x1f, 1), (0x3ff, 2), (0x7fff, 3), (0xfffff, 4)] {
            let passes_used = plan(varying, 5);
            assert_eq!(passes_used.len(), passes);
            let recs: Vec<[u32; 2]> = (0..500u32)
                .map(|i| [i.wrapping_mul(2_654_435_761) & varying as u32, i])
                .collect();
            let mut want = recs.clone();
            want.sort_by_key(|r| r[0]);
            for skew in [0, 1] {
                let mut words = vec![0u32; 2 * recs.len() + 2];
                let seg: &mut [[u32; 2]] =
                    bytemuck::cast_slice_mut(&mut words[skew..skew + 2 * recs.len()]);
                seg.copy_from_slice(&recs);
                let mut tmp = Vec::new();
                sort_segment(seg, &mut tmp, &mut Vec::new(), &passes_used, |r| {
                    u64::from(r[0])
                });
                assert_eq!(seg, &want[..], "{passes} passes, skew {skew}");
            }
        }
    }

    #[test]
    fn the_top_digit_takes_the_highest_varying_bits() {
        let tp = top_plan(0x7fff_ffff, 10, 11).unwrap();
        assert_eq!(
            tp.top,
            DigitPass {
                shift: 21,
                bits: 10
            }
        );
        let widths: Vec<u32> = tp.local.iter().map(|d| d.bits).collect();
        assert_eq!(widths, [11, 10]);
        assert_eq!(
            top_plan(0b1100, 10, 11).unwrap().top,
            DigitPass { shift: 2, bits: 2 }
        );
        assert!(top_plan(0b1100, 10, 11).unwrap().local.is_empty());
        assert!(top_plan(0, 8, 8).is_none());
    }
}
