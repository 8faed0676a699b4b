//! Scattering elements over many output windows a whole cache line at a
//! time, with stores that do not read the memory they overwrite.
//!
//! A scatter (the grouping pass of a counting sort, a bucket fill) writes
//! each element to one of many windows, a few bytes at a time. An ordinary
//! store into a line that is not in the cache makes the processor read the
//! line from memory first, only to overwrite it: a scatter of n bytes then
//! moves 3n bytes through memory (the input read, each line read for
//! ownership, the line written back), and with a thousand windows open the
//! reads wait on one another. [`LineWriter`] collects each window's
//! elements in a line-sized buffer of its own, which stays in the cache,
//! and writes a full buffer out with non-temporal stores (`movntdq` on
//! x86-64), which send the line to memory without reading it: 2n bytes.
//! The first and last few elements of a window, which do not fill an
//! aligned line, are copied plainly.
//!
//! On the 2-core VM of BENCHMARKS.md, one thread scattering 2^25 8-byte
//! keys into 2^11 windows took 5.0 ns a key with plain stores and 3.1 ns
//! through line buffers (BENCHMARKS.md section 4d as of commit d743920, in git, has the sort
//! before and after).
//!
//! Elements whose size does not divide a line (or processors other than
//! x86-64) are written straight through, one store each, as a plain loop
//! would.

use std::marker::PhantomData;

use bytemuck::Pod;

use super::stores::{stores, StoreChoice, Stores};

/// The bytes of the cache line that [`LineWriter`] fills before writing.
pub const LINE_BYTES: usize = super::prefetch::LINE_BYTES;

/// The effective number of busy bins from which
/// [`LineWriter::choose`] considers combining lines.
pub const COMBINE_MIN_BUSY: f64 = 64.0;

/// The bytes of a scatter from which [`LineWriter::choose`] considers
/// combining lines (under [`Stores::Auto`], by timing both ways): a
/// smaller output stays in a core's cache, where plain stores find their
/// lines, and is too quick to time. Where the line buffers start to pay
/// differs between machines: from 16 MiB per processor on the 2-core
/// Intel VM of BENCHMARKS.md (section 4d as of commit d743920), already at
/// 8 MiB on the 16-core Intel machine (section 13), hence a measurement
/// per size rather than one threshold.
pub const COMBINE_MIN_BYTES: u64 = 1 << 20;

/// One window's line buffer, aligned as a line.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; LINE_BYTES]);

/// Where one window stands.
#[derive(Clone, Copy)]
struct Bin {
    /// The next element of the window to write, and one past its last.
    at: *mut u8,
    end: *mut u8,
    /// Elements waiting in the window's line buffer.
    held: u32,
    /// How many held elements make the next write: up to the next aligned
    /// line, or to the end of the window; 0 when the window is full.
    flush_at: u32,
}

impl Bin {
    const EMPTY: Bin = Bin {
        at: std::ptr::null_mut(),
        end: std::ptr::null_mut(),
        held: 0,
        flush_at: 0,
    };
}

/// Writes elements into many windows (`bins`), each filled front to back,
/// a cache line at a time (see the [module docs](self)).
///
/// A bin starts without a window; [`push`](LineWriter::push) hands an
/// element back when its bin's window is full (or absent), and the caller
/// then gives the bin its next window with
/// [`set_window`](LineWriter::set_window). Every element pushed is in its
/// window once the writer is [finished](LineWriter::finish) or dropped.
///
/// # Examples
///
/// ```
/// use bsp_core::expert::line_writer::LineWriter;
///
/// let keys: Vec<u64> = (0..1000).map(|i| (i * 7919) % 1000).collect();
/// let mut low = vec![0u64; 500];
/// let mut high = vec![0u64; 500];
/// {
///     let mut out = LineWriter::new(2);
///     out.set_window(0, &mut low);
///     out.set_window(1, &mut high);
///     for &k in &keys {
///         out.push(usize::from(k >= 500), k).expect("the windows hold every key");
///     }
///     out.finish();
/// }
/// assert!(low.iter().all(|&k| k < 500) && high.iter().all(|&k| k >= 500));
/// let in_order: Vec<u64> = keys.iter().copied().filter(|&k| k < 500).collect();
/// assert_eq!(low, in_order);
/// ```
pub struct LineWriter<'a, T: Pod> {
    bins: Vec<Bin>,
    lines: Vec<Line>,
    /// Whether elements go through the line buffers (else straight).
    combine: bool,
    _windows: PhantomData<&'a mut [T]>,
}

// SAFETY: the raw pointers in `bins` point into windows borrowed mutably
// for 'a (the `PhantomData` records the borrow); the writer owns that
// access exclusively, so moving it to another thread moves the access, as
// moving the `&'a mut [T]` would.
unsafe impl<T: Pod + Send> Send for LineWriter<'_, T> {}

impl<'a, T: Pod> LineWriter<'a, T> {
    /// Elements of `T` in a line.
    const PER_LINE: usize = LINE_BYTES / size_of_or_line::<T>();

    /// A writer of `bins` bins, none with a window yet, that combines
    /// lines (where `T`'s size divides a line, on x86-64).
    ///
    /// # Cost
    ///
    /// Allocates 64 + 24 bytes per bin.
    pub fn new(bins: usize) -> Self {
        let combine = Self::combinable();
        LineWriter {
            bins: vec![Bin::EMPTY; bins],
            lines: if combine {
                vec![Line([0; LINE_BYTES]); bins]
            } else {
                Vec::new()
            },
            combine,
            _windows: PhantomData,
        }
    }

    /// How a scatter of `counts[b]` elements into each bin b stores
    /// (see [`stores`](super::stores) for the policy): through line
    /// buffers only where `T` can be combined (its size divides a line, on
    /// x86-64) and many bins are busy at once. Where a few bins take most
    /// elements, their open lines stay in the cache and plain stores cost
    /// no extra read. "Many" is an effective number of bins, (Σc)² / Σc²,
    /// of [`COMBINE_MIN_BUSY`] or more. Under [`Stores::Auto`] a scatter
    /// of [`COMBINE_MIN_BYTES`] or more that could combine is timed and
    /// chooses by what earlier ones of its kind measured; a smaller one
    /// stays in the cache and stores plainly.
    ///
    /// Call [`StoreChoice::done`] when the scatter ends, so that a
    /// measured choice learns its time.
    ///
    /// # Examples
    ///
    /// ```
    /// use bsp_core::expert::line_writer::LineWriter;
    /// use bsp_core::expert::stores::{set_stores, Stores};
    ///
    /// set_stores(Stores::Lines);
    /// let choice = LineWriter::<u64>::choose(&[1 << 20; 256]);
    /// assert_eq!(choice.lines(), cfg!(target_arch = "x86_64"));
    /// choice.done();
    /// assert!(!LineWriter::<u64>::choose(&[1 << 30, 10, 10, 10]).lines()); // one bin busy
    /// assert!(!LineWriter::<[u8; 3]>::choose(&[1 << 20; 256]).lines()); // 3 does not divide 64
    /// set_stores(Stores::Auto);
    /// assert!(!LineWriter::<u64>::choose(&[100; 256]).lines()); // 200 KiB: stays in the cache
    /// ```
    ///
    /// # Cost
    ///
    /// O(bins), and under [`Stores::Auto`] a lock of the process's table of
    /// what scatters learned.
    pub fn choose(counts: &[u64]) -> StoreChoice {
        let (sum, squares) = counts.iter().fold((0f64, 0f64), |(s, q), &c| {
            let c = c as f64;
            (s + c, q + c * c)
        });
        let bytes = sum * std::mem::size_of::<T>() as f64;
        let many = Self::combinable() && sum * sum / squares >= COMBINE_MIN_BUSY;
        match stores() {
            Stores::Lines => StoreChoice::fixed(many),
            Stores::Auto if many && bytes >= COMBINE_MIN_BYTES as f64 => {
                StoreChoice::measured(std::mem::size_of::<T>(), counts.len(), bytes)
            }
            Stores::Auto | Stores::Plain => StoreChoice::fixed(false),
        }
    }

    /// Whether elements of `T` can be combined into lines here.
    fn combinable() -> bool {
        let size = std::mem::size_of::<T>();
        cfg!(target_arch = "x86_64")
            && size > 0
            && LINE_BYTES % size == 0
            && std::mem::align_of::<T>() <= LINE_BYTES
            && Self::PER_LINE > 1
    }

    /// Whether this writer combines lines.
    pub fn combines(&self) -> bool {
        self.combine
    }

    /// Gives `bin` its next window, after writing out what the bin holds
    /// into its current one.
    ///
    /// # Panics
    ///
    /// If `bin` is out of range.
    pub fn set_window(&mut self, bin: usize, window: &'a mut [T]) {
        self.flush(bin);
        let range = window.as_mut_ptr_range();
        let combine = self.combine;
        let b = &mut self.bins[bin];
        b.at = range.start.cast();
        b.end = range.end.cast();
        b.flush_at = Self::next_flush(b, combine);
    }

    /// Writes `x` as the next element of `bin`'s window, or hands it back
    /// when the window is full (or the bin has none). Zero-sized elements
    /// are never handed back.
    ///
    /// # Panics
    ///
    /// If `bin` is out of range.
    #[inline(always)]
    pub fn push(&mut self, bin: usize, x: T) -> Result<(), T> {
        let size = std::mem::size_of::<T>();
        if size == 0 {
            // Nothing to write, and no window ever fills.
            return Ok(());
        }
        let b = &mut self.bins[bin];
        if b.flush_at == 0 {
            return Err(x);
        }
        if !self.combine {
            // SAFETY: `flush_at` > 0 means `at` < `end`: `at` points at an
            // element of the window (a slice of `T`, so aligned for `T`),
            // which the writer borrows mutably for 'a.
            unsafe {
                b.at.cast::<T>().write(x);
                b.at = b.at.add(size);
            }
            if b.at == b.end {
                b.flush_at = 0;
            }
            return Ok(());
        }
        // Both counts are read before the element is stored: the store
        // goes through a raw pointer, after which the compiler would read
        // them again from memory.
        let (held, flush_at) = (b.held, b.flush_at);
        // SAFETY: `held` < `flush_at` ≤ PER_LINE, so the element lies in
        // the bin's line buffer; the buffer is aligned to 64 ≥ align_of T
        // and `held * size` is a multiple of `size`, itself a multiple of
        // T's alignment.
        unsafe {
            let line = self.lines.as_mut_ptr().add(bin).cast::<u8>();
            line.add(held as usize * size).cast::<T>().write(x);
        }
        b.held = held + 1;
        if held + 1 == flush_at {
            self.write_out(bin);
        }
        Ok(())
    }

    /// Writes out everything the bins hold; then every element pushed is
    /// in its window.
    pub fn finish(mut self) {
        self.flush_all();
    }

    /// Writes out everything the bins hold, as [`finish`](LineWriter::finish)
    /// does, and hands back what is left of each bin's window (empty for a
    /// bin without one), for the rest of a scatter to fill by other means.
    /// (For zero-sized elements, which are never written, every window
    /// comes back empty.)
    ///
    /// # Examples
    ///
    /// ```
    /// use bsp_core::expert::line_writer::LineWriter;
    ///
    /// let mut out = vec![0u32; 100];
    /// let mut writer = LineWriter::new(1);
    /// writer.set_window(0, &mut out);
    /// for k in 0..60 {
    ///     writer.push(0, k).unwrap();
    /// }
    /// let mut rest = writer.into_windows();
    /// rest[0].iter_mut().for_each(|x| *x = 7);
    /// assert_eq!(out[59..61], [59, 7]);
    /// ```
    ///
    /// # Cost
    ///
    /// O(bins), and the held elements' writes.
    pub fn into_windows(mut self) -> Vec<&'a mut [T]> {
        self.flush_all();
        let size = std::mem::size_of::<T>().max(1);
        std::mem::take(&mut self.bins)
            .into_iter()
            .map(|b| {
                if b.at.is_null() {
                    return &mut [][..];
                }
                let len = (b.end as usize - b.at as usize) / size;
                // SAFETY: `at..end` is the unwritten rest of the bin's
                // window, a slice of `T` borrowed mutably for 'a that the
                // writer gives up here (its bins are taken, so it writes
                // nothing more); windows of different bins are disjoint,
                // as `&'a mut` slices handed to `set_window`.
                unsafe { std::slice::from_raw_parts_mut(b.at.cast::<T>(), len) }
            })
            .collect()
    }

    fn flush_all(&mut self) {
        for bin in 0..self.bins.len() {
            self.flush(bin);
        }
        fence();
    }

    /// Writes out what `bin` holds, whatever its count.
    fn flush(&mut self, bin: usize) {
        if self.combine && self.bins[bin].held > 0 {
            self.write_out(bin);
        }
    }

    /// Writes the `held` elements of `bin`'s line buffer at its window's
    /// next element: one aligned line by non-temporal stores when full,
    /// else a plain copy.
    #[inline(always)]
    fn write_out(&mut self, bin: usize) {
        let size = std::mem::size_of::<T>();
        let b = &mut self.bins[bin];
        let bytes = b.held as usize * size;
        let line = self.lines[bin].0.as_ptr();
        // SAFETY: `held` ≤ `flush_at`, which `next_flush` bounds by the
        // bytes left in the window, so `at..at + bytes` lies in the
        // window (borrowed mutably for 'a, and disjoint from the line
        // buffer, which the writer owns).
        unsafe {
            if bytes == LINE_BYTES && b.at as usize % LINE_BYTES == 0 {
                stream_line(line, b.at);
            } else {
                std::ptr::copy_nonoverlapping(line, b.at, bytes);
            }
            b.at = b.at.add(bytes);
        }
        b.held = 0;
        b.flush_at = Self::next_flush(b, true);
    }

    /// Elements to hold before the bin's next write (`combine`: whether
    /// the writer combines): to the next line boundary of its window (a
    /// whole line once aligned), at most what is left of the window; 0
    /// when the window is full.
    fn next_flush(b: &Bin, combine: bool) -> u32 {
        let size = std::mem::size_of::<T>().max(1);
        let left = (b.end as usize - b.at as usize) / size;
        if !combine {
            return u32::from(left > 0);
        }
        let into_line = b.at as usize % LINE_BYTES;
        let to_boundary = if into_line == 0 {
            Self::PER_LINE
        } else if into_line % size == 0 {
            (LINE_BYTES - into_line) / size
        } else {
            // Elements never meet a line boundary: plain writes of a
            // line's worth at a time.
            Self::PER_LINE
        };
        to_boundary.min(left) as u32
    }
}

impl<T: Pod> Drop for LineWriter<'_, T> {
    fn drop(&mut self) {
        self.flush_all();
    }
}

/// `size_of::<T>()`, or a line for zero-sized types (so that
/// `PER_LINE` is defined; they are written straight through).
const fn size_of_or_line<T>() -> usize {
    match std::mem::size_of::<T>() {
        0 => LINE_BYTES,
        n if n > LINE_BYTES => LINE_BYTES,
        n => n,
    }
}

/// Copies the 64-byte line at `from` to `to` (aligned to 64) with
/// non-temporal stores.
///
/// # Safety
///
/// `from` must be valid for reading 64 bytes and aligned to 16, `to`
/// valid for writing 64 bytes and aligned to 64.
#[inline(always)]
unsafe fn stream_line(from: *const u8, to: *mut u8) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_load_si128, _mm_stream_si128};
        let (from, to) = (from.cast::<__m128i>(), to.cast::<__m128i>());
        // SAFETY: SSE2 is part of x86-64; the four 16-byte loads and
        // stores stay within the 64 bytes the caller vouches for, at the
        // alignment it vouches for.
        unsafe {
            _mm_stream_si128(to, _mm_load_si128(from));
            _mm_stream_si128(to.add(1), _mm_load_si128(from.add(1)));
            _mm_stream_si128(to.add(2), _mm_load_si128(from.add(2)));
            _mm_stream_si128(to.add(3), _mm_load_si128(from.add(3)));
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: as the caller vouches.
    unsafe {
        std::ptr::copy_nonoverlapping(from, to, LINE_BYTES)
    };
}

/// Orders the non-temporal stores before any later store (another thread
/// reading the windows learns of them through a later synchronisation).
fn fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `sfence` needs SSE, which every x86-64 processor has.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scatters `keys` by `bin` into windows cut from one output vector at
    /// `cuts` (several windows per bin, in bin order), through a writer,
    /// and compares with a plain stable scatter.
    fn check<T: Pod + PartialEq + std::fmt::Debug>(
        keys: &[T],
        bins: usize,
        bin: impl Fn(&T) -> usize,
        offset: usize,
    ) {
        let mut counts = vec![0usize; bins];
        keys.iter().for_each(|k| counts[bin(k)] += 1);
        let mut starts = vec![0usize; bins + 1];
        for d in 0..bins {
            starts[d + 1] = starts[d] + counts[d];
        }
        let mut expected = vec![T::zeroed(); keys.len()];
        let mut at = starts.clone();
        for k in keys {
            expected[at[bin(k)]] = *k;
            at[bin(k)] += 1;
        }
        // The output sits `offset` elements into its buffer, so windows
        // start at every alignment; each bin's range is cut in two.
        let mut buffer = vec![T::zeroed(); keys.len() + offset];
        let out = &mut buffer[offset..];
        let mut windows: Vec<Vec<&mut [T]>> = Vec::new();
        let mut rest = out;
        for &count in &counts {
            let (mine, tail) = rest.split_at_mut(count);
            rest = tail;
            let (a, b) = mine.split_at_mut(count / 3);
            windows.push(vec![a, b]);
        }
        {
            let mut writer = LineWriter::new(bins);
            let mut next = vec![0usize; bins];
            for k in keys {
                let d = bin(k);
                let mut x = *k;
                while let Err(back) = writer.push(d, x) {
                    x = back;
                    let window = std::mem::take(&mut windows[d][next[d]]);
                    next[d] += 1;
                    writer.set_window(d, window);
                }
            }
            writer.finish();
        }
        assert_eq!(&buffer[offset..], &expected[..]);
    }

    #[test]
    fn the_writer_scatters_stably_at_every_alignment() {
        let keys64: Vec<u64> = (0..5000u64)
            .map(|i| (i * 2_654_435_761) % 100_003)
            .collect();
        let keys32: Vec<u32> = keys64.iter().map(|&k| k as u32).collect();
        let pairs: Vec<[u32; 2]> = keys32
            .iter()
            .enumerate()
            .map(|(i, &k)| [k, i as u32])
            .collect();
        let wide: Vec<[u64; 2]> = keys64.iter().map(|&k| [k, !k]).collect();
        let odd: Vec<[u8; 3]> = keys32
            .iter()
            .map(|&k| [k as u8, (k >> 8) as u8, 1])
            .collect();
        for offset in 0..9 {
            check(&keys64, 37, |k| (*k % 37) as usize, offset);
            check(&keys32, 300, |k| (*k % 300) as usize, offset);
            check(&pairs, 5, |k| (k[0] % 5) as usize, offset);
            check(&wide, 64, |k| (k[0] % 64) as usize, offset);
            check(&odd, 7, |k| (k[0] % 7) as usize, offset);
        }
    }

    #[test]
    fn a_full_or_missing_window_hands_the_element_back() {
        let mut out = [0u32; 3];
        let mut writer = LineWriter::new(2);
        assert_eq!(writer.push(1, 9), Err(9));
        writer.set_window(0, &mut out);
        for x in 1..=3 {
            assert_eq!(writer.push(0, x), Ok(()));
        }
        assert_eq!(writer.push(0, 4), Err(4));
        drop(writer); // dropping writes out too
        assert_eq!(out, [1, 2, 3]);
    }
}
