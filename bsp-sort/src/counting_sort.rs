//! The counting sort pass with transposed prefix sums (Bader, Helman and
//! JáJá 1995, Sect. 4.1 and Appendix C), and its reusable public form
//! [`CountingSort`].
//!
//! The six steps, for digits in `0..R` and processor i:
//!
//! 1. count the local keys of every digit: `I[i][d]`;
//! 2. transpose the count matrix: processor b receives the columns of its
//!    block of about R/p digits from every processor;
//! 3. each processor computes, for the digits of its block, the exclusive
//!    prefix sums over processors and the digit totals;
//! 4. inverse transpose of the prefixes interleaved with the totals (block
//!    2R/p): processor i now knows, for every digit, how many keys of that
//!    digit lie on processors before it, and the digit's global total;
//! 5. local ranks: the global start of digit d is the sum of the totals of
//!    the smaller digits, and processor i's keys of digit d take the
//!    positions after the prefix, in their local order (stable);
//! 6. one h-relation moves every key to its rank, the output being
//!    congruent with the input (processor j holds the same number of keys as
//!    before).

use bsp_core::expert::line_writer::LineWriter;
use bsp_core::expert::{pages, prefetch, whole, DirectPiece, DirectPut};
use bsp_core::{Coarray, Ctx};
use bytemuck::Pod;

use crate::cache_size;
use crate::gather_area::GatherArea;
use crate::merge_runs::merge_runs;

/// How step 6 of a counting-sort pass moves the keys to their ranks.
///
/// Each processor's keys of one digit occupy a contiguous range of global
/// positions; cut at processor boundaries, these are the pass's pieces.
/// Both deliveries give the same result.
///
/// # Examples
///
/// ```
/// use bsp_sort::RadixOptions;
/// use bsp_sort::expert::Delivery;
///
/// let options = RadixOptions { delivery: Delivery::Staged, ..RadixOptions::default() };
/// assert_eq!(options.digit_bits, None);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Delivery {
    /// `Direct` when the pieces are long (on average at least 32 keys per
    /// processor and digit), `Staged` otherwise.
    #[default]
    Auto,
    /// One [`put_direct`](bsp_core::expert::DirectPut::put_direct) whose pieces are the
    /// keys' final positions: on threads every key is written once, in
    /// place; each piece costs a 16-byte claim (about R + p per processor
    /// and pass). Best for R well below n/p.
    Direct,
    /// The keys for one destination travel as one put; a small extra
    /// superstep exchanges the p × p send counts so that each sender knows
    /// where its block lands, and the receiver merges the p digit-sorted
    /// blocks. Best when R is close to n/p, as in NAS IS.
    Staged,
}

/// Where a pass reads its keys.
#[derive(Clone, Copy)]
pub(crate) enum Source<'a, T> {
    /// A caller's slice (the first pass).
    Slice(&'a [T]),
    /// The engine's current local sequence (the result of the previous pass).
    Current,
}

/// Registered state shared by every pass: the coarrays the keys move
/// through, the transpose areas and the partition of global positions over
/// processors.
///
/// A pass reads the local sequence (a caller's slice or `cur`) once to
/// count its digits and, once the ranks are known, once more to write
/// every key straight to its final place in the receivers' `next`
/// ([`DirectPut::put_direct`](bsp_core::expert::DirectPut::put_direct): on threads the key is written once, in place);
/// then `cur` and `next` swap. Per key and pass that is two reads and one
/// write, as in a sequential LSD radix sort.
pub(crate) struct Engine<T> {
    /// `bounds[j]..bounds[j + 1]` are processor j's global positions.
    pub(crate) bounds: Vec<usize>,
    /// The smallest L2 cache of the processors' cores, agreed at
    /// registration so that every processor sizes digits alike (under MPI
    /// on unlike hosts too).
    pub(crate) l2_bytes: u64,
    /// The smallest L1 data cache of the processors' cores, agreed alike.
    pub(crate) l1d_bytes: u64,
    /// The local sequence after the last pass.
    pub(crate) cur: Coarray<T>,
    /// Where the keys of the running pass land.
    pub(crate) next: Coarray<T>,
    /// Whether the memory of `cur` and of `next` has been mapped (written
    /// once, or populated): a direct delivery maps `next` in a few calls
    /// first where it has not (see [`bsp_core::expert::pages`]).
    pub(crate) cur_mapped: bool,
    pub(crate) next_mapped: bool,
    /// Whether no pass has written `next` yet (a sorter's first sort, the
    /// only sort of a one-shot one): a sort on a `Vec` then moves its top
    /// digit in halves, to map only half of it
    /// ([`Engine::top_in_halves`]); the next sort maps the rest.
    pub(crate) next_untouched: bool,
    /// The superstep in which the last direct delivery wrote (a direct
    /// put writes in the superstep after its first sync, and returns in
    /// it): a pass's count made in that superstep names both in the
    /// profile.
    moved_directly: Option<usize>,
    tran: Coarray<u64>,
    scans: Coarray<u64>,
    gather: GatherArea,
    max_radix: usize,
    /// Reused buffer of the staged delivery.
    stage: Vec<T>,
    pub(crate) counts: Vec<u64>,
    /// Global position of this processor's first key of each digit.
    my_start: Vec<u64>,
    /// Number of keys, over all processors, with a smaller digit.
    global_start: Vec<u64>,
}

/// Digits `start..end` of block b when `r` digits are split over `p` blocks.
fn block(r: usize, p: usize, b: usize) -> (usize, usize) {
    (r * b / p, r * (b + 1) / p)
}

impl<T: Pod + Send> Engine<T> {
    /// Collective: registers the coarrays and learns every processor's
    /// local length and L2 cache size (one superstep).
    pub(crate) fn new(ctx: &mut Ctx, local_len: usize, max_radix: usize) -> Self {
        assert!(max_radix >= 1, "bsp-sort: the radix must be at least 1");
        let p = ctx.nprocs();
        // Vectors, not `coarray`'s memory that MPI peers map: the passes
        // swap them with the caller's vectors (`swap_current`), without a
        // copy only for a vector. (Mapped buffers, written in place by the direct puts under
        // `mpirun`, left a kept sorter of 2^26 keys level, 0.245-0.258 s
        // against 0.238-0.279: the sorted keys must then be copied out of
        // them; AMD-2c, BENCHMARKS.md section 13k.)
        let cur = ctx.coarray_from(bytemuck::zeroed_vec::<T>(local_len));
        let next = ctx.coarray_from(bytemuck::zeroed_vec::<T>(local_len));
        let tran = ctx.coarray::<u64>(p * max_radix.div_ceil(p));
        let scans = ctx.coarray::<u64>(2 * max_radix);
        let gather = GatherArea::new(ctx, p.max(4));
        let row = [
            local_len as u64,
            cache_size::l2_bytes(),
            cache_size::l1d_bytes(),
        ];
        let rows = gather.all_gather(ctx, &row);
        let mut bounds = vec![0];
        for row in rows.chunks_exact(3) {
            bounds.push(bounds.last().unwrap() + row[0] as usize);
        }
        let smallest = |k: usize| rows.chunks_exact(3).map(|row| row[k]).min().unwrap_or(0);
        let (l2_bytes, l1d_bytes) = (smallest(1), smallest(2));
        Engine {
            bounds,
            l2_bytes,
            l1d_bytes,
            cur,
            next,
            cur_mapped: false,
            next_mapped: false,
            next_untouched: true,
            moved_directly: None,
            tran,
            scans,
            gather,
            max_radix,
            stage: Vec::new(),
            counts: Vec::new(),
            my_start: Vec::new(),
            global_start: Vec::new(),
        }
    }

    pub(crate) fn local_len(&self, me: usize) -> usize {
        self.bounds[me + 1] - self.bounds[me]
    }

    pub(crate) fn total_len(&self) -> usize {
        *self.bounds.last().unwrap()
    }

    pub(crate) fn gather(&self) -> GatherArea {
        self.gather
    }

    pub(crate) fn global_start(&self) -> &[u64] {
        &self.global_start
    }

    /// Whether `delivery` resolves to the staged form for radix `r`.
    fn staged(&self, delivery: Delivery, p: usize, r: usize) -> bool {
        match delivery {
            Delivery::Auto => self.total_len() / p < 32 * r,
            Delivery::Direct => false,
            Delivery::Staged => true,
        }
    }

    /// The keys a pass reads.
    pub(crate) fn source<'a>(&self, ctx: &'a Ctx, source: Source<'a, T>) -> &'a [T] {
        match source {
            Source::Slice(keys) => keys,
            Source::Current => ctx.local(&self.cur),
        }
    }

    /// One stable counting-sort pass on digits `0..r` of `source`; the
    /// result is the engine's current local sequence.
    pub(crate) fn pass(
        &mut self,
        ctx: &mut Ctx,
        source: Source<'_, T>,
        r: usize,
        digit: impl Fn(&T) -> usize + Copy,
        delivery: Delivery,
    ) {
        self.rank(ctx, source, r, digit);
        // Step 6.
        if self.staged(delivery, ctx.nprocs(), r) {
            self.deliver_staged(ctx, source, digit);
        } else {
            self.deliver_direct(ctx, source, digit);
        }
    }

    /// Steps 1 to 5: the global rank of every digit and of this processor's
    /// first key of every digit, without moving any key.
    pub(crate) fn rank(
        &mut self,
        ctx: &mut Ctx,
        source: Source<'_, T>,
        r: usize,
        digit: impl Fn(&T) -> usize,
    ) {
        self.check_radix(r);
        self.counts.clear();
        self.counts.resize(r, 0);
        ctx.label(if self.moved_directly == Some(ctx.superstep()) {
            "sort: move keys, count the next digits"
        } else {
            "sort: count digits"
        });
        count(self.source(ctx, source), &mut self.counts, digit);
        self.ranks(ctx, r);
    }

    /// Steps 2 to 5, as [`rank`](Engine::rank) does, on digit counts the
    /// caller made (and hands over): `counts[d]` local keys have digit d.
    pub(crate) fn rank_counted(&mut self, ctx: &mut Ctx, counts: Vec<u64>) {
        let r = counts.len();
        self.check_radix(r);
        self.counts = counts;
        ctx.label("sort: count digits");
        self.ranks(ctx, r);
    }

    /// Panics unless `r` digits fit the count matrix registered.
    fn check_radix(&self, r: usize) {
        assert!(
            (1..=self.max_radix).contains(&r),
            "bsp-sort: radix {r} outside 1..={}",
            self.max_radix
        );
    }

    /// Steps 2 to 5: from the local counts to `my_start` and `global_start`.
    /// Two supersteps, h = R/p and 2R/p words per processor pair.
    fn ranks(&mut self, ctx: &mut Ctx, r: usize) {
        let (p, me) = (ctx.nprocs(), ctx.pid());
        let width = r.div_ceil(p);
        // Step 2: transpose of the count matrix.
        for b in 0..p {
            let (s, e) = block(r, p, b);
            if e > s {
                ctx.put(b, &self.tran, me * width, &self.counts[s..e]);
            }
        }
        ctx.sync();
        ctx.label("sort: prefix sums");
        // Step 3: prefix sums over processors of this block's digits.
        let (s, e) = block(r, p, me);
        let w = e - s;
        let mut interleaved = vec![vec![0u64; 2 * w]; p];
        {
            let tran = ctx.local(&self.tran);
            for k in 0..w {
                let mut sum = 0;
                for (i, row) in interleaved.iter_mut().enumerate() {
                    row[2 * k] = sum;
                    sum += tran[i * width + k];
                }
                for row in interleaved.iter_mut() {
                    row[2 * k + 1] = sum;
                }
            }
        }
        // Step 4: inverse transpose of prefixes interleaved with totals.
        if w > 0 {
            for (j, row) in interleaved.into_iter().enumerate() {
                ctx.put_vec(j, &self.scans, 2 * s, row);
            }
        }
        ctx.sync();
        ctx.label("sort: place the digits");
        // Step 5: global digit starts and this processor's first ranks.
        let scans = &ctx.local(&self.scans)[..2 * r];
        self.global_start.clear();
        self.my_start.clear();
        let mut offset = 0;
        for pair in scans.chunks_exact(2) {
            self.global_start.push(offset);
            self.my_start.push(offset + pair[0]);
            offset += pair[1];
        }
    }

    /// Cuts every digit's range of global positions at processor
    /// boundaries and calls `piece` for each
    /// piece, in digit order, as `piece(digit, dst, global position, length)`.
    fn for_each_piece(&self, mut piece: impl FnMut(usize, usize, usize, usize)) {
        let mut dst = 0;
        for (d, (&start, &count)) in self.my_start.iter().zip(&self.counts).enumerate() {
            let (mut g, end) = (start as usize, (start + count) as usize);
            while g < end {
                while self.bounds[dst + 1] <= g {
                    dst += 1;
                }
                let len = end.min(self.bounds[dst + 1]) - g;
                piece(d, dst, g, len);
                g += len;
            }
        }
    }

    /// Step 6, one direct put per piece: every key is written once,
    /// straight from the source to its final position.
    pub(crate) fn deliver_direct(
        &mut self,
        ctx: &mut Ctx,
        source: Source<'_, T>,
        digit: impl Fn(&T) -> usize,
    ) {
        let mut pieces = Vec::with_capacity(self.counts.len() + ctx.nprocs());
        let mut first_piece = vec![0; self.counts.len()];
        let bounds = &self.bounds;
        self.for_each_piece(|d, dst, g, len| {
            pieces.push((
                d,
                DirectPiece {
                    dst,
                    offset: g - bounds[dst],
                    len,
                },
            ));
        });
        // The first piece of each digit (digits without keys have none).
        for (i, &(d, _)) in pieces.iter().enumerate().rev() {
            first_piece[d] = i;
        }
        let pieces: Vec<DirectPiece> = pieces.into_iter().map(|(_, piece)| piece).collect();
        if !self.next_mapped {
            // Fresh memory: mapped in a few requests rather than a page
            // fault at a time during the scatter.
            self.populate_next(ctx, self.local_len(ctx.pid()));
            self.next_mapped = true;
        }
        let (cur, counts) = (self.cur, &self.counts);
        ctx.put_direct(&self.next, &pieces, |ctx, slices| {
            let keys = match source {
                Source::Slice(keys) => keys,
                Source::Current => ctx.local(&cur),
            };
            scatter(keys, slices, &first_piece, counts, digit);
        });
        // The put wrote in the superstep it returns in.
        ctx.label("sort: move keys");
        self.moved_directly = Some(ctx.superstep());
        std::mem::swap(&mut self.cur, &mut self.next);
        std::mem::swap(&mut self.cur_mapped, &mut self.next_mapped);
        self.next_untouched = false;
    }

    /// Step 6, one put per destination, then a merge at the receiver.
    fn deliver_staged(
        &mut self,
        ctx: &mut Ctx,
        source: Source<'_, T>,
        digit: impl Fn(&T) -> usize + Copy,
    ) {
        let (p, me) = (ctx.nprocs(), ctx.pid());
        // A local stable counting sort: the keys for each destination are
        // then a contiguous range of `stage`, in destination order.
        let mut fill = vec![0usize; p];
        self.for_each_piece(|_, dst, _, len| fill[dst] += len);
        let mut stage = std::mem::take(&mut self.stage);
        stage.resize(self.counts.iter().sum::<u64>() as usize, T::zeroed());
        let mut next_slot = exclusive_prefix(&self.counts);
        group(self.source(ctx, source), &mut stage, &mut next_slot, digit);
        let mut cuts = vec![0];
        for f in &fill {
            cuts.push(cuts.last().unwrap() + f);
        }
        // The p × p matrix of send counts: sizes[j * p + k] from j to k.
        let row: Vec<u64> = fill.iter().map(|&f| f as u64).collect();
        let sizes = self.gather.all_gather(ctx, &row);
        ctx.label("sort: move keys");
        let from = |j: usize, k: usize| sizes[j * p + k] as usize;
        // Where source j's block starts in processor k's receive coarray.
        let offset = |j: usize, k: usize| (0..j).filter(|&i| i != k).map(|i| from(i, k)).sum();
        for k in (0..p).filter(|&k| k != me && fill[k] > 0) {
            ctx.put(k, &self.next, offset(me, k), &stage[cuts[k]..cuts[k + 1]]);
        }
        ctx.sync();
        let (recv, out) = ctx.local_pair_mut(&self.next, &self.cur);
        let runs: Vec<&[T]> = (0..p)
            .map(|j| {
                if j == me {
                    &stage[cuts[me]..cuts[me + 1]]
                } else {
                    let s = offset(j, me);
                    &recv[s..s + from(j, me)]
                }
            })
            .collect();
        merge_runs(&runs, out, digit);
        self.stage = stage;
        self.next_untouched = false;
    }

    /// Releases every coarray of the engine (collective).
    pub(crate) fn release(self, ctx: &mut Ctx) {
        for a in [self.cur, self.next] {
            ctx.discard(a);
        }
        ctx.discard(self.tran);
        ctx.discard(self.scans);
        self.gather.release(ctx);
    }

    /// Maps the first `len` elements of `next`, the receive buffer of a
    /// pass about to write them, on every processor at once
    /// ([`pages::populate_part`]: a sync, then the mapping). Collective.
    pub(crate) fn populate_next(&self, ctx: &mut Ctx, len: usize) {
        pages::populate_part(ctx, &self.next, 0..len);
        ctx.label("sort: map the receive buffer");
    }

    /// Makes `keys` the current local sequence, without a copy, and returns
    /// the buffer it replaces.
    pub(crate) fn swap_current(&mut self, ctx: &mut Ctx, keys: Vec<T>) -> Vec<T> {
        // The caller's keys were written, so are mapped; a buffer handed
        // back in is taken as mapped too (at worst, it is then faulted in
        // page by page, as without the flag).
        self.cur_mapped = true;
        ctx.replace_local(&self.cur, keys)
    }

    /// Makes the buffer the last pass wrote the receive buffer of the next
    /// pass again, for when its keys have been copied out and both
    /// buffers are scratch: the next sort then writes into memory that is
    /// mapped, and a sorter used only this way maps one buffer, not two.
    pub(crate) fn recycle_current(&mut self) {
        std::mem::swap(&mut self.cur, &mut self.next);
        std::mem::swap(&mut self.cur_mapped, &mut self.next_mapped);
    }

    /// Copies the current local sequence into `out`.
    pub(crate) fn settle(&self, ctx: &Ctx, out: &mut [T]) {
        out.copy_from_slice(ctx.local(&self.cur));
    }
}

/// Radixes up to which [`count`] counts in four interleaved tables.
const INTERLEAVED_COUNT_MAX_RADIX: usize = 1 << 16;

/// Counts the digits of `keys` into `counts` (adding to what is there).
///
/// Up to [`INTERLEAVED_COUNT_MAX_RADIX`] digits, four consecutive keys
/// count into four tables of 32-bit counters (16 bytes of counters a
/// digit, 1 MiB at most), so that keys of the same digit close together do
/// not wait on one counter's previous increment, and the tables fit in the
/// cache; the tables are added into `counts` every 2^32 − 1 keys at most.
/// The [S] sort of 2^26 keys at p = 2 (three passes, each counted here)
/// took 0.46 s against 0.56 s with one table of 64-bit counters
/// (bench_sort, reused sorter, alternating builds; BENCHMARKS.md section
/// 4c as of commit d743920, in git, has the whole sort before and after).
///
/// Inlined, so that a `digit` that also folds something over the keys
/// (the radix sort's plan, which finds the varying bits on the way) keeps
/// its fold in a register: called, with the fold through memory, the
/// reused sort of 2^26 keys took 0.227–0.231 s against 0.212–0.216 for a
/// count and a separate fold (AMD-2c, BENCHMARKS.md section 13g).
#[inline(always)]
pub(crate) fn count<T>(keys: &[T], counts: &mut [u64], mut digit: impl FnMut(&T) -> usize) {
    let r = counts.len();
    if r > INTERLEAVED_COUNT_MAX_RADIX {
        for x in keys {
            counts[digit(x)] += 1;
        }
        return;
    }
    let mut tables = vec![0u32; 4 * r];
    // Each table counts a quarter of a chunk: no counter can wrap.
    for (i, chunk) in keys.chunks(u32::MAX as usize).enumerate() {
        if i > 0 {
            tables.fill(0);
        }
        let (t0, rest) = tables.split_at_mut(r);
        let (t1, rest) = rest.split_at_mut(r);
        let (t2, t3) = rest.split_at_mut(r);
        for line in prefetch::lines(chunk) {
            let mut quads = line.chunks_exact(4);
            for q in &mut quads {
                t0[digit(&q[0])] += 1;
                t1[digit(&q[1])] += 1;
                t2[digit(&q[2])] += 1;
                t3[digit(&q[3])] += 1;
            }
            for x in quads.remainder() {
                t0[digit(x)] += 1;
            }
        }
        for (d, total) in counts.iter_mut().enumerate() {
            *total += u64::from(t0[d]) + u64::from(t1[d]) + u64::from(t2[d]) + u64::from(t3[d]);
        }
    }
}

/// Exclusive prefix sums of `counts`, as positions.
fn exclusive_prefix(counts: &[u64]) -> Vec<usize> {
    let mut at = 0;
    counts
        .iter()
        .map(|&c| {
            let start = at;
            at += c as usize;
            start
        })
        .collect()
}

/// Stable local counting sort: key `x` goes to `out[next_slot[digit(x)]]`.
fn group<T: Pod>(keys: &[T], out: &mut [T], next_slot: &mut [usize], digit: impl Fn(&T) -> usize) {
    for line in prefetch::lines(keys) {
        for x in line {
            let slot = &mut next_slot[digit(x)];
            whole::copy(&mut out[*slot], x);
            *slot += 1;
        }
    }
}

/// The scatter of a direct delivery: the keys of digit d fill, in order,
/// the slices `first_piece[d]`, `first_piece[d] + 1`, ... (the pieces of
/// digit d's range of global positions, cut at processor boundaries);
/// `counts[d]` keys have digit d. Through a [`LineWriter`] where the keys
/// spread over many digits (it writes whole lines without reading them
/// first), with plain stores where a few digits take most keys.
pub(crate) fn scatter<T: Pod>(
    keys: &[T],
    slices: &mut [&mut [T]],
    first_piece: &[usize],
    counts: &[u64],
    digit: impl Fn(&T) -> usize,
) {
    let mut choice = LineWriter::<T>::choose(counts);
    // The first scatter of its kind under `Stores::Auto` lines only its
    // front part and stores the rest plainly, timing both ways.
    let lined = choice.lined(keys.len());
    scatter_parts(keys, lined, slices, first_piece, counts, digit, || {
        choice.switch()
    });
    choice.done();
}

/// [`scatter`] with the first `lined` keys through a [`LineWriter`] and
/// the rest by plain stores; `switch` runs between the two parts (when
/// some keys were lined).
fn scatter_parts<T: Pod>(
    keys: &[T],
    lined: usize,
    slices: &mut [&mut [T]],
    first_piece: &[usize],
    counts: &[u64],
    digit: impl Fn(&T) -> usize,
    switch: impl FnOnce(),
) {
    let mut next = first_piece.to_vec();
    let (lined, plain) = keys.split_at(lined);
    let mut window: Vec<&mut [T]> = if lined.is_empty() {
        first_piece.iter().map(|_| &mut [][..]).collect()
    } else {
        let mut out = LineWriter::new(first_piece.len());
        for (d, piece) in next.iter_mut().enumerate() {
            if counts[d] > 0 {
                out.set_window(d, std::mem::take(&mut slices[*piece]));
                *piece += 1;
            }
        }
        out.push_all(lined, &digit, |d| {
            // The digit's piece is full: on to its next one.
            next[d] += 1;
            std::mem::take(&mut slices[next[d] - 1])
        });
        if plain.is_empty() {
            // The usual case: nothing left to store plainly.
            out.finish();
            switch();
            return;
        }
        let rest = out.into_windows();
        switch();
        rest
    };
    let mut filled = vec![0usize; first_piece.len()];
    for line in prefetch::lines(plain) {
        for x in line {
            let d = digit(x);
            let at = filled[d];
            if let Some(slot) = window[d].get_mut(at) {
                whole::copy(slot, x);
                filled[d] = at + 1;
            } else {
                // The digit's current piece is full (or none was taken
                // yet): move on to its next piece.
                window[d] = std::mem::take(&mut slices[next[d]]);
                next[d] += 1;
                window[d][0] = *x;
                filled[d] = 1;
            }
        }
    }
}

/// A reusable stable counting sort over digits `0..R`: the paper's six
/// steps, registered once and run as often as needed (NAS IS runs it every
/// iteration).
///
/// The output is congruent with the input: processor i receives as many
/// keys as it contributed, and every key on processor i comes before every
/// key on processor i + 1 in (digit, source processor, source position)
/// order.
///
/// # Examples
///
/// ```
/// use bsp_sort::CountingSort;
///
/// let out = bsp_core::run(3, |ctx| {
///     let keys: Vec<u32> = (0..5).map(|i| (7 * i + ctx.pid() as u32) % 10).collect();
///     let mut sorter = CountingSort::new(ctx, keys.len(), 10);
///     let mut sorted = vec![0; keys.len()];
///     sorter.sort_into(ctx, &keys, &mut sorted, |&k| k as usize);
///     // Number of keys, over all processors, smaller than 5:
///     let below_five = sorter.digit_starts()[5];
///     (sorted, below_five)
/// })
/// .unwrap();
/// let all: Vec<u32> = out.iter().flat_map(|(s, _)| s.clone()).collect();
/// assert!(all.windows(2).all(|w| w[0] <= w[1]));
/// assert_eq!(out.get(0).unwrap().1, all.iter().filter(|&&k| k < 5).count() as u64);
/// ```
pub struct CountingSort<T> {
    engine: Engine<T>,
    radix: usize,
    delivery: Delivery,
}

impl<T: Pod + Send> CountingSort<T> {
    /// Registers a counting sort for `local_len` keys on this processor and
    /// digits `0..radix`. Collective: every processor calls it at the same
    /// point (local lengths may differ).
    ///
    /// # Examples
    ///
    /// See [`CountingSort`].
    ///
    /// # Panics
    ///
    /// If `radix` is 0.
    ///
    /// # Cost
    ///
    /// One superstep (an all-gather of the local lengths, h = p words);
    /// allocates `local_len` elements and about 3·radix words.
    pub fn new(ctx: &mut Ctx, local_len: usize, radix: usize) -> Self {
        CountingSort {
            engine: Engine::new(ctx, local_len, radix),
            radix,
            delivery: Delivery::Auto,
        }
    }

    /// Chooses how step 6 delivers the keys (default [`Delivery::Auto`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use bsp_sort::CountingSort;
    /// use bsp_sort::expert::Delivery;
    ///
    /// let out = bsp_core::run(2, |ctx| {
    ///     let keys = vec![3u8, 1, 2, 1];
    ///     let mut sort = CountingSort::new(ctx, 4, 4).with_delivery(Delivery::Staged);
    ///     let mut sorted = vec![0; 4];
    ///     sort.sort_into(ctx, &keys, &mut sorted, |&k| k as usize);
    ///     sorted
    /// })
    /// .unwrap();
    /// assert_eq!(out.concat(), [1, 1, 1, 1, 2, 2, 3, 3]);
    /// ```
    ///
    /// # Cost
    ///
    /// Local, O(1).
    pub fn with_delivery(mut self, delivery: Delivery) -> Self {
        self.delivery = delivery;
        self
    }

    /// Sorts the keys of `src` stably by `digit` over all processors and
    /// writes this processor's share of the sorted sequence to `dst`.
    /// Afterwards [`digit_starts`](CountingSort::digit_starts) gives the
    /// global rank of every digit.
    ///
    /// Collective: every processor calls it with the same `digit` function.
    ///
    /// # Examples
    ///
    /// See [`CountingSort`].
    ///
    /// # Panics
    ///
    /// If `src` or `dst` is not `local_len` long, or `digit` returns a value
    /// `>= radix`.
    ///
    /// # Cost
    ///
    /// Three supersteps (four with [`Delivery::Staged`]): transposes of R/p
    /// and 2R/p words per processor pair, and the h-relation of step 6 with
    /// h = n/p elements (plus a 16-byte claim per piece). Local work
    /// O(n/p + R).
    pub fn sort_into(
        &mut self,
        ctx: &mut Ctx,
        src: &[T],
        dst: &mut [T],
        digit: impl Fn(&T) -> usize + Copy,
    ) {
        let n = self.engine.local_len(ctx.pid());
        assert_eq!(
            src.len(),
            n,
            "bsp-sort: source length differs from local_len"
        );
        assert_eq!(
            dst.len(),
            n,
            "bsp-sort: destination length differs from local_len"
        );
        self.engine
            .pass(ctx, Source::Slice(src), self.radix, digit, self.delivery);
        self.engine.settle(ctx, dst);
    }

    /// Ranks the keys of `keys` without moving them: steps 1 to 5 of the
    /// pass (local counts, transpose of the count matrix, prefix sums,
    /// inverse transpose). Afterwards
    /// [`digit_starts`](CountingSort::digit_starts) gives, for every digit
    /// d, the number of keys over all processors with a smaller digit: the
    /// rank of every key with digit d. This is all that ranking needs (NAS
    /// IS, for instance); [`sort_into`](CountingSort::sort_into) adds step 6.
    ///
    /// Collective: every processor calls it with the same `digit` function.
    ///
    /// # Examples
    ///
    /// ```
    /// use bsp_sort::CountingSort;
    ///
    /// let out = bsp_core::run(2, |ctx| {
    ///     let keys = vec![3u8, 0, 3, 1];
    ///     let mut counting = CountingSort::new(ctx, keys.len(), 4);
    ///     counting.rank(ctx, &keys, |&k| k as usize);
    ///     counting.digit_starts().to_vec()
    /// })
    /// .unwrap();
    /// // Keys over both processors: 0, 0, 1, 1, 3, 3, 3, 3.
    /// assert_eq!(out.get(0), Some(&vec![0, 2, 4, 4]));
    /// ```
    ///
    /// # Panics
    ///
    /// If `keys` is not `local_len` long, or `digit` returns a value `>= radix`.
    ///
    /// # Cost
    ///
    /// Two supersteps: transposes of R/p and 2R/p words per processor pair.
    /// Local work O(n/p + R).
    pub fn rank(&mut self, ctx: &mut Ctx, keys: &[T], digit: impl Fn(&T) -> usize) {
        let n = self.engine.local_len(ctx.pid());
        assert_eq!(keys.len(), n, "bsp-sort: key count differs from local_len");
        self.engine
            .rank(ctx, Source::Slice(keys), self.radix, digit);
    }

    /// Releases the sorter's registered buffers (see
    /// [`Ctx::release`](bsp_core::Ctx::release)). Collective: every
    /// processor releases its sorter at the same point.
    ///
    /// # Examples
    ///
    /// ```
    /// bsp_core::run(2, |ctx| {
    ///     let counting = bsp_sort::CountingSort::<u32>::new(ctx, 10, 16);
    ///     counting.release(ctx);
    ///     ctx.sync();
    /// })
    /// .unwrap();
    /// ```
    ///
    /// # Cost
    ///
    /// Local: frees 2 local lengths of keys and about 3·radix words.
    pub fn release(self, ctx: &mut Ctx) {
        self.engine.release(ctx);
    }

    /// After a sort: for every digit d, the number of keys over all
    /// processors whose digit is smaller than d (the global rank of the
    /// first key with digit d). Empty before the first sort.
    ///
    /// # Examples
    ///
    /// See [`CountingSort`].
    ///
    /// # Cost
    ///
    /// Local, O(1).
    pub fn digit_starts(&self) -> &[u64] {
        self.engine.global_start()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `count` against one counter per digit, for lengths around the
    /// unrolled quads and radixes on both sides of the interleaved limit.
    #[test]
    fn count_matches_a_plain_count() {
        for radix in [1, 7, 2048, INTERLEAVED_COUNT_MAX_RADIX + 3] {
            for n in [0, 1, 3, 4, 5, 8, 11, 1000] {
                let keys: Vec<u64> = (0..n as u64)
                    .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 7)
                    .collect();
                let digit = |k: &u64| (*k % radix as u64) as usize;
                let mut want = vec![1u64; radix];
                keys.iter().for_each(|k| want[digit(k)] += 1);
                let mut got = vec![1u64; radix];
                count(&keys, &mut got, digit);
                assert_eq!(got, want, "radix {radix}, {n} keys");
            }
        }
    }

    /// A scatter split anywhere between line buffers and plain stores
    /// gives the stable scatter's output, digits cut into several pieces
    /// (at unaligned places) included.
    #[test]
    fn a_scatter_split_between_the_ways_gives_the_same_output() {
        let radix = 37;
        let keys: Vec<u64> = (0..5000u64)
            .map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) << 16 | i)
            .collect();
        let digit = |k: &u64| ((k >> 16) % radix as u64) as usize;
        let mut counts = vec![0u64; radix];
        keys.iter().for_each(|k| counts[digit(k)] += 1);
        let mut want = keys.clone();
        want.sort_by_key(|k| digit(k)); // stable
        for lined in [0, 1, 17, 2500, 4999, 5000] {
            let mut out = vec![0u64; keys.len()];
            // Every digit's range cut into pieces of at most 29 keys.
            let mut lens = Vec::new();
            let mut first_piece = vec![0; radix];
            for (d, &c) in counts.iter().enumerate() {
                first_piece[d] = lens.len();
                let mut left = c as usize;
                while left > 0 {
                    lens.push(left.min(29));
                    left -= left.min(29);
                }
            }
            let mut slices: Vec<&mut [u64]> = Vec::new();
            let mut rest = &mut out[..];
            for len in lens {
                let (piece, tail) = rest.split_at_mut(len);
                slices.push(piece);
                rest = tail;
            }
            let mut switched = false;
            scatter_parts(
                &keys,
                lined,
                &mut slices,
                &first_piece,
                &counts,
                digit,
                || switched = true,
            );
            assert_eq!(out, want, "{lined} keys lined");
            assert_eq!(switched, lined > 0);
        }
    }
}
