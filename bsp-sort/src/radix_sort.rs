//! The stable LSD radix sort (Bader, Helman and JáJá 1995, Sect. 4.2):
//! counting-sort passes from the least significant digit up.

use bsp_core::expert::line_writer::LINE_BYTES;
use bsp_core::Ctx;
use bytemuck::Pod;

use crate::counting_sort::{Delivery, Engine, Source};
use crate::digit_pass::{plan, DigitPass};
use crate::key::RadixKey;
use crate::top_first::{balanced, top_plan, TopPlan};
use crate::top_halves::count_with_front;

/// The widest digit the automatic choice uses.
const MAX_AUTO_BITS: u32 = 11;
/// The widest digit an explicit choice may ask for.
pub const MAX_DIGIT_BITS: u32 = 16;

/// Tuning of a [`RadixSorter`].
///
/// # Examples
///
/// ```
/// use bsp_sort::{RadixOptions, RadixSorter};
///
/// let out = bsp_core::run(2, |ctx| {
///     let mut keys: Vec<u16> = (0..100).map(|i| (i * 37 % 101) as u16).collect();
///     let options = RadixOptions { digit_bits: Some(4), ..RadixOptions::default() };
///     let mut sorter = RadixSorter::with_options(ctx, keys.len(), options);
///     let info = sorter.sort(ctx, &mut keys);
///     (keys, info.passes.len())
/// })
/// .unwrap();
/// assert!(out.get(0).unwrap().0.windows(2).all(|w| w[0] <= w[1]));
/// assert_eq!(out.get(0).unwrap().1, 2); // keys below 101 vary in their low 7 bits: two 4-bit digits
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RadixOptions {
    /// Bits per digit (1 to [`MAX_DIGIT_BITS`]); `None` chooses from n/p:
    /// up to 11 bits, fewer when n/p is small, balanced over the bits
    /// that vary. A top digit taken first ([`DigitOrder`]) is then the
    /// narrowest that leaves each bucket, with a scratch copy, within a
    /// core's L2 cache (as Linux reports it; 1 MiB where it does not),
    /// widened where that saves a local pass, or else one bit narrower
    /// where the scatter's 64-byte line buffers, one per bucket, overflow
    /// the L1 data cache and the buckets alone still fit the L2.
    pub digit_bits: Option<u32>,
    /// How each pass delivers its keys.
    pub delivery: Delivery,
    /// Which digit goes first.
    pub order: DigitOrder,
    /// Sort on every digit of the key's width, even those in which no key
    /// differs (by default they are skipped). For measurements that should
    /// not depend on the input's spread, as the paper's do.
    pub keep_constant_digits: bool,
}

/// The order in which a [`RadixSorter`] takes the digits. Both orders give
/// the same, stable, result.
///
/// # Examples
///
/// ```
/// use bsp_sort::{RadixOptions, RadixSorter};
/// use bsp_sort::expert::DigitOrder;
///
/// let out = bsp_core::run(2, |ctx| {
///     let mut keys: Vec<u32> = (0..1000u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
///     let options = RadixOptions { order: DigitOrder::TopFirst, ..RadixOptions::default() };
///     let info = RadixSorter::with_options(ctx, keys.len(), options).sort(ctx, &mut keys);
///     (keys, info.top_first)
/// })
/// .unwrap();
/// assert!(out.get(0).unwrap().0.windows(2).all(|w| w[0] <= w[1]));
/// assert!(out.get(0).unwrap().1);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DigitOrder {
    /// `TopFirst` when at least 2^16 keys per processor need more than one
    /// digit and the top digit splits them evenly (no bucket above four
    /// times the average or half a processor's share); `LeastFirst` otherwise (the choice
    /// is made after counting the top digit, the same on every processor).
    #[default]
    Auto,
    /// The paper's LSD radix sort: one distributed counting-sort pass per
    /// digit, least significant first. Every key crosses main memory once
    /// per digit.
    LeastFirst,
    /// One distributed counting-sort pass on the most significant digit,
    /// then a local LSD sort of every bucket (in the cache when buckets are
    /// small); a bucket that straddles a processor boundary is gathered,
    /// sorted and sent back by its first processor (two more supersteps).
    TopFirst,
}

/// What a radix sort did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SortInfo {
    /// The passes made, least significant digit first. Digits in which no
    /// key differs from any other are skipped.
    pub passes: Vec<DigitPass>,
    /// The key bits in which some keys differ (over all processors).
    pub varying_bits: u64,
    /// Whether the sort took the top digit first ([`DigitOrder::TopFirst`]):
    /// the last entry of `passes` was then the distributed pass, and the
    /// others were local passes over each bucket.
    pub top_first: bool,
}

/// Automatic digit width for `per_proc` keys per processor: about
/// log2(n/p) − 5 bits, between 4 and [`MAX_AUTO_BITS`].
fn auto_bits(per_proc: usize) -> u32 {
    (per_proc.max(1).ilog2().saturating_sub(5)).clamp(4, MAX_AUTO_BITS)
}

/// Automatic width of a top-first sort's top digit for `total` elements
/// of `size` bytes, a core's `l2` and `l1d` bytes of cache and the
/// `planned` key bits: the narrowest (from 4 to [`MAX_AUTO_BITS`] bits)
/// whose buckets of total / 2^bits elements fit in the L2 with their
/// scratch copy, widened where a wider top digit saves a local pass; one
/// bit narrower, where the width was not widened, when the scatter's line
/// buffers overflow the L1 and the buckets alone still fit in the L2.
///
/// Narrow: the scatter to the buckets' owners keeps a 64-byte line buffer
/// and a window per bucket, and fewer of them stay closer to the core (on
/// AMD-2c, Zen 4 with 1 MiB of L2, the reused sort of 2^26 pairs took
/// 0.253–0.260 s with 10 bits against 0.274–0.275 with 11; BENCHMARKS.md,
/// section 13f). In the cache: each local pass reads and writes the whole
/// bucket. With 2^26 keys of 4 bytes and 1 MiB, 9 bits give buckets of
/// 2^17 keys (512 KiB, 1 MiB with the scratch copy); with 32 varying bits
/// they would leave 23 below for three local passes, and 10 leave 22 for
/// two.
///
/// In the L1: 2^26 pairs fit the L2 with their scratch copy at 10 bits,
/// whose 1024 line buffers (64 KiB) are twice the 32 KiB L1 of AMD-2c. At
/// 9 bits (32 KiB of line buffers, buckets of 1 MiB whose scratch copy
/// spills to the L3, three local passes of 7–8 bits), the scatter took
/// 88–93 ms a processor against 108–125 and the local sorts as long; the
/// sort of pairs [R] 0.315–0.321 s one-shot against 0.331–0.340, and
/// reused 0.257–0.278 against 0.280–0.287. With 2^27 pairs, 10 bits
/// against 11 (128 KiB of line buffers): the two halves' scatters
/// 210–285 ms against 256–360 (five runs each), the local sorts level;
/// with 2^28 keys 433–528 against 551–610 (BENCHMARKS.md section 13o).
/// Keys of 2^26, whose 10 bits come from the widening, measured level
/// either way and keep it.
fn auto_top_bits(total: usize, size: usize, l2: u64, l1d: u64, planned: u64) -> u32 {
    // The narrowest width whose buckets, `copies` of them, fit in the L2.
    let fit = |copies: u128| {
        let bytes = copies * total as u128 * size.max(1) as u128;
        let buckets = bytes.div_ceil(u128::from(l2.max(1)));
        let bits = if buckets <= 1 {
            0
        } else {
            (buckets - 1).ilog2() + 1
        };
        bits.clamp(4, MAX_AUTO_BITS)
    };
    let preferred = fit(2);
    let widened = (preferred..=MAX_AUTO_BITS)
        .min_by_key(|&bits| {
            top_plan(planned, bits, MAX_AUTO_BITS).map_or(0, |plan| plan.local.len())
        })
        .unwrap_or(preferred);
    let lines_fit = |bits: u32| (LINE_BYTES as u64) << bits <= l1d;
    let narrower = widened.saturating_sub(1);
    if widened == preferred && !lines_fit(widened) && narrower >= fit(1) {
        narrower
    } else {
        widened
    }
}

/// A reusable, stable, distributed LSD radix sort for elements of type `T`.
///
/// Registered once (collectively) for a fixed local length; each
/// [`sort_by_key`](RadixSorter::sort_by_key) then sorts the processors'
/// local slices together. The output is congruent with the input: every
/// processor keeps its number of elements, its slice ends up sorted, and all
/// its keys are ≤ those of the next processor. Equal keys keep their global
/// input order (processor, then position).
///
/// # Examples
///
/// ```
/// use bsp_sort::RadixSorter;
///
/// let out = bsp_core::run(4, |ctx| {
///     let s = ctx.pid() as i64;
///     let mut keys: Vec<i64> = (0..1000).map(|i| (i * 7919 + s * 104729) % 2001 - 1000).collect();
///     let mut sorter = RadixSorter::new(ctx, keys.len());
///     sorter.sort(ctx, &mut keys);
///     keys
/// })
/// .unwrap();
/// let all: Vec<i64> = out.concat();
/// assert!(all.windows(2).all(|w| w[0] <= w[1]));
/// assert!(out.iter().all(|part| part.len() == 1000));
/// ```
pub struct RadixSorter<T> {
    engine: Engine<T>,
    options: RadixOptions,
}

impl<T: Pod + Send> RadixSorter<T> {
    /// Registers a sorter for `local_len` elements on this processor, with
    /// default options. Collective: every processor calls it at the same
    /// point (local lengths may differ).
    ///
    /// # Examples
    ///
    /// See [`RadixSorter`].
    ///
    /// # Panics
    ///
    /// Never.
    ///
    /// # Cost
    ///
    /// One superstep (h = p words); allocates 2·`local_len` elements and
    /// about 3·2^11 words.
    pub fn new(ctx: &mut Ctx, local_len: usize) -> Self {
        Self::with_options(ctx, local_len, RadixOptions::default())
    }

    /// Like [`new`](RadixSorter::new), with `options`.
    ///
    /// # Examples
    ///
    /// See [`RadixOptions`].
    ///
    /// # Panics
    ///
    /// If `options.digit_bits` is 0 or above [`MAX_DIGIT_BITS`].
    ///
    /// # Cost
    ///
    /// As [`new`](RadixSorter::new), with 3·2^bits words for the counts.
    pub fn with_options(ctx: &mut Ctx, local_len: usize, options: RadixOptions) -> Self {
        let max_bits = options.digit_bits.unwrap_or(MAX_AUTO_BITS);
        assert!(
            (1..=MAX_DIGIT_BITS).contains(&max_bits),
            "bsp-sort: digit_bits must be in 1..={MAX_DIGIT_BITS}, not {max_bits}"
        );
        RadixSorter {
            engine: Engine::new(ctx, local_len, 1 << max_bits),
            options,
        }
    }

    /// Sorts the processors' `data` together, stably, by `key`.
    ///
    /// Collective: every processor calls it with its own slice and the same
    /// key function. Returns the passes made (the same on every processor).
    ///
    /// # Examples
    ///
    /// See [`radix_sort_by_key`], its one-shot form.
    ///
    /// # Panics
    ///
    /// If `data.len()` differs from the `local_len` given at registration.
    ///
    /// # Cost
    ///
    /// One superstep to find the varying key bits (h = 3p words), then per
    /// digit pass three supersteps (four for [`Delivery::Staged`]): two
    /// transposes of R/p and 2R/p words and one direct put with h = n/p
    /// elements plus about R + p 16-byte claims. Local work O(n/p + R) per
    /// pass. Taking the top digit first ([`DigitOrder`]): one such pass,
    /// local passes over each bucket, and two supersteps with h the size
    /// of the buckets that straddle processor boundaries.
    pub fn sort_by_key<K: RadixKey>(
        &mut self,
        ctx: &mut Ctx,
        data: &mut [T],
        key: impl Fn(&T) -> K + Copy,
    ) -> SortInfo {
        let (mut info, counted) = self.plan(ctx, data, key);
        // The first pass reads `data`; each distributed pass leaves its
        // result in the engine, and the last one's is copied back into
        // `data`. Taking the top digit first, each bucket is copied into
        // `data` as soon as it is sorted, while it is in the cache.
        let planned = self.planned_bits::<K>(info.varying_bits);
        let placed = self.run_passes(ctx, Some(data), planned, &mut info, counted, key);
        if placed == Placed::InEngine {
            self.engine.settle(ctx, data);
        }
        info
    }

    /// Like [`sort_by_key`](RadixSorter::sort_by_key), on a `Vec` whose
    /// buffer the sorter borrows: the keys are never copied in or out (the
    /// sorted keys come back in one of the sorter's buffers, and `data`'s
    /// old buffer stays with the sorter). The fastest way to sort.
    ///
    /// # Examples
    ///
    /// ```
    /// let out = bsp_core::run(2, |ctx| {
    ///     let mut recs: Vec<[u64; 2]> = (0..50).map(|i| [(i * 7) % 10, i]).collect();
    ///     let mut sorter = bsp_sort::RadixSorter::new(ctx, recs.len());
    ///     sorter.sort_vec_by_key(ctx, &mut recs, |r| r[0]);
    ///     recs
    /// })
    /// .unwrap();
    /// assert!(out.concat().windows(2).all(|w| w[0][0] <= w[1][0]));
    /// ```
    ///
    /// # Panics
    ///
    /// As [`sort_by_key`](RadixSorter::sort_by_key).
    ///
    /// # Cost
    ///
    /// As [`sort_by_key`](RadixSorter::sort_by_key), without the final
    /// copy. A sorter's first sort of a `Vec`, taking the top digit first,
    /// moves it in two halves so as to map only about half its receive
    /// buffer: one superstep more (an all-gather of 2R words per
    /// processor) and a copy of each bucket out of the cache; its second
    /// sort maps the rest.
    pub fn sort_vec_by_key<K: RadixKey>(
        &mut self,
        ctx: &mut Ctx,
        data: &mut Vec<T>,
        key: impl Fn(&T) -> K + Copy,
    ) -> SortInfo {
        let (mut info, counted) = self.plan(ctx, data, key);
        if info.passes.is_empty() {
            return info;
        }
        let spare = self.engine.swap_current(ctx, std::mem::take(data));
        let planned = self.planned_bits::<K>(info.varying_bits);
        self.run_passes(ctx, None, planned, &mut info, counted, key);
        *data = self.engine.swap_current(ctx, spare);
        info
    }

    /// Runs the passes of `info` on `data`, or on the engine's current
    /// sequence where `data` is `None` (the top digit first where the
    /// options and the counts say so, which `info` then records); returns
    /// where the sorted keys are. `counted`, where the plan counted the
    /// top bits on its way, stands in for the top digit's count when it
    /// covers it.
    fn run_passes<K: RadixKey>(
        &mut self,
        ctx: &mut Ctx,
        mut data: Option<&mut [T]>,
        planned: u64,
        info: &mut SortInfo,
        counted: Option<TopCounts>,
        key: impl Fn(&T) -> K + Copy,
    ) -> Placed {
        if info.passes.is_empty() {
            return Placed::Unmoved;
        }
        let first = match &data {
            Some(data) => Source::Slice(data),
            None => Source::Current,
        };
        if let Some(top) = self.top_candidate(ctx, planned, info) {
            let TopPlan { top: pass, local } = top;
            let mask = (1u64 << pass.bits) - 1;
            let digit = move |x: &T| ((key(x).radix() >> pass.shift) & mask) as usize;
            // A first sort of a `Vec` may move the top digit in halves,
            // which needs its counts over the front of the keys too.
            let may_halve = data.is_none() && self.engine.next_untouched;
            let front = match counted.and_then(|c| c.of(pass)) {
                Some((counts, front)) => {
                    self.engine.rank_counted(ctx, counts);
                    Some(front)
                }
                None if may_halve => {
                    let keys = ctx.local(&self.engine.cur);
                    let (counts, front) = count_with_front(keys, 1 << pass.bits, digit);
                    self.engine.rank_counted(ctx, counts);
                    Some(front)
                }
                None => {
                    self.engine.rank(ctx, first, 1 << pass.bits, digit);
                    None
                }
            };
            let forced = self.options.order == DigitOrder::TopFirst;
            let p = ctx.nprocs();
            if forced || balanced(self.engine.global_start(), self.engine.total_len(), p) {
                let radix = move |x: &T| key(x).radix();
                // The first sort of a `Vec`: the top pass in halves maps
                // half the receive buffer (where the halves fit).
                let halved = match front {
                    Some(front) if may_halve && self.halves_pay(ctx) => {
                        self.engine.top_in_halves(ctx, &front, digit, &local, radix)
                    }
                    _ => false,
                };
                if !halved {
                    self.engine.deliver_direct(ctx, first, digit);
                    self.engine
                        .sort_buckets(ctx, &local, radix, data.as_deref_mut());
                }
                info.passes = local;
                info.passes.push(pass);
                info.top_first = true;
                return match data {
                    Some(_) => {
                        self.engine.recycle_current();
                        Placed::InSlice
                    }
                    None => Placed::InEngine,
                };
            }
        }
        for (i, pass) in info.passes.iter().enumerate() {
            let source = if i == 0 { first } else { Source::Current };
            self.run_pass(ctx, source, *pass, key);
        }
        Placed::InEngine
    }

    /// Whether the top digit's pass in two halves
    /// ([`Engine::top_in_halves`]) pays, in a sorter's first sort of a
    /// `Vec` (whose receive buffer has never been written, the same on
    /// every processor): where the counts the halves exchange (2R words
    /// from each processor) are small beside the keys. A one-shot sort of a
    /// `Vec` thus maps half as much fresh memory; a kept sorter maps the
    /// rest in its second sort, and moves the top digit at once from then
    /// on: in two halves, a kept sorter's sorts of 2^26 pairs at p = 2
    /// took 0.35–0.47 s against 0.27–0.31 at once (three alternated
    /// runs, each repetition in a process of its own; AMD-2c,
    /// BENCHMARKS.md section 13l).
    fn halves_pay(&self, ctx: &Ctx) -> bool {
        let words = 2 * self.engine.counts.len() * ctx.nprocs();
        let bytes = self.engine.total_len() / ctx.nprocs() * std::mem::size_of::<T>();
        8 * words * 16 <= bytes
    }

    /// The top-first plan, when the options allow it and it may pay.
    fn top_candidate(&self, ctx: &Ctx, planned: u64, info: &SortInfo) -> Option<TopPlan> {
        let total = self.engine.total_len();
        let per_proc = total / ctx.nprocs();
        let (top_bits, local_bits) = match self.options.digit_bits {
            Some(bits) => (bits, bits),
            None => {
                let size = std::mem::size_of::<T>();
                let engine = &self.engine;
                let bits = auto_top_bits(total, size, engine.l2_bytes, engine.l1d_bytes, planned);
                (bits, MAX_AUTO_BITS)
            }
        };
        match self.options.order {
            DigitOrder::LeastFirst => None,
            DigitOrder::TopFirst => top_plan(planned, top_bits, local_bits),
            DigitOrder::Auto if per_proc >= 1 << 16 && info.passes.len() >= 2 => {
                top_plan(planned, top_bits, local_bits)
            }
            DigitOrder::Auto => None,
        }
    }

    /// The key bits the passes cover: those that vary, or with
    /// `keep_constant_digits` every bit of the key's width (when any varies).
    fn planned_bits<K: RadixKey>(&self, varying: u64) -> u64 {
        if self.options.keep_constant_digits && varying != 0 {
            u64::MAX >> (64 - K::BITS)
        } else {
            varying
        }
    }

    /// Checks the local length and chooses the digit passes (one
    /// superstep); with them, the counts of the top bits where it made
    /// them (see [`survey_keys`](RadixSorter::survey_keys)).
    fn plan<K: RadixKey>(
        &self,
        ctx: &mut Ctx,
        data: &[T],
        key: impl Fn(&T) -> K,
    ) -> (SortInfo, Option<TopCounts>) {
        let n = self.engine.local_len(ctx.pid());
        assert_eq!(
            data.len(),
            n,
            "bsp-sort: data length differs from local_len"
        );
        let (varying, counted) = self.survey_keys(ctx, data, key);
        let per_proc = self.engine.total_len() / ctx.nprocs();
        let max_bits = self
            .options
            .digit_bits
            .unwrap_or_else(|| auto_bits(per_proc));
        let info = SortInfo {
            passes: plan(self.planned_bits::<K>(varying), max_bits),
            varying_bits: varying,
            top_first: false,
        };
        (info, counted)
    }

    fn run_pass<K: RadixKey>(
        &mut self,
        ctx: &mut Ctx,
        source: Source<'_, T>,
        pass: DigitPass,
        key: impl Fn(&T) -> K + Copy,
    ) {
        let mask = (1u64 << pass.bits) - 1;
        let shift = pass.shift;
        let digit = move |x: &T| ((key(x).radix() >> shift) & mask) as usize;
        self.engine
            .pass(ctx, source, 1 << pass.bits, digit, self.options.delivery);
    }

    /// Releases the sorter's registered buffers (see
    /// [`Ctx::release`](bsp_core::Ctx::release)). Collective: every
    /// processor releases its sorter at the same point.
    ///
    /// # Examples
    ///
    /// ```
    /// bsp_core::run(2, |ctx| {
    ///     let mut keys = vec![3u32, 1, 2];
    ///     let mut sorter = bsp_sort::RadixSorter::new(ctx, keys.len());
    ///     sorter.sort(ctx, &mut keys);
    ///     sorter.release(ctx);
    /// })
    /// .unwrap();
    /// ```
    ///
    /// # Cost
    ///
    /// Local: frees 2 local lengths of elements and about 3·2^bits words.
    pub fn release(self, ctx: &mut Ctx) {
        self.engine.release(ctx);
    }

    /// Reads the keys once for what the plan needs to know of them: the
    /// key bits in which some keys differ, over all processors (one
    /// superstep), and, where it pays, counts of the top bits.
    ///
    /// Where the top digit may come first and this processor holds at
    /// least [`FUSED_COUNT_MIN`] elements, the same read of `data` also
    /// counts the top bits: the [`MAX_AUTO_BITS`] bits below the highest
    /// bit in which the first [`FUSED_SAMPLE`] keys differ. When the top
    /// digit turns out to lie within them, its count needs no read of its
    /// own (see [`TopCounts`]). Reused sorts of 2^26 elements at p = 2,
    /// three alternated rounds: pairs [R] 0.252–0.256 s against
    /// 0.260–0.270, pairs [S] 0.288–0.300 against 0.317–0.323, keys [S]
    /// 0.259–0.267 against 0.268–0.276, keys [R] level (AMD-2c,
    /// BENCHMARKS.md section 13g).
    fn survey_keys<K: RadixKey>(
        &self,
        ctx: &mut Ctx,
        data: &[T],
        key: impl Fn(&T) -> K,
    ) -> (u64, Option<TopCounts>) {
        ctx.label("sort: survey the keys");
        let first = data.first().map_or(0, |x| key(x).radix());
        let differ = |keys: &[T]| keys.iter().fold(0, |acc, x| acc | (key(x).radix() ^ first));
        let sample = differ(&data[..data.len().min(FUSED_SAMPLE)]);
        let fuse = self.options.order != DigitOrder::LeastFirst
            && data.len() >= FUSED_COUNT_MIN
            && sample != 0;
        let (local, counted) = if fuse {
            let hi = 64 - sample.leading_zeros();
            let bits = hi.min(MAX_AUTO_BITS);
            let (shift, mask) = (hi - bits, (1u64 << bits) - 1);
            let mut seen = 0;
            let (counts, front) = count_with_front(data, 1 << bits, |x: &T| {
                let r = key(x).radix();
                seen |= r ^ first;
                ((r >> shift) & mask) as usize
            });
            let counted = TopCounts {
                shift,
                bits,
                counts,
                front,
            };
            (seen, Some(counted))
        } else {
            (differ(data), None)
        };
        let row = [u64::from(!data.is_empty()), first, local];
        let rows = self.engine.gather().all_gather(ctx, &row);
        let present: Vec<&[u64]> = rows.chunks_exact(3).filter(|r| r[0] == 1).collect();
        let reference = present.first().map_or(0, |r| r[1]);
        let varying = present
            .iter()
            .fold(0, |acc, r| acc | r[2] | (r[1] ^ reference));
        (varying, counted)
    }
}

impl<K: RadixKey + Pod + Send> RadixSorter<K> {
    /// Sorts the processors' keys together (see
    /// [`sort_by_key`](RadixSorter::sort_by_key)).
    ///
    /// # Examples
    ///
    /// ```
    /// let out = bsp_core::run(2, |ctx| {
    ///     let mut keys = vec![2.5f32, -1.0, f32::NAN, 0.0];
    ///     let mut sorter = bsp_sort::RadixSorter::new(ctx, keys.len());
    ///     sorter.sort(ctx, &mut keys);
    ///     keys
    /// })
    /// .unwrap();
    /// assert_eq!(out.get(0).unwrap(), &[-1.0, -1.0, 0.0, 0.0]);
    /// assert_eq!(out.get(1).unwrap()[..2], [2.5, 2.5]);
    /// assert!(out.get(1).unwrap()[2].is_nan() && out.get(1).unwrap()[3].is_nan());
    /// ```
    ///
    /// # Panics
    ///
    /// As [`sort_by_key`](RadixSorter::sort_by_key).
    ///
    /// # Cost
    ///
    /// As [`sort_by_key`](RadixSorter::sort_by_key).
    pub fn sort(&mut self, ctx: &mut Ctx, data: &mut [K]) -> SortInfo {
        self.sort_by_key(ctx, data, |k| *k)
    }

    /// Sorts the processors' keys together, borrowing `data`'s buffer (see
    /// [`sort_vec_by_key`](RadixSorter::sort_vec_by_key)).
    ///
    /// # Examples
    ///
    /// ```
    /// let out = bsp_core::run(2, |ctx| {
    ///     let mut keys: Vec<i16> = (0..100).map(|i| (i * 41 % 97) as i16 - 50).collect();
    ///     let mut sorter = bsp_sort::RadixSorter::new(ctx, keys.len());
    ///     sorter.sort_vec(ctx, &mut keys);
    ///     keys
    /// })
    /// .unwrap();
    /// assert!(out.concat().windows(2).all(|w| w[0] <= w[1]));
    /// ```
    ///
    /// # Panics
    ///
    /// As [`sort_by_key`](RadixSorter::sort_by_key).
    ///
    /// # Cost
    ///
    /// As [`sort_vec_by_key`](RadixSorter::sort_vec_by_key).
    pub fn sort_vec(&mut self, ctx: &mut Ctx, data: &mut Vec<K>) -> SortInfo {
        self.sort_vec_by_key(ctx, data, |k| *k)
    }
}

/// Elements a processor needs before [`RadixSorter::survey_keys`] counts
/// the top bits on its way (the size from which the automatic order takes
/// the top digit first).
const FUSED_COUNT_MIN: usize = 1 << 16;

/// Keys whose differing bits place the counted top bits.
const FUSED_SAMPLE: usize = 1 << 12;

/// This processor's counts of bits `shift..shift + bits` of its keys'
/// images, made while the plan read the keys for their varying bits.
struct TopCounts {
    shift: u32,
    bits: u32,
    counts: Vec<u64>,
    /// The same counts over the first
    /// [`front_len`](crate::top_halves::front_len) keys only.
    front: Vec<u64>,
}

impl TopCounts {
    /// The counts of `pass`'s digit, over all keys and over the front,
    /// where it is the top of the counted bits or all of them (it then
    /// ends where they end): each of its digits sums 2^(bits − pass.bits)
    /// neighbouring counts. `None` otherwise (the keys varied above the
    /// sample's highest bit, or the digit is wider).
    fn of(self, pass: DigitPass) -> Option<(Vec<u64>, Vec<u64>)> {
        if pass.shift + pass.bits != self.shift + self.bits || pass.bits > self.bits {
            return None;
        }
        let fold = self.bits - pass.bits;
        if fold == 0 {
            return Some((self.counts, self.front));
        }
        let folded = |counts: &[u64]| {
            let mut folded = vec![0; 1 << pass.bits];
            for (j, c) in counts.iter().enumerate() {
                folded[j >> fold] += c;
            }
            folded
        };
        Some((folded(&self.counts), folded(&self.front)))
    }
}

/// Where [`RadixSorter::run_passes`] left the sorted keys.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Placed {
    /// No key moved: the input is the result.
    Unmoved,
    /// In the engine's current sequence.
    InEngine,
    /// In the caller's slice.
    InSlice,
}

/// Sorts the processors' keys together: a one-shot [`RadixSorter`] on
/// each processor's `Vec`, whose buffer it borrows (as
/// [`RadixSorter::sort_vec`]; to sort a slice, keep a sorter and call
/// [`RadixSorter::sort`]).
///
/// Collective. Registers its buffers on every call and releases them at
/// the end; a program that sorts repeatedly saves that work (and the page
/// faults of fresh memory) by keeping a [`RadixSorter`]. Taking the top
/// digit first, it maps only about half a receive buffer: the top digit
/// moves in two halves, the second into the part of the input already
/// read.
///
/// # Examples
///
/// ```
/// let out = bsp_core::run(3, |ctx| {
///     let mut keys: Vec<u64> = (0..10).map(|i| (i * 31 + ctx.pid() as u64 * 17) % 23).collect();
///     bsp_sort::radix_sort(ctx, &mut keys);
///     keys
/// })
/// .unwrap();
/// assert!(out.concat().windows(2).all(|w| w[0] <= w[1]));
/// ```
///
/// # Panics
///
/// Never, for any local lengths.
///
/// # Cost
///
/// As [`RadixSorter::new`] plus [`RadixSorter::sort_vec_by_key`]; taking
/// the top digit first, one superstep more (an all-gather of 2R words per
/// processor) and a copy of each bucket out of the cache.
pub fn radix_sort<K: RadixKey + Pod + Send>(ctx: &mut Ctx, data: &mut Vec<K>) -> SortInfo {
    radix_sort_by_key(ctx, data, |k| *k)
}

/// Sorts the processors' records together, stably, by `key`: a one-shot
/// [`RadixSorter`] on each processor's `Vec` (see [`radix_sort`] for when
/// to keep one instead).
///
/// # Examples
///
/// ```
/// let out = bsp_core::run(2, |ctx| {
///     // (key, payload) records; the payload records the input order.
///     let mut recs: Vec<[u32; 2]> = (0..6).map(|i| [i % 2, 10 * ctx.pid() as u32 + i]).collect();
///     bsp_sort::radix_sort_by_key(ctx, &mut recs, |r| r[0]);
///     recs
/// })
/// .unwrap();
/// let all = out.concat();
/// let payloads: Vec<u32> = all.iter().map(|r| r[1]).collect();
/// assert_eq!(payloads, [0, 2, 4, 10, 12, 14, 1, 3, 5, 11, 13, 15]);
/// ```
///
/// # Panics
///
/// Never, for any local lengths.
///
/// # Cost
///
/// As [`radix_sort`].
pub fn radix_sort_by_key<T: Pod + Send, K: RadixKey>(
    ctx: &mut Ctx,
    data: &mut Vec<T>,
    key: impl Fn(&T) -> K + Copy,
) -> SortInfo {
    let mut sorter = RadixSorter::new(ctx, data.len());
    let info = sorter.sort_vec_by_key(ctx, data, key);
    sorter.release(ctx);
    info
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::top_halves::front_len;

    #[test]
    fn the_automatic_width_grows_with_the_keys() {
        assert_eq!(auto_bits(1 << 25), 11);
        assert_eq!(auto_bits(10), 4);
    }

    #[test]
    fn the_top_digit_is_the_narrowest_whose_buckets_fit_the_cache() {
        let (bits32, bits31) = (0xffff_ffff, 0x7fff_ffff);
        const MIB: u64 = 1 << 20;
        const L1: u64 = 32 << 10;
        // 2^26 pairs of 8 bytes, 1 MiB of L2: buckets of 2^16 pairs (512
        // KiB, 1 MiB with the scratch copy) at 10 bits.
        assert_eq!(auto_top_bits(1 << 26, 8, MIB, 1 << 20, bits32), 10);
        // With a 32 KiB L1, whose 512 line buffers 9 bits keep: buckets
        // of 1 MiB, the L2 without their scratch copy.
        assert_eq!(auto_top_bits(1 << 26, 8, MIB, L1, bits32), 9);
        // With 512 KiB: 11 bits fit with the scratch copy, 10 without.
        assert_eq!(auto_top_bits(1 << 26, 8, MIB / 2, L1, bits32), 10);
        // 2^27 pairs: 11 bits, whose 128 KiB of line buffers overflow the
        // L1, narrowed to 10 (buckets of 1 MiB); 2^28 pairs stay at 11
        // (10 would leave 2 MiB buckets).
        assert_eq!(auto_top_bits(1 << 27, 8, MIB, L1, bits32), 10);
        assert_eq!(auto_top_bits(1 << 28, 8, MIB, L1, bits32), 11);
        // With 2 MiB of L2 and a 48 KiB L1: 9 bits fit with the scratch
        // copy, widened to 10 to save a local pass (and kept, as keys).
        assert_eq!(auto_top_bits(1 << 26, 8, 2 * MIB, 48 << 10, bits32), 10);
        // 2^26 keys of 4 bytes would fit at 9 bits, which leaves 23 of 32
        // varying bits for three local passes; 10 leaves 22 for two, and
        // stays (a width widened to save a pass is not narrowed).
        assert_eq!(auto_top_bits(1 << 26, 4, MIB, L1, bits32), 10);
        // With 31 varying bits, 9 leaves 22: two local passes.
        assert_eq!(auto_top_bits(1 << 26, 4, MIB, L1, bits31), 9);
        // Never wider than MAX_AUTO_BITS, never narrower than 4 (then
        // widened: 4 bits would leave three local passes, 10 two).
        assert_eq!(auto_top_bits(1 << 34, 8, MIB, L1, bits32), MAX_AUTO_BITS);
        assert_eq!(auto_top_bits(1 << 10, 4, MIB, L1, bits32), 10);
        // 16 varying bits: 4 would leave 12 below for two local passes, 5
        // leaves 11 for one.
        assert_eq!(auto_top_bits(1 << 20, 4, MIB, L1, 0xffff), 5);
        assert_eq!(
            top_plan(0xffff, 5, MAX_AUTO_BITS).map(|p| p.local.len()),
            Some(1)
        );
    }

    /// How many of this processor's complete supersteps bear `label`.
    fn supersteps_named(ctx: &Ctx, label: &str) -> usize {
        ctx.stats()
            .supersteps
            .iter()
            .filter(|s| s.label.as_deref() == Some(label))
            .count()
    }

    #[test]
    fn the_profile_names_the_supersteps_where_direct_passes_write() {
        // Three least-significant-first passes delivered directly: each
        // pass's keys are written in the superstep its put returns in,
        // where the next pass counts its digits.
        let options = RadixOptions {
            order: DigitOrder::LeastFirst,
            digit_bits: Some(8),
            delivery: Delivery::Direct,
            ..RadixOptions::default()
        };
        let labels = bsp_core::run(2, |ctx| {
            let s = ctx.pid() as u32;
            let mut keys: Vec<u32> = (0..5000u32)
                .map(|i| i.wrapping_mul(2_654_435_761).wrapping_add(s) >> 8)
                .collect();
            let mut sorter = RadixSorter::with_options(ctx, keys.len(), options);
            let info = sorter.sort(ctx, &mut keys);
            assert_eq!(info.passes.len(), 3);
            // A superstep's figures are complete after the sync that
            // follows the one ending it.
            ctx.sync();
            ctx.sync();
            (
                supersteps_named(ctx, "sort: count digits"),
                supersteps_named(ctx, "sort: move keys, count the next digits"),
                supersteps_named(ctx, "sort: move keys"),
            )
        })
        .unwrap();
        assert!(labels.iter().all(|&l| l == (1, 2, 1)), "{labels:?}");
    }

    #[test]
    fn counted_top_bits_stand_in_for_a_top_digit_that_ends_where_they_end() {
        // Bits 21..32 counted: 2^11 counts, count j = j, front count j = 2j.
        let counted = || TopCounts {
            shift: 21,
            bits: 11,
            counts: (0..1 << 11).collect(),
            front: (0..1 << 11).map(|j| 2 * j).collect(),
        };
        let all = counted()
            .of(DigitPass {
                shift: 21,
                bits: 11,
            })
            .unwrap();
        assert_eq!(all, (counted().counts, counted().front));
        // The top 10 bits: neighbouring pairs summed.
        let (ten, ten_front) = counted()
            .of(DigitPass {
                shift: 22,
                bits: 10,
            })
            .unwrap();
        assert_eq!(ten.len(), 1 << 10);
        assert_eq!(ten[..3], [1, 5, 9]);
        assert_eq!(ten_front[..3], [2, 10, 18]);
        // Ending elsewhere (the keys varied above the sample) or wider.
        assert_eq!(
            counted().of(DigitPass {
                shift: 23,
                bits: 10
            }),
            None
        );
        assert_eq!(
            counted().of(DigitPass {
                shift: 20,
                bits: 12
            }),
            None
        );
    }

    /// Sorts `[key, input index]` records of every processor with a new
    /// sorter's `sort_vec_by_key`, the top digit first, then again with
    /// the same sorter (the top digit at once); checks both results
    /// against a stable sequential sort and returns whether the first top
    /// pass went in halves (its superstep's label).
    fn first_vec_sort(p: usize, key: fn(usize, usize) -> u32) -> bool {
        let len = |q: usize| (1 << 17) + 1000 * q;
        let input = |q: usize| -> Vec<[u32; 2]> {
            let before: usize = (0..q).map(len).sum();
            (0..len(q))
                .map(|i| [key(q, i), (before + i) as u32])
                .collect()
        };
        let options = RadixOptions {
            order: DigitOrder::TopFirst,
            digit_bits: Some(8),
            ..RadixOptions::default()
        };
        let out = bsp_core::run(p, |ctx| {
            let mut recs = input(ctx.pid());
            let mut sorter = RadixSorter::with_options(ctx, recs.len(), options);
            let info = sorter.sort_vec_by_key(ctx, &mut recs, |r| r[0]);
            assert!(info.top_first);
            let fronts = "sort: move the fronts";
            let halves = supersteps_named(ctx, fronts) > 0;
            let mut again = input(ctx.pid());
            sorter.sort_vec_by_key(ctx, &mut again, |r| r[0]);
            assert_eq!(again, recs);
            let halves_again = supersteps_named(ctx, fronts);
            assert_eq!(
                halves_again,
                usize::from(halves),
                "the second sort moved in halves"
            );
            // A top pass at once writes and sorts the buckets in one
            // superstep, whose label says both.
            let at_once = supersteps_named(ctx, "sort: move keys, local buckets");
            assert_eq!(at_once, 2 - usize::from(halves));
            (recs, halves)
        })
        .unwrap();
        let mut want: Vec<[u32; 2]> = (0..p).flat_map(input).collect();
        want.sort_by_key(|r| r[0]);
        let got: Vec<[u32; 2]> = out.iter().flat_map(|(recs, _)| recs.clone()).collect();
        assert_eq!(got, want, "p = {p}");
        assert!(out
            .iter()
            .enumerate()
            .all(|(q, (recs, _))| recs.len() == len(q)));
        let halves = out.iter().map(|(_, halves)| *halves).collect::<Vec<_>>();
        assert!(
            halves.iter().all(|&h| h == halves[0]),
            "p = {p}: {halves:?}"
        );
        halves[0]
    }

    #[test]
    fn a_first_vec_sort_moves_the_top_digit_in_halves_stably() {
        // 20-bit keys at random: many equal keys, buckets cut by the
        // processors' boundaries (which the lengths put anywhere).
        let random =
            |q: usize, i: usize| ((i ^ (q << 24)).wrapping_mul(2_654_435_761) >> 12) as u32;
        for p in [1, 2, 3, 4] {
            assert!(
                first_vec_sort(p, random),
                "p = {p}: the halves were not taken"
            );
        }
    }

    #[test]
    fn two_buckets_over_every_processor_sort_stably_in_halves() {
        // One varying bit: two buckets, each straddling processors (and
        // at p = 3 and 4 covering one whole), all of one key apiece.
        let two = |q: usize, i: usize| (((i * 7 + q) % 2) << 19) as u32;
        for p in [1, 2, 3, 4] {
            assert!(first_vec_sort(p, two), "p = {p}: the halves were not taken");
        }
    }

    #[test]
    fn where_the_halves_do_not_fit_the_sort_moves_the_top_digit_at_once() {
        // Every front's keys below every rest's: the last processor would
        // receive nothing but rests.
        let split = |q: usize, i: usize| {
            let small = i < front_len((1 << 17) + 1000 * q);
            let low = ((i as u32).wrapping_mul(2_654_435_761) >> 13) & 0x7ffff;
            low | if small { 0 } else { 1 << 19 }
        };
        for p in [2, 3] {
            assert!(!first_vec_sort(p, split), "p = {p}: the halves were taken");
        }
    }

    #[test]
    fn keys_that_vary_above_the_sample_are_counted_again() {
        // 2^16 keys per processor (enough to count on the way), the first
        // FUSED_SAMPLE of them below 2^16 and the rest over 32 bits on one
        // processor, within 20 bits on the other: the counted bits (5..16)
        // do not end where the top digit does, and each processor counts
        // the top digit again.
        let n = FUSED_COUNT_MIN;
        let keys_of = |pid: usize| -> Vec<u32> {
            (0..n as u32)
                .map(|i| {
                    let mixed = i.wrapping_mul(2_654_435_761);
                    match (i < FUSED_SAMPLE as u32, pid) {
                        (true, _) => mixed & 0xffff,
                        (false, 0) => mixed,
                        (false, _) => mixed & 0xf_ffff,
                    }
                })
                .collect()
        };
        let options = RadixOptions {
            order: DigitOrder::TopFirst,
            ..RadixOptions::default()
        };
        let out = bsp_core::run(2, |ctx| {
            let mut keys = keys_of(ctx.pid());
            let mut sorter = RadixSorter::with_options(ctx, keys.len(), options);
            let info = sorter.sort(ctx, &mut keys);
            assert!(info.top_first);
            keys
        })
        .unwrap();
        let mut want: Vec<u32> = (0..2).flat_map(keys_of).collect();
        want.sort_unstable();
        assert_eq!(out.concat(), want);
    }
}
