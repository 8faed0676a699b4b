//! Ranking keys from a small range by coarse buckets (the NAS IS way).
//!
//! A counting sort over R = max_key digits transposes an R-word count
//! matrix, and its local counting touches R counters at random: for NAS IS
//! class B (R = 2^21) that is a 16 MiB matrix and a 16 MiB counter array
//! per iteration. Bucketing by the top bits first avoids both: the keys are
//! counted into 2^10 buckets, the bucket counts are all-gathered, every
//! processor takes a contiguous run of buckets holding about n/p keys, and
//! each key is written once, with
//! [`DigitPut::put_direct_by_digit_low`](bsp_core::expert::DigitPut::put_direct_by_digit_low),
//! to its bucket's place on the processor that owns it; that processor
//! then counts each bucket's keys over the bucket's few key values, in the
//! cache, and knows the rank of every key value in its range. A key's
//! place says its bucket, so only its bits below the bucket digit move: 2
//! bytes a key where the digit starts at bit 16 or lower (every NAS class
//! up to C), where NPB moves 4.
//!
//! How many buckets is a trade between the two passes, and the best number
//! depends on the machine: the fewer the buckets, the fewer lines the
//! scatter writes at once, and the more counters each bucket's count
//! touches. NAS IS class B at p = 2 on AMD-2b (2026-11-27) ran at 1270–1310
//! Mop/s with 2^8 buckets, 1420–1425 with 2^9, 1080–1120 with NPB's 2^10
//! and 830 with 2^11. [`BucketRanker::tune`] measures the candidates on the
//! caller's keys and keeps the fastest.

use std::ops::{Range, RangeInclusive};
use std::time::Instant;

use bsp_core::expert::{Digit, DigitCounts, DigitPut, DirectPiece};
use bsp_core::{Coarray, Ctx};

use crate::gather_area::GatherArea;

/// Coarse buckets, in bits, until [`BucketRanker::tune`] or
/// [`BucketRanker::with_bucket_bits`] says otherwise: NPB's 2^10 (fewer
/// when the key range is small).
const DEFAULT_BUCKET_BITS: u32 = 10;

/// The bucket widths, in bits, that [`BucketRanker::tune`] tries.
const TUNED_BUCKET_BITS: RangeInclusive<u32> = 8..=MAX_BUCKET_BITS;
/// Ranks per width in [`BucketRanker::tune`]: the store policy's two
/// trials and one more with the faster way.
const TUNE_ROUNDS: usize = 3;

/// The widest bucket digit, in bits: 2^11 buckets.
const MAX_BUCKET_BITS: u32 = 11;

/// Ranks keys in `0..max_key` over all processors by coarse buckets:
/// after [`rank`](BucketRanker::rank), each processor knows the rank (the
/// number of keys, over all processors, smaller than it) of every key value
/// in its own contiguous range of values, and holds the keys of that range.
///
/// # Examples
///
/// ```
/// use bsp_sort::expert::BucketRanker;
///
/// let out = bsp_core::run(3, |ctx| {
///     let keys: Vec<u32> = (0..1000u32).map(|i| (i * 7919 + ctx.pid() as u32) % 500).collect();
///     let mut ranker = BucketRanker::new(ctx, 500);
///     ranker.rank(ctx, &keys);
///     let range = ranker.key_range();
///     // Keys below `range.start` over all processors, and this processor's sorted keys.
///     (ranker.rank_of(range.start), ranker.sorted_keys(), range)
/// })
/// .unwrap();
/// let sorted: Vec<u32> = out.iter().flat_map(|(_, keys, _)| keys.clone()).collect();
/// assert_eq!(sorted.len(), 3000);
/// assert!(sorted.windows(2).all(|w| w[0] <= w[1]));
/// for (below, _, range) in &out {
///     let want = sorted.iter().filter(|&&k| k < range.start).count() as u64;
///     assert!(range.is_empty() || *below == Some(want));
/// }
/// ```
pub struct BucketRanker {
    max_key: u32,
    /// Bits of the bucket digit.
    bucket_bits: u32,
    shift: u32,
    buckets: usize,
    gather: GatherArea,
    /// Where the keys of this processor's buckets land (the first
    /// `received` elements), each as its bits below the bucket digit.
    recv: Landing,
    /// The length of every processor's part of `recv`.
    room: usize,
    /// This processor's buckets.
    mine: Range<usize>,
    /// This processor's key values.
    values: Range<u32>,
    /// Keys, over all processors, below `values.start`.
    base: u64,
    /// For each value of `values`: the keys here below it (exclusive
    /// prefix of the counts).
    prefix: Vec<u32>,
    /// The number of keys received.
    received: usize,
}

impl BucketRanker {
    /// Registers a ranker for keys in `0..max_key`. Collective.
    ///
    /// # Examples
    ///
    /// See [`BucketRanker`].
    ///
    /// # Panics
    ///
    /// If `max_key` is 0.
    ///
    /// # Cost
    ///
    /// Local; registers 2^11·p words (the widest bucket digit
    /// [`tune`](BucketRanker::tune) tries) and an empty receive buffer.
    pub fn new(ctx: &mut Ctx, max_key: u32) -> Self {
        assert!(max_key > 0, "bsp-sort: max_key must be at least 1");
        let widest = Self::buckets_for(max_key, MAX_BUCKET_BITS).1;
        let (shift, buckets) = Self::buckets_for(max_key, DEFAULT_BUCKET_BITS);
        BucketRanker {
            max_key,
            bucket_bits: DEFAULT_BUCKET_BITS,
            shift,
            buckets,
            gather: GatherArea::new(ctx, widest),
            recv: Landing::Low(ctx.coarray(0)),
            room: 0,
            mine: 0..0,
            values: 0..0,
            base: 0,
            prefix: Vec::new(),
            received: 0,
        }
    }

    /// The same ranker with 2^`bits` coarse buckets (fewer when the key
    /// range is small) instead of NPB's 2^10.
    ///
    /// # Examples
    ///
    /// ```
    /// use bsp_sort::expert::BucketRanker;
    ///
    /// bsp_core::run(2, |ctx| {
    ///     let ranker = BucketRanker::new(ctx, 1 << 20).with_bucket_bits(9);
    ///     assert_eq!(ranker.bucket_bits(), 9);
    /// })
    /// .unwrap();
    /// ```
    ///
    /// # Panics
    ///
    /// If `bits` is 0 or above 11.
    ///
    /// # Cost
    ///
    /// Local, O(1).
    pub fn with_bucket_bits(mut self, bits: u32) -> Self {
        assert!(
            (1..=MAX_BUCKET_BITS).contains(&bits),
            "bsp-sort: a bucket digit has 1 to {MAX_BUCKET_BITS} bits, not {bits}"
        );
        self.set_bucket_bits(bits);
        self
    }

    /// The bits of the bucket digit the ranks use: 2^bits buckets, fewer
    /// when the key range is small.
    ///
    /// # Examples
    ///
    /// See [`with_bucket_bits`](BucketRanker::with_bucket_bits).
    ///
    /// # Cost
    ///
    /// Local, O(1).
    pub fn bucket_bits(&self) -> u32 {
        self.bucket_bits
    }

    /// The shift and the number of buckets of a `bits`-bit bucket digit
    /// for keys below `max_key`.
    fn buckets_for(max_key: u32, bits: u32) -> (u32, usize) {
        let key_bits = 32 - (max_key - 1).leading_zeros();
        let shift = key_bits.saturating_sub(bits);
        (shift, ((max_key - 1) >> shift) as usize + 1)
    }

    fn set_bucket_bits(&mut self, bits: u32) {
        self.bucket_bits = bits;
        (self.shift, self.buckets) = Self::buckets_for(self.max_key, bits);
    }

    /// Ranks `keys` with each bucket width from 2^8 to 2^11 buckets that
    /// gives a different bucketing, times each, and keeps the fastest for
    /// later [`rank`](BucketRanker::rank)s; returns its bits. Collective:
    /// every processor passes its own keys, and all keep the same width,
    /// chosen by the slowest processor's times.
    ///
    /// Each width ranks three times, in three rounds over the widths, and
    /// counts its fastest time: the scatter's store policy
    /// ([`bsp_core::expert::stores`]) tries one way in a width's first
    /// rank, the other in its second, and the third takes the faster
    /// again, so that one slow run does not decide. Afterwards the
    /// ranker holds the ranks of `keys` under the last width tried; rank
    /// again before asking for them.
    ///
    /// # Examples
    ///
    /// ```
    /// use bsp_sort::expert::BucketRanker;
    ///
    /// let out = bsp_core::run(2, |ctx| {
    ///     let keys: Vec<u32> = (0..4096u32).map(|i| i.wrapping_mul(2_654_435_761) >> 12).collect();
    ///     let mut ranker = BucketRanker::new(ctx, 1 << 20);
    ///     let bits = ranker.tune(ctx, &keys);
    ///     ranker.rank(ctx, &keys);
    ///     (bits, ranker.rank_of(ranker.key_range().start))
    /// })
    /// .unwrap();
    /// let (bits, _) = out.get(0).unwrap();
    /// assert!((8..=11).contains(bits));
    /// assert!(out.iter().all(|(b, _)| b == bits)); // the same on every processor
    /// ```
    ///
    /// # Cost
    ///
    /// Up to twelve [`rank`](BucketRanker::rank)s, each after a sync,
    /// and one all-gather of a word per width and processor.
    pub fn tune(&mut self, ctx: &mut Ctx, keys: &[u32]) -> u32 {
        // Widths with their shifts, which shrink as the widths grow: two
        // widths with the same shift bucket alike, and the first is kept.
        let mut widths: Vec<(u32, u32)> = TUNED_BUCKET_BITS
            .map(|bits| (bits, Self::buckets_for(self.max_key, bits).0))
            .collect();
        widths.dedup_by_key(|&mut (_, shift)| shift);
        if widths.len() < 2 {
            return self.bucket_bits;
        }
        // Round-robin over the widths, so that a host whose speed drifts
        // during the tune slows every width alike.
        let mut fastest = vec![u64::MAX; widths.len()];
        for _ in 0..TUNE_ROUNDS {
            for (time, &(bits, _)) in fastest.iter_mut().zip(&widths) {
                self.set_bucket_bits(bits);
                ctx.label("tune: start line");
                ctx.sync();
                let start = Instant::now();
                self.rank(ctx, keys);
                *time = (*time).min(start.elapsed().as_nanos() as u64);
            }
        }
        ctx.label("tune: times");
        let rows = self.gather.all_gather(ctx, &fastest);
        let mut best = (u64::MAX, self.bucket_bits);
        for (i, &(bits, _)) in widths.iter().enumerate() {
            // The slowest processor's best time with this width.
            let slowest = rows
                .chunks_exact(widths.len())
                .map(|row| row[i])
                .max()
                .unwrap_or(u64::MAX);
            if slowest < best.0 {
                best = (slowest, bits);
            }
        }
        self.set_bucket_bits(best.1);
        best.1
    }

    /// Ranks the keys of every processor's `keys` together. Collective.
    ///
    /// # Examples
    ///
    /// See [`BucketRanker`].
    ///
    /// # Panics
    ///
    /// If a key is `>= max_key`, or a processor would receive 2^32 keys or
    /// more.
    ///
    /// # Cost
    ///
    /// Two supersteps: an all-gather of the bucket counts (h = 2^10·p
    /// words) and one direct put of the keys (h = n/p keys, each written
    /// once on threads, and under MPI on one node, as its bits below the
    /// bucket digit: 2 bytes where they fit, else 4). Local work O(n/p +
    /// max_key/p). The first rank, and one whose busiest processor
    /// receives more keys than any before, registers a receive coarray
    /// with an eighth more room than that (collective, like the rank).
    pub fn rank(&mut self, ctx: &mut Ctx, keys: &[u32]) {
        let (p, me) = (ctx.nprocs(), ctx.pid());
        let (shift, buckets) = (self.shift, self.buckets);
        // Keys below `max_key` have no digit value from `buckets` on. A key
        // at or above it either has one, or lands (the digit's high bits
        // dropped) on a processor above that processor's key range, which
        // the local count below reports.
        let digit = Digit::new(shift, self.bucket_bits);
        let counted = DigitCounts::new(keys, digit);
        if digit.has_bits_above(counted.bits_set())
            || counted.counts()[buckets..].iter().any(|&c| c > 0)
        {
            let k = keys.iter().find(|&&k| k >= self.max_key).copied();
            key_out_of_range(k.unwrap_or(self.max_key), self.max_key);
        }
        let count = &counted.counts()[..buckets];
        ctx.label("rank: bucket counts");
        let all = self.gather.all_gather(ctx, count);
        let row = |q: usize| &all[q * buckets..(q + 1) * buckets];
        let total: Vec<u64> = (0..buckets)
            .map(|b| (0..p).map(|q| row(q)[b]).sum())
            .collect();
        let n: u64 = total.iter().sum();
        // Processor j takes the buckets up to where the running total
        // reaches (j + 1)·n/p.
        let mut owner_end = Vec::with_capacity(p);
        let (mut b, mut seen) = (0, 0u64);
        for j in 0..p {
            let goal = n * (j as u64 + 1) / p as u64;
            while b < buckets && (seen + total[b] <= goal || j == p - 1) {
                seen += total[b];
                b += 1;
            }
            owner_end.push(b);
        }
        let start_of = |j: usize| if j == 0 { 0 } else { owner_end[j - 1] };
        // Where each bucket's keys start on its owner: earlier buckets of
        // the owner first, then the bucket's keys by source processor.
        let mut pieces = Vec::with_capacity(buckets);
        let (mut receive, mut most) = (0, 0);
        for (j, &end) in owner_end.iter().enumerate() {
            let mut at = 0u64;
            for b in start_of(j)..end {
                let before: u64 = (0..me).map(|q| row(q)[b]).sum();
                pieces.push(DirectPiece {
                    dst: j,
                    offset: (at + before) as usize,
                    len: count[b] as usize,
                });
                at += total[b];
            }
            if j == me {
                receive = at as usize;
            }
            most = most.max(at as usize);
        }
        assert!(
            receive < 1 << 32,
            "bsp-sort: a processor would rank 2^32 keys or more"
        );
        self.mine = start_of(me)..owner_end[me];
        self.base = total[..self.mine.start].iter().sum();
        self.make_room(ctx, most);
        ctx.label("rank: move keys");
        match &self.recv {
            Landing::Low(recv) => ctx.put_direct_by_digit_low(recv, &counted, &pieces),
            Landing::Whole(recv) => ctx.put_direct_by_digit_low(recv, &counted, &pieces),
        }
        ctx.label("rank: local counts");
        let lo = (self.mine.start as u32) << shift;
        let hi = ((self.mine.end as u64) << shift).min(u64::from(self.max_key)) as u32;
        self.values = lo..hi.max(lo);
        // Every counter is zeroed with its bucket's window below.
        self.prefix.resize(self.values.len(), 0);
        let bucket_keys = &total[self.mine.clone()];
        let (max_key, prefix) = (self.max_key, &mut self.prefix[..]);
        match &self.recv {
            Landing::Low(recv) => {
                let received = &ctx.local(recv)[..receive];
                count_buckets(received, bucket_keys, lo, shift, max_key, prefix);
            }
            Landing::Whole(recv) => {
                let received = &ctx.local(recv)[..receive];
                count_buckets(received, bucket_keys, lo, shift, max_key, prefix);
            }
        }
        self.received = receive;
    }

    /// Registers a larger receive coarray where the processor that
    /// receives the most keys (`most`, the same on every processor)
    /// would not fit in the present one, with an eighth more room, so
    /// that the small changes of the keys from one rank to the next do
    /// not register it again. Collective.
    ///
    /// A coarray of its own, not a vector handed to one: under MPI on one
    /// node its memory is then a file the other ranks map, and the direct
    /// put of the keys writes straight into it, as on threads, without a
    /// send buffer or a copy at the receiver. NAS IS class B at p = 2
    /// under `mpirun`, 2^9 buckets, five alternated rounds: 588–723 Mop/s
    /// against 420–559 with a vector (AMD-2c, BENCHMARKS.md section 13j).
    ///
    /// The keys land as their bits below the bucket digit, in 2 bytes
    /// where those fit, so the coarray is registered again where a
    /// [`tune`](BucketRanker::tune) moves the digit across bit 16.
    fn make_room(&mut self, ctx: &mut Ctx, most: usize) {
        let low = self.shift <= u16::BITS;
        if most <= self.room && low == matches!(self.recv, Landing::Low(_)) {
            return;
        }
        self.room = self.room.max(most + most / 8);
        let fresh = if low {
            Landing::Low(ctx.coarray(self.room))
        } else {
            Landing::Whole(ctx.coarray(self.room))
        };
        std::mem::replace(&mut self.recv, fresh).discard(ctx);
    }

    /// The key values whose ranks this processor knows (after a
    /// [`rank`](BucketRanker::rank)): a contiguous range, below those of
    /// the next processor.
    ///
    /// # Examples
    ///
    /// See [`BucketRanker`].
    ///
    /// # Cost
    ///
    /// Local, O(1).
    pub fn key_range(&self) -> Range<u32> {
        self.values.clone()
    }

    /// The number of keys, over all processors, smaller than `key`, if
    /// `key` lies in this processor's [`key_range`](BucketRanker::key_range).
    ///
    /// # Examples
    ///
    /// See [`BucketRanker`].
    ///
    /// # Cost
    ///
    /// Local, O(1).
    pub fn rank_of(&self, key: u32) -> Option<u64> {
        self.values
            .contains(&key)
            .then(|| self.base + u64::from(self.prefix[(key - self.values.start) as usize]))
    }

    /// This processor's keys (those of its key range), sorted: the
    /// processors' sorted keys in pid order are all keys in order.
    ///
    /// # Examples
    ///
    /// See [`BucketRanker`].
    ///
    /// # Cost
    ///
    /// Local, O(received keys + key range).
    pub fn sorted_keys(&self) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.received);
        let ends = self
            .prefix
            .iter()
            .skip(1)
            .copied()
            .chain([self.received as u32]);
        for ((v, &start), end) in self.values.clone().zip(&self.prefix).zip(ends) {
            out.extend(std::iter::repeat_n(v, (end - start) as usize));
        }
        out
    }

    /// Releases the ranker's registered buffers. Collective.
    ///
    /// # Examples
    ///
    /// ```
    /// bsp_core::run(2, |ctx| {
    ///     let ranker = bsp_sort::expert::BucketRanker::new(ctx, 100);
    ///     ranker.release(ctx);
    /// })
    /// .unwrap();
    /// ```
    ///
    /// # Cost
    ///
    /// Local: frees the receive buffer (about n/p keys) and p·2^11 words.
    pub fn release(self, ctx: &mut Ctx) {
        self.recv.discard(ctx);
        self.gather.release(ctx);
    }
}

/// Where a [`BucketRanker`]'s keys land: each key's bits below the bucket
/// digit, which with its bucket (known from where it lands) give the key
/// back. Two bytes a key where the bits fit, which halves the bytes the
/// scatter writes and the local count reads: NAS IS class C at p = 2,
/// 2^9 buckets, moved and counted its keys in 122–174 ms a processor per
/// iteration against 169–209 with whole keys (AMD-2c, BENCHMARKS.md
/// section 13n).
enum Landing {
    /// The bits below the digit, where the digit starts at bit 16 or lower.
    Low(Coarray<u16>),
    /// The bits below the digit, of a digit higher up.
    Whole(Coarray<u32>),
}

impl Landing {
    /// Releases the coarray. Collective.
    fn discard(self, ctx: &mut Ctx) {
        match self {
            Landing::Low(recv) => ctx.discard(recv),
            Landing::Whole(recv) => ctx.discard(recv),
        }
    }
}

/// Counts the keys of each of this processor's buckets over the bucket's
/// values and turns the counts into exclusive prefix sums in `prefix`
/// (the values from `lo` on), bucket by bucket, while the bucket's
/// counters are in the cache, as NPB does: `received` holds each key's
/// bits below the digit, grouped by bucket, `bucket_keys[i]` of them for
/// the processor's i-th bucket, whose counters are 2^shift words. Counting
/// every key first and summing all counters after took 8.5–9.1 ms a
/// processor per class B iteration at p = 2, this way 5.2–5.6 ms (AMD-2b,
/// 2026-11-27).
///
/// # Panics
///
/// Where a key lies at or above `max_key` (in the last bucket).
fn count_buckets<E: Copy + Into<u32>>(
    received: &[E],
    bucket_keys: &[u64],
    lo: u32,
    shift: u32,
    max_key: u32,
    prefix: &mut [u32],
) {
    let (mut keys, mut at) = (received, 0u32);
    let mut windows = prefix;
    for (i, &count) in bucket_keys.iter().enumerate() {
        let (bucket, rest) = keys.split_at(count as usize);
        keys = rest;
        // The bucket's values: 2^shift of them, fewer in the last bucket.
        let first = lo + ((i as u32) << shift);
        let (window, others) = windows.split_at_mut(windows.len().min(1 << shift));
        windows = others;
        window.fill(0);
        for &low in bucket {
            let low: u32 = low.into();
            match window.get_mut(low as usize) {
                Some(count) => *count += 1,
                None => key_out_of_range(first + low, max_key),
            }
        }
        for c in window {
            let count = *c;
            *c = at;
            at += count;
        }
    }
}

/// Ends the run for a key the ranker was not made for.
#[cold]
#[inline(never)]
fn key_out_of_range(key: u32, max_key: u32) -> ! {
    panic!("bsp-sort: key {key} >= max_key {max_key}")
}
