//! Direct puts of integer keys grouped by a digit: the scatter of a
//! counting sort, written without a bounds check per key.
//!
//! [`DirectPut::put_direct`](crate::expert::DirectPut::put_direct) lends its writer one checked slice per piece. A
//! counting sort's writer sends every key to the piece of its digit, and
//! with a thousand digits the per-key bookkeeping of a checked slice (16
//! bytes of slice and a fill count per digit, a compare per key) costs a
//! fifth more than the sequential loop `out[next[d]++] = key` (NAS IS
//! class B, p = 2, threads: about 620 against 760 Mop/s, BENCHMARKS.md
//! section 4b as of commit d743920, in git). That loop is sound without any check
//! once two things are known: how many keys have each digit, and that
//! every digit's pieces hold exactly that many. [`DigitCounts`] counts the
//! keys with bsp-core's own digit function over a slice it keeps borrowed,
//! so the keys cannot change between the count and the scatter, and
//! [`DigitPut::put_direct_by_digit`] checks the pieces against the counts before
//! it writes a single key.

use bytemuck::Pod;

use super::line_writer::LineWriter;
use super::prefetch;
use crate::coarray::Coarray;
use crate::ctx::{Ctx, DirectPiece, DirectPut};
use crate::error::ErrorKind;

mod sealed {
    pub trait Sealed {}
}

/// An unsigned integer key whose digits bsp-core extracts itself: `u8`,
/// `u16`, `u32`, `u64` and `usize`. Sealed, so that the digit of a key is
/// the same every time it is taken, which is what lets
/// [`DigitPut::put_direct_by_digit`] write without checking each key.
///
/// # Examples
///
/// ```
/// use bsp_core::expert::DigitKey;
///
/// assert_eq!(0x1234u16.word(), 0x1234);
/// assert_eq!(u8::low_bits_of(0x1234), 0x34);
/// ```
pub trait DigitKey: Pod + Send + sealed::Sealed {
    /// The key as an unsigned 64-bit integer.
    fn word(self) -> u64;

    /// The low bits of `word`, as many as this type holds.
    fn low_bits_of(word: u64) -> Self;
}

macro_rules! digit_key {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl DigitKey for $t {
            #[inline(always)]
            fn word(self) -> u64 {
                self as u64
            }

            #[inline(always)]
            fn low_bits_of(word: u64) -> Self {
                word as $t
            }
        }
    )*};
}

digit_key!(u8, u16, u32, u64, usize);

/// A digit of an integer key: `bits` bits starting at bit `shift`, that is
/// `(key >> shift) & (2^bits − 1)`.
///
/// # Examples
///
/// ```
/// use bsp_core::expert::Digit;
///
/// let d = Digit::new(4, 8);
/// assert_eq!(d.of(0xabcd_u32), 0xbc);
/// assert_eq!(d.values(), 256);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Digit {
    shift: u32,
    mask: u64,
}

impl Digit {
    /// The widest digit: 24 bits (16 Mi values, 128 MiB of counts).
    pub const MAX_BITS: u32 = 24;

    /// The digit of `bits` bits starting at bit `shift`.
    ///
    /// # Examples
    ///
    /// See [`Digit`].
    ///
    /// # Panics
    ///
    /// If `bits` is 0 or above [`MAX_BITS`](Digit::MAX_BITS), or `shift`
    /// is 64 or more.
    pub fn new(shift: u32, bits: u32) -> Self {
        assert!(
            (1..=Self::MAX_BITS).contains(&bits),
            "bsp-core: a digit has 1 to {} bits, not {bits}",
            Self::MAX_BITS
        );
        assert!(
            shift < 64,
            "bsp-core: a digit's shift must be below 64, not {shift}"
        );
        Digit {
            shift,
            mask: (1 << bits) - 1,
        }
    }

    /// The number of values the digit takes: 2^bits.
    pub fn values(&self) -> usize {
        self.mask as usize + 1
    }

    /// The digit of `key`.
    #[inline(always)]
    pub fn of<K: DigitKey>(&self, key: K) -> usize {
        ((key.word() >> self.shift) & self.mask) as usize
    }

    /// The bits of a key below the digit: `key mod 2^shift`.
    #[inline(always)]
    pub fn below<K: DigitKey>(&self, key: K) -> u64 {
        key.word() & ((1 << self.shift) - 1)
    }

    /// Whether `bits` has a bit set above the digit (at `shift + bits`
    /// or higher), where a key's digit and the bits below it do not
    /// give the key back.
    pub fn has_bits_above(&self, bits: u64) -> bool {
        let top = self.shift + self.mask.count_ones();
        bits.checked_shr(top).is_some_and(|high| high != 0)
    }
}

/// Keys counted by a digit, ready for [`DigitPut::put_direct_by_digit`]: the
/// number of keys of each digit value, and the keys themselves, borrowed so
/// that they stay as counted.
///
/// # Examples
///
/// ```
/// use bsp_core::expert::{Digit, DigitCounts};
///
/// let keys = [5u32, 17, 3, 16];
/// let counted = DigitCounts::new(&keys, Digit::new(4, 1));
/// assert_eq!(counted.counts(), &[2, 2]);
/// ```
#[derive(Clone, Debug)]
pub struct DigitCounts<'k, K> {
    keys: &'k [K],
    digit: Digit,
    counts: Vec<u64>,
    /// Every bit set in some key: the OR of the keys.
    bits_set: u64,
}

impl<'k, K: DigitKey> DigitCounts<'k, K> {
    /// Counts `keys` by `digit`.
    ///
    /// # Examples
    ///
    /// See [`DigitCounts`].
    ///
    /// # Cost
    ///
    /// Local: one read of the keys and one increment per key, over
    /// 2^bits counters.
    pub fn new(keys: &'k [K], digit: Digit) -> Self {
        // Counted in 32-bit counters (half the cache lines of 64-bit ones),
        // added to the 64-bit totals every 2^32 − 1 keys, before they
        // could overflow.
        let mut counts = vec![0u64; digit.values()];
        let mut running = vec![0u32; digit.values()];
        let mut bits_set = 0;
        for chunk in keys.chunks(u32::MAX as usize) {
            for line in prefetch::lines(chunk) {
                for &k in line {
                    // One OR a key: 33–35 ms for NAS IS class C's count (2^26
                    // keys a processor) against 30–31 without; a loop of its
                    // own over each line took 34–51.
                    bits_set |= k.word();
                    let d = digit.of(k);
                    // SAFETY: `d` is at most the digit's mask, and `running`
                    // has `digit.values()` = mask + 1 entries.
                    unsafe { *running.get_unchecked_mut(d) += 1 };
                }
            }
            for (total, count) in counts.iter_mut().zip(&mut running) {
                *total += u64::from(std::mem::take(count));
            }
        }
        DigitCounts {
            keys,
            digit,
            counts,
            bits_set,
        }
    }

    /// The number of keys of each digit value.
    pub fn counts(&self) -> &[u64] {
        &self.counts
    }

    /// The keys counted.
    pub fn keys(&self) -> &'k [K] {
        self.keys
    }

    /// The digit they were counted by.
    pub fn digit(&self) -> Digit {
        self.digit
    }

    /// Every bit set in at least one key (the OR of the keys, as words):
    /// the highest key's bit length, say, or whether
    /// [`Digit::has_bits_above`] the digit.
    ///
    /// # Examples
    ///
    /// ```
    /// use bsp_core::expert::{Digit, DigitCounts};
    ///
    /// let counted = DigitCounts::new(&[5u32, 17, 3], Digit::new(4, 1));
    /// assert_eq!(counted.bits_set(), 0b10111);
    /// assert!(!counted.digit().has_bits_above(counted.bits_set()));
    /// ```
    pub fn bits_set(&self) -> u64 {
        self.bits_set
    }
}

/// Where a digit's keys go within a direct put's pieces: the first piece
/// and the number of pieces, in the order of the put's pieces.
#[derive(Clone, Copy, Default)]
struct Run {
    first: usize,
    pieces: usize,
}

/// The digit-grouped direct put of [`DigitCounts`]: implemented by
/// [`Ctx`]; bring it into scope with `use bsp::expert::DigitPut;`.
pub trait DigitPut {
    /// A [`put_direct`](crate::expert::DirectPut::put_direct) that writes the keys of `counted`
    /// to `pieces` by their digit: the pieces are listed in digit order,
    /// digit value d taking the next pieces whose lengths add up to its
    /// count (pieces of length 0 are skipped), and every key goes, in the
    /// order of the keys, to the next free element of its digit's pieces.
    /// The result is that of a stable counting sort's scatter, as
    /// `put_direct` with a writer that places each key by hand would give;
    /// because the pieces are checked against the counts first, the keys
    /// are written without a check each (the loop of a sequential counting
    /// sort). A digit whose keys span several pieces (a digit split
    /// between processors) is gathered in a local buffer and copied to its
    /// pieces after the others.
    ///
    /// Collective like `put_direct`, and the same as a sync.
    ///
    /// # Examples
    ///
    /// ```
    /// use bsp_core::expert::{Digit, DigitCounts, DigitPut};
    /// use bsp_core::expert::DirectPiece;
    ///
    /// // Two processors bucket their keys by the top bit: processor 0 gets
    /// // the keys below 8, processor 1 the rest, processor 0's keys first.
    /// let out = bsp_core::run(2, |ctx| {
    ///     let keys: Vec<u8> = if ctx.pid() == 0 { vec![9, 1, 12, 3] } else { vec![2, 15] };
    ///     let counted = DigitCounts::new(&keys, Digit::new(3, 1));
    ///     let all = [[2u64, 2], [1, 1]]; // every processor's counts
    ///     let at = |d: usize| if ctx.pid() == 0 { 0 } else { all[0][d] as usize };
    ///     let pieces: Vec<DirectPiece> = (0..2)
    ///         .map(|d| DirectPiece { dst: d, offset: at(d), len: counted.counts()[d] as usize })
    ///         .collect();
    ///     let a = ctx.coarray::<u8>(3);
    ///     ctx.put_direct_by_digit(&a, &counted, &pieces);
    ///     ctx.local(&a).to_vec()
    /// })
    /// .unwrap();
    /// assert_eq!(out.all(), Some(&vec![vec![1, 3, 2], vec![9, 12, 15]][..]));
    /// ```
    ///
    /// # Panics
    ///
    /// Ends the run with [`ErrorKind::OutOfBounds`] naming this processor
    /// when the pieces do not hold exactly the keys of each digit (a piece
    /// longer than what remains of its digit, or pieces left over or
    /// missing); otherwise as [`put_direct`](crate::expert::DirectPut::put_direct).
    ///
    /// # Cost
    ///
    /// That of [`put_direct`](crate::expert::DirectPut::put_direct), with the writer's loop a
    /// read of each key, a store and an increment, or, where the keys
    /// spread over many digits ([`LineWriter::choose`]), a store into the
    /// digit's line buffer and a write of whole lines that does not read
    /// them first (plus one more copy of the keys of digits split over
    /// several pieces); local O(2^bits + pieces) to check the pieces.
    fn put_direct_by_digit<K: DigitKey>(
        &mut self,
        to: &Coarray<K>,
        counted: &DigitCounts<'_, K>,
        pieces: &[DirectPiece],
    );

    /// [`put_direct_by_digit`](DigitPut::put_direct_by_digit) of each
    /// key's bits below the digit ([`Digit::below`]) instead of the key,
    /// as an `L`: where the pieces tell the receiver each key's digit (a
    /// bucket per piece, say), the two give the key back, and a key of
    /// 32 bits whose digit starts at bit 16 or lower moves as 2 bytes.
    ///
    /// Collective like `put_direct`, and the same as a sync.
    ///
    /// # Examples
    ///
    /// ```
    /// use bsp_core::expert::{Digit, DigitCounts, DigitPut, DirectPiece};
    ///
    /// // Keys below 2^20 bucketed by their top 4 bits: each moves as its
    /// // low 16 bits, and its piece says its bucket.
    /// let out = bsp_core::run(1, |ctx| {
    ///     let keys = [0x5_1234u32, 0x2_0042, 0x5_0007];
    ///     let digit = Digit::new(16, 4);
    ///     let counted = DigitCounts::new(&keys, digit);
    ///     let mut pieces = Vec::new();
    ///     let mut at = 0;
    ///     for &count in counted.counts() {
    ///         pieces.push(DirectPiece { dst: 0, offset: at, len: count as usize });
    ///         at += count as usize;
    ///     }
    ///     let a = ctx.coarray::<u16>(3);
    ///     ctx.put_direct_by_digit_low(&a, &counted, &pieces);
    ///     ctx.local(&a).to_vec()
    /// })
    /// .unwrap();
    /// assert_eq!(out.all(), Some(&vec![vec![0x42, 0x1234, 0x7]][..]));
    /// ```
    ///
    /// # Panics
    ///
    /// Ends the run with [`ErrorKind::OutOfBounds`] naming this processor
    /// where a key has bits above the digit ([`Digit::has_bits_above`]),
    /// which would be lost, or `L` is narrower than the bits below the
    /// digit; otherwise as
    /// [`put_direct_by_digit`](DigitPut::put_direct_by_digit).
    ///
    /// # Cost
    ///
    /// That of [`put_direct_by_digit`](DigitPut::put_direct_by_digit),
    /// with h counted in elements of `L`.
    fn put_direct_by_digit_low<K: DigitKey, L: DigitKey>(
        &mut self,
        to: &Coarray<L>,
        counted: &DigitCounts<'_, K>,
        pieces: &[DirectPiece],
    );
}

impl DigitPut for Ctx {
    fn put_direct_by_digit<K: DigitKey>(
        &mut self,
        to: &Coarray<K>,
        counted: &DigitCounts<'_, K>,
        pieces: &[DirectPiece],
    ) {
        put_by_digit(self, "put_direct_by_digit", to, counted, pieces, |k| k);
    }

    fn put_direct_by_digit_low<K: DigitKey, L: DigitKey>(
        &mut self,
        to: &Coarray<L>,
        counted: &DigitCounts<'_, K>,
        pieces: &[DirectPiece],
    ) {
        let digit = counted.digit;
        let room = 8 * std::mem::size_of::<L>() as u32;
        if digit.shift > room {
            self.misuse(
                ErrorKind::OutOfBounds,
                format!(
                    "put_direct_by_digit_low: the {} bits below the digit do not fit in the \
                     {room} bits of the elements written",
                    digit.shift
                ),
            );
        }
        if digit.has_bits_above(counted.bits_set) {
            let key = counted
                .keys
                .iter()
                .find(|&&k| digit.has_bits_above(k.word()));
            let key = key.map_or(0, |k| k.word());
            self.misuse(
                ErrorKind::OutOfBounds,
                format!(
                    "put_direct_by_digit_low: key {key} has bits above the digit (bits {} to \
                     {}), which its digit and low bits would not give back",
                    digit.shift,
                    digit.shift + digit.mask.count_ones() - 1
                ),
            );
        }
        put_by_digit(self, "put_direct_by_digit_low", to, counted, pieces, |k| {
            L::low_bits_of(digit.below(k))
        });
    }
}

/// The direct put of both [`DigitPut`] methods, writing `as_element(key)`
/// for each key; `method` names the caller in errors.
fn put_by_digit<K: DigitKey, L: DigitKey>(
    ctx: &mut Ctx,
    method: &str,
    to: &Coarray<L>,
    counted: &DigitCounts<'_, K>,
    pieces: &[DirectPiece],
    as_element: impl Fn(K) -> L + Copy + Send,
) {
    let runs = match runs_of(&counted.counts, pieces) {
        Ok(runs) => runs,
        Err(why) => ctx.misuse(ErrorKind::OutOfBounds, format!("{method}: {why}")),
    };
    ctx.put_direct(to, pieces, |_, slices| {
        // `put_direct` lends one slice per piece, of the piece's
        // length; the writes without a check rely on it, so it is
        // checked here rather than assumed.
        assert!(
            slices.len() == pieces.len()
                && slices.iter().zip(pieces).all(|(s, p)| s.len() == p.len),
            "bsp-core: put_direct lent slices that do not match the pieces"
        );
        scatter(counted, &runs, slices, as_element);
    });
}

/// The run of pieces of every digit value, if the pieces hold exactly the
/// keys of each digit, in digit order.
fn runs_of(counts: &[u64], pieces: &[DirectPiece]) -> Result<Vec<Run>, String> {
    let mut runs = vec![Run::default(); counts.len()];
    let mut next = pieces.iter().enumerate().filter(|(_, p)| p.len > 0);
    for (d, (&count, run)) in counts.iter().zip(&mut runs).enumerate() {
        let mut left = count;
        while left > 0 {
            let Some((i, piece)) = next.next() else {
                return Err(format!(
                    "the pieces hold too few keys: digit value {d} has {count} keys and \
                     {left} of them have no piece"
                ));
            };
            if piece.len as u64 > left {
                return Err(format!(
                    "piece {i} ({} keys) is longer than the {left} keys left of digit value \
                     {d} ({count} keys in all)",
                    piece.len
                ));
            }
            if run.pieces == 0 {
                run.first = i;
            }
            run.pieces += 1;
            left -= piece.len as u64;
        }
    }
    if let Some((i, piece)) = next.next() {
        return Err(format!(
            "the pieces hold more keys than were counted: piece {i} ({} keys) and any after \
             it have no keys left to take",
            piece.len
        ));
    }
    Ok(runs)
}

/// Writes `as_element(key)` for every key of `counted` to the next free
/// element of its digit's pieces: the pieces of a one-piece digit
/// directly, those of a digit split over several pieces through a local
/// buffer.
fn scatter<K: DigitKey, L: DigitKey>(
    counted: &DigitCounts<'_, K>,
    runs: &[Run],
    slices: &mut [&mut [L]],
    as_element: impl Fn(K) -> L + Copy,
) {
    let digit = counted.digit;
    // The buffers of the digits split over several pieces, made before any
    // pointer into them is taken.
    let mut split: Vec<(usize, Vec<L>)> = (runs.iter().enumerate())
        .filter(|(_, run)| run.pieces > 1)
        .map(|(d, _)| (d, vec![L::zeroed(); counted.counts[d] as usize]))
        .collect();
    let choice = LineWriter::<L>::choose(&counted.counts);
    if choice.lines() {
        // Whole lines written without being read first: each digit's
        // window is its one piece or its buffer, exactly `counts[d]` long.
        let mut out = LineWriter::new(runs.len());
        let mut buffers = split.iter_mut();
        for (d, run) in runs.iter().enumerate() {
            match run.pieces {
                0 => {}
                1 => out.set_window(d, std::mem::take(&mut slices[run.first])),
                _ => {
                    let (_, buffer) = buffers.next().expect("one buffer per split digit");
                    out.set_window(d, buffer);
                }
            }
        }
        out.push_all_as(
            counted.keys,
            move |&key| digit.of(key),
            |&key| as_element(key),
            |_| panic!("bsp: a digit with more keys than counted"),
        );
        out.finish();
    } else {
        scatter_by_cursors(counted, runs, slices, &mut split, as_element);
    }
    choice.done();
    for (d, buffer) in split {
        let run = runs[d];
        let mut rest = &buffer[..];
        for slice in slices[run.first..]
            .iter_mut()
            .filter(|s| !s.is_empty())
            .take(run.pieces)
        {
            let (head, tail) = rest.split_at(slice.len());
            slice.copy_from_slice(head);
            rest = tail;
        }
        debug_assert!(rest.is_empty());
    }
}

/// [`scatter`]'s loop where few digits take most keys: NPB's, one cursor
/// per digit, a store and an increment per key, no check.
fn scatter_by_cursors<K: DigitKey, L: DigitKey>(
    counted: &DigitCounts<'_, K>,
    runs: &[Run],
    slices: &mut [&mut [L]],
    split: &mut [(usize, Vec<L>)],
    as_element: impl Fn(K) -> L,
) {
    let digit = counted.digit;
    let mut buffers = split.iter_mut().map(|(_, buffer)| buffer.as_mut_ptr());
    let mut cursor: Vec<*mut L> = (runs.iter())
        .map(|run| match run.pieces {
            0 => std::ptr::NonNull::dangling().as_ptr(),
            1 => slices[run.first].as_mut_ptr(),
            _ => buffers.next().expect("one buffer per split digit"),
        })
        .collect();
    let cursor = cursor.as_mut_ptr();
    for &key in counted.keys {
        let d = digit.of(key);
        // SAFETY: `d` is at most the digit's mask, and `cursor` has one
        // entry per digit value (`runs` was made from `counts`, which has
        // `digit.values()` entries). Cursor d starts at a region that holds
        // exactly `counts[d]` elements and belongs to digit d alone: the
        // single slice of a one-piece digit (its piece `runs_of` checked to
        // be `counts[d]` long, and the caller checked the slice to be as
        // long as its piece; the slices are distinct `&mut` borrows), or
        // a buffer of `counts[d]` elements made by `scatter`. The keys are the very
        // slice `DigitCounts::new` counted, borrowed shared since then, of
        // a sealed plain integer type without interior mutability, and
        // `digit.of` is this crate's pure function: exactly `counts[d]`
        // keys take this branch with digit d, so every write lands inside
        // the region and the cursor never moves past its end. A digit with
        // no keys has a dangling cursor that is never written or moved.
        unsafe {
            let at = cursor.add(d);
            (*at).write(as_element(key));
            *at = (*at).add(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(len: usize) -> DirectPiece {
        DirectPiece {
            dst: 0,
            offset: 0,
            len,
        }
    }

    #[test]
    fn runs_follow_the_counts_and_skip_empty_pieces() {
        let pieces = [piece(2), piece(0), piece(1), piece(2), piece(0)];
        let runs = runs_of(&[2, 0, 3], &pieces).unwrap();
        assert_eq!((runs[0].first, runs[0].pieces), (0, 1));
        assert_eq!(runs[1].pieces, 0);
        assert_eq!((runs[2].first, runs[2].pieces), (2, 2));
    }

    #[test]
    fn pieces_that_do_not_match_the_counts_are_named() {
        let long = runs_of(&[1, 2], &[piece(2), piece(1)]).err().unwrap();
        assert!(long.contains("piece 0 (2 keys)"), "{long}");
        let short = runs_of(&[1, 2], &[piece(1), piece(1)]).err().unwrap();
        assert!(short.contains("1 of them have no piece"), "{short}");
        let extra = runs_of(&[1], &[piece(1), piece(3)]).err().unwrap();
        assert!(extra.contains("piece 1 (3 keys)"), "{extra}");
    }

    #[test]
    fn scatter_is_a_stable_counting_sort() {
        let keys: Vec<u32> = (0..1000u32)
            .map(|i| i.wrapping_mul(2_654_435_761) >> 7)
            .collect();
        let counted = DigitCounts::new(&keys, Digit::new(20, 3));
        // Digit 2 split over three pieces, the others whole.
        let counts = counted.counts().to_vec();
        let mut lens = Vec::new();
        for (d, &c) in counts.iter().enumerate() {
            let c = c as usize;
            if d == 2 {
                lens.extend([c / 3, 0, c / 3, c - 2 * (c / 3)]);
            } else {
                lens.push(c);
            }
        }
        let pieces: Vec<DirectPiece> = lens.iter().map(|&len| piece(len)).collect();
        let runs = runs_of(&counts, &pieces).unwrap();
        let mut out = vec![0u32; keys.len()];
        let mut rest = &mut out[..];
        let mut slices = Vec::new();
        for &len in &lens {
            let (head, tail) = rest.split_at_mut(len);
            slices.push(head);
            rest = tail;
        }
        scatter(&counted, &runs, &mut slices, |k| k);
        let mut want = keys.clone();
        want.sort_by_key(|&k| counted.digit().of(k));
        assert_eq!(out, want);
    }
}
